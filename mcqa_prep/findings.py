"""Findings for people: every finding of a run folded into groups by severity, rule and template, each with its
count, the rows it is in and its first finding as the example.

One bad template makes the same finding on every row it renders (thousands of ~600-character lines that say
one thing); a group says it once, with the count. The groups are complete (every finding is counted), so a
report can show them all while the findings themselves are kept in full only where a machine reads them
(`--format json`, rejects.jsonl). `validate` and `prepare` fold the same way (the one order: errors first,
then by count, largest first).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .records import Finding


@dataclass
class Group:
    """The findings of one (severity, rule, template): how many, in how many rows, and the first one."""

    severity: str
    rule: str
    template: str | None
    findings: int
    rows: int
    example: Finding

    def to_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "rule": self.rule,
            "template": self.template,
            "findings": self.findings,
            "rows": self.rows,
            "example": self.example.to_dict(),
        }


class FindingGroups:
    """The fold: add() one row's findings at a time (a row counts once per group), in input order."""

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str, str | None], Group] = {}

    def add(self, findings: Iterable[Finding]) -> None:
        seen: set[tuple[str, str, str | None]] = set()
        for f in findings:
            key = (f.severity, f.rule, f.template)
            g = self._groups.get(key)
            if g is None:
                g = self._groups[key] = Group(f.severity, f.rule, f.template, 0, 0, f)
            g.findings += 1
            if key not in seen:
                seen.add(key)
                g.rows += 1

    def __len__(self) -> int:
        return len(self._groups)

    def groups(self) -> list[Group]:
        """Errors first, then the largest groups, then by rule and template (a stable order)."""
        return sorted(
            self._groups.values(),
            key=lambda g: (g.severity != "error", -g.findings, g.rule, g.template or ""),
        )

    def to_list(self) -> list[dict[str, Any]]:
        return [g.to_dict() for g in self.groups()]


def keep_first(kept: list[Finding], new: Iterable[Finding], cap: int) -> None:
    """Append `new` to `kept` up to `cap` findings in all (0: no cap): the findings a report lists."""
    if cap <= 0:
        kept.extend(new)
    else:
        kept.extend(list(new)[: max(0, cap - len(kept))])
