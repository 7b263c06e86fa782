"""Rescore verify requests and rollouts with the bundled grader: read rows -> rescore each (rescore_rows) ->
write -> count, on the row engine (mcqa_prep.engine: local processes or Ray, resumable).

One output row per input row, in input order, written atomically. A row that cannot be graded becomes an
output row with reward 0 and status `invalid_row` plus a message; the run goes on. Memory stays flat in the
number of rows (only the optional join index and bounded example lists are held).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from .._perf import streaming_gc
from ..counts import Tally
from ..engine import Job, Piece, RunInfo, Shard
from ..engine import run as run_job
from ..engine.workdir import path_identities
from ..errors import InputError, UsageError
from ..fields import NONE
from ..io import AtomicFile
from ..io.paths import check_output
from ..io.writers import place_file
from ..parallel import Chunk, InputMeter
from ..policy import GradingPolicy
from ..records import display_name
from ..runs import RunRequest
from .index import Bucket, PackedRows, RowIndex
from .output import ParquetGrades, writes_parquet
from .rows import OUTPUT_SHAPES, SHAPE_FULL, Outcome, Settings, rescore_row

__all__ = ["rescore", "setup", "RescoreReport", "RescoreRequest", "RowIndex", "PackedRows", "Bucket"]


@dataclass
class RescoreReport:
    """Counts over every row's outcome: statuses, modes, agreement with the recorded rewards, the join."""

    input: str
    output: str
    contract_id: str
    examples: int = 5
    rows: int = 0
    by_status: Counter = field(default_factory=Counter)
    by_mode: Counter = field(default_factory=Counter)
    tally: Tally = field(default_factory=Tally)  # scored, graded, invalid, mean reward, changed (counts.py)
    invalid: Bucket = field(default_factory=Bucket)
    invalid_by_kind: Counter = field(default_factory=Counter)  # unreadable, response, no_options, ...
    unchanged: Bucket = field(default_factory=Bucket)
    up: Bucket = field(default_factory=Bucket)  # 0 -> 1
    down: Bucket = field(default_factory=Bucket)  # 1 -> 0
    joined: int = 0
    join_missing: Bucket = field(default_factory=Bucket)
    index: dict[str, Any] | None = None  # the join index's account (RowIndex.summary), when rows were given
    input_contracts: Counter = field(default_factory=Counter)
    compare_contract: str | None = None
    compare_same: int = 0
    compare_differ: dict[str, Bucket] = field(default_factory=dict)
    compare_mode: str | None = None
    misses: dict[str, Bucket] = field(default_factory=dict)
    rows_per_template: Counter = field(default_factory=Counter)
    replaced: Bucket = field(default_factory=Bucket)  # rows whose NaN/Infinity/bytes were written as null

    @property
    def changed(self) -> int:
        return self.tally.changed

    @property
    def graded(self) -> int:
        return self.tally.graded

    def add(self, o: Outcome) -> None:
        n = self.examples
        self.rows += 1
        self.by_status[o.status] += 1
        if o.joined is True:
            self.joined += 1
        elif o.joined is False:
            self.join_missing.add(o.rid, n)
        if o.input_contract is not None:
            self.input_contracts[o.input_contract] += 1
        if o.replaced:
            self.replaced.add(o.rid, n)
        if not self.tally.add(o.status, o.reward, o.previous):  # not graded: never counted as a change
            self.invalid.add(o.rid, n)
            self.invalid_by_kind[o.problem or "other"] += 1
            return
        self.by_mode[o.mode] += 1
        if o.previous is not None:
            if o.previous == o.reward:
                self.unchanged.add(o.rid, n)
            else:
                (self.up if o.reward > o.previous else self.down).add(o.rid, n)
        if o.compare is not None:
            if o.compare == "same":
                self.compare_same += 1
            else:
                self.compare_differ.setdefault(o.compare, Bucket()).add(o.rid, n)
        if o.format_miss is not None:
            tid = o.template or NONE
            self.rows_per_template[tid] += 1
            if o.format_miss:
                self.misses.setdefault(tid, Bucket()).add(o.rid, n)

    def empty(self) -> RescoreReport:
        """A report with this one's settings and no rows: what a worker folds one chunk into."""
        return RescoreReport(
            self.input,
            self.output,
            self.contract_id,
            self.examples,
            compare_contract=self.compare_contract,
            compare_mode=self.compare_mode,
        )

    def merge(self, part: RescoreReport) -> None:
        """Fold in the report of the rows that follow this one's (a worker's chunk): the result is what
        adding those rows one by one gives (rewards are 0 or 1, so their sum is exact in any grouping)."""
        n = self.examples
        self.rows += part.rows
        self.tally.merge(part.tally)
        self.joined += part.joined
        self.compare_same += part.compare_same
        for mine, theirs in (
            (self.by_status, part.by_status),
            (self.by_mode, part.by_mode),
            (self.invalid_by_kind, part.invalid_by_kind),
            (self.input_contracts, part.input_contracts),
            (self.rows_per_template, part.rows_per_template),
        ):
            mine.update(theirs)
        for name in ("invalid", "unchanged", "up", "down", "join_missing", "replaced"):
            getattr(self, name).merge(getattr(part, name), n)
        for mine_d, theirs_d in ((self.compare_differ, part.compare_differ), (self.misses, part.misses)):
            for k, b in theirs_d.items():
                mine_d.setdefault(k, Bucket()).merge(b, n)

    def to_state(self) -> dict[str, Any]:
        """Every field, JSON-ready and exact (counts in their insertion order, buckets whole): what a Ray
        chunk's record keeps, so that a resumed job folds the same report (`from_state` reads it back)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, Bucket):
                v = v.to_dict()
            elif isinstance(v, Tally):
                v = asdict(v)
            elif isinstance(v, Counter):
                v = [[k, n] for k, n in v.items()]
            elif f.name in _BUCKET_MAPS:
                v = [[k, b.to_dict()] for k, b in v.items()]
            out[f.name] = v
        return out

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> RescoreReport:
        """The report `to_state` wrote (a ValueError/KeyError/TypeError when it is not one)."""
        kw: dict[str, Any] = {}
        for f in fields(cls):
            v = state[f.name]
            kind = _FIELD_KINDS.get(f.name)
            if kind == "bucket":
                v = _bucket(v)
            elif kind == "tally":
                counts: dict[str, Any] = {
                    k: (float(n) if k == "reward_sum" else int(n)) for k, n in v.items()
                }
                v = Tally(**counts)
            elif kind == "counter":
                v = Counter({k: int(n) for k, n in v})
            elif f.name in _BUCKET_MAPS:
                v = {k: _bucket(b) for k, b in v}
            kw[f.name] = v
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "input": display_name(self.input),
            "output": display_name(self.output),
            "contract": self.contract_id,
            "rows": self.rows,
            "graded": self.tally.graded,
            "mean_reward": self.tally.mean_reward,
            "by_status": dict(sorted(self.by_status.items())),
            "by_mode": dict(sorted(self.by_mode.items())),
            "invalid_rows": {**self.invalid.to_dict(), "by_kind": dict(sorted(self.invalid_by_kind.items()))},
            "join": {
                "joined": self.joined,
                "not_found": self.join_missing.to_dict(),
                **(self.index or {"dataset_prompts": None, "dataset_prompt_duplicates": 0}),
            },
            "agreement": {
                "recorded": self.tally.recorded,
                "unchanged": self.unchanged.to_dict(),
                "0->1": self.up.to_dict(),
                "1->0": self.down.to_dict(),
            },
            "input_contracts": dict(self.input_contracts),
            "values_written_as_null": self.replaced.to_dict(),
        }
        if self.compare_contract is not None:
            d["compare_policy"] = {
                "contract": self.compare_contract,
                "same": self.compare_same,
                "differ": {k: b.to_dict() for k, b in sorted(self.compare_differ.items())},
            }
        if self.compare_mode is not None:
            d["compare_mode"] = {
                "mode": self.compare_mode,
                "format_misses": sum(b.count for b in self.misses.values()),
                "per_template": {
                    t: {"rows": self.rows_per_template[t], "format_misses": b.count, "examples": b.examples}
                    for t, b in sorted(self.misses.items(), key=lambda kv: -kv[1].count)
                },
            }
        return d


_BUCKET_MAPS = ("compare_differ", "misses")
_FIELD_KINDS = {
    "tally": "tally",
    **{n: "bucket" for n in ("invalid", "unchanged", "up", "down", "join_missing", "replaced")},
    **{
        n: "counter"
        for n in ("by_status", "by_mode", "invalid_by_kind", "input_contracts", "rows_per_template")
    },
}


def _bucket(d: dict[str, Any]) -> Bucket:
    return Bucket(int(d["count"]), [str(x) for x in d["examples"]])


@dataclass(frozen=True)
class RescoreRequest:
    """One rescore: the run's settings (runs.RunRequest: its one input, the output, workers, progress, resume,
    chunking, examples) and rescore's own: the policy to grade under, the dataset rows to join by prompt,
    --explain, and a second grading to compare with (a policy, or this policy with another mode)."""

    run: RunRequest
    policy: GradingPolicy = field(default_factory=GradingPolicy)
    rows: tuple[str | Path, ...] = ()
    explain: bool = False
    compare_policy: GradingPolicy | None = None
    compare_mode: str | None = None
    output_shape: str = SHAPE_FULL  # rows.SHAPE_FULL (the input row with its grading) or rows.SHAPE_GRADING


def setup(req: RescoreRequest) -> tuple[Settings, RescoreReport]:
    """The settings every row is rescored with and the empty report, for any engine (one process, Ray)."""
    run, policy = req.run, req.policy
    run.check()
    if run.output is None:
        raise UsageError("rescore needs an output")
    check_output(run.output, [run.input, *req.rows])
    index = RowIndex.build(req.rows, examples=run.examples) if req.rows else None
    compare_mode = req.compare_mode
    if req.output_shape not in OUTPUT_SHAPES:
        raise UsageError(
            f"output_shape must be one of {', '.join(OUTPUT_SHAPES)}, got {req.output_shape!r}",
            reason="bad_output_shape",
        )
    settings = Settings(
        policy,
        index.rows if index is not None else None,
        req.explain,
        req.compare_policy,
        policy.with_overrides(grading_mode_override=compare_mode) if compare_mode else None,
        req.output_shape,
    )
    report = RescoreReport(str(run.input), str(run.output), policy.contract_id(), run.examples)
    if index is not None:
        report.index = index.summary()
    report.compare_contract = req.compare_policy.contract_id() if req.compare_policy is not None else None
    report.compare_mode = compare_mode
    return settings, report


def job(
    req: RescoreRequest, settings: Settings, report: RescoreReport, output: Any, stream: bool = False
) -> Job:
    """The engine's job: every chunk rescored by `rescore_chunk` into a shard of rescored lines."""
    identity = {
        "contract": report.contract_id,
        "examples": report.examples,
        "explain": settings.explain,
        "compare_contract": report.compare_contract,
        "compare_mode": report.compare_mode,
        "index": report.index,
        "rows": path_identities(req.rows),
        "output_shape": settings.shape,
    }
    return Job(
        "rescore",
        ((str(req.run.input), None),),
        rescore_chunk,
        (settings, report.empty()),
        identity,
        output,
        shard_stem="rescored",
        shard_ext=".jsonl",
        stream=stream,
    )


def rescore(req: RescoreRequest) -> RescoreReport:
    """Grade every row of the run's input, write rescored rows to its output atomically, return counts.

    The run's `workers` (None: every core; on Ray: every CPU of the cluster) grade chunks of the input on its
    `engine`; the output is the same for any number and any engine. Its `progress` bar counts rows or bytes
    (parallel.InputMeter), with a total when one is known; `resume` continues an interrupted run of the same job from its complete chunks."""
    report, _ = rescore_run(req)
    return report


def rescore_run(req: RescoreRequest) -> tuple[RescoreReport, RunInfo]:
    """`rescore`, with how the run ran (the engine's RunInfo). The rescored rows are the chunks' shards in
    input order: the engine appends them to one stream as they are folded, which becomes the output."""
    settings, report = setup(req)
    progress = req.run.progress
    input_path, output_path = req.run.input, req.run.output
    assert output_path is not None  # setup refuses a run without one
    meter = InputMeter([input_path])
    bar = progress(total=meter.total, desc="rescore", unit=meter.unit) if progress is not None else None

    def fold(chunk: Chunk, part: RescoreReport, shard: Shard | None) -> None:
        report.merge(part)
        if bar is not None:
            bar.update(meter.step(chunk, part.rows))

    def then(_work: Path, info: RunInfo) -> None:
        if report.rows == 0:  # nothing to rescore is not a success: the output is not written
            raise InputError(f"{input_path}: no rows to rescore", reason="no_rows")
        assert info.stream is not None
        place_file(info.stream, output_path)

    try:
        with streaming_gc():
            if writes_parquet(settings.shape, output_path):
                info = _to_parquet(req, settings, report, fold)
            else:
                info = run_job(req.run, job(req, settings, report, output_path, stream=True), fold, then=then)
    finally:
        if bar is not None:
            bar.close()
    return report, info


def _to_parquet(req: RescoreRequest, settings: Settings, report: RescoreReport, fold: Any) -> RunInfo:
    """`--output-shape grading` into a *.parquet file: each chunk's grading lines, as its shard, become one row
    group of the output (output.ParquetGrades), written as the chunks are folded."""
    output_path = req.run.output
    assert output_path is not None
    with AtomicFile(output_path, "wb") as out:
        grades = ParquetGrades(out)

        def write(chunk: Chunk, part: RescoreReport, shard: Shard | None) -> None:
            assert shard is not None
            grades.write(shard.read())
            fold(chunk, part, shard)

        def then(_work: Path, _info: RunInfo) -> None:
            if report.rows == 0:
                raise InputError(f"{req.run.input}: no rows to rescore", reason="no_rows")
            grades.close()

        return run_job(req.run, job(req, settings, report, output_path), write, then=then)


def rescore_chunk(chunk: Chunk, job: tuple[Settings, RescoreReport]) -> Piece:
    """One chunk's rescored lines (its shard) and the report of its rows: the work of a worker process or a
    Ray task. The rows are folded where they are graded, so one small report crosses processes, not an
    outcome per row."""
    settings, empty = job
    lines: list[bytes] = []
    part = empty.empty()
    with streaming_gc():
        for rec in chunk.rows():
            line, outcome = rescore_row(rec, settings)
            lines.append(line)
            part.add(outcome)
    return Piece(b"".join(lines), part)
