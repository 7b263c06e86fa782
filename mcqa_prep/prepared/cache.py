"""`load_prepared`'s cache: a preparation's verified fingerprints and its splits as Arrow files, kept in a
directory only the user can reach, and served only while they match the shards' verified hashes.

    <root>/load-v1/                 0700, owned by the user (checked on every use; refused otherwise)
      <manifest sha256>/            one entry per preparation (its manifest's bytes), 0700
        seal.json                   what was verified and built (below)
        train-<random>.arrow        a split as an Arrow stream, memory-mapped by `datasets`

`<root>` is `cache_dir` when given, else $MCQA_PREP_CACHE, else $XDG_CACHE_HOME/mcqa-prep, else
~/.cache/mcqa-prep: a per-user directory, never a shared one such as /tmp. The seal records, for the
preparation's directory (its real path):

- every listed file's identity when it was last hashed (size, mtime_ns, ctime_ns, inode, device) and the
  sha256 it then had, which equals the manifest's: while a file's identity is unchanged it is not hashed
  again; any change (an edit, even one that restores the modification time, changes ctime) hashes it again;
- per split, the shards' sha256s the Arrow file was built from, the Arrow file's own identity and sha256
  (recorded as it was written). An Arrow file is served only when its shards' hashes are the manifest's and
  its identity is the recorded one (with `verify=True`, also its sha256); anything else is rebuilt.

A fault of the cache itself (a directory owned by someone else or open to others, a symbolic link, a
directory that cannot be written) is a CacheError in one line; a cache that does not match is rebuilt,
never served.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Any

from ..errors import CacheError
from ..io.readers import read_own_document

FORMAT = "mcqa-prep-load-cache/1"
LAYOUT = "load-v1"
SEAL = "seal.json"
STALE_S = 3600
_OURS = re.compile(r"^[A-Za-z0-9_-]+-[0-9a-f]{16}\.arrow$")  # new_arrow_name's names
ENV = "MCQA_PREP_CACHE"


def default_root() -> Path:
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mcqa-prep"


def identity(path: str | os.PathLike) -> dict[str, int] | None:
    """What tells a file's bytes changed without reading them (None when it is not a regular file)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "ino": st.st_ino,
        "dev": st.st_dev,
    }


def _unsafe(path: Path, why: str) -> CacheError:
    return CacheError(
        f"{path}: not used as a cache: {why}; the load cache lives only in a directory that is yours alone "
        "(mode 0700)",
        reason="cache_unsafe",
        path=str(path),
    )


def private_dir(path: Path) -> Path:
    """`path` as a directory that is the user's alone: created with mode 0700 when missing; an existing one
    must be a real directory (no symbolic link), owned by this user, closed to group and others."""
    try:
        os.makedirs(path.parent, exist_ok=True)
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise CacheError(
            f"{path}: cannot create the cache directory: {exc.strerror or exc}",
            reason="cache_unwritable",
            path=str(path),
        ) from None
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise CacheError(
            f"{path}: {exc.strerror or exc}", reason="cache_unwritable", path=str(path)
        ) from None
    if stat.S_ISLNK(st.st_mode):
        raise _unsafe(path, "it is a symbolic link")
    if not stat.S_ISDIR(st.st_mode):
        raise _unsafe(path, "it is not a directory")
    if st.st_uid != os.geteuid():
        raise _unsafe(path, f"it is owned by uid {st.st_uid}, not by you (uid {os.geteuid()})")
    if st.st_mode & 0o077:
        raise _unsafe(path, f"others may use it (mode {stat.S_IMODE(st.st_mode):04o})")
    if not os.access(path, os.W_OK | os.X_OK):
        raise CacheError(
            f"{path}: the cache directory is not writable", reason="cache_unwritable", path=str(path)
        )
    return path


class Entry:
    """One preparation's cache entry (see the module's docstring)."""

    def __init__(self, root: Path, manifest_sha256: str) -> None:
        top = private_dir(root / LAYOUT)
        self.path = private_dir(top / manifest_sha256)
        self.manifest_sha256 = manifest_sha256

    def read_seal(self) -> dict[str, Any]:
        """The seal, or an empty one when there is none (or it is not one this version wrote)."""
        p = self.path / SEAL
        ident = identity(p)
        try:
            if ident is None or os.lstat(p).st_uid != os.geteuid():
                return self.empty_seal()
        except OSError:
            return self.empty_seal()
        doc = read_own_document(p)
        ok = (
            isinstance(doc, dict)
            and doc.get("format") == FORMAT
            and doc.get("manifest_sha256") == self.manifest_sha256
            and isinstance(doc.get("files"), dict)
            and isinstance(doc.get("splits"), dict)
            and all(isinstance(v, dict) for v in (*doc["files"].values(), *doc["splits"].values()))
        )
        return doc if ok else self.empty_seal()

    def empty_seal(self) -> dict[str, Any]:
        return {"format": FORMAT, "manifest_sha256": self.manifest_sha256, "directory": None, "files": {},
                "splits": {}}  # fmt: skip

    def write_seal(self, seal: dict[str, Any], replaced: tuple[str, ...] = ()) -> None:
        """Write the seal; then remove the Arrow files it replaced (`replaced`, at once: a process that has
        one mapped keeps reading it) and what earlier builds left (remove_unsealed)."""
        self.write_bytes(SEAL, (json.dumps(seal, indent=1, sort_keys=True) + "\n").encode("utf-8"))
        named = {s.get("arrow") for s in seal.get("splits", {}).values()}
        for name in replaced:
            if name and name not in named and "/" not in name:
                with contextlib.suppress(OSError):
                    os.unlink(self.path / name)
        self.remove_unsealed(seal)

    def write_bytes(self, name: str, data: bytes) -> None:
        tmp = self.path / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path / name)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise self.write_error(exc) from None

    def write_error(self, exc: OSError) -> CacheError:
        return CacheError(
            f"{self.path}: cannot write the load cache: {exc.strerror or exc}",
            reason="cache_unwritable",
            path=str(self.path),
        )

    def new_arrow_name(self, split: str) -> str:
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in split)[:64]
        return f"{safe}-{secrets.token_hex(8)}.arrow"

    def remove_unsealed(self, seal: dict[str, Any]) -> None:
        """Arrow files the seal does not name and temporary files, once an hour old: what earlier builds
        left (a build running now is younger; a process that has a file mapped keeps reading it)."""
        import time

        named = {s.get("arrow") for s in seal.get("splits", {}).values()}
        old = time.time() - STALE_S
        with contextlib.suppress(OSError):
            for p in self.path.iterdir():
                ours = _OURS.match(p.name) is not None  # not datasets' own cache-*.arrow of a .map()
                if (ours and p.name not in named) or (p.name.startswith(".") and p.name.endswith(".tmp")):
                    with contextlib.suppress(OSError):
                        if os.lstat(p).st_mtime < old:
                            os.unlink(p)
