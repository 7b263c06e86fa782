"""`passrates`: per-question, per-model pass rates of graded rollouts, as a table that carries its contract.

A pass rate is evidence only under the grading contract it was measured under. So every counted rollout
must have been graded under one known contract: either by `rescore` before (its `metadata.grading.contract`)
or here, while measuring (`rescore=True`, with `rescore_rows.rescore_row` and the given policy). Rollouts
without a contract, rollouts under several contracts (unless one is chosen), rollouts whose model is not
known and rollouts that could not be graded are refused, each with its count and first examples; nothing is
dropped silently. A rollout of a prepared row edited after prepare (binding.py; kind `row_changed`) is one
that could not be graded: counted apart, never pooled into a pass rate.

Streams the rollouts (memory grows with questions x models, and with the optional join index); the table is
written atomically (passrate_table.write_table).
"""

from __future__ import annotations

import functools
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import binding
from .._perf import streaming_gc
from ..counts import is_graded
from ..errors import ContractMismatch, InputError, UsageError
from ..evidence import (
    KEY_BY,
    distribution,
    model_of,
    question_key,
    reward_problem,
    uuid_of,
)
from ..fields import grading_contract, grading_of, permutation_question
from ..io.hashing import check_unchanged, stamp
from ..io.paths import STDIN, check_output
from ..policy import GradingPolicy
from ..progress import Progress
from ..prompt import prompt_id, prompt_key
from ..records import Row, display_name
from ..runs import RunRequest
from .cells import UNKNOWN, PassPool, answer_of, counted, no_answer_shares
from .consistency import counts_doc, variant_of
from .estimate import Estimated, estimated
from .kmetrics import DEFAULT_NO_ANSWER, NO_ANSWER_RULES, counting_doc
from .positions import summary
from .posterior import DEFAULT_BUCKETS, DEFAULT_LEVEL, settings_doc
from .profile import profile_rollouts
from .reading import hash_inputs, read, reading_identity
from .table import write_table

ON_INVALID = ("fail", "reject")
ESTIMATE_GEN0 = 1 << 22  # allocations between two young-generation collections while estimating and writing
INVALID = "could not be graded"
EXAMPLES = 5


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

    def merge(self, other: Tally) -> None:
        """Fold in the rows of a later chunk, as adding them one by one."""
        self.count += other.count
        self.by_kind.update(other.by_kind)
        self.examples.extend(other.examples[: max(0, EXAMPLES - len(self.examples))])

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "by_kind": dict(sorted(self.by_kind.items())), "examples": self.examples}


@dataclass
class PassratesReport:
    """What `measure` wrote: the table's header, and what was left out (and why)."""

    output: str
    header: dict[str, Any]
    invalid: Tally
    input_contracts: dict[str, int]
    models: dict[str, dict[str, Any]]
    join: dict[str, Any] | None = None
    positions: dict[str, dict[str, Any]] = field(default_factory=dict)  # per model (positions.summary)

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
            "counting": h["counting"],
            "posterior": h["posterior"],
            "metrics": h["metrics"],
            "entries": h["entries"],
            "invalid": self.invalid.to_dict(),
            "input_contracts": self.input_contracts,
            "models": self.models,
            "join": self.join,
            "positions": self.positions,
        }


@dataclass
class Measurement:
    """Settings and state of one measurement: rollouts graded (or read as graded) into one pool per contract,
    and what was left out. `pool` makes a contract's pool (passrates counts passes; audit keeps answers); a
    pool's add() takes the extracted answer as cells.answer_of gives it (a letter, None or UNKNOWN)."""

    rescore: Any  # rescore_rows.Settings when rollouts are graded here, else None
    index: Any  # rescore.RowIndex or None
    default_model: str | None
    key_by: str
    pools: dict[str, Any] = field(default_factory=dict)
    pool: Callable[[str | None], Any] = PassPool  # makes a contract's pool (audit: AnswerPool)
    keep_graded: bool = False  # with rescore: a rollout that carries its contract is read as graded
    rows: int = 0
    invalid: Tally = field(default_factory=Tally)
    no_contract: Tally = field(default_factory=Tally)
    no_model: Tally = field(default_factory=Tally)
    input_contracts: Counter = field(default_factory=Counter)
    uuid_from_join: int = 0
    profile_contract: str | None = (
        None  # rows are NeMo Gym profile rows, graded under this (asserted) contract
    )

    def fresh(self) -> Measurement:
        """A measurement with these settings and nothing read: what one chunk's rollouts are read into."""
        return Measurement(
            self.rescore, self.index, self.default_model, self.key_by, pool=self.pool,
            keep_graded=self.keep_graded, profile_contract=self.profile_contract,
        )  # fmt: skip

    def absorb(self, part: Measurement) -> None:
        """Fold in what a later chunk's measurement read: the same state as reading its rows here."""
        self.rows += part.rows
        self.invalid.merge(part.invalid)
        self.no_contract.merge(part.no_contract)
        self.no_model.merge(part.no_model)
        self.input_contracts.update(part.input_contracts)
        self.uuid_from_join += part.uuid_from_join
        for cid, pool in part.pools.items():
            mine = self.pools.get(cid)
            if mine is None:
                self.pools[cid] = pool
            else:
                mine.merge(pool)

    def add(self, rec: Row) -> None:
        where = f"{_display(rec.file)}:{rec.line}"
        if rec.data is None:
            self.rows += 1
            self.invalid.add("unreadable", f"{where}: {rec.error}")
            return
        if self.profile_contract is not None:
            self._add_profile(rec.data, where)
            return
        self.rows += 1
        graded = self._graded(rec, where)
        if graded is None:
            return
        cid, reward, grader_version, answer = graded
        self._count(rec.data, where, cid, grader_version, [(reward, answer)])

    def _count(
        self, row: Mapping[str, Any], where: str, cid: str, gv: str | None, outcomes: list[tuple[float, Any]]
    ) -> None:
        model = model_of(row) or self.default_model
        if model is None:
            for _ in outcomes:
                self.no_model.add("no_model", where)
            return
        rcp = row.get("responses_create_params")
        pk = prompt_key(rcp)
        joined = self.index.rows.get(pk) if self.index is not None and pk is not None else None
        key = self._key(row, rcp, joined)
        if key is None:
            for _ in outcomes:
                self.invalid.add(
                    "no_prompt", f"{where}: no responses_create_params.input to name the question"
                )
            return
        pool = self.pools.get(cid)
        if pool is None:
            pool = self.pools[cid] = self.pool(gv)
        site = variant_of(row, joined, pk)  # its variant: prompt, gold position, option count
        for reward, answer in outcomes:
            pool.add(key, model, reward, answer, site)

    def _add_profile(self, data: Mapping[str, Any], where: str) -> None:
        """One `gym eval profile` row: its original row under `sample`, one reward per rollout."""
        sample, rewards, problem = profile_rollouts(data)
        if problem is not None:
            self.rows += 1
            self.invalid.add("profile_row", f"{where}: {problem}")
            return
        self.rows += len(rewards)
        assert self.profile_contract is not None and sample is not None
        self._count(sample, where, self.profile_contract, None, [(r, UNKNOWN) for r in rewards])

    def _graded(self, rec: Row, where: str) -> tuple[str, float, str | None, Any] | None:
        """(contract id, reward, grader version, extracted answer or UNKNOWN) of one rollout, or None when it
        was tallied as left out."""
        data: dict[str, Any] = rec.data  # type: ignore[assignment]  # (add() left out a row without data)
        if self.rescore is not None and not (self.keep_graded and grading_contract(grading_of(data))):
            from ..rescore.rows import rescore_row

            _, o = rescore_row(rec, self.rescore)
            if o.input_contract is not None:
                self.input_contracts[o.input_contract] += 1
            if not is_graded(o.status):  # counts.py: the one definition of a graded row
                self.invalid.add(o.problem or "invalid_row", f"{where} ({o.problem or 'invalid_row'})")
                return None
            return self.rescore.policy.contract_id(), o.reward, None, o.extracted or None
        grading = grading_of(data)
        cid = grading_contract(grading)
        if grading is None or cid is None:
            self.no_contract.add("no_contract", where)
            return None
        if binding.recorded(data) is not None:  # a stamped row edited after prepare is no evidence
            c = binding.check(data)
            if c.state == binding.CHANGED:
                self.invalid.add("row_changed", f"{where} (row_changed): {binding.describe(c)}")
                return None
        if not is_graded(grading.get("status")):
            self.invalid.add(
                "invalid_row", f"{where}: {grading.get('message') or 'not graded (invalid_row)'}"
            )
            return None
        reward: Any = data.get("reward")
        problem = reward_problem(reward)
        if problem is not None:
            self.invalid.add("reward", f"{where}: {problem}")
            return None
        gv = grading.get("grader_version")
        return cid, float(reward), gv if isinstance(gv, str) else None, answer_of(data)

    def _key(self, row: Mapping[str, Any], rcp: Any, joined: Mapping[str, Any] | None) -> str | None:
        """The question: its uuid; without one, the question it is one option order of (prepare --permute),
        its dataset row's uuid (the join), or its prompt."""
        uuid = uuid_of(row)
        if uuid is None and self.key_by == "uuid":
            q = permutation_question(row) or permutation_question(joined)
            if q is not None:
                return q
            if joined is not None:
                uuid = uuid_of(joined)
                self.uuid_from_join += uuid is not None
        if uuid is not None and self.key_by == "uuid":
            return question_key(uuid, None, self.key_by)  # the uuid names the question: no prompt digest
        return question_key(uuid, prompt_id(rcp), self.key_by)


# a file's name as outputs write it, once per file instead of once per rollout
_display = functools.lru_cache(maxsize=256)(display_name)


def _check_args(
    rollouts: Sequence[Any], key_by: str, on_invalid: str, rescore: bool, contract: Any, est: Estimate
) -> None:
    if not rollouts:
        raise UsageError("passrates needs at least one rollout file")
    if key_by not in KEY_BY:
        raise UsageError(f"key_by must be one of {', '.join(KEY_BY)}, got {key_by!r}")
    if on_invalid not in ON_INVALID:
        raise UsageError(f"on_invalid must be one of {', '.join(ON_INVALID)}, got {on_invalid!r}")
    est.check()
    if rescore and contract is not None:
        raise UsageError(
            "choosing a contract among the rollouts' contracts and rescoring them all under one policy "
            "exclude each other",
            reason="contract_with_rescore",
        )
    if est.profile and (rescore or contract is not None):
        raise UsageError(
            "NeMo Gym profile rows carry rewards, not responses or contracts: they are neither rescored nor "
            "chosen by contract (the policy given states the contract they were graded under)",
            reason="profile_with_rescore",
        )
    for r in rollouts:
        if str(r) == STDIN:
            raise UsageError(
                "rollouts cannot be read from stdin: the table records every input's hash", reason="no_stdin"
            )


@dataclass(frozen=True)
class Estimate:
    """How rollouts are counted and estimated: the no_answer rule, the credible level, the number of buckets,
    and whether the inputs are NeMo Gym `gym eval profile` rows."""

    no_answer: str = DEFAULT_NO_ANSWER
    level: float = DEFAULT_LEVEL
    buckets: int = DEFAULT_BUCKETS
    profile: bool = False

    def check(self) -> None:
        if self.no_answer not in NO_ANSWER_RULES:
            raise UsageError(f"no_answer must be one of {', '.join(NO_ANSWER_RULES)}, got {self.no_answer!r}")
        if not 0.5 <= self.level < 1.0:
            raise UsageError(f"credible level must be in [0.5, 1), got {self.level}", reason="bad_level")
        if not 2 <= self.buckets <= 20:
            raise UsageError(f"buckets must be 2..20, got {self.buckets}", reason="bad_buckets")
        if self.profile and self.no_answer == "exclude":
            raise UsageError(
                "NeMo Gym profile rows do not say which rollouts answered: they can only be counted with "
                "no_answer=fail",
                reason="profile_no_answer",
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
    estimate_with: Estimate = Estimate(),
    progress: Progress | None = None,
    how: RunRequest | None = None,
) -> PassratesReport:
    """Measure per-question pass rates of `rollouts` and write the table to `output`.

    `how` (runs.RunRequest) says how the rollouts are read (workers, engine, resume); by default in this
    process.

    rescore=True grades every rollout under `policy` (default: the built-in policy). Otherwise the rollouts
    must carry the contract they were graded under; `contract` chooses one when they carry several, and
    `policy`, when given, is the policy they were graded under (its contract id must be theirs), so that the
    table records the full contract and not only its id. `rows_paths` are dataset rows joined by prompt: they
    give rollouts their options (for grading) and their uuid (for the key). `default_model` names the model of
    rollouts that do not say. on_invalid='reject' leaves rows that cannot be graded out (counted in the table).
    `estimate_with` says how rollouts are counted (the no_answer rule) and estimated (credible level, buckets),
    and whether the inputs are NeMo Gym profile rows (graded by NeMo Gym: `policy`, or the built-in one, states
    the contract they were graded under)."""
    est = estimate_with
    _check_args(rollouts, key_by, on_invalid, rescore, contract, est)
    check_output(output, [*rollouts, *(rows_paths or [])])
    if policy is not None:
        policy.check()
    index, join_inputs = _join_index(rows_paths, progress)
    run = Measurement(None, index, default_model, key_by)
    if rescore:
        from ..rescore.rows import Settings

        run.rescore = Settings(policy or GradingPolicy(), index.rows if index is not None else None)
    if est.profile:
        run.profile_contract = (policy or GradingPolicy()).contract_id()
    how = how or RunRequest(tuple(rollouts), output)
    job = ("passrates", {"join_inputs": join_inputs})
    got = gather(rollouts, run, contract=contract, on_invalid=on_invalid, progress=progress, how=how, job=job)
    # tens of thousands of entries, none in a cycle, each some ten containers alive until the table is written:
    # the rollouts read frozen, no young-generation collection runs over the entries for nothing (they are
    # freed when _tabulate returns, before the collector's thresholds are back)
    with streaming_gc(ESTIMATE_GEN0):
        return _tabulate(output, got, policy, rescore, est, key_by, index, join_inputs)


def _tabulate(
    output: str | os.PathLike, got: Gathered, policy: GradingPolicy | None, rescore: bool, est: Estimate,
    key_by: str, index: Any, join_inputs: list[dict[str, Any]],
) -> PassratesReport:  # fmt: skip
    """The table of the rollouts `gather` read, written to `output`, and what it holds (measure's second half)."""
    run, cid, pool, inputs = got.run, got.contract_id, got.pool, got.inputs
    contract_doc, grader_version = _contract_of(cid, pool, policy, rescore or est.profile)
    cells, left = counted(pool, est.no_answer)
    e = estimated(cells, pool.variants.counted(est.no_answer), est.no_answer, est.level, est.buckets)
    metrics = e.metrics
    for model, share in no_answer_shares(pool).items():  # every rollout, the ones a rule leaves out included
        if model in metrics:
            metrics[model]["no_answer"] = share
    header = {
        "contract_id": cid,
        "contract": contract_doc,
        "grader_version": grader_version,
        "key_by": key_by,
        "pass_threshold": 1.0,
        "grading": "nemo_gym_profile" if est.profile else "rescored" if rescore else "input",
        "counting": counting_doc(est.no_answer),
        "posterior": settings_doc(est.level, est.buckets, e.priors),
        "metrics": metrics,
        "inputs": inputs,
        "join_inputs": join_inputs,
        "counts": _counts(run, cid, pool, e, left),
        "consistency": counts_doc(e.with_k, e.with_variants, est.buckets, e.priors_by_k),
    }
    written = write_table(output, header, e.entries, e.shapes)
    join = None
    if index is not None:
        join = {**index.summary(), "uuid_from_join": run.uuid_from_join}
    positions = {m: summary(es) for m, es in e.per_model.items()}
    return PassratesReport(
        str(output),
        written,
        run.invalid,
        dict(run.input_contracts),
        {m: distribution(v) for m, v in sorted(e.pairs.items())},
        join,
        positions,
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
    how: RunRequest | None = None,
    job: tuple[str, dict[str, Any]] = ("passrates", {}),
) -> Gathered:
    """Read every rollout into `run` (hashing the files first, refusing one written to meanwhile), then choose
    the one contract they were graded under: refused when they are under several (unless `contract` picks
    one), carry none, name no model, or could not be graded (on_invalid 'fail'). `measure` and `audit`'s
    wrong-key analysis both count evidence this way. The rollouts are read on the engine as `how` says
    (runs.RunRequest: workers, engine, resume; its output places the run's work directory), as the job
    (command name, what else makes it this job) `job` names."""
    from ..sources import resolve

    files = resolve(
        rollouts,
        progress=progress,
        allow_stdin=False,
        reread="the table records every input's hash, then the rollouts are read",
        what="rollout file",
    ).sources
    stamps = {str(f.path): stamp(f.path) for f in files}
    inputs = hash_inputs(files, progress, "hash rollouts")
    how = how or RunRequest(tuple(str(f.path) for f in files))
    command, identity = job
    read(run, files, progress, how, command, {**identity, **reading_identity(run), "inputs": inputs})
    check_unchanged(stamps)
    cid, pool = _choose(run, contract, on_invalid)
    return Gathered(run, cid, pool, inputs)


def _join_index(rows_paths: Sequence[Any], progress: Progress | None) -> tuple[Any, list[dict[str, Any]]]:
    if not rows_paths:
        return None, []
    from ..rescore.index import RowIndex
    from ..sources import resolve

    sources = resolve(
        rows_paths,
        progress=progress,
        allow_stdin=False,
        reread="the table records the dataset rows' hashes, then reads them",
        what="dataset file",
    ).sources
    hashes = hash_inputs(sources, progress, "hash dataset rows")
    return RowIndex.from_sources(sources, EXAMPLES), hashes


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
    cid: str, pool: Any, policy: GradingPolicy | None, rescore: bool
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


def _counts(run: Measurement, cid: str, pool: PassPool, e: Estimated, left: int) -> dict[str, Any]:
    return {
        "rollouts": run.rows,
        "used": pool.rows,
        "invalid": run.invalid.count,
        "other_contracts": sum(p.rows for c, p in run.pools.items() if c != cid),
        "questions": sum(e.keys_by_kind.values()),
        "keys_by_kind": e.keys_by_kind,
        "models": {m: len(v) for m, v in sorted(e.pairs.items())},
        "unanswered_only": left,
        "answers_unknown": pool.unknown,
    }
