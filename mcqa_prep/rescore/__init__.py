"""`rescore` and `summarize`: regrade verify requests and rollouts, and pool the rescored files.

    run.py         the workflow: the --rows join index, the report, the local engine (one process or workers)
    rows.py        one row's rescoring (pure; runs in the workers and in Ray tasks)
    ray_engine.py  the same grading on Ray Data
    summarize.py   pooling rescored files by contract

Design: docs/design/rescore.md, docs/design/ray.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["rescore"]


def __getattr__(name: str) -> Any:  # lazy: a worker imports rows.py only
    if name == "rescore":
        from .run import rescore

        return rescore
    raise AttributeError(name)
