"""The mcqa server inside NeMo Gym 0.7.0, as `gym env start` runs it: the stock server and mcqa-prep's component
under the same HTTP load, beside `mcqa-prep serve` alone and bench_serve's stripped NeMo Gym app.

Four servers, one worker each, on 127.0.0.1, in the same run:

- `gym_stock`: NeMo Gym's built-in mcqa server started by `gym env start` from NeMo Gym installed with its
  dependencies (the venv `make gym-venv` builds, Python 3.13): its whole server stack (FastAPI, the session,
  rollout-context, exception and cancellation middlewares, the tracing and judge-failsafe wrappers);
- `gym_component`: `mcqa-prep gym-component`'s server started by the same `gym env start` (its root on
  NEMO_GYM_EXTRA_ROOTS): mcqa-prep's own server on the port NeMo Gym assigned;
- `serve`: `mcqa-prep serve` (this venv);
- `stripped`: bench/nemo_gym_serve.py, NeMo Gym's app with its middleware stack stubbed (bench_serve's
  baseline: faster than the real server).

The config started is the built-in config's resources-server block alone (no agent, no model: nothing else is
measured). Every server gets bench_serve's request bodies (stamped with the default contract); for 16 and 64
keep-alive clients, `rounds` times, the servers in turn (the order rotating each round): requests per second,
p50/p99 latency and requests per CPU second of the server's process tree. The rewards of the component and of
the stock server are compared on every body first.

    python bench/bench_gym.py [--scale 0.2] [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import os
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
sys.path.insert(0, str(REPO / "tests"))

import bench_serve as S  # noqa: E402
import harness as H  # noqa: E402
from gym_launch import GymEnv, Replay  # noqa: E402

CLIENTS = (16, 64)
TARGET_PER_CORE = 5.0  # the component inside NeMo Gym, x the stock server as NeMo Gym runs it, per CPU second
TARGET_P99_MS = 50.0  # the component at 16 clients
LABEL = {
    "gym_component": "mcqa-prep component, gym env start",
    "gym_stock": "NeMo Gym 0.7.0 mcqa server, gym env start",
    "serve": "mcqa-prep serve",
    "stripped": "NeMo Gym 0.7.0 mcqa app, middlewares stubbed",
}
SERVER_CONFIG = {
    "mcqa": {
        "resources_servers": {
            "mcqa": {"entrypoint": "app.py", "grading_mode": None, "domain": "knowledge", "verified": False}
        }
    }
}


def gym_venv() -> Path:
    venv = Path(os.environ.get("MCQA_PREP_GYM_VENV") or REPO / ".venv-gym")
    if not (venv / "bin" / "gym").exists():
        raise RuntimeError(f"NeMo Gym is not installed in {venv}: run `make gym-venv`")
    return venv


class _Pid:
    """What bench_serve.measure reads of a server: its pid."""

    def __init__(self, pid: int) -> None:
        self.pid = pid


def _server_pid(env: GymEnv) -> int:
    inst = next(i for i in env.instances() if i["config_path"] == "mcqa")
    return int(inst["pid"])


def _start_gym(venv: Path, work: Path, name: str, policy: str, root: Path | None) -> tuple[GymEnv, str, int]:
    config = work / "mcqa-only.yaml"
    config.write_text(json.dumps(SERVER_CONFIG))
    env = GymEnv(venv, work, name).start([str(config)], policy, extra_root=root, observability=False)
    return env, env.url("mcqa"), _server_pid(env)


def run(scale: float = 1.0, *, rounds: int = 3, full: bool = False, clients: tuple[int, ...] = CLIENTS,
        requests: int = S.REQUESTS) -> dict[str, Any]:  # fmt: skip
    venv = gym_venv()
    seconds = max(1.0, S.SECONDS * min(1.0, scale))
    work = Path(tempfile.mkdtemp(prefix="bench-gym-"))
    bodies = S.request_bodies(requests)
    path = work / "bodies.jsonl"
    path.write_bytes(b"\n".join(bodies) + b"\n")
    subprocess.run(
        [str(venv / "bin" / "mcqa-prep"), "gym-component", str(work / "plugins")],
        check=True,
        capture_output=True,
    )
    replay = Replay(venv / "bin" / "python", {}, work)  # NeMo Gym waits for a reachable policy endpoint
    envs: list[GymEnv] = []
    servers: dict[str, tuple[Any, str]] = {}
    procs: list[Any] = []
    start: dict[str, float] = {}
    checks: dict[str, Any] = {}
    samples: dict[str, list[dict[str, Any]]] = {}
    try:
        for name, root in (("gym_stock", None), ("gym_component", work / "plugins")):
            (work / name).mkdir()
            env, url, pid = _start_gym(venv, work / name, name, replay.url, root)
            envs.append(env)
            servers[name] = (_Pid(pid), url)
            start[name] = env.start_seconds
        t0 = time.perf_counter()
        ours, url = S.start_ours()
        procs.append(ours)
        servers["serve"], start["serve"] = (ours, url), time.perf_counter() - t0
        t0 = time.perf_counter()
        stripped, url = S.start_nemo_gym(work)
        procs.append(stripped)
        servers["stripped"], start["stripped"] = (stripped, url), time.perf_counter() - t0
        a, b = S.post_all(servers["gym_component"][1], bodies), S.post_all(servers["gym_stock"][1], bodies)
        checks["component_same_reward_as_stock"] = f"{len(bodies) - len(S.disagreements(a, b))}/{len(bodies)}"
        names = list(servers)
        for c in clients:
            for r in range(max(1, rounds)):
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    proc, url = servers[name]
                    samples.setdefault(f"{c}.{name}", []).append(S.measure(proc, url, path, c, seconds, work))
    finally:
        for p in procs:
            S.stop(p)
        for env in envs:
            env.stop()
        replay.stop()
        shutil.rmtree(work, ignore_errors=True)
    return {
        "bench": "gym",
        "title": "the mcqa server inside NeMo Gym 0.7.0 (gym env start): stock and mcqa-prep's component",
        "figures": figures(samples, start, clients),
        "checks": checks,
        "inputs": {
            "requests": requests,
            "seconds_per_point": seconds,
            "mean_body_bytes": round(sum(map(len, bodies)) / len(bodies)),
            "loader": "wrk" if shutil.which("wrk") else "asyncio",
            "nemo_gym_python": subprocess.run(
                [str(venv / "bin/python"), "-c", "import sys; print(sys.version.split()[0])"],
                capture_output=True,
                text=True,
            ).stdout.strip(),
        },  # fmt: skip
    }


def figures(
    samples: dict[str, list[dict[str, Any]]], start: dict[str, float], clients: tuple[int, ...]
) -> dict:
    fig: dict[str, dict[str, Any]] = {}
    for name, s in start.items():
        fig[f"{name}.startup_s"] = H.figure(f"{LABEL[name]}: start to ready", "s", [s])
    for c in clients:
        for name, label in LABEL.items():
            xs = samples.get(f"{c}.{name}")
            if not xs:
                continue
            what = f"{label}, {c} clients"
            fig[f"c{c}.{name}.rps"] = H.figure(
                f"{what}: requests per second", "req/s", [x["rps"] for x in xs], 0
            )
            fig[f"c{c}.{name}.per_cpu_s"] = H.figure(
                f"{what}: requests per CPU second of the server", "req/CPU-s", [x["per_cpu_s"] for x in xs], 0
            )
            for q in ("p50_ms", "p99_ms"):
                fig[f"c{c}.{name}.{q}"] = H.figure(f"{what}: {q[:3]} latency", "ms", [x[q] for x in xs], 1)
        base = samples.get(f"{c}.gym_stock")
        for name in ("gym_component", "serve", "stripped"):
            xs = samples.get(f"{c}.{name}")
            if xs and base:
                fig[f"c{c}.{name}.per_cpu_x"] = H.ratio_figure(
                    f"{c} clients: requests per CPU second, {LABEL[name]} / the stock server in gym env start",
                    [x["per_cpu_s"] for x in xs], [x["per_cpu_s"] for x in base],
                    target={"op": ">=", "value": TARGET_PER_CORE} if name == "gym_component" else None,
                )  # fmt: skip
    if "c16.gym_component.p99_ms" in fig:
        fig["c16.gym_component.p99_ms"]["target"] = {"op": "<=", "value": TARGET_P99_MS}
    return fig


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=0.2, help=f"seconds per point = scale x {S.SECONDS:g}")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--requests", type=int, default=S.REQUESTS)
    args = ap.parse_args()
    print(json.dumps(run(args.scale, rounds=args.rounds, requests=args.requests), indent=1))


if __name__ == "__main__":
    main()
