"""File hashing shared by prepare (inputs), verify (outputs) and their progress bars."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import Any

BLOCK = 8 << 20


def sha256_file(
    path: str | os.PathLike, on_bytes: Callable[[int], Any] | None = None, *, count_lines: bool = False
) -> tuple[str, int, int]:
    """(sha256 hex, size in bytes, newline count when count_lines else 0), in one streaming pass."""
    h = hashlib.sha256()
    size = lines = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(BLOCK):
            h.update(chunk)
            size += len(chunk)
            if count_lines:
                lines += chunk.count(b"\n")
            if on_bytes is not None:
                on_bytes(len(chunk))
    return h.hexdigest(), size, lines
