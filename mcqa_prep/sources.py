"""Input arguments -> the data files to read: the one resolver of every command (convert included).

An argument is a data file, '-' (JSONL on stdin), a directory (its data files, recursively, without what
io.paths.ignored says is not data), a directory written by `pull` (its locked data files, verified against
the lock first unless the caller says not to), or a directory written by `prepare` (its shards, never its
rejects, accepted by the one rule of every reader of a preparation first: prepared.accept.accept, so a
stale, tampered or foreign preparation is refused alike by every command; `allow_stale`, for a command that
only reports, reads one made by another preparation or grader version and lists it in `Inputs.stale`). Which files are data is io.paths.data_kind over the
caller's `kinds` (JSONL and Parquet; convert asks for CSV/TSV, .json and .ndjson too). Splits follow
io.paths.split_of, or the lock's and the manifest's record. `split` selects one split of a pulled or
prepared directory; on plain files it forces that split, or with `select` keeps a directory's files of
that split (a file given by itself is still recorded as that split).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InputError, UsageError
from .io.paths import (
    DATA_KINDS,
    DEFAULT_SPLIT,
    STDIN,
    data_kind,
    distinct_inputs,
    expand_inputs,
    require_regular,
)
from .progress import Progress

if TYPE_CHECKING:
    from .prepared.manifest import Manifest


KIND_FILE = "file"
KIND_STDIN = "stdin"
KIND_PULLED = "pulled"
KIND_PREPARED = "prepared"


@dataclass(frozen=True)
class Source:
    """One data file to read. `name` is its path relative to the argument (the locked path for a pulled
    file); `kind` where it was found (file, stdin, pulled, prepared), `format` how it is read
    (io.paths.data_kind: jsonl, parquet, csv); `pulled` holds {repo, commit, path} when the bytes were
    verified against a pull lock."""

    path: Path | str
    name: str
    split: str
    arg: str
    kind: str
    pulled: dict[str, str] | None = None
    format: str = "jsonl"


@dataclass
class Inputs:
    """What the arguments resolved to: the files in reading order, and what was found on the way."""

    sources: list[Source] = field(default_factory=list)
    locks: list[tuple[str, dict[str, Any], bool]] = field(default_factory=list)  # (arg, lock, verified)
    manifests: list[tuple[str, Manifest]] = field(default_factory=list)  # (arg, its manifest)
    stale: list[tuple[str, Any]] = field(default_factory=list)  # (arg, why it is stale) under allow_stale

    def stale_report(self) -> list[dict[str, Any]]:
        """The preparations read under allow_stale, as a report lists them: path, reason, the refusal's message."""
        from .records import display_name

        return [
            {"path": display_name(arg), "reason": e.reason, "message": e.message} for arg, e in self.stale
        ]

    @property
    def unverified(self) -> list[str]:
        """Pulled directories whose files were not checked against their lock (verify=False)."""
        return [arg for arg, _, verified in self.locks if not verified]


def resolve(
    args: Iterable[str | os.PathLike],
    *,
    split: str | None = None,
    verify: bool = True,
    progress: Progress | None = None,
    allow_stdin: bool = True,
    kinds: dict[str, str] = DATA_KINDS,
    select: bool = False,
    allow_stale: bool = False,
    reread: str | None = None,
    what: str = "input",
) -> Inputs:
    """The files `args` name, in reading order; the same file or the same bytes twice among them is refused
    (io.paths.distinct_inputs: pooled, its rows would count twice). `reread` says why the caller reads each
    file twice (hashes it, then reads its rows; or reads it in two passes): then stdin and a pipe or a device
    are refused up front as usage errors (io.paths.require_regular), the one rule of every command that
    reads an input twice, instead of a second pass that finds nothing."""
    from .prepared import manifest as mf
    from .pull import lock as locks

    out = Inputs()
    for a in args:
        arg = str(a)
        if arg == STDIN:
            if reread is not None:
                raise UsageError(f"stdin ('-') cannot be read here: {reread}; give a file", reason="no_stdin")
            if not allow_stdin:
                raise UsageError("stdin ('-') cannot be read here: give a file", reason="no_stdin")
            out.sources.append(Source(STDIN, STDIN, split or DEFAULT_SPLIT, arg, KIND_STDIN))
        elif locks.is_pulled_dir(arg):
            _pulled(out, arg, split, verify, progress)
        elif mf.is_prepared_dir(arg):
            _prepared(out, arg, split, progress, allow_stale)
        else:
            for f in expand_inputs([arg], split=split, kinds=kinds, select=select):
                if reread is not None:
                    require_regular(f.path, reread)
                out.sources.append(Source(f.path, f.name, f.split, arg, KIND_FILE, None, f.kind))
    distinct_inputs((s.path for s in out.sources), what)
    return out


def _pulled(out: Inputs, arg: str, split: str | None, verify: bool, progress: Progress | None) -> None:
    from .pull import lock as locks

    lock = locks.read_lock(arg)
    if verify:
        locks.verify_pulled_dir(arg, progress=progress)
    chosen = locks.data_files(arg, lock, [split] if split else None)
    if not chosen:
        raise InputError(f"{arg}: the pull lock lists no data files", reason="no_data_files")
    out.locks.append((arg, lock, verify))
    for path, sp in chosen:
        rel = Path(path).relative_to(arg).as_posix()
        claim = {"repo": lock["repo"], "commit": lock["commit"], "path": rel} if verify else None
        out.sources.append(Source(Path(path), rel, sp, arg, KIND_PULLED, claim, data_kind(path) or "jsonl"))


def _prepared(
    out: Inputs, arg: str, split: str | None, progress: Progress | None, allow_stale: bool = False
) -> None:
    from .prepared.accept import accept

    accepted = accept(arg, None, allow_stale=allow_stale, progress=progress)
    manifest = accepted.manifest
    if accepted.stale is not None:
        out.stale.append((arg, accepted.stale))
    shards = manifest.shards(split)
    if split is not None and not shards:
        raise UsageError(
            f"{arg}: no split {split!r} in this preparation (splits: {', '.join(manifest.splits) or 'none'})",
            reason="unknown_split",
        )
    out.manifests.append((arg, manifest))
    for f in shards:
        path = manifest.path(f)
        out.sources.append(
            Source(path, f.name, f.split or "", arg, KIND_PREPARED, None, data_kind(path) or "jsonl")
        )
