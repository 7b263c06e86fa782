"""Where convert writes: one JSONL file (io.writers.AtomicFile), or a directory of <split>.jsonl files with
convert.json written last, in a staging directory put into place by io.staging. The writers every command
shares, so a killed run's temporaries are removed by the next one and a failed write is an OutputError."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from ..io import AtomicFile, staging
from ..io.paths import is_special
from ..io.writers import GuardedFile, output_error, write_atomic_text
from .sources import Stream

REPORT_NAME = "convert.json"


class Outputs:
    """JSONL file mode (one AtomicFile) or directory mode (one <split>.jsonl per split in a staging
    directory put into place by io.staging, convert.json written last): the writers every command shares, so
    a killed run's temporaries are removed by the next one and a failed write is an output error."""

    def __init__(self, out: Path):
        self.out = out
        self.dir_mode = out.suffix != ".jsonl" and not is_special(out)  # (-o /dev/null: one file, in place)
        self.files: dict[str, Any] = {}
        self.rows: Counter[str] = Counter()
        self._atomic: AtomicFile | None = None
        self.staging: Path | None = None

    def key_for(self, src: Stream) -> str:
        return src.split if self.dir_mode else ""

    def open(self) -> None:
        if self.dir_mode:
            staging.clean_leftovers(self.out)
            self.staging = staging.side_name(self.out, "staging")
            try:
                self.out.parent.mkdir(parents=True, exist_ok=True)
                self.staging.mkdir()
            except OSError as exc:
                self.staging = None
                raise output_error(exc, self.out) from None
        else:
            atomic = AtomicFile(self.out, "wb")
            self.files[""] = atomic.__enter__()
            self._atomic = atomic  # only once entered: abort() exits it

    def handle(self, key: str):
        fh = self.files.get(key)
        if fh is None:
            assert self.staging is not None
            name = "".join(c if c.isalnum() or c in "-_." else "_" for c in key) or "train"
            try:
                raw = open(self.staging / f"{name}.jsonl", "wb")  # noqa: SIM115 - closed by commit/abort
            except OSError as exc:
                raise output_error(exc, self.out) from None
            fh = self.files[key] = GuardedFile(raw, self.out)  # a failed write is an output error
        return fh

    def names(self) -> dict[str, str]:
        if not self.dir_mode:
            return {"": str(self.out)}
        return {k: str(self.out / Path(fh.name).name) for k, fh in self.files.items()}

    def commit(self, report: dict[str, Any]) -> None:
        if not self.dir_mode:
            assert self._atomic is not None
            atomic, self._atomic = self._atomic, None
            atomic.__exit__(None, None, None)
            return
        assert self.staging is not None
        try:
            for fh in self.files.values():
                fh.flush()
                os.fsync(fh.fileno())
                fh.close()
        except OSError as exc:
            raise output_error(exc, self.out) from None
        write_atomic_text(self.staging / REPORT_NAME, json.dumps(report, ensure_ascii=False, indent=2) + "\n")
        staging.commit(self.staging, self.out, replace=self.out.exists())
        self.staging = None

    def abort(self, exc: BaseException) -> None:
        if self._atomic is not None:
            self._atomic.__exit__(type(exc), exc, exc.__traceback__)
            self._atomic = None
        for fh in self.files.values():
            if not fh.closed:
                with contextlib.suppress(OSError):
                    fh.close()
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None
