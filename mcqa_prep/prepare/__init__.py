"""`prepare`: validate -> normalise -> stamp the grading contract -> write shards and the manifest.

    run.py   the workflow: inputs and provenance, the stale-cache decision, the row loop, the atomic commit
    rows.py  one row's (one chunk's) work: normalise, stamp, pass-rate filter, the regex repair; runs in the
             workers
    report.py   what a run did (PrepareReport): counts, splits, files, findings, the manifest's sections
    repairs.py  the regex repair's counts (by template), the manifest's `repairs`, the failure naming it

The directory it writes (its manifest and every reader's checks) is the `prepared` package.
Design: docs/design/prepare.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["prepare", "normalise_options"]


def __getattr__(name: str) -> Any:  # lazy: a worker imports rows.py only
    if name in __all__:
        from . import run

        return getattr(run, name)
    raise AttributeError(name)
