"""`audit`: one streaming pass over a dataset for contamination, duplicates, wrong keys and position bias.

Before any dataset row is read: the benchmark files are read and indexed (benchmarks.py), the rollouts are
read under one contract (keys.py, through passrates.measure.gather), and instruction sentences are learned
from the first rows (text.Boilerplate). Then the dataset is cut into chunks (parallel.chunks_of) that worker
processes parse and check (`audit_chunk`: the benchmark index was built before they were forked); the parent
folds their results in input order (`Fold`): the duplicate index (fixed bytes per row), the gold balance per
option count (validate's CrossRow), the wrong-key analysis. Memory: the benchmark index, the rollouts' answer
pool and the duplicate index; never the dataset's rows.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .._perf import streaming_gc
from ..engine import Job, Shard
from ..engine import run as run_job
from ..errors import InputError, UsageError
from ..evidence import UUID_PREFIX, row_keys
from ..fields import permutation_question
from ..io.paths import STDIN
from ..io.readers import iter_file
from ..parallel import Chunk, InputMeter
from ..policy import GradingPolicy
from ..progress import Progress
from ..records import Row, display_name
from ..runs import RunRequest
from ..validate.crossrow import CrossRow
from . import features as ft
from .benchmarks import SHINGLE, BenchIndex, Mapping, benchmarks_of
from .contamination import Contamination, Settings
from .duplicates import ChunkKeys, DuplicateIndex, chunk_keys
from .keys import AnswerPool, KeyAudit, KeySettings
from .orders import option_orders
from .text import Boilerplate, Parsed, RowText

ON_INVALID = ("fail", "reject")


@dataclass(frozen=True)
class Request:
    """What to audit and how (every check but duplicates needs its own input)."""

    against: tuple[str, ...] = ()
    mapping: Mapping = Mapping()
    contamination: Settings = Settings()
    duplicates: bool = True
    dup_similarity: float = 0.7
    rollouts: tuple[str, ...] = ()
    policy: GradingPolicy | None = None
    contract: str | None = None
    default_model: str | None = None
    keys: KeySettings = KeySettings()
    on_invalid: str = "fail"
    pass_rates: tuple[str, ...] = ()  # tables across option orders (orders.py)
    drift: tuple[str, str] | None = None  # two tables: the letter-prior drift

    def check(self) -> None:
        self.contamination.check()
        if not 0.0 < self.dup_similarity <= 1.0:
            raise UsageError(
                f"duplicate similarity must be in (0, 1], got {self.dup_similarity}",
                reason="bad_audit_setting",
            )
        if self.keys.min_rollouts < 1 or not 0.0 < self.keys.min_agreement <= 1.0:
            raise UsageError(
                "min_rollouts must be >= 1 and min_agreement in (0, 1]", reason="bad_audit_setting"
            )
        if self.on_invalid not in ON_INVALID:
            raise UsageError(f"on_invalid must be one of {', '.join(ON_INVALID)}, got {self.on_invalid!r}")
        if self.keys.key_by not in ("uuid", "prompt"):
            raise UsageError(f"key_by must be uuid or prompt, got {self.keys.key_by!r}")


class State(NamedTuple):
    """What every worker needs (inherited by fork)."""

    text: RowText
    contamination: Contamination | None
    duplicates: bool
    key_by: str | None


class ChunkResult(NamedTuple):
    """A worker's findings on one chunk, as columns."""

    lines: list[int]
    unreadable: list[tuple[int, str]]
    uuids: list[str | None]
    golds: list[str | None]
    letters: list[str]
    contaminated: dict[int, list[dict[str, Any]]]
    keys: ChunkKeys | None
    rollout_keys: list[list[str]] | None


def audit_work(chunk: Chunk, state: State) -> ChunkResult:
    """The engine's per-chunk work (mcqa_prep.engine): `audit_chunk`."""
    return audit_chunk(state, chunk)


def audit_chunk(state: State, chunk: Chunk) -> ChunkResult:
    """Parse and check one chunk's rows (in a worker)."""
    lines: list[int] = []
    unreadable: list[tuple[int, str]] = []
    parsed: list[Parsed | None] = []
    uuids: list[str | None] = []
    orders: list[bool] = []  # the row is one option order of its uuid's question (prepare --permute)
    rkeys: list[list[str]] | None = [] if state.key_by else None
    for rec in chunk.rows():
        lines.append(rec.line)
        p = _parse(state.text, rec)
        if p is None:
            unreadable.append((rec.line, rec.error or "not an object"))
        parsed.append(p)
        u = rec.data.get("uuid") if isinstance(rec.data, dict) else None
        uuids.append(None if u is None or isinstance(u, (dict, list)) else str(u))
        orders.append(uuids[-1] is not None and permutation_question(rec.data) == UUID_PREFIX + uuids[-1])
        if rkeys is not None:
            rkeys.append(row_keys(rec.data, state.key_by) if p is not None else [])  # type: ignore[arg-type]
    live = [i for i, p in enumerate(parsed) if p is not None]
    docs = [[parsed[i].question, *parsed[i].options] for i in live]  # type: ignore[union-attr]
    lay = ft.layout(docs)  # the words once, for the bigrams and the n-grams
    feats, offs = ft.kgrams(lay, SHINGLE, short=True)
    contaminated: dict[int, list[dict[str, Any]]] = {}
    if state.contamination is not None and live:
        found = state.contamination.check([parsed[i] for i in live], docs, feats, offs, lay)  # type: ignore[misc]
        contaminated = {live[r]: ms for r, ms in found.items()}
    keys = _dup_keys(parsed, live, uuids, orders, feats, offs) if state.duplicates else None
    golds = [p.gold if p is not None else None for p in parsed]
    letters = ["".join(p.letters) if p is not None else "" for p in parsed]
    return ChunkResult(lines, unreadable, uuids, golds, letters, contaminated, keys, rkeys)


def _parse(text: RowText, rec: Row) -> Parsed | None:
    if not isinstance(rec.data, dict):
        return None
    return text.parse(rec.data, rec.hint)


def _dup_keys(
    parsed: list[Parsed | None],
    live: list[int],
    uuids: list[str | None],
    orders: list[bool],
    feats: Any,
    offs: Any,
) -> ChunkKeys:
    import numpy as np

    counts = np.diff(offs)
    keep = [r for r, i in enumerate(live) if counts[r] > 0]
    ordered, unordered = [], []
    for r in keep:
        p = parsed[live[r]]
        q = " ".join(p.question)  # type: ignore[union-attr]
        opts = [" ".join(o) for o in p.options]  # type: ignore[union-attr]
        ordered.append(ft.text_key([q, *opts]))
        unordered.append(ft.text_key([q, *sorted(opts)]))
    sigs = ft.signatures(feats, offs)[keep] if keep else np.zeros((0, ft.NUM_PERM), dtype=np.uint32)
    return chunk_keys(
        [live[r] for r in keep],
        ordered,
        unordered,
        sigs,
        [uuids[live[r]] or "" for r in keep],
        [orders[live[r]] for r in keep],
    )


EXAMPLES = 5


@dataclass
class Fold:
    """The parent's fold over chunk results, in input order."""

    bench: BenchIndex | None
    dups: DuplicateIndex | None
    keys: KeyAudit | None
    rows: int = 0
    unreadable: int = 0
    unreadable_examples: list[str] = field(default_factory=list)
    per_input: Counter = field(default_factory=Counter)
    contaminated: list[dict[str, Any]] = field(default_factory=list)
    by_method: Counter = field(default_factory=Counter)
    by_benchmark: Counter = field(default_factory=Counter)
    balance: dict[int, CrossRow] = field(default_factory=dict)
    option_counts: Counter = field(default_factory=Counter)

    def add(self, chunk: Chunk, res: ChunkResult) -> None:
        file = display_name(chunk.file)
        n = len(res.lines)
        self.rows += n
        self.per_input[(file, chunk.split)] += n
        for line, error in res.unreadable:
            self.unreadable += 1
            if len(self.unreadable_examples) < EXAMPLES:
                self.unreadable_examples.append(f"{file}:{line}: {error}")
        for (gold, letters), k in Counter(zip(res.golds, res.letters, strict=True)).items():
            if letters:
                self.option_counts[len(letters)] += k
            if gold is not None:
                cr = self.balance.get(len(letters))
                if cr is None:
                    cr = self.balance[len(letters)] = CrossRow()
                cr.count_gold(gold, tuple(letters), k)
        for i, matches in res.contaminated.items():
            self._contaminated(file, chunk.split, res.lines[i], res.uuids[i], matches)
        if self.dups is not None and res.keys is not None:
            self.dups.add(file, chunk.split, res.lines, res.keys)
        if self.keys is not None and res.rollout_keys is not None:
            for i, keys in enumerate(res.rollout_keys):
                if keys:
                    where = {"file": file, "line": res.lines[i], "split": chunk.split, "uuid": res.uuids[i]}
                    self.keys.add(keys, res.golds[i], list(res.letters[i]), where)

    def _contaminated(self, file: str, split: str | None, line: int, uuid: str | None, matches: list) -> None:
        assert self.bench is not None
        shown = []
        for m in matches:
            where = self.bench.where(m["item"])
            shown.append({"benchmark": where, **{k: v for k, v in m.items() if k != "item"}})
            for b in benchmarks_of(where):
                self.by_benchmark[b] += 1
        for method in {x for m in matches for x in m["methods"]}:
            self.by_method[method] += 1
        self.contaminated.append(
            {"row": {"file": file, "line": line, "split": split, "uuid": uuid}, "matches": shown}
        )


def audit(
    data: Sequence[str | os.PathLike],
    request: Request = Request(),
    *,
    workers: int | None = 1,
    progress: Progress | None = None,
    allow_stale: bool = False,
    run: RunRequest | None = None,
) -> dict[str, Any]:
    """Audit the dataset rows of `data` (files, directories, pulled or prepared directories) and return the
    audit document (document.py). `run` (runs.RunRequest), when given, says how the rows are run instead of
    `workers` (workers, engine, resume). UsageError / InputError / ContractMismatch as the inputs deserve.
    `allow_stale`: a preparation of another preparation or grader version is audited (listed in the
    document's `stale_preparations`) instead of refused."""
    from ..sources import resolve
    from . import benchmarks, document

    request.check()
    if not data:
        raise UsageError("audit needs at least one dataset input")
    if any(str(d) == STDIN for d in data):
        raise UsageError(
            "stdin ('-') cannot be audited: the rows are read twice; give a file", reason="no_stdin"
        )
    found = resolve(
        list(data),
        progress=progress,
        allow_stdin=False,
        allow_stale=allow_stale,
        reread="audit reads the rows twice (instruction sentences learned from the first rows, then every row checked)",
        what="dataset file",
    )
    sources = found.sources
    if not sources:
        raise InputError("no input files", reason="no_rows")
    bench = None
    if request.against:
        bench = benchmarks.load(
            request.against,
            request.mapping,
            ngram=request.contamination.ngram,
            progress=progress,
            strict=request.on_invalid == "fail",
        )
    run = run or RunRequest(tuple(str(s.path) for s in sources), workers=workers)
    evidence = _evidence(request, sources, progress, run) if request.rollouts else None
    orders = option_orders(request.pass_rates, request.drift, progress)
    text = RowText(_learn(sources))
    contamination = Contamination(bench, request.contamination) if bench is not None else None
    key_audit = KeyAudit(evidence.pool, request.keys) if evidence is not None else None
    state = State(text, contamination, request.duplicates, request.keys.key_by if key_audit else None)
    fold = Fold(bench, DuplicateIndex(request.dup_similarity) if request.duplicates else None, key_audit)
    identity = {
        "request": repr(request),
        "benchmarks": [f.identity() for f in bench.files] if bench is not None else None,
        "rollouts": evidence.inputs if evidence is not None else None,
    }
    job = Job(
        "audit", tuple((str(s.path), s.split) for s in sources), audit_work, state, identity, run.output
    )
    _stream(fold, job, progress, run)
    if fold.rows == 0:
        raise InputError("no dataset row to audit: the inputs hold no rows", reason="no_rows")
    doc = document.build(request, fold, sources, evidence, text)
    if orders is not None:
        doc["option_orders"] = orders
    if found.stale:
        doc["stale_preparations"] = found.stale_report()
    return doc


def _stream(fold: Fold, job: Job, progress: Progress | None, run: RunRequest) -> None:
    meter = InputMeter(s for s, _ in job.sources)
    bar = progress(total=meter.total, desc="audit", unit=meter.unit) if progress is not None else None

    def add(chunk: Chunk, res: ChunkResult, _shard: Shard | None) -> None:
        if chunk.failure is not None:
            raise chunk.failure
        fold.add(chunk, res)
        if bar is not None:
            bar.update(meter.step(chunk, len(res.lines)))

    try:
        with streaming_gc():
            run_job(run, job, add)
    finally:
        if bar is not None:
            bar.close()


def _learn(sources: list[Any]) -> list[str]:
    """Instruction sentences learned from the first rows (text.Boilerplate)."""
    learner = Boilerplate()
    for s in sources:
        for rec in iter_file(s.path, split=s.split):
            if isinstance(rec.data, dict):
                learner.add(rec.data, rec.hint)
            if learner.full:
                return learner.learned()
    return learner.learned()


def _evidence(request: Request, sources: list[Any], progress: Progress | None, how: RunRequest) -> Any:
    """The rollouts, graded (or read as graded) under one contract, as passrates reads them (on the engine as
    `how` says)."""
    from ..passrates.measure import Measurement, gather
    from ..rescore.index import RowIndex
    from ..rescore.rows import Settings as RescoreSettings

    index = RowIndex.from_sources(sources)
    run = Measurement(
        None, index, request.default_model, request.keys.key_by, pool=AnswerPool, keep_graded=True
    )
    run.rescore = RescoreSettings(request.policy or GradingPolicy(), index.rows)
    how = RunRequest(
        request.rollouts, workers=how.workers, engine=how.engine, address=how.address, resume=how.resume
    )
    job = ("audit-rollouts", {"dataset": [str(s.path) for s in sources]})
    return gather(
        request.rollouts,
        run,
        contract=request.contract,
        on_invalid=request.on_invalid,
        progress=progress,
        how=how,
        job=job,
    )
