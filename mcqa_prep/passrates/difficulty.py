"""Difficulty in `prepare`: filter rows by measured pass rate, and stamp the measured profiles into rows.

The evidence is a pass-rate table (passrate_table) measured under exactly the preparation's contract (anything
else is refused before a row is read), or, by explicit opt-in, the rows' own upstream `reward_profiles`, whose
grading contract is unknown (legacy evidence, recorded as such in the manifest). Per row, `Difficulty.judge`
is a pure function of the row and the loaded evidence, so rows can be judged anywhere; `EvidenceTally` is the
fold over the verdicts, in input order. A dropped row is neither written nor rejected: it is counted by
reason (DROP_REASONS). The settings (`Difficulty.settings()`) are part of what makes a preparation: another
table, model or threshold is another preparation (accept.decide).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, UsageError
from ..evidence import key_kind
from ..policy import GradingPolicy
from ..progress import Progress
from ..records import display_name
from .table import PassRateTable, read_table

EVIDENCE_TABLE = "table"
EVIDENCE_UPSTREAM = "upstream_reward_profiles"
NO_EVIDENCE = ("keep", "drop")
# Why a row was dropped, in the order they are tried (a row is dropped for the first that applies).
DROP_REASONS = ("no_evidence", "at_chance", "unsolved", "solved", "pass_rate_below", "pass_rate_above")
SOURCE_UPSTREAM = "upstream"  # reward_profiles[].source of a profile found in the input row
SOURCE_MEASURED = "mcqa-prep"  # ... of a profile measured under a contract and stamped by prepare
PROFILE_RULE = "difficulty.reward_profiles"
# What a pass-rate range is applied to: the observed rate (passes / samples), or the table's posterior mean or
# credible bound (a lower bound keeps only rows surely easy enough, an upper bound rows surely hard enough).
# A passrates.v3 table adds the chance-corrected posterior (a question at chance is treated as one without
# evidence: kept or dropped by `no_evidence`, reason at_chance) and the consistent one (every option order).
CORRECTED_ON = ("corrected-mean", "corrected-lower", "corrected-upper")
CONSISTENT_ON = ("consistent-mean", "consistent-lower", "consistent-upper")
KEEP_ON = ("observed", "mean", "lower", "upper", *CORRECTED_ON, *CONSISTENT_ON)
# The per-row fields of NVIDIA's released training blends, written back from the table for one model.
BLEND_FIELDS = ("pass_rate", "pass_rate_total", "pass_rate_passed")
BLEND_SOURCE = ("pass_rate_model", "pass_rate_contract")
BLEND_UPSTREAM = "pass_rate_upstream"


@dataclass(frozen=True)
class PassRateFilter:
    """Which rows to keep: pass rate of `model` within [low, high], optionally neither 0 nor 1; rows without
    evidence kept or dropped (`no_evidence`). `evidence` is EVIDENCE_TABLE or EVIDENCE_UPSTREAM."""

    evidence: str = EVIDENCE_TABLE
    model: str | None = None
    low: float = 0.0
    high: float = 1.0
    drop_solved: bool = False
    drop_unsolved: bool = False
    no_evidence: str = "keep"
    on: str = "observed"

    def check(self) -> None:
        if self.on not in KEEP_ON:
            raise UsageError(f"keep_on must be one of {', '.join(KEEP_ON)}, got {self.on!r}")
        if self.on != "observed" and self.evidence != EVIDENCE_TABLE:
            raise UsageError(
                "the posterior (its mean or a credible bound) comes from a pass-rate table: the rows' own "
                "reward_profiles only have an observed rate",
                reason="keep_on_upstream",
            )
        if self.evidence not in (EVIDENCE_TABLE, EVIDENCE_UPSTREAM):
            raise UsageError(
                f"evidence must be {EVIDENCE_TABLE} or {EVIDENCE_UPSTREAM}, got {self.evidence!r}"
            )
        for name, v in (("low", self.low), ("high", self.high)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                raise UsageError(
                    f"pass-rate bound {name} must be a number in [0, 1], got {v!r}", reason="bad_range"
                )
        if self.low > self.high:
            raise UsageError(
                f"pass-rate range {self.low}:{self.high} is empty (low > high)", reason="bad_range"
            )
        if self.no_evidence not in NO_EVIDENCE:
            raise UsageError(f"no_evidence must be keep or drop, got {self.no_evidence!r}")
        if self.evidence == EVIDENCE_UPSTREAM and not self.model:
            raise UsageError(
                "filtering on the rows' own reward_profiles needs the model whose profile to use",
                reason="model_required",
            )

    def reason(self, rate: float | None, solved: bool, unsolved: bool, at_chance: bool = False) -> str | None:
        """Why a row with this evidence is dropped (DROP_REASONS), or None when it is kept."""
        if rate is None:
            return "no_evidence" if self.no_evidence == "drop" else None
        if at_chance:  # its evidence cannot be told from guessing: as a row without evidence
            return "at_chance" if self.no_evidence == "drop" else None
        if self.drop_unsolved and unsolved:
            return "unsolved"
        if self.drop_solved and solved:
            return "solved"
        if rate < self.low:
            return "pass_rate_below"
        if rate > self.high:
            return "pass_rate_above"
        return None


@dataclass(frozen=True)
class DifficultyRequest:
    """What a preparation asks for: a table (the evidence to filter on and/or to stamp), a filter, stamping."""

    table: str | os.PathLike | None = None
    filter: PassRateFilter | None = None
    stamp: bool = False
    blend: bool = False  # also write the blend fields (BLEND_FIELDS) of one model
    blend_model: str | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the evidence says of one valid row."""

    key: str | None  # the table key the row was found under (None: not in the table, or no table)
    source: str | None  # where the filter's evidence came from: uuid / prompt / upstream; None: no evidence
    rate: float | None
    dropped: str | None  # a DROP_REASONS entry, or None: the row is kept
    # models named by the row's upstream profiles when none is the chosen one (for the "model missing" refusal)
    upstream_models: tuple[str, ...] = ()


class Difficulty:
    """A checked request: the verified table (its contract is the preparation's), the model, the filter."""

    def __init__(
        self, request: DifficultyRequest, policy: GradingPolicy, table: PassRateTable | None
    ) -> None:
        self.request = request
        self.filter = request.filter
        self.stamp = request.stamp
        self.table = table
        self.contract_id = policy.contract_id()
        self.model = self.filter.model if self.filter is not None else None
        self.blend_model: str | None = None

    @classmethod
    def load(
        cls,
        request: DifficultyRequest | None,
        policy: GradingPolicy,
        inputs: Iterable[str | os.PathLike] = (),
        progress: Progress | None = None,
    ) -> Difficulty | None:
        """Check the request and load its table (refusing a foreign, edited or unknown one) before any row."""
        if request is None or (request.filter is None and not request.stamp):
            return None
        f = request.filter
        if f is not None:
            f.check()
        wants_table = request.stamp or (f is not None and f.evidence == EVIDENCE_TABLE)
        if wants_table and request.table is None:
            raise UsageError(
                "filtering on or stamping measured pass rates needs a pass-rate table",
                reason="table_required",
            )
        table = None
        if request.table is not None:
            _check_not_an_input(request.table, inputs)
            table = read_table(request.table, progress, variants=False)  # the estimates are all it reads
            table.check_contract(policy)
            if f is not None and f.on in CORRECTED_ON + CONSISTENT_ON and table.version != "passrates.v3":
                raise InputError(
                    f"{table.path}: a {table.version} table records no chance-corrected or consistent posterior "
                    "(measured before passrates.v3): measure the pass rates again",
                    reason="table_version",
                )
        self = cls(request, policy, table)
        if f is not None and f.evidence == EVIDENCE_TABLE:
            assert table is not None  # (wants_table)
            self.model = table.choose_model(f.model, "filter on")
        if request.blend:
            if not request.stamp:
                raise UsageError(
                    "the blend fields are written with the reward profiles", reason="blend_alone"
                )
            assert table is not None  # (a stamp: wants_table)
            self.blend_model = table.choose_model(request.blend_model or self.model, "filter on")
        return self

    # ---- per row (pure) ---------------------------------------------------------------------------------

    def judge(self, row: Mapping[str, Any]) -> tuple[Verdict | None, str | None]:
        """(verdict, None), or (None, why the row's upstream reward_profiles cannot be evidence)."""
        found = self.table.find(row) if self.table is not None else None
        key = found[0] if found is not None else None
        f = self.filter
        if f is None:  # stamping only
            return Verdict(key, key_kind(key) if key is not None else None, None, None), None
        if f.evidence == EVIDENCE_TABLE:
            entry = found[1].get(self.model) if found is not None else None  # type: ignore[arg-type]
            if entry is None:
                return Verdict(key, None, None, f.reason(None, False, False)), None
            rate = entry.estimate(f.on)
            at_chance = f.on in CORRECTED_ON and bool(entry.at_chance)
            dropped = f.reason(rate, entry.passes == entry.samples, entry.passes == 0, at_chance)
            return Verdict(key, key_kind(key), rate, dropped), None  # type: ignore[arg-type]  # (found: a key)
        rate, others, problem = upstream_rate(row, self.model or "")
        if problem is not None:
            return None, problem
        if rate is None:
            return Verdict(key, None, None, f.reason(None, False, False), others), None
        return Verdict(key, SOURCE_UPSTREAM, rate, f.reason(rate, rate >= 1.0, rate <= 0.0)), None

    def apply(self, data: dict[str, Any], verdict: Verdict) -> None:
        """Stamp the table's profiles for the row's question (every model) into `reward_profiles`, after the
        row's own profiles, which are kept and marked as upstream (contract unknown). A measured profile
        already in the row for the same model and contract (a row prepared before) is replaced."""
        if not self.stamp or self.table is None:
            return
        own = data.get("reward_profiles")
        out = [_mark_upstream(p) for p in own] if isinstance(own, list) else []
        if verdict.key is not None:
            cid = self.table.contract_id
            new: list[dict[str, Any]] = [
                {
                    "model_hf_path": model,
                    "num_generations": e.samples,
                    "pass_rate": e.pass_rate,
                    "contract": cid,
                    "source": SOURCE_MEASURED,
                }
                for model, e in sorted(self.table.entries[verdict.key].items())
            ]
            models = {p["model_hf_path"] for p in new}
            out = [p for p in out if not _measured(p, cid, models)] + new
        if out or isinstance(own, list):
            data["reward_profiles"] = out
        if self.blend_model is not None and verdict.key is not None:
            entry = self.table.entries[verdict.key].get(self.blend_model)
            if entry is not None:
                self._stamp_blend(data, entry)

    def _stamp_blend(self, data: dict[str, Any], entry: Any) -> None:
        """The blend fields of the row, from the table, for the blend model, with the model and contract they
        were measured for. Values the row carried from elsewhere (an upstream blend: another checkpoint, an
        unknown contract) are kept under BLEND_UPSTREAM; this preparation's own, stamped before, are replaced."""
        assert self.table is not None
        own = {k: data[k] for k in BLEND_FIELDS if k in data}
        if own and "pass_rate_contract" not in data and BLEND_UPSTREAM not in data:
            data[BLEND_UPSTREAM] = own
        data["pass_rate"] = entry.pass_rate
        data["pass_rate_total"] = entry.samples
        data["pass_rate_passed"] = entry.passes
        data["pass_rate_model"] = self.blend_model
        data["pass_rate_contract"] = self.table.contract_id

    # ---- the manifest --------------------------------------------------------------------------------

    def settings(self) -> dict[str, Any]:
        """What makes this part of a preparation (recorded in the manifest; compared by accept.decide)."""
        f = self.filter
        flt: dict[str, Any] | None = None
        if f is not None:
            upstream = f.evidence == EVIDENCE_UPSTREAM
            flt = {
                "evidence": f.evidence,
                "evidence_contract_id": None if upstream or self.table is None else self.table.contract_id,
                "legacy_evidence": upstream,
                "model": self.model,
                "keep_pass_rate": [float(f.low), float(f.high)],
                "drop_solved": f.drop_solved,
                "drop_unsolved": f.drop_unsolved,
                "no_evidence": f.no_evidence,
            }
            if f.on != "observed":  # recorded only when asked: manifests written before stay up to date
                flt["keep_on"] = f.on
                flt["credible_level"] = self.table.level if self.table is not None else None
        out = {
            "table": self.table.identity() if self.table is not None else None,
            "filter": flt,
            "stamp_reward_profiles": self.stamp,
        }
        if self.blend_model is not None:
            out["stamp_blend_fields"] = {"model": self.blend_model}
        return out

    def section(self, tally: EvidenceTally) -> dict[str, Any]:
        """The manifest's `difficulty` object: settings, where the table was read, what the evidence said."""
        tally.check(self)
        return {
            "settings": self.settings(),
            "table_path": display_name(self.table.path) if self.table is not None else None,
            "evidence": tally.to_dict(self),
        }


def _measured(p: Any, contract: str, models: set[str]) -> bool:
    return (
        isinstance(p, dict)
        and p.get("source") == SOURCE_MEASURED
        and p.get("contract") == contract
        and p.get("model_hf_path") in models
    )


def _mark_upstream(p: Any) -> Any:
    if isinstance(p, dict) and "source" not in p:
        return {**p, "contract": None, "source": SOURCE_UPSTREAM}
    return p


def _check_not_an_input(table: str | os.PathLike, inputs: Iterable[str | os.PathLike]) -> None:
    t = Path(table).resolve()
    for i in inputs:
        p = Path(i).resolve()
        if t == p or p in t.parents:
            raise UsageError(
                f"{table}: the pass-rate table is also an input (or inside one)", reason="table_is_input"
            )


def upstream_rate(row: Mapping[str, Any], model: str) -> tuple[float | None, tuple[str, ...], str | None]:
    """(pass rate of `model` in the row's own upstream reward_profiles or None, the models those profiles
    name when none is `model`, a problem). Profiles stamped with a contract are measurements, not upstream
    evidence: they are skipped here (their table is the way to use them)."""
    profiles = row.get("reward_profiles")
    if profiles is None:
        return None, (), None
    if not isinstance(profiles, list):
        return None, (), "$.reward_profiles: must be a list of profiles"
    found: list[int] = []
    others: list[str] = []
    for i, p in enumerate(profiles):
        if not isinstance(p, Mapping):
            return None, (), f"$.reward_profiles[{i}]: must be an object"
        if p.get("contract") is not None or p.get("source") == SOURCE_MEASURED:
            continue
        name = p.get("model_hf_path")
        if name != model:
            if isinstance(name, str):
                others.append(name)
            continue
        rate = p.get("pass_rate")
        if (
            isinstance(rate, bool)
            or not isinstance(rate, (int, float))
            or not math.isfinite(rate)
            or not 0 <= rate <= 1
        ):
            return None, (), f"$.reward_profiles[{i}].pass_rate: {rate!r} is not a pass rate in [0, 1]"
        found.append(i)
    if len(found) > 1:
        return (
            None,
            (),
            f"$.reward_profiles: {len(found)} profiles for model {model!r} (at {found}): which one is evidence?",
        )
    if not found:
        return None, tuple(others), None
    return float(profiles[found[0]]["pass_rate"]), (), None


@dataclass
class EvidenceTally:
    """The fold over verdicts, in input order: which rows had evidence, which table keys were used."""

    judged: int = 0
    by_source: Counter = field(default_factory=Counter)
    without: int = 0
    in_table: int = 0  # rows found in the table
    kept_in_table: int = 0  # ... and kept (their profiles are stamped when stamping)
    matched: set = field(default_factory=set)
    upstream_models: Counter = field(default_factory=Counter)

    def add(self, v: Verdict) -> None:
        self.judged += 1
        if v.source is None:
            self.without += 1
            self.upstream_models.update(v.upstream_models)
        else:
            self.by_source[v.source] += 1
        if v.key is not None:
            self.in_table += 1
            self.kept_in_table += v.dropped is None
            self.matched.add(v.key)

    def check(self, d: Difficulty) -> None:
        """Refuse evidence that is about other rows: a table none of whose questions is in the inputs, or
        upstream profiles of which none names the chosen model."""
        if not self.judged:
            return
        if d.table is not None and not self.matched:
            raise InputError(
                f"{d.table.path}: none of its {len(d.table.entries)} question(s) is among the {self.judged} valid "
                f"input row(s) (keyed by {d.table.key_by}): a table measured on other rows",
                reason="table_matches_no_rows",
                table=d.table.path,
            )
        f = d.filter
        if f is not None and f.evidence == EVIDENCE_UPSTREAM and not self.by_source:
            found = ", ".join(f"{m} ({n} row(s))" for m, n in self.upstream_models.most_common(10)) or "none"
            raise InputError(
                f"no input row has an upstream reward profile for model {d.model!r}; models found: {found}",
                reason="model_not_in_rows",
            )

    def to_dict(self, d: Difficulty) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rows_judged": self.judged,
            "rows_with_evidence": self.judged - self.without,
            "rows_without_evidence": self.without,
            "by_source": dict(sorted(self.by_source.items())),
        }
        if d.table is not None:
            out["rows_in_table"] = self.in_table
            out["table_questions"] = len(d.table.entries)
            out["table_questions_matched"] = len(self.matched)
        if d.stamp:
            out["rows_stamped"] = self.kept_in_table
        return out
