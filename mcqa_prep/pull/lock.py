"""The pull lock: provenance of a pulled hub dataset, and the checks that the bytes on disk are still its bytes.

Deliberately free of huggingface_hub (and of any network code): validate and prepare read pulled directories
through this module, so that checking a pulled snapshot never needs the hub.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import schema
from ..errors import InputError, IntegrityError, UsageError
from ..io.hashing import HASH_GIT_SHA1, HASH_SHA256, hash_file
from ..io.paths import DATA_SUFFIXES, is_data_path, split_of
from ..io.readers import read_document
from ..io.writers import write_atomic_json
from ..progress import Progress

__all__ = ["HASH_GIT_SHA1", "HASH_SHA256", "DATA_SUFFIXES", "split_of", "is_data_path", "hash_file"]

LOCK_NAME = "mcqa-prep.lock.json"
LOCK_VERSION = 1


def is_pulled_dir(path: str | os.PathLike) -> bool:
    """True when `path` is a directory written by `mcqa-prep pull` (it holds a lock file)."""
    p = Path(path)
    return p.is_dir() and (p / LOCK_NAME).is_file()


def lock_path(directory: str | os.PathLike) -> Path:
    return Path(directory) / LOCK_NAME


def read_lock(directory: str | os.PathLike) -> dict[str, Any]:
    """Load and schema-validate `DIR/mcqa-prep.lock.json`; a lock that does not validate is never trusted."""
    path = lock_path(directory)
    try:
        doc, problem = read_document(path)
    except FileNotFoundError:
        raise InputError(
            f"{directory}: no {LOCK_NAME}: not a pulled directory (run `mcqa-prep pull` first)"
        ) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the lock: {exc.strerror or exc}") from None
    if problem is not None:
        raise IntegrityError(f"{path}: {problem}", reason="lock_invalid", directory=str(directory))
    check_lock(doc, where=str(path))
    return doc


def check_lock(doc: Any, *, where: str = LOCK_NAME) -> None:
    """Validate a lock document against pull-lock.v1 (used both when writing and when reading)."""
    errors = sorted(schema.validator("pull_lock").iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise IntegrityError(
            f"{where}: {schema.json_path(first.absolute_path)}: {first.message}{more} [pull-lock.v1]; "
            "the lock is not a valid mcqa-prep pull lock",
            reason="lock_invalid",
        )
    paths = [f["path"] for f in doc["files"]]
    if len(set(paths)) != len(paths):
        raise IntegrityError(
            f"{where}: $.files: a path is listed twice [pull-lock.v1]", reason="lock_invalid"
        )


def write_lock(directory: str | os.PathLike, doc: dict[str, Any]) -> Path:
    """Validate then write the lock atomically and durably: a reader sees the old lock or the new one."""
    check_lock(doc, where=str(lock_path(directory)))
    return write_atomic_json(lock_path(directory), doc)


def hash_kind_for(*, lfs: bool) -> str:
    return HASH_SHA256 if lfs else HASH_GIT_SHA1


@dataclass(frozen=True)
class Mismatch:
    """One locked file whose bytes on disk are not the locked bytes."""

    path: str
    kind: str
    expected: str
    found: str | None  # None: the file is missing
    expected_size: int
    found_size: int | None

    def describe(self, directory: str | os.PathLike) -> str:
        where = Path(directory) / self.path
        if self.found is None:
            return (
                f"{where}: missing (the lock records {self.kind} {self.expected}, {self.expected_size} bytes)"
            )
        size = (
            ""
            if self.found_size == self.expected_size
            else f", {self.found_size} bytes instead of {self.expected_size}"
        )
        return f"{where}: {self.kind} is {self.found} but the lock records {self.expected}{size}"


class LockedFileMismatch(IntegrityError):
    """Files of a pulled directory differ from its lock; carries every mismatch, not only the first."""

    reason = "locked_file_mismatch"

    def __init__(self, message: str, mismatches: list[Mismatch], directory: str | os.PathLike):
        super().__init__(message, directory=str(directory), files=[m.path for m in mismatches])
        self.mismatches = mismatches


def check_file(directory: str | os.PathLike, entry: dict[str, Any], *, on_bytes=None) -> Mismatch | None:
    """Compare one locked file with the bytes on disk; None when they agree."""
    path = Path(directory) / entry["path"]
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return Mismatch(entry["path"], entry["hash_kind"], entry["hash"], None, entry["size"], None)
    found = hash_file(path, entry["hash_kind"], on_bytes)[0]
    if found == entry["hash"] and size == entry["size"]:
        return None
    return Mismatch(entry["path"], entry["hash_kind"], entry["hash"], found, entry["size"], size)


def mismatch_error(directory: str | os.PathLike, mismatches: list[Mismatch]) -> LockedFileMismatch:
    more = f" (and {len(mismatches) - 1} more file(s) differ)" if len(mismatches) > 1 else ""
    return LockedFileMismatch(
        f"{mismatches[0].describe(directory)}{more}: the file changed after the pull", mismatches, directory
    )


def find_mismatches(
    directory: str | os.PathLike, entries: Iterable[dict[str, Any]], *, progress: Progress | None = None
) -> list[Mismatch]:
    """Check size and hash of every entry (all of them, so the caller can report or re-fetch every bad file)."""
    entries = list(entries)
    total = sum(e["size"] for e in entries)
    bar = progress(total=total, desc="verify", unit="B") if progress is not None else None
    try:
        out = []
        for entry in entries:
            m = check_file(directory, entry, on_bytes=bar.update if bar is not None else None)
            if m is not None:
                out.append(m)
        return out
    finally:
        if bar is not None:
            bar.close()


def verify_pulled_dir(directory: str | os.PathLike, *, progress: Progress | None = None) -> dict[str, Any]:
    """Check size and hash of every locked file; raise IntegrityError naming the file, both hashes and the fix.

    Returns a summary for provenance records: repo, repo_type, commit, files verified and their bytes.
    """
    lock = read_lock(directory)
    mismatches = find_mismatches(directory, lock["files"], progress=progress)
    if mismatches:
        raise mismatch_error(directory, mismatches)
    return {
        "dir": str(directory),
        "repo": lock["repo"],
        "repo_type": lock["repo_type"],
        "commit": lock["commit"],
        "files": len(lock["files"]),
        "bytes": sum(f["size"] for f in lock["files"]),
    }


def locked_splits(lock: dict[str, Any]) -> list[str]:
    return sorted({f["split"] for f in lock["files"] if f["split"] is not None})


def data_files(
    directory: str | os.PathLike, lock: dict[str, Any], splits: Iterable[str] | None = None
) -> list[tuple[Path, str]]:
    """The locked data files (Parquet, JSONL) as (path on disk, split), in lock order, optionally for some splits."""
    wanted = None if splits is None else list(dict.fromkeys(splits))
    if wanted is not None:
        unknown = [s for s in wanted if s not in locked_splits(lock)]
        if unknown:
            raise UsageError(
                f"{directory}: no split {', '.join(map(repr, unknown))} in the pull lock "
                f"(splits: {', '.join(locked_splits(lock)) or 'none'})"
            )
    return [
        (Path(directory) / f["path"], f["split"])
        for f in lock["files"]
        if is_data_path(f["path"]) and f["split"] is not None and (wanted is None or f["split"] in wanted)
    ]


def provenance(lock: dict[str, Any]) -> dict[str, Any]:
    """The part of a lock that downstream manifests record as input provenance."""
    return {
        "kind": "pull-lock",
        "repo": lock["repo"],
        "repo_type": lock["repo_type"],
        "commit": lock["commit"],
        "requested_revision": lock["requested_revision"],
        "files": [
            {"path": f["path"], "hash_kind": f["hash_kind"], "hash": f["hash"], "size": f["size"]}
            for f in lock["files"]
        ],
    }


def diff_files(old: Iterable[dict[str, Any]], new: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """What changed between two file lists, by path: added, removed, changed (other hash or size)."""
    a = {f["path"]: f for f in old}
    b = {f["path"]: f for f in new}
    return {
        "added": sorted(b.keys() - a.keys()),
        "removed": sorted(a.keys() - b.keys()),
        "changed": sorted(
            p for p in a.keys() & b.keys() if (a[p]["hash"], a[p]["size"]) != (b[p]["hash"], b[p]["size"])
        ),
    }
