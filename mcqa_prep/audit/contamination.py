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


Match = dict  # one (row, item) match: item, methods, ngram_matches, ngram_overlap, containment, jaccard


class Contamination:
    """The check of rows against one benchmark index with one set of thresholds."""

    def __init__(self, index: BenchIndex, settings: Settings) -> None:
        if index.ngram != settings.ngram:
            raise ValueError("the benchmark index was built for another n-gram length")
        self.index = index
        self.settings = settings

    def check(
        self, rows: Sequence[Parsed], docs: Sequence[Doc], feats: np.ndarray, offs: np.ndarray
    ) -> dict[int, list[Match]]:
        """For each flagged row (by position in `rows`), its matches, best first. `docs` are the rows'
        segments (question, options) and `feats`/`offs` their bigram features (features.kgrams)."""
        found: dict[tuple[int, int], Match] = {}
        self._exact(rows, found)
        self._ngrams(docs, found)
        self._minhash(docs, feats, offs, found)
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
                item=item, methods=[], ngram_matches=0, ngram_overlap=0.0, containment=0.0, jaccard=0.0
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

    def _ngrams(self, docs: Sequence[Doc], found: dict[tuple[int, int], Match]) -> None:
        ix = self.index
        grams, offs = ft.kgrams(docs, ix.ngram, short=False)
        hit = ft.contains(ix.ngram_keys, grams)
        if not hit.any():
            return
        owner = np.repeat(np.arange(len(docs), dtype=np.int64), np.diff(offs))
        counts: dict[tuple[int, int], set[int]] = {}
        for g, r in zip(grams[hit].tolist(), owner[hit].tolist(), strict=True):
            lo = np.searchsorted(ix.ngram_keys, g, side="left")
            hi = np.searchsorted(ix.ngram_keys, g, side="right")
            for item in ix.ngram_owner[lo:hi].tolist():
                counts.setdefault((r, item), set()).add(g)
        for (r, item), gs in counts.items():
            m = self._match(found, r, item)
            m["ngram_matches"] = len(gs)
            m["ngram_overlap"] = round(len(gs) / max(1, int(ix.ngram_count[item])), 4)
            if len(gs) >= self.settings.ngram_min:
                m["methods"].append("ngram")

    def _minhash(
        self, docs: Sequence[Doc], feats: np.ndarray, offs: np.ndarray, found: dict[tuple[int, int], Match]
    ) -> None:
        ix = self.index
        inside = ft.contains(ix.vocab, feats)
        owner = np.repeat(np.arange(len(docs), dtype=np.int64), np.diff(offs))
        kept = feats[inside]
        koffs = np.zeros(len(docs) + 1, dtype=np.int64)
        np.cumsum(np.bincount(owner[inside], minlength=len(docs)), out=koffs[1:])
        useful = np.diff(koffs) > 0
        if not useful.any():
            return
        keys = ft.band_keys(ft.signatures(kept, koffs))
        pairs: set[tuple[int, int]] = set()
        for b, (bkeys, bitems) in enumerate(ix.bands):
            col = keys[:, b]
            hit = ft.contains(bkeys, col) & useful
            for r in np.flatnonzero(hit).tolist():
                lo = np.searchsorted(bkeys, col[r], side="left")
                hi = np.searchsorted(bkeys, col[r], side="right")
                pairs.update((r, item) for item in bitems[lo:hi].tolist())
        for r, item in sorted(pairs):
            self._verify(found, r, item, feats[offs[r] : offs[r + 1]], kept[koffs[r] : koffs[r + 1]])

    def _verify(self, found: dict, r: int, item: int, row_feats: np.ndarray, row_kept: np.ndarray) -> None:
        f_item = self.index.features[item]
        common = np.intersect1d(f_item, row_feats, assume_unique=False).size
        containment = common / len(f_item) if len(f_item) else 0.0
        union = np.union1d(f_item, row_kept).size
        m = self._match(found, r, item)
        m["containment"] = max(m["containment"], round(containment, 4))
        m["jaccard"] = round(common / union, 4) if union else 0.0
        if len(f_item) >= MIN_FEATURES and containment >= self.settings.similarity:
            m["methods"].append("minhash")
