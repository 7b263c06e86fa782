"""`prepare --decontaminate-against BENCH...`: the contamination check as a row filter of a preparation.

`Decontamination.load` reads and indexes the benchmark files before any input row is read (refusing a
benchmark that is also an input); `check_rows` flags a chunk's rows in a worker (the index is shared with the
workers by fork); `Tally` counts the dropped rows in input order. A dropped row is neither written nor
rejected: it is counted as dropped with reason `contaminated` (manifest counts.dropped_by_reason).

`settings()` is what makes this part of a preparation, recorded in the manifest's `decontamination` object and
compared by prepared.accept.decide: each benchmark file's identity (sha256, bytes, questions read; sorted,
so the order they were given in does not count; not its path), how they were read (preset, column map) and the
thresholds. Another benchmark set or threshold is another preparation.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..progress import Progress
from ..records import display_name
from .benchmarks import BenchIndex, Mapping, load
from .contamination import Contamination, Settings
from .text import RowText

DROP_REASON = "contaminated"
EXAMPLES = 20


@dataclass(frozen=True)
class DecontaminationRequest:
    benchmarks: tuple[str, ...]
    mapping: Mapping = Mapping()
    settings: Settings = Settings()


class Decontamination:
    """A loaded request: the benchmark index and the check."""

    def __init__(self, request: DecontaminationRequest, index: BenchIndex) -> None:
        self.request = request
        self.index = index
        self.check = Contamination(index, request.settings)
        self.text = RowText()

    @classmethod
    def load(
        cls,
        request: DecontaminationRequest | None,
        inputs: Iterable[str | os.PathLike] = (),
        progress: Progress | None = None,
    ) -> Decontamination | None:
        if request is None or not request.benchmarks:
            return None
        request.settings.check()
        _not_an_input(request.benchmarks, inputs)
        index = load(request.benchmarks, request.mapping, ngram=request.settings.ngram, progress=progress)
        return cls(request, index)

    def check_rows(self, rows: Sequence[Any]) -> dict[int, str]:
        """Which of `rows` (records.Row) hold a benchmark question: position -> the best match, as text."""
        from . import features as ft
        from .benchmarks import SHINGLE

        live = [i for i, r in enumerate(rows) if isinstance(r.data, dict)]
        if not live:
            return {}
        parsed = [self.text.parse(rows[i].data, rows[i].hint) for i in live]
        docs = [[p.question, *p.options] for p in parsed]
        lay = ft.layout(docs)
        feats, offs = ft.kgrams(lay, SHINGLE, short=True)
        out = {}
        for r, matches in self.check.check(parsed, docs, feats, offs, lay).items():
            m = matches[0]
            w = self.index.where(m["item"])
            out[live[r]] = f"{w['file']}:{w['line']} ({', '.join(m['methods'])})"
        return out

    def settings(self) -> dict[str, Any]:
        """What makes this part of a preparation (see the module docstring)."""
        files = sorted((f.identity() for f in self.index.files), key=lambda f: f["sha256"])
        return {
            "benchmarks": [{k: f[k] for k in ("sha256", "bytes", "questions")} for f in files],
            "preset": self.request.mapping.preset,
            "map": list(self.request.mapping.pairs),
            "thresholds": self.request.settings.to_dict(),
        }

    def section(self, tally: Tally) -> dict[str, Any]:
        """The manifest's `decontamination` object."""
        return {
            "settings": self.settings(),
            "benchmark_paths": [f.path for f in self.index.files],
            "evidence": {"rows_dropped": tally.dropped, "examples": tally.examples},
        }


@dataclass
class Tally:
    dropped: int = 0
    examples: list[str] = field(default_factory=list)
    by_split: Counter = field(default_factory=Counter)

    def add(self, where: str, match: str) -> None:
        self.dropped += 1
        if len(self.examples) < EXAMPLES:
            self.examples.append(f"{where} ~ {match}")


def _not_an_input(benchmarks: Iterable[str], inputs: Iterable[str | os.PathLike]) -> None:
    ins = [Path(i).resolve() for i in inputs]
    for b in benchmarks:
        p = Path(b).resolve()
        for i in ins:
            if p == i or i in p.parents or p in i.parents:
                raise UsageError(
                    f"{display_name(b)}: the benchmark is also an input (or inside one, or holds one)",
                    reason="bench_is_input",
                )
