"""`passrates`: per-question, per-model pass rates of graded rollouts, as a table that carries its contract.

A pass rate is evidence only under the grading contract it was measured under. So every counted rollout
must have been graded under one known contract: either by `rescore` before (its `metadata.grading.contract`)
or here, while measuring (`rescore=True`, with `rescore_rows.rescore_row` and the given policy). Rollouts
without a contract, rollouts under several contracts (unless one is chosen), rollouts whose model is not
known and rollouts that could not be graded are refused, each with its count and first examples; nothing is
dropped silently.

Streams the rollouts (memory grows with questions x models, and with the optional join index); the table is
written atomically (passrate_table.write_table).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ContractMismatch, InputError, UsageError
from ..evidence import KEY_BY, distribution, key_kind, model_of, passed, question_key, reward_problem, uuid_of
from ..io.hashing import check_unchanged, sha256_file, stamp
from ..io.paths import STDIN, check_output, require_regular
from ..io.readers import iter_file
from ..policy import GradingPolicy
from ..prompt import prompt_id, prompt_key
from ..records import STATUS_INVALID_ROW, Row, display_name
from .table import write_table

ON_INVALID = ("fail", "skip")
INVALID = "could not be graded"
EXAMPLES = 5
Progress = Callable[..., Any]


@dataclass
class Tally:
    """Rows of one kind (invalid, without contract, without model): how many, and where the first ones are."""

    count: int = 0
    by_kind: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    def add(self, kind: str, example: str) -> None:
        self.count += 1
        self.by_kind[kind] += 1
        if len(self.examples) < EXAMPLES:
            self.examples.append(example)

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "by_kind": dict(sorted(self.by_kind.items())), "examples": self.examples}


@dataclass
class _Pool:
    """The rollouts graded under one contract: (key, model) -> [samples, passes, reward sum]."""

    grader_version: str | None = None
    rows: int = 0
    cells: dict[tuple[str, str], list] = field(default_factory=dict)

    def add(self, key: str, model: str, reward: float, answer: str | None = None) -> None:
        self.rows += 1
        cell = self.cells.get((key, model))
        if cell is None:
            cell = self.cells[(key, model)] = [0, 0, 0.0]
        cell[0] += 1
        cell[1] += passed(reward)
        cell[2] += reward


@dataclass
class PassratesReport:
    """What `measure` wrote: the table's header, and what was left out (and why)."""

    output: str
    header: dict[str, Any]
    invalid: Tally
    input_contracts: dict[str, int]
    models: dict[str, dict[str, Any]]
    join: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        h = self.header
        return {
            "output": self.output,
            "table_schema": h["table_schema"],
            "content_sha256": h["content_sha256"],
            "contract_id": h["contract_id"],
            "contract_known": h["contract"] is not None,
            "grader_version": h["grader_version"],
            "key_by": h["key_by"],
            "grading": h["grading"],
            "counts": h["counts"],
            "entries": h["entries"],
            "invalid": self.invalid.to_dict(),
            "input_contracts": self.input_contracts,
            "models": self.models,
            "join": self.join,
        }


@dataclass
class Measurement:
    """Settings and state of one measurement: rollouts graded (or read as graded) into one pool per contract,
    and what was left out. `pool` makes a contract's pool (passrates counts passes; audit keeps answers)."""

    rescore: Any  # rescore_rows.Settings when rollouts are graded here, else None
    index: Any  # rescore.RowIndex or None
    default_model: str | None
    key_by: str
    pools: dict[str, Any] = field(default_factory=dict)
    pool: Callable[[str | None], Any] = _Pool  # a pool of one contract's rollouts (audit keeps the answers)
    keep_graded: bool = False  # with rescore: a rollout that carries its contract is read as graded
    rows: int = 0
    invalid: Tally = field(default_factory=Tally)
    no_contract: Tally = field(default_factory=Tally)
    no_model: Tally = field(default_factory=Tally)
    input_contracts: Counter = field(default_factory=Counter)
    uuid_from_join: int = 0

    def add(self, rec: Row) -> None:
        self.rows += 1
        where = f"{display_name(rec.file)}:{rec.line}"
        if rec.data is None:
            self.invalid.add("unreadable", f"{where}: {rec.error}")
            return
        graded = self._graded(rec, where)
        if graded is None:
            return
        cid, reward, grader_version, answer = graded
        model = model_of(rec.data) or self.default_model
        if model is None:
            self.no_model.add("no_model", where)
            return
        key = self._key(rec.data)
        if key is None:
            self.invalid.add("no_prompt", f"{where}: no responses_create_params.input to name the question")
            return
        pool = self.pools.get(cid)
        if pool is None:
            pool = self.pools[cid] = self.pool(grader_version)
        pool.add(key, model, reward, answer)

    def _graded(self, rec: Row, where: str) -> tuple[str, float, str | None, str | None] | None:
        """(contract id, reward, grader version, extracted answer) of one rollout, or None when it was tallied
        as left out."""
        if self.rescore is not None and not (self.keep_graded and _carries_contract(rec.data)):
            from ..rescore.rows import rescore_row

            _, o = rescore_row(rec, self.rescore)
            if o.input_contract is not None:
                self.input_contracts[o.input_contract] += 1
            if o.status == STATUS_INVALID_ROW:
                self.invalid.add(o.problem or "invalid_row", f"{where} ({o.problem or 'invalid_row'})")
                return None
            return self.rescore.policy.contract_id(), o.reward, None, o.extracted
        meta = rec.data.get("metadata")
        grading = meta.get("grading") if isinstance(meta, Mapping) else None
        cid = grading.get("contract") if isinstance(grading, Mapping) else None
        if not isinstance(cid, str) or not cid:
            self.no_contract.add("no_contract", where)
            return None
        if grading.get("status") == STATUS_INVALID_ROW:
            self.invalid.add(
                "invalid_row", f"{where}: {grading.get('message') or 'not graded (invalid_row)'}"
            )
            return None
        reward = rec.data.get("reward")
        problem = reward_problem(reward)
        if problem is not None:
            self.invalid.add("reward", f"{where}: {problem}")
            return None
        gv = grading.get("grader_version")
        answer = rec.data.get("extracted_answer")
        return (
            cid,
            float(reward),
            gv if isinstance(gv, str) else None,
            answer if isinstance(answer, str) else None,
        )

    def _key(self, row: Mapping[str, Any]) -> str | None:
        rcp = row.get("responses_create_params")
        uuid = uuid_of(row)
        if uuid is None and self.key_by == "uuid" and self.index is not None:
            ds = self.index.rows.get(prompt_key(rcp))
            uuid = uuid_of(ds) if ds is not None else None
            self.uuid_from_join += uuid is not None
        return question_key(uuid, prompt_id(rcp), self.key_by)


def _carries_contract(row: Mapping[str, Any]) -> bool:
    meta = row.get("metadata")
    grading = meta.get("grading") if isinstance(meta, Mapping) else None
    return isinstance(grading, Mapping) and isinstance(grading.get("contract"), str)


# ---- inputs ----------------------------------------------------------------------------------------------


def _hash(paths: Sequence[Any], progress: Progress | None, desc: str) -> list[dict[str, Any]]:
    """{name, sha256, bytes} of each file, before any row is read."""
    if not paths:
        return []
    bar = (
        progress(total=sum(Path(p.path).stat().st_size for p in paths), desc=desc, unit="B")
        if progress
        else None
    )
    out = []
    try:
        for p in paths:
            digest, size, _ = sha256_file(p.path, bar.update if bar is not None else None)
            out.append({"name": display_name(p.name), "sha256": digest, "bytes": size})
    finally:
        if bar is not None:
            bar.close()
    return out


def _check_args(
    rollouts: Sequence[Any], output: Any, key_by: str, on_invalid: str, rescore: bool, contract: Any
) -> None:
    if not rollouts:
        raise UsageError("passrates needs at least one rollout file")
    if key_by not in KEY_BY:
        raise UsageError(f"key_by must be one of {', '.join(KEY_BY)}, got {key_by!r}")
    if on_invalid not in ON_INVALID:
        raise UsageError(f"on_invalid must be one of {', '.join(ON_INVALID)}, got {on_invalid!r}")
    if rescore and contract is not None:
        raise UsageError(
            "choosing a contract among the rollouts' contracts and rescoring them all under one policy "
            "exclude each other",
            reason="contract_with_rescore",
        )
    for r in rollouts:
        if str(r) == STDIN:
            raise UsageError(
                "rollouts cannot be read from stdin: the table records every input's hash", reason="no_stdin"
            )


# ---- the workflow ---------------------------------------------------------------------------------------


def measure(
    rollouts: Sequence[str | os.PathLike],
    output: str | os.PathLike,
    policy: GradingPolicy | None = None,
    *,
    rescore: bool = False,
    contract: str | None = None,
    rows_paths: Sequence[str | os.PathLike] = (),
    default_model: str | None = None,
    key_by: str = "uuid",
    on_invalid: str = "fail",
    progress: Progress | None = None,
) -> PassratesReport:
    """Measure per-question pass rates of `rollouts` and write the table to `output`.

    rescore=True grades every rollout under `policy` (default: the built-in policy). Otherwise the rollouts
    must carry the contract they were graded under; `contract` chooses one when they carry several, and
    `policy`, when given, is the policy they were graded under (its contract id must be theirs), so that the
    table records the full contract and not only its id. `rows_paths` are dataset rows joined by prompt: they
    give rollouts their options (for grading) and their uuid (for the key). `default_model` names the model of
    rollouts that do not say. on_invalid='skip' leaves rows that cannot be graded out (counted in the table)."""
    _check_args(rollouts, output, key_by, on_invalid, rescore, contract)
    check_output(output, [*rollouts, *(rows_paths or [])])
    if policy is not None:
        policy.check()
    index, join_inputs = _join_index(rows_paths, progress)
    run = Measurement(None, index, default_model, key_by)
    if rescore:
        from ..rescore.rows import Settings

        run.rescore = Settings(policy or GradingPolicy(), index.rows if index is not None else None)
    got = gather(rollouts, run, contract=contract, on_invalid=on_invalid, progress=progress)
    cid, pool, inputs = got.contract_id, got.pool, got.inputs
    contract_doc, grader_version = _contract_of(cid, pool, policy, rescore)
    header = {
        "contract_id": cid,
        "contract": contract_doc,
        "grader_version": grader_version,
        "key_by": key_by,
        "pass_threshold": 1.0,
        "grading": "rescored" if rescore else "input",
        "inputs": inputs,
        "join_inputs": join_inputs,
        "counts": _counts(run, cid, pool),
    }
    entries = [(k, m, c[0], c[1], c[2]) for (k, m), c in pool.cells.items()]
    written = write_table(output, header, entries)
    join = None
    if index is not None:
        join = {**index.summary(), "uuid_from_join": run.uuid_from_join}
    return PassratesReport(
        str(output), written, run.invalid, dict(run.input_contracts), _model_distributions(pool), join
    )


@dataclass
class Gathered:
    """Rollouts read, graded under one contract and chosen: the run (what was left out, and why), the contract
    id and its pool, and the rollout files' hashes."""

    run: Measurement
    contract_id: str
    pool: Any
    inputs: list[dict[str, Any]]


def gather(
    rollouts: Sequence[str | os.PathLike],
    run: Measurement,
    *,
    contract: str | None = None,
    on_invalid: str = "fail",
    progress: Progress | None = None,
) -> Gathered:
    """Read every rollout into `run` (hashing the files first, refusing one written to meanwhile), then choose
    the one contract they were graded under: refused when they are under several (unless `contract` picks
    one), carry none, name no model, or could not be graded (on_invalid 'fail'). `measure` and `audit`'s
    wrong-key analysis both count evidence this way."""
    from ..sources import resolve

    files = resolve(rollouts, progress=progress, allow_stdin=False).sources
    for f in files:
        require_regular(f.path, "the table records every input's hash, then the rollouts are read")
    stamps = {str(f.path): stamp(f.path) for f in files}
    inputs = _hash(files, progress, "hash rollouts")
    _read(run, files, progress)
    check_unchanged(stamps)
    cid, pool = _choose(run, contract, on_invalid)
    return Gathered(run, cid, pool, inputs)


def _join_index(rows_paths: Sequence[Any], progress: Progress | None) -> tuple[Any, list[dict[str, Any]]]:
    if not rows_paths:
        return None, []
    from ..rescore.run import RowIndex
    from ..sources import resolve

    sources = resolve(rows_paths, progress=progress, allow_stdin=False).sources
    hashes = _hash(sources, progress, "hash dataset rows")
    return RowIndex.from_sources(sources, EXAMPLES), hashes


def _read(run: Measurement, files: Sequence[Any], progress: Progress | None) -> None:
    bar = progress(total=None, desc="passrates", unit="row") if progress is not None else None
    try:
        for f in files:
            for rec in iter_file(f.path, split=f.split):
                run.add(rec)
                if bar is not None:
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()


def _refuse(tally: Tally, total: int, what: str, reason: str, **details: Any) -> InputError:
    kinds = ", ".join(f"{k}: {n}" for k, n in sorted(tally.by_kind.items()))
    kinds = f" ({kinds})" if what == INVALID else ""
    return InputError(
        f"{tally.count} of {total} rollout(s) {what}{kinds}; first: {'; '.join(tally.examples[:3])}",
        reason=reason,
        count=tally.count,
        by_kind=dict(tally.by_kind),
        examples=tally.examples,
        **details,
    )


def _choose(run: Measurement, contract: str | None, on_invalid: str) -> tuple[str, Any]:
    """The contract whose rollouts make the table (refusing every case where that is not clear)."""
    if run.rows == 0:
        raise InputError("no rollouts to measure: the inputs hold no rows", reason="no_rows")
    if run.invalid.count and on_invalid == "fail":
        raise _refuse(run.invalid, run.rows, INVALID, "invalid_rollouts")
    if run.no_contract.count:
        raise _refuse(
            run.no_contract,
            run.rows,
            "carry no grading contract (metadata.grading.contract): pass rates are only measured on rollouts "
            "graded under a known contract",
            "rollouts_without_contract",
        )
    if run.no_model.count:
        raise _refuse(
            run.no_model,
            run.rows,
            "name no model (responses_create_params.model or response.model)",
            "rollout_model_unknown",
        )
    found = {cid: p.rows for cid, p in sorted(run.pools.items(), key=lambda kv: (-kv[1].rows, kv[0]))}
    listing = ", ".join(f"{cid} ({n} rollout(s))" for cid, n in found.items())
    if contract is not None:
        if contract not in run.pools:
            raise ContractMismatch(
                f"contract {contract} not found in the rollouts; found: {listing or 'none'}",
                expected=contract,
                reason="contract_not_found",
                contracts=found,
            )
        return contract, run.pools[contract]
    if len(run.pools) > 1:
        raise ContractMismatch(
            f"refusing to measure pass rates across {len(run.pools)} grading contracts: {listing}",
            reason="contracts_mixed",
            contracts=found,
        )
    if not run.pools:
        raise InputError(
            f"no rollout could be counted ({run.invalid.count} could not be graded)", reason="no_rows"
        )
    return next(iter(run.pools.items()))


def _contract_of(
    cid: str, pool: _Pool, policy: GradingPolicy | None, rescore: bool
) -> tuple[dict | None, str | None]:
    """The full contract behind `cid` when a policy (given, or the built-in one) has it; else None."""
    if rescore or policy is not None:
        p = policy or GradingPolicy()
        if p.contract_id() != cid:
            raise ContractMismatch(
                f"the rollouts were graded under contract {cid}, but the given policy's contract is "
                f"{p.contract_id()}",
                expected=p.contract_id(),
                found=cid,
                reason="rollouts_contract",
            )
        c = p.contract()
        return c, c["grader_version"]
    default = GradingPolicy()
    if default.contract_id() == cid:
        c = default.contract()
        return c, c["grader_version"]
    return None, pool.grader_version


def _counts(run: Measurement, cid: str, pool: _Pool) -> dict[str, Any]:
    keys = {k for k, _ in pool.cells}
    kinds = Counter(key_kind(k) for k in keys)
    return {
        "rollouts": run.rows,
        "used": pool.rows,
        "invalid": run.invalid.count,
        "other_contracts": sum(p.rows for c, p in run.pools.items() if c != cid),
        "questions": len(keys),
        "keys_by_kind": dict(sorted(kinds.items())),
        "models": dict(sorted(Counter(m for _, m in pool.cells).items())),
    }


def _model_distributions(pool: _Pool) -> dict[str, dict[str, Any]]:
    by_model: dict[str, list[tuple[int, int]]] = {}
    for (_, model), c in pool.cells.items():
        by_model.setdefault(model, []).append((c[0], c[1]))
    return {m: distribution(v) for m, v in sorted(by_model.items())}
