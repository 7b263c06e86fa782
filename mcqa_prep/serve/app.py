"""The HTTP app of `mcqa-prep serve`: a plain ASGI application (no web framework), JSON through orjson.

Routes (NeMo Gym 0.7.0's resources server, plus this server's own):

    POST /verify             grade one row + response (verifier.py)
    POST /seed_session       {} for an agent's legacy body; {"resources_session_id": ...} for an environment's
    POST /close_session      {"resources_session_id": ...}
    POST /aggregate_metrics  NeMo Gym's aggregate document + the contract accounting (aggregate.py)
    GET  /reverify_mode      "stateless"
    GET  /contract           the served contract, its id and where it came from
    GET  /healthz            {"ok": true, ...}
    GET  /metrics            counters (Prometheus text; ?format=json or Accept: application/json for JSON)

Every failure is a 4xx with a JSON body (`{"detail": ...}`, FastAPI's shape): a body over the limit (413),
bytes that are not JSON or not UTF-8 (400), a body of the wrong shape (422), an unknown route (404) or method
(405). Grading that may run a pattern from the data (`template_metadata.output_regex`) runs in a thread pool:
the `regex` engine releases the GIL while it matches, so the event loop keeps serving other requests while a
catastrophic pattern runs into its time bound.
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson

from .aggregate import BadAggregateRequest, aggregate
from .metrics import prometheus
from .verifier import Verifier, field_error, has_custom_regex

MAX_BODY = 16 * 1024 * 1024  # a verify body: ~4M tokens of response text
MAX_AGGREGATE_BODY = 1024 * 1024 * 1024  # NeMo Gym posts every rollout's stripped verify response at once
GRADING_THREADS = 4
_JSON = [(b"content-type", b"application/json")]
_TEXT = [(b"content-type", b"text/plain; version=0.0.4; charset=utf-8")]


class TooLarge(Exception):
    pass


def dumps(doc: Any) -> bytes:
    """orjson, or the standard library for what orjson refuses (integers beyond 64 bits, lone surrogates)."""
    try:
        return orjson.dumps(doc)
    except TypeError:
        return json.dumps(doc, ensure_ascii=True, allow_nan=False).encode("ascii")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(body: bytes) -> Any:
    """The body as JSON (ValueError naming why not). orjson first; the standard library for valid JSON
    orjson refuses (integers beyond 64 bits, escaped lone surrogates). NaN and Infinity are not JSON."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as first:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"the body is not UTF-8: byte 0x{body[exc.start]:02x} at offset {exc.start}"
            ) from None
        try:
            return json.loads(text, parse_constant=_refuse_constant)
        except RecursionError:
            raise ValueError("the body is nested too deeply") from None
        except ValueError:
            raise ValueError(f"the body is not JSON: {first}") from None


class ServeApp:
    """The ASGI callable. One per worker process; `verifier` carries the contract and the counters."""

    def __init__(self, verifier: Verifier, *, max_body: int = MAX_BODY, workers: int = 1) -> None:
        self.verifier = verifier
        self.served = verifier.served
        self.counters = verifier.counters
        self.max_body = max_body
        self.workers = workers
        self.executor = ThreadPoolExecutor(GRADING_THREADS, thread_name_prefix="mcqa-grade")
        self.routes = {
            ("POST", "/verify"): self.verify,
            ("POST", "/seed_session"): self.seed_session,
            ("POST", "/close_session"): self.close_session,
            ("POST", "/aggregate_metrics"): self.aggregate_metrics,
            ("GET", "/reverify_mode"): self.reverify_mode,
            ("GET", "/contract"): self.contract,
            ("GET", "/healthz"): self.healthz,
            ("GET", "/metrics"): self.metrics,
        }
        self.paths = {path for _, path in self.routes}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        handler = self.routes.get((scope["method"], scope["path"]))
        if handler is None:
            if scope["path"] in self.paths:
                await respond(
                    send, 405, {"detail": f"method {scope['method']} not allowed on {scope['path']}"}
                )
            else:
                await respond(send, 404, {"detail": f"no route {scope['path']}"})
            return
        try:
            await handler(scope, receive, send)
        except Exception as exc:  # noqa: BLE001 - a bug answers one request with a JSON 422, never a 5xx
            await respond(
                send, 422, {"detail": f"the request could not be handled: {type(exc).__name__}: {exc}"}
            )

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.executor.shutdown(wait=False, cancel_futures=True)
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _json_body(
        self, scope: dict[str, Any], receive: Any, send: Any, limit: int, verify: bool = False
    ) -> tuple[bool, Any]:
        """(True, the parsed body), or (False, None) after answering the refusal (counted for /verify)."""
        try:
            body = await read_body(scope, receive, limit)
        except TooLarge:
            if verify:
                self.verifier.refuse("body_too_large", 413, {})
            await respond(send, 413, {"detail": f"the body is larger than {limit} bytes"})
            return False, None
        try:
            return True, loads(body)
        except ValueError as exc:
            if verify:
                self.verifier.refuse("not_json", 400, {})
            await respond(send, 400, {"detail": str(exc)})
            return False, None

    async def verify(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        ok, doc = await self._json_body(scope, receive, send, self.max_body, verify=True)
        if not ok:
            return
        if type(doc) is dict and has_custom_regex(doc):
            loop = asyncio.get_running_loop()
            status, out = await loop.run_in_executor(self.executor, self.verifier.verify, doc)
        else:
            status, out = self.verifier.verify(doc)
        await respond(send, status, out)

    async def seed_session(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        ok, doc = await self._other_body(scope, receive, send)
        if not ok:
            return
        sid = doc.get("resources_session_id")
        if isinstance(sid, str) and sid and {"episode_id", "task_id", "task_data"} <= set(doc):
            await respond(
                send, 200, {"resources_session_id": sid, "resources_tools": None, "sandbox_access": None}
            )
        else:
            await respond(send, 200, {})  # an agent's legacy seed: this server keeps no per-rollout state

    async def close_session(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        ok, doc = await self._other_body(scope, receive, send)
        if not ok:
            return
        sid = doc.get("resources_session_id")
        if not isinstance(sid, str):
            await respond(
                send, 422, field_error("resources_session_id", "a string is required", "string_type")
            )
            return
        await respond(send, 200, {"resources_session_id": sid})

    async def _other_body(self, scope: dict[str, Any], receive: Any, send: Any) -> tuple[bool, Any]:
        self.counters.add("other_requests")
        ok, doc = await self._json_body(scope, receive, send, self.max_body)
        if ok and type(doc) is not dict:
            await respond(send, 422, field_error("", "a JSON object is required", "dict_type"))
            return False, None
        return ok, doc

    async def aggregate_metrics(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.counters.add("other_requests")
        ok, doc = await self._json_body(scope, receive, send, MAX_AGGREGATE_BODY)
        if not ok:
            return
        loop = asyncio.get_running_loop()
        try:
            out = await loop.run_in_executor(self.executor, aggregate, doc, self.served)
        except BadAggregateRequest as exc:
            await respond(send, 422, field_error("verify_responses", str(exc), "value_error"))
            return
        await respond(send, 200, out)

    async def reverify_mode(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await respond(send, 200, "stateless")

    async def contract(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await respond(send, 200, self.served.describe())

    async def healthz(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        doc = {"ok": True, "contract_id": self.served.id, "workers": self.workers}
        await respond(send, 200, doc)

    async def metrics(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        doc = {"contract_id": self.served.id, **self.counters.document()}
        query = scope.get("query_string", b"")
        accept = dict(scope.get("headers") or []).get(b"accept", b"")
        if b"format=json" in query or b"application/json" in accept:
            await respond(send, 200, doc)
            return
        await respond_raw(send, 200, prometheus(doc, self.served.id).encode("utf-8"), _TEXT)


async def read_body(scope: dict[str, Any], receive: Any, limit: int) -> bytes:
    for name, value in scope.get("headers") or ():
        if name == b"content-length":
            try:
                if int(value) > limit:
                    raise TooLarge
            except ValueError:
                pass
            break
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > limit:
                raise TooLarge
            chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def respond(send: Any, status: int, doc: Any) -> None:
    await respond_raw(send, status, dumps(doc), _JSON)


async def respond_raw(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode("ascii"))],
        }
    )
    await send({"type": "http.response.body", "body": body})
