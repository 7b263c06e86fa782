"""Rendering a user's Jinja template with bounds on time, memory and output (docs/design/convert.md, "Templates").

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

import time
from typing import Any

from ..child import BoundedChild, ChildFailed, encode
from ..errors import McqaPrepError, UsageError

RENDER_SECONDS = 10.0
RENDER_MEMORY = 1 << 30
RENDER_CHARS = 16 << 20
STARTUP_SECONDS = 60.0  # the child's own start (Python, Jinja), before the template's bounds apply

# The child's loop (after child.PRELUDE): a [source, settings, memory, chars] message, then variables messages;
# answers ["ok", text] or [kind, message]. The environment's settings are those of templates._env (passed in),
# so a template renders the same here as in the parent.
_CHILD = r"""
import os, resource
import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment
send(["up", ""])
source, settings, memory, chars = read()
with open("/proc/self/statm") as fh:
    size = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
resource.setrlimit(resource.RLIMIT_AS, (size + memory, resource.getrlimit(resource.RLIMIT_AS)[1]))
env = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, **settings)
try:
    template = env.from_string(source)
except MemoryError:
    send(["memory", ""])
    sys.exit(0)
except Exception as exc:
    send(["template", str(exc)])
    sys.exit(0)
send(["ready", ""])
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
        send(["ok", "".join(parts)])
    except jinja2.UndefinedError as exc:
        send(["undefined", exc.message])
    except jinja2.TemplateError as exc:
        send(["template", str(exc)])
    except MemoryError:
        parts = None
        send(["memory", ""])
    except OverflowError:
        parts = None
        send(["chars", ""])
    except RecursionError:
        send(["failed", "too deep a recursion"])
    except Exception as exc:
        send(["failed", f"{type(exc).__name__}: {exc}"])
"""


class TemplateBound(McqaPrepError):
    """A template went past a rendering bound (time, memory or output size)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, reason="template_bound")


class SandboxRenderer:
    """One template rendered in a bounded child process (child.BoundedChild: started on first use, again
    after a kill). A row's variables cross to it as JSON: a value JSON has no form for (a date, bytes, a
    decimal from a Parquet source) arrives as its text, which is what printing it renders."""

    def __init__(
        self, source: str, tid: str, origin: str, settings: dict[str, Any], variables: tuple[str, ...]
    ) -> None:
        self.source, self.tid, self.origin, self.settings = source, tid, origin, settings
        self.variables = variables  # the template variables, named when one is undefined
        self.child = BoundedChild(_CHILD, site=True)

    @property
    def name(self) -> str:
        return f"template {self.tid!r} ({self.origin})"

    @property
    def proc(self) -> Any:
        return self.child.proc

    def render(self, variables: dict[str, Any]) -> str:
        self._started()
        try:
            payload = encode(variables, default=str)
        except (TypeError, ValueError) as exc:  # a row value that cannot cross to the child
            raise UsageError(f"{self.name}: rendering failed: a value cannot be passed: {exc}") from None
        kind, text = self._ask(payload, RENDER_SECONDS)
        if kind == "ok":
            return str(text)
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

    def _started(self) -> None:
        try:  # Python and Jinja start: not the template's time
            fresh = self.child.start(STARTUP_SECONDS)
        except (TimeoutError, ChildFailed):
            self.close()
            raise UsageError(f"{self.name}: the template sandbox did not start") from None
        if not fresh:
            return
        start = encode([self.source, self.settings, RENDER_MEMORY, RENDER_CHARS])
        kind, text = self._ask(start, RENDER_SECONDS, "compiling it")
        if kind == "memory":
            self.close()
            raise TemplateBound(f"{self.name}: compiling it took more than {RENDER_MEMORY >> 20} MiB; {_FIX}")
        if kind != "ready":
            self.close()
            raise UsageError(f"{self.name}: {text or 'the template sandbox did not start'}")

    def _ask(self, payload: bytes, seconds: float, what: str = "rendering one row") -> tuple[str, Any]:
        try:
            kind, text = self.child.send_and_receive(payload, time.monotonic() + seconds)
        except TimeoutError:
            raise TemplateBound(f"{self.name}: {what} took more than {RENDER_SECONDS:g} s; {_FIX}") from None
        except (ChildFailed, TypeError, ValueError):  # died, or answered what is not [kind, text]
            self.close()
            raise TemplateBound(
                f"{self.name}: the template sandbox died while rendering a row; {_FIX}"
            ) from None
        return str(kind), text

    def close(self) -> None:
        self.child.close()


_FIX = (
    "a prompt template must render each row in bounded time and space (loops and filters over small values)"
)
