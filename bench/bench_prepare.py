"""`mcqa-prep prepare` (Parquet in, JSONL out) as a command, with 1 and 2 workers, next to the one-core
read-serialise floor, interleaved; peak RSS of the process tree; at 685,573 rows with full=True.

Synthetic data shaped like nvidia/Nemotron-RL-knowledge-mcqa: 4-10 options (six rows in ten have 10) stored the
Parquet way (every element carries all letters, null-filled), one question in ten with a long passage (2-8 kB),
30% rows with a custom template (output_regex etc.), uuids, reward_profiles, in row groups of 5,000 rows.

Legs (bench/harness.py: wall, CPU of the process tree, peak RSS of the tree), `rounds` times, the order rotated
each round:
- floor: bench/floors.py parquet (pyarrow batches -> to_pylist -> orjson.dumps -> write, one core, the JSON
  library prepare uses);
- w1, w2: `mcqa-prep prepare DATA -o OUT --repair-regexes --on-invalid reject --workers 1|2 -q` (the README's
  flagship command: the templates carry the dataset's regexes, which the regex audit repairs).

Targets (issue 36): prepare --workers 2 within 1.2x the floor's time; prepare --workers 1 within 2.5x.

    python bench/bench_prepare.py [--scale 0.05] [--rounds 3] [--full]
"""

from __future__ import annotations

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
TARGET_RATIO = 2.5  # prepare --workers 1 against the floor (issue 36)
TARGET_W2 = 1.2  # prepare --workers 2 against the floor
ROWS = 100_000
FULL_ROWS = 685_573


def synth_rows(n: int, seed: int = 0):
    rnd = random.Random(seed)
    words = ("cell", "gene", "acid", "wave", "mass", "law")
    for i in range(n):
        letters = LETTERS if rnd.random() < 0.6 else LETTERS[: rnd.randint(4, 9)]
        texts = [f"option {c}: " + " ".join(rnd.choice(words) for _ in range(6)) for c in letters]
        question = f"Question {i}: which statement about topic {rnd.randint(0, 9999)} is correct?"
        if rnd.random() < 0.1:  # a long passage before the question
            passage = " ".join(rnd.choice(words) for _ in range(rnd.randint(400, 1600)))
            question = f"{passage}\n\n{question}"
        body = question + "\n" + "\n".join(f"{c}: {t}" for c, t in zip(letters, texts, strict=True))
        row: dict[str, Any] = {
            "responses_create_params": {
                "input": [
                    {
                        "role": "user",
                        "content": "Think step by step, then put the letter in \\boxed{}.\n" + body,
                    }
                ]
            },
            "options": [{c: t} for c, t in zip(letters, texts, strict=True)],
            "expected_answer": rnd.choice(letters),
            "grading_mode": "strict_single_letter_boxed",
            "uuid": f"{i:08x}-bench",
            "reward_profiles": [
                {"model_hf_path": "org/model", "num_generations": 8, "pass_rate": rnd.random()}
            ],
            "template_metadata": None,
        }
        if rnd.random() < 0.3:
            row["template_metadata"] = {
                "template_id": f"mcqa_custom_{rnd.randint(0, 40):03d}",
                "template_prompt": "Answer the question. End with 'Answer: X'.\n\n{problem}",
                "output_regex": r"Answer:\s*\(?([A-J])\)?",
                "prompt_type": "custom",
                "format_type": "mcqa",
            }
        yield row


def make_parquet(path: Path, n: int) -> Path:
    """Write n synthetic rows; Arrow unifies the options structs into the null-filled all-letters shape."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    batch: list[dict] = []
    schema = None
    for row in synth_rows(n):
        batch.append(row)
        if len(batch) == 5000:
            table = pa.Table.from_pylist(batch, schema=schema)
            if writer is None:
                schema = table.schema
                writer = pq.ParquetWriter(path, schema)
            writer.write_table(table)
            batch = []
    if batch:
        table = pa.Table.from_pylist(batch, schema=schema)
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    assert writer is not None
    writer.close()
    return path


def legs_for(src: Path, work: Path, baseline: Path | None = None) -> dict[str, Any]:
    """name -> a function that runs and measures the leg once; with `baseline` (a revision's package,
    harness.revision_tree) also base_w1 and base_w2, the same commands on that package."""

    ours = H.cli()

    def prepare(workers: int, cli: list[str] = ours, cwd: Path = work, tag: str = "") -> Any:
        def leg() -> H.Run:
            out = work / f"prepared{tag}-w{workers}"
            shutil.rmtree(out, ignore_errors=True)
            argv = [
                *cli,
                "prepare",
                str(src),
                "-o",
                str(out),
                "--repair-regexes",  # the flagship command (README): the audit repairs the templates' regexes
                "--on-invalid",
                "reject",
                "--workers",
                str(workers),
            ]
            return H.measure([*argv, "-q"], cwd=cwd)

        return leg

    legs = {
        "floor": lambda: H.measure(
            H.py("floors.py", "parquet", str(src), str(work / "floor.jsonl")), cwd=work
        ),
        "w1": prepare(1),
        "w2": prepare(2),
    }
    if baseline is not None:
        legs["base_w1"] = prepare(1, H.revision_cli(), baseline, "-base")
        legs["base_w2"] = prepare(2, H.revision_cli(), baseline, "-base")
    return legs


WHAT = {
    "floor": "floor: pyarrow -> to_pylist -> orjson -> write (bench/floors.py parquet, one core)",
    "w1": "mcqa-prep prepare --workers 1",
    "w2": "mcqa-prep prepare --workers 2",
    "base_w1": "mcqa-prep prepare --workers 1 at the baseline revision",
    "base_w2": "mcqa-prep prepare --workers 2 at the baseline revision",
}


def measure_at(
    rows: int, rounds: int, suffix: str = "", baseline_rev: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    work = Path(tempfile.mkdtemp(prefix="mcqa-bench-prepare-"))
    try:
        src = make_parquet(work / "train-00000-of-00001.parquet", rows)
        inputs = {f"rows{suffix}": rows, f"parquet_mb{suffix}": round(src.stat().st_size / 2**20, 1)}
        baseline = H.revision_tree(baseline_rev, work) if baseline_rev else None
        if baseline is not None:
            inputs["baseline_rev"] = baseline_rev
        runs = H.interleave(legs_for(src, work, baseline), rounds)
        fig: dict[str, Any] = {}
        for name, rs in runs.items():
            fig.update(H.runs_figures(name, WHAT[name], rs, rows, suffix))
        wall = {k: [r.wall_s for r in v] for k, v in runs.items()}
        fig["w1_vs_floor.x" + suffix] = H.ratio_figure(
            "prepare --workers 1 wall time / the floor's", wall["w1"], wall["floor"],
            target={"op": "<=", "value": TARGET_RATIO},
        )  # fmt: skip
        fig["w2_vs_floor.x" + suffix] = H.ratio_figure(
            "prepare --workers 2 wall time / the floor's", wall["w2"], wall["floor"],
            target={"op": "<=", "value": TARGET_W2},
        )  # fmt: skip
        fig["w2_vs_w1.x" + suffix] = H.ratio_figure(
            "prepare --workers 1 wall time / --workers 2's", wall["w1"], wall["w2"]
        )
        fig.update(H.baseline_figures("prepare", wall, ["w1", "w2"]))
        manifest = json.loads((work / "prepared-w2" / "manifest.json").read_text())
        inputs[f"written{suffix}"] = manifest.get("counts", {}).get("written")
        inputs[f"repaired{suffix}"] = manifest.get("counts", {}).get("repaired")
        same = _same_shards(work / "prepared-w1", work / "prepared-w2")
        return fig, {"inputs": inputs, "checks": {f"w2_output_equals_w1{suffix}": same}}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _same_shards(a: Path, b: Path) -> bool:
    files = sorted(p.relative_to(a) for p in a.rglob("*.jsonl"))
    return files == sorted(p.relative_to(b) for p in b.rglob("*.jsonl")) and all(
        (a / f).read_bytes() == (b / f).read_bytes() for f in files
    )


def run(
    scale: float = 1.0, *, rounds: int = 3, full: bool = False, baseline_rev: str | None = None
) -> dict[str, Any]:
    """The result document (docs/design/performance.md, "Result format"); with `baseline_rev`, also the two
    commands on that git revision's package, in the same rounds, at the scaled size."""
    res: dict[str, Any] = {
        "bench": "prepare",
        "title": "mcqa-prep prepare (Parquet in) with 1 and 2 workers against the one-core floor",
        "figures": {},
        "checks": {},
        "inputs": {},
    }
    sizes = [(max(1000, int(ROWS * scale)), "")] + ([(FULL_ROWS, "@full")] if full else [])
    for rows, suffix in sizes:
        fig, extra = measure_at(rows, rounds, suffix, None if suffix else baseline_rev)
        res["figures"].update(fig)
        res["inputs"].update(extra["inputs"])
        res["checks"].update(extra["checks"])
    return res


if __name__ == "__main__":
    H.standalone(run, __doc__)
