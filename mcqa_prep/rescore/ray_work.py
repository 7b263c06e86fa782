"""The Ray job's work directory: where its shards are written before the output is put in place, what the job
is (its record), which chunks are complete, resuming, and the lock against a second run.

    .<output>.ray-partial/          beside the output directory, on the same storage
      lock                          held (flock) by the driver for the whole run
      job.json                      what the job is: contract, settings, inputs' identities, chunking
      rescored-00007-of-00012.jsonl shards of complete chunks (written whole, then renamed)
      chunks/00007.json             each complete chunk's record: plan, rows, size, sha256, report part

A successful run removes the lock, the record and the chunk records, writes summary.json and renames the
directory into place. A run that fails or is stopped keeps the directory when any chunk is complete: a run
with `resume=True` and the same job continues from those chunks (each shard checked against its recorded
size and sha256; one that does not match is rescored again); under another contract, other settings or
inputs whose identity (size, modification time, inode) changed, resuming is refused. Without `resume`, a
previous job's directory is cleared and the job starts over.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import Difference, OutputError, StaleCache, refusal
from ..io.readers import read_own_document
from ..io.writers import output_error
from .ray_plan import (
    RECORDS,
    Chunk,
    ChunkDone,
    plan_fields,
    read_record,
    record_bytes,
    shard_name,
    write_whole,
)
from .run import RescoreReport

FORMAT = "mcqa-prep-ray-job/1"
JOB = "job.json"
LOCK = "lock"
_COMPARED = ("format", "version", "contract", "settings", "inputs", "rows", "chunk_bytes", "chunks")


def work_path(out: Path) -> Path:
    return out.parent / f".{out.name}.ray-partial"


def path_identities(paths: Sequence[str | os.PathLike]) -> list[dict[str, Any]]:
    """Size, modification time and inode of every file under `paths` (files, or directories walked in name
    order): what tells another input from the same one without reading it."""
    out: list[dict[str, Any]] = []
    for p in paths:
        root = os.path.abspath(p)
        found = [root]
        if os.path.isdir(root):
            found = sorted(
                os.path.join(d, f) for d, _, files in os.walk(root) for f in files if not f.startswith(".")
            )
        for f in found:
            try:
                st = os.stat(f)
            except OSError:
                continue
            out.append({"path": f, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino})
    return out


def job_record(
    report: RescoreReport, settings: dict[str, Any], chunks: list[Chunk], rows: list[dict[str, Any]], cb: int
) -> dict[str, Any]:
    files: dict[str, dict[str, Any]] = {}
    for c in chunks:
        files.setdefault(c.path, {"path": c.path, "size": c.size, "mtime_ns": c.mtime_ns, "ino": c.ino})
    return {
        "format": FORMAT,
        "version": __version__,
        "contract": report.contract_id,
        "settings": settings,
        "inputs": list(files.values()),
        "rows": rows,
        "chunk_bytes": cb,
        "chunks": len(chunks),
    }


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[Difference]:
    return [Difference(k, old.get(k), new.get(k)) for k in _COMPARED if old.get(k) != new.get(k)]


class WorkDir:
    """The work directory of one run, locked for as long as it is open."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.path = work_path(out)
        self.job: dict[str, Any] = {}
        self._lock: int | None = None
        self.started = False  # start() ran: the directory's contents are this run's
        self.created = not self.path.exists()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise output_error(exc, self.path) from None
        import fcntl

        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise OutputError(
                    f"{out}: another rescore is writing this output now ({self.path} is locked)",
                    reason="output_busy",
                    path=str(out),
                ) from None
            raise output_error(exc, self.path) from None
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
                    f"{self.out}: the interrupted job in {self.path} was another job; it cannot be resumed with "
                    "these settings and inputs",
                    diffs,
                    reason="resume_mismatch",
                    directory=str(self.path),
                )
        else:
            self._clear()
            try:
                write_whole(str(self.path / JOB), record_bytes(job))
            except OSError as exc:
                raise output_error(exc, self.path / JOB) from None
        self.job = job
        self.started = True
        (self.path / RECORDS).mkdir(exist_ok=True)

    def _clear(self) -> None:
        with contextlib.suppress(OSError):
            for p in self.path.iterdir():
                if p.name == LOCK:
                    continue
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink()

    def completed(self, chunks: list[Chunk]) -> dict[int, ChunkDone]:
        """The chunks of this job already complete here, each shard checked against its record."""
        done: dict[int, ChunkDone] = {}
        total = len(chunks)
        for c in chunks:
            rec = read_record(str(self.path), c.seq)
            if rec is None or rec.get("chunk") != plan_fields(c):
                continue
            try:
                data = (self.path / shard_name(c.seq, total)).read_bytes()
                part = RescoreReport.from_state(rec["report"])
            except (OSError, KeyError, TypeError, ValueError):
                continue
            if len(data) != rec.get("bytes") or hashlib.sha256(data).hexdigest() != rec.get("sha256"):
                continue
            done[c.seq] = ChunkDone(c.seq, part.rows, len(data), rec["sha256"], part)
        return done

    def count_complete(self) -> int:
        with contextlib.suppress(OSError):
            return sum(1 for p in (self.path / RECORDS).iterdir() if p.suffix == ".json")
        return 0

    def finish(self) -> None:
        """Leave only the shards: the records, temporary files of killed attempts and the lock go."""
        shutil.rmtree(self.path / RECORDS, ignore_errors=True)
        for p in self.path.iterdir():
            if p.name in (JOB, LOCK) or (p.name.startswith(".") and p.name.endswith(".tmp")):
                with contextlib.suppress(OSError):
                    p.unlink()

    def close(self, keep: bool) -> None:
        """Release the lock; remove the directory unless `keep` (a failed run's complete chunks) or it holds
        an earlier run's job that this run never took over (a refused resume)."""
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None
        if not self.started and not self.created and self.recorded() is not None:
            return
        if not keep:
            shutil.rmtree(self.path, ignore_errors=True)
