"""`mcqa-prep audit`: contamination against benchmarks, duplicates within and across splits, wrong answer keys
from rollouts, and position bias, found before training (docs/design/audit.md).

Layout: text.py (what is compared: normalised words, a row's question cut out of its prompt), features.py
(n-gram hashes, MinHash signatures by rensa, LSH band keys), benchmarks.py (benchmark files read by convert's
readers, indexed), contamination.py (rows against the index), duplicates.py (the dataset's own duplicate
index), keys.py (wrong keys and answer-letter bias from rollouts), run.py (the streaming pass), document.py
(the audit document).
"""

from __future__ import annotations

from typing import Any

__all__ = ["audit", "Request"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import run

        return getattr(run, name)
    raise AttributeError(name)
