"""Grading in a child process that can be stopped: the per-request bound on long gradings.

A thread cannot bound a grading: Python cannot stop a thread, and a grading that spends its time inside one C
call (a regular-expression scan of a long text) holds the interpreter lock the whole time, so the event loop
and its health routes would wait for it. A worker therefore grades its large verify bodies (over the app's
INLINE_MAX) in a helper process of its own, the project's one bounded helper (child.BoundedChild: messages as
JSON, a deadline on every answer, killed past it, dies with its parent, holds no listening socket):

- the helper is started when the worker starts, told the served contract and the verifier's settings, and
  answers each request (its parsed body) with the HTTP status, the counter keys and the answer;
- the worker sends one request at a time (an asyncio lock); the bound runs from when its grading is sent, and
  a grading that has not answered by then gets its helper killed (a new one starts for the next request),
  while the request is answered masked (`mcqa:grading_timeout`).

Counting stays in the worker (the counters' one writer), from the keys the helper sends back.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Executor
from typing import Any

from ..child import BoundedChild, ChildFailed
from ..policy import GradingPolicy
from .contract import ServedContract

START_TIMEOUT = 120.0  # seconds a new helper may take to start (a loaded machine); not the grading bound
_CHILD = "from mcqa_prep.serve.isolate import helper\nhelper(read, send)\n"


def settings_doc(served: ServedContract, verifier: Any) -> dict[str, Any]:
    """What a helper needs to grade as the worker does."""
    return {
        "policy": served.policy.to_dict(effective=False),
        "known": list(served.known.values()),
        "require_stamp": served.require_stamp,
        "sources": served.sources,
        "on_mismatch": verifier.on_mismatch,
        "regex_timeout": verifier.regex_timeout,
        "lenient": verifier.lenient,
    }


class IsolatedGrader:
    """A worker's grading helper (see the module docstring)."""

    def __init__(self, init: dict[str, Any], executor: Executor) -> None:
        self.init = init
        self.executor = executor
        self.lock = asyncio.Lock()
        self.child = BoundedChild(_CHILD, site=True)

    def start(self) -> None:
        """A running helper, told its settings (blocking: the worker's start-up, or a thread)."""
        if self.child.start():
            if self.child.ask(self.init, START_TIMEOUT) != "ready":
                self.child.close()
                raise ChildFailed("the grading helper did not start")

    def _grade(self, doc: dict[str, Any], seconds: float) -> Any:
        return self.child.ask(doc, seconds)

    async def grade(
        self, doc: dict[str, Any], timeout: float
    ) -> tuple[int, dict[str, Any], tuple[str, ...]] | None:
        """(status, answer, counter keys), or None when the grading ran past `timeout` or its helper failed
        (the helper is then killed; the next request starts a new one)."""
        async with self.lock:
            loop = asyncio.get_running_loop()
            try:  # its start-up (imports, the contract) is not the grading's time
                await loop.run_in_executor(self.executor, self.start)
                status, answer, counts = await loop.run_in_executor(self.executor, self._grade, doc, timeout)
            except (TimeoutError, ChildFailed, OSError):
                self.child.close()
                return None
            return int(status), answer, tuple(counts)

    def close(self) -> None:
        self.child.close()


def helper(read: Any, send: Any) -> None:
    """The helper's loop (run by child.BoundedChild): its settings, then one request in, one answer out."""
    import os
    import time

    from .verifier import Verifier

    init = read()
    served = ServedContract(
        GradingPolicy.from_dict(init["policy"], source="serve"),
        known=init["known"],
        require_stamp=init["require_stamp"],
        sources=init["sources"],
    )
    verifier = Verifier(
        served, on_mismatch=init["on_mismatch"], regex_timeout=init["regex_timeout"], lenient=init["lenient"]
    )
    pause = float(os.environ.get("MCQA_PREP_TEST_GRADE_SLEEP") or 0)  # the tests' stand-in for a slow grading
    send("ready")
    while True:
        doc = read()
        if pause:
            time.sleep(pause)
        status, out, counts = verifier.grade(doc)
        send([status, out, list(counts)])
