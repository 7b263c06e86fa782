"""`mcqa-prep rescore` as a command, next to NeMo Gym 0.7.0's verify path and the read-serialise floor, each its
own process, interleaved.

Synthetic verify requests shaped like NeMo Gym's (the dataset row: a prompt with 4-10 options, most rows 10,
one prompt in ten with a long passage of 2-8 kB; options, gold, grading mode; 30% custom templates with an
output_regex; plus a Responses API `response` like NeMo Gym's rollouts, whose text is ~1,500 characters of
reasoning, half of it multilingual, ending in the row's answer format, or, in 8% of rows, in no answer at all),
written as JSONL once; rollouts (the same responses without options) and the dataset rows as Parquet beside
them for the `--rows` join.

Legs, each a command measured by bench/harness.py (wall, CPU of the process tree, peak RSS of the tree), run
`rounds` times, the order rotated each round:

- floor: bench/floors.py jsonl (every line orjson.loads, orjson.dumps, write; one core);
- nemo_gym: bench/nemo_gym_verify.py (per line: its request model, verify(), the response model's JSON, write);
- w1, w2: `mcqa-prep rescore REQUESTS -o OUT --workers 1|2 -q`;
- nemo_gym_grades, grades_w1: the same two with the same small output per row (NeMo Gym's: line, id, reward,
  extracted answer; ours: `--output-shape grading`, which adds status, rule and contract);
- small: `mcqa-prep rescore` of the first 200 requests, one worker (the command's fixed cost: start-up);
- join_w1, join_w2: `mcqa-prep rescore ROLLOUTS --rows DATASET.parquet --workers 1|2` (the join index);
- baseline (with baseline_rev): w1 on that git revision's package (git archive), before/after.

Ray (`--engine ray`) is measured by bench_cluster.py on these same inputs (its fixed cost apart from its rate).

full=True adds the same rescore legs (w2, join_w2) on 685,573 rows: peak memory at the dataset's size.

    python bench/bench_rescore.py [--scale 0.05] [--rounds 3] [--baseline-rev REV]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import harness as H  # noqa: E402
from texts import multilingual_prose  # noqa: E402

LETTERS = "ABCDEFGHIJ"
SEED = 20240611
ROWS = 100_000  # at scale 1
FULL_ROWS = 685_573  # nvidia/Nemotron-RL-knowledge-mcqa's train split
SMALL = 200  # rows of the fixed-cost legs
MISS = 0.08  # responses that end without an answer (truncated, off-format)
MISS_TAIL = "so the answer depends on which assumption holds"
LONG_PROMPT = 0.1  # rows whose question carries a long passage
TARGET_RATIO = 3.0  # full rows (issue 36)
TARGET_GRADES_RATIO = 5.0  # --output-shape grading against NeMo Gym's verify path with the same output size
TEMPLATE_REGEX = r"Final Choice:\s*([A-Za-z])"
_TERMS = ["Gibbs free energy", "entropy change", "Michaelis constant", "refractive index", "allele frequency",
          "salt bridge", "trophic cascade", "Nernst equation", "ribosome", "Golgi apparatus"]  # fmt: skip


def _prose(rng: random.Random, chars: int) -> str:
    parts, size = [], 0
    while size < chars:
        a, b = rng.sample(_TERMS, 2)
        s = f"The {a} is related to the {b}, so we compare option {rng.choice(LETTERS)} with the data."
        parts.append(s)
        size += len(s) + 1
    return " ".join(parts)


def _answer(rng: random.Random, mode: str, letter: str, custom: bool) -> str:
    if custom:
        return f"Final Choice: {letter}"
    if mode == "lenient_answer_colon":
        return f"Answer: {letter}"
    return rng.choice(
        [f"\\boxed{{{letter}}}", f"\\[\n\\boxed{{\\text{{{letter}}}}}\n\\]", f"\\boxed{{{letter}: x}}"]
    )


def dataset_row(rng: random.Random, i: int) -> dict[str, Any]:
    """A dataset row like nvidia/Nemotron-RL-knowledge-mcqa's: 4-10 options (six in ten rows have 10), one
    question in ten with a long passage (2-8 kB)."""
    letters = LETTERS if rng.random() < 0.6 else LETTERS[: rng.randint(4, 9)]
    options = [
        {c: f"The {rng.choice(_TERMS)} {rng.choice(['rises', 'falls', 'holds'])} ({c}{i % 97})"}
        for c in letters
    ]
    body = "\n".join(f"{c}: {next(iter(o.values()))}" for c, o in zip(letters, options, strict=True))
    passage = _prose(rng, rng.randint(2000, 8000)) + "\n\n" if rng.random() < LONG_PROMPT else ""
    row: dict[str, Any] = {
        "responses_create_params": {
            "input": [
                {
                    "role": "user",
                    "content": "You should output your final response letter inside \\boxed{} and nothing else. "
                    f"{passage}Question {i}: which statement is correct?\n{body}",
                }
            ]
        },
        "options": options,
        "expected_answer": rng.choice(letters),
        "grading_mode": rng.choice(
            ["strict_single_letter_boxed"] * 8 + ["lenient_boxed", "lenient_answer_colon"]
        ),
        "uuid": f"{i:08x}-0000-4000-8000-bench",
    }
    if rng.random() < 0.3:
        row["template_metadata"] = {
            "template_id": f"mcqa_custom_{rng.randint(0, 40):03d}",
            "output_regex": TEMPLATE_REGEX,
            "prompt_type": "custom",
            "format_type": "mcqa",
        }
    return row


def response(rng: random.Random, row: dict[str, Any], i: int) -> dict[str, Any]:
    """A Responses API response like NeMo Gym's rollouts carry (8% end without an answer)."""
    letter = row["expected_answer"] if rng.random() < 0.7 else rng.choice(LETTERS[: len(row["options"])])
    if rng.random() < 0.5:
        prose = multilingual_prose(rng, row["options"], 1450)
    else:
        prose = _prose(rng, 1450)
    if rng.random() < MISS:
        text = f"{prose}\n\n{MISS_TAIL}"
    else:
        text = f"{prose}\n\n{_answer(rng, row['grading_mode'], letter, 'template_metadata' in row)}"
    return {
        "id": f"resp_{rng.getrandbits(192):048x}",  # hex ids as NeMo Gym writes them (no long digit runs)
        "created_at": 1756093415.0,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "model": "bench-model",
        "object": "response",
        "output": [
            {
                "id": f"msg_{rng.getrandbits(192):048x}",
                "content": [{"annotations": [], "text": text, "type": "output_text", "logprobs": []}],
                "role": "assistant",
                "status": "completed",
                "type": "message",
            }
        ],
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "status": "completed",
        "usage": {
            "input_tokens": 254,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 475,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 729,
        },
    }


def write_inputs(work: Path, n: int, seed: int = SEED) -> tuple[Path, Path, Path]:
    """(verify requests, rollouts without options, dataset rows as Parquet) for n prompts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    requests, rollouts, dataset = work / "requests.jsonl", work / "rollouts.jsonl", work / "train.parquet"
    writer = None
    with open(requests, "wb") as rq, open(rollouts, "wb") as ro:
        batch: list[dict[str, Any]] = []
        for i in range(n):
            row = dataset_row(rng, i)
            resp = response(rng, row, i)
            rq.write(orjson.dumps({**row, "response": resp}) + b"\n")
            ro.write(
                orjson.dumps(
                    {
                        "responses_create_params": row["responses_create_params"],
                        "response": resp,
                        "reward": float(rng.random() < 0.6),
                        "extracted_answer": rng.choice(LETTERS),
                    }
                )
                + b"\n"
            )
            batch.append(row)
            if len(batch) == 5000 or i == n - 1:
                table = pa.Table.from_pylist(batch, schema=writer.schema if writer else None)
                writer = writer or pq.ParquetWriter(dataset, table.schema)
                writer.write_table(table)
                batch = []
    assert writer is not None
    writer.close()
    return requests, rollouts, dataset


# ---- legs -----------------------------------------------------------------------------------------------


def rewards(path: Path) -> list[float]:
    if path.is_dir():  # a Ray output: shards in input order by name
        files = sorted(path.glob("*.jsonl"))
    else:
        files = [path]
    out: list[float] = []
    for f in files:
        with open(f, "rb") as fh:
            out += [orjson.loads(line)["reward"] for line in fh]
    return out


def head(src: Path, dst: Path, n: int) -> Path:
    with open(src, "rb") as fh, open(dst, "wb") as out:
        out.writelines(line for _, line in zip(range(n), fh, strict=False))
    return dst


def legs_for(work: Path, requests: Path, rollouts: Path, dataset: Path, *,
             baseline: Path | None) -> dict[str, Any]:  # fmt: skip
    """name -> a function that runs and measures the leg once (harness.measure)."""
    small = head(requests, work / "small.jsonl", SMALL)
    out = work / "out"
    out.mkdir(exist_ok=True)
    cli = H.cli()

    def rescore(name: str, src: Path, *extra: str, argv: list[str] | None = None, cwd: Path = work) -> Any:
        def leg() -> H.Run:
            dst = out / name
            if dst.is_dir():
                shutil.rmtree(dst)
            dst.unlink(missing_ok=True)
            return H.measure([*(argv or cli), "rescore", str(src), "-o", str(dst), "-q", *extra], cwd=cwd)

        return leg

    legs: dict[str, Any] = {
        "floor": lambda: H.measure(H.py("floors.py", "jsonl", str(requests), str(out / "floor"))),
        "nemo_gym": lambda: H.measure(H.py("nemo_gym_verify.py", str(requests), str(out / "nemo_gym"))),
        "w1": rescore("w1", requests, "--workers", "1"),
        "w2": rescore("w2", requests, "--workers", "2"),
        "nemo_gym_grades": lambda: H.measure(
            H.py("nemo_gym_verify.py", str(requests), str(out / "nemo_gym_grades"), "--grading")
        ),
        "grades_w1": rescore("grades_w1", requests, "--workers", "1", "--output-shape", "grading"),
        "small": rescore("small", small, "--workers", "1"),
        "join_w1": rescore("join_w1", rollouts, "--rows", str(dataset), "--workers", "1"),
        "join_w2": rescore("join_w2", rollouts, "--rows", str(dataset), "--workers", "2"),
    }
    if baseline is not None:
        legs["baseline"] = rescore(
            "baseline", requests, "--workers", "1", argv=H.revision_cli(), cwd=baseline
        )
    return legs


WHAT = {
    "floor": "floor: orjson loads + dumps + write of every line (bench/floors.py, one core)",
    "nemo_gym": "NeMo Gym 0.7.0 verify path: request model, verify(), response JSON (bench/nemo_gym_verify.py)",
    "w1": "mcqa-prep rescore --workers 1",
    "w2": "mcqa-prep rescore --workers 2",
    "nemo_gym_grades": "NeMo Gym 0.7.0 verify path writing line, id, reward and letter per row (nemo_gym_verify.py --grading)",
    "grades_w1": "mcqa-prep rescore --workers 1 --output-shape grading",
    "small": "mcqa-prep rescore --workers 1 of the first rows (its fixed cost: start-up)",
    "join_w1": "mcqa-prep rescore ROLLOUTS --rows DATASET --workers 1",
    "join_w2": "mcqa-prep rescore ROLLOUTS --rows DATASET --workers 2",
    "baseline": "mcqa-prep rescore --workers 1 at the baseline revision",
}


def figures_from(runs: dict[str, list[H.Run]], rows: int, suffix: str = "") -> dict[str, dict[str, Any]]:
    """Every leg's standard figures and the comparisons the docs state (harness.ratio_figure: per round)."""
    fig: dict[str, dict[str, Any]] = {}
    for name, rs in runs.items():
        n = SMALL if name.endswith("small") else rows
        fig.update(H.runs_figures(name, WHAT[name], rs, n, suffix))
    wall = {k: [r.wall_s for r in v] for k, v in runs.items()}
    cpu = {k: [r.cpu_s for r in v] for k, v in runs.items()}

    def ratio(key: str, what: str, a: list[float], b: list[float], **kw: Any) -> None:
        fig[key + suffix] = H.ratio_figure(what, a, b, **kw)

    if "nemo_gym" in runs and "w1" in runs:
        ratio("w1_vs_nemo_gym.cpu_x", "NeMo Gym's verify path CPU time / rescore --workers 1's", cpu["nemo_gym"],
              cpu["w1"], target={"op": ">=", "value": TARGET_RATIO})  # fmt: skip
        ratio("w1_vs_nemo_gym.wall_x", "NeMo Gym's verify path wall time / rescore --workers 1's",
              wall["nemo_gym"], wall["w1"])  # fmt: skip
    if "nemo_gym_grades" in runs and "grades_w1" in runs:
        ratio("grades_w1_vs_nemo_gym.cpu_x", "NeMo Gym's verify path CPU time / rescore --workers 1 "
              "--output-shape grading's, the same small output on both sides", cpu["nemo_gym_grades"],
              cpu["grades_w1"], target={"op": ">=", "value": TARGET_GRADES_RATIO})  # fmt: skip
        ratio("grades_w1_vs_nemo_gym.wall_x", "NeMo Gym's verify path wall time / rescore --workers 1 "
              "--output-shape grading's, the same small output on both sides", wall["nemo_gym_grades"],
              wall["grades_w1"])  # fmt: skip
    if "floor" in runs and "w1" in runs:
        ratio("w1_vs_floor.wall_x", "rescore --workers 1 wall time / the floor's", wall["w1"], wall["floor"])
        ratio("w2_vs_floor.wall_x", "rescore --workers 2 wall time / the floor's", wall["w2"], wall["floor"])
    if "w2" in runs and "w1" in runs:
        ratio("w2_vs_w1.x", "rescore --workers 1 wall time / --workers 2's (the gain of a second worker)",
              wall["w1"], wall["w2"], target={"op": ">=", "value": 1.8})  # fmt: skip
    if "baseline" in runs:
        ratio("w1_vs_baseline.cpu_x", "baseline revision's CPU time / this revision's (rescore --workers 1)",
              cpu["baseline"], cpu["w1"])  # fmt: skip
    return fig


def run(scale: float = 1.0, *, rounds: int = 3, full: bool = False, baseline_rev: str | None = None,
        seed: int = SEED) -> dict[str, Any]:  # fmt: skip
    """The result document (docs/design/performance.md, "Result format")."""
    rows = max(1000, int(ROWS * scale))
    work = Path(tempfile.mkdtemp(prefix="mcqa-bench-rescore-"))
    res: dict[str, Any] = {
        "bench": "rescore",
        "title": "mcqa-prep rescore against NeMo Gym's verify path and the floor; workers, the join",
        "figures": {},
        "checks": {},
        "inputs": {},
        "peers": {"nemo_gym": _nemo_gym_version()},
    }
    try:
        requests, rollouts, dataset = write_inputs(work, rows, seed)
        res["inputs"] = describe(requests, dataset, rows)
        baseline = H.revision_tree(baseline_rev, work) if baseline_rev else None
        runs = H.interleave(legs_for(work, requests, rollouts, dataset, baseline=baseline), rounds)
        res["figures"].update(figures_from(runs, rows))
        mine, theirs = rewards(work / "out" / "w1"), rewards(work / "out" / "nemo_gym")
        res["checks"]["same_reward_as_nemo_gym"] = (
            f"{sum(a == b for a, b in zip(mine, theirs, strict=True))}/{rows}"
        )
        grades = rewards(work / "out" / "grades_w1")
        res["checks"]["grading_shape_same_reward_as_full"] = grades == mine
        res["checks"]["w2_output_equals_w1"] = filecmp.cmp(
            work / "out" / "w2", work / "out" / "w1", shallow=False
        )
        if baseline_rev:
            res["inputs"]["baseline_rev"] = baseline_rev
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if full:
        res["figures"].update(full_size(rounds, seed))
        res["inputs"]["rows@full"] = FULL_ROWS
    return res


def full_size(rounds: int, seed: int) -> dict[str, dict[str, Any]]:
    """w2 and join_w2 on FULL_ROWS rows (peak memory at the dataset's size; minutes)."""
    work = Path(tempfile.mkdtemp(prefix="mcqa-bench-rescore-full-"))
    try:
        requests, rollouts, dataset = write_inputs(work, FULL_ROWS, seed + 1)
        legs = legs_for(work, requests, rollouts, dataset, baseline=None)
        runs = H.interleave({k: legs[k] for k in ("w2", "join_w2")}, rounds)
        return figures_from(runs, FULL_ROWS, suffix="@full")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def describe(requests: Path, dataset: Path, rows: int) -> dict[str, Any]:
    """What the inputs hold: size, option counts, prompt lengths, the share of responses without an answer."""
    opts: dict[int, int] = {}
    long_prompts = misses = 0
    with open(requests, "rb") as fh:
        for line in fh:
            row = orjson.loads(line)
            opts[len(row["options"])] = opts.get(len(row["options"]), 0) + 1
            long_prompts += len(row["responses_create_params"]["input"][0]["content"]) > 2000
            misses += row["response"]["output"][0]["content"][0]["text"].endswith(MISS_TAIL)
    return {
        "rows": rows,
        "requests_mb": round(requests.stat().st_size / 2**20, 1),
        "dataset_parquet_mb": round(dataset.stat().st_size / 2**20, 1),
        "options_per_row": {str(k): v for k, v in sorted(opts.items())},
        "long_prompt_share": round(long_prompts / rows, 3),
        "no_answer_share": round(misses / rows, 3),
    }


def _nemo_gym_version() -> str | None:
    try:
        import nemo_gym_ref

        return nemo_gym_ref.version()
    except Exception:
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=0.1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--baseline-rev", help="also time rescore --workers 1 on this git revision's package")
    args = ap.parse_args()
    res = run(args.scale, rounds=args.rounds, full=args.full, baseline_rev=args.baseline_rev)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
