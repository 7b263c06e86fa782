"""Throughput and memory of `report` against `validate`, measured in the same run on the same data.

The data is bench_validate's synthetic dataset (shaped like nvidia/Nemotron-RL-knowledge-mcqa: 10 options in
the Parquet null-filled shape, 30% custom templates). The report runs the validator in its own single pass
and adds bounded tallies and the page, so its time should be about validate's: the ratio printed is
(report pass + page) / validate. Runs alternate (validate, report, validate, ...) so that a slower moment of
a shared machine hits both; the best of `repeat` runs of each is reported, with CPU seconds alongside.
Memory: Python's peak (tracemalloc) of each at rows/4 and rows, in fresh child processes; the growth per
row is the validator's duplicate index (fixed-size hashes), which both hold.

Usage: python bench/bench_report.py [--rows N] [--repeat K] [--no-memory]
importable: run(rows, repeat, memory) -> dict (bench/run.py calls run(rows)).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))


def _timed(fn) -> tuple[float, float, Any]:
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def run(rows: int = 100_000, repeat: int = 2, memory: bool = True) -> dict[str, Any]:
    """Generate the data, time validate and report alternately `repeat` times; then memory at two sizes."""
    from bench_validate import generate

    from mcqa_prep.report import build_report, render_html
    from mcqa_prep.validate import validate_paths

    render_html({"sections": []})  # import the plotting library outside the timings (about 0.5 s once)
    best: dict[str, list[float]] = {"validate": [], "report": [], "report_cpu": [], "validate_cpu": []}
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        t0 = time.perf_counter()
        generate(Path(tmp), rows)
        gen_s = time.perf_counter() - t0
        for _ in range(max(1, repeat)):
            wall, cpu, v = _timed(lambda: validate_paths([tmp], max_findings=50))
            best["validate"].append(wall)
            best["validate_cpu"].append(cpu)
            wall_c, cpu_c, doc = _timed(lambda: build_report([tmp]))
            wall_r, cpu_r, page = _timed(lambda d=doc: render_html(d))
            best["report"].append(wall_c + wall_r)
            best["report_cpu"].append(cpu_c + cpu_r)
            collect_s, render_s = wall_c, wall_r
    n = v.summary["rows_read"]
    ds = doc["sections"][0]["summary"]
    assert ds["rows"] == n and ds["findings_by_rule"] == v.summary["findings_by_rule"], "report != validate"
    val, rep = min(best["validate"]), min(best["report"])
    result: dict[str, Any] = {
        "rows": n,
        "repeat": len(best["validate"]),
        "generate_seconds": round(gen_s, 1),
        "validate_seconds": round(val, 2),
        "validate_rows_per_s": round(n / val),
        "report_seconds": round(rep, 2),
        "report_rows_per_s": round(n / rep),
        "report_collect_seconds_last": round(collect_s, 2),
        "report_render_seconds_last": round(render_s, 2),
        "ratio": round(rep / val, 2),
        "cpu_ratio": round(min(best["report_cpu"]) / min(best["validate_cpu"]), 2),
        "page_bytes": len(page.encode("utf-8")),
        "plots": len([b for s in doc["sections"] for b in s["blocks"] if b.get("type") == "plot"]),
    }
    if memory:
        small = max(rows // 4, 1000)
        result["memory"] = {
            kind: [memory_at(kind, small), memory_at(kind, rows)] for kind in ("validate", "report")
        }
        for kind, (a, b) in result["memory"].items():
            result[f"{kind}_bytes_per_row"] = round(
                (b["python_peak_mib"] - a["python_peak_mib"]) * 2**20 / (b["rows"] - a["rows"])
            )
    return result


def _child(kind: str, rows: int) -> None:
    """In a fresh process: Python's peak memory while validating or reporting `rows` rows."""
    import tracemalloc

    from bench_validate import generate

    from mcqa_prep.report import build_report, render_html
    from mcqa_prep.validate import validate_paths

    render_html({"sections": []})
    with tempfile.TemporaryDirectory(prefix="bench-report-mem-") as tmp:
        generate(Path(tmp), rows)
        tracemalloc.start()
        if kind == "validate":
            validate_paths([tmp], max_findings=50)
        else:
            render_html(build_report([tmp]))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    print(json.dumps({"kind": kind, "rows": rows, "python_peak_mib": round(peak / 2**20, 1)}))


def memory_at(kind: str, rows: int) -> dict[str, Any]:
    p = subprocess.run(
        [sys.executable, __file__, "--child-memory", kind, str(rows)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(HERE.parent)},
    )
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-memory", action="store_true", help="Skip the four memory subprocesses.")
    ap.add_argument("--child-memory", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_memory:
        _child(args.child_memory[0], int(args.child_memory[1]))
        return
    print(json.dumps(run(args.rows, args.repeat, memory=not args.no_memory), indent=2))


if __name__ == "__main__":
    main()
