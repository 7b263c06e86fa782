"""Past one process: `rescore --engine ray` (as a command, start-up included, and its fixed cost shown apart) against
`rescore --workers` in the same rounds, and `load_prepared` against `datasets`' own JSON loader and cache.

Ray, on bench_rescore's verify requests (the same generator), each leg its own process measured by
bench/harness.py (wall, CPU, process-tree peak RSS), every leg once per round, the order rotated each round:

- w1, w2: `mcqa-prep rescore REQUESTS -o OUT --workers 1|2 -q`; w1_small, w2_small: the same on the first 200
  requests (the command's fixed cost: interpreter start-up and imports);
- ray1, ray2: `mcqa-prep rescore REQUESTS -o DIR --engine ray --workers 1|2 -q`, as a user runs it (a local Ray
  instance started, the job, Ray stopped: all of it in the figure); ray1_small, ray2_small: the same on 200
  requests (Ray's fixed cost per command);
- session1, session2: one process that starts a local instance of 1|2 CPUs (`engine.ray_session.connect`, as
  the command does) and calls `rescore_shards` on Ray three times: a 200-row job (the first: Ray starts its worker
  processes, which import the package), a second 200-row job (a job's fixed cost on a running instance, what
  a job on an existing cluster pays, with `rescore_on_ray`'s own split of it), then the whole input. From it:
  Ray's start, the first job, the fixed cost of a job, and the per-worker rate beyond that fixed cost, against
  `--workers N`'s own per-worker rate beyond its fixed cost (w - w_small) in the same round (target >= 0.8x).

Every command on the engine (validate, prepare, rescore, passrates, audit, report, convert) on a Ray cluster
kept up for the module (`ray start --head --num-cpus 2`, started once and stopped by process id at the end: the fixed cost a
user who keeps a cluster up pays once), each leg interleaved with its local twin: `CMD ... --workers 2` and
`CMD ... --address HEAD --workers 2`, each also on 200 rows in one chunk per worker (the command's fixed cost,
every worker's start included: a worker starts, and imports the package, once per job whatever its rows; on
one chunk only one would start, and the second's start would count as per-row work). From them: the fixed
cost of a command on a running cluster (target <= 3 s) and Ray's per-worker rate beyond its fixed cost against
a local worker's beyond its own (target >= 0.9x). The cluster's own processes (GCS, raylet, its workers) are not
in a command's process tree: its RSS is the driver's.

load_prepared, on a preparation (`mcqa-prep prepare`, Parquet in, JSONL shards out) of the same number of rows:
per round, two processes with fresh cache directories, interleaved: `datasets.load_dataset("json")` on the shards
(cold: an empty cache; warm: again, from its cache), and `load_prepared` (cold: verifies every file and builds
Arrow; warm: twice, the faster kept; `verify=True`; `verify_prepared` alone). Each process's imports are timed
apart (`import_s`). Targets: warm within 3x of datasets' warm; cold no slower than datasets' cold.

    python bench/bench_cluster.py [--scale 0.05] [--rounds 1] [--no-ray] [--no-engine] [--no-load]   # one JSON document
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import harness as H  # noqa: E402

ROWS = 50_000  # at scale 1
SMALL = 200
WORKERS = (1, 2)
TARGET_PER_WORKER = 0.8
TARGET_ENGINE_PER_WORKER = 0.9
TARGET_ADDRESS_FIXED_S = 3.0
ENGINE_WORKERS = 2
TARGET_WARM = 3.0
TARGET_COLD = 1.0

SESSION = """
import json, sys, time
sys.path.insert(0, {repo!r})
import ray
from mcqa_prep.engine import ray_session
from mcqa_prep.rescore.shards import rescore_shards
from mcqa_prep.rescore.run import RescoreRequest
from mcqa_prep.runs import RunRequest
def job(src, dst):
    return rescore_shards(RescoreRequest(RunRequest((src,), dst, {n}, engine="ray")))
t0 = time.perf_counter()
session = ray_session.connect(ray, {n})
t1 = time.perf_counter()
try:
    job({small!r}, {dst!r} + "-first")
    t2 = time.perf_counter()
    _, small = job({small!r}, {dst!r} + "-small")
    t3 = time.perf_counter()
    report, run = job({src!r}, {dst!r})
    t4 = time.perf_counter()
finally:
    ray_session.disconnect(ray, session, keep_logs=False)
print(json.dumps({{"ray_start_s": t1 - t0, "first_job_s": t2 - t1, "fixed_s": t3 - t2, "job_s": t4 - t3,
                   "rows": report.rows, "chunks": len(run.shards), "fixed_parts": small.timings}}))
"""

LOAD = """
import glob, json, logging, sys, time
t0 = time.perf_counter()
sys.path.insert(0, {repo!r})
import datasets
datasets.disable_progress_bars()
logging.getLogger("datasets").setLevel(logging.ERROR)
out = {{"import_s": time.perf_counter() - t0}}
shards = sorted(glob.glob({prep!r} + "/train-*.jsonl"))
if {which!r} == "datasets":
    for k in ("cold_s", "warm_s"):
        t = time.perf_counter()
        ds = datasets.load_dataset("json", data_files={{"train": shards}}, cache_dir={cache!r}, split="train")
        out[k] = time.perf_counter() - t
else:
    t = time.perf_counter()
    from mcqa_prep.prepared.load import load_prepared
    from mcqa_prep.prepared.verify import verify_prepared
    out["import_s"] += time.perf_counter() - t
    for k, kw in (("cold_s", {{}}), ("warm_s", {{}}), ("warm2_s", {{}}), ("verify_true_s", {{"verify": True}})):
        t = time.perf_counter()
        ds = load_prepared({prep!r}, split="train", cache_dir={cache!r}, **kw)
        out[k] = time.perf_counter() - t
    out["warm_s"] = min(out.pop("warm2_s"), out["warm_s"])
    t = time.perf_counter()
    verify_prepared({prep!r})
    out["verify_prepared_s"] = time.perf_counter() - t
out["rows"] = len(ds)
print(json.dumps(out))
"""


def has_ray() -> bool:
    return importlib.util.find_spec("ray") is not None


def _fresh(path: Path) -> Path:
    if path.is_dir():
        shutil.rmtree(path)
    path.unlink(missing_ok=True)
    return path


def _child(code: str, out: Path) -> tuple[H.Run, dict[str, Any]]:
    """Run `code` as its own process (measured); its last stdout line is a JSON object."""
    run = H.measure([sys.executable, "-c", code], stdout=_fresh(out))
    return run, json.loads(out.read_text().strip().splitlines()[-1])


# ---- Ray against --workers --------------------------------------------------------------------------------


def ray_legs(work: Path, requests: Path, small: Path) -> dict[str, Callable[[], Any]]:
    """name -> a function that runs and measures the leg once."""
    out = work / "out"
    out.mkdir(exist_ok=True)
    cli = H.cli()

    def rescore(name: str, src: Path, *extra: str) -> Callable[[], H.Run]:
        return lambda: H.measure([*cli, "rescore", str(src), "-o", str(_fresh(out / name)), "-q", *extra])

    def session(n: int) -> Callable[[], tuple[H.Run, dict[str, Any]]]:
        dst = out / f"session{n}"
        code = SESSION.format(repo=str(REPO), n=n, src=str(requests), small=str(small), dst=str(dst))

        def leg() -> tuple[H.Run, dict[str, Any]]:
            for suffix in ("", "-first", "-small"):
                _fresh(Path(f"{dst}{suffix}"))
            return _child(code, work / f"session{n}.json")

        return leg

    legs: dict[str, Callable[[], Any]] = {}
    for n in WORKERS:
        legs[f"w{n}"] = rescore(f"w{n}", requests, "--workers", str(n))
        legs[f"w{n}_small"] = rescore(f"w{n}_small", small, "--workers", str(n))
        legs[f"ray{n}"] = rescore(f"ray{n}", requests, "--engine", "ray", "--workers", str(n))
        legs[f"ray{n}_small"] = rescore(f"ray{n}_small", small, "--engine", "ray", "--workers", str(n))
        legs[f"session{n}"] = session(n)
    return legs


def _what(name: str) -> str:
    n = name.removesuffix("_small")[-1]
    if name.startswith("w"):
        base = f"mcqa-prep rescore --workers {n}"
    else:
        base = f"mcqa-prep rescore --engine ray --workers {n} (a local Ray instance: its start and stop included)"
    return base + (" of the first 200 rows (the command's fixed cost)" if name.endswith("_small") else "")


def _per_worker(rows: int, big: list[float], small: list[float], n: int) -> list[float] | None:
    beyond = [a - b for a, b in zip(big, small, strict=True)]
    return [(rows - SMALL) / x / n for x in beyond] if all(x > 0 for x in beyond) else None


def ray_figures(runs: dict[str, list[Any]], rows: int) -> dict[str, dict[str, Any]]:
    fig: dict[str, dict[str, Any]] = {}
    wall = {k: [r.wall_s for r in v] for k, v in runs.items() if not k.startswith("session")}
    for name in wall:
        fig.update(H.runs_figures(name, _what(name), runs[name], SMALL if name.endswith("_small") else rows))
    for n in WORKERS:
        fig[f"ray{n}_vs_w{n}.x"] = H.ratio_figure(
            f"rescore --engine ray --workers {n} wall time / --workers {n}'s (whole commands)",
            wall[f"ray{n}"], wall[f"w{n}"],
        )  # fmt: skip
        w_rate = _per_worker(rows, wall[f"w{n}"], wall[f"w{n}_small"], n)
        if w_rate:
            fig[f"w{n}.beyond_fixed.per_worker_rows_per_s"] = H.figure(
                f"rescore --workers {n}: rows per wall second per worker beyond its fixed cost (w - w_small)",
                "rows/s", w_rate, digits=0,
            )  # fmt: skip
        s = [d for _run, d in runs[f"session{n}"]]
        what = f"Ray session of {n} CPU(s)"
        for key, label in (("ray_start_s", "starting the local instance (Ray's own processes)"),
                           ("first_job_s", "the first 200-row job (Ray starts its workers; they import the package)"),
                           ("fixed_s", "a later 200-row job, whole: a job's fixed cost on a running instance"),
                           ("job_s", f"the job on all {rows:,} rows")):  # fmt: skip
            fig[f"session{n}.{key}"] = H.figure(f"{what}: {label}", "s", [d[key] for d in s])
        for part in ("plan_s", "job_s", "end_s"):
            if all(part in d["fixed_parts"] for d in s):
                fig[f"session{n}.fixed.{part}"] = H.figure(
                    f"{what}: the fixed cost's {part[:-2]} step (rescore_on_ray's own timing)", "s",
                    [d["fixed_parts"][part] for d in s], digits=4,
                )  # fmt: skip
        beyond = [d["job_s"] - d["fixed_s"] for d in s]
        if all(x > 0 for x in beyond):
            ray_rate = [(rows - SMALL) / x / n for x in beyond]
            fig[f"session{n}.beyond_fixed.per_worker_rows_per_s"] = H.figure(
                f"{what}: rows per wall second per worker beyond a job's fixed cost",
                "rows/s",
                ray_rate,
                digits=0,
            )
            if w_rate:
                fig[f"session{n}_vs_w{n}.per_worker_x"] = H.ratio_figure(
                    f"Ray ({n} worker(s)) per-worker rate beyond its fixed cost / rescore --workers {n}'s",
                    ray_rate, w_rate, target={"op": ">=", "value": TARGET_PER_WORKER},
                )  # fmt: skip
        fig.update(
            H.runs_figures(f"session{n}", f"{what}: the whole process", [r for r, _d in runs[f"session{n}"]])
        )
    return fig


def _concat(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(directory.glob("rescored-*.jsonl")))


def ray_part(work: Path, rows: int, rounds: int, res: dict[str, Any]) -> None:
    from bench_rescore import describe, head, write_inputs

    requests, _rollouts, dataset = write_inputs(work, rows)
    small = head(requests, work / "small.jsonl", SMALL)
    res["inputs"].update({f"ray.{k}": v for k, v in describe(requests, dataset, rows).items()})
    runs = H.interleave(ray_legs(work, requests, small), rounds)
    res["figures"].update(ray_figures(runs, rows))
    w1 = (work / "out" / "w1").read_bytes()
    for n in WORKERS:
        res["checks"][f"ray{n}_output_equals_w1"] = _concat(work / "out" / f"ray{n}") == w1
        res["checks"][f"session{n}_output_equals_w1"] = _concat(work / "out" / f"session{n}") == w1


# ---- every command on a kept cluster -------------------------------------------------------------------------


def start_cluster(temp: Path, cpus: int) -> tuple[int, str, dict[str, str]]:
    """`ray start --head` in a session of its own (its daemons keep its process group, by which they are
    stopped), with a home of its own (no token file: the cluster and its drivers without authentication).
    (process group, address, the environment of its drivers)."""
    import re
    import subprocess

    home = temp / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["HOME"] = str(home)
    ray_bin = str(Path(sys.executable).with_name("ray"))
    p = subprocess.Popen(
        [ray_bin, "start", "--head", "--port=0", f"--num-cpus={cpus}", f"--temp-dir={temp / 'ray'}",
         "--include-dashboard=false", "--disable-usage-stats"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    out, _ = p.communicate(timeout=300)
    found = re.search(r"--address='([^']+)'", out)
    if p.returncode != 0 or found is None:
        stop_cluster(p.pid)
        raise RuntimeError(f"ray start failed: {out[-2000:]}")
    return p.pid, found.group(1), env


def stop_cluster(pgid: int) -> None:
    """Every process of the cluster: its process group and their descendants, by process id (SIGKILL)."""
    import signal
    import time

    for _ in range(3):
        stats = {}
        for e in os.listdir("/proc"):
            if e.isdigit():
                try:
                    with open(f"/proc/{e}/stat") as fh:
                        f = fh.read().rsplit(")", 1)[1].split()
                    stats[int(e)] = (int(f[1]), int(f[2]))
                except OSError:
                    pass
        pids = {p for p, (_, g) in stats.items() if g == pgid}
        grown = True
        while grown:
            more = {p for p, (pp, _) in stats.items() if pp in pids} - pids
            pids |= more
            grown = bool(more)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.5)


def engine_inputs(work: Path, rows: int) -> dict[str, Path]:
    """A dataset (Parquet, bench_prepare's rows), verify requests (bench_rescore's) and a source for convert
    (bench_convert's MMLU-Pro layout), and their first SMALL rows."""
    import pyarrow.parquet as pq
    from bench_convert import make_parquet as make_source
    from bench_prepare import make_parquet
    from bench_rescore import head, write_inputs

    data = make_parquet(work / "train.parquet", rows)
    # the small inputs come in one chunk per worker (here a row group each; the requests by their chunk size,
    # engine_legs): every worker starts, and imports the package, in the fixed cost, as on the whole input
    groups = max(1, SMALL // ENGINE_WORKERS)
    pq.write_table(pq.read_table(data).slice(0, SMALL), work / "train_small.parquet", row_group_size=groups)
    source = make_source(work / "mmlu_pro.parquet", rows)  # (convert's input: the MMLU-Pro layout)
    pq.write_table(
        pq.read_table(source).slice(0, SMALL), work / "mmlu_pro_small.parquet", row_group_size=groups
    )
    (work / "rescore").mkdir(exist_ok=True)  # (write_inputs writes a train.parquet of its own)
    requests, _rollouts, _ds = write_inputs(work / "rescore", rows)
    return {"data": data, "data_small": work / "train_small.parquet", "requests": requests,
            "requests_small": head(requests, work / "requests_small.jsonl", SMALL), "source": source,
            "source_small": work / "mmlu_pro_small.parquet"}  # fmt: skip


def _engine_argv(command: str, src: Path, out: Path, ray: bool) -> list[str]:
    out_arg = {"prepare": ["-o", str(out), "--on-invalid", "reject", "--repair-regexes"],
               "rescore": ["-o", str(out)], "passrates": ["-o", str(out), "--rescore", "--model", "m",
                                                         "--on-invalid", "reject"],
               "report": ["-o", str(out) + ".html"],
               "convert": ["-o", str(out) + ".jsonl", "--shuffle", "--seed", "0", *CONVERT_ARGS]}.get(command, [])  # fmt: skip
    return [command, str(src), *out_arg, "-q"]


ENGINE_COMMANDS = {"validate": "data", "prepare": "data", "audit": "data", "rescore": "requests",
                   "passrates": "requests", "report": "data", "convert": "source"}  # fmt: skip
CONVERT_ARGS = [
    "--preset",
    "mmlu_pro",
    "--template",
    "boxed:0.7",
    "--template",
    "final_choice:0.3",
]  # bench_convert's


def engine_legs(work: Path, inputs: dict[str, Path], address: str, env: dict[str, str]) -> dict[str, Any]:
    cli = H.cli()
    out = work / "out"
    out.mkdir(exist_ok=True)

    def leg(command: str, small: bool, ray: bool) -> Callable[[], H.Run]:
        src = inputs[ENGINE_COMMANDS[command] + ("_small" if small else "")]
        name = f"{command}.{'ray' if ray else 'w'}{ENGINE_WORKERS}{'_small' if small else ''}"
        how = ["--address", address] if ray else []

        leg_env = env
        if small and src.suffix == ".jsonl":  # one chunk per worker (the engine's test hook for chunk sizes)
            from mcqa_prep.parallel import CHUNK_BYTES_ENV

            leg_env = {**env, CHUNK_BYTES_ENV: str(-(-src.stat().st_size // ENGINE_WORKERS))}

        def run_once() -> H.Run:
            dst = _fresh(out / name)
            argv = [*cli, *_engine_argv(command, src, dst, ray), *how, "--workers", str(ENGINE_WORKERS)]
            return H.measure(argv, env=leg_env, check=False)

        return run_once

    return {
        f"{c}.{'ray' if ray else 'w'}{ENGINE_WORKERS}{'_small' if small else ''}": leg(c, small, ray)
        for c in ENGINE_COMMANDS
        for ray in (False, True)
        for small in (False, True)
    }


def engine_figures(runs: dict[str, list[H.Run]], rows: int) -> dict[str, dict[str, Any]]:
    fig: dict[str, dict[str, Any]] = {}
    n = ENGINE_WORKERS
    for c in ENGINE_COMMANDS:
        for ray in (False, True):
            for small in (False, True):
                name = f"{c}.{'ray' if ray else 'w'}{n}{'_small' if small else ''}"
                how = "--address HEAD (a cluster kept up)" if ray else ""
                what = f"mcqa-prep {c} --workers {n} {how}".strip() + (f" on {SMALL} rows" if small else "")
                fig.update(H.runs_figures(f"engine.{name}", what, runs[name], SMALL if small else rows))
        wall = {
            k: [r.wall_s for r in runs[f"{c}.{k}"]]
            for k in (f"w{n}", f"w{n}_small", f"ray{n}", f"ray{n}_small")
        }
        fig[f"engine.{c}.address_fixed_s"] = H.figure(
            f"mcqa-prep {c} --address HEAD on {SMALL} rows, a cluster kept up: the fixed cost of a command",
            "s", wall[f"ray{n}_small"], target={"op": "<=", "value": TARGET_ADDRESS_FIXED_S},
        )  # fmt: skip
        ray_rate = _per_worker(rows, wall[f"ray{n}"], wall[f"ray{n}_small"], n)
        w_rate = _per_worker(rows, wall[f"w{n}"], wall[f"w{n}_small"], n)
        if ray_rate and w_rate:
            fig[f"engine.{c}.ray_vs_local.per_worker_x"] = H.ratio_figure(
                f"{c}: a Ray worker's rate beyond the fixed cost / a local worker's ({n} each)", ray_rate, w_rate,
                target={"op": ">=", "value": TARGET_ENGINE_PER_WORKER},
            )  # fmt: skip
    return fig


def engine_part(work: Path, rows: int, rounds: int, res: dict[str, Any]) -> None:
    inputs = engine_inputs(work, rows)
    res["inputs"].update({"engine.rows": rows, "engine.workers": ENGINE_WORKERS})
    temp = Path(tempfile.mkdtemp(prefix="mcqa-bc-", dir="/tmp"))  # short: Ray's socket paths
    pgid = None
    try:
        pgid, address, env = start_cluster(temp, ENGINE_WORKERS)
        runs = H.interleave(engine_legs(work, inputs, address, env), rounds)
    finally:
        if pgid is not None:
            stop_cluster(pgid)
        shutil.rmtree(temp, ignore_errors=True)
    failed = {k: v[-1].stderr_tail for k, v in runs.items() if any(r.returncode not in (0, 1) for r in v)}
    if failed:
        raise RuntimeError(f"engine legs failed: {failed}")
    res["figures"].update(engine_figures(runs, rows))
    out = work / "out"
    for c in ENGINE_COMMANDS:
        local, ray = out / f"{c}.w{ENGINE_WORKERS}", out / f"{c}.ray{ENGINE_WORKERS}"
        if c == "rescore":
            res["checks"][f"engine.{c}.ray_output_equals_local"] = _concat(ray) == local.read_bytes()
        elif c in ("report", "convert"):
            ext = ".html" if c == "report" else ".jsonl"
            same = Path(f"{ray}{ext}").read_bytes() == Path(f"{local}{ext}").read_bytes()
            res["checks"][f"engine.{c}.ray_output_equals_local"] = same
        elif local.is_file():
            res["checks"][f"engine.{c}.ray_output_equals_local"] = _table(ray) == _table(local)
        elif local.is_dir():
            res["checks"][f"engine.{c}.ray_output_equals_local"] = _shards(ray) == _shards(local)


def _table(path: Path) -> bytes:
    header, *rest = path.read_bytes().split(b"\n", 1)
    doc = json.loads(header)
    doc.pop("created_at", None)
    return json.dumps(doc, sort_keys=True).encode() + b"".join(rest)


def _shards(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(path.iterdir()) if p.name != "manifest.json")


# ---- load_prepared against datasets -------------------------------------------------------------------------


def load_part(work: Path, rows: int, rounds: int, res: dict[str, Any]) -> None:
    from bench_prepare import make_parquet

    src = make_parquet(work / "src.parquet", rows)
    prep = work / "prepared"
    # the flagship command (README): the bench's templates carry the dataset's regexes, which the audit repairs
    H.measure(
        [*H.cli(), "prepare", str(src), "-o", str(prep), "--repair-regexes", "--on-invalid", "reject", "-q"]
    )
    res["inputs"]["load.rows"] = rows
    res["inputs"]["load.shards_mb"] = round(
        sum(p.stat().st_size for p in prep.glob("train-*.jsonl")) / 2**20, 1
    )
    calls = {"datasets": 0, "ours": 0}

    def leg(which: str) -> Callable[[], tuple[H.Run, dict[str, Any]]]:
        def run_once() -> tuple[H.Run, dict[str, Any]]:
            calls[which] += 1
            cache = _fresh(work / f"cache-{which}-{calls[which]}")
            code = LOAD.format(repo=str(REPO), prep=str(prep), which=which, cache=str(cache))
            try:
                return _child(code, work / f"load-{which}.json")
            finally:
                shutil.rmtree(cache, ignore_errors=True)

        return run_once

    runs = H.interleave({"datasets": leg("datasets"), "ours": leg("ours")}, rounds)
    fig = res["figures"]
    d = {k: [x for _r, x in v] for k, v in runs.items()}
    labels = {"datasets": 'datasets.load_dataset("json") on the shards', "ours": "load_prepared"}
    for which, samples in d.items():
        keys = ["import_s", "cold_s", "warm_s"] + (
            ["verify_true_s", "verify_prepared_s"] if which == "ours" else []
        )
        for key in keys:
            fig[f"load.{which}.{key}"] = H.figure(f"{labels[which]}: {key[:-2].replace('_', ' ')} seconds", "s",
                                                  [x[key] for x in samples], digits=4)  # fmt: skip
        fig.update(
            H.runs_figures(
                f"load.{which}", f"{labels[which]}: the whole process", [r for r, _x in runs[which]]
            )
        )
        res["checks"][f"load.{which}.rows"] = samples[-1]["rows"]
    ours, ds = d["ours"], d["datasets"]
    fig["load.warm_vs_datasets.x"] = H.ratio_figure(
        "load_prepared warm / datasets warm (its own cache)", [x["warm_s"] for x in ours],
        [x["warm_s"] for x in ds], target={"op": "<=", "value": TARGET_WARM},
    )  # fmt: skip
    fig["load.cold_vs_datasets.x"] = H.ratio_figure(
        "load_prepared cold (verifies every file, builds Arrow) / datasets cold (empty cache)",
        [x["cold_s"] for x in ours], [x["cold_s"] for x in ds], target={"op": "<=", "value": TARGET_COLD},
    )  # fmt: skip


def run(scale: float = 1.0, *, rounds: int = 3, full: bool = False, ray: bool = True,
        load: bool = True, engine: bool = True) -> dict[str, Any]:  # fmt: skip
    """The result document (docs/design/performance.md, "Result format"). `full` changes nothing here."""
    rows = max(1000, int(ROWS * scale))
    ray = ray and has_ray()
    res: dict[str, Any] = {
        "bench": "cluster",
        "title": "rescore --engine ray (fixed cost apart, per-worker rate) against --workers; load_prepared "
        "against datasets",
        "figures": {},
        "checks": {},
        "inputs": {"rows": rows, "small_rows": SMALL},
        "peers": {"ray": _version("ray") if ray else None, "datasets": _version("datasets")},
    }
    work = Path(tempfile.mkdtemp(prefix="mcqa-bench-cluster-"))
    try:
        if ray:
            (work / "ray").mkdir()
            ray_part(work / "ray", rows, rounds, res)
        if engine and has_ray():
            (work / "engine").mkdir()
            engine_part(work / "engine", rows, rounds, res)
        if load:
            (work / "load").mkdir()
            load_part(work / "load", rows, rounds, res)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return res


def _version(name: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=0.2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--no-load", action="store_true")
    ap.add_argument("--no-engine", action="store_true")
    args = ap.parse_args()
    res = run(
        args.scale, rounds=args.rounds, ray=not args.no_ray, load=not args.no_load, engine=not args.no_engine
    )
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
