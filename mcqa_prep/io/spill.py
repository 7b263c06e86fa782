"""Arrow record batches handed from the parent to a local worker process through a file instead of a pipe.

A Parquet row group too large for each worker to decode on its own is decoded once by the parent (Arrow has no
cheap way into the middle of a row group) and cut into record batches. Pickled, a batch is copied four times on
its way (into the pickle, into the pipe, out of it, out of the pickle); written once as an Arrow IPC stream into
a private temporary directory, it crosses the pipe as its file's name, and the worker maps the file and reads
the batch in place (no copy), then removes the file (the mapping keeps the bytes for as long as the batch lives).
For worker processes on this machine only: a Ray task may run on another node.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from ..errors import InputError


def spill_dir() -> str | None:
    """A private temporary directory for the batches of one pool (the caller removes it), or None when none
    can be made (the batches then travel pickled, as before)."""
    import tempfile

    try:
        return tempfile.mkdtemp(prefix=".mcqa-prep-batches-")
    except OSError:
        return None


def remove_spill_dir(directory: str | None) -> None:
    """The directory spill_dir made, with whatever batches no worker took (a stopped or failed run)."""
    if directory is not None:
        import shutil

        shutil.rmtree(directory, ignore_errors=True)


def write_spill(batch: Any, directory: str | None, name: str) -> str | None:
    """`batch` as an Arrow IPC stream at directory/name: the path, or None when it could not be written (no
    directory, a full disk: the batch then travels pickled, as before; nothing half-written is left)."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    if directory is None:
        return None
    path = os.path.join(directory, name)
    try:
        with pa.OSFile(path, "wb") as sink, ipc.new_stream(sink, batch.schema) as writer:
            writer.write_batch(batch)
    except (pa.ArrowException, OSError):
        with contextlib.suppress(OSError):
            os.unlink(path)
        return None
    return path


def read_spill(path: str, name: str, first_line: int) -> Any:
    """The batch write_spill wrote at `path`, mapped (not copied); the file is removed (the batch keeps its
    mapping). `name` and `first_line` name the input in the error when the file is gone."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    try:
        return ipc.open_stream(pa.memory_map(path)).read_next_batch()
    except (pa.ArrowException, OSError) as exc:
        raise InputError(
            f"{name}: Parquet data cannot be read past record {first_line}: its decoded copy {path} is "
            f"unreadable: {exc}",
            reason="unreadable_parquet",
        ) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
