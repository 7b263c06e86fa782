"""Filesystem faults for the hostile suite: a real read-only mount and a real tiny filesystem (tmpfs) where
this machine lets the tests mount (root, as on CI), and a patched writer where it does not; plus injected
faults (a write, an open, an fsync or a rename failing with ENOSPC, EIO, EACCES, EROFS) at the layer every
writer goes through (io/writers.AtomicFile's file object, io/shards' and convert.outputs' files, os.fsync,
os.replace/os.rename)."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .kit import mounts_allowed


def _mount(args: list[str]) -> bool:
    try:
        done = subprocess.run(args, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path | None]:
    """A fresh tmpfs of `size` at `path`, unmounted afterwards; None when mounting is refused here."""
    path.mkdir(parents=True, exist_ok=True)
    if not mounts_allowed() or not _mount(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)]):
        yield None
        return
    try:
        yield path
    finally:
        _mount(["umount", "-l", str(path)])


def remount_read_only(path: Path) -> bool:
    return _mount(["mount", "-o", "remount,ro", str(path)])


def fill(path: Path, leave: int) -> None:
    """Fill the filesystem at `path` until only about `leave` bytes are free."""
    st = os.statvfs(path)
    free = st.f_bavail * st.f_frsize
    with open(path / ".filler", "wb") as fh:
        fh.write(b"\0" * max(0, free - leave))


class FaultyFile:
    """A real file object whose writes fail with `err` once `budget` bytes went through."""

    def __init__(self, fh: Any, err: int, budget: int):
        self._fh = fh
        self._err = err
        self._budget = budget

    def write(self, data: Any) -> int:
        if len(data) > self._budget:
            raise OSError(self._err, os.strerror(self._err), getattr(self._fh, "name", None))
        self._budget -= len(data)
        return self._fh.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fh, name)

    def __enter__(self) -> FaultyFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._fh.close()

    def __iter__(self):
        return iter(self._fh)


def _raise(err: int, name: Any = None):
    raise OSError(err, os.strerror(err), str(name) if name is not None else None)


def inject(monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    """Make every output write of mcqa-prep fail the named way (see FAULTS)."""
    from mcqa_prep.convert import outputs as convert_outputs
    from mcqa_prep.io import shards

    kind, name = fault.split(":")
    err = {"enospc": errno.ENOSPC, "eio": errno.EIO, "eacces": errno.EACCES, "erofs": errno.EROFS}[name]
    if kind in ("write-first", "write-later"):
        budget = 0 if kind == "write-first" else 4096
        real_fdopen = os.fdopen

        def fdopen(fd, *a, **kw):
            return FaultyFile(real_fdopen(fd, *a, **kw), err, budget)

        def opener(file, mode="r", *a, **kw):
            fh = open(file, mode, *a, **kw)  # noqa: SIM115 - wrapped, closed by its user
            return FaultyFile(fh, err, budget) if any(c in mode for c in "wax") else fh

        monkeypatch.setattr(os, "fdopen", fdopen)
        monkeypatch.setattr(shards, "open", opener, raising=False)
        monkeypatch.setattr(convert_outputs, "open", opener, raising=False)
    elif kind == "create":
        real_open = os.open

        def os_open(path, flags, *a, **kw):
            if flags & os.O_CREAT:
                _raise(err, path)
            return real_open(path, flags, *a, **kw)

        def opener(file, mode="r", *a, **kw):
            if any(c in mode for c in "wax"):
                _raise(err, file)
            return open(file, mode, *a, **kw)  # noqa: SIM115

        monkeypatch.setattr(os, "open", os_open)
        monkeypatch.setattr(shards, "open", opener, raising=False)
        monkeypatch.setattr(convert_outputs, "open", opener, raising=False)
    elif kind == "fsync":
        monkeypatch.setattr(os, "fsync", lambda fd: _raise(err))
    elif kind == "rename":
        monkeypatch.setattr(os, "replace", lambda a, b, **kw: _raise(err, b))
        monkeypatch.setattr(os, "rename", lambda a, b, **kw: _raise(err, b))
    else:  # pragma: no cover
        raise ValueError(fault)


FAULTS = [
    "write-first:enospc",
    "write-later:eio",
    "create:eacces",
    "create:erofs",
    "fsync:eio",
    "rename:eacces",
]
