"""An output directory replaced in one step: write everything into a staging directory beside it, then
rename it into place (or swap it atomically with the previous one), so the output is always either the
previous state or a complete new one. Staging and set-aside directories carry the writer's pid; the next
writer removes those of dead processes.

`MCQA_PREP_TEST_CRASH_AT=<phase>` kills the process at a named phase (like SIGKILL), so tests can prove it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

from ..errors import StaleCache
from .writers import fsync_dir, output_error, pid_alive

CRASH_ENV = "MCQA_PREP_TEST_CRASH_AT"
NO_EXCHANGE_ENV = "MCQA_PREP_NO_RENAME_EXCHANGE"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def crash_point(phase: str) -> None:
    """Test hook: MCQA_PREP_TEST_CRASH_AT=<phase> kills the process here, like SIGKILL would."""
    if os.environ.get(CRASH_ENV) == phase:
        os._exit(137)


def side_name(out_dir: Path, kind: str) -> Path:
    return out_dir.parent / f".{out_dir.name}.{kind}-{os.getpid()}-{secrets.token_hex(4)}"


def clean_leftovers(out_dir: Path) -> None:
    """Remove staging/old directories left beside out_dir by writers that died (their pid is gone)."""
    pat = re.compile(rf"^\.{re.escape(out_dir.name)}\.(staging|old)-(\d+)-[0-9a-f]+$")
    with contextlib.suppress(OSError):
        for p in out_dir.parent.iterdir():
            m = pat.match(p.name)
            if m and p.is_dir() and not pid_alive(int(m.group(2))):
                shutil.rmtree(p, ignore_errors=True)


@contextlib.contextmanager
def staging_dir(out_dir: Path) -> Iterator[Path]:
    """A fresh staging directory beside out_dir, removed if the block fails (its contents never count)."""
    clean_leftovers(out_dir)
    staging = side_name(out_dir, "staging")
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        staging.mkdir()
    except OSError as exc:
        raise output_error(exc, out_dir) from None
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def exchange(a: Path, b: Path) -> bool:
    """Atomically swap two directories (Linux renameat2 RENAME_EXCHANGE); False when unsupported."""
    if os.environ.get(NO_EXCHANGE_ENV):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def commit(staging: Path, out_dir: Path, replace: bool) -> None:
    """Put the finished staging directory at out_dir: a rename, or an atomic swap with the old one."""
    fsync_dir(staging)
    try:
        if not replace:
            try:
                os.rename(staging, out_dir)  # atomic; also replaces an empty directory
            except OSError as exc:
                if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    raise StaleCache(
                        f"{out_dir}: another writer filled this directory while this run wrote; not replaced",
                        reason="concurrent_preparation",
                        directory=str(out_dir),
                    ) from None
                raise
            fsync_dir(out_dir.parent)
            return
        if exchange(staging, out_dir):
            fsync_dir(out_dir.parent)
            crash_point("swap")
            crash_point("cleanup")
            shutil.rmtree(staging, ignore_errors=True)  # now holds the old directory
            return
        aside = side_name(out_dir, "old")
        os.rename(out_dir, aside)
        crash_point("swap")
        os.rename(staging, out_dir)
        fsync_dir(out_dir.parent)
        crash_point("cleanup")
        shutil.rmtree(aside, ignore_errors=True)
    except OSError as exc:
        raise output_error(exc, out_dir, "cannot put the new output in place") from None
