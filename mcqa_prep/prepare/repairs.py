"""`repair_regexes`: what prepare tells about rows whose output_regex the regex audit errs on and can fix.

The per-row work is in rows.py (`repaired`: the fix written into the row, the row checked again, the original
recorded in its stamp); this module counts, in input order, in the parent:

- with the setting, the rows written with a repaired output_regex, by template (manifest `counts.repaired`,
  `counts.repaired_by_template`) and the distinct repairs (manifest `repairs`: template, original, fix, rows);
- without it, the rows rejected for `regex_audit` whose output_regex has a fix, by template, so that a failure
  (or a report with rejects) can say how many rows the repair would keep.

Design: docs/design/prepare.md ("Repairing template regexes").
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from ..errors import InvalidRows
from ..records import Finding
from .rows import REPAIR_RULE, Outcome, Repair

# the key of rows without a template id in the by-template counts: the manifest's own spelling (schemas/manifest.v1,
# "(no template_id)"), kept apart from the reports' fields.NONE because a preparation's bytes are versioned
NO_TEMPLATE = "(no template_id)"
REPAIRS_KEYED = 4096  # distinct repairs whose key is kept made (memory stays bounded)
REPAIRS_LISTED = 100  # distinct (template, original, fix) entries kept in the manifest; counts are complete


class RepairTally:
    """Counts repaired (or repairable) rows by template, and lists the distinct repairs."""

    def __init__(self, applied: bool) -> None:
        self.applied = applied
        self.by_template: Counter[str] = Counter()
        self.alone = 0  # rejected rows counted whose only errors are the regex audit's
        self._listed: dict[str, dict[str, Any]] = {}
        self._keys: dict[tuple[str | None, str, str], str] = {}

    def written(self, outcome: Outcome) -> None:
        """A written row: counted when its output_regex was repaired."""
        r = outcome.repair
        if r is None or r.fixed is None:
            return
        self.by_template[r.template if r.template is not None else NO_TEMPLATE] += 1
        key = self._key(r)
        entry = self._listed.get(key)
        if entry is not None:
            entry["rows"] += 1
        elif len(self._listed) < REPAIRS_LISTED:
            self._listed[key] = {
                "template_id": r.template,
                "output_regex": r.original,
                "repaired": r.fixed,
                "rows": 1,
            }

    def _key(self, r: Repair) -> str:
        """The repair's JSON (what tells two repairs apart), made once per distinct repair of strings."""
        if (
            type(r.original) is str
            and type(r.fixed) is str
            and (r.template is None or type(r.template) is str)
        ):
            plain = (r.template, r.original, r.fixed)  # a tuple of strings: hashed in C
            key = self._keys.get(plain)
            if key is None:
                key = json.dumps(list(plain), ensure_ascii=False)
                if len(self._keys) < REPAIRS_KEYED:
                    self._keys[plain] = key
            return key
        return json.dumps([r.template, r.original, r.fixed], ensure_ascii=False)

    def rejected(self, outcome: Outcome) -> None:
        """A rejected row: counted when its output_regex has a fix that this run does not apply."""
        r = outcome.repair
        if r is not None and r.fixed is None:
            self.by_template[r.template if r.template is not None else NO_TEMPLATE] += 1
            self.alone += all(f.rule == REPAIR_RULE for f in outcome.errors)

    @property
    def rows(self) -> int:
        return sum(self.by_template.values())

    def counts(self) -> dict[str, Any]:
        """The manifest's counts of a run that repairs (nothing for one that does not)."""
        if not self.applied:
            return {}
        return {"repaired": self.rows, "repaired_by_template": dict(sorted(self.by_template.items()))}

    def listed(self) -> list[dict[str, Any]]:
        """The manifest's `repairs`: the distinct repairs, first seen first (at most REPAIRS_LISTED)."""
        return list(self._listed.values())

    def repairable(self) -> dict[str, Any] | None:
        """For a run that does not repair: the rejected rows the repair would fix, by template (None: none)."""
        if self.applied or not self.by_template:
            return None
        return {
            "rows": self.rows,
            "templates": len(self.by_template),
            "by_template": dict(sorted(self.by_template.items())),
        }


def invalid_rows(
    errs: list[Finding],
    counts: dict[str, Any],
    tally: RepairTally,
    groups: list[dict[str, Any]] | None = None,
) -> InvalidRows:
    """The failure of a run that rejects nothing: reason `invalid_rows`, or `invalid_rows_repairable` (every
    invalid row is one the regex audit's fix repairs, with no other error) / `invalid_rows_some_repairable`,
    with the counts."""
    repairable = tally.repairable()
    by_rule = ", ".join(f"{r}: {n}" for r, n in counts["rejected_by_rule"].items())
    message = (  # one line: the findings are the error's data (the CLI prints them first, compiler style)
        f"{counts['rejected']} of {counts['read']} row(s) invalid ({by_rule})"
        + repairable_clause(repairable, counts["rejected"])
        + "; nothing written"
    )
    if repairable is None:
        return InvalidRows(message, errs, counts, finding_groups=groups or [])
    every = tally.alone == counts["rejected"]  # the repair alone would leave no invalid row
    return InvalidRows(
        message,
        errs,
        counts,
        reason="invalid_rows_repairable" if every else "invalid_rows_some_repairable",
        repairable=repairable,
        repairable_rows=repairable["rows"],
        repairable_templates=repairable["templates"],
        finding_groups=groups or [],
    )


def repairable_clause(repairable: dict[str, Any] | None, invalid: int) -> str:
    """'; the regex audit's fix repairs the output_regex of 4 of them (4 templates)', or ''."""
    if not repairable:
        return ""
    n, t = repairable["rows"], repairable["templates"]
    which = "all of them" if n == invalid else f"{n} of them"
    return (
        f"; the regex audit's fix repairs the output_regex of {which} ({t} template{'s' if t != 1 else ''}: "
        + ", ".join(f"{k}: {v}" for k, v in list(repairable["by_template"].items())[:5])
        + (f" … and {t - 5} more" if t > 5 else "")
        + ")"
    )
