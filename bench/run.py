"""`make bench`: every benchmark in its own process, on synthetic data shaped like the real dataset.

Each benchmark module exposes run(rows) -> dict. They run one after the other in fresh processes (so each
peak RSS is its own), and the report puts each stage next to a baseline measured in the same run: the bare
read-parse-serialise floor for prepare, NeMo Gym's own per-mode speeds for the grader modes, the issue's
floor for validate and robust. Timing thresholds live here, never in unit tests.

    python bench/run.py [--scale 0.5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

BENCHES = [
    # (module, rows at scale 1.0, what it measures)
    ("bench_grader", 100_000, "grading modes, rows/s vs NeMo Gym 0.7.0 (issue 2 targets)"),
    ("bench_robust", 50_000, "robust mode, rows/s (target >= 20,000)"),
    ("bench_validate", 100_000, "validate, rows/s (target >= 20,000)"),
    ("bench_prepare", 100_000, "prepare vs read-parse-serialise floor (target <= 3x), peak memory"),
]


def run_one(module: str, rows: int) -> dict:
    code = (
        "import json, sys, resource\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        f"import {module} as m\n"
        f"res = m.run({rows})\n"
        "res['_peak_rss_mb'] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)\n"
        "print('@@RESULT@@' + json.dumps(res))\n"
    )
    t0 = time.perf_counter()
    env = dict(os.environ, PYTHONHASHSEED="0")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {
            "error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed",
            "_wall_s": wall,
        }
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT@@"))
    res = json.loads(line[len("@@RESULT@@") :])
    res["_wall_s"] = round(wall, 1)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every benchmark's row count")
    ap.add_argument("--only", action="append", help="run only this benchmark module (repeatable)")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args()
    results = {}
    for module, rows, what in BENCHES:
        if args.only and module not in args.only:
            continue
        n = max(1000, int(rows * args.scale))
        if not args.json:
            print(f"== {module} ({n} rows): {what}", flush=True)
        res = run_one(module, n)
        results[module] = res
        if not args.json:
            print(json.dumps(res, indent=2), flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
