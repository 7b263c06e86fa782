"""Rendering a user's Jinja template with bounds on time, memory and output (docs/convert.md, "Templates").

A template file is data from the user. Jinja's sandbox keeps it from Python's internals, but not from
burning CPU (`{% for a in range(99999) %}{% for b in range(99999) %}...`) or memory (`"x" * 10**10`, a
`center(10**10)` filter, `lipsum(10**8)`). Templates that only print variables and test them (every
built-in) are compiled to a plain function in `templates.py`, whose output is a concatenation of the row's
own values: bounded by construction. Every other template renders here, in a child process that holds only
Jinja:

- time: each render has `RENDER_SECONDS`; past it the child is killed (and started again for the next one);
- memory: the child's address space is limited (`RENDER_MEMORY` above what it holds after start-up), so an
  allocation past it is a MemoryError in the child, not the machine's memory;
- output: a prompt longer than `RENDER_CHARS` characters stops the render.

Any of these is a `TemplateBound` error naming the template (one line; exit 1). The child dies with its
parent (Linux) and at the end of its input.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time
import weakref
from typing import Any

from ..errors import McqaPrepError, UsageError
from ..grader.bounded import read_within

RENDER_SECONDS = 10.0
RENDER_MEMORY = 1 << 30
RENDER_CHARS = 16 << 20
STARTUP_SECONDS = 60.0  # the child's own start (Python, Jinja), before the template's bounds apply

# The child: reads (variables) messages, answers ("ok", text) or (kind, message). The environment's settings
# are those of templates._env (passed in), so a template renders the same here as in the parent.
_CHILD = r"""
import os, pickle, resource, sys
try:
    import ctypes, signal
    ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)
except Exception:
    pass
inp, out = sys.stdin.buffer, sys.stdout.buffer

def read():
    head = inp.read(8)
    if len(head) < 8:
        sys.exit(0)
    return pickle.loads(inp.read(int.from_bytes(head, "little")))

def send(obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(len(data).to_bytes(8, "little") + data)
    out.flush()

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment
send(("up", ""))
source, settings, memory, chars = read()
with open("/proc/self/statm") as fh:
    size = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
resource.setrlimit(resource.RLIMIT_AS, (size + memory, resource.getrlimit(resource.RLIMIT_AS)[1]))
env = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, **settings)
try:
    template = env.from_string(source)
except MemoryError:
    send(("memory", ""))
    sys.exit(0)
except Exception as exc:
    send(("template", str(exc)))
    sys.exit(0)
send(("ready", ""))
glb = dict(template.globals)
while True:
    variables = read()
    try:
        parts, n = [], 0
        for piece in template.root_render_func(template.new_context({**glb, **variables}, shared=True)):
            n += len(piece)
            if n > chars:
                raise OverflowError
            parts.append(piece)
        send(("ok", "".join(parts)))
    except jinja2.UndefinedError as exc:
        send(("undefined", exc.message))
    except jinja2.TemplateError as exc:
        send(("template", str(exc)))
    except MemoryError:
        parts = None
        send(("memory", ""))
    except OverflowError:
        parts = None
        send(("chars", ""))
    except RecursionError:
        send(("failed", "too deep a recursion"))
    except Exception as exc:
        send(("failed", f"{type(exc).__name__}: {exc}"))
"""


class TemplateBound(McqaPrepError):
    """A template went past a rendering bound (time, memory or output size)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, reason="template_bound")


class SandboxRenderer:
    """One template rendered in a bounded child process (started on first use, again after a kill)."""

    def __init__(
        self, source: str, tid: str, origin: str, settings: dict[str, Any], variables: tuple[str, ...]
    ) -> None:
        self.source, self.tid, self.origin, self.settings = source, tid, origin, settings
        self.variables = variables  # the template variables, named when one is undefined
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid = 0
        self._finalizer: Any = None

    @property
    def name(self) -> str:
        return f"template {self.tid!r} ({self.origin})"

    def render(self, variables: dict[str, Any]) -> str:
        proc = self._started()
        try:
            payload = pickle.dumps(variables, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # a row value that cannot cross to the child
            raise UsageError(f"{self.name}: rendering failed: a value cannot be passed: {exc}") from None
        kind, text = self._ask(proc, payload, RENDER_SECONDS)
        if kind == "ok":
            return text
        if kind == "undefined":
            raise UsageError(
                f"{self.name}: {text}; the variables are {', '.join(self.variables)} (row.NAME for a column of "
                "the source row)"
            )
        if kind == "template":
            raise UsageError(f"{self.name}: {text}")
        if kind == "failed":
            raise UsageError(f"{self.name}: rendering failed: {text}")
        self.close()  # the child may be in a bad state after a MemoryError: start afresh
        what = {
            "memory": f"more than {RENDER_MEMORY >> 20} MiB of memory",
            "chars": f"a prompt longer than {RENDER_CHARS:,} characters",
        }[kind]
        raise TemplateBound(f"{self.name}: rendering one row took {what}; {_FIX}")

    def start(self) -> None:
        """Start the child and compile the template there (UsageError for a template Jinja refuses)."""
        self._started()

    def _started(self) -> subprocess.Popen[bytes]:
        if self.proc is not None and self.pid == os.getpid() and self.proc.poll() is None:
            return self.proc
        self.close()
        proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        self.proc, self.pid = proc, os.getpid()
        self._finalizer = weakref.finalize(self, _kill, proc)
        try:  # Python and Jinja start: not the template's time
            assert proc.stdout is not None
            _recv(proc.stdout.fileno(), time.monotonic() + STARTUP_SECONDS)
        except (TimeoutError, OSError, EOFError, pickle.UnpicklingError, ValueError):
            self.close()
            raise UsageError(f"{self.name}: the template sandbox did not start") from None
        start = pickle.dumps((self.source, self.settings, RENDER_MEMORY, RENDER_CHARS))
        kind, text = self._ask(proc, start, RENDER_SECONDS, "compiling it")
        if kind == "memory":
            self.close()
            raise TemplateBound(f"{self.name}: compiling it took more than {RENDER_MEMORY >> 20} MiB; {_FIX}")
        if kind != "ready":
            self.close()
            raise UsageError(f"{self.name}: {text or 'the template sandbox did not start'}")
        return proc

    def _ask(
        self, proc: subprocess.Popen[bytes], payload: bytes, seconds: float, what: str = "rendering one row"
    ) -> tuple[str, Any]:
        deadline = time.monotonic() + seconds
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(len(payload).to_bytes(8, "little") + payload)
            proc.stdin.flush()
            return _recv(proc.stdout.fileno(), deadline)
        except TimeoutError:
            self.close()
            raise TemplateBound(f"{self.name}: {what} took more than {RENDER_SECONDS:g} s; {_FIX}") from None
        except (OSError, EOFError, pickle.UnpicklingError, ValueError):
            self.close()
            raise TemplateBound(
                f"{self.name}: the template sandbox died while rendering a row; {_FIX}"
            ) from None

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if proc is not None and self.pid == os.getpid():
            _kill(proc)

    def __getstate__(self) -> dict[str, Any]:  # a copy (pickled, deep-copied) starts its own child
        return {**self.__dict__, "proc": None, "pid": 0, "_finalizer": None}


_FIX = (
    "a prompt template must render each row in bounded time and space (loops and filters over small values)"
)


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


def _recv(fd: int, deadline: float) -> Any:
    head = read_within(fd, 8, deadline)
    return pickle.loads(read_within(fd, int.from_bytes(head, "little"), deadline))
