"""The rows of accepted preparations, by their identity in the preparation: what `serve --prepared` holds to
tell a row edited after prepare from the row as prepared, and to name the prepared values.

Built in the one pass that accepts each preparation (accept.accept's `on_row`): per row, 8 bytes of its
identity (binding.identity of the digests its stamp records, which the pass has just checked against the row),
8 bytes of its stamp's `source`, and where it lies (its shard, and its byte offset in a JSONL shard or its
index in a Parquet one): 24 bytes a row, in sorted numpy columns (a 685k-row preparation: 16 MB), shared by the
forked workers. A row is read back from its shard only when a request differs from it (a bounded cache keeps
the last ones read). A source shared by several rows (option orders of one question) names no single row.
"""

from __future__ import annotations

import hashlib
import os
import threading
from array import array
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import orjson

from .. import binding
from ..fields import stamp_of
from ..progress import Progress
from .accept import Accepted, accept

_CACHE_MAX = 256
_FILE_BITS = 44  # a location: file number << 44 | offset (byte offsets up to 16 TB)


def _key(blob: bytes) -> int:
    return int.from_bytes(blob[:8], "big")


def source_key(source: Any) -> int | None:
    """8 bytes of a stamp's `source` (its canonical JSON), or None when it holds none."""
    if source is None:
        return None
    try:
        blob = orjson.dumps(source, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return None
    return _key(hashlib.blake2b(blob, digest_size=8).digest())


class PreparedRows:
    """The rows of the preparations given to `accept` (see the module docstring)."""

    def __init__(self) -> None:
        self._files: list[tuple[str, str]] = []  # (path, format) by file number
        self._ids, self._srcs, self._locs = array("Q"), array("Q"), array("Q")
        self._cols: Any = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[int, dict[str, Any]] = OrderedDict()

    def accept(self, directory: str | os.PathLike, *, progress: Progress | None = None) -> Accepted:
        """Accept a preparation (accept.accept) and index its rows on the way."""
        numbers: dict[int, int] = {}

        def seen(row: dict[str, Any], file: int, at: int) -> None:
            if file not in numbers:
                numbers[file] = len(self._files)
                self._files.append(("", ""))  # named below, once the manifest is known
            self._add(row, numbers[file], at)

        if self._cols is not None:
            raise RuntimeError("the rows are frozen: accept every preparation before the first look-up")
        accepted = accept(directory, None, progress=progress, on_row=seen)
        m = accepted.manifest
        for file, n in numbers.items():
            self._files[n] = (str(m.path(m.files[file])), m.output_format)
        self._cols = None
        return accepted

    def _add(self, row: Mapping[str, Any], file: int, at: int) -> None:
        rec = binding.recorded(row)  # checked against the row by the accepting pass
        if rec is None:  # (a preparation that binds no row: nothing to index)
            return
        stamp = stamp_of(row)
        src = source_key(stamp.get("source") if stamp is not None else None)
        self._ids.append(_key(binding.identity(rec)))
        self._srcs.append(src if src is not None else 0)
        self._locs.append(file << _FILE_BITS | at)

    def __len__(self) -> int:
        return len(self._ids) if self._cols is None else len(self._cols[0])

    def freeze(self) -> PreparedRows:
        """Sort the columns now (before a server forks its workers, so that they share one copy)."""
        self._columns()
        return self

    def _columns(self) -> Any:
        with self._lock:
            if self._cols is None:
                import numpy as np

                ids = np.array(self._ids, dtype=np.uint64)
                srcs = np.array(self._srcs, dtype=np.uint64)
                locs = np.array(self._locs, dtype=np.uint64)
                by_id, by_src = np.argsort(ids, kind="stable"), np.argsort(srcs, kind="stable")
                self._cols = (ids[by_id], locs[by_id], srcs[by_src], locs[by_src])
                self._ids, self._srcs, self._locs = array("Q"), array("Q"), array("Q")  # (now in the columns)
            return self._cols

    def holds(self, identity: bytes) -> bool:
        """Whether a row with this identity (binding.identity of its own digests) is one of the rows."""
        return self._find(0, _key(identity)) is not None

    def by_identity(self, identity: bytes) -> dict[str, Any] | None:
        """The prepared row with this identity, read from its shard; None when there is none."""
        loc = self._find(0, _key(identity))
        return self._row(loc) if loc is not None else None

    def by_source(self, source: Any) -> dict[str, Any] | None:
        """The one prepared row whose stamp names this source; None for none, or for several."""
        key = source_key(source)
        loc = self._find(2, key, unique=True) if key is not None else None
        return self._row(loc) if loc is not None else None

    def _find(self, col: int, key: int, *, unique: bool = False) -> int | None:
        import numpy as np

        cols = self._columns()
        keys, locs = cols[col], cols[col + 1]
        k = np.uint64(key)
        i = int(np.searchsorted(keys, k, "left"))
        if i >= len(keys) or keys[i] != k:
            return None
        if unique and i + 1 < len(keys) and keys[i + 1] == k:
            return None
        return int(locs[i])

    def _row(self, loc: int) -> dict[str, Any] | None:
        with self._lock:
            hit = self._cache.get(loc)
            if hit is not None:
                self._cache.move_to_end(loc)
                return hit
        path, fmt = self._files[loc >> _FILE_BITS]
        at = loc & ((1 << _FILE_BITS) - 1)
        try:
            row = _read_parquet_row(path, at) if fmt == "parquet" else _read_jsonl_row(path, at)
        except (OSError, ValueError):  # the shard changed or went away since it was accepted
            return None
        with self._lock:
            self._cache[loc] = row
            if len(self._cache) > _CACHE_MAX:
                self._cache.popitem(last=False)
        return row


def _read_jsonl_row(path: str, offset: int) -> dict[str, Any]:
    with open(path, "rb") as fh:
        fh.seek(offset)
        line = fh.readline()
    try:
        row = orjson.loads(line)
    except orjson.JSONDecodeError:
        from ..io.readers import parse_fallback

        row, problem = parse_fallback(line.rstrip(b"\n"))
        if problem is not None:
            raise ValueError(problem) from None
    if not isinstance(row, dict):
        raise ValueError("not a row")
    return row


def _read_parquet_row(path: str, index: int) -> dict[str, Any]:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    for g in range(pf.num_row_groups):
        n = pf.metadata.row_group(g).num_rows
        if index < n:
            row = pf.read_row_group(g).slice(index, 1).to_pylist()[0]
            return dict(row)
        index -= n
    raise ValueError("no such row")
