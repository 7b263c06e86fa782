"""Aggregate rescored files: accuracy, statuses, per-template accuracy and per-prompt pass rates, and the
pass-rate distribution per model and per template (0 / partial / 100% buckets and a 10-bin histogram over
prompts, evidence.distribution; the model as evidence.model_of says, "(unknown)" when a rollout names none).

Rows are pooled only when they were graded under one contract (metadata.grading.contract): numbers from
different grading semantics are not comparable, so mixing them is refused unless one contract is chosen.
Rows without metadata.grading are counted as unscored, never pooled; a scored row whose reward is not a
number in [0, 1] (NaN, a string) is counted as malformed, with its line, like a line that is not JSON. Streams: memory grows with the
number of distinct prompts and templates, not rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..counts import Tally
from ..errors import ContractMismatch, InputError
from ..evidence import PASS_THRESHOLD, distribution, model_of, reward_problem
from ..fields import NONE, grading_contract, grading_of, reward_of, template_id
from ..io.paths import distinct_inputs
from ..io.readers import iter_file
from ..prompt import prompt_key
from ..records import display_name

NO_MODEL = "(unknown)"
MAX_MALFORMED_REPORTED = 20


@dataclass
class _Pool:
    """Counts of the rows scored under one contract: scored, graded, invalid, mean reward and changed in the
    one definition every command shares (counts.py); templates and pass rates over graded rows only."""

    tally: Tally = field(default_factory=Tally)
    statuses: Counter = field(default_factory=Counter)
    gates: Counter = field(default_factory=Counter)
    boundaries: Counter = field(default_factory=Counter)
    templates: dict[str, list[float]] = field(default_factory=dict)  # id -> [rows, reward sum]
    prompts: dict[bytes, list[int]] = field(default_factory=dict)  # key -> [rows, passes]
    # model (template id) -> prompt key -> [rows, passes]
    by_model: dict[str, dict[bytes, list[int]]] = field(default_factory=dict)
    by_template: dict[str, dict[bytes, list[int]]] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return self.tally.scored

    def add(self, row: Mapping[str, Any], grading: Mapping[str, Any]) -> None:
        reward = float(row["reward"])  # (_grading: a row without a reward in [0, 1] is malformed)
        status = grading.get("status")
        self.statuses[status if isinstance(status, str) else "(unknown)"] += 1
        gate = grading.get("gate")
        if isinstance(gate, str):
            self.gates[gate] += 1
        boundary = grading.get("boundary")
        if isinstance(boundary, str):
            self.boundaries[boundary] += 1
        if not self.tally.add(status, reward, reward_of(grading.get("previous_reward"))):
            return  # invalid_row: not graded, so neither a template's accuracy nor evidence of a pass
        tid = template_id(row, grading) or NONE
        t = self.templates.setdefault(tid, [0, 0.0])
        t[0] += 1
        t[1] += reward
        key = prompt_key(row.get("responses_create_params")) or b""
        ok = reward >= PASS_THRESHOLD
        for counts in (
            self.prompts,
            self.by_model.setdefault(model_of(row) or NO_MODEL, {}),
            self.by_template.setdefault(tid, {}),
        ):
            p = counts.setdefault(key, [0, 0])
            p[0] += 1
            p[1] += ok

    def to_dict(self) -> dict[str, Any]:
        zero = partial = full = 0
        rate_sum = 0.0
        for n, passed in self.prompts.values():
            rate_sum += passed / n
            if passed == 0:
                zero += 1
            elif passed == n:
                full += 1
            else:
                partial += 1
        n_prompts = len(self.prompts)
        templates = {
            tid: {"rows": int(n), "accuracy": s / n}
            for tid, (n, s) in sorted(self.templates.items(), key=lambda kv: (-kv[1][0], kv[0]))
        }
        t = self.tally
        return {
            "rows": t.scored,
            "graded": t.graded,
            "invalid": t.invalid,
            "accuracy": t.mean_reward,  # over graded rows, as rescore's mean reward
            "reward_sum": t.reward_sum,
            "recorded": t.recorded,
            "changed": t.changed,
            "statuses": dict(sorted(self.statuses.items(), key=lambda kv: (-kv[1], kv[0]))),
            "gates": dict(sorted(self.gates.items())),
            "boundaries": dict(sorted(self.boundaries.items())),
            "templates": templates,
            "prompts": {
                "count": n_prompts,
                "mean_pass_rate": rate_sum / n_prompts if n_prompts else None,
                "pass_rate": {"0%": zero, "partial": partial, "100%": full},
            },
            "pass_rates": {
                "by_model": {
                    m: distribution(map(tuple, v.values()))  # type: ignore[arg-type]  # ([samples, passes])
                    for m, v in sorted(self.by_model.items())
                },
                "by_template": {
                    t: distribution(map(tuple, v.values()))  # type: ignore[arg-type]  # ([samples, passes])
                    for t, v in sorted(self.by_template.items())
                },
            },
        }


def _rescored_file(name: str) -> Path:
    p = Path(name)
    if p.is_dir():
        raise InputError(f"{name}: is a directory; give rescored JSONL files", reason="input_is_directory")
    return p


def _grading(rec: Any) -> tuple[Mapping[str, Any] | None, str | None]:
    """(the row's metadata.grading or None, why the row is malformed or None). A scored row whose reward is
    not one (NaN, a string) is malformed: pooled, it would poison every sum."""
    if rec.data is None:
        return None, rec.error or "no data"
    grading = grading_of(rec.data)
    if grading is None:
        return None, None
    return grading, reward_problem(rec.data.get("reward"))


def summarize(paths: Iterable[str | Path], contract: str | None = None) -> dict[str, Any]:
    """The summary report of rescored JSONL files.

    Raises ContractMismatch when the scored rows carry more than one contract and `contract` is None,
    or when `contract` matches none of them; InputError when a file is missing or no line could be read.
    """
    files = [str(p) for p in paths]
    if not files:
        raise InputError("no input files")
    distinct_inputs(files, "rescored file")
    shown = [display_name(f) for f in files]
    pools: dict[str, _Pool] = {}
    lines_read = unscored = malformed = 0
    malformed_lines: list[str] = []
    for name in files:
        for rec in iter_file(_rescored_file(name)):
            grading, error = _grading(rec)
            if error is not None:
                malformed += 1
                if len(malformed_lines) < MAX_MALFORMED_REPORTED:
                    malformed_lines.append(f"{display_name(rec.file)}:{rec.line}: {error}")
                continue
            lines_read += 1
            if grading is None:
                unscored += 1
                continue
            cid = grading_contract(grading) or NONE
            pool = pools.get(cid)
            if pool is None:
                pool = pools[cid] = _Pool()
            pool.add(rec.data, grading)  # type: ignore[arg-type]  # (_grading: a row without data is malformed)

    if lines_read == 0:
        where = f"; {malformed} malformed line(s), first: {malformed_lines[0]}" if malformed else ""
        raise InputError(f"nothing could be read from {', '.join(shown)}{where}", reason="no_rows")

    found = {cid: p.rows for cid, p in sorted(pools.items(), key=lambda kv: (-kv[1].rows, kv[0]))}
    listing = ", ".join(f"{cid} ({n} row(s))" for cid, n in found.items())
    if contract is not None:
        if contract not in pools:
            raise ContractMismatch(
                f"contract {contract} not found in the scored rows; found: {listing or 'none'}",
                expected=contract,
                reason="contract_not_found",
                contracts=found,
            )
        chosen: str | None = contract
    elif len(pools) > 1:
        raise ContractMismatch(
            f"refusing to pool rows graded under {len(pools)} different contracts: {listing}",
            reason="contracts_mixed",
            contracts=found,
        )
    else:
        chosen = next(iter(pools), None)

    if chosen is None:  # nothing was graded: a summary of nothing is not a success
        raise InputError(
            f"no scored rows in {', '.join(shown)}: {unscored} row(s) carry no metadata.grading",
            reason="no_scored_rows",
            unscored=unscored,
        )
    pool = pools[chosen]
    report: dict[str, Any] = {
        "files": shown,
        "contract": chosen,
        "contracts": found,
        "lines_read": lines_read,
        "scored": pool.rows,
        "unscored": unscored,
        "excluded_other_contracts": sum(p.rows for c, p in pools.items() if c != chosen),
        "malformed": {"count": malformed, "lines": malformed_lines},
    }
    report.update(pool.to_dict())
    del report["rows"]  # same as "scored"
    return report
