"""The one file hasher: sha256 (prepare's inputs, verify's outputs, LFS files on the hub, the load cache's Arrow
files) and git's blob sha1 (small files on the hub), streamed, with an optional byte counter for progress bars
and a line count; `Digest` for a file hashed in the pass that parses it (a prepared shard)."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from typing import Any

from ..errors import InputError, UsageError

BLOCK = 8 << 20
HASH_SHA256 = "sha256"
HASH_GIT_SHA1 = "git-blob-sha1"


def _hasher(kind: str, size: int) -> Any:
    if kind == HASH_SHA256:
        return hashlib.sha256()
    if kind == HASH_GIT_SHA1:
        h = hashlib.sha1(usedforsecurity=False)
        h.update(b"blob %d\0" % size)
        return h
    raise ValueError(f"unknown hash kind {kind!r}")


def hash_file(
    path: str | os.PathLike[str],
    kind: str = HASH_SHA256,
    on_bytes: Callable[[int], Any] | None = None,
    *,
    count_lines: bool = False,
) -> tuple[str, int, int]:
    """(hex digest, size in bytes, newline count when count_lines else 0), in one streaming pass. Only a
    regular file is hashed: a FIFO among a pulled directory's files hung `pull --offline` and `prepare`
    forever, waiting for a writer (found by an audit), and a pipe's bytes could not be read a second time."""
    size = lines = 0
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):  # a directory: the message below
            raise UsageError(  # the same failure, with the same exit code, as io.paths.require_regular's
                f"{path}: not a regular file (a pipe or a device): its bytes cannot be hashed and then read",
                reason="input_not_regular",
                path=str(path),
            )
        with open(path, "rb") as fh:
            h = _hasher(kind, os.fstat(fh.fileno()).st_size)
            while chunk := fh.read(BLOCK):
                h.update(chunk)
                size += len(chunk)
                if count_lines:
                    lines += chunk.count(b"\n")
                if on_bytes is not None:
                    on_bytes(len(chunk))
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a file", reason="input_is_directory") from None
    except FileNotFoundError:
        raise InputError(f"{path}: no such file", reason="missing_input", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}", reason="input_unreadable") from None
    return h.hexdigest(), size, lines


def sha256_file(
    path: str | os.PathLike[str], on_bytes: Callable[[int], Any] | None = None, *, count_lines: bool = False
) -> tuple[str, int, int]:
    """(sha256 hex, size in bytes, newline count when count_lines else 0), in one streaming pass."""
    return hash_file(path, HASH_SHA256, on_bytes, count_lines=count_lines)


class Digest:
    """The sha256 of a file's bytes as a reader that parses them sees them (one pass: verify's and
    load_prepared's shards), every block also counted on a progress bar's `on_bytes`. Call it with each block
    read, in order."""

    def __init__(self, on_bytes: Callable[[int], Any] | None = None) -> None:
        self._h = hashlib.sha256()
        self._on_bytes = on_bytes

    def __call__(self, block: bytes) -> None:
        self._h.update(block)
        if self._on_bytes is not None:
            self._on_bytes(len(block))

    def hexdigest(self) -> str:
        return self._h.hexdigest()


Stamp = tuple[int, int, int]


def stamp(path: str | os.PathLike[str]) -> Stamp:
    """(size, modification time, inode) of a file: taken before it is hashed, compared after it was read."""
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns, st.st_ino


def check_unchanged(stamps: dict[str, Stamp]) -> None:
    """A command that records an input's hash and then reads its rows must have read the hashed bytes: an
    input written to in between (size, time or inode changed) is refused, not recorded under a hash that is
    not the one of the rows read."""
    for path, before in stamps.items():
        try:
            now = stamp(path)
        except OSError:
            now = None
        if now != before:
            raise InputError(
                f"{path}: changed while it was read (after its hash was taken): the rows read may not be the "
                "bytes recorded; nothing was written",
                reason="input_changed",
                path=path,
            )
