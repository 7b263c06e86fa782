"""What runs where a chunk is run (a worker process, a Ray task, the driver itself): the command's per-chunk
work, and its bytes written as the chunk's shard."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from ..parallel import Chunk
from .workdir import Done, Recorded, Shard, write_record, write_shard

SLOW_ENV = (
    "MCQA_PREP_TEST_CHUNK_SLEEP"  # test hook: seconds each chunk waits before its result is handed back
)


class Piece(NamedTuple):
    """A chunk's result with bytes to keep: `data` is written whole as the chunk's shard in the run's work
    directory (by the process that ran the chunk); `part` is the rest, handed to the fold."""

    data: bytes | memoryview
    part: Any


def run_chunk(
    work: Callable[[Chunk, Any], Any],
    settings: Any,
    shard_of: Callable[[int], str],
    driver: int,
    streams: bool,
    records: str | None,
    chunk: Chunk,
) -> Done | Recorded:
    """One chunk through the command's work, its bytes (if any) written as its shard: what a worker process
    or a Ray task does with a chunk. In the driver's own process (`driver`: its pid) the bytes also stay in
    memory for the fold; for a streaming job (`streams`) they are only there, since the fold appends them to
    the stream at once (a shard on disk is what a resumed run reads of a chunk not yet folded). With
    `records` (the run's work directory, where this process reaches it) it records the complete chunk too:
    the driver, which folds every chunk in turn, is spared the pickling; a recorded chunk crosses back as its
    record's bytes (`Recorded`: a `Done` again once unpickled)."""
    result = work(chunk, settings)
    if os.environ.get(SLOW_ENV):
        time.sleep(float(os.environ[SLOW_ENV]))
    here = os.getpid() == driver
    if not isinstance(result, Piece):
        done = Done(result, None)
    elif here and streams:
        done = Done(result.part, Shard(None, len(result.data), None, bytes(result.data)))
    else:
        shard = write_shard(shard_of(chunk.seq), result.data)
        if here:
            shard.data = bytes(result.data)
        done = Done(result.part, shard)
    if records is None:
        return done
    blob = write_record(records, chunk, done)
    if not here and (done.shard is None or done.shard.path is not None):
        # it crosses to the driver as the record's bytes: the result is pickled once, not twice
        return Recorded(blob, None if done.shard is None else done.shard.path)
    return done._replace(recorded=True)
