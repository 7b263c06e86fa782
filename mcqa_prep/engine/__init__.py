"""The one row engine: every row-parallel command (validate, prepare, rescore, passrates, audit, convert,
report) runs its chunks through `run` (job.py), on local processes or on Ray, resumable (workdir.py)."""

from __future__ import annotations

from .job import ENGINES, Job, RunInfo, run
from .work import Piece
from .workdir import Shard

__all__ = ["ENGINES", "Job", "Piece", "RunInfo", "Shard", "run"]
