"""`pull`: a hub dataset at an exact commit, every byte verified, with a provenance lock.

Network is used only when the lock cannot answer: no lock yet, a revision to (re-)resolve, an update of the
lock, a forced download, or splits the lock does not cover. The hub itself is reached through hub.py.
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import HubError, InputError, IntegrityError, LockMismatch, UsageError
from ..io import staging
from ..io.paths import ignored
from ..io.writers import fsync_dir
from ..progress import Progress
from . import lock as locks
from .hub import (
    DEFAULT_REPO,
    DEFAULT_REVISION,
    README,
    REPO_ID,
    REPO_TYPE,
    ByteForwarder,
    HubClient,
    RemoteFile,
    default_dir,
    endpoint_from_env,
    is_commit,
    offline_from_env,
    parquet_rows,
    readme_license,
)

_STAGING = "mcqa-prep-pull"  # staging.side_name makes it DIR/.mcqa-prep-pull.staging-<pid>-<hex>


class UpstreamMoved(LockMismatch):
    """The requested revision now resolves to another commit than the lock's; carries both and the file diff."""

    def __init__(
        self, message: str, *, revision: str, locked: str, resolved: str, changes: dict[str, list[str]]
    ):
        super().__init__(
            message,
            reason="upstream_moved",
            revision=revision,
            locked=locked,
            resolved=resolved,
            changes=changes,
        )
        self.revision = revision
        self.locked = locked
        self.resolved = resolved
        self.changes = changes


@dataclass
class PullReport:
    """What pull did, for rendering as text or JSON."""

    status: str  # pulled | updated | up to date | verified, offline
    network: bool
    directory: Path
    lock: dict[str, Any]
    lock_written: bool
    actions: dict[str, str] = field(default_factory=dict)  # path -> downloaded | verified
    removed: list[str] = field(default_factory=list)
    previous_commit: str | None = None
    changes: dict[str, list[str]] | None = None
    notes: list[str] = field(default_factory=list)

    def splits(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for f in self.lock["files"]:
            if f["split"] is None:
                continue
            s = out.setdefault(f["split"], {"files": 0, "rows": 0, "bytes": 0})
            s["files"] += 1
            s["bytes"] += f["size"]
            s["rows"] = None if s["rows"] is None or f["rows"] is None else s["rows"] + f["rows"]
        return out

    def to_json(self) -> dict[str, Any]:
        lk = self.lock
        return {
            "status": self.status,
            "network": self.network,
            "dir": str(self.directory),
            "lock_file": str(locks.lock_path(self.directory)),
            "lock_written": self.lock_written,
            "repo": lk["repo"],
            "repo_type": lk["repo_type"],
            "requested_revision": lk["requested_revision"],
            "commit": lk["commit"],
            "previous_commit": self.previous_commit,
            "endpoint": lk["endpoint"],
            "license": lk["license"],
            "files": [{**f, "action": self.actions.get(f["path"], "verified")} for f in lk["files"]],
            "removed": self.removed,
            "splits": self.splits(),
            "changes": self.changes,
            "notes": self.notes,
        }


# --------------------------------------------------------------------------------------------------------------
# huggingface_hub adapter: every call passes the endpoint explicitly, every failure becomes one HubError line.


def _select(remote: list[RemoteFile], splits: list[str] | None, repo: str, commit: str) -> list[RemoteFile]:
    """Data files (Parquet, JSONL) of the wanted splits, plus the root README (the dataset card)."""
    data = [f for f in remote if locks.is_data_path(f.path) and not ignored(f.path)]
    if not data:
        raise HubError(f"dataset {repo} has no Parquet or JSONL files at {commit}")
    available = sorted({f.split for f in data if f.split})
    if splits is not None:
        unknown = [s for s in splits if s not in available]
        if unknown:
            raise UsageError(
                f"no split {', '.join(map(repr, unknown))} in {repo} at {commit[:12]} (splits: {', '.join(available)})"
            )
        data = [f for f in data if f.split in splits]
    readme = [f for f in remote if f.path == README]
    return sorted(readme + data, key=lambda f: f.path)


def _merge_splits(lock: dict[str, Any] | None, requested: list[str] | None) -> list[str] | None:
    """No --split keeps the lock's selection; --split adds to it (a pulled directory only grows)."""
    if lock is None:
        return requested
    if lock["splits"] is None:
        return None
    if requested is None:
        return list(lock["splits"])
    return sorted(set(lock["splits"]) | set(requested))


def _covered(lock: dict[str, Any], requested: list[str] | None) -> bool:
    if requested is None or lock["splits"] is None:
        return True
    return set(requested) <= set(lock["splits"])


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _same_lock(a: dict[str, Any], b: dict[str, Any]) -> bool:
    strip = ("created_at", "tool")
    return {k: v for k, v in a.items() if k not in strip} == {k: v for k, v in b.items() if k not in strip}


def _verify_locked(dest: Path, lock: dict[str, Any], progress: Progress | None) -> None:
    mismatches = locks.find_mismatches(dest, lock["files"], progress=progress)
    if mismatches:
        raise locks.mismatch_error(dest, mismatches)


def pull(
    repo: str | None = None,
    *,
    revision: str | None = None,
    to: str | os.PathLike | None = None,
    splits: list[str] | tuple[str, ...] | None = None,
    offline: bool = False,
    update: bool = False,
    force_download: bool = False,
    endpoint: str | None = None,
    progress: Progress | None = None,
) -> PullReport:
    """Make `to` hold `repo` at the commit `revision` resolves to, byte for byte, with a lock saying so.

    Network is used only when the lock cannot answer: no lock yet, a revision to (re-)resolve, --update,
    --force-download, or splits the lock does not cover. Library code: raises, never prints.
    """
    offline = offline or offline_from_env()
    if offline and update:
        raise UsageError(
            "updating the lock needs the network to resolve the new commit", reason="offline_update"
        )
    if offline and force_download:
        raise UsageError("downloading again needs the network", reason="offline_force_download")
    if repo is not None and not REPO_ID.match(repo):
        raise UsageError(f"{repo!r} is not a hub repo id (expected owner/name)")
    requested = None if not splits else list(dict.fromkeys(splits))
    dest = Path(to) if to is not None else default_dir(repo or DEFAULT_REPO)
    endpoint = (endpoint or endpoint_from_env()).rstrip("/")

    lock = locks.read_lock(dest) if locks.is_pulled_dir(dest) else None
    if lock is not None and repo is not None and repo != lock["repo"]:
        raise LockMismatch(f"{dest} holds a pull of {lock['repo']}, not {repo}", reason="other_repo")
    repo = repo or (lock["repo"] if lock else DEFAULT_REPO)

    if lock is not None:
        report = _from_lock(dest, lock, revision, requested, offline, update, force_download, progress)
        if report is not None:
            return report
    elif offline:
        raise InputError(f"{dest}: no {locks.LOCK_NAME} to use offline", reason="offline_no_lock")

    return _pull_online(dest, repo, lock, revision, requested, update, force_download, endpoint, progress)


def _from_lock(
    dest, lock, revision, requested, offline, update, force_download, progress
) -> PullReport | None:
    """The lock answers when nothing asks for the network; returns None when it cannot."""
    explicit = is_commit(revision)
    if offline:
        if revision is not None:
            if explicit and revision != lock["commit"]:
                raise LockMismatch(
                    f"{dest} is locked to {lock['commit']}, not {revision}, and offline no other commit can be "
                    "fetched",
                    reason="offline_other_commit",
                )
            if not explicit and revision != lock["requested_revision"]:
                raise LockMismatch(
                    f"{dest} was pulled from {lock['requested_revision']!r} ({lock['commit']}); offline, "
                    f"{revision!r} cannot be resolved",
                    reason="offline_other_revision",
                )
        if not _covered(lock, requested):
            missing = sorted(set(requested or []) - set(lock["splits"] or []))
            raise LockMismatch(
                f"{dest}: split {', '.join(missing)} was not pulled and offline it cannot be fetched",
                reason="offline_split",
            )
        notes = []
        if revision is not None and not explicit:
            notes.append(f"offline: {revision!r} was not re-resolved; using the locked commit")
        _verify_locked(dest, lock, progress)
        return PullReport("verified, offline", False, dest, lock, False, notes=notes)
    needs_resolve = update or (revision is not None and not (explicit and revision == lock["commit"]))
    if needs_resolve or force_download or not _covered(lock, requested):
        return None
    _verify_locked(dest, lock, progress)
    return PullReport("verified, offline", False, dest, lock, False)


def _pull_online(
    dest, repo, lock, revision, requested, update, force_download, endpoint, progress
) -> PullReport:
    hub = HubClient(endpoint, repo)
    asked = revision or (lock["requested_revision"] if lock else DEFAULT_REVISION)
    needs_resolve = lock is None or update or (revision is not None and revision != lock["commit"])
    if needs_resolve:
        commit, card_license = hub.resolve(asked)
    else:
        commit, card_license = lock["commit"], lock["license"]

    if lock is not None and commit == lock["commit"] and not force_download and _covered(lock, requested):
        # Re-resolved to the locked commit: the local bytes only need to match the lock.
        _verify_locked(dest, lock, progress)
        return PullReport(
            "up to date", True, dest, lock, False, notes=[f"{asked!r} still resolves to the locked commit"]
        )

    remote = hub.list_files(commit)
    selection = _merge_splits(lock, requested)
    wanted = _select(remote, selection, repo, commit)

    if lock is not None and commit != lock["commit"] and not update:
        new_entries = [f.entry(None) for f in wanted]
        changes = locks.diff_files(lock["files"], new_entries)
        raise UpstreamMoved(
            f"{dest} is locked to {repo} at {lock['commit']} but {asked!r} resolves to {commit} "
            f"({len(changes['added'])} added, {len(changes['removed'])} removed, {len(changes['changed'])} changed)",
            revision=asked,
            locked=lock["commit"],
            resolved=commit,
            changes=changes,
        )

    old = {f["path"]: f for f in lock["files"]} if lock is not None else {}
    to_download, kept, problems = _plan(dest, wanted, old, commit, force_download, progress)
    if problems:
        raise problems[0]

    removed = []
    if lock is not None and commit != lock["commit"]:
        remote_paths = {f.path for f in remote}
        removed = sorted(set(old) - remote_paths)

    def build_lock(local):
        return _new_lock(local, repo, asked, commit, endpoint, card_license, selection, wanted, old)

    new_lock, written = _install(hub, dest, commit, to_download, removed, lock, build_lock, progress)
    entries = new_lock["files"]
    if not written:
        new_lock = lock
    actions = {f.path: ("downloaded" if f in to_download else "verified") for f in wanted}
    if lock is None:
        status = "pulled"
    elif commit != lock["commit"]:
        status = "updated"
    else:
        status = "pulled" if to_download else "up to date"
    diff = locks.diff_files(lock["files"], entries) if lock is not None else None
    return PullReport(
        status,
        True,
        dest,
        new_lock,
        written,
        actions=actions,
        removed=removed,
        previous_commit=lock["commit"] if lock is not None and commit != lock["commit"] else None,
        changes=diff if status == "updated" else None,
        notes=[f"downloaded again: {len(to_download)} file(s)"] if force_download else [],
    )


def _install(
    hub, dest, commit, to_download, removed, lock, build_lock, progress
) -> tuple[dict[str, Any], bool]:
    """Fetch and verify in a staging directory inside dest (hidden, so no reader takes it for data), then
    swap the verified files in. A failed or stopped pull leaves dest as it was: the previous verified pull,
    or, on a first pull, nothing. Returns the new lock and whether it was written."""
    created = not dest.exists()
    try:
        with staging.staging_dir(dest / _STAGING) as stage:
            _download_all(hub, dest, stage, commit, to_download, progress)
            fetched = {f.path for f in to_download}
            new_lock = build_lock(lambda path: (stage if path in fetched else dest) / path)
            written = lock is None or not _same_lock(lock, new_lock)
            _swap_in(dest, stage, sorted(fetched), removed, new_lock if written else None)
            shutil.rmtree(stage, ignore_errors=True)
    except BaseException:
        if created:
            shutil.rmtree(dest, ignore_errors=True)  # only the (empty) directory this run made
        raise
    return new_lock, written


def _new_lock(local, repo, asked, commit, endpoint, card_license, selection, wanted, old) -> dict[str, Any]:
    """The lock of the verified files (`local(path)` is where each one is now): their hashes as the hub vouches
    for them, rows of Parquet files."""
    entries = []
    for f in wanted:
        prev = old.get(f.path)
        rows = prev["rows"] if prev is not None and prev["hash"] == f.hash else parquet_rows(local(f.path))
        entries.append(f.entry(rows))
    lic = readme_license(local(README)) if any(f.path == README for f in wanted) else None
    return {
        "lock_version": locks.LOCK_VERSION,
        "tool": {"name": "mcqa-prep", "version": __version__},
        "repo": repo,
        "repo_type": REPO_TYPE,
        "requested_revision": asked,
        "commit": commit,
        "endpoint": endpoint,
        "license": lic or card_license,
        "splits": selection,
        "created_at": _now(),
        "files": entries,
    }


def _plan(dest, wanted, old, commit, force_download, progress):
    """Which files to fetch; a local file that is neither the locked nor the hub's bytes is refused, not overwritten."""
    to_download: list[RemoteFile] = []
    kept: list[RemoteFile] = []
    problems: list[Exception] = []
    present = [f for f in wanted if (dest / f.path).is_file()]
    if force_download:
        return list(wanted), [], []
    bar = (
        progress(total=sum(f.size for f in present), desc="verify", unit="B")
        if progress and present
        else None
    )
    try:
        for f in wanted:
            local = dest / f.path
            if not local.is_file():
                to_download.append(f)
                continue
            found = locks.hash_file(local, f.hash_kind, bar.update if bar is not None else None)[0]
            size = local.stat().st_size
            if found == f.hash and size == f.size:
                kept.append(f)
                continue
            prev = old.get(f.path)
            if prev is not None and prev["hash_kind"] == f.hash_kind and prev["hash"] != f.hash:
                if found == prev["hash"] and size == prev["size"]:
                    to_download.append(f)  # the locked bytes, changed upstream: the update replaces them
                    continue
            if prev is not None:
                m = locks.Mismatch(f.path, prev["hash_kind"], prev["hash"], found, prev["size"], size)
                problems.append(locks.mismatch_error(dest, [m]))
            else:
                problems.append(
                    IntegrityError(
                        f"{dest / f.path}: {f.hash_kind} is {found} but the hub has {f.hash} at {commit}; "
                        "it is not the hub's file and no lock vouches for it",
                        reason="unvouched_file",
                        path=str(dest / f.path),
                    )
                )
    finally:
        if bar is not None:
            bar.close()
    return to_download, kept, problems


def _download_all(
    hub: HubClient, dest: Path, stage: Path, commit: str, files: list[RemoteFile], progress: Progress | None
) -> None:
    """Fetch each file at the commit into the staging directory, then check its size and hash against the
    hub's listing; nothing in dest is touched."""
    if not files:
        return
    bar = progress(total=sum(f.size for f in files), desc="download", unit="B") if progress else None
    forward = type("_ForwardBar", (ByteForwarder,), {"bar": bar})
    try:
        for f in files:
            hub.download(commit, f.path, stage, tqdm_class=forward)
    finally:
        if bar is not None:
            bar.close()
    bad = locks.find_mismatches(stage, [f.entry(None) for f in files], progress=progress)
    if bad:
        m = bad[0]
        if m.found_size != m.expected_size:
            what = f"{m.found_size} bytes were downloaded but the hub lists {m.expected_size} bytes"
        else:
            what = f"the downloaded {m.kind} is {m.found} but the hub lists {m.expected}"
        more = f" (and {len(bad) - 1} more file(s))" if len(bad) > 1 else ""
        raise IntegrityError(
            f"{dest / m.path}: {what} at {commit}{more}; the download was discarded and {dest} left as it was",
            reason="download_corrupted",
            directory=str(dest),
        )


def _swap_in(
    dest: Path, stage: Path, fetched: list[str], removed: list[str], new_lock: dict[str, Any] | None
) -> None:
    """Move the verified files from stage into dest and delete the files gone upstream, the lock first.

    The lock goes first so that no moment shows data files without the lock that vouches for them (a reader
    would take them for a plain dataset); while files move, the directory disagrees with its lock and every
    reader refuses it. On an exception (Ctrl-C, SIGTERM, a full disk) every step is undone: the previous
    files and lock are back. Only SIGKILL can stop it half-way, and that leaves a refused directory, never a
    silently wrong one.
    """
    aside = stage / ".previous"
    lock_file = locks.lock_path(dest)
    done: list[tuple[Path, Path | None]] = []  # (path in dest, where its previous file was put)
    old_lock = aside / locks.LOCK_NAME if lock_file.is_file() else None
    try:
        aside.mkdir()
        if new_lock is not None:
            if old_lock is not None:
                shutil.copy2(lock_file, old_lock)
            locks.write_lock(dest, new_lock)
        for rel in [*fetched, *removed]:
            target = dest / rel
            prev = None
            if target.exists() or target.is_symlink():
                prev = aside / "files" / rel
                prev.parent.mkdir(parents=True, exist_ok=True)
                os.replace(target, prev)
            done.append((target, prev))
            if rel in fetched:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(stage / rel, target)
        fsync_dir(dest)
    except BaseException:
        for target, prev in reversed(done):
            if prev is None:
                target.unlink(missing_ok=True)
            else:
                os.replace(prev, target)
        if new_lock is not None:
            if old_lock is not None:
                os.replace(old_lock, lock_file)
            else:
                lock_file.unlink(missing_ok=True)
        raise
