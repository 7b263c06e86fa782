"""`pull`: a hub dataset at an exact commit, every byte verified, a provenance lock written.

    run.py   the workflow: resolve, plan, download into staging, verify, swap in, write the lock
    hub.py   the hub client (the only module that imports huggingface_hub)
    lock.py  the pull lock: format, reading, verifying a pulled directory, its data files and splits

Design: docs/design/pull.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["pull"]


def __getattr__(name: str) -> Any:  # lazy: reading a lock needs no hub client
    if name == "pull":
        from .run import pull

        return pull
    raise AttributeError(name)
