"""Benchmark `prepare` and `validate` (Parquet in) against a bare read-and-serialise floor, with 1 and 2
workers, and prepare's peak memory.

Synthetic data shaped like nvidia/Nemotron-RL-knowledge-mcqa: 10 options stored the Parquet way (every
element carries all letters, null-filled), 30% rows with a custom template (output_regex etc.), uuids,
reward_profiles, in row groups of 5,000 rows. The floor is what any tool must do, on one core and with the
JSON library prepare itself uses: pyarrow batches -> to_pylist -> orjson.dumps -> write.

    python bench/bench_prepare.py --rows 100000        # prints one JSON document
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

LETTERS = "ABCDEFGHIJ"
TARGET_RATIO = 3.0


def synth_rows(n: int, seed: int = 0):
    rnd = random.Random(seed)
    for i in range(n):
        texts = [
            f"option {c}: "
            + " ".join(rnd.choice(("cell", "gene", "acid", "wave", "mass", "law")) for _ in range(6))
            for c in LETTERS
        ]
        question = f"Question {i}: which statement about topic {rnd.randint(0, 9999)} is correct?"
        body = question + "\n" + "\n".join(f"{c}: {t}" for c, t in zip(LETTERS, texts, strict=True))
        row: dict[str, Any] = {
            "responses_create_params": {
                "input": [
                    {
                        "role": "user",
                        "content": "Think step by step, then put the letter in \\boxed{}.\n" + body,
                    }
                ]
            },
            "options": [{c: t} for c, t in zip(LETTERS, texts, strict=True)],
            "expected_answer": rnd.choice(LETTERS),
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


def floor_pass(src: Path, dst: Path) -> float:
    """The bare minimum, on one core: read batches, to Python, JSON (orjson, as prepare), write lines."""
    import orjson
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    dumps = orjson.dumps
    with open(dst, "wb") as fh:
        for batch in pq.ParquetFile(src).iter_batches(batch_size=2048):
            fh.write(b"".join(dumps(r) + b"\n" for r in batch.to_pylist()))
    return time.perf_counter() - t0


def prepare_pass(src: Path, out: Path, workers: int = 1) -> tuple[float, dict[str, Any]]:
    from mcqa_prep.prepare.run import prepare

    t0 = time.perf_counter()
    report = prepare([src], out, on_invalid="reject", workers=workers)
    return time.perf_counter() - t0, report.counts


def validate_pass(src: Path, workers: int) -> float:
    from mcqa_prep.validate import validate_paths

    t0 = time.perf_counter()
    validate_paths([src], workers=workers)
    return time.perf_counter() - t0


def _child(rows: int) -> None:
    """Run in a subprocess: prepare `rows` rows and print peak RSS (KiB) before and after."""
    import pyarrow  # noqa: F401  (baseline includes the libraries)

    import mcqa_prep.prepare.run  # noqa: F401

    work = Path(tempfile.mkdtemp(prefix="mcqa-bench-mem-"))
    try:
        src = make_parquet(work / "train-00000-of-00001.parquet", rows)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        # reset-free measurement: tracemalloc sees Python allocations of the prepare call only
        import tracemalloc

        tracemalloc.start()
        prepare_pass(src, work / "out")
        _, peak_py = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(
            json.dumps(
                {
                    "rows": rows,
                    "maxrss_kib_before": base,
                    "maxrss_kib_after": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                    "python_peak_mib": round(peak_py / 2**20, 1),
                }
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def memory_at(rows: int) -> dict[str, Any]:
    p = subprocess.run(
        [sys.executable, __file__, "--child-memory", str(rows)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    return json.loads(p.stdout.strip().splitlines()[-1])


def run(rows: int = 100_000, *, memory: bool = True) -> dict[str, Any]:
    """Throughput ratio prepare/floor on `rows` rows, and peak memory at rows/4 and rows (when memory)."""
    work = Path(tempfile.mkdtemp(prefix="mcqa-bench-"))
    try:
        src = make_parquet(work / "train-00000-of-00001.parquet", rows)
        floor_s = min(floor_pass(src, work / "floor.jsonl") for _ in range(2))
        prep_s, counts = prepare_pass(src, work / "prepared")
        result: dict[str, Any] = {
            "rows": rows,
            "floor_seconds": round(floor_s, 3),
            "prepare_seconds": round(prep_s, 3),
            "floor_rows_per_s": round(rows / floor_s),
            "prepare_rows_per_s": round(rows / prep_s),
            "ratio": round(prep_s / floor_s, 2),
            "target_ratio": TARGET_RATIO,
            "counts": counts,
            "workers": {},
        }
        for w in (1, 2):  # wall seconds, workers included (the floor is one core)
            p_s, _ = prepare_pass(src, work / f"prepared-w{w}", workers=w)
            v_s = validate_pass(src, workers=w)
            result["workers"][str(w)] = {
                "prepare_seconds": round(p_s, 3),
                "prepare_vs_floor": round(p_s / floor_s, 2),
                "validate_seconds": round(v_s, 3),
                "validate_vs_floor": round(v_s / floor_s, 2),
            }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if memory:
        small, large = memory_at(max(rows // 4, 1000)), memory_at(rows)
        result["memory"] = [small, large]
        result["python_peak_growth_mib"] = round(large["python_peak_mib"] - small["python_peak_mib"], 1)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--no-memory", action="store_true", help="Skip the two memory subprocesses.")
    ap.add_argument("--child-memory", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_memory:
        _child(args.child_memory)
        return
    print(json.dumps(run(args.rows, memory=not args.no_memory), indent=2))


if __name__ == "__main__":
    main()
