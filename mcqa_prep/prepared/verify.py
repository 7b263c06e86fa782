"""`verify_prepared`: a preparation accepted by the one rule of every reader (accept.py), for a caller that
wants the verified files' report (the `verify` command's, and the library's `mcqa_prep.prepared.verify_prepared`).
The checks themselves: the manifest and its contract in accept.py, the files in files.py."""

from __future__ import annotations

from .accept import verify_prepared
from .files import VerifyReport

__all__ = ["VerifyReport", "verify_prepared"]
