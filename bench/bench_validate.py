"""`mcqa-prep validate` as a command, with 1 and 2 workers, next to the bare read and the read-serialise floor.

Synthetic dataset shaped like nvidia/Nemotron-RL-knowledge-mcqa (`generate`, also bench_report's data): 4-10
options per row (six in ten have 10) in the Parquet/Arrow shape (every element carries all ten letter keys, nulls
for the absent ones), one question in ten with a long passage (2-8 kB), 30% of rows with a custom template
(output_regex), the rest strict boxed; shards of 50,000 rows. Deterministic.

Legs (bench/harness.py), `rounds` times, the order rotated each round:
- read: bench/floors.py read (pyarrow batches -> Python rows, nothing else; one core);
- floor: bench/floors.py parquet (the same plus orjson.dumps and a write: prepare's floor; one core);
- w1, w2: `mcqa-prep validate DIR --workers 1|2 -q`.

Targets (issue 36): validate --workers 1 at >= 40,000 rows per second; validate --workers 2 within 0.8x the floor's
time.

    python bench/bench_validate.py [--scale 0.1] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness as H  # noqa: E402

LETTERS = "ABCDEFGHIJ"
SHARD_ROWS = 50_000
ROWS = 100_000
TARGET_ROWS_PER_S = 40_000  # issue 36
TARGET_W2 = 0.8  # issue 36
BOXED_INSTRUCTION = (
    "You should output your final response letter inside \\boxed{} and nothing else "
    "You can first think step-by-step. "
)
# Templates modelled on the real ones (instruction + output_regex); "{problem}" is the question block.
TEMPLATES = [
    (
        "mcqa_benchmark_001",
        "Answer the following multiple choice question. The last line of your response should be in the "
        "following format: 'Answer: \\boxed{A/B/C/D/E/F/G/H/I/J}' (e.g. 'Answer: \\boxed{D}').\n\n{problem}",
        "\\\\boxed\\{\\s*([A-Za-z])\\s*\\}",
    ),
    (
        "mcqa_generated_027",
        "{problem}\n\nChoose the most appropriate option. At the end, select one option and write: "
        "Option Selected: X",
        "Option Selected:\\s*([A-Za-z])\\s*",
    ),
    (
        "mcqa_generated_019",
        '{problem}\n\nChoose the correct option.\nConclude with "ANSWER IS X" on the final line, where X is '
        "the option identifier.",
        "ANSWER IS\\s*([A-Za-z])\\s*",
    ),
    (
        "mcqa_generated_015",
        '{problem}\n\nSelect one option and conclude with: "Final Choice: X" where X is the option letter.',
        "Final Choice:\\s*([A-Za-z])\\s*",
    ),
]
WORDS = (
    "genetic screening mutation sequencing protein enzyme cell membrane receptor pathway expression analysis "
    "variant chromosome inheritance marker assay population clinical diagnostic microbial community species"
).split()


def _text(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def make_row(i: int, rng: random.Random) -> dict[str, Any]:
    letters = LETTERS if rng.random() < 0.6 else LETTERS[: rng.randint(4, 9)]
    texts = [f"{_text(rng, 3, 12)} ({i}.{k})" for k in range(len(letters))]
    question = f"Which of the following statements about {_text(rng, 8, 30)} is true? (item {i})"
    if rng.random() < 0.1:  # a long passage before the question
        question = f"{_text(rng, 250, 1000)}\n\n{question}"
    problem = question + "\n" + "\n".join(f"{L}: {t}" for L, t in zip(letters, texts, strict=True))
    options = [{K: (texts[k] if K == L else None) for K in LETTERS} for k, L in enumerate(letters)]
    row: dict[str, Any] = {
        "responses_create_params": {"input": [{"role": "user", "content": ""}]},
        "options": options,
        "expected_answer": rng.choice(letters),
        "uuid": f"{i:08d}-bench",
        "grading_mode": None,
        "template_metadata": None,
    }
    if rng.random() < 0.3:
        tid, tpl, rx = rng.choice(TEMPLATES)
        prompt = tpl.replace("{problem}", problem)
        row["template_metadata"] = {
            "template_id": tid,
            "template_prompt": tpl,
            "output_regex": rx,
            "weight": 0.1,
            "prompt_type": "generated",
            "format_type": "mcqa",
        }
    else:
        prompt = BOXED_INSTRUCTION + problem
        row["grading_mode"] = "strict_single_letter_boxed"
    row["responses_create_params"]["input"][0]["content"] = prompt
    return row


def generate(directory: Path, rows: int, seed: int = 1234) -> list[Path]:
    """Write `rows` rows as Parquet shards train-0000K-of-0000N.parquet; return their paths."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    n_shards = max(1, -(-rows // SHARD_ROWS))
    paths = []
    done = 0
    schema = None
    for s in range(n_shards):
        k = min(SHARD_ROWS, rows - done)
        table = pa.Table.from_pylist([make_row(done + j, rng) for j in range(k)], schema=schema)
        schema = table.schema
        path = directory / f"train-{s:05d}-of-{n_shards:05d}.parquet"
        pq.write_table(table, path)
        paths.append(path)
        done += k
    return paths


def legs_for(data: Path, work: Path, baseline: Path | None = None) -> dict[str, Any]:
    """name -> a function that runs and measures the leg once; with `baseline` (a revision's package,
    harness.revision_tree) also base_w1 and base_w2, the same commands on that package."""
    ours = H.cli()

    def validate(workers: int, cli: list[str] = ours, cwd: Path = work) -> Any:
        return lambda: H.measure(
            [*cli, "validate", str(data), "--workers", str(workers), "-q"], cwd=cwd, check=False
        )

    legs = {
        "read": lambda: H.measure(H.py("floors.py", "read", str(data)), cwd=work),
        "floor": lambda: H.measure(
            H.py("floors.py", "parquet", str(data), str(work / "floor.jsonl")), cwd=work
        ),
        "w1": validate(1),
        "w2": validate(2),
    }
    if baseline is not None:
        legs["base_w1"] = validate(1, H.revision_cli(), baseline)
        legs["base_w2"] = validate(2, H.revision_cli(), baseline)
    return legs


WHAT = {
    "read": "bare read: pyarrow -> to_pylist (bench/floors.py read, one core)",
    "floor": "floor: pyarrow -> to_pylist -> orjson -> write (bench/floors.py parquet, one core)",
    "w1": "mcqa-prep validate --workers 1",
    "w2": "mcqa-prep validate --workers 2",
    "base_w1": "mcqa-prep validate --workers 1 at the baseline revision",
    "base_w2": "mcqa-prep validate --workers 2 at the baseline revision",
}


def run(
    scale: float = 1.0, *, rounds: int = 3, full: bool = False, baseline_rev: str | None = None
) -> dict[str, Any]:
    """The result document (docs/design/performance.md, "Result format"). `validate` exits 1 when it finds errors
    (the data holds a few on purpose, as real data does): that is its answer, not a failed run. With
    `baseline_rev`, also the two commands on that git revision's package, in the same rounds."""
    rows = max(1000, int(ROWS * scale))
    work = Path(tempfile.mkdtemp(prefix="mcqa-bench-validate-"))
    try:
        data = work / "data"
        data.mkdir()
        generate(data, rows)
        baseline = H.revision_tree(baseline_rev, work) if baseline_rev else None
        runs = H.interleave(legs_for(data, work, baseline), rounds)
        for name in [n for n in ("w1", "w2", "base_w1", "base_w2") if n in runs]:
            if any(r.returncode not in (0, 1) for r in runs[name]):
                raise H.CommandFailed(
                    f"validate exited {[r.returncode for r in runs[name]]}: {runs[name][-1].stderr_tail}"
                )
        fig: dict[str, Any] = {}
        for name, rs in runs.items():
            fig.update(H.runs_figures(name, WHAT[name], rs, rows))
        fig["w1.rows_per_s"]["target"] = {"op": ">=", "value": TARGET_ROWS_PER_S}
        wall = {k: [r.wall_s for r in v] for k, v in runs.items()}
        fig["w1_vs_read.x"] = H.ratio_figure(
            "validate --workers 1 wall time / the bare read's", wall["w1"], wall["read"]
        )
        fig["w2_vs_floor.x"] = H.ratio_figure(
            "validate --workers 2 wall time / the read-serialise floor's", wall["w2"], wall["floor"],
            target={"op": "<=", "value": TARGET_W2},
        )  # fmt: skip
        fig["w2_vs_w1.x"] = H.ratio_figure(
            "validate --workers 1 wall time / --workers 2's", wall["w1"], wall["w2"]
        )
        fig.update(H.baseline_figures("validate", wall, ["w1", "w2"]))
        inputs = {"rows": rows, "parquet_mb": round(sum(f.stat().st_size for f in data.iterdir()) / 2**20, 1)}
        if baseline is not None:
            inputs["baseline_rev"] = baseline_rev
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "bench": "validate",
        "title": "mcqa-prep validate with 1 and 2 workers against the bare read and the read-serialise floor",
        "figures": fig,
        "checks": {"exit_codes": sorted({r.returncode for rs in (runs["w1"], runs["w2"]) for r in rs})},
        "inputs": inputs,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=0.1)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    print(json.dumps(run(args.scale, rounds=args.rounds), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
