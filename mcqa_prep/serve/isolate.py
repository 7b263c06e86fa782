"""Grading in a child process that can be stopped: the per-request bound on long gradings.

A thread cannot bound a grading: Python cannot stop a thread, and a grading that spends its time inside one C
call (a regular-expression scan of a long text) holds the interpreter lock the whole time, so the event loop
and its health routes would wait for it. A worker therefore grades its large verify bodies (over the app's
INLINE_MAX) in a child process of its own:

- the child (`python -c "...isolate import child; child()"`) is started when the worker starts, with the
  served contract and the verifier settings, and reads length-prefixed frames on stdin: the body as received;
  it answers each with the HTTP status, the counter keys and the answer's JSON bytes on stdout;
- the worker sends one body at a time (a lock); the bound runs from when its grading starts, and a grading
  that has not answered by then gets its child killed (SIGKILL) and a new one started, while the request is
  answered masked (`mcqa:grading_timeout`);
- the child dies with the worker: its stdin reaches end of file, and on Linux the kernel's parent-death
  signal stops it even mid-grading. It holds no listening socket (not inherited).

Counting stays in the worker (the counters' one writer), from the keys the child sends back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import struct
import subprocess
import sys
from concurrent.futures import Executor
from typing import Any

from ..policy import GradingPolicy
from .contract import ServedContract

_HEAD = struct.Struct("!I")
START_TIMEOUT = 120.0  # seconds a new child may take to start (a loaded machine); not the grading bound
_CHILD = "from mcqa_prep.serve.isolate import child; child()"


def settings_doc(served: ServedContract, verifier: Any) -> bytes:
    """What a child needs to grade as the worker does (JSON)."""
    return json.dumps(
        {
            "policy": served.policy.to_dict(effective=False),
            "known": list(served.known.values()),
            "require_stamp": served.require_stamp,
            "sources": served.sources,
            "on_mismatch": verifier.on_mismatch,
            "regex_timeout": verifier.regex_timeout,
            "lenient": verifier.lenient,
        }
    ).encode()


def _read_exact(stream: Any, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _frame(payload: bytes) -> bytes:
    return _HEAD.pack(len(payload)) + payload


class IsolatedGrader:
    """One grading child of one worker (see the module docstring)."""

    def __init__(self, init: bytes, executor: Executor) -> None:
        self.init = init
        self.executor = executor
        self.lock = asyncio.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready = False

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True
        )
        self.ready = False
        assert self.proc.stdin is not None
        self.proc.stdin.write(_frame(self.init))
        self.proc.stdin.flush()

    def _wait_ready(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        (n,) = _HEAD.unpack(_read_exact(proc.stdout, _HEAD.size))
        _read_exact(proc.stdout, n)

    def _roundtrip(self, proc: subprocess.Popen[bytes], body: bytes) -> tuple[int, bytes, tuple[str, ...]]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(_frame(body))
        proc.stdin.flush()
        (n,) = _HEAD.unpack(_read_exact(proc.stdout, _HEAD.size))
        payload = _read_exact(proc.stdout, n)
        head, _, answer = payload.partition(b"\n")
        status, _, counts = head.decode().partition(" ")
        return int(status), answer, tuple(c for c in counts.split(",") if c)

    async def grade(self, body: bytes, timeout: float) -> tuple[int, bytes, tuple[str, ...]] | None:
        """(status, answer bytes, counter keys), or None when the grading ran past `timeout` (its child is
        then killed and replaced)."""
        async with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self.start()
            proc = self.proc
            assert proc is not None
            loop = asyncio.get_running_loop()
            if not self.ready:  # its start-up (imports, the contract) is not the grading's time
                try:
                    await asyncio.wait_for(
                        loop.run_in_executor(self.executor, self._wait_ready, proc), START_TIMEOUT
                    )
                except (TimeoutError, EOFError, OSError):
                    self.kill()
                    self.start()
                    return None
                self.ready = True
            future = loop.run_in_executor(self.executor, self._roundtrip, proc, body)
            try:
                return await asyncio.wait_for(asyncio.shield(future), timeout)
            except (TimeoutError, EOFError, OSError):
                self.kill()
                with contextlib.suppress(Exception):
                    await future  # the round trip ends with the child (end of file)
                self.start()
                return None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(OSError):
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            self.kill()


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() == 1:
        os._exit(0)


def child() -> None:
    """The grading child's loop: one frame in (a body), one frame out, until end of file."""
    from .jsonio import dumps, loads
    from .verifier import Verifier

    _die_with_parent()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    try:
        (n,) = _HEAD.unpack(_read_exact(stdin, _HEAD.size))
        init = json.loads(_read_exact(stdin, n))
    except EOFError:
        return
    served = ServedContract(
        GradingPolicy.from_dict(init["policy"], source="serve"),
        known=init["known"],
        require_stamp=init["require_stamp"],
        sources=init["sources"],
    )
    verifier = Verifier(
        served, on_mismatch=init["on_mismatch"], regex_timeout=init["regex_timeout"], lenient=init["lenient"]
    )
    stdout.write(_frame(b"ready"))
    stdout.flush()
    pause = float(os.environ.get("MCQA_PREP_TEST_GRADE_SLEEP") or 0)  # the tests' stand-in for a slow grading
    while True:
        try:
            (n,) = _HEAD.unpack(_read_exact(stdin, _HEAD.size))
            body = _read_exact(stdin, n)
        except EOFError:
            return
        if pause:
            import time

            time.sleep(pause)
        status, out, counts = verifier.grade(loads(body))
        stdout.write(_frame(f"{status} {','.join(counts)}\n".encode() + dumps(out)))
        stdout.flush()
