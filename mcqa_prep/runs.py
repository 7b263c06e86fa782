"""The settings of one run that any command could have, whatever runs it (one process, local workers, Ray):
`RunRequest`. A command's request holds one beside its own settings (`rescore.run.RescoreRequest`), and an
engine takes everything it needs to read, split, run, resume and report a job from it."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import UsageError
from .progress import Progress


@dataclass(frozen=True)
class RunRequest:
    """What to read, where the result goes, how many workers, the progress bar, resuming and chunking, and
    the engine that runs it (local processes or Ray, and which Ray)."""

    inputs: tuple[str | os.PathLike[str], ...]  # files, directories or '-' (a command may take one only)
    output: str | os.PathLike[str] | None = None  # a file, or a directory for an engine that writes shards
    workers: int | None = 1  # worker processes or Ray workers; None: every core (or what Ray offers)
    progress: Progress | None = None  # a bar factory (mcqa_prep.progress)
    resume: bool = False  # continue an interrupted run of the same job from its complete chunks
    chunk_bytes: int | None = None  # input bytes per chunk of work; None: the engine decides
    examples: int = 5  # examples kept per reported bucket
    engine: str = "local"  # "local": this machine's processes; "ray": a Ray cluster (mcqa_prep.engine)
    address: str | None = (
        None  # the Ray cluster to use ("auto", host:port); None: RAY_ADDRESS, else a local one
    )

    def check(self) -> None:
        """The settings every engine refuses alike (UsageError)."""
        if self.examples < 0:
            raise UsageError(f"examples must be 0 or more, got {self.examples}")
        if self.workers is not None and self.workers < 1:
            raise UsageError(f"workers must be at least 1, got {self.workers}", reason="bad_workers")
        if self.chunk_bytes is not None and self.chunk_bytes < 1:
            raise UsageError(f"chunk_bytes must be 1 or more, got {self.chunk_bytes}")

    @property
    def input(self) -> str | os.PathLike[str]:
        """The one input of a command that reads one."""
        if len(self.inputs) != 1:
            raise UsageError(f"this run reads one input, got {len(self.inputs)}")
        return self.inputs[0]
