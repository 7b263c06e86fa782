"""Small performance helpers shared by the streaming commands (validate; prepare and rescore may reuse them)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Allocations between two young-generation collections while streaming (CPython's default is 700).
STREAM_GEN0_THRESHOLD = 50_000


@contextmanager
def streaming_gc(gen0: int = STREAM_GEN0_THRESHOLD) -> Iterator[None]:
    """Cheaper cyclic garbage collection around a loop that streams many acyclic rows.

    Rows are freed by reference counting; the cyclic collector only re-scans them (and every long-lived
    object of the process, on each full collection) for nothing. Inside the block the objects alive at entry
    are frozen (gc.freeze: never scanned again until the block ends) and the young-generation threshold is
    raised to `gen0`; collection stays enabled, so a cycle made inside the block is still reclaimed. The
    previous thresholds are restored and the frozen objects returned to the collector on exit, also on error.
    Nesting is harmless (an inner exit unfreezes early, which only costs speed)."""
    old = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(gen0, old[0]), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


ARROW_POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"


def use_system_allocator_for_arrow() -> None:
    """Have Arrow allocate with the C library's malloc (its "system" pool) instead of its default, mimalloc,
    unless the user chose a pool (the variable set) or pyarrow is imported already (Arrow reads the variable
    once, when it is loaded). Measured on validate and prepare over the bench's Parquet rows: mimalloc hands
    decoded pages back to the kernel and faults fresh ones in batch after batch (about twice the kernel time
    of the system pool, and a tenth to a fifth more peak RSS; the wall time is within a few percent either
    way: docs/design/performance.md, "Arrow's allocator"); glibc's malloc keeps freed memory for the next
    batch in a worker (keep_freed_memory) and is given back by release_memory's malloc_trim.
    The command-line program sets it for its own process, its forked workers and a Ray instance it starts;
    a library caller keeps its own choice."""
    import os
    import sys

    if "pyarrow" not in sys.modules:
        os.environ.setdefault(ARROW_POOL_ENV, "system")


def release_memory() -> None:
    """Give back to the system what a finished build freed (before worker processes are forked, whose resident
    memory starts as this process's): Python's garbage, Arrow's pool, glibc's free heap (malloc_trim). Freed
    memory that stays mapped counts in every forked worker as it did here. Harmless where a step is missing."""
    import sys

    gc.collect()
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        try:
            pa.default_memory_pool().release_unused()
        except Exception:  # noqa: BLE001 - an older pyarrow, or a pool that cannot: nothing to give back
            pass
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


# glibc mallopt parameters: M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD
_MALLOPT = ((-1, 256 << 20), (-2, 64 << 20), (-3, 256 << 20))


def keep_freed_memory() -> None:
    """A worker allocates and frees a chunk's worth of buffers (its input, the parsed rows, the output lines)
    once per chunk; glibc hands the large ones back to the kernel on every free and takes fresh zeroed pages
    on the next chunk, page fault by page fault. Measured on rescore with 2 workers: about a sixth of the
    workers' CPU time was the kernel's. Here large blocks come from the heap and freed memory stays for the next
    chunk (a chunk is bounded, so is what is kept). Only glibc has mallopt; elsewhere nothing changes."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    for param, value in _MALLOPT:
        mallopt(param, value)
