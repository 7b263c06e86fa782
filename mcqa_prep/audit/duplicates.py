"""Duplicates within the dataset, and across its splits (train/validation leakage), found three ways:

- exact: the same question (normalised, instruction text cut: text.py) with the same options in the same order;
- permuted_options: the same question and the same set of options in another order (or under other letters);
- near_duplicate: the rows' MinHash signatures (word bigrams of question and options) share an LSH band and
  agree on at least `similarity` of their minima (an estimate of their Jaccard similarity).

Each row leaves a fixed number of bytes in numpy columns, never the row: two 64-bit keys (question + options in
order, question + option set), the row's place (file, line, split), its uuid (36 bytes) and SIG_BYTES of its
signature (the low byte of each minimum: b-bit minwise hashing, whose agreement estimates Jaccard after a
1/256 chance correction) and whether it is one option order of a question (`prepare --permute`: it names
its own uuid in metadata.mcqa_prep.permutation). Pairs are found at the end by sorting (`finish`): each
duplicate row is reported with the first row (in input order) it repeats, and whether the two share their
uuid (`same_uuid`: NVIDIA's data renders one question under several templates with one uuid, on purpose;
across splits it is leakage all the same). Two option orders of one question in one split are what a
permuted preparation is made of, not duplicates: they are not reported (across splits they are, as
leakage). `BYTES_PER_ROW` is what the index costs per row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import features as ft

SIG_BYTES = ft.NUM_PERM
DUP_BANDS = SIG_BYTES // 4  # bands of four bytes, read as one uint32
UUID_BYTES = 36
BYTES_PER_ROW = 8 + 8 + 8 + UUID_BYTES + SIG_BYTES + 1  # place, two keys, uuid, signature, option order
KINDS = ("exact", "permuted_options", "near_duplicate")
NEIGHBOURS = 8  # per band, each row is compared with the 8 rows before it that share the band's key


@dataclass
class ChunkKeys:
    """What one chunk's rows leave in the index (built in a worker, columns cross the pipe cheaply)."""

    rows: np.ndarray  # position of each keyed row within the chunk
    ordered: np.ndarray  # uint64: question + options in order
    unordered: np.ndarray  # uint64: question + option set
    sigs: np.ndarray  # uint8, rows x SIG_BYTES
    uuids: np.ndarray  # S36
    orders: np.ndarray  # bool: one option order of a permuted question (of its uuid)


def chunk_keys(
    rows: list[int],
    ordered: list[int],
    unordered: list[int],
    sigs: np.ndarray,
    uuids: list[str],
    orders: list[bool] | None = None,
) -> ChunkKeys:
    u = np.array([x.encode("utf-8", "replace")[:UUID_BYTES] for x in uuids], dtype=f"S{UUID_BYTES}")
    return ChunkKeys(
        np.array(rows, dtype=np.int64),
        np.array(ordered, dtype=np.uint64),
        np.array(unordered, dtype=np.uint64),
        (sigs & 0xFF).astype(np.uint8),
        u,
        np.array(orders if orders is not None else [False] * len(rows), dtype=bool),
    )


@dataclass
class DuplicateIndex:
    """The dataset's rows as fixed-size keys, appended chunk by chunk in input order."""

    similarity: float = 0.7
    files: list[tuple[str, str | None]] = field(default_factory=list)
    _file_ids: dict[tuple[str, str | None], int] = field(default_factory=dict)
    _parts: list[tuple[np.ndarray, ...]] = field(default_factory=list)
    rows: int = 0

    def add(self, file: str, split: str | None, lines: list[int], keys: ChunkKeys) -> None:
        fid = self._file_ids.get((file, split))
        if fid is None:
            fid = self._file_ids[(file, split)] = len(self.files)
            self.files.append((file, split))
        where = (np.int64(fid) << np.int64(32)) | np.array(lines, dtype=np.int64)[keys.rows]
        self._parts.append((where, keys.ordered, keys.unordered, keys.sigs, keys.uuids, keys.orders))
        self.rows += len(keys.rows)

    def finish(self) -> list[dict[str, Any]]:
        """Every duplicate row with the first row it repeats, kind and similarity, in input order."""
        if not self._parts:
            return []
        cols = [np.concatenate([p[k] for p in self._parts]) for k in range(6)]
        self._parts = [tuple(cols)]
        where, ordered, unordered, sigs, uuids, orders = cols
        first = _first_of(unordered)
        found: dict[int, tuple[int, str, float]] = {}
        for r in np.flatnonzero(first != np.arange(len(first))).tolist():
            f = int(first[r])
            found[r] = (f, "exact" if ordered[r] == ordered[f] else "permuted_options", 1.0)
        for r, f, sim in self._near(sigs, unordered):
            if r not in found:
                found[r] = (f, "near_duplicate", sim)
        described = (self._describe(r, *found[r], where, uuids) for r in sorted(found))
        return [
            d
            for d, r in zip(described, sorted(found), strict=True)
            if not _orders_of_one(d, r, found, orders)
        ]

    def _near(self, sigs: np.ndarray, unordered: np.ndarray) -> list[tuple[int, int, float]]:
        """(row, earlier row, estimated similarity) of rows whose signatures share a band and agree enough."""
        n = len(sigs)
        bands = np.ascontiguousarray(sigs).view(np.uint32).reshape(n, DUP_BANDS)
        partner = np.full(n, -1, dtype=np.int64)
        best = np.zeros(n, dtype=np.float64)
        for b in range(DUP_BANDS):
            order = np.argsort(bands[:, b], kind="stable")  # equal keys stay in input order
            key = bands[order, b]
            for d in range(1, NEIGHBOURS + 1):  # each row against the NEIGHBOURS rows before it with its key
                same = np.flatnonzero(key[d:] == key[:-d])
                if not len(same):
                    break
                rows, earlier = order[same + d], order[same]
                keep = unordered[rows] != unordered[earlier]  # exact duplicates are found by their keys
                rows, earlier = rows[keep], earlier[keep]
                agree = (sigs[rows] == sigs[earlier]).mean(axis=1)
                est = np.clip((agree - 1 / 256) / (1 - 1 / 256), 0.0, 1.0)
                better = (est >= self.similarity) & (est > best[rows])
                partner[rows[better]] = earlier[better]
                best[rows[better]] = est[better]
        rows = np.flatnonzero(partner >= 0)
        return [(int(r), int(partner[r]), round(float(best[r]), 4)) for r in rows]

    def _describe(
        self, r: int, f: int, kind: str, sim: float, where: np.ndarray, uuids: np.ndarray
    ) -> dict[str, Any]:
        a, b = self._place(int(where[r])), self._place(int(where[f]))
        ua, ub = uuids[r].decode("utf-8", "replace") or None, uuids[f].decode("utf-8", "replace") or None
        return {
            "kind": kind,
            "row": {**a, "uuid": ua},
            "first": {**b, "uuid": ub},
            "cross_split": a["split"] != b["split"],
            "same_uuid": ua is not None and ua == ub,  # one question under several templates, on purpose
            "similarity": sim,
        }

    def _place(self, packed: int) -> dict[str, Any]:
        file, split = self.files[packed >> 32]
        return {"file": file, "line": packed & 0xFFFFFFFF, "split": split}


def _first_of(keys: np.ndarray) -> np.ndarray:
    """For each position, the first position (in input order) holding the same key."""
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    starts = np.ones(len(k), dtype=bool)
    starts[1:] = k[1:] != k[:-1]
    group_first = order[np.flatnonzero(starts)]
    out = np.empty(len(k), dtype=np.int64)
    out[order] = np.repeat(group_first, np.diff(np.append(np.flatnonzero(starts), len(k))))
    return out


def _orders_of_one(
    d: dict[str, Any], r: int, found: dict[int, tuple[int, str, float]], orders: np.ndarray
) -> bool:
    """Two option orders of one permuted question, in one split: the preparation's design, not a duplicate."""
    return bool(orders[r] and orders[found[r][0]] and d["same_uuid"] and not d["cross_split"])
