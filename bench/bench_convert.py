"""Benchmark `convert` (Parquet in, JSONL out) against the bare read-and-serialise pass over the same file.

Two synthetic sources, each converted with --shuffle through every stage of a real run (decode, uuid,
template pick, controls, balanced order, render, self-check, serialise, write):
- the main figure: the MMLU-Pro layout (question, options: 4-10 texts with some N/A padding, answer_index,
  category), the mmlu_pro preset, a 70/30 mix of the `boxed` and `final_choice` templates;
- `mmlu_4`: the MMLU layout (question, 4 choices, answer index), the mmlu preset, the default template. The baseline, measured in the same process on the same file, is what any
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


def make_mmlu_parquet(path: Path, n: int, seed: int = 1) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rnd = random.Random(seed)
    rows = [
        {
            "question": f"Question {i}: "
            + " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(12, 40)))
            + "?",
            "subject": rnd.choice(("college_physics", "professional_law", "anatomy")),
            "choices": [
                " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(2, 8))) + f" ({i}.{j})"
                for j in range(4)
            ],
            "answer": rnd.randrange(4),
        }
        for i in range(n)
    ]
    pq.write_table(pa.Table.from_pylist(rows), path)
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


def convert_pass(
    src: Path,
    dst: Path,
    preset: str = "mmlu_pro",
    templates: tuple[str, ...] = ("boxed:0.7", "final_choice:0.3"),
) -> tuple[float, float, dict[str, Any]]:
    from mcqa_prep.convert import convert

    t0, c0 = time.perf_counter(), time.process_time()
    report = convert([str(src)], dst, preset=preset, shuffle=True, seed=0, templates=list(templates))
    return time.perf_counter() - t0, time.process_time() - c0, report.to_dict()


def _measure(src: Path, tmp: Path, repeat: int, preset: str, templates: tuple[str, ...]) -> dict[str, Any]:
    base_w, base_c, conv_w, conv_c = [], [], [], []
    doc: dict[str, Any] = {}
    for _ in range(max(1, repeat)):  # alternate, so both passes see the same machine load
        w, c = baseline_pass(src, tmp / "baseline.jsonl")
        base_w.append(w)
        base_c.append(c)
        w, c, doc = convert_pass(src, tmp / "out.jsonl", preset, templates)
        conv_w.append(w)
        conv_c.append(c)
    rows = doc["counts"]["read"]
    return {
        "rows": rows,
        "convert_rows_per_s": round(rows / min(conv_w)),
        "convert_rows_per_cpu_s": round(rows / min(conv_c)),
        "convert_rows_per_s_median": round(rows / statistics.median(conv_w)),
        "baseline_rows_per_s": round(rows / min(base_w)),
        "baseline_rows_per_cpu_s": round(rows / min(base_c)),
        "time_ratio_vs_baseline": round(min(conv_c) / min(base_c), 2),
        "written": doc["counts"]["written"],
        "rejected": doc["counts"]["rejected"],
        "gold_spread": doc["gold_spread"],
        "templates": {t["id"]: t["rows"] for t in doc["templates"]},
    }


def run(rows: int = 100_000, repeat: int = 3) -> dict[str, Any]:
    """Best of `repeat` alternating runs of the baseline and convert on each generated file (CPU seconds and
    wall seconds; on a shared machine the CPU figure is the one that does not count other jobs)."""
    import mcqa_prep.convert  # noqa: F401 - import cost outside the timed passes

    with tempfile.TemporaryDirectory(prefix="bench-convert-") as tmp:
        t = Path(tmp)
        main = _measure(
            make_parquet(t / "test-00000-of-00001.parquet", rows),
            t,
            repeat,
            "mmlu_pro",
            ("boxed:0.7", "final_choice:0.3"),
        )
        mmlu = _measure(make_mmlu_parquet(t / "mmlu-test.parquet", rows), t, repeat, "mmlu", ("boxed",))
    return {**main, "repeat": repeat, "floor_rows_per_s": FLOOR, "mmlu_4": mmlu}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    r = run(args.rows, args.repeat)
    for name, x in (("mmlu_pro mix", r), ("mmlu_4", r["mmlu_4"])):
        print(
            f"convert {name}: {x['rows']} rows, best of {r['repeat']}: {x['convert_rows_per_cpu_s']:,} rows per CPU "
            f"second ({x['convert_rows_per_s']:,} rows/s wall); baseline read+orjson "
            f"{x['baseline_rows_per_cpu_s']:,} per CPU second; floor {FLOOR:,}"
        )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
