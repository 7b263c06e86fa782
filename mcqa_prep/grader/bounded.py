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

import signal
import threading
import time
from typing import Any

from ..child import BoundedChild, ChildFailed, encode

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


# The helper's loop (after child.PRELUDE): [pattern, flags, text, group] -> the last match's spans or null.
_CHILD = r"""
import re, warnings
warnings.simplefilter("ignore")
cache = {}
while True:
    src, flags, text, group = read()
    c = cache.get((src, flags))
    if c is None:
        if len(cache) > 256:
            cache.clear()
        c = cache[(src, flags)] = re.compile(src, flags)
    last = None
    for last in c.finditer(text):
        pass
    send(None if last is None else [last.span(group), last.span(0)])
"""


class _Helper:
    """One helper process per process (child.BoundedChild: started again after a fork or a timeout), used by
    one thread at a time."""

    def __init__(self) -> None:
        self.child = BoundedChild(_CHILD)

    @property
    def proc(self) -> Any:
        return self.child.proc

    def run(self, src: str, flags: int, text: str, group: int, seconds: float) -> Spans | None:
        payload = encode([src, int(flags), text, group])
        with self.child.lock:
            self.child.start()
            deadline = time.monotonic() + seconds  # the helper's start-up is not the pattern's time
            try:
                spans = self.child.send_and_receive(payload, deadline)
            except TimeoutError:
                raise TimeoutError(f"pattern exceeded {seconds}s") from None
            except ChildFailed:
                raise RuntimeError("the regex helper process failed") from None
        if spans is None:
            return None
        (a, b), (c, d) = spans
        return (a, b), (c, d)


_HELPER = _Helper()
