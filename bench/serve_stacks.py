"""Which web stack for `mcqa-prep serve`: the same verify handler (serve.verifier.Verifier) behind a plain ASGI
app, behind Starlette, and behind FastAPI, each on uvicorn (httptools, uvloop), one worker, the same requests
(bench_serve's) and load generator. The figure that decided docs/serve.md's choice.

    python bench/serve_stacks.py [--requests 1000] [--seconds 4] [--clients 16]
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

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    Path(port_file).write_text(str(sock.getsockname()[1]))
    config = uvicorn.Config(
        app_for(stack), http="httptools", loop="uvloop", access_log=False, log_level="warning"
    )
    uvicorn.Server(config).run(sockets=[sock])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=2)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--clients", type=int, default=16)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    import bench_serve

    work = Path(tempfile.mkdtemp(prefix="stacks-"))
    bodies = work / "bodies.jsonl"
    bodies.write_bytes(b"\n".join(bench_serve.request_bodies(args.requests)) + b"\n")
    out = {}
    for stack in STACKS:
        pf = work / f"{stack}.port"
        proc = subprocess.Popen([sys.executable, __file__, "--child", stack, str(pf)], stderr=subprocess.PIPE)
        while not pf.exists() or not pf.read_text():
            time.sleep(0.1)
        url = f"http://127.0.0.1:{pf.read_text()}"
        bench_serve._wait_ready(url, proc)
        out[stack] = bench_serve.measure(proc, url, bodies, args.clients, args.seconds, work)
        bench_serve.stop(proc)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
