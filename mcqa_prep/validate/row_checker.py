"""The row checker: runs the registered per-row rules on rows.

Two halves, so that a later pool of worker processes can run the first and the parent the second, in input
order, with the same output as one process:
- `RowChecker.check(row)`: pure per-row work, a row -> (its row findings, its RowKeys). Its only state is
  caches of pure functions (patterns, controls) and the set of output_regex keys that timed out on a prompt.
- `RowValidator` (row_validator.py) feeds the RowKeys to crossrow.CrossRow and counts the findings.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from ..fields import template_id
from ..records import Finding, Row
from .crossrow import RowKeys, row_keys
from .facts import Config, RowFacts
from .regex_audit_rules import audit_facts, regex_repair
from .regex_rules import regex_facts
from .registry import ROW, RULES, Rule, render_path

_MALFORMED = RULES["malformed_row"]
REPAIRABLE_RULE = "regex_audit"  # the rule whose rows check_repair can repair


@functools.lru_cache(maxsize=1024)
def rules_for(may: int) -> tuple[Rule, ...]:
    """The row rules that may fire given a row's guard bits, in registry order."""
    return tuple(
        r
        for r in RULES.values()
        if r.scope == ROW and r is not _MALFORMED and (r.guard == 0 or r.guard & may)
    )


class RegexFix(NamedTuple):
    """What check_repair gives for a row the regex audit errs on and can fix: the output_regex with the audit's
    fixes as the row carries it (`value`), and the row's facts and keys (for check_fixed)."""

    value: Any
    facts: RowFacts
    keys: RowKeys | None


def findings_of(row: Row, r: Rule, hits, uuid: str | None, template: str | None = None) -> list[Finding]:
    return [
        Finding(row.file, row.line, row.index, render_path(path), r.name, r.severity, msg, uuid, template)
        for path, msg in hits
    ]


class RowChecker:
    """Runs the row rules on one row at a time (see the module docstring)."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg

    def facts(self, row: Row) -> RowFacts:
        return self.complete(RowFacts.of(row, self.cfg))

    def complete(self, f: RowFacts) -> RowFacts:
        """A row's facts with the regex rules' and the regex audit's (both cached per template)."""
        f.may |= regex_facts(f)
        f.may |= audit_facts(f)
        return f

    def check(self, row: Row) -> tuple[list[Finding], RowKeys | None]:
        out, keys, _ = self.run(row)
        return out, keys

    def check_facts(self, f: RowFacts) -> tuple[list[Finding], RowKeys | None]:
        """check() of a row whose facts were read from its batch's columns (batch.py)."""
        out, keys, _ = self.judge(self.complete(f))
        return out, keys

    def check_repair(self, row: Row) -> tuple[list[Finding], RowKeys | None, RegexFix | None]:
        """check(), and for a row the regex audit errs on, its output_regex with the audit's fixes
        (regex_audit_rules.regex_repair; None when the audit finds no error or some pattern has no fix)."""
        return self._repair(*self.run(row))

    def check_repair_facts(self, f: RowFacts) -> tuple[list[Finding], RowKeys | None, RegexFix | None]:
        """check_repair() of a row whose facts were read from its batch's columns."""
        return self._repair(*self.judge(self.complete(f)))

    @staticmethod
    def _repair(
        out: list[Finding], keys: RowKeys | None, f: RowFacts | None
    ) -> tuple[list[Finding], RowKeys | None, RegexFix | None]:
        if f is None or not any(x.rule == REPAIRABLE_RULE for x in out):
            return out, keys, None
        fixed = regex_repair(f)
        return out, keys, None if fixed is None else RegexFix(fixed, f, keys)

    def check_fixed(self, fix: RegexFix, fixed: Row) -> tuple[list[Finding], RowKeys | None]:
        """check(fixed), where `fixed` is the row of `fix` with `fix.value` as its output_regex. A string
        replaced by a string changes only what the regex rules see: the row's facts are re-judged under the
        fix (RowFacts.refit; the fix's plan and audit are cached per regex, letters and mode) instead of read
        again; its keys differ only in the patterns. Other shapes are checked anew."""
        f, keys = fix.facts, fix.keys
        if keys is None or type(fix.value) is not str or f.orx is None or f.orx.kind != "str":
            return self.check(fixed)
        g = self.complete(f.refit(fixed))
        out, _, _ = self.judge(g, keyed=False)
        return out, keys._replace(patterns=g.orx.patterns if g.orx is not None else ())

    def run(self, row: Row) -> tuple[list[Finding], RowKeys | None, RowFacts | None]:
        if row.data is None or type(row.data) is not dict:
            return findings_of(row, _MALFORMED, _MALFORMED.check(row), None), None, None
        return self.judge(self.facts(row))

    def judge(self, f: RowFacts, keyed: bool = True) -> tuple[list[Finding], RowKeys | None, RowFacts]:
        """The findings of the rules a row's facts say may fire, and its RowKeys (`keyed`, else None)."""
        out: list[Finding] = []
        if f.may:
            u = f.uuid
            uuid = None if u is None else str(u)
            row = f.row
            template = template_id({"template_metadata": f.tm})  # findings are grouped by it
            for r in rules_for(f.may):
                hits = list(r.check(f))
                if hits:
                    out.extend(findings_of(row, r, hits, uuid, template))
        return out, row_keys(f) if keyed else None, f
