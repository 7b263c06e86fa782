"""`convert --shuffle` on the row engine: option balancing is sequential (a row's gold position depends on
the gold counts of every earlier written row of its output and option count), so it runs in two passes.

1. `chunked.order_chunk` (workers): each row decoded and extracted as the conversion does it; for each row that
   extraction accepts (the rows that reach the option order), its option count, gold, pinned positions
   (balance.scan_pins) and its random (the last 24 bytes of its row hash), packed (FACT).
2. `Placer` (the fold of pass 1, here, in input order): run.Run.place on those facts with the run's own
   counters, each placement counted as written (the counts of one pass, if every placed row renders and
   passes its self-check), and each chunk's placements (target, then the order) written to a file of its
   own in the pass's work directory: the driver's memory does not grow with the rows.
3. The conversion (convert/chunked.py), each worker taking its chunk's placements instead of balancing.

A row rejected after its placement (its prompt graded to a letter by the self-check, which can depend on the
order) was counted in step 2 and one pass would not have counted it: the placements after it may differ.
The fold then stops the engine run (`Replan`) and the conversion runs again in one process.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engine import Job
from ..engine import run as engine_run
from ..engine.workdir import work_path, write_whole
from ..errors import InputError
from ..parallel import Chunk
from ..runs import RunRequest
from .balance import Balancer, RowRandom
from .run import Run

# a placed row's facts: option count, gold, flags (1: a reference that cannot be resolved), pinned positions
# (bit mask), its random (the last 24 bytes of its row hash)
FACT = struct.Struct("<BBBI24s")
_NONE: frozenset[int] = frozenset()


class Replan(Exception):
    """A row was rejected after its placement: the run's placements after it may differ from one pass's."""


@dataclass
class Facts:
    """Pass 1's part of a chunk: the packed facts of its rows that reach the option order, the text and
    options of its first unresolved references (as many as the report shows)."""

    rows: bytes = b""
    unresolved: list[tuple[str, list[str]]] = field(default_factory=list)


class Placer:
    """Pass 1's fold: each chunk's rows placed in input order by the run (its counts of pinned and unresolved
    rows are the report's), on a balancer of its own that counts every placed row as written; the chunk's
    placements written to `where`/<seq>."""

    def __init__(self, run: Run, keys: Sequence[str], where: Path) -> None:
        self.run, self.keys, self.where = run, keys, where
        self.balancer = Balancer()

    def __call__(self, chunk: Chunk, part: Facts | None, _shard: Any) -> None:
        if chunk.failure is not None or part is None:
            return  # (the conversion reaches the same failure in its place)
        run, key = self.run, self.keys[chunk.source]
        kept, run.balancer = run.balancer, self.balancer
        try:
            out = bytearray()
            unresolved = iter(part.unresolved)
            place_free = self.balancer.place_free_into
            for n, gold, flags, mask, r in FACT.iter_unpack(part.rows):
                if not (mask or flags):  # run.place of a row without pins: Balancer.place_free
                    place_free(out, key, n, gold, int.from_bytes(r, "big"))
                    continue
                pinned = frozenset(p for p in range(n) if mask >> p & 1) if mask else _NONE
                text, choices = next(unresolved, ("", [])) if flags else (None, [])
                target, order = run.place(
                    key, n, gold, RowRandom(int.from_bytes(r, "big")), pinned, text, choices
                )
                self.balancer.commit(key, n, target)
                out.append(target)
                out += bytes(order)
        finally:
            run.balancer = kept
        self.where.mkdir(exist_ok=True)
        write_whole(str(self.where / f"{chunk.seq:05d}"), bytes(out))


class Feeder:
    """A worker's option orders for its chunk's rows, read from pass 1's placements (a run.Orders:
    run.Run.reset takes it); `used`: rows that took one."""

    def __init__(self, data: bytes, where: str) -> None:
        self.data, self.pos, self.used, self.where = data, 0, 0, where

    def __call__(self, _key: str, choices: list[str], _gold: int, _seed: int) -> tuple[int, list[int]]:
        n, pos = len(choices), self.pos
        if pos + 1 + n > len(self.data):
            raise InputError(f"{self.where}: changed while being read", reason="input_changed")
        self.pos += 1 + n
        self.used += 1
        return self.data[pos], list(self.data[pos + 1 : pos + 1 + n])


def feeder(placements: str, chunk: Chunk, label: str) -> Feeder:
    try:
        with open(Path(placements) / f"{chunk.seq:05d}", "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        data = b""
    return Feeder(data, label)


def place(
    req: RunRequest,
    run: Run,
    settings: Any,
    sources: tuple[tuple[str, str | None], ...],
    keys: Sequence[str],
    identity: dict[str, Any],
    out: Path,
    work: Callable[[Chunk, Any], Facts],
    then: Callable[[str], None],
) -> None:
    """Pass 1 on the engine (its work directory beside the output, as `<output>.order`'s), then `then(the
    placements' directory)` while it is still there; the run's balancer is fresh again for the conversion,
    whose gold counts are those of the rows it writes."""
    scan_out = out.with_name(out.name + ".order")
    where = work_path(scan_out) / "placements"
    job = Job("convert-order", sources, work, settings, identity, scan_out, count_rows=True)

    def after(_work: Path, _info: Any) -> None:
        run.balancer = Balancer()
        then(str(where))

    engine_run(
        RunRequest(
            req.inputs,
            scan_out,
            req.workers,
            req.progress,
            req.resume,
            req.chunk_bytes,
            req.examples,
            req.engine,
            req.address,
        ),  # fmt: skip
        job,
        Placer(run, keys, where),
        then=after,
    )
