"""RowValidator: the row-by-row API that `prepare` and `validate_paths` use (per-row rules, then the
cross-row rules in input order, then the whole-input rules at `finish()`)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable
from typing import Any

from ..errors import UsageError
from ..grader import DEFAULT_REGEX_TIMEOUT
from ..records import Finding, Row
from .crossrow import CrossRow, KeyColumns, RowKeys, Seen
from .facts import Config, positive_finite
from .registry import CROSS, ERROR, RULES, WARNING
from .row_checker import RowChecker, findings_of

SUMMARY_FILE = "<inputs>"
_CROSS_RULES = [r for r in RULES.values() if r.scope == CROSS]


def check_timeout(regex_timeout: Any) -> float:
    """The regex timeout, or UsageError: it must be a finite number of seconds > 0 (the regex engine reads 0
    as no bound at all, and validation must never run a user pattern without one)."""
    if not positive_finite(regex_timeout):
        raise UsageError(
            f"the regex timeout must be a number of seconds > 0, got {regex_timeout!r}",
            reason="invalid_regex_timeout",
            value=regex_timeout,
        )
    return float(regex_timeout)


# Finding's fields, in order: at_index builds a moved finding with the constructor (dataclasses.replace
# reads the fields anew per call, several times slower, on a third of the rows of a typical input)
_FIELDS = ("file", "line", "row", "path", "rule", "severity", "message", "uuid", "template")
assert tuple(x.name for x in dataclasses.fields(Finding)) == _FIELDS, "at_index needs Finding's fields"


def at_index(findings: list[Finding], index: int) -> list[Finding]:
    """Findings made in a worker (which counts rows from the chunk's start) at the row's index in its file."""
    return [
        f
        if f.row == index
        else Finding(f.file, f.line, index, f.path, f.rule, f.severity, f.message, f.uuid, f.template)
        for f in findings
    ]


class RowValidator:
    """Checks rows one at a time and remembers only what cross-row rules need (packed keys, counts)."""

    def __init__(self, *, regex_timeout: float = DEFAULT_REGEX_TIMEOUT) -> None:
        self.regex_timeout = check_timeout(regex_timeout)
        self.checker = RowChecker(Config(self.regex_timeout))
        self.cross = CrossRow()
        self.rows = 0
        self.rows_with_errors = 0
        self.rows_with_warnings = 0
        self.by_rule: Counter[str] = Counter()
        self.by_severity: Counter[str] = Counter()

    def check(self, rec: Row, facts: Any = None) -> list[Finding]:
        """Every finding of one row, including duplicates of rows checked before by this validator. `facts`:
        a function of this validator's Config giving the row's facts from its batch's columns
        (batch.file_facts), or None."""
        f = facts(self.checker.cfg) if facts is not None else None
        out, keys = self.checker.check(rec) if f is None else self.checker.check_facts(f)
        return self.absorb(rec, out, keys)

    def absorb(self, rec: Row, out: list[Finding], keys: RowKeys | None) -> list[Finding]:
        """The cross-row half of check(): `out` and `keys` are what RowChecker.check gave for `rec` (maybe in
        another process); adds the cross-row findings and counts them all. Rows must come in input order.
        `rec` needs only its address (file, line, index, split), not its data."""
        self.rows += 1
        return self._settle(out, self.cross.observe(rec, keys) if keys is not None else None)

    def _settle(self, out: list[Finding], seen: Seen | None) -> list[Finding]:
        """A row's findings with the cross-row ones added (what the index knew of it: `seen`), counted."""
        if seen is not None:
            for r in _CROSS_RULES:
                out.extend(findings_of(seen.row, r, r.check(seen), seen.uuid))
        if out:
            self._count(out)
        return out

    def absorb_chunk(
        self,
        file: str,
        split: str | None,
        lines: list[int],
        first_index: int,
        cols: KeyColumns,
        found: dict[int, list[Finding]],
    ) -> dict[int, list[Finding]]:
        """absorb() for every row of a chunk at once: row i is at `lines[i]` and index first_index + i,
        `found` holds the row findings of the rows with any (by position, indexes counted from the chunk's
        start). Returns every finding of the rows that have any, cross-row ones included, by position."""
        seen = self.cross.observe_many(file, split, lines, first_index, cols)
        self.rows += len(lines)
        out: dict[int, list[Finding]] = {}
        for i in sorted(found.keys() | seen.keys()):
            fs = found.get(i, [])
            fs = self._settle(at_index(fs, first_index + i) if first_index else fs, seen.get(i))
            if fs:
                out[i] = fs
        return out

    def add(self, findings: Iterable[Finding]) -> None:
        """Count findings made outside check() (an unreadable file) in the summary."""
        for f in findings:
            self.by_rule[f.rule] += 1
            self.by_severity[f.severity] += 1

    def finish(self) -> list[Finding]:
        """Whole-input findings, due once every row was checked (position bias)."""
        r = RULES["answer_position_bias"]
        out = [
            Finding(SUMMARY_FILE, None, None, "$.expected_answer", r.name, r.severity, msg)
            for _, msg in r.check(self.cross)
        ]
        self.add(out)
        return out

    def position_bias(self) -> dict[str, Any]:
        return self.cross.position_bias()

    @property
    def gold_hist(self) -> Counter[str]:
        return self.cross.gold_hist

    def summary(self) -> dict[str, Any]:
        return {
            "rows_read": self.rows,
            "rows_with_errors": self.rows_with_errors,
            "rows_with_warnings": self.rows_with_warnings,
            "errors": self.by_severity[ERROR],
            "warnings": self.by_severity[WARNING],
            "findings_by_rule": dict(sorted(self.by_rule.items())),
            "expected_answer_histogram": dict(sorted(self.cross.gold_hist.items())),
            "position_bias": self.position_bias(),
            "patterns_checked": self.cross.patterns_checked,
        }

    def _count(self, findings: list[Finding]) -> None:
        err = False
        for f in findings:
            self.by_rule[f.rule] += 1
            self.by_severity[f.severity] += 1
            err = err or f.severity == ERROR
        if err:
            self.rows_with_errors += 1
        else:
            self.rows_with_warnings += 1
