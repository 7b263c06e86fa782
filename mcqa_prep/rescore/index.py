"""The `--rows` join index: dataset rows by prompt, holding only the fields a join needs, packed (see
PackedRows), and an account of the rows read (how many, duplicates, conflicts, the rows left out and why).
Read by rescore, passrates and audit."""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import binding
from .._perf import release_memory
from ..errors import InputError
from ..grader.letters import normalize_gold
from ..io import iter_file
from ..progress import Progress
from ..prompt import prompt_key
from ..records import display_name
from ..sources import KIND_PREPARED
from .rows import CONFLICT, GRADING_FIELDS, JOIN_FIELDS, PREPARED

__all__ = ["Bucket", "LEFT_OUT", "PackedRows", "RowIndex"]


class FileBlob:
    """Bytes appended to an unlinked temporary file and read back by offset (pread), from this process or a
    forked worker (which inherits the descriptor).

    Why a file: the pickled join fields are most of the index (under 1 kB per dataset row, ~0.6 GB for 685k
    rows). In memory they were resident in the parent and, as its workers touched them, in every worker too
    (3x for two workers: 2.1 GB). In the file they are the kernel's page cache: one copy, shared by every
    process that reads them, in no process's resident memory, and reclaimable. Pickled (to cross to a Ray
    worker on another machine), a FileBlob becomes its bytes."""

    def __init__(self) -> None:
        import tempfile

        self._fh = tempfile.TemporaryFile()
        self.fd = self._fh.fileno()
        self.size = 0
        self._dirty = False

    def append(self, data: bytes) -> int:
        """Append `data`; its offset."""
        at = self.size
        self._fh.write(data)
        self.size += len(data)
        self._dirty = True
        return at

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, part: slice) -> bytes:
        if self._dirty:
            self._fh.flush()
            self._dirty = False
        start, stop = int(part.start), int(part.stop)
        data = os.pread(self.fd, stop - start, start)
        while len(data) < stop - start:  # (a short read: rare, never past the end)
            more = os.pread(self.fd, stop - start - len(data), start + len(data))
            if not more:
                break
            data += more
        return data

    def __reduce__(self) -> Any:
        import numpy as np

        return np.frombuffer, (self[0 : self.size], np.uint8)


class PackedRows:
    """The join index's dataset rows, packed: prompt keys (16-byte digests) as two sorted uint64 columns, and
    each row's join fields pickled into one buffer (a FileBlob, or bytes that came through Ray).

    Why packed: as a dict of dicts the index took ~5 kB per dataset row (ten option dicts and their strings),
    3.6 GB for the full dataset in every process that joins, and in every Ray worker. Packed, a row costs its
    pickle (under 1 kB, in the page cache: FileBlob) and 32 bytes of offsets and key; on Ray the numpy buffers
    travel through the object store zero-copy, so the workers of a node share one copy. `get` unpickles a
    fresh dict per lookup (pickle, not JSON: values come back exactly, NaN included)."""

    __slots__ = ("hi", "lo", "starts", "ends", "blob")

    def __init__(self, hi: Any, lo: Any, starts: Any, ends: Any, blob: Any) -> None:
        self.hi, self.lo, self.starts, self.ends, self.blob = hi, lo, starts, ends, blob

    @classmethod
    def pack(cls, slots: dict[bytes, int], starts: list[int], blob: Any) -> PackedRows:
        """From key -> slot, the slots' start offsets in `blob` (in slot order), and the pickles' buffer (a
        FileBlob, or bytes)."""
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
            blob if isinstance(blob, FileBlob) else np.frombuffer(blob, np.uint8),
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
        blob = FileBlob()
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
                starts.append(blob.append(pickle.dumps(fields, _PICKLE)))
                where.append(file_line)
        idx.rows = PackedRows.pack(slots, starts, blob)
        if not slots:
            raise idx._nothing_indexed(names)
        del slots, starts, where
        release_memory()
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
