"""The fold of convert on the row engine (convert/chunked.py): each chunk's part merged into the run's counts
in input order, its shard's lines appended to its output file and the rejects file, as one pass writes them.

In input order, per chunk: the errors of planning the sources up to the chunk's (a column map that fits no
preset), the file's failure if it could not be read this far, the template controls the chunk's rows asked
for first (run here, so that `template_controls` lists them in first-seen order and a failing one is raised
at the first row that needed it), then the run-level error that stopped the chunk, if any. Counts add; the
first rejects and unresolved references shown are the first of the run; the gold counts per output and
option count add position by position.
"""

from __future__ import annotations

from typing import Any

from ..engine import Shard
from ..parallel import Chunk
from .outputs import Outputs
from .run import Run
from .shuffled import Replan


class Folder:
    """The fold: `errors[i]` is the error of planning source i (None: planned); `bar` a progress bar or None."""

    def __init__(
        self,
        run: Run,
        errors: list[BaseException | None],
        outputs: Outputs,
        rj: Any,
        bar: Any,
        shuffled: bool = False,
    ) -> None:
        self.run, self.errors, self.outputs, self.rj, self.bar = run, errors, outputs, rj, bar
        self.shuffled = shuffled  # the rows took pass 1's placements (convert/shuffled.py)
        self.keys: list[str] = [""] * len(errors)  # each source's output key (set by the driver)
        self.raised_upto = -1

    def _planned(self, upto: int) -> None:
        """Raise the first error of planning the sources up to `upto`, in order."""
        while self.raised_upto < upto:
            self.raised_upto += 1
            exc = self.errors[self.raised_upto]
            if exc is not None:
                raise exc

    def finish(self) -> None:
        self._planned(len(self.errors) - 1)

    def __call__(self, chunk: Chunk, part: Any, shard: Shard | None) -> None:
        self._planned(chunk.source)
        if chunk.failure is not None:
            raise chunk.failure
        run = self.run
        for k, n, data in part.ensures:
            run.checker.ensure(run.mix.templates[k], n, data)
        if self.shuffled and part.placed > part.written:
            raise Replan(f"{chunk.file}: a row was rejected after its placement")
        if part.error is not None:
            raise part.error
        self._counts(chunk.source, part)
        data = shard.read() if shard is not None else b""
        if part.out_bytes:
            self.outputs.handle(self.keys[chunk.source]).write(data[: part.out_bytes])
        if len(data) > part.out_bytes:
            self.rj.write(data[part.out_bytes :])
        if self.bar is not None and part.read:
            self.bar.update(part.read)

    def _counts(self, source: int, part: Any) -> None:
        run = self.run
        sdoc = run.src_docs[source]
        sdoc["read"] += part.read
        sdoc["written"] += part.written
        sdoc["rejected"] += part.read - part.written
        self.outputs.rows[self.keys[source]] += part.lines
        run.by_reason.update(part.by_reason)
        run.tpl_rows.update(part.tpl_rows)
        run.n_rows.update(part.n_rows)
        counts = run.balancer.counts
        for kn, c in part.gold.items():
            have = counts.get(kn)
            counts[kn] = list(c) if have is None else [a + b for a, b in zip(have, c, strict=True)]
        pinned, gold_pinned, unresolved = part.pinned
        run.n_pinned += pinned
        run.n_gold_pinned += gold_pinned
        run.n_unresolved += unresolved
        _first(run.unresolved_shown, part.unresolved_shown, run.max_shown)
        _first(run.shown, part.shown, run.max_shown)
        p = run.permute
        if p is not None and part.permute is not None:
            q = part.permute
            p.questions += q["questions"]
            p.variants += q["variants"]
            p.by_variants.update(q["by_variants"])
            p.short.update(q["short"])
            p.anchored += q["anchored"]


def _first(into: list[Any], more: list[Any], limit: int) -> None:
    room = limit - len(into)
    if room > 0:
        into.extend(more[:room])
