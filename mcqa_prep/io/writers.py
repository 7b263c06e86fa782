"""The one atomic writer, and the one way a row becomes a JSONL line.

`AtomicFile(path)`: data goes to a temporary file beside the target, is fsynced, renamed into place and the
directory fsynced, so a reader never sees a half-written file under the final name and a crash never
leaves one. The file gets the permissions the umask gives a new file (mkstemp's 0600 is for secrets, not
data). `AtomicFile('-')` writes to stdout (nothing to make atomic). Temporary files carry the writer's pid:
the next writer of the same target removes those of dead processes (a killed run leaves no garbage for long).
Every OS failure becomes `OutputError` naming the path, after the temporary file is removed.

Worker processes may write pieces of the file themselves (`AtomicFile.parts`, see `Parts`): the parent
then appends each piece in the kernel (`GuardedFile.append_part`) instead of receiving its bytes through a
pipe and writing them again, so the parent's share of the work stays small however many workers there are.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import stat
import sys
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal

import orjson

from ..errors import OutputError

STDOUT = "-"


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_current_umask()


def dumps_row(row: Any) -> str:
    """One JSONL line (no newline). Non-ASCII kept as is; NaN rejected (not JSON)."""
    return json.dumps(row, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))


class WideInteger(TypeError):
    """An integer beyond 64 bits in a row that must hold 64-bit integers only (Parquet output)."""


def row_line(row: Any, *, wide_ints: bool = True) -> bytes:
    """One compact JSONL line with its newline, as the hot paths write rows: orjson, or Python's json for an
    integer beyond 64 bits (orjson holds 64-bit integers only; the row is valid JSON and is written exactly,
    the same by every command), or WideInteger for one when `wide_ints` is False (a writer whose format cannot
    hold it). Raises TypeError or ValueError for what JSON cannot hold (NaN, bytes)."""
    try:
        return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)  # no copy of the line to add "\n"
    except orjson.JSONEncodeError as exc:
        if "64-bit" not in str(exc):
            raise TypeError(str(exc)) from None
        if not wide_ints:
            raise WideInteger(str(exc)) from None
    return (json.dumps(row, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n").encode()


def output_error(exc: OSError, path: str | os.PathLike[str], doing: str = "cannot write") -> OutputError:
    """An OSError while writing `path`, as the library reports it (the CLI adds the fix). Making a parent
    directory where a file of that name stands fails with "File exists" (EEXIST): said as what it is."""
    what = exc.strerror or str(exc)
    if _file_for_directory(exc):
        what = f"{os.fsdecode(exc.filename)} is a file, not a directory"
    return OutputError(f"{path}: {doing}: {what}", reason=f"output_{_errno_reason(exc)}", path=str(path))


def _file_for_directory(exc: OSError) -> bool:
    return exc.errno == errno.EEXIST and exc.filename is not None and not os.path.isdir(exc.filename)


def _errno_reason(exc: OSError) -> str:
    if _file_for_directory(exc):
        return "missing_directory"
    return {
        errno.ENOSPC: "disk_full",
        errno.EDQUOT: "disk_full",
        errno.EROFS: "read_only",
        errno.EACCES: "permission",
        errno.EPERM: "permission",
        errno.ENOENT: "missing_directory",
        errno.ENOTDIR: "missing_directory",
        errno.EISDIR: "is_directory",
    }.get(exc.errno or 0, "os")


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a rename inside `path` durable (best effort: some filesystems refuse a directory fsync)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _tmp_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"^\.{re.escape(name)}\.(\d+)-[0-9a-f]+\.tmp$")


def remove_dead_temporaries(path: Path) -> None:
    """Remove `.NAME.<pid>-<hex>.tmp` files beside `path` whose writer is gone."""
    pat = _tmp_pattern(path.name)
    with contextlib.suppress(OSError):
        for p in path.parent.iterdir():
            m = pat.match(p.name)
            if m and not pid_alive(int(m.group(1))):
                with contextlib.suppress(OSError):
                    p.unlink()


class GuardedFile:
    """The open temporary file, with write failures (a full disk) reported against the target's path."""

    __slots__ = ("_fh", "_target")

    def __init__(self, fh: IO[Any], target: Path) -> None:
        self._fh = fh
        self._target = target

    def write(self, data: Any) -> int:
        try:
            return self._fh.write(data)
        except OSError as exc:
            raise output_error(exc, self._target) from None

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._fh.flush()
        except OSError as exc:
            raise output_error(exc, self._target) from None

    @property
    def buffer(self) -> GuardedFile:
        """The binary stream under a text one (stdout), guarded the same way."""
        return GuardedFile(self._fh.buffer, self._target)  # type: ignore[attr-defined]  # (a text stream)

    def append_part(self, path: str, remove: bool = True) -> None:
        """Append the file a worker wrote at `path` (Parts.write, or a run's shard) and remove it (unless
        `remove` is False: a shard the run keeps until it completes)."""
        try:
            self._fh.flush()
            src = os.open(path, os.O_RDONLY)
            try:
                _copy_rest(src, self._fh.fileno())
            finally:
                os.close(src)
            if remove:
                os.unlink(path)
        except OSError as exc:
            raise output_error(exc, self._target) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fh, name)


_NO_KERNEL_COPY = {"EXDEV", "ENOSYS", "EINVAL", "EOPNOTSUPP", "ENOTSUP", "EBADF", "EPERM"}


def _copy_rest(src: int, dst: int) -> None:
    """Copy from src's position to its end onto dst's position, in the kernel where it can (copy_file_range);
    else (another filesystem, an old kernel, not Linux) through a buffer."""
    import errno

    kernel = getattr(os, "copy_file_range", None)
    while kernel is not None:
        try:
            if kernel(src, dst, 1 << 30) == 0:
                return
        except OSError as exc:
            if errno.errorcode.get(exc.errno or 0) not in _NO_KERNEL_COPY:
                raise
            kernel = None  # positions are where the kernel stopped: the buffer loop goes on from there
    while block := os.read(src, 1 << 20):
        view = memoryview(block)
        while view:
            view = view[os.write(dst, view) :]


class Parts:
    """Pieces of an AtomicFile that worker processes write, numbered; the parent appends them in order with
    GuardedFile.append_part. A piece is named like the temporary file with its number inside the hex tag
    (`.NAME.<pid>-<hex><number>.tmp`), so it goes with the temporary file: removed when the run fails, and by
    the next writer when the run was killed. Picklable (a path and a name): workers get it with their work.
    Pieces need free space beside the output for the chunks in flight (a few per worker, each a chunk's
    output) until they are appended; a run of one chunk has no workers and writes none."""

    __slots__ = ("stem", "target", "owner")

    def __init__(self, stem: str, target: str) -> None:
        self.stem = stem  # the temporary file's path without '.tmp'
        self.target = target
        self.owner = os.getpid()  # the process that appends; it has no use for pieces of its own

    def wanted(self) -> bool:
        """Whether this process should write a piece: only a worker, never the process that appends."""
        return os.getpid() != self.owner

    def path(self, number: int) -> str:
        return f"{self.stem}{number:016x}.tmp"

    def write(self, number: int, data: bytes) -> str:
        """Write piece `number` (in a worker); its path, for the parent to append."""
        path = self.path(number)
        try:
            with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _FILE_MODE), "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise output_error(exc, self.target) from None
        return path

    def remove_all(self) -> None:
        folder, stem = os.path.split(self.stem)
        with contextlib.suppress(OSError):
            for name in os.listdir(folder or "."):
                if name.startswith(stem) and name.endswith(".tmp") and name != stem + ".tmp":
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(folder, name))

    def __getstate__(self) -> tuple[str, str, int]:
        return self.stem, self.target, self.owner

    def __setstate__(self, state: tuple[str, str, int]) -> None:
        self.stem, self.target, self.owner = state


class AtomicFile:
    """`with AtomicFile(path) as fh: fh.write(...)`: on success renamed into place, on error removed.
    `parts` (None for stdout) is where workers may write pieces for `fh.append_part`.

    What the path names decides how it is written: a regular file (or a new name) atomically as above; a
    symbolic link, by writing the file it points to atomically (the link stays a link); a device, a FIFO or
    a socket (`-o /dev/null`, `-o /dev/stdout`, `-o >(gzip > x)`), in place like stdout: there is nothing to
    make atomic, and renaming a file over it would replace the device itself."""

    def __init__(self, path: str | os.PathLike[str], mode: str = "w", encoding: str | None = "utf-8"):
        self.stdout = str(path) == STDOUT
        self.path = Path(path)
        self.mode = mode
        self.encoding = encoding if "b" not in mode else None
        self._tmp: Path | None = None
        self._fh: IO[Any] | None = None
        self.parts: Parts | None = None
        self._in_place = False  # a device or a pipe: written where it is, never replaced

    def __enter__(self) -> Any:
        if self.stdout:
            return sys.stdout.buffer if "b" in self.mode else sys.stdout
        try:
            st = os.stat(self.path)  # through any symbolic link
        except OSError:
            st = None  # a new name (or one that cannot be reached: reported when the temporary file is made)
        if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
            return self._enter_in_place()
        if self.path.is_symlink():
            self.path = Path(os.path.realpath(self.path))
        parent = self.path.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
            remove_dead_temporaries(self.path)
            self._tmp = parent / f".{self.path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
            fd = os.open(self._tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _FILE_MODE)
        except OSError as exc:
            raise output_error(exc, self.path) from None
        self._fh = os.fdopen(fd, self.mode, encoding=self.encoding, newline="" if self.encoding else None)
        self.parts = Parts(str(self._tmp)[: -len(".tmp")], str(self.path))
        return GuardedFile(self._fh, self.path)

    def _enter_in_place(self) -> GuardedFile:
        self._in_place = True
        try:
            fd = os.open(self.path, os.O_WRONLY)
        except OSError as exc:
            raise output_error(exc, self.path) from None
        self._fh = os.fdopen(fd, self.mode, encoding=self.encoding, newline="" if self.encoding else None)
        return GuardedFile(self._fh, self.path)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Literal[False]:
        if self.stdout:
            if exc_type is None:
                with contextlib.suppress(OSError, ValueError):
                    sys.stdout.flush()
            return False
        if self._in_place:
            assert self._fh is not None
            try:
                self._fh.close()  # flushes: a full device fails here at the latest
            except OSError as err:
                if exc_type is None:
                    raise output_error(err, self.path) from None
            return False
        assert self._fh is not None and self._tmp is not None
        try:
            try:
                if exc_type is None:
                    self._fh.flush()
                    os.fsync(self._fh.fileno())
                self._fh.close()
                if exc_type is None:
                    os.replace(self._tmp, self.path)
                    fsync_dir(self.path.parent)
            except OSError as err:
                if exc_type is None:
                    raise output_error(err, self.path) from None
        finally:
            with contextlib.suppress(FileNotFoundError, OSError):
                if self._tmp.exists():
                    self._tmp.unlink()
            if self.parts is not None:
                self.parts.remove_all()  # pieces not appended: the run failed
        return False


def place_file(done: str | os.PathLike[str], path: str | os.PathLike[str]) -> None:
    """Make the complete file `done` the output `path`, as AtomicFile would have written it: renamed into
    place (durably, with the permissions a new file gets) when both are on one filesystem; else, and for
    stdout, a device, a pipe or a link's target elsewhere, copied through AtomicFile. `done` is gone after."""
    target = Path(path)
    special = str(path) == STDOUT
    if not special:
        with contextlib.suppress(OSError):
            special = not stat.S_ISREG(os.stat(target).st_mode)  # (a directory is refused by rename)
    if target.is_symlink():
        target = Path(os.path.realpath(target))
    try:
        if special:
            raise OSError(18, "not a file to rename over")
        os.chmod(done, _FILE_MODE)
        fd = os.open(done, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(done, target)
        fsync_dir(target.parent)
        remove_dead_temporaries(target)  # (an earlier writer's, killed)
        return
    except FileNotFoundError:
        if not os.path.exists(done):
            raise
    except OSError:
        pass
    with AtomicFile(target if not str(path) == STDOUT else path, "wb") as fh:
        if isinstance(fh, GuardedFile):
            fh.append_part(str(done))
        else:  # stdout
            with open(done, "rb") as src:
                while block := src.read(1 << 20):
                    fh.write(block)
    with contextlib.suppress(OSError):
        os.unlink(done)


def write_atomic_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write a whole small file (a lock, a manifest, a table) atomically and durably."""
    with AtomicFile(path) as fh:
        fh.write(text)
    return Path(path)


def write_atomic_json(path: str | os.PathLike[str], doc: Any) -> Path:
    """`doc` as indented UTF-8 JSON (NaN refused), atomically and durably."""
    return write_atomic_text(path, json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
