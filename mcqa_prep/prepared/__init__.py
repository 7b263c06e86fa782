"""A prepared directory on disk: its format and every reader's checks.

    manifest.py  file names, the manifest (build, write, read as a typed Manifest, self-consistency)
    accept.py    whether a preparation is accepted: the one rule of every reader (accept, verify_prepared:
                 manifest, contract and version, then the files), and by prepare (up to date)
    files.py     verify_files: bytes, row counts, stamps and bound rows against the manifest
    verify.py    verify_prepared (accept.py's), where callers have always imported it
    load.py      load_prepared: the verified data as a `datasets` object

Writing one is the `prepare` package's job; every command that reads one (verify, serve, rescore --rows, any
command given a prepared directory, `load_prepared`) is accepted by accept.py.
"""

from __future__ import annotations

from typing import Any

__all__ = ["load_prepared", "verify_prepared"]


def __getattr__(name: str) -> Any:  # lazy: manifest readers must not pull in datasets
    if name == "verify_prepared":
        from .verify import verify_prepared

        return verify_prepared
    if name == "load_prepared":
        from .load import load_prepared

        return load_prepared
    raise AttributeError(name)
