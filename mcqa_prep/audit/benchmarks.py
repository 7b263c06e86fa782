"""The benchmark side of the contamination check: benchmark files read by convert's own readers and extraction
(any layout convert reads: its presets, detected from the columns, or a column map), indexed in memory.

Each distinct benchmark question becomes an item: where it is (file, 1-based line or record, its id column),
its question and options as normalised words (text.py), and four indexes over all items, built once:

- `optset`: the option set's key -> items (exact copies, whatever the option order and labels);
- `ngrams`: every distinct word n-gram of a question or option (13 words by default), sorted, with its item;
- `bands`: the LSH band keys of every item's MinHash signature (features.py), sorted per band;
- `features`: every item's word-bigram set (exact verification of a candidate), and their union, `vocab`.

A question read again (the same words, context and option set, in any file) is not indexed again: it is
counted as a repeat of its first item (`BenchFile.repeated`), and the files it occurs in are kept with that
item (`also`), so that a match still counts for every benchmark holding the question. The work of a check
is then bounded by distinct questions and distinct n-grams (features.MAX_WORDS caps a document): a benchmark
of one question repeated 1,000,000 times is one item.

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
from ..io.paths import distinct_inputs
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
    repeated: int = 0  # questions already read (in this file or an earlier one): not indexed again
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
            "repeated_questions": self.repeated,
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
        self.also: dict[int, list[int]] = {}  # item -> the other files its question occurs in
        self._seen: dict[int, int] = {}  # a question's key (words, context, option set) -> its item
        self._docs: list[list[list[str]]] = []
        self._parts: list[tuple[np.ndarray, ...]] = []

    def __len__(self) -> int:
        return len(self.line)

    def add(
        self, file: int, line: int, ident: Any, question: str, context: str | None, options: list[str]
    ) -> bool:
        """Index a question; False when the same question was indexed before (a repeat: not indexed again)."""
        raw = ft.text_key([context or "", question, *options])  # (a verbatim repeat costs one hash)
        first = self._seen.get(raw)
        if first is not None:
            self._repeat(first, file)
            return False
        q = words(question)
        opts = options_words(options)
        ctx = words(context) if context else []
        key = ft.text_key([" ".join(ctx), " ".join(q), *sorted(" ".join(o) for o in opts)])
        first = self._seen.get(key)
        if first is not None:
            self._seen[raw] = first
            self._repeat(first, file)
            return False
        i = self._seen[key] = self._seen[raw] = len(self.line)
        self.file_of.append(file)
        self.line.append(line)
        self.ident.append(ident if isinstance(ident, (str, int)) and not isinstance(ident, bool) else None)
        self.question.append(" ".join(q))
        self.optset.setdefault(option_set_key(opts), []).append(i)
        self._docs.append([ctx + q, *opts])
        if len(self._docs) == BATCH:
            self._index_batch()
        return True

    def _repeat(self, first: int, file: int) -> None:
        if file != self.file_of[first] and file not in self.also.get(first, ()):
            self.also.setdefault(first, []).append(file)

    def _index_batch(self) -> None:
        docs, self._docs = self._docs, []
        if not docs:
            return
        base = len(self.line) - len(docs)
        items = np.arange(base, base + len(docs), dtype=np.int64)
        lay = ft.layout(docs)
        grams, gowner, gcounts = _distinct(*ft.kgrams(lay, self.ngram, short=False), items)
        feats, offs = ft.kgrams(lay, SHINGLE, short=True)
        f, _, counts = _distinct(feats, offs, items)
        keys = ft.band_keys(ft.signatures(feats, offs))
        self._parts.append((grams, gowner, gcounts, f, counts, keys, np.diff(offs) > 0))

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
        """The item's address, as findings name it (`also_in`: the other files holding the same question)."""
        f = self.files[self.file_of[i]]
        out = {"file": f.path, "line": self.line[i], "id": self.ident[i], "benchmark": f.argument}
        if i in self.also:
            out["also_in"] = [
                {"file": self.files[j].path, "benchmark": self.files[j].argument} for j in self.also[i]
            ]
        return out


def benchmarks_of(where: dict[str, Any]) -> list[str]:
    """The benchmarks (arguments) holding a matched question: where it was first read, and `also_in`."""
    return sorted({where["benchmark"], *(x["benchmark"] for x in where.get("also_in", ()))})


def _distinct(feats: np.ndarray, offs: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each item's distinct features, sorted: (features, their items, the count per item)."""
    owner = np.repeat(items, np.diff(offs))
    order = np.lexsort((feats, owner))
    f, o = feats[order], owner[order]
    first = np.ones(len(f), dtype=bool)
    first[1:] = (f[1:] != f[:-1]) | (o[1:] != o[:-1])
    return f[first], o[first], np.bincount(o[first] - items[0], minlength=len(items))


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
    streams = [(str(spec), src) for spec in specs for src in plan_sources([str(spec)], progress=progress)]
    distinct_inputs((src.path for _, src in streams if src.path is not None), "benchmark file")
    for spec, src in streams:
        _read_stream(index, src, cmap, spec, progress, strict)
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
        if not index.add(fi, line, item.id, item.question, item.context, item.choices):
            bf.repeated += 1
        bf.questions += 1
        bf.option_counts[len(item.choices)] += 1
    if not bf.questions:
        reasons = ", ".join(f"{k} {v}" for k, v in bf.rejected.most_common()) or "no rows"
        raise InputError(
            f"{src.label}: no question could be read from this benchmark file ({reasons})",
            reason="bench_empty",
        )
