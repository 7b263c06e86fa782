"""Benchmark `convert` (Parquet in, JSONL out) against the bare read-and-serialise pass over the same file.

Synthetic source in the MMLU-Pro layout (question, options: 4-10 texts with some N/A padding, answer_index,
category), converted with the mmlu_pro preset, --shuffle and a 70/30 mix of the `boxed` and `final_choice`
templates: every stage of a real run (decode, uuid, template pick, controls, balanced order, render,
self-check, serialise, write). The baseline, measured in the same process on the same file, is what any
converter must do at least: pyarrow batches -> Python rows -> orjson (the JSON library convert uses) ->
write. The issue's floor is 20,000 rows/s on one core; both passes are single-threaded.

    python bench/bench_convert.py --rows 100000
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

FLOOR = 20_000
WORDS = (
    "cell",
    "gene",
    "acid",
    "wave",
    "mass",
    "law",
    "force",
    "energy",
    "protein",
    "the",
    "of",
    "Carbon",
    "membrane",
    "voltage",
    "market",
    "court",
)


def make_parquet(path: Path, n: int, seed: int = 0) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rnd = random.Random(seed)
    writer = None
    batch: list[dict[str, Any]] = []
    for i in range(n):
        k = rnd.randint(4, 10)
        opts = [
            " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 9))) + f" ({i}.{j})" for j in range(k)
        ]
        if k < 10 and i % 3 == 0:
            opts += ["N/A"] * (10 - k)
        gold = rnd.randrange(k)
        batch.append(
            {
                "question_id": i,
                "question": f"Question {i}: "
                + " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(12, 40)))
                + "?",
                "options": opts,
                "answer": "ABCDEFGHIJ"[gold],
                "answer_index": gold,
                "cot_content": "",
                "category": rnd.choice(("physics", "law", "biology", "economics")),
                "src": "bench",
            }
        )
        if len(batch) == 5000 or i == n - 1:
            table = pa.Table.from_pylist(batch)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
            batch = []
    assert writer is not None
    writer.close()
    return path


def baseline_pass(src: Path, dst: Path) -> tuple[float, float]:
    """(wall, cpu) seconds to read every row into Python and write it as a JSON line with orjson."""
    import orjson
    import pyarrow.parquet as pq

    t0, c0 = time.perf_counter(), time.process_time()
    dumps = orjson.dumps
    opt = orjson.OPT_APPEND_NEWLINE
    with open(dst, "wb") as fh:
        for batch in pq.ParquetFile(src).iter_batches(batch_size=4096):
            fh.write(b"".join(dumps(r, option=opt) for r in batch.to_pylist()))
    return time.perf_counter() - t0, time.process_time() - c0


def convert_pass(src: Path, dst: Path) -> tuple[float, float, dict[str, Any]]:
    from mcqa_prep.convert import convert

    t0, c0 = time.perf_counter(), time.process_time()
    report = convert(
        [str(src)],
        dst,
        preset="mmlu_pro",
        shuffle=True,
        seed=0,
        templates=["boxed:0.7", "final_choice:0.3"],
    )
    return time.perf_counter() - t0, time.process_time() - c0, report.to_dict()


def run(rows: int = 100_000, repeat: int = 3) -> dict[str, Any]:
    """Best of `repeat` alternating runs of the baseline and convert on one generated file."""
    import mcqa_prep.convert  # noqa: F401 - import cost outside the timed passes

    with tempfile.TemporaryDirectory(prefix="bench-convert-") as tmp:
        src = make_parquet(Path(tmp) / "test-00000-of-00001.parquet", rows)
        base_w, base_c, conv_w, conv_c = [], [], [], []
        doc: dict[str, Any] = {}
        for _ in range(max(1, repeat)):
            w, c = baseline_pass(src, Path(tmp) / "baseline.jsonl")
            base_w.append(w)
            base_c.append(c)
            w, c, doc = convert_pass(src, Path(tmp) / "out.jsonl")
            conv_w.append(w)
            conv_c.append(c)
    counts = doc["counts"]
    return {
        "rows": rows,
        "repeat": len(conv_w),
        "convert_rows_per_s": round(rows / min(conv_w)),
        "convert_rows_per_cpu_s": round(rows / min(conv_c)),
        "convert_rows_per_s_median": round(rows / statistics.median(conv_w)),
        "baseline_rows_per_s": round(rows / min(base_w)),
        "baseline_rows_per_cpu_s": round(rows / min(base_c)),
        "time_ratio_vs_baseline": round(min(conv_c) / min(base_c), 2),
        "floor_rows_per_s": FLOOR,
        "written": counts["written"],
        "rejected": counts["rejected"],
        "gold_spread": doc["gold_spread"],
        "templates": {t["id"]: t["rows"] for t in doc["templates"]},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    r = run(args.rows, args.repeat)
    print(
        f"convert: {r['rows']} rows, best of {r['repeat']}: {r['convert_rows_per_s']:,} rows/s "
        f"({r['convert_rows_per_cpu_s']:,} per CPU second); baseline read+orjson "
        f"{r['baseline_rows_per_s']:,} rows/s; floor {FLOOR:,}"
    )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
