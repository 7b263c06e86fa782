"""Findings for people (validate, prepare): grouped by severity, rule and template, each group with its count,
the rule's fix and one example, the largest first; a list cut short always says how much was left out.

The groups come from findings.FindingGroups as JSON-ready dicts (the `finding_groups` of a report), so the text
and the `--format json` document are made from the same data; the JSON document keeps every finding.
"""

from __future__ import annotations

from typing import Any

from ..records import Finding


def _fix(rule: str) -> str | None:
    from ..validate.registry import RULES

    r = RULES.get(rule)
    return r.fix if r is not None else None


def _example(d: dict[str, Any]) -> str:
    return Finding(
        d["file"], d["line"], d["row"], d["path"], d["rule"], d["severity"], d["message"], d.get("uuid")
    ).render()


def more_line(left: int, what: str, how: str) -> str:
    """The line that ends a list cut short: '… and 3 more groups (--max-shown 0 lists all)'."""
    return f"… and {left:,} more {what} ({how})"


def group_lines(groups: list[dict[str, Any]], shown: int, *, indent: str = "  ") -> list[str]:
    """One block per group (at most `shown`; 0 shows all): the count, the fix, then one example."""
    out: list[str] = []
    listed = groups if shown <= 0 else groups[:shown]
    for g in listed:
        where = f", template {g['template']!r}" if g["template"] is not None else ""
        count = f"{g['findings']:,} finding(s) in {g['rows']:,} row(s)"
        if g["example"]["row"] is None:
            count = f"{g['findings']:,} finding(s)"
        elif g["findings"] == g["rows"]:
            count = f"{g['rows']:,} row(s)"
        out.append(f"{indent}{g['severity']} {g['rule']}{where}: {count}")
        fix = _fix(g["rule"])
        if fix:
            out.append(f"{indent}  fix: {fix}")
        out.append(f"{indent}  e.g. {_example(g['example'])}")
    if len(listed) < len(groups):
        out.append(
            indent
            + more_line(
                len(groups) - len(listed),
                "group(s)",
                "--max-shown 0 lists all; --format json lists every finding",
            )
        )
    return out
