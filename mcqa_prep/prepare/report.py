"""What `prepare` did (its report): the counts, the splits and files written, the findings kept, and the
manifest's optional sections (difficulty, runtimes, repairs, decontamination) as the preparation records them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..records import Finding


@dataclass
class PrepareReport:
    """What prepare did: 'written' (new), 'overwritten', or 'up_to_date' (nothing rewritten)."""

    out_dir: str
    status: str
    contract_id: str
    counts: dict[str, Any]
    splits: dict[str, dict[str, int]]
    files: list[dict[str, Any]]
    warnings: list[Finding] = field(default_factory=list)
    rejected: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    finding_groups: list[dict[str, Any]] = field(default_factory=list)  # every finding, grouped (findings.py)
    difficulty: dict[str, Any] | None = None  # the manifest's difficulty section (pass-rate filter, stamping)
    runtimes: dict[str, Any] | None = None  # the manifest's runtimes record (who honours the contract)
    repairs: list[dict[str, Any]] | None = None  # the manifest's repairs (a run with repair_regexes)
    repairable: dict[str, Any] | None = None  # rejected rows the repair would fix (a run without it)
    decontamination: dict[str, Any] | None = None  # the manifest's decontamination section

    def to_dict(self) -> dict[str, Any]:
        d = {
            "out_dir": self.out_dir,
            "status": self.status,
            "contract_id": self.contract_id,
            "counts": self.counts,
            "splits": self.splits,
            "files": self.files,
            "warnings": [f.to_dict() for f in self.warnings],
            "rejected": [f.to_dict() for f in self.rejected],
            "finding_groups": self.finding_groups,
            "seconds": round(self.seconds, 3),
        }
        if self.difficulty is not None:
            d["difficulty"] = self.difficulty
        if self.runtimes is not None:
            d["runtimes"] = self.runtimes
        if self.repairs is not None:
            d["repairs"] = self.repairs
        if self.repairable is not None:
            d["repairable"] = self.repairable
        if self.decontamination is not None:
            d["decontamination"] = self.decontamination
        return d
