"""Texts -> numbers the audit compares, for many texts at once (numpy over a chunk of rows, no Python loop per
n-gram): word n-gram hashes, MinHash signatures (rensa), LSH band keys and membership in sorted arrays.

- A *document* is a list of *segments* (the question, then each option), each a list of normalised words.
  N-grams never cross a segment, so option order and the text between segments never count. `kgrams(docs, k,
  short=True)` also gives a segment shorter than k words one feature (its words, hashed together), so a
  one-word option still counts. A document's first MAX_WORDS words are compared (its segments in order, the
  last one cut there), so no document, however long, costs more than that.
- Word hashes are 64-bit blake2b digests (stable across processes and runs, cached per process); an n-gram's
  hash is a polynomial of its words' hashes, finished by splitmix64 (so nearby values spread).
- `signatures` are rensa MinHash digests (NUM_PERM 32-bit minima per document, one fixed seed). rensa over
  datasketch: measured by bench/bench_audit.py in every bench run (docs/design/audit.md, "Library").
- `band_keys` folds each band of BAND_ROWS minima into one 64-bit key: two documents of Jaccard
  similarity J share a given band's key with probability J^BAND_ROWS, and some band key with probability
  1 - (1 - J^BAND_ROWS)^BANDS (0.99 at J = 0.7, 0.64 at J = 0.5 with 16 bands of 4).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

MAX_WORDS = 100_000  # words of a document (question and options) compared: docs/design/audit.md, "Bounds"
NUM_PERM = 64
BANDS = 16
BAND_ROWS = NUM_PERM // BANDS
SEED = 20260126
EMPTY = 0xFFFFFFFF  # rensa's minimum of an empty document
BITMAP_BITS = 1 << 26  # KeySet's filter: 8 MiB
SERIAL_ROWS = 255  # documents per rensa call: below its threshold for a thread pool (see signatures)
_P = np.uint64(0x100000001B3)  # the n-gram polynomial's base (odd)
_WORD_CACHE_MAX = 2_000_000
_BAND_MIX = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93], dtype=np.uint64
)

Doc = Sequence[Sequence[str]]  # segments of normalised words


class _Words(dict):
    """word -> its 64-bit hash, computed on first use (`map(cache.__getitem__, words)` runs in C)."""

    def __missing__(self, w: str) -> int:
        if len(self) >= _WORD_CACHE_MAX:
            self.clear()
        h = self[w] = int.from_bytes(
            hashlib.blake2b(w.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little"
        )
        return h


_WORDS = _Words()


def word_hash(w: str) -> int:
    return _WORDS[w]


def mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, element-wise (uint64 arithmetic wraps, as intended)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


class Layout(NamedTuple):
    """Every word of every segment of some documents in one array: word hashes, the end of each word's
    segment, whether a word starts its segment, the document of each word; computed once, used for every k."""

    hashes: np.ndarray
    ends: np.ndarray
    starts: np.ndarray
    owner: np.ndarray
    docs: int


def layout(docs: Sequence[Doc]) -> Layout:
    flat: list[str] = []
    lengths: list[int] = []
    seg_doc: list[int] = []
    for d, doc in enumerate(docs):
        room = MAX_WORDS
        for seg in doc:
            if seg and room > 0:
                if len(seg) > room:
                    seg = seg[:room]
                room -= len(seg)
                flat.extend(seg)
                lengths.append(len(seg))
                seg_doc.append(d)
    hashes = np.fromiter(map(_WORDS.__getitem__, flat), dtype=np.uint64, count=len(flat))
    lens = np.array(lengths, dtype=np.int64)
    ends = np.cumsum(lens)
    starts = np.zeros(len(flat), dtype=bool)
    starts[ends - lens] = True
    owner = np.repeat(np.array(seg_doc, dtype=np.int64), lens)
    return Layout(hashes, np.repeat(ends, lens), starts, owner, len(docs))


def kgrams(docs: Sequence[Doc] | Layout, k: int, *, short: bool) -> tuple[np.ndarray, np.ndarray]:
    """(hashes, offsets): the k-gram hashes of every document, concatenated in document order; document d's
    are hashes[offsets[d]:offsets[d + 1]]. `short`: a segment shorter than k words gives one feature."""
    w, ends, starts, owner, n_docs = docs if isinstance(docs, Layout) else layout(docs)
    n = len(w)
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    if n == 0:
        return np.zeros(0, dtype=np.uint64), offsets
    room = ends - np.arange(n, dtype=np.int64)  # words left in the segment from each position
    full = np.flatnonzero(room >= k)  # where a whole k-gram starts: only those are computed
    h = w[full]
    for j in range(1, k):
        h = h * _P + w[full + j]
    if short:  # a segment shorter than k: its words, hashed the same way
        part = np.flatnonzero(starts & (room < k))
        hs = w[part]
        for j in range(1, k):
            more = room[part] > j
            hs = hs * _P + np.where(more, w[np.minimum(part + j, n - 1)], np.uint64(0))
        at = np.concatenate([full, part])
        order = np.argsort(at, kind="stable")  # back in word order: each document's features together
        at, h = at[order], np.concatenate([h, hs])[order]
    else:
        at = full
    feats = mix(h ^ np.uint64(k))
    counts = np.bincount(owner[at], minlength=n_docs)
    np.cumsum(counts, out=offsets[1:])
    return feats, offsets


class KeySet:
    """A sorted array of 64-bit keys with a bitmap in front (BITMAP_BITS bits, ~1.5% false positives at a
    million keys): membership of many values costs one gather each, and a binary search only for the few
    that pass the bitmap."""

    def __init__(self, keys: np.ndarray, values: np.ndarray | None = None) -> None:
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.values = values[order] if values is not None else None
        bits = np.zeros(BITMAP_BITS // 8, dtype=np.uint8)
        h = self.keys & np.uint64(BITMAP_BITS - 1)
        np.bitwise_or.at(
            bits, (h >> np.uint64(3)).astype(np.int64), (1 << (h & np.uint64(7))).astype(np.uint8)
        )
        self.bits = bits

    def __len__(self) -> int:
        return len(self.keys)

    def contains(self, values: np.ndarray) -> np.ndarray:
        """Which of `values` are keys (a boolean mask)."""
        if not len(self.keys) or not len(values):
            return np.zeros(len(values), dtype=bool)
        h = values & np.uint64(BITMAP_BITS - 1)
        maybe = (self.bits[(h >> np.uint64(3)).astype(np.int64)] >> (h & np.uint64(7)).astype(np.uint8)) & 1
        out = maybe.astype(bool)
        idx = np.flatnonzero(out)
        if len(idx):
            out[idx] = contains(self.keys, values[idx])
        return out

    def ranges(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each value (all of them keys), where its run of equal keys starts and ends."""
        return np.searchsorted(self.keys, values, side="left"), np.searchsorted(
            self.keys, values, side="right"
        )


def signatures(feats: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """MinHash signatures (documents x NUM_PERM, uint32) of the feature sets; an empty set gives EMPTY.

    rensa is called on at most SERIAL_ROWS documents at a time: from 256 on it starts a rayon thread pool,
    and a pool made before the workers are forked deadlocks them (a forked child has no pool threads). The
    process-level workers (parallel.py) are the parallelism."""
    import rensa

    n = max(len(offsets) - 1, 0)
    out = np.empty((n, NUM_PERM), dtype=np.uint32)
    for lo in range(0, n, SERIAL_ROWS):
        hi = min(n, lo + SERIAL_ROWS)
        part = offsets[lo : hi + 1]
        m = rensa.RMinHash.digest_matrix_from_flat_token_hashes(
            feats[part[0] : part[-1]], (part - part[0]).astype(np.uint64), NUM_PERM, SEED
        )
        out[lo:hi] = np.array(m.to_rows(), dtype=np.uint32).reshape(hi - lo, NUM_PERM)
    return out


def band_keys(sigs: np.ndarray) -> np.ndarray:
    """(documents x BANDS) uint64 keys, each folding BAND_ROWS minima of one band."""
    s = sigs.astype(np.uint64).reshape(len(sigs), BANDS, BAND_ROWS)
    k = np.zeros((len(sigs), BANDS), dtype=np.uint64)
    for r in range(BAND_ROWS):
        k = mix(k ^ (s[:, :, r] * _BAND_MIX[r % len(_BAND_MIX)]))
    return k


def contains(sorted_keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Which of `values` are in the sorted array `sorted_keys` (a boolean mask)."""
    if len(sorted_keys) == 0 or len(values) == 0:
        return np.zeros(len(values), dtype=bool)
    i = np.searchsorted(sorted_keys, values)
    i[i == len(sorted_keys)] = 0
    return sorted_keys[i] == values


def text_key(parts: Sequence[str]) -> int:
    """A stable 64-bit key of some texts (exact-match indexes): blake2b of them joined by a separator."""
    blob = "\x1f".join(parts).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(blob, digest_size=8).digest(), "little") & 0x7FFFFFFFFFFFFFFF
