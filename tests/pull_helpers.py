"""A pulled directory written by hand (what `pull` leaves, without a hub): its files and a pull lock that
names each with its split, size and hash. The one builder of a pull lock in the tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakehub import git_blob_sha1, sha256

from mcqa_prep.pull import lock as locks

REPO = "nvidia/Nemotron-RL-knowledge-mcqa"


def lock_entry(path: str, data: bytes, *, lfs: bool = True, rows: int | None = None) -> dict[str, Any]:
    """A lock's entry for a file of these bytes: sha256 for an LFS file, git's blob sha1 for a small one (as
    the hub serves them); its split by the split rule when it is a data file."""
    return {
        "path": path,
        "split": locks.split_of(path) if locks.is_data_path(path) else None,
        "size": len(data),
        "hash_kind": locks.HASH_SHA256 if lfs else locks.HASH_GIT_SHA1,
        "hash": sha256(data) if lfs else git_blob_sha1(data),
        "rows": rows,
    }


def lock_document(
    entries: list[dict[str, Any]], *, repo: str = REPO, commit: str = "a" * 40, license: str | None = None
) -> dict[str, Any]:
    """A valid pull-lock.v1 document listing `entries`."""
    return {
        "lock_version": 1,
        "tool": {"name": "mcqa-prep", "version": "0"},
        "repo": repo,
        "repo_type": "dataset",
        "requested_revision": "main",
        "commit": commit,
        "endpoint": "https://huggingface.co",
        "license": license,
        "splits": None,
        "created_at": "2025-01-01T00:00:00Z",
        "files": entries,
    }


def write_pulled(
    d: Path,
    files: dict[str, bytes],
    *,
    small: frozenset[str] | set[str] = frozenset(),
    rows: dict[str, int] | None = None,
    **doc: Any,
) -> Path:
    """`files` (path in the repo -> bytes) written under `d`, and their lock (through pull's own writer, so
    it is checked against the schema): `small` names the files the hub keeps outside LFS, `rows` the row
    counts pull recorded; `doc` sets the lock's repo, commit or license."""
    entries = []
    for path, data in files.items():
        target = d / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        entries.append(lock_entry(path, data, lfs=path not in small, rows=(rows or {}).get(path)))
    locks.write_lock(d, lock_document(entries, **doc))
    return d
