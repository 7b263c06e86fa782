"""The benchmark side of the contamination check: benchmark files read by convert's own readers and extraction
(any layout convert reads: its presets, detected from the columns, or a column map), indexed in memory.

Each benchmark question becomes an item: where it is (file, 1-based line or record, its id column), its
question and options as normalised words (text.py), and four indexes over all items, built once:

- `optset`: the option set's key -> items (exact copies, whatever the option order and labels);
- `ngrams`: every word n-gram of a question or option (13 words by default), sorted, with its item;
- `bands`: the LSH band keys of every item's MinHash signature (features.py), sorted per band;
- `features`: every item's word-bigram set (exact verification of a candidate), and their union, `vocab`.

Every benchmark file is hashed (sha256), so a preparation records exactly what it was decontaminated against.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, UsageError
from ..io.hashing import sha256_file
from ..progress import Progress
from ..records import display_name
from . import features as ft
from .text import options_words, words

SHINGLE = 2  # words per MinHash feature (a shorter segment is one feature)
BATCH = 4096  # benchmark items indexed at a time


@dataclass(frozen=True)
class Mapping:
    """How benchmark columns are read: convert's preset name (None: detected per file) and KEY=COLUMN pairs."""

    preset: str | None = None
    pairs: tuple[str, ...] = ()


@dataclass
class BenchFile:
    """One benchmark file: its identity and what was read from it."""

    argument: str
    path: str
    sha256: str
    bytes: int
    preset: str | None
    read: int = 0
    questions: int = 0
    rejected: Counter = field(default_factory=Counter)
    option_counts: Counter = field(default_factory=Counter)

    def identity(self) -> dict[str, Any]:
        """What a preparation records of it (and compares: another file, or other bytes, is another set)."""
        return {"path": self.path, "sha256": self.sha256, "bytes": self.bytes, "questions": self.questions}

    def to_dict(self) -> dict[str, Any]:
        return {
            "argument": self.argument,
            **self.identity(),
            "preset": self.preset,
            "rows_read": self.read,
            "rejected_by_reason": dict(sorted(self.rejected.items())),
            "option_counts": {str(n): c for n, c in sorted(self.option_counts.items())},
        }


class BenchIndex:
    """Every benchmark item and the indexes over them (see the module docstring). Items are indexed BATCH at
    a time (their words are not kept); `build` joins the batches once every item was added."""

    def __init__(self, files: list[BenchFile], ngram: int) -> None:
        self.files = files
        self.ngram = ngram
        self.file_of: list[int] = []
        self.line: list[int] = []
        self.ident: list[Any] = []
        self.question: list[str] = []
        self.optset: dict[int, list[int]] = {}
        self._docs: list[list[list[str]]] = []
        self._parts: list[tuple[np.ndarray, ...]] = []

    def __len__(self) -> int:
        return len(self.line)

    def add(
        self, file: int, line: int, ident: Any, question: str, context: str | None, options: list[str]
    ) -> None:
        q = words(question)
        opts = options_words(options)
        i = len(self.line)
        self.file_of.append(file)
        self.line.append(line)
        self.ident.append(ident if isinstance(ident, (str, int)) and not isinstance(ident, bool) else None)
        self.question.append(" ".join(q))
        self.optset.setdefault(option_set_key(opts), []).append(i)
        self._docs.append([words(context) + q if context else q, *opts])
        if len(self._docs) == BATCH:
            self._index_batch()

    def _index_batch(self) -> None:
        docs, self._docs = self._docs, []
        if not docs:
            return
        base = len(self.line) - len(docs)
        items = np.arange(base, base + len(docs), dtype=np.int64)
        grams, goffs = ft.kgrams(docs, self.ngram, short=False)
        feats, offs = ft.kgrams(docs, SHINGLE, short=True)
        owner = np.repeat(items, np.diff(offs))
        order = np.lexsort((feats, owner))  # each item's features, sorted and unique
        f, o = feats[order], owner[order]
        first = np.ones(len(f), dtype=bool)
        first[1:] = (f[1:] != f[:-1]) | (o[1:] != o[:-1])
        counts = np.bincount(o[first] - base, minlength=len(docs))
        keys = ft.band_keys(ft.signatures(feats, offs))
        self._parts.append(
            (
                grams,
                np.repeat(items, np.diff(goffs)),
                np.diff(goffs),
                f[first],
                counts,
                keys,
                np.diff(offs) > 0,
            )
        )

    def build(self) -> None:
        """The n-gram, band and feature indexes (after every item was added)."""
        self._index_batch()
        parts, self._parts = self._parts, []
        grams, owner, gcount, feats, fcount, keys, nonempty = (
            np.concatenate([p[k] for p in parts]) for k in range(7)
        )
        self.ngrams = ft.KeySet(grams, owner)  # n-gram -> item
        self.ngram_count = gcount
        self.feature_flat = feats
        self.feature_offsets = np.concatenate([[0], np.cumsum(fcount)]).astype(np.int64)
        self.vocab = ft.KeySet(np.unique(feats))
        items = np.arange(len(keys), dtype=np.int64)[nonempty]
        self.bands = []
        for b in range(ft.BANDS):
            k = keys[nonempty, b]
            o = np.argsort(k, kind="stable")
            self.bands.append((k[o], items[o]))

    def features(self, i: int) -> np.ndarray:
        """Item i's word-bigram features, sorted and unique."""
        return self.feature_flat[self.feature_offsets[i] : self.feature_offsets[i + 1]]

    def where(self, i: int) -> dict[str, Any]:
        """The item's address, as findings name it."""
        f = self.files[self.file_of[i]]
        return {"file": f.path, "line": self.line[i], "id": self.ident[i], "benchmark": f.argument}


def option_set_key(opts: Sequence[Sequence[str]]) -> int:
    return ft.text_key(sorted(" ".join(o) for o in opts))


def load(
    specs: Sequence[str | os.PathLike],
    mapping: Mapping = Mapping(),
    *,
    ngram: int = 13,
    progress: Progress | None = None,
    strict: bool = True,
) -> BenchIndex:
    """Read every benchmark file (local files, directories, pulled directories) and index its questions.
    UsageError for a missing file, a hub id or a layout no preset matches; InputError for a benchmark file
    without a single readable question, and (`strict`) for one with a line that cannot be read at all (a
    truncated line: a question that cannot be read cannot be found in the rows; without `strict` such lines
    are counted in the file's `rejected_by_reason`)."""
    from ..convert.run import Mapping as ConvertMapping
    from ..convert.sources import plan_sources

    for spec in specs:
        if not Path(spec).exists():
            raise UsageError(
                f"{spec}: no such benchmark file or directory (hub ids are not read here: pull them first)",
                reason="bench_missing",
            )
    cmap = ConvertMapping(mapping.preset, tuple(mapping.pairs), ())
    files: list[BenchFile] = []
    index = BenchIndex(files, ngram)
    for spec in specs:
        for src in plan_sources([str(spec)], progress=progress):
            _read_stream(index, src, cmap, str(spec), progress, strict)
    if not len(index):
        raise InputError("no question could be read from the benchmark files", reason="bench_empty")
    index.build()
    return index


def _read_stream(
    index: BenchIndex, src: Any, mapping: Any, argument: str, progress: Progress | None, strict: bool = True
) -> None:
    from ..convert.extract import Extractor
    from ..convert.run import map_for
    from ..convert.shapes import RowReject

    assert src.path is not None
    digest, size, _ = sha256_file(src.path)
    columns = src.columns()
    if columns is None:
        raise InputError(
            f"{src.label}: no question could be read from this benchmark file", reason="bench_empty"
        )
    try:
        cmap, preset = map_for(src, columns, mapping)
        ext = Extractor(cmap, columns, where=src.label)
    except UsageError as exc:  # convert's reasons name convert's flags: these name the benchmark's layout
        raise UsageError(f"benchmark {exc}", reason="bench_layout", columns=columns[:40]) from None
    bf = BenchFile(display_name(argument), display_name(src.label), digest, size, preset)
    fi = len(index.files)
    index.files.append(bf)
    for _, line, data, error in src.rows(None):
        bf.read += 1
        try:
            if error is not None:
                if strict:
                    raise InputError(
                        f"{src.label}:{line}: a benchmark line that cannot be read ({error}): the contamination "
                        "check would not cover its question",
                        reason="unreadable_benchmark",
                        path=src.label,
                        line=line,
                    )
                raise RowReject("malformed_row", error)
            item = ext.extract(data)
        except RowReject as r:
            bf.rejected[r.reason] += 1
            continue
        index.add(fi, line, item.id, item.question, item.context, item.choices)
        bf.questions += 1
        bf.option_counts[len(item.choices)] += 1
    if not bf.questions:
        reasons = ", ".join(f"{k} {v}" for k, v in bf.rejected.most_common()) or "no rows"
        raise InputError(
            f"{src.label}: no question could be read from this benchmark file ({reasons})",
            reason="bench_empty",
        )
