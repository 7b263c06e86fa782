"""The NeMo Gym component's entry point: what its `app.py` runs when NeMo Gym starts it.

NeMo Gym 0.7.0's `gym env start` runs `<venv>/bin/python app.py` in the component's folder, with the whole
resolved config in the environment (NEMO_GYM_CONFIG_DICT, YAML) and this server's top-level key in
NEMO_GYM_CONFIG_PATH; the server's block (`<key>.resources_servers.<name>`) holds the `host` and `port` NeMo
Gym assigned, `num_workers`, NeMo Gym's own `grading_mode` key and this server's `mcqa_prep` settings. A
user's config that names `mcqa` without an `mcqa_prep` block gets the settings `gym-component` wrote into
the component's own configs/mcqa.yaml.

The server is mcqa-prep's own (server.py: uvicorn with the plain ASGI app, `num_workers` worker processes),
not NeMo Gym's FastAPI stack: the same routes, health and observability paths, refusals and answers as the
stock server, at a fraction of its CPU per request. With NeMo Gym's `dry_run` it verifies its contract and
exits 0. Any failure to start is one line on stderr and exit 1 (NeMo Gym then reports the server's output).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from ..errors import McqaPrepError

CONFIG_DICT = "NEMO_GYM_CONFIG_DICT"
CONFIG_PATH = "NEMO_GYM_CONFIG_PATH"


class ComponentConfigError(McqaPrepError):
    reason = "component_config"


def _unresolved(value: Any, where: str) -> str | None:
    """The first OmegaConf interpolation (`${...}`) left in a block, by its place."""
    if isinstance(value, str) and "${" in value:
        return where
    if isinstance(value, dict):
        return next((w for k, v in value.items() if (w := _unresolved(v, f"{where}.{k}"))), None)
    if isinstance(value, list):
        return next((w for i, v in enumerate(value) if (w := _unresolved(v, f"{where}[{i}]"))), None)
    return None


def _load(text: str, key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the whole config, this server's top-level block). NeMo Gym hands over its config with the values it
    assigned (host, port) written out; an interpolation left in this server's block cannot be resolved
    here and is refused by name."""
    whole = yaml.safe_load(text) or {}
    block = whole.get(key) or {}
    where = _unresolved(block, key)
    if where is not None:
        raise ComponentConfigError(
            f"{where}: an interpolation NeMo Gym left unresolved; write the value itself"
        )
    return whole, block


def server_block(env: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(this resources server's config block, NeMo Gym's whole config) from the environment NeMo Gym gives
    the process."""
    text, key = env.get(CONFIG_DICT), env.get(CONFIG_PATH)
    if not text or not key:
        raise ComponentConfigError(
            f"{CONFIG_DICT} and {CONFIG_PATH} are not set: this app is started by NeMo Gym (`gym env start`), "
            "or use `mcqa-prep serve` directly"
        )
    whole, top = _load(text, key)
    kind = next(iter(top), None)
    inner = top.get(kind) if kind else None
    name = next(iter(inner), None) if isinstance(inner, dict) else None
    block = inner.get(name) if isinstance(inner, dict) and name else None
    if kind != "resources_servers" or not isinstance(block, dict):
        raise ComponentConfigError(f"{key}: not a resources server block in NeMo Gym's config")
    return block, whole


def own_settings(component: Path) -> dict[str, Any] | None:
    """The `mcqa_prep` settings `gym-component` wrote into the component's configs/mcqa.yaml."""
    path = component / "configs" / "mcqa.yaml"
    if not path.is_file():
        return None
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    for top in doc.values():
        for servers in (top or {}).get("resources_servers", {}).values() if isinstance(top, dict) else ():
            if isinstance(servers, dict) and isinstance(servers.get("mcqa_prep"), dict):
                return dict(servers["mcqa_prep"])
    return None


def run(component: Path, env: Mapping[str, str], say: Callable[[str], Any]) -> int:
    """Start the server as NeMo Gym asked (returns its exit code); `say` gets the start-up line and worker
    restarts."""
    from .component import component_verifier
    from .server import ServeSettings, bind, serve, url_of

    block, whole = server_block(env)
    settings = block.get("mcqa_prep") or own_settings(component) or {}
    verifier = component_verifier(settings, grading_mode=block.get("grading_mode"))
    served = verifier.served
    if whole.get("dry_run"):
        say(f"mcqa-prep: contract {served.id} verified (dry run)")
        return 0
    host = str(block.get("host") or "127.0.0.1")
    port = block.get("port")
    if not isinstance(port, int) or not 0 < port < 65536:
        raise ComponentConfigError(f"the server block has no port NeMo Gym assigned (port: {port!r})")
    workers = int(block.get("num_workers") or 1)
    s = ServeSettings(
        host,
        port,
        workers,
        verifier.on_mismatch,
        verifier.regex_timeout,
        lenient=bool(settings.get("lenient")),
        grade_timeout=float(settings.get("grade_timeout") or ServeSettings.grade_timeout),
    )
    sock = bind(host, port)

    def ready() -> None:
        say(
            f"mcqa-prep: serving contract {served.id} ({', '.join(served.sources)}) on {url_of(sock)} with "
            f"{workers} worker(s); on mismatch: {s.on_mismatch}"
        )

    return serve(served, s, sock, on_ready=ready, on_event=lambda line: say(f"mcqa-prep: {line}"))
