"""Which web stack for `mcqa-prep serve`: the same verify handler (serve.verifier.Verifier) behind a plain ASGI
app, behind Starlette, and behind FastAPI, each on uvicorn (httptools, uvloop), one worker, the same requests
(bench_serve's) and load generator. The figure that decided docs/design/serve.md's choice.

    python bench/run.py --only serve_stacks                  # its figures to bench/results/serve_stacks.json
    python bench/serve_stacks.py [--scale 0.5] [--rounds 3]  # print them
    python bench/serve_stacks.py --child STACK PORT_FILE     # one server (used by the driver)
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

STACKS = ("asgi", "asgi-inline", "starlette", "fastapi")


class _Inline:
    """An executor that runs the call in place (for the asgi-inline variant)."""

    def submit(self, fn, *args):
        from concurrent.futures import Future

        f: Future = Future()
        f.set_result(fn(*args))
        return f

    def shutdown(self, **kw):
        pass


def app_for(stack: str):
    from mcqa_prep.policy import GradingPolicy
    from mcqa_prep.serve.app import ServeApp, dumps, loads
    from mcqa_prep.serve.contract import ServedContract
    from mcqa_prep.serve.verifier import Verifier

    verifier = Verifier(ServedContract(GradingPolicy()))
    if stack == "asgi":
        return ServeApp(verifier)
    if stack == "asgi-inline":  # the same app grading every request on the event loop (no thread pool)
        app = ServeApp(verifier)
        app.executor = _Inline()
        return app
    if stack == "starlette":
        from starlette.applications import Starlette
        from starlette.responses import Response
        from starlette.routing import Route

        async def verify(request):
            status, out = verifier.verify(loads(await request.body()))
            return Response(dumps(out), status_code=status, media_type="application/json")

        async def ok(request):
            return Response(b'"stateless"', media_type="application/json")

        return Starlette(routes=[Route("/verify", verify, methods=["POST"]), Route("/reverify_mode", ok)])
    from fastapi import FastAPI, Request
    from fastapi.responses import Response

    app = FastAPI()

    @app.post("/verify")
    async def fverify(request: Request):
        status, out = verifier.verify(loads(await request.body()))
        return Response(dumps(out), status_code=status, media_type="application/json")

    @app.get("/reverify_mode")
    async def fok():
        return "stateless"

    return app


def child(stack: str, port_file: str) -> None:
    import uvicorn

    site = HERE / ".cache" / "site"  # Starlette and FastAPI: installed for the bench only (make bench-deps)
    if str(site) not in sys.path:
        sys.path.append(str(site))

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    Path(port_file).write_text(str(sock.getsockname()[1]))
    config = uvicorn.Config(
        app_for(stack), http="httptools", loop="uvloop", access_log=False, log_level="warning"
    )
    uvicorn.Server(config).run(sockets=[sock])


LABELS = {"asgi": "plain ASGI (chosen)", "asgi-inline": "plain ASGI, all grading inline", "starlette": "Starlette",
          "fastapi": "FastAPI"}  # fmt: skip


def start(stack: str, work: Path) -> tuple[subprocess.Popen, str]:
    import bench_serve

    pf = work / f"{stack}.port"
    pf.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", stack, str(pf)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    while not pf.exists() or not pf.read_text():
        if proc.poll() is not None:
            raise RuntimeError(
                f"{stack} server exited: {proc.stderr.read().decode()[-500:] if proc.stderr else ''}"
            )
        time.sleep(0.1)
    url = f"http://127.0.0.1:{pf.read_text()}"
    bench_serve._wait_ready(url, proc)
    return proc, url


def run(scale: float = 1.0, *, rounds: int = 3, full: bool = False, clients: tuple[int, ...] = (16, 64),
        requests: int = 1000) -> dict:  # fmt: skip
    """The result document (docs/design/performance.md, "Result format"): per stack and client count, `rounds` points
    each, the stacks in an order rotated every round; every server runs for the whole measurement."""
    import bench_serve
    import harness as H

    seconds = max(1.0, 4.0 * min(1.0, scale))
    work = Path(tempfile.mkdtemp(prefix="stacks-"))
    bodies = work / "bodies.jsonl"
    bodies.write_bytes(b"\n".join(bench_serve.request_bodies(requests)) + b"\n")
    servers: dict[str, tuple[subprocess.Popen, str]] = {}
    samples: dict[str, list[dict]] = {}
    try:
        for stack in STACKS:
            servers[stack] = start(stack, work)
        for c in clients:
            legs = {
                stack: (
                    lambda proc=proc, url=url, c=c: bench_serve.measure(proc, url, bodies, c, seconds, work)
                )
                for stack, (proc, url) in servers.items()
            }
            for stack, xs in H.interleave(legs, rounds).items():
                samples[f"c{c}.{stack}"] = xs
    finally:
        for proc, _url in servers.values():
            bench_serve.stop(proc)
    fig = {}
    for key, xs in samples.items():
        c, stack = key.split(".", 1)
        what = f"{LABELS[stack]}, {c[1:]} clients"
        fig[f"{key}.rps"] = H.figure(f"{what}: requests per second", "req/s", [x["rps"] for x in xs], 0)
        fig[f"{key}.p99_ms"] = H.figure(f"{what}: p99 latency", "ms", [x["p99_ms"] for x in xs], 1)
        fig[f"{key}.per_cpu_s"] = H.figure(
            f"{what}: requests per CPU second of the server", "req/CPU-s", [x["per_cpu_s"] for x in xs], 0
        )
    return {
        "bench": "serve_stacks",
        "title": "the same verify handler behind a plain ASGI app, Starlette and FastAPI, on uvicorn",
        "figures": fig,
        "checks": {},
        "inputs": {"requests": requests, "seconds_per_point": seconds, "stacks": list(STACKS)},
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=2)
    ap.add_argument("--scale", type=float, default=0.5)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    print(json.dumps(run(args.scale, rounds=args.rounds), indent=1))


if __name__ == "__main__":
    main()
