"""Throughput of `validate` on a synthetic dataset shaped like nvidia/Nemotron-RL-knowledge-mcqa.

10 options per row in the Parquet/Arrow shape (every element carries all ten letter keys, nulls for the
absent ones), 30% of rows with a custom template (output_regex), the rest strict boxed. Deterministic.
Usage: python bench/bench_validate.py [--rows N] [--repeat K]   (defaults 100000 rows, best of 3 runs);
importable: run(rows, repeat) -> dict. Throughput is reported per wall-clock second and per CPU second (the
process's CPU time, which another process's load on other cores barely moves), each the best of the runs,
with the medians alongside.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

LETTERS = "ABCDEFGHIJ"
SHARD_ROWS = 50_000
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
    texts = [f"{_text(rng, 3, 12)} ({i}.{k})" for k in range(10)]
    question = f"Which of the following statements about {_text(rng, 8, 30)} is true? (item {i})"
    problem = question + "\n" + "\n".join(f"{L}: {t}" for L, t in zip(LETTERS, texts, strict=True))
    options = [{K: (texts[k] if K == L else None) for K in LETTERS} for k, L in enumerate(LETTERS)]
    row: dict[str, Any] = {
        "responses_create_params": {"input": [{"role": "user", "content": ""}]},
        "options": options,
        "expected_answer": rng.choice(LETTERS),
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


def _read_floor(directory: Path, repeat: int) -> float:
    """Least CPU seconds of reading every row with the shared reader and doing nothing else: the floor under
    validate, measured on the same files in the same run."""
    from mcqa_prep.io import iter_rows

    best = float("inf")
    for _ in range(max(1, repeat)):
        c0 = time.process_time()
        for _rec in iter_rows([directory]):
            pass
        best = min(best, time.process_time() - c0)
    return best


def run(rows: int = 100_000, repeat: int = 3) -> dict[str, Any]:
    """Generate the dataset in a temp dir, time validate_paths over it `repeat` times, return the numbers
    (best and median of the runs; the findings are those of the last run)."""
    from mcqa_prep.io.readers import iter_rows
    from mcqa_prep.validate import validate_paths

    walls: list[float] = []
    cpus: list[float] = []
    reads: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-validate-") as tmp:
        t0 = time.perf_counter()
        generate(Path(tmp), rows)
        gen_s = time.perf_counter() - t0
        for _ in range(max(1, repeat)):
            c0 = time.process_time()
            for _row in iter_rows([tmp]):
                pass
            reads.append(time.process_time() - c0)
            t0 = time.perf_counter()
            c0 = time.process_time()
            report = validate_paths([tmp], max_findings=50)
            cpus.append(time.process_time() - c0)
            walls.append(time.perf_counter() - t0)
        floor_cpu = _read_floor(Path(tmp), repeat)
    s = report.summary
    n = s["rows_read"]
    return {
        "rows": n,
        "repeat": len(walls),
        "seconds": round(min(walls), 3),
        "rows_per_s": round(n / min(walls), 1),
        "rows_per_s_median": round(n / statistics.median(walls), 1),
        "cpu_seconds": round(min(cpus), 3),
        "rows_per_cpu_s": round(n / min(cpus), 1),
        "rows_per_cpu_s_median": round(n / statistics.median(cpus), 1),
        "read_cpu_us_per_row": round(1e6 * min(reads) / n, 2),
        "validator_cpu_us_per_row": round(1e6 * (min(cpus) - min(reads)) / n, 2),
        "generate_seconds": round(gen_s, 3),
        "read_floor_rows_per_cpu_s": round(n / floor_cpu, 1) if floor_cpu else None,
        "errors": s["errors"],
        "warnings": s["warnings"],
        "findings_by_rule": s["findings_by_rule"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3, help="runs over the same data; the best is reported")
    args = ap.parse_args(argv)
    r = run(args.rows, args.repeat)
    print(
        f"validate: {r['rows']} rows, best of {r['repeat']}: {r['seconds']}s = {r['rows_per_s']:.0f} rows/s "
        f"({r['rows_per_cpu_s']:.0f} rows per CPU second); medians {r['rows_per_s_median']:.0f} rows/s, "
        f"{r['rows_per_cpu_s_median']:.0f} rows per CPU second"
    )
    print(
        f"  CPU per row: reading {r['read_cpu_us_per_row']} us, validating {r['validator_cpu_us_per_row']} us "
        "(the rest of the best run)"
    )
    print(f"  errors {r['errors']}, warnings {r['warnings']}, by rule {r['findings_by_rule']}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
