"""Rescore verify requests and rollouts with the bundled grader: read rows -> rescore each (rescore_rows) ->
write -> count.

One output row per input row, in input order, written atomically. A row that cannot be graded becomes an
output row with reward 0 and status `invalid_row` plus a message; the run goes on. Memory stays flat in the
number of rows (only the optional join index and bounded example lists are held).
"""

from __future__ import annotations

import functools
import pickle
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from .. import binding
from .._perf import streaming_gc
from ..counts import Tally
from ..errors import InputError, UsageError
from ..fields import NONE
from ..grader.letters import normalize_gold
from ..io import AtomicFile, iter_file
from ..io.paths import check_output
from ..io.writers import Parts
from ..parallel import Chunk, InputMeter, check_workers, chunks, ordered_map
from ..policy import GradingPolicy
from ..progress import Progress
from ..prompt import prompt_key
from ..records import display_name
from ..runs import RunRequest
from ..sources import KIND_PREPARED
from .output import ParquetGrades, writes_parquet
from .rows import (
    CONFLICT,
    GRADING_FIELDS,
    JOIN_FIELDS,
    OUTPUT_SHAPES,
    PREPARED,
    SHAPE_FULL,
    Outcome,
    Settings,
    rescore_row,
)

__all__ = ["rescore", "setup", "RescoreReport", "RescoreRequest", "RowIndex"]


class PackedRows:
    """The join index's dataset rows, packed: prompt keys (16-byte digests) as two sorted uint64 columns, and
    each row's join fields pickled into one buffer.

    Why packed: as a dict of dicts the index took ~5 kB per dataset row (ten option dicts and their strings),
    3.6 GB for the full dataset in every process that joins, and in every Ray worker. Packed, a row costs its
    pickle (under 1 kB) and 32 bytes of offsets and key; the numpy buffers travel through Ray's object store
    zero-copy, so the workers of a node share one copy. `get` unpickles a fresh dict per lookup (pickle, not
    JSON: values come back exactly, NaN included)."""

    __slots__ = ("hi", "lo", "starts", "ends", "blob")

    def __init__(self, hi: Any, lo: Any, starts: Any, ends: Any, blob: Any) -> None:
        self.hi, self.lo, self.starts, self.ends, self.blob = hi, lo, starts, ends, blob

    @classmethod
    def pack(cls, slots: dict[bytes, int], starts: list[int], blob: bytearray) -> PackedRows:
        """From key -> slot, the slots' start offsets in `blob` (in slot order), and the pickles' buffer."""
        import numpy as np

        order = sorted(slots)  # bytes order == (hi, lo) order of the big-endian halves
        pairs = (
            np.frombuffer(b"".join(order), dtype=">u8").reshape(-1, 2) if order else np.zeros((0, 2), ">u8")
        )
        slot = np.fromiter((slots[k] for k in order), np.int64, len(order))
        bounds = np.array([*starts, len(blob)], dtype=np.int64)
        return cls(
            pairs[:, 0].astype(np.uint64),
            pairs[:, 1].astype(np.uint64),
            bounds[slot],
            bounds[slot + 1],
            np.frombuffer(blob, np.uint8),
        )

    def __len__(self) -> int:
        return len(self.hi)

    def get(self, key: bytes | None, default: Any = None) -> dict[str, Any] | None:
        import numpy as np

        if not key or len(key) != 16:
            return default
        hi = np.uint64(int.from_bytes(key[:8], "big"))
        lo = int.from_bytes(key[8:], "big")
        j = int(np.searchsorted(self.hi, hi, "left"))
        end = int(np.searchsorted(self.hi, hi, "right"))
        while j < end:  # one candidate, except when two prompts share the first 8 digest bytes
            if int(self.lo[j]) == lo:
                return pickle.loads(self.blob[self.starts[j] : self.ends[j]])
            j += 1
        return default


@dataclass
class Bucket:
    """Rows of one kind: how many, and the first `limit` distinct examples (a uuid names a question, which
    several rows may render: an id is listed once)."""

    count: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, example: str, limit: int) -> None:
        self.count += 1
        if len(self.examples) < limit and example not in self.examples:
            self.examples.append(example)

    def merge(self, other: Bucket, limit: int) -> None:
        """`other`'s rows after this one's: the same count and examples as adding them one by one (other's
        first `limit` distinct examples hold every one that adding its rows would take)."""
        self.count += other.count
        for e in other.examples:
            if len(self.examples) >= limit:
                break
            if e not in self.examples:
                self.examples.append(e)

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "examples": self.examples}


# Why a dataset row read for the join index was left out of it (each counted, the first places kept).
LEFT_OUT = {
    "malformed": "lines that are not a JSON object",
    "no_prompt": "rows without responses_create_params.input to join by",
    "no_options": "rows without options to give a rollout",
}


def _differs(name: str, a: Any, b: Any) -> bool:
    if name == "expected_answer":  # " b" and "B" are one gold to the grader
        return normalize_gold(a) != normalize_gold(b)
    return a != b


@dataclass
class RowIndex:
    """Dataset rows by prompt, holding only the fields a join needs (packed: see PackedRows), and an account
    of the rows read: how many, how many repeated an indexed prompt, and which were left out and why."""

    rows: PackedRows | dict[bytes, dict[str, Any]] = field(default_factory=dict)
    duplicates: int = 0  # dataset rows whose prompt was already indexed (the first one is used)
    # prompts whose dataset rows differ in a field the grader reads (two golds): their rollouts are not joined
    conflicts: Bucket = field(default_factory=Bucket)
    read: int = 0  # dataset rows read, unreadable lines included
    left_out: dict[str, Bucket] = field(default_factory=dict)  # LEFT_OUT reason -> count, first places
    examples: int = 5

    @classmethod
    def build(
        cls, paths: Iterable[str | Path], progress: Progress | None = None, examples: int = 5
    ) -> RowIndex:
        """Index the dataset rows of `paths` (files, directories, pulled or prepared directories; each
        verified as every reader verifies it)."""
        from ..sources import resolve

        return cls.from_sources(resolve(paths, progress=progress, allow_stdin=False).sources, examples)

    @classmethod
    def from_sources(cls, sources: Iterable[Any], examples: int = 5) -> RowIndex:
        """Index the rows of already resolved sources (sources.Source: path and split). Raises InputError
        (reason no_dataset_rows) when no row could be indexed: a join with nothing is no join."""
        idx = cls(examples=examples)
        slots: dict[bytes, int] = {}
        starts: list[int] = []
        blob = bytearray()
        where: list[tuple[int, int]] = []  # per slot: the row's (file number, line), for a conflict's message
        names = []
        for src in sources:
            names.append(display_name(src.name))
            prepared = getattr(src, "kind", None) == KIND_PREPARED
            for rec in iter_file(src.path, split=src.split):
                idx.read += 1
                key = idx._key(rec)
                if key is None:
                    continue
                assert rec.data is not None  # _key leaves out a malformed row
                fields = {k: rec.data[k] for k in JOIN_FIELDS if k in rec.data}
                bound = binding.recorded(rec.data) if prepared else None
                if bound is not None:  # the row as prepared: a rollout's own grading fields are held to it
                    fields[PREPARED] = bound
                if key in slots:
                    idx.duplicates += 1
                    slot = slots[key]
                    end = starts[slot + 1] if slot + 1 < len(starts) else len(blob)
                    first = idx._conflict(
                        pickle.loads(blob[starts[slot] : end]), fields, where[slot], names, rec
                    )
                    if first is None:  # the same grading fields: the first row serves
                        continue
                    fields = first  # the first row's fields, now carrying the conflict (appended anew)
                    file_line = where[slot]
                else:
                    file_line = (len(names) - 1, rec.line)
                slots[key] = len(starts)
                starts.append(len(blob))
                where.append(file_line)
                blob += pickle.dumps(fields, _PICKLE)
        idx.rows = PackedRows.pack(slots, starts, blob)
        if not slots:
            raise idx._nothing_indexed(names)
        return idx

    def _conflict(
        self, first: dict[str, Any], fields: dict[str, Any], at: tuple[int, int], names: list[str], rec: Any
    ) -> dict[str, Any] | None:
        """`first` (an indexed row's join fields) marked as conflicting when `fields` (a later row with its
        prompt) differs from it in a field the grader reads; None when they agree."""
        differ = [f for f in GRADING_FIELDS if _differs(f, first.get(f), fields.get(f))]
        if not differ:
            return None
        here = f"{names[-1]}:{rec.line}"  # (as the source was named, like the first row)
        c = first.get(CONFLICT)
        if c is None:
            there = f"{names[at[0]]}:{at[1]}"
            c = first[CONFLICT] = {"fields": [], "rows": [there, here], "golds": [], "more": 0}
            self.conflicts.add(f"{there} vs {here} ({', '.join(differ)})", self.examples)
        else:
            c["more"] += 1
        c["fields"] = [f for f in GRADING_FIELDS if f in c["fields"] or f in differ]
        for row in (first, fields):
            gold = normalize_gold(row.get("expected_answer"))
            if gold not in c["golds"] and len(c["golds"]) < 4:
                c["golds"].append(gold)
        return first

    def _key(self, rec: Any) -> bytes | None:
        """The prompt key of a dataset row, or None when the row is left out (and counted as such)."""
        where = f"{display_name(rec.file)}:{rec.line}"
        if rec.data is None:
            self._leave_out("malformed", f"{where}: {rec.error}")
            return None
        key = prompt_key(rec.data.get("responses_create_params"))
        if key is None:
            self._leave_out("no_prompt", where)
            return None
        if "options" not in rec.data:  # e.g. another rollout: it cannot complete a join
            self._leave_out("no_options", where)
            return None
        return key

    def _leave_out(self, reason: str, example: str) -> None:
        self.left_out.setdefault(reason, Bucket()).add(example, self.examples)

    def summary(self) -> dict[str, Any]:
        """The index's account, as reports show it (beside the join's own counts)."""
        return {
            "dataset_rows_read": self.read,
            "dataset_prompts": len(self.rows),
            "dataset_prompt_duplicates": self.duplicates,
            "dataset_prompt_conflicts": self.conflicts.to_dict(),
            "dataset_rows_left_out": {
                "count": sum(b.count for b in self.left_out.values()),
                "by_reason": {k: self.left_out[k].to_dict() for k in LEFT_OUT if k in self.left_out},
            },
        }

    def _nothing_indexed(self, names: list[str]) -> InputError:
        files = ", ".join(names) or "no file"
        if not self.read:
            message = f"the dataset rows to join with hold no rows ({files})"
        else:
            why = "; ".join(
                f"{b.count} {LEFT_OUT[k]} ({k}; first: {', '.join(b.examples[:3])})"
                for k, b in self.left_out.items()
            )
            message = f"no dataset row could be indexed to join with ({files}): {self.read} read, all left out: {why}"
        return InputError(message, reason="no_dataset_rows", **self.summary())


_PICKLE = pickle.HIGHEST_PROTOCOL


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


def rescore(req: RescoreRequest) -> RescoreReport:
    """Grade every row of the run's input, write rescored rows to its output atomically, return counts.

    The run's `workers` processes grade chunks of the input (None: every core); the output is the same for any
    number. Its `progress` bar counts rows or bytes (parallel.InputMeter), with a total when one is known."""
    workers = check_workers(req.run.workers)
    settings, report = setup(req)
    progress = req.run.progress
    input_path, output_path = req.run.input, req.run.output
    assert output_path is not None  # setup refuses a run without one
    meter = InputMeter([input_path])
    bar = progress(total=meter.total, desc="rescore", unit=meter.unit) if progress is not None else None
    try:
        target = AtomicFile(output_path, "wb")
        with target as out, streaming_gc():
            grades = ParquetGrades(out) if writes_parquet(settings.shape, output_path) else None
            # workers write their lines beside the output themselves; the parent appends them in the kernel
            parts = target.parts if workers > 1 and grades is None else None
            work = functools.partial(_rescore_chunk, settings, report.empty, parts)
            results = ordered_map(work, chunks(input_path, None), workers)
            try:
                for chunk, (data, part) in results:
                    if type(data) is str:  # a piece a worker wrote
                        out.append_part(data)
                    else:
                        (out if grades is None else grades).write(data)
                    report.merge(part)
                    if bar is not None:
                        bar.update(meter.step(chunk, part.rows))
            finally:
                results.close()  # the pool is gone before a failed run's pieces are removed
            if report.rows == 0:  # nothing to rescore is not a success: the output is not written
                raise InputError(f"{input_path}: no rows to rescore", reason="no_rows")
            if grades is not None:
                grades.close()
    finally:
        if bar is not None:
            bar.close()
    return report


def _rescore_chunk(
    settings: Settings, new_report: Callable[[], RescoreReport], parts: Parts | None, chunk: Chunk
) -> tuple[bytes | str, RescoreReport]:
    """One chunk's rescored lines (joined; or, given `parts` in a worker process, the path of the piece of the
    output they were written to) and the report of its rows: the work a worker does. The worker folds its rows itself, so one
    small report crosses the pipe instead of an outcome per row."""
    lines: list[bytes] = []
    part = new_report()
    for rec in chunk.rows():
        line, outcome = rescore_row(rec, settings)
        lines.append(line)
        part.add(outcome)
    data = b"".join(lines)
    return (parts.write(chunk.seq, data) if parts is not None and parts.wanted() else data), part
