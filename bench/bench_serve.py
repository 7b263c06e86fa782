"""`mcqa-prep serve` under HTTP load, next to NeMo Gym 0.7.0's own mcqa app served the same way, in the same run.

Both servers run as child processes on 127.0.0.1, one worker each, on uvicorn with httptools (and uvloop where
installed); NeMo Gym's app is bench/nemo_gym_serve.py (its own verify, request and response models on FastAPI;
its middleware stack stubbed, which makes it faster than the real server: a conservative baseline). Both get
the same realistic verify requests: bench_rescore's rows (10 options, 30% custom templates with an
output_regex) stamped with the served contract, each with a Responses API `response` of ~2 KB (~1,500
characters of reasoning, half multilingual, then the answer).

For 1, 16 and 64 concurrent clients (keep-alive connections), `rounds` times, each server in turn (the order
alternating each round): requests per
second (wall), p50 and p99 latency, and requests per CPU second of the server process (its user + system time
over the run: the per-core figure, which other load on a shared machine barely moves). The load generator is
wrk (Debian's `wrk`) when installed, else an asyncio client in its own process; its name is in the result.
The rewards both servers give are compared on every request body first (0 disagreements expected).

    python bench/bench_serve.py [--scale 0.2] [--rounds 3] [--clients 1,16,64]

`run()` returns the result document (bench/run.py calls it; bench/render.py turns it into docs/design/serve.md's table).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import bench_rescore  # noqa: E402
import harness as H  # noqa: E402

CLIENTS = (1, 16, 64)
SEED = 20250301
TARGET_PER_CORE = 2.0  # x NeMo Gym's requests per CPU second at 64 clients
TARGET_P99_MS = 50.0  # at 16 clients, one worker

WRK_SCRIPT = """
local bodies = {}
init = function(args)
  for line in io.lines(args[1]) do bodies[#bodies + 1] = line end
  i = math.random(#bodies)
end
request = function()
  i = i % #bodies + 1
  return wrk.format("POST", "/verify", {["Content-Type"] = "application/json"}, bodies[i])
end
"""


def request_bodies(n: int, seed: int = SEED) -> list[bytes]:
    """n verify request bodies: bench_rescore's rows and responses, stamped with the default contract."""
    from mcqa_prep import binding
    from mcqa_prep.policy import GradingPolicy
    from mcqa_prep.prepared.manifest import ROW_SCHEMA

    cid = GradingPolicy().contract_id()
    rng = random.Random(seed)
    out = []
    for i in range(n):
        row = bench_rescore.dataset_row(rng, i)
        stamp = {
            "contract": cid,
            "row_schema": ROW_SCHEMA,
            "grading_mode": row["grading_mode"],
            "source": {"row": i},
            "bound": binding.digests(row),  # as prepare stamps a row
        }
        row["metadata"] = {"mcqa_prep": stamp}
        row["response"] = bench_rescore.response(rng, row, i)
        out.append(json.dumps(row, ensure_ascii=False).encode("utf-8"))
    return out


# ---- the servers ----------------------------------------------------------------------------------------


def _wait_ready(url: str, proc: subprocess.Popen, deadline: float = 60.0) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
        try:
            with urllib.request.urlopen(url + "/reverify_mode", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer in {deadline}s")


def start_ours(workers: int = 1) -> tuple[subprocess.Popen, str]:
    cmd = [
        sys.executable,
        "-m",
        "mcqa_prep",
        "serve",
        "--port",
        "0",
        "--workers",
        str(workers),
        "--format",
        "json",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    assert proc.stdout is not None
    lines = []
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"mcqa-prep serve did not start: {proc.stderr.read().decode()[-2000:]}")
        lines.append(line)
        if line.strip() == b"}":
            break
    url = json.loads(b"".join(lines))["url"]
    _wait_ready(url, proc)
    return proc, url


def start_nemo_gym(work: Path) -> tuple[subprocess.Popen, str]:
    port_file = work / "nemo_gym.port"
    port_file.unlink(missing_ok=True)
    cmd = [sys.executable, str(HERE / "nemo_gym_serve.py"), str(port_file)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t0 = time.monotonic()
    while not port_file.exists() or not port_file.read_text():
        if proc.poll() is not None or time.monotonic() - t0 > 60:
            raise RuntimeError(f"NeMo Gym's app did not start: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.1)
    url = f"http://127.0.0.1:{port_file.read_text()}"
    _wait_ready(url, proc)
    return proc, url


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads) and of its waited-for children."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    ticks = sum(int(x) for x in fields[11:15])
    total = ticks / os.sysconf("SC_CLK_TCK")
    for child in _children(pid):
        total += cpu_seconds(child)
    return total


def _children(pid: int) -> list[int]:
    """The direct children of pid (/proc/PID/task/PID/children where the kernel has it, else parent links)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(x) for x in fh.read().split()]
    except OSError:
        return [c for c, (ppid, _sid, _start) in H._proc_table().items() if ppid == pid]


# ---- the load -------------------------------------------------------------------------------------------


_UNIT = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def _ms(text: str) -> float:
    m = re.match(r"([\d.]+)(us|ms|s)", text)
    assert m is not None, text
    return float(m.group(1)) * _UNIT[m.group(2)]


def load_wrk(url: str, bodies: Path, clients: int, seconds: float, work: Path) -> dict[str, Any]:
    script = work / "verify.lua"
    script.write_text(WRK_SCRIPT)
    cmd = [
        "wrk",
        "-t1",
        f"-c{clients}",
        f"-d{max(1, round(seconds))}s",
        "--latency",
        "-s",
        str(script),
        url,
        "--",
        str(bodies),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    dist = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M))
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors: .*", out)
    total = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    return {
        "requests": total,
        "rps": round(rps, 1),
        "p50_ms": round(_ms(dist["50"]), 3),
        "p99_ms": round(_ms(dist["99"]), 3),
        "non_2xx": int(non2xx.group(1)) if non2xx else 0,
        "socket_errors": errors.group(0) if errors else None,
    }


LOADER = r"""
import asyncio, json, sys, time
url, bodies_path, clients, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
host, port = url.split("//")[1].split(":")
bodies = [b.rstrip(b"\n") for b in open(bodies_path, "rb")]
lat, bad = [], 0
async def client(k):
    global bad
    r, w = await asyncio.open_connection(host, int(port))
    i = k * 7919
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        body = bodies[i % len(bodies)]; i += 1
        t = time.perf_counter()
        w.write(b"POST /verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        head = await r.readuntil(b"\r\n\r\n")
        n = int(next(l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")).split(b":")[1])
        await r.readexactly(n)
        lat.append(time.perf_counter() - t)
        if not head.startswith(b"HTTP/1.1 200"):
            bad += 1
    w.close()
async def main():
    await asyncio.gather(*(client(k) for k in range(clients)))
t0 = time.perf_counter()
asyncio.run(main())
wall = time.perf_counter() - t0
lat.sort()
print(json.dumps({"requests": len(lat), "rps": round(len(lat) / wall, 1), "p50_ms": round(lat[len(lat)//2]*1e3, 3),
                  "p99_ms": round(lat[int(len(lat)*0.99)]*1e3, 3), "non_2xx": bad, "socket_errors": None}))
"""


def load_python(url: str, bodies: Path, clients: int, seconds: float, work: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", LOADER, url, str(bodies), str(clients), str(seconds)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out)


def measure(proc: subprocess.Popen, url: str, bodies: Path, clients: int, seconds: float, work: Path) -> dict:
    loader = load_wrk if shutil.which("wrk") else load_python
    c0 = cpu_seconds(proc.pid)
    res = loader(url, bodies, clients, seconds, work)
    cpu = cpu_seconds(proc.pid) - c0
    res["server_cpu_s"] = round(cpu, 2)
    res["per_cpu_s"] = round(res["requests"] / cpu, 1) if cpu > 0 else None
    return res


# ---- parity ---------------------------------------------------------------------------------------------


async def _post_all(url: str, bodies: list[bytes], concurrency: int = 16) -> list[dict[str, Any]]:
    host, port = url.split("//")[1].split(":")
    out: list[dict[str, Any]] = [{}] * len(bodies)

    async def worker(k: int) -> None:
        r, w = await asyncio.open_connection(host, int(port))
        for i in range(k, len(bodies), concurrency):
            body = bodies[i]
            w.write(
                b"POST /verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                % len(body)
                + body
            )
            head = await r.readuntil(b"\r\n\r\n")
            n = int(
                next(ln for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length")).split(
                    b":"
                )[1]
            )
            doc = json.loads(await r.readexactly(n))
            out[i] = {"http": int(head.split(b" ")[1]), **(doc if isinstance(doc, dict) else {})}
        w.close()

    await asyncio.gather(*(worker(k) for k in range(concurrency)))
    return out


def post_all(url: str, bodies: list[bytes], concurrency: int = 16) -> list[dict[str, Any]]:
    """Every body POSTed to url/verify (keep-alive connections); the parsed answers in order."""
    return asyncio.run(_post_all(url, bodies, concurrency))


def disagreements(ours: list[dict], theirs: list[dict]) -> list[int]:
    """Indexes where the rewards differ (or only one server answered 200)."""
    return [
        i
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True))
        if (a.get("http") == 200) != (b.get("http") == 200) or a.get("reward") != b.get("reward")
    ]


# ---- the run --------------------------------------------------------------------------------------------


SECONDS = 5.0  # per measured point at scale 1
REQUESTS = 2000  # distinct request bodies


def run(scale: float = 1.0, *, rounds: int = 3, full: bool = False, clients: tuple[int, ...] = CLIENTS,
        requests: int = REQUESTS) -> dict[str, Any]:  # fmt: skip
    """The result document (docs/design/performance.md, "Result format"): per client count and round, each server in
    turn (the order alternating), requests per second (wall), p50/p99 latency and requests per CPU second of
    the server process; the servers' start-up (spawn to the first answer) apart."""
    seconds = max(1.0, SECONDS * min(1.0, scale))
    work = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    bodies = request_bodies(requests)
    path = work / "bodies.jsonl"
    path.write_bytes(b"\n".join(bodies) + b"\n")
    inputs: dict[str, Any] = {
        "requests": requests,
        "seconds_per_point": seconds,
        "mean_body_bytes": round(sum(map(len, bodies)) / len(bodies)),
        "loader": "wrk" if shutil.which("wrk") else "asyncio",
    }
    checks: dict[str, Any] = {}
    samples: dict[str, list[dict[str, Any]]] = {}
    start: dict[str, float] = {}
    t0 = time.perf_counter()
    ours, ours_url = start_ours()
    start["mcqa_prep"] = time.perf_counter() - t0
    servers = {"mcqa_prep": (ours, ours_url)}
    try:
        t0 = time.perf_counter()
        theirs, theirs_url = start_nemo_gym(work)
        start["nemo_gym"] = time.perf_counter() - t0
        servers["nemo_gym"] = (theirs, theirs_url)
    except Exception as exc:  # noqa: BLE001 - no baseline: the figures say so by their absence
        checks["nemo_gym_error"] = str(exc)[:300]
    try:
        if "nemo_gym" in servers:
            a, b = post_all(ours_url, bodies), post_all(servers["nemo_gym"][1], bodies)
            checks["same_reward_as_nemo_gym"] = f"{len(bodies) - len(disagreements(a, b))}/{len(bodies)}"
        for c in clients:
            for r in range(max(1, rounds)):
                names = list(servers) if r % 2 == 0 else list(reversed(servers))
                for name in names:
                    proc, url = servers[name]
                    samples.setdefault(f"{c}.{name}", []).append(measure(proc, url, path, c, seconds, work))
        checks["server_rss_mb_after_load"] = {n: _rss_mb(p.pid) for n, (p, _u) in servers.items()}
    finally:
        for proc, _url in servers.values():
            stop(proc)
        shutil.rmtree(work, ignore_errors=True)
    return {
        "bench": "serve",
        "title": "mcqa-prep serve under HTTP load against NeMo Gym 0.7.0's mcqa app served the same way",
        "figures": serve_figures(samples, start, clients),
        "checks": checks,
        "inputs": inputs,
    }


def serve_figures(samples: dict[str, list[dict[str, Any]]], start: dict[str, float],
                  clients: tuple[int, ...]) -> dict[str, dict[str, Any]]:  # fmt: skip
    label = {"mcqa_prep": "mcqa-prep serve", "nemo_gym": "NeMo Gym 0.7.0 mcqa app"}
    fig: dict[str, dict[str, Any]] = {}
    for name, s in start.items():
        fig[f"{name}.startup_s"] = H.figure(f"{label[name]}: spawn to the first answer", "s", [s])
    for c in clients:
        for name in label:
            xs = samples.get(f"{c}.{name}")
            if not xs:
                continue
            what = f"{label[name]}, {c} client(s)"
            fig[f"c{c}.{name}.rps"] = H.figure(
                f"{what}: requests per second", "req/s", [x["rps"] for x in xs], 0
            )
            fig[f"c{c}.{name}.per_cpu_s"] = H.figure(
                f"{what}: requests per CPU second of the server", "req/CPU-s", [x["per_cpu_s"] for x in xs], 0
            )
            for q in ("p50_ms", "p99_ms"):
                fig[f"c{c}.{name}.{q}"] = H.figure(f"{what}: {q[:3]} latency", "ms", [x[q] for x in xs], 1)
        ours, theirs = samples.get(f"{c}.mcqa_prep"), samples.get(f"{c}.nemo_gym")
        if ours and theirs:
            fig[f"c{c}.per_cpu_x"] = H.ratio_figure(
                f"{c} client(s): requests per CPU second, mcqa-prep serve / NeMo Gym's app",
                [x["per_cpu_s"] for x in ours], [x["per_cpu_s"] for x in theirs],
                target={"op": ">=", "value": TARGET_PER_CORE} if c == 64 else None,
            )  # fmt: skip
    if "c16.mcqa_prep.p99_ms" in fig:
        fig["c16.mcqa_prep.p99_ms"]["target"] = {"op": "<=", "value": TARGET_P99_MS}
    return fig


def _rss_mb(pid: int) -> float:
    """RSS of a server and its children now (MB)."""
    total = 0
    for p in [pid, *_children(pid)]:
        try:
            with open(f"/proc/{p}/status") as fh:
                total += next(int(ln.split()[1]) for ln in fh if ln.startswith("VmRSS:"))
        except (OSError, StopIteration):
            pass
    return round(total / 1024, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=0.2, help=f"seconds per point = scale x {SECONDS:g}")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=REQUESTS)
    ap.add_argument("--clients", default=",".join(map(str, CLIENTS)))
    args = ap.parse_args()
    clients = tuple(int(c) for c in args.clients.split(","))
    print(json.dumps(run(args.scale, rounds=args.rounds, clients=clients, requests=args.requests), indent=1))


if __name__ == "__main__":
    main()
