"""Dataset rows against the benchmark index: which rows hold a benchmark question, found three ways.

- exact: the row's options are the item's options (as a set, whatever their order, letters, case and
  punctuation) and the item's question is in the row's question (the row's may keep some instruction text);
- ngram: the row shares at least `ngram_min` word n-grams (13 words by default, as lm-eval) with the item,
  within the question or one option (never across them, so option order does not count);
- minhash: the row's word-bigram set, restricted to the benchmark's vocabulary (instruction text the benchmark
  never uses does not count), is a MinHash-LSH candidate of the item, and at least `similarity` of the item's
  bigrams are in the row (containment, computed exactly on the candidate). Items of fewer than MIN_FEATURES
  bigrams are left to the other two ways (a four-word question is not evidence).

`Contamination.check(parsed)` runs on a chunk of rows in a worker (the index was built before the workers
were forked) and returns, for each flagged row, its best matches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..errors import UsageError
from . import features as ft
from .benchmarks import SHINGLE, BenchIndex, option_set_key
from .features import Doc
from .text import Parsed

MIN_FEATURES = 6
MATCHES_KEPT = 3  # matches reported per flagged row (the best first)
METHODS = ("exact", "ngram", "minhash")


@dataclass(frozen=True)
class Settings:
    """The thresholds of the contamination check (recorded by a preparation: another value, another preparation)."""

    ngram: int = 13
    ngram_min: int = 1
    similarity: float = 0.75

    def check(self) -> None:
        if not 5 <= self.ngram <= 50:
            raise UsageError(
                f"n-gram length must be 5..50 words, got {self.ngram}", reason="bad_audit_setting"
            )
        if self.ngram_min < 1:
            raise UsageError(
                f"n-gram matches must be at least 1, got {self.ngram_min}", reason="bad_audit_setting"
            )
        if not 0.0 < self.similarity <= 1.0:
            raise UsageError(
                f"similarity must be in (0, 1], got {self.similarity}", reason="bad_audit_setting"
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "shingle": SHINGLE,
            "num_perm": ft.NUM_PERM,
            "bands": ft.BANDS,
            "seed": ft.SEED,
            "min_features": MIN_FEATURES,
        }


Match = dict  # one (row, item) match: item, methods, ngram_matches, ngram_overlap, containment


class Contamination:
    """The check of rows against one benchmark index with one set of thresholds."""

    def __init__(self, index: BenchIndex, settings: Settings) -> None:
        if index.ngram != settings.ngram:
            raise ValueError("the benchmark index was built for another n-gram length")
        self.index = index
        self.settings = settings

    def check(
        self,
        rows: Sequence[Parsed],
        docs: Sequence[Doc],
        feats: np.ndarray,
        offs: np.ndarray,
        lay: Any = None,
    ) -> dict[int, list[Match]]:
        """For each flagged row (by position in `rows`), its matches, best first. `docs` are the rows'
        segments (question, options), `feats`/`offs` their bigram features (features.kgrams) and `lay` their
        word layout (features.layout; made here when not given)."""
        found: dict[tuple[int, int], Match] = {}
        self._exact(rows, found)
        self._ngrams(lay if lay is not None else ft.layout(docs), found)
        self._minhash(feats, offs, found)
        out: dict[int, list[Match]] = {}
        for (r, _), m in found.items():
            if m["methods"]:
                out.setdefault(r, []).append(m)
        for ms in out.values():
            ms.sort(key=lambda m: (-len(m["methods"]), -m["containment"], -m["ngram_matches"], m["item"]))
            del ms[MATCHES_KEPT:]
        return out

    def _match(self, found: dict[tuple[int, int], Match], r: int, item: int) -> Match:
        m = found.get((r, item))
        if m is None:
            m = found[(r, item)] = Match(
                item=item, methods=[], ngram_matches=0, ngram_overlap=0.0, containment=0.0
            )
        return m

    def _exact(self, rows: Sequence[Parsed], found: dict[tuple[int, int], Match]) -> None:
        optset, question = self.index.optset, self.index.question
        for r, p in enumerate(rows):
            items = optset.get(option_set_key(p.options))
            if not items:
                continue
            q = " " + " ".join(p.question) + " "
            for i in items:
                if question[i] and " " + question[i] + " " in q:
                    m = self._match(found, r, i)
                    m["methods"].append("exact")
                    m["containment"] = 1.0

    def _ngrams(self, lay: Any, found: dict[tuple[int, int], Match]) -> None:
        ix = self.index
        grams, offs = ft.kgrams(lay, ix.ngram, short=False)
        hit = ix.ngrams.contains(grams)
        if not hit.any():
            return
        rows = np.repeat(np.arange(lay.docs, dtype=np.int64), np.diff(offs))[hit]
        # each n-gram once per row before it meets its items: a row repeating one n-gram 20,000 times against
        # a question that does too made 400 million (row, item, n-gram) triples (24 GB)
        pair = np.unique(np.stack([rows, grams[hit].view(np.int64)]), axis=1)
        rows, g = pair[0], pair[1].view(np.uint64)
        lo, hi = ix.ngrams.ranges(g)
        owners = ix.ngrams.values
        assert owners is not None  # the n-gram set is built with each n-gram's item (benchmarks.BenchIndex)
        rows, items, _ = _expand(rows, lo, hi, owners, None)  # (distinct on both sides: each triple once)
        pairs, counts = np.unique(np.stack([rows, items]), axis=1, return_counts=True)
        for r, item, n in zip(pairs[0].tolist(), pairs[1].tolist(), counts.tolist(), strict=True):
            m = self._match(found, r, item)
            m["ngram_matches"] = n
            m["ngram_overlap"] = round(n / max(1, int(ix.ngram_count[item])), 4)
            if n >= self.settings.ngram_min:
                m["methods"].append("ngram")

    def _minhash(self, feats: np.ndarray, offs: np.ndarray, found: dict[tuple[int, int], Match]) -> None:
        ix = self.index
        n_docs = len(offs) - 1
        inside = ix.vocab.contains(feats)
        owner = np.repeat(np.arange(n_docs, dtype=np.int64), np.diff(offs))
        kept = feats[inside]
        koffs = np.zeros(n_docs + 1, dtype=np.int64)
        np.cumsum(np.bincount(owner[inside], minlength=n_docs), out=koffs[1:])
        useful = np.diff(koffs) > 0
        if not useful.any():
            return
        keys = ft.band_keys(ft.signatures(kept, koffs))
        pr, pi = self._candidates(keys, useful)
        if not len(pr):
            return
        need = np.zeros(n_docs, dtype=bool)
        need[pr] = True
        sel = need[owner]  # only the features of rows with a candidate
        common, n_item = _common(ix, pr, pi, np.sort(_row_keys(feats[sel], owner[sel])))
        containment = common / np.maximum(n_item, 1)
        ok = (n_item >= MIN_FEATURES) & (containment >= self.settings.similarity)
        for k in np.flatnonzero(ok).tolist():
            m = self._match(found, int(pr[k]), int(pi[k]))
            m["containment"] = max(m["containment"], round(float(containment[k]), 4))
            m["methods"].append("minhash")

    def _candidates(self, keys: np.ndarray, useful: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows, items) of the distinct pairs sharing at least one LSH band key."""
        rows_l, items_l = [], []
        for b, (bkeys, bitems) in enumerate(self.index.bands):
            col = keys[:, b]
            hit = np.flatnonzero(ft.contains(bkeys, col) & useful)
            if not len(hit):
                continue
            lo = np.searchsorted(bkeys, col[hit], side="left")
            hi = np.searchsorted(bkeys, col[hit], side="right")
            r, i, _ = _expand(hit, lo, hi, bitems, None)
            rows_l.append(r)
            items_l.append(i)
        if not rows_l:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        pairs = np.unique(np.stack([np.concatenate(rows_l), np.concatenate(items_l)]), axis=1)
        return pairs[0], pairs[1]


_ROW_MIX = np.uint64(0x9E3779B97F4A7C15)


def _expand(rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, values: np.ndarray, extra: Any) -> tuple:
    """Each row repeated once per entry of its run values[lo:hi]: (rows, the run's values, `extra` alike)."""
    reps = hi - lo
    total = int(reps.sum())
    start = np.repeat(lo - (np.cumsum(reps) - reps), reps)
    idx = start + np.arange(total, dtype=np.int64)
    return np.repeat(rows, reps), values[idx], (np.repeat(extra, reps) if extra is not None else None)


def _row_keys(feats: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """One 64-bit key per (row, feature): a feature of one row never meets another row's."""
    return ft.mix(feats ^ (rows.astype(np.uint64) * _ROW_MIX))


def _common(ix: BenchIndex, pr: np.ndarray, pi: np.ndarray, row_keys: np.ndarray) -> tuple:
    """For each (row, item) pair: how many of the item's features the row has (`row_keys`: the rows'
    features as sorted _row_keys), and the item's feature count."""
    starts = ix.feature_offsets[pi]
    lens = ix.feature_offsets[pi + 1] - starts
    pair_of = np.repeat(np.arange(len(pi), dtype=np.int64), lens)
    idx = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(int(lens.sum()), dtype=np.int64)
    item_feats = ix.feature_flat[idx]
    member = ft.contains(row_keys, _row_keys(item_feats, pr[pair_of]))
    return np.bincount(pair_of, weights=member, minlength=len(pi)), lens
