"""The rule registry: every validation rule's name, severity, description, fix and function, in one place.

A rule is a function decorated with `@rule(...)`. Row rules take the row's facts (facts.RowFacts) and yield
`(path, message)` pairs, `path` a tuple of keys and indices (`("options", 2, "A")` renders `$.options[2].A`);
the row checker (row_checker.py) turns them into Findings with the row's address. A row rule names a `guard`: the fact bits
(facts.G_*) under which it *may* fire. The facts prove the other rules silent with cheap C-level checks, so
the row checker skips them instead of running a second, hand-written copy of them (docs/design/validate.md, "Speed").

Scopes: `row` (one row, pure: what a worker process can run), `cross` (needs earlier rows: duplicates),
`input` (the whole input: position bias, no rows), `file` (a file that cannot be read).
docs/design/validate.md's rule table is `rules_markdown()`, checked by a test, as is the report schema's rule enum.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

ERROR = "error"
WARNING = "warning"

ROW = "row"
CROSS = "cross"
INPUT = "input"
FILE = "file"

Path = tuple[Any, ...]
Hit = tuple[Path | str, str]  # a path tuple, or a path the reader already rendered


@dataclass(frozen=True)
class Rule:
    name: str
    severity: str
    description: str  # what the rule checks (one line; the docs table's "what")
    fix: str  # how to fix it (the docs table's "fix"); each finding's message says it for that row
    scope: str
    check: Callable[..., Iterable[Hit]]
    guard: int = 0  # row rules: the facts.G_* bits under which the rule may fire (0: always runs)


RULES: dict[str, Rule] = {}


def rule(
    name: str, severity: str, description: str, fix: str, *, scope: str = ROW, guard: int = 0
) -> Callable[[Callable[..., Iterable[Hit]]], Callable[..., Iterable[Hit]]]:
    """Register the decorated function as rule `name` (registration order is the docs' and the row's
    finding order)."""

    def register(fn: Callable[..., Iterable[Hit]]) -> Callable[..., Iterable[Hit]]:
        if name in RULES:
            raise ValueError(f"rule {name!r} registered twice")
        RULES[name] = Rule(name, severity, description, fix, scope, fn, guard)
        return fn

    return register


def render_path(path: Path | str) -> str:
    """('options', 2, 'A') -> '$.options[2].A'; a key that is not an identifier is bracketed as JSON."""
    if isinstance(path, str):
        return path
    out = "$"
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        elif isinstance(p, str) and p.isidentifier():
            out += f".{p}"
        else:
            out += f"[{json.dumps(str(p), ensure_ascii=False)}]"
    return out


def quote(s: str, n: int = 60) -> str:
    """repr of `s`, cut to n characters (for messages)."""
    return repr(s if len(s) <= n else s[: n - 1] + "…")


def rules_markdown() -> str:
    """docs/design/validate.md's rule table, generated from the registry."""
    lines = ["| rule | severity | scope | what | fix |", "|---|---|---|---|---|"]
    for r in RULES.values():
        cells = [f"`{r.name}`", r.severity, r.scope, r.description, r.fix]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"
