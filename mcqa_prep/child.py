"""A helper process bounded in time, in one place: the life of the child that runs a user's `re` pattern
(grader/bounded.py) and the one that renders a user's Jinja template (convert/sandbox.py).

`BoundedChild(code)` runs `code` in a fresh interpreter (`python -I`, and `-S` unless it needs site
packages), started on first use and again after a fork (each process has its own) or after it was killed.
Parent and child exchange messages as JSON, each preceded by its length (8 bytes, little-endian): no class
crosses the pipe, so nothing the child sends can run code in the parent, and any text crosses, lone
surrogates included (JSON escapes them). Every answer is waited for with a deadline: past it the child is
killed (`TimeoutError`); a child that died or answered something else is killed too (`ChildFailed`). It dies
with its parent (Linux: PR_SET_PDEATHSIG) and at the end of its input.

`code` is the child's loop, run after `PRELUDE`, which gives it `read()` (the next message; exits at the end of
input) and `send(value)`.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

PRELUDE = r"""
import json, sys
try:
    import ctypes, signal
    ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)
except Exception:
    pass
_inp, _out = sys.stdin.buffer, sys.stdout.buffer

def read():
    head = _inp.read(8)
    if len(head) < 8:
        sys.exit(0)
    return json.loads(_inp.read(int.from_bytes(head, "little")))

def send(value):
    data = json.dumps(value).encode("ascii")
    _out.write(len(data).to_bytes(8, "little") + data)
    _out.flush()
"""


class ChildFailed(RuntimeError):
    """The helper process died, or answered something that is not a message."""


def encode(message: Any, default: Callable[[Any], Any] | None = None) -> bytes:
    """A message as it crosses the pipe: JSON (a value JSON has no form for goes through `default`, else it is
    a TypeError)."""
    data = json.dumps(message, default=default).encode("ascii")
    return len(data).to_bytes(8, "little") + data


class BoundedChild:
    """One helper process (see the module's docstring); `lock` is for callers that share it across threads."""

    def __init__(self, code: str, *, site: bool = False) -> None:
        self.code = code
        self.site = site
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid = 0  # the process that started it (a forked child starts its own)
        self._finalizer: Any = None

    def start(self, seconds: float | None = None) -> bool:
        """Make sure the child runs; True when a new one was started (it may need its set-up message). With
        `seconds`, the new child's first message (sent when it is ready) is waited for that long."""
        if self.proc is not None and self.pid == os.getpid() and self.proc.poll() is None:
            return False
        self.close()
        flags = ["-I"] if self.site else ["-I", "-S"]
        proc = subprocess.Popen(
            [sys.executable, *flags, "-c", PRELUDE + self.code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        self.proc, self.pid = proc, os.getpid()
        self._finalizer = weakref.finalize(self, _kill, proc)
        if seconds is not None:
            self.receive(time.monotonic() + seconds)
        return True

    def ask(self, message: Any, seconds: float) -> Any:
        """Send `message` to the running child and return its answer, within `seconds` of now."""
        return self.send_and_receive(encode(message), time.monotonic() + seconds)

    def send_and_receive(self, payload: bytes, deadline: float) -> Any:
        """An encoded message sent, the answer read before `deadline` (time.monotonic())."""
        proc = self.proc
        try:
            if proc is None or proc.stdin is None:
                raise EOFError
            proc.stdin.write(payload)
            proc.stdin.flush()
        except (OSError, ValueError, EOFError):
            self.close()
            raise ChildFailed("the helper process is gone") from None
        return self.receive(deadline)

    def receive(self, deadline: float) -> Any:
        """The child's next message, read before `deadline`; the child is killed on TimeoutError and on
        ChildFailed."""
        proc = self.proc
        try:
            if proc is None or proc.stdout is None:
                raise EOFError
            fd = proc.stdout.fileno()
            head = read_within(fd, 8, deadline)
            return json.loads(read_within(fd, int.from_bytes(head, "little"), deadline))
        except TimeoutError:
            self.close()
            raise
        except (OSError, EOFError, ValueError):
            self.close()
            raise ChildFailed("the helper process failed") from None

    def close(self) -> None:
        """Kill the child (when this process started it) and forget it."""
        proc, self.proc = self.proc, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if proc is not None and self.pid == os.getpid():
            _kill(proc)

    def __getstate__(self) -> dict[str, Any]:  # a copy (pickled, deep-copied) starts its own child
        return {"code": self.code, "site": self.site}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["code"], site=state["site"])  # type: ignore[misc]


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        proc.kill()
        proc.wait()
    except OSError:
        pass
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


def read_within(fd: int, n: int, deadline: float) -> bytes:
    """n bytes from a pipe before `deadline` (time.monotonic()): TimeoutError past it, EOFError when the
    writer is gone."""
    chunks: list[bytes] = []
    while n > 0:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)
