"""NeMo Gym 0.7.0's own `mcqa` resources server app, served over HTTP the way `mcqa-prep serve` is: the bench's
baseline for `bench_serve` (and the 20k-row parity check in `soak_serve.py`).

    python bench/nemo_gym_serve.py PORT_FILE [--grading-mode MODE]

binds 127.0.0.1 on a free port, writes the port to PORT_FILE and serves until SIGTERM.

What runs is NeMo Gym's: its app module (`resources_servers/mcqa/app.py` from the wheel in bench/.cache/site),
its `MCQAResourcesServer.verify`, its request and response models (pydantic), on FastAPI with the routes its
`SimpleResourcesServer.setup_webserver` declares (`/verify`, `/seed_session`, `/close_session`,
`/aggregate_metrics`, `/reverify_mode`), on uvicorn with httptools, uvloop where installed, one worker.

What is stubbed (bench/nemo_gym_ref.py's finder, minus FastAPI, Starlette and uvicorn, which are real here):
NeMo Gym's server framework modules that need Python 3.13 or packages not installed here (`server_utils`,
`global_config`, `judge`, `reward_profile`, `rollout_correlation`, `sandbox`, `telemetry`, aiohttp, Hydra,
OmegaConf, W&B, ...). So its middleware stack is absent: the session cookie middleware, the rollout-context,
exception and cancellation middlewares, the tracing and judge-failsafe wrappers around `/verify`. Each costs
time per request in real NeMo Gym, so this baseline is faster than the real server: a conservative one.
`/aggregate_metrics` answers 501 (its reward profiler is stubbed); the bench does not call it.
"""

from __future__ import annotations

import argparse
import importlib.util
import socket
import sys
import types
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import nemo_gym_ref  # noqa: E402

WEB = ("fastapi", "starlette", "uvicorn")


class _Finder(nemo_gym_ref._StubFinder):
    """The bench's stub finder, with the web stack left real."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.split(".")[0] in WEB:
            return None
        return super().find_spec(fullname, path, target)


def load_app(site: Path = nemo_gym_ref.SITE) -> types.ModuleType:
    app_file = site / "resources_servers" / "mcqa" / "app.py"
    if not app_file.is_file():
        raise nemo_gym_ref.NeMoGymMissing(f"NeMo Gym is not installed in {site}: run `make bench-deps`")
    if str(site) not in sys.path:
        sys.path.append(str(site))
    sys.meta_path.insert(0, _Finder())
    spec = importlib.util.spec_from_file_location("nemo_gym_mcqa_served", app_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(grading_mode: str | None = None) -> Any:
    """NeMo Gym's FastAPI app for its mcqa server (its routes; its verify, request and response models)."""
    app_module = load_app()  # first: it puts bench/.cache/site (FastAPI, `make bench-deps`) on sys.path
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    server = object.__new__(app_module.MCQAResourcesServer)
    server.config = types.SimpleNamespace(grading_mode=grading_mode, REVERIFY_MODE="stateless")
    base = sys.modules["nemo_gym.base_resources_server"]

    async def seed_session(body: base.BaseSeedSessionRequest) -> base.BaseSeedSessionResponse:
        return base.BaseSeedSessionResponse()

    async def close_session(body: base.ResourcesCloseSessionRequest) -> base.ResourcesCloseSessionResponse:
        return base.ResourcesCloseSessionResponse(resources_session_id=body.resources_session_id)

    async def aggregate_metrics() -> Any:
        return JSONResponse({"detail": "the reward profiler is stubbed in this baseline"}, status_code=501)

    async def reverify_mode() -> str:
        return "stateless"

    app = FastAPI()
    app.post("/seed_session")(seed_session)
    app.post("/close_session")(close_session)
    app.post("/verify")(server.verify)
    app.post("/aggregate_metrics")(aggregate_metrics)
    app.get("/reverify_mode")(reverify_mode)
    return app


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("port_file")
    ap.add_argument("--grading-mode", default=None)
    args = ap.parse_args()
    import uvicorn

    app = build(args.grading_mode)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    try:
        import uvloop  # noqa: F401

        loop = "uvloop"
    except ImportError:
        loop = "asyncio"
    config = uvicorn.Config(
        app, http="httptools", loop=loop, access_log=False, log_level="warning", lifespan="off"
    )
    Path(args.port_file).write_text(str(sock.getsockname()[1]))
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
