"""Python's `re` under a time bound (grading.md, "Custom regex").

Custom patterns come from datasets. Most run on the `regex` engine, whose `timeout=` bounds them; where `re`
must answer instead (the engines differ on the pattern and text: `custom_regex.CompiledPattern.engine_for`),
`re` has no timeout of its own. It can still be stopped: its matching loop checks for signals, so

- on a process's main thread, with SIGALRM free (no handler installed by someone else, no timer pending),
  an interval timer raises inside the match at the deadline (two system calls per match);
- anywhere else (a server's worker threads, a caller that owns SIGALRM) the match runs in a helper process,
  started once per process and reused, killed at the deadline and started again on the next call.

Either way the caller gets the last match's spans or a `TimeoutError`, never an unbounded run.
"""

from __future__ import annotations

import marshal
import os
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Any

Spans = tuple[tuple[int, int], tuple[int, int]]  # (span of the group read, span of the whole match)


class _Expired(BaseException):
    """Raised by the interval timer's handler inside the match (BaseException: no `except Exception` on the
    way swallows it)."""


def _last(compiled: Any, text: str, group: int) -> Spans | None:
    last = None
    for last in compiled.finditer(text):  # noqa: B007 - NeMo Gym takes the last findall item
        pass
    return None if last is None else (last.span(group), last.span(0))


def last_match_re(compiled: Any, text: str, group: int, seconds: float) -> Spans | None:
    """The last match of a compiled `re` pattern in `text` as (span of `group`, span of the match), None
    without a match; TimeoutError when it runs past `seconds` (> 0)."""
    if _alarm_free():
        return _with_alarm(compiled, text, group, seconds)
    return _HELPER.run(compiled.pattern, compiled.flags, text, group, seconds)


def _alarm_free() -> bool:
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, signal.SIG_IGN):
        return False
    return signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def _expire(signum: int, frame: Any) -> None:
    raise _Expired


def _with_alarm(compiled: Any, text: str, group: int, seconds: float) -> Spans | None:
    previous = signal.signal(signal.SIGALRM, _expire)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return _last(compiled, text, group)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Expired:
        raise TimeoutError(f"pattern exceeded {seconds}s") from None
    finally:
        signal.signal(signal.SIGALRM, previous)


# The helper: length-prefixed marshal messages on its stdin/stdout (marshal keeps any str, lone surrogates
# included). It dies with its parent (Linux) and at end of input.
_CHILD = r"""
import marshal, re, sys, warnings
warnings.simplefilter("ignore")
try:
    import ctypes, signal
    ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)
except Exception:
    pass
inp, out = sys.stdin.buffer, sys.stdout.buffer
cache = {}
while True:
    head = inp.read(4)
    if len(head) < 4:
        break
    src, flags, text, group = marshal.loads(inp.read(int.from_bytes(head, "little")))
    c = cache.get((src, flags))
    if c is None:
        if len(cache) > 256:
            cache.clear()
        c = cache[(src, flags)] = re.compile(src, flags)
    last = None
    for last in c.finditer(text):
        pass
    res = None if last is None else (last.span(group), last.span(0))
    data = marshal.dumps(res)
    out.write(len(data).to_bytes(4, "little") + data)
    out.flush()
"""


class _Helper:
    """One helper process per process (re-started after a fork or a timeout), used by one thread at a time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid = 0  # the process that started it (a forked child starts its own)

    def run(self, src: str, flags: int, text: str, group: int, seconds: float) -> Spans | None:
        payload = marshal.dumps((src, int(flags), text, group))
        with self.lock:
            proc = self._started()
            deadline = time.monotonic() + seconds  # the helper's start-up is not the pattern's time
            try:
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write(len(payload).to_bytes(4, "little") + payload)
                proc.stdin.flush()
                head = read_within(proc.stdout.fileno(), 4, deadline)
                body = read_within(proc.stdout.fileno(), int.from_bytes(head, "little"), deadline)
            except TimeoutError:
                self._stop()
                raise TimeoutError(f"pattern exceeded {seconds}s") from None
            except (OSError, EOFError, ValueError):
                self._stop()
                raise RuntimeError("the regex helper process failed") from None
            return marshal.loads(body)  # type: ignore[no-any-return]

    def _started(self) -> subprocess.Popen[bytes]:
        if self.proc is not None and self.pid == os.getpid() and self.proc.poll() is None:
            return self.proc
        if self.pid == os.getpid():
            self._stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        self.pid = os.getpid()
        return self.proc

    def _stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or self.pid != os.getpid():
            return
        proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


def read_within(fd: int, n: int, deadline: float) -> bytes:
    """n bytes from a pipe before `deadline` (time.monotonic()): TimeoutError past it, EOFError when the
    writer is gone. A child process's answer over a pipe, waited for with a bound (here and in convert's
    template sandbox)."""
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


_HELPER = _Helper()
