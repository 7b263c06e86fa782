"""A run's work directory: what the job is (its record), each complete chunk (its record and its shard),
resuming, and the lock against a second run.

    <work>/                          beside the output (`.<output>.mcqa-run/`), else in the user's cache
      lock                           held (flock) by the driver for the whole run
      job.json                       what the job is: command, version, settings, inputs' identities, chunking
      <command>-00007-of-00012<ext>  a chunk's shard: the bytes its work handed back to be written whole
      chunks/00007.rec               a complete chunk's record: its plan, its shard's size and sha256, its
                                     result (pickled)
      stream, chunks/stream.ends     a job whose output is its shards in order (rescore's rows): the shards
                                     folded so far, appended (each shard goes once appended), and the
                                     stream's length after each, one line per chunk appended to one file
                                     (what a resume truncates it to; a file per chunk cost a file creation
                                     each, slow on a filesystem that has deleted many files)

A chunk's shard is written by whoever ran the chunk (a worker process, a Ray task, this process) under a
temporary name and renamed when complete; the driver writes the chunk's record after it, so a record names
only a whole shard. A successful run removes the directory (or, for a command whose output *is* the shards,
leaves only the shards: `finish`). A run that fails or is stopped keeps it when any chunk is complete: a run
with `resume=True` and the same job continues from those chunks (each shard checked against its recorded
size and sha256; one that does not match is run again); another job (command, version, settings, inputs
whose identity changed, chunking) is refused, naming what differs. Without `resume`, an interrupted job's
directory is cleared and the job starts over.

Records hold pickles, read back only from a `chunks/` directory this user owns and nobody else may write.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import pickle
import secrets
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .._version import __version__
from ..errors import Difference, OutputError, StaleCache, refusal
from ..io.readers import read_own_document
from ..io.writers import output_error
from ..parallel import Chunk

FORMAT = "mcqa-prep-run/1"
JOB = "job.json"
LOCK = "lock"
RECORDS = "chunks"
STREAM = "stream"
ENDS = (
    "stream.ends"  # in RECORDS: "<seq> <the stream's length after that chunk>\n" per folded chunk, in order
)
_COMPARED = ("format", "version", "command", "settings", "inputs", "chunk_bytes", "chunks")


def work_path(output: str | os.PathLike[str]) -> Path:
    """The work directory of a run that writes `output`: beside it, on the same storage."""
    out = Path(os.path.abspath(output))
    return out.parent / f".{out.name}.mcqa-run"


def shard_name(command: str, seq: int, total: int | None, ext: str) -> str:
    return f"{command}-{seq:05d}-of-{total:05d}{ext}" if total else f"{command}-{seq:05d}{ext}"


def write_whole(final: str, data: bytes | memoryview, durable: bool = False) -> None:
    """`data` at `final` under a temporary name first: a reader never sees a partial file, and a second writer
    of the same bytes (a retried chunk) replaces it whole. `durable`: fsync'd before the rename."""
    d, base = os.path.split(final)
    tmp = os.path.join(d, f".{base}.{secrets.token_hex(6)}.tmp")
    try:
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def plan_fields(c: Chunk) -> dict[str, Any]:
    """What makes a chunk this chunk: its file (and the file's identity when planned), its range or row group,
    and its first line."""
    return {
        "seq": c.seq,
        "file": os.path.abspath(c.file),
        "split": c.split,
        "first_line": c.first_line,
        "span": list(c.span) if c.span is not None else None,
        "row_group": c.row_group,
        "group": c.group,
        "part": c.part,
        "ident": list(c.ident) if c.ident is not None else None,
    }


def path_identities(paths: Sequence[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """Size, modification time and inode of every file under `paths` (files, or directories walked in name
    order): what tells another input from the same one without reading it (a join's dataset rows)."""
    found: list[str] = []
    for p in paths:
        root = os.path.abspath(p)
        if os.path.isdir(root):
            found += sorted(
                os.path.join(d, f) for d, _, files in os.walk(root) for f in files if not f.startswith(".")
            )
        else:
            found.append(root)
    return input_identities(found)


def input_identities(paths: list[str]) -> list[dict[str, Any]]:
    """Path, size, modification time and inode of every input file: what tells another input from the same
    one without reading it."""
    out: list[dict[str, Any]] = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            out.append({"path": os.path.abspath(p)})
            continue
        out.append(
            {"path": os.path.abspath(p), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino}
        )
    return out


class Done(NamedTuple):
    """A complete chunk as the driver folds it: the command's result for it, its shard (None when the work
    handed back no bytes to write), and whether the process that ran it recorded it already."""

    part: Any
    shard: Shard | None
    recorded: bool = False


class Shard:
    """A chunk's shard: where it is, its size and sha256, and its bytes when they are still in memory (a
    streaming job's shard made by the driver itself is only there: no path, no sha256)."""

    __slots__ = ("path", "size", "sha256", "data")

    def __init__(self, path: str | None, size: int, sha256: str | None, data: bytes | None = None) -> None:
        self.path, self.size, self.sha256, self.data = path, size, sha256, data

    def read(self) -> bytes:
        if self.data is not None:
            return self.data
        assert self.path is not None
        try:
            with open(self.path, "rb") as fh:
                return fh.read()
        except OSError as exc:
            raise output_error(exc, self.path, "cannot read") from None

    def __reduce__(self) -> Any:  # the bytes stay where they are: a shard crosses processes as its address
        return Shard, (self.path, self.size, self.sha256)


def write_shard(path: str, data: bytes | memoryview) -> Shard:
    """A chunk's bytes as its shard (in the process that ran the chunk)."""
    try:
        write_whole(path, data)
    except OSError as exc:
        raise output_error(exc, path) from None
    return Shard(path, len(data), hashlib.sha256(data).hexdigest())


def write_record(work_dir: str, c: Chunk, done: Done) -> bytes:
    """A complete chunk's record, written after its shard (a record names only a whole shard): by the process
    that ran the chunk where it reaches the work directory, else by the driver. Returns the record's bytes
    (the pickle a worker hands back as its result: `Recorded`)."""
    sh = done.shard
    # shard None: the chunk had no bytes; False: they were never on disk (in the stream, or lost)
    shard: Any = None
    if sh is not None:
        shard = False if sh.path is None else [os.path.basename(sh.path), sh.size, sh.sha256]
    doc = {"chunk": plan_fields(c), "shard": shard, "part": done.part}
    path = os.path.join(work_dir, RECORDS, f"{c.seq:05d}.rec")
    blob = pickle.dumps(doc, pickle.HIGHEST_PROTOCOL)
    try:
        write_whole(path, blob)
    except OSError as exc:
        raise output_error(exc, path) from None
    return blob


class Recorded:
    """A chunk recorded by the process that ran it, as it crosses back to the driver: its record's bytes (the
    result pickled once, for the record and the pipe alike), unpickled there as the `Done` they record."""

    __slots__ = ("blob", "shard")

    def __init__(self, blob: bytes, shard: str | None) -> None:
        self.blob, self.shard = blob, shard  # (the shard's path as the worker wrote it)

    def __reduce__(self) -> Any:
        return _recorded, (self.blob, self.shard)


def _recorded(blob: bytes, path: str | None) -> Done:
    doc = pickle.loads(blob)
    sh = doc["shard"]
    return Done(doc["part"], None if sh is None else Shard(path, sh[1], sh[2]), True)


class WorkDir:
    """The work directory of one run, locked for as long as it is open."""

    def __init__(self, path: Path, what: str) -> None:
        self.path = path
        self.what = what  # the output (or the inputs) it works for, as failures name it
        self.job: dict[str, Any] = {}
        self._lock: int | None = None
        self.started = False  # start() ran: the directory's contents are this run's
        self.created = not path.exists()
        try:
            path.mkdir(parents=True, exist_ok=True)
            fd = os.open(path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if self.created:  # (the directory this run made, empty: a failed run leaves nothing behind)
                with contextlib.suppress(OSError):
                    path.rmdir()
            raise output_error(exc, path) from None
        import fcntl

        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise OutputError(
                    f"{what}: another run is working on this now ({path} is locked)",
                    reason="output_busy",
                    path=str(what),
                ) from None
            raise output_error(exc, path) from None
        self._lock = fd

    def recorded(self) -> dict[str, Any] | None:
        """The job record a previous run left, if any (None when there is none or it cannot be read)."""
        doc = read_own_document(self.path / JOB)
        return doc if isinstance(doc, dict) and doc.get("format") == FORMAT else None

    def start(self, job: dict[str, Any], resume: bool) -> None:
        """Begin `job`: continue the recorded one when resuming (refused when it is another job), else clear
        the directory and record this one."""
        old = self.recorded() if resume else None
        if old is not None:
            diffs = _differences(old, job)
            if diffs:
                raise refusal(
                    StaleCache,
                    f"{self.what}: the interrupted job in {self.path} was another job; it cannot be resumed "
                    "with these settings and inputs",
                    diffs,
                    reason="resume_mismatch",
                    directory=str(self.path),
                )
        else:
            self._clear()
            try:
                write_whole(str(self.path / JOB), _json_bytes(job), durable=True)
            except OSError as exc:
                raise output_error(exc, self.path / JOB) from None
        self.job = job
        self.started = True
        records = self.path / RECORDS
        try:
            records.mkdir(mode=0o700, exist_ok=True)
        except OSError as exc:
            raise output_error(exc, records) from None

    def _clear(self) -> None:
        with contextlib.suppress(OSError):
            for p in self.path.iterdir():
                if p.name == LOCK:
                    continue
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink()

    def _records_trusted(self) -> bool:
        """Records are pickles: read only from a directory this user owns and nobody else may write."""
        try:
            st = os.lstat(self.path / RECORDS)
        except OSError:
            return False
        return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022

    def record(self, c: Chunk, done: Done) -> None:
        """A complete chunk's record (see write_record), written by the driver."""
        write_record(str(self.path), c, done)

    def completed(self, c: Chunk, consumed: int = 0) -> Done | None:
        """The chunk's result when this job completed it before (its shard checked against its record; a
        chunk among the first `consumed`, whose shard is in the stream already, without it)."""
        if not self._records_trusted():
            return None
        try:
            with open(self.path / RECORDS / f"{c.seq:05d}.rec", "rb") as fh:
                doc = pickle.load(fh)
            if doc["chunk"] != plan_fields(c):
                return None
            shard = None
            if c.seq < consumed:
                return Done(doc["part"], None)
            if doc["shard"] is False:
                return None
            if doc["shard"] is not None:
                name, size, sha = doc["shard"]
                path = str(self.path / name)
                with open(path, "rb") as fh:
                    data = fh.read()
                if len(data) != size or hashlib.sha256(data).hexdigest() != sha:
                    return None
                shard = Shard(path, size, sha)
            return Done(doc["part"], shard)
        except Exception:  # noqa: BLE001 - a missing, torn or foreign record: the chunk is run again
            return None

    @property
    def stream_path(self) -> Path:
        return self.path / STREAM

    def open_stream(self, resume: bool) -> tuple[Any, int]:
        """The stream (opened for appending) and how many chunks it holds: when resuming, the chunks whose
        end was recorded, in order, up to what the file holds (it is cut back to the last of them)."""
        path = self.path / STREAM
        ends: list[int] = []
        kept = 0  # the bytes of the ends file that hold `ends` (the rest, if any, is cut off)
        if resume and self._records_trusted():
            with contextlib.suppress(OSError):
                ends, kept = _read_ends(self.path / RECORDS / ENDS, os.path.getsize(path))
        try:
            with contextlib.suppress(FileNotFoundError):
                os.truncate(self.path / RECORDS / ENDS, kept)
            fh = os.fdopen(os.open(path, os.O_RDWR | os.O_CREAT, 0o666), "r+b")  # (closed by the run)
            fh.truncate(ends[-1] if ends else 0)
            fh.seek(0, os.SEEK_END)
        except OSError as exc:
            raise output_error(exc, path) from None
        return fh, len(ends)

    def consume(self, fh: Any, seq: int, shard: Shard, record: bool) -> None:
        """Append a folded chunk's shard to the stream, record the stream's length after it, drop the
        shard."""
        try:
            if shard.data is not None:
                fh.write(shard.data)
                fh.flush()
            else:
                assert shard.path is not None
                from ..io.writers import _copy_rest

                fh.flush()
                src = os.open(shard.path, os.O_RDONLY)
                try:
                    _copy_rest(src, fh.fileno())
                finally:
                    os.close(src)
                fh.seek(0, os.SEEK_END)
            if record:
                with open(self.path / RECORDS / ENDS, "ab") as ends:
                    ends.write(b"%d %d\n" % (seq, fh.tell()))
            if shard.path is not None:
                os.unlink(shard.path)
        except OSError as exc:
            raise output_error(exc, self.path / STREAM) from None

    def count_complete(self) -> int:
        with contextlib.suppress(OSError):
            return sum(1 for p in (self.path / RECORDS).iterdir() if p.suffix == ".rec")
        return 0

    def finish(self) -> None:
        """Leave only the shards: the records, temporary files of killed attempts, the job record and the lock
        go (for a command whose output is the directory of shards)."""
        shutil.rmtree(self.path / RECORDS, ignore_errors=True)
        for p in self.path.iterdir():
            if p.name in (JOB, LOCK) or (p.name.startswith(".") and p.name.endswith(".tmp")):
                with contextlib.suppress(OSError):
                    p.unlink()

    def close(self, keep: bool) -> None:
        """Release the lock; remove the directory unless `keep` (a failed run's complete chunks, or shards
        that became the output) or it holds an earlier run's job that this run never took over (a refused
        resume)."""
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None
        if not self.started and not self.created and self.recorded() is not None:
            return
        if not keep:
            shutil.rmtree(self.path, ignore_errors=True)


def _read_ends(path: Path, size: int) -> tuple[list[int], int]:
    """(the stream's recorded length after each folded chunk, in order; the bytes of the file that hold them):
    up to the first line that is torn (no line end), not the next chunk's, going back, or beyond the stream's
    `size`."""
    ends: list[int] = []
    kept = 0
    with open(path, "rb") as fh:
        for line in fh:
            parts = line.split()
            try:
                seq, end = (int(parts[0]), int(parts[1])) if len(parts) == 2 else (-1, -1)
            except ValueError:
                break
            if not line.endswith(b"\n") or seq != len(ends) or end < (ends[-1] if ends else 0) or end > size:
                break
            ends.append(end)
            kept += len(line)
    return ends, kept


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[Difference]:
    """What differs between a recorded job and this one; the command's settings field by field."""
    out = []
    for k in _COMPARED:
        a, b = old.get(k), new.get(k)
        if a == b:
            continue
        if k == "settings" and isinstance(a, dict) and isinstance(b, dict):
            out += [
                Difference(f"settings.{f}", a.get(f), b.get(f))
                for f in sorted(a.keys() | b.keys())
                if a.get(f) != b.get(f)
            ]
        else:
            out.append(Difference(k, a, b))
    return out


def _json_bytes(doc: Any) -> bytes:
    import json

    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode(
        "ascii"
    )  # (names that are not UTF-8 too)


def job_record(
    command: str, settings: Any, inputs: list[str], chunk_bytes: int, chunks: int
) -> dict[str, Any]:
    """What the job is, as job.json records it and a resume compares it."""
    return {
        "format": FORMAT,
        "version": __version__,
        "command": command,
        "settings": settings,
        "inputs": input_identities(inputs),
        "chunk_bytes": chunk_bytes,
        "chunks": chunks,
    }
