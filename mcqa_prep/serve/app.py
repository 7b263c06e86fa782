"""The HTTP app of `mcqa-prep serve` and of the NeMo Gym component: a plain ASGI application (no web
framework), JSON through orjson.

Routes (NeMo Gym 0.7.0's resources server, plus this server's own), each also under NeMo Gym's observability
prefix `/ng-rollout/<rollout id>/...` (its client puts it in front of `/verify` when observability is on):

    POST /verify             grade one row + response (verifier.py)
    POST /seed_session       {} for an agent's legacy body; {"resources_session_id": ...} for an environment's
    POST /close_session      {"resources_session_id": ...} (NeMo Gym's close request model: 422 otherwise)
    POST /aggregate_metrics  NeMo Gym's aggregate document + the contract accounting (aggregate.py)
    GET  /reverify_mode      "stateless"
    GET  /, /health, /healthz, /readyz, /livez   {"status": "ok", ...} (NeMo Gym's liveness routes)
    GET  /contract           the served contract, its id and where it came from
    GET  /metrics            counters (Prometheus text; ?format=json or Accept: application/json for JSON)

Every failure is a JSON body (`{"detail": ...}`, FastAPI's shape): a body over the limit (413), bytes that
are not JSON or not UTF-8 (400), a body NeMo Gym's request model refuses (422), an unknown route (404) or
method (405); a (task, rollout) pair twice in /aggregate_metrics is NeMo Gym's 500.

Grading off the event loop, under a per-request bound (`grade_timeout` seconds from when its grading starts):

- a verify body larger than `INLINE_MAX` bytes is graded in the worker's grading helper process
  (isolate.py), which is killed and replaced when a grading runs past the bound: the request is answered
  masked (`mcqa:grading_timeout`), and the loop goes on serving every other request and the health routes
  meanwhile, whatever the grading does (a thread could not be stopped, and a long C call holds the GIL);
- a smaller body whose row carries a pattern (`template_metadata.output_regex`) is graded in the worker's
  thread pool (the `regex` engine releases the GIL while it matches, under the row's regex bound), answered
  masked at the bound too;
- small bodies without a pattern (most traffic: microseconds of grading) are graded inline.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .aggregate import AggregateFailed, BadAggregateRequest, aggregate
from .isolate import IsolatedGrader, settings_doc
from .jsonio import dumps, loads
from .metrics import prometheus
from .request_model import close_problem, environment_seed
from .verifier import Verifier, field_error, has_custom_regex

MAX_BODY = 16 * 1024 * 1024  # a verify body: ~4M tokens of response text
MAX_AGGREGATE_BODY = 1024 * 1024 * 1024  # NeMo Gym posts every rollout's stripped verify response at once
GRADING_THREADS = 8  # per worker: a runaway grading holds one while the others keep serving
INLINE_MAX = 8 * 1024  # bodies up to this size without a data pattern are graded on the loop
GRADE_TIMEOUT = 5.0  # seconds: the per-request bound on grading off the loop
HEALTH_PATHS = ("/", "/health", "/healthz", "/readyz", "/livez")
_PREFIX = re.compile(r"^/ng-rollout/[A-Za-z0-9][A-Za-z0-9._-]*(/.*)$")
_JSON = [(b"content-type", b"application/json")]
_TEXT = [(b"content-type", b"text/plain; version=0.0.4; charset=utf-8")]


class TooLarge(Exception):
    pass


class ServeApp:
    """The ASGI callable. One per worker process; `verifier` carries the contract and the counters."""

    def __init__(
        self,
        verifier: Verifier,
        *,
        max_body: int = MAX_BODY,
        workers: int = 1,
        grade_timeout: float = GRADE_TIMEOUT,
        inline_max: int = INLINE_MAX,
    ) -> None:
        self.verifier = verifier
        self.served = verifier.served
        self.counters = verifier.counters
        self.max_body = max_body
        self.workers = workers
        self.grade_timeout = grade_timeout
        self.inline_max = inline_max
        self.executor = ThreadPoolExecutor(GRADING_THREADS, thread_name_prefix="mcqa-grade")
        self.isolated = IsolatedGrader(settings_doc(self.served, verifier), self.executor)
        self.routes = {
            ("POST", "/verify"): self.verify,
            ("POST", "/seed_session"): self.seed_session,
            ("POST", "/close_session"): self.close_session,
            ("POST", "/aggregate_metrics"): self.aggregate_metrics,
            ("GET", "/reverify_mode"): self.reverify_mode,
            ("GET", "/contract"): self.contract,
            ("GET", "/metrics"): self.metrics,
            **{("GET", p): self.health for p in HEALTH_PATHS},
        }
        self.paths = {path for _, path in self.routes}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path.startswith("/ng-rollout/"):
            m = _PREFIX.match(path)
            path = m.group(1) if m else path
        handler = self.routes.get((scope["method"], path))
        if handler is None:
            if path in self.paths:
                await respond(send, 405, {"detail": "Method Not Allowed"})
            else:
                await respond(send, 404, {"detail": "Not Found"})
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
                with contextlib.suppress(Exception):  # else started by the first large body
                    self.isolated.start()  # the grading helper, ready before the first large body
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.isolated.close()
                self.executor.shutdown(wait=False, cancel_futures=True)
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _json_body(
        self, scope: dict[str, Any], receive: Any, send: Any, limit: int, verify: bool = False
    ) -> tuple[bool, Any, bytes]:
        """(True, the parsed body, its bytes), or (False, None, b"") after answering the refusal (counted for
        /verify)."""
        try:
            body = await read_body(scope, receive, limit)
        except TooLarge:
            if verify:
                self.verifier.refuse("body_too_large", 413, {})
            await respond(send, 413, {"detail": f"the body is larger than {limit} bytes"})
            return False, None, b""
        try:
            return True, loads(body), body
        except ValueError as exc:
            if verify:
                self.verifier.refuse("not_json", 400, {})
            await respond(send, 400, {"detail": str(exc)})
            return False, None, b""

    async def verify(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        ok, doc, body = await self._json_body(scope, receive, send, self.max_body, verify=True)
        if not ok:
            return
        refused = self.verifier.check(doc)
        if refused is not None:
            await respond(send, *refused)
            return
        if len(body) > self.inline_max:
            graded = await self.isolated.grade(doc, self.grade_timeout)
            if graded is None:  # the helper ran past the bound (or failed): killed, a new one for the next
                await respond(send, *self.verifier.timed_out(doc, self.grade_timeout))
                return
            status, answer, counts = graded
            self.verifier.count(counts)
            await respond(send, status, answer)
            return
        if has_custom_regex(doc):
            loop = asyncio.get_running_loop()
            future = loop.run_in_executor(self.executor, self.verifier.grade, doc)
            try:
                status, out, counts = await asyncio.wait_for(future, self.grade_timeout)
            except TimeoutError:  # the thread runs on; its result, when it comes, is dropped uncounted
                await respond(send, *self.verifier.timed_out(doc, self.grade_timeout))
                return
        else:
            status, out, counts = self.verifier.grade(doc)
        self.verifier.count(counts)
        await respond(send, status, out)

    async def seed_session(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        ok, doc = await self._other_body(scope, receive, send)
        if not ok:
            return
        if environment_seed(doc):
            sid = doc["resources_session_id"]
            await respond(
                send, 200, {"resources_session_id": sid, "resources_tools": None, "sandbox_access": None}
            )
        else:
            await respond(send, 200, {})  # an agent's legacy seed: this server keeps no per-rollout state

    async def close_session(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        ok, doc = await self._other_body(scope, receive, send, objects_only=False)
        if not ok:
            return
        bad = close_problem(doc)
        if bad is not None:
            await respond(send, 422, field_error(*bad))
            return
        await respond(send, 200, {"resources_session_id": doc["resources_session_id"]})

    async def _other_body(
        self, scope: dict[str, Any], receive: Any, send: Any, objects_only: bool = True
    ) -> tuple[bool, Any]:
        self.counters.add("other_requests")
        ok, doc, _ = await self._json_body(scope, receive, send, self.max_body)
        if ok and objects_only and type(doc) is not dict:
            await respond(send, 422, field_error("", "Input should be a valid dictionary", "dict_type"))
            return False, None
        return ok, doc

    async def aggregate_metrics(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.counters.add("other_requests")
        ok, doc, _ = await self._json_body(scope, receive, send, MAX_AGGREGATE_BODY)
        if not ok:
            return
        loop = asyncio.get_running_loop()
        try:
            out = await loop.run_in_executor(self.executor, aggregate, doc)
        except BadAggregateRequest as exc:
            await respond(send, 422, field_error("verify_responses", str(exc), "value_error"))
            return
        except AggregateFailed as exc:  # NeMo Gym's exception middleware: 500, the exception's repr
            await respond(send, 500, exc.body)
            return
        await respond(send, 200, out)

    async def reverify_mode(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await respond(send, 200, "stateless")

    async def contract(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await respond(send, 200, self.served.describe())

    async def health(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        doc = {"status": "ok", "ok": True, "contract_id": self.served.id, "workers": self.workers}
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
