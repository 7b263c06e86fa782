"""Past one process: `rescore --engine ray` (fixed cost per job apart from per-row throughput, against
`--workers` in the same run) and `load_prepared` (cold and warm, against `datasets`' own JSON loader and
cache on the same shards, in the same run).

Ray, on a local instance of N CPUs (N = 1, 2), each in a fresh process:
- `ray_start_s`: starting the local instance (Ray's own processes; not ours to cut);
- `first_job_s`: the first job (a 200-row input): Ray starts its worker processes, they import the package;
- `fixed_s`: a later 200-row job, whole: the per-job fixed cost (resolve, plan, object store, scheduling,
  commit), with `fixed_parts` (rescore_on_ray's own timings of that job);
- `job_s` / `rows_per_s`: the measured job on the whole input; `marginal_rows_per_s` = its rows beyond the
  200 over its time beyond the fixed cost; `per_worker_rows_per_s` = that over N;
- `command_s`: the whole `mcqa-prep rescore --engine ray` command on the input (Ray start and stop included).
Baseline, same input, same run: `mcqa-prep rescore --workers N` (the command, wall) on the input and on the
200 rows, giving its own marginal rate per worker. Target: Ray's marginal rate per worker >= 0.8x of it.

load_prepared, on a preparation of the same number of rows (Parquet in, JSONL shards out), each leg in a
fresh process (imports timed apart): `datasets.load_dataset("json")` on the shards into an empty cache dir
(cold) and again (warm: datasets' cache); `load_prepared` into an empty cache (cold: verifies every file and
builds Arrow), again (warm), and with `verify=True`. Targets: warm within 3x of datasets' warm; cold ahead
of datasets' cold.

    python bench/bench_cluster.py --rows 20000        # prints one JSON document
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

SMALL = 200

RAY_CHILD = """
import json, sys, time
sys.path.insert(0, {repo!r})
import ray
from mcqa_prep.policy import GradingPolicy
from mcqa_prep.rescore import ray_local
from mcqa_prep.rescore.ray_engine import rescore_on_ray
t0 = time.perf_counter()
session = ray_local.connect(ray, {n})
t1 = time.perf_counter()
try:
    rescore_on_ray({small!r}, {dst!r} + "-warm", GradingPolicy(), workers={n})
    t2 = time.perf_counter()
    _, small = rescore_on_ray({small!r}, {dst!r} + "-small", GradingPolicy(), workers={n})
    t3 = time.perf_counter()
    report, run = rescore_on_ray({src!r}, {dst!r}, GradingPolicy(), workers={n})
    t4 = time.perf_counter()
finally:
    ray_local.disconnect(ray, session, keep_logs=False)
print(json.dumps({{"ray_start_s": t1 - t0, "first_job_s": t2 - t1, "fixed_s": t3 - t2, "job_s": t4 - t3,
                   "rows": report.rows, "chunks": len(run.shards),
                   "fixed_parts": {{k: round(v, 3) for k, v in small.timings.items()}}}}))
"""


def _cli() -> list[str]:
    return [sys.executable, "-m", "mcqa_prep"]


def _wall(args: list[str]) -> float:
    t0 = time.perf_counter()
    p = subprocess.run([*_cli(), *args], capture_output=True, text=True, check=False)
    if p.returncode not in (0, 1):  # 1: rows that could not be graded (none expected here)
        raise RuntimeError((p.stderr.strip().splitlines() or ["failed"])[-1])
    return time.perf_counter() - t0


def ray_leg(src: Path, small: Path, work: Path, n: int) -> dict[str, Any]:
    code = RAY_CHILD.format(repo=str(REPO), n=n, src=str(src), small=str(small), dst=str(work / f"ray{n}"))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1]}
    r = json.loads(p.stdout.strip().splitlines()[-1])
    rows = r["rows"]
    r["rows_per_s"] = round(rows / r["job_s"])
    beyond = r["job_s"] - r["fixed_s"]
    r["marginal_rows_per_s"] = round((rows - SMALL) / beyond) if beyond > 0 else None
    r["per_worker_rows_per_s"] = round(r["marginal_rows_per_s"] / n) if r["marginal_rows_per_s"] else None
    r["command_s"] = _wall(["rescore", str(src), "--engine", "ray", "--workers", str(n), "-o",
                            str(work / f"cmd{n}"), "-q"])  # fmt: skip
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()}


def workers_leg(src: Path, small: Path, work: Path, n: int, rows: int) -> dict[str, Any]:
    big = _wall(["rescore", str(src), "-o", str(work / f"w{n}.jsonl"), "--workers", str(n), "-q"])
    fixed = _wall(["rescore", str(small), "-o", str(work / f"w{n}s.jsonl"), "--workers", str(n), "-q"])
    marginal = (rows - SMALL) / (big - fixed) if big > fixed else None
    return {"command_s": round(big, 3), "fixed_s": round(fixed, 3), "rows_per_s": round(rows / big),
            "marginal_rows_per_s": round(marginal) if marginal else None,
            "per_worker_rows_per_s": round(marginal / n) if marginal else None}  # fmt: skip


def ray_and_workers(rows: int, work: Path) -> dict[str, Any]:
    from bench_rescore import write_inputs

    work.mkdir(parents=True, exist_ok=True)
    requests, _, _ = write_inputs(work, rows)
    small = work / "small.jsonl"
    with open(requests, "rb") as fh, open(small, "wb") as out:
        out.writelines(line for _, line in zip(range(SMALL), fh, strict=False))
    res: dict[str, Any] = {"rows": rows, "input_mb": round(requests.stat().st_size / 2**20, 1)}
    for n in (1, 2):
        res[f"workers_{n}"] = workers_leg(requests, small, work, n, rows)
        res[f"ray_{n}"] = ray_leg(requests, small, work, n)
        ray, base = res[f"ray_{n}"], res[f"workers_{n}"]
        if ray.get("per_worker_rows_per_s") and base.get("per_worker_rows_per_s"):
            ray["per_worker_vs_workers"] = round(
                ray["per_worker_rows_per_s"] / base["per_worker_rows_per_s"], 2
            )
    return res


# ---- load_prepared ------------------------------------------------------------------------------------

LOAD_CHILD = """
import json, sys, time, glob
t0 = time.perf_counter()
sys.path.insert(0, {repo!r})
import datasets
datasets.disable_progress_bars()
import logging
logging.getLogger("datasets").setLevel(logging.ERROR)
t1 = time.perf_counter()
out = {{"import_s": t1 - t0}}
shards = sorted(glob.glob({prep!r} + "/train-*.jsonl"))
if {which!r} == "datasets":
    for k in ("cold_s", "warm_s"):
        t = time.perf_counter()
        ds = datasets.load_dataset("json", data_files={{"train": shards}}, cache_dir={cache!r}, split="train")
        out[k] = time.perf_counter() - t
    out["rows"] = len(ds)
else:
    from mcqa_prep.prepared.load import load_prepared
    from mcqa_prep.prepared.verify import verify_prepared
    for k, kw in (("cold_s", {{}}), ("warm_s", {{}}), ("warm2_s", {{}}), ("verify_true_s", {{"verify": True}})):
        t = time.perf_counter()
        ds = load_prepared({prep!r}, split="train", cache_dir={cache!r}, **kw)
        out[k] = time.perf_counter() - t
    t = time.perf_counter()
    verify_prepared({prep!r})
    out["verify_prepared_s"] = time.perf_counter() - t
    out["rows"] = len(ds)
print(json.dumps(out))
"""


def load_leg(prep: Path, which: str, cache: Path) -> dict[str, Any]:
    code = LOAD_CHILD.format(repo=str(REPO), prep=str(prep), which=which, cache=str(cache))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1]}
    return {
        k: round(v, 4) if isinstance(v, float) else v
        for k, v in json.loads(p.stdout.splitlines()[-1]).items()
    }


def load_prepared_legs(rows: int, work: Path) -> dict[str, Any]:
    from bench_prepare import make_parquet

    work.mkdir(parents=True, exist_ok=True)
    src = make_parquet(work / "src.parquet", rows)
    prep = work / "prepared"
    subprocess.run([*_cli(), "prepare", str(src), "-o", str(prep), "-q"], check=True, capture_output=True)
    size = sum(p.stat().st_size for p in prep.glob("train-*.jsonl"))
    res: dict[str, Any] = {"rows": rows, "shards_mb": round(size / 2**20, 1)}
    res["datasets"] = load_leg(prep, "datasets", work / "ds-cache")
    res["load_prepared"] = load_leg(prep, "ours", work / "lp-cache")
    ds, lp = res["datasets"], res["load_prepared"]
    if "warm_s" in ds and "warm_s" in lp:
        res["warm_vs_datasets_warm"] = round(min(lp["warm_s"], lp["warm2_s"]) / ds["warm_s"], 2)
        res["cold_vs_datasets_cold"] = round(lp["cold_s"] / ds["cold_s"], 2)
    return res


def run(rows: int = 50_000, *, ray: bool = True, load: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {}
    work = Path(tempfile.mkdtemp(prefix="mcqa-bench-cluster-"))
    try:
        if ray:
            out["ray"] = ray_and_workers(rows, work / "ray")
        if load:
            out["load_prepared"] = load_prepared_legs(rows, work / "load")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--no-load", action="store_true")
    args = ap.parse_args()
    print(json.dumps(run(args.rows, ray=not args.no_ray, load=not args.no_load), indent=2))


if __name__ == "__main__":
    main()
