"""One CLI vocabulary: docs/cli.md's option table is the reference, and every option of every command must be
in it with the same short flag, values and default. An option added to a command (by any branch) that is not
in the table, or that drifts from its row, fails here: add it to the table (or align it)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from mcqa_prep.cli import COMMANDS, main

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
EVERY = "every command"


def _table() -> dict[str, dict[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    body = text.split("<!-- vocabulary: begin -->", 1)[1].split("<!-- vocabulary: end -->", 1)[0]
    rows = [ln for ln in body.strip().splitlines() if ln.startswith("| `")]
    out: dict[str, dict[str, str]] = {}
    for ln in rows:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", ln.strip().strip("|"))]
        option, short, values, default, commands = (c.strip() for c in cells[:5])
        name = option.strip("`")
        assert name not in out, f"docs/cli.md lists {name} twice"
        out[name] = {"short": short, "values": values, "default": default, "commands": commands}
    return out


def _for(cell: str, command: str) -> str:
    """The cell's value for one command: 'X; cmd1, cmd2: Y' is Y for cmd1 and cmd2, X elsewhere."""
    parts = cell.split("; ")
    for exception in parts[1:]:
        names, _, value = exception.partition(": ")
        if command in [n.strip() for n in names.split(",")]:
            return value
    return parts[0]


def _num(v: float | int) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _values(p: click.Option) -> str:
    t = p.type
    if isinstance(t, click.Choice):
        v = ", ".join(f"`{c}`" for c in t.choices)
    elif p.is_flag:
        v = "flag"
    elif isinstance(t, (click.IntRange, click.FloatRange)):
        bounds = []
        if t.min is not None:
            bounds.append(f"{'>' if t.min_open else '≥'} {_num(t.min)}")
        if t.max is not None:
            bounds.append(f"{'<' if t.max_open else '≤'} {_num(t.max)}")
        v = ("integer" if isinstance(t, click.IntRange) else "number") + (
            " " + " and ".join(bounds) if bounds else ""
        )
    elif isinstance(t, click.Path):
        v = "path"
    elif isinstance(t, click.types.IntParamType):
        v = "integer"
    elif isinstance(t, click.types.FloatParamType):
        v = "number"
    else:
        v = "text"
    return v + (", repeatable" if p.multiple else "")


def _default(p: click.Option) -> str:
    d = p.default
    if p.required:
        return "required"
    if (p.is_flag and not p.secondary_opts) or d is False:
        return "off"
    if d is True:
        return "on"
    if d is None or d == "" or d == () or type(d).__name__ == "Sentinel":
        return "—"
    return f"`{d}`"


def _options() -> dict[str, dict[str, click.Option]]:
    """option name (as the table writes it) -> command -> the click option."""
    ctx = click.Context(main)
    found: dict[str, dict[str, click.Option]] = {}
    for name in COMMANDS:
        for p in main.get_command(ctx, name).params:
            if isinstance(p, click.Option) and not p.hidden:
                long = next(o for o in p.opts if o.startswith("--"))
                key = "/".join([long, *p.secondary_opts])
                found.setdefault(key, {})[name] = p
    return found


TABLE = _table()
OPTIONS = _options()


def test_every_option_of_every_command_is_in_the_table():
    missing = sorted(set(OPTIONS) - set(TABLE))
    assert missing == [], f"options not in docs/cli.md's table: {missing}"
    stale = sorted(set(TABLE) - set(OPTIONS))
    assert stale == [], f"docs/cli.md lists options no command has: {stale}"


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_an_option_has_one_short_flag_values_and_default_wherever_it_is(name):
    row = TABLE.get(name)
    if row is None:
        pytest.fail(f"{name} is not in docs/cli.md's table")
    uses = OPTIONS[name]
    listed = set(COMMANDS) if row["commands"] == EVERY else {c.strip() for c in row["commands"].split(",")}
    assert set(uses) == listed, f"{name}: commands {sorted(uses)}, the table says {sorted(listed)}"
    for command, p in uses.items():
        shorts = [o for o in p.opts if not o.startswith("--")]
        got = {
            "short": f"`{shorts[0]}`" if shorts else "",
            "values": _values(p),
            "default": _default(p),
        }
        want = {k: _for(row[k], command) for k in got}
        assert got == want, f"{command} {name}"


def test_a_short_flag_means_one_option_everywhere():
    meaning: dict[str, set[str]] = {}
    for name, uses in OPTIONS.items():
        for p in uses.values():
            for o in p.opts:
                if not o.startswith("--"):
                    meaning.setdefault(o, set()).add(name)
    assert {s: sorted(n) for s, n in meaning.items() if len(n) > 1} == {}
    assert meaning["-o"] == {"--output"} and meaning["-q"] == {"--quiet"} and meaning["-j"] == {"--workers"}


def test_every_command_has_format_and_quiet():
    assert set(OPTIONS["--format"]) == set(COMMANDS) == set(OPTIONS["--quiet"])
