"""Atomic file writers: data goes to a temporary file beside the target, is fsynced, then renamed into
place, so a reader never sees a half-written file under the final name."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def dumps_row(row: Any) -> str:
    """One JSONL line (no newline). Non-ASCII kept as is; NaN rejected (not JSON)."""
    return json.dumps(row, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))


class AtomicFile:
    """`with AtomicFile(path) as fh: fh.write(...)`: on success renamed into place, on error removed.

    Writing to '-' goes to stdout unbuffered by this class (no atomicity possible)."""

    def __init__(self, path: str | Path, mode: str = "w", encoding: str | None = "utf-8"):
        self.path = Path(path)
        self.mode = mode
        self.encoding = encoding if "b" not in mode else None
        self._tmp: str | None = None
        self._fh = None

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, self._tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        self._fh = os.fdopen(fd, self.mode, encoding=self.encoding, newline="" if self.encoding else None)
        return self._fh

    def __exit__(self, exc_type, exc, tb):
        assert self._fh is not None and self._tmp is not None
        try:
            if exc_type is None:
                self._fh.flush()
                os.fsync(self._fh.fileno())
            self._fh.close()
            if exc_type is None:
                os.replace(self._tmp, self.path)
                _fsync_dir(self.path.parent)
        finally:
            if os.path.exists(self._tmp):
                os.unlink(self._tmp)
        return False


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
