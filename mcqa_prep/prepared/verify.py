"""Verifying a prepared directory: `verify_prepared`, every check a reader needs (`load_prepared` in
load.py builds on it).

The same checks guard every reader (CLI `verify`, `load_prepared`, `prepare`'s up-to-date path, `rescore
--rows`, any command given a prepared directory as input): the manifest is a supported, schema-valid,
self-consistent one (manifest.read); the contract is the one this grader or the given policy means
(accept.check_contract); no data file lies beside the listed ones; every listed file has the recorded
size, sha256 and row count; every row parses and carries the manifest's contract id. A mismatch raises a
typed error; nothing is silently rebuilt or reused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import IntegrityError
from ..fields import contract_stamp
from ..io.hashing import Digest, sha256_file
from ..io.readers import block_lines, read_jsonl, read_parquet
from ..policy import GradingPolicy
from ..progress import Progress
from . import manifest as mf
from .accept import check_contract


@dataclass
class VerifyReport:
    """Outcome of a successful verification (failures raise)."""

    out_dir: str
    contract_id: str
    grader_version: str
    files: int
    rows: int
    bytes: int
    splits: dict[str, dict[str, int]]
    manifest: mf.Manifest = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "out_dir": self.out_dir,
            "status": "ok",
            "contract_id": self.contract_id,
            "grader_version": self.grader_version,
            "files": self.files,
            "rows": self.rows,
            "bytes": self.bytes,
            "splits": self.splits,
        }


def _stamp_error(path: Path, line: int, found: Any, expected: str) -> IntegrityError:
    return IntegrityError(
        f"{path}:{line}: $.metadata.mcqa_prep.contract: row stamped {json.dumps(found)}, the manifest says {expected}: "
        "the file was mixed with another preparation",
        path=str(path),
        line=line,
    )


def _scan_shard(
    path: Path, fmt: str, expected: str, on_bytes: Callable[[int], Any] | None
) -> tuple[str, int]:
    """(sha256, rows) of one shard, every row parsed and its stamp checked, in one pass over a JSONL file."""
    if fmt == "parquet":
        digest = sha256_file(path, on_bytes)[0]
        rows = read_parquet(path, None, columns=["metadata"])
    else:
        seen = Digest(on_bytes)
        with open(path, "rb") as fh:
            n = 0
            for row in read_jsonl(block_lines(fh, seen), str(path), None):
                n += 1
                if row.data is None:
                    raise IntegrityError(f"{path}:{row.line}: {row.error}", path=str(path), line=row.line)
                if contract_stamp(row.data).value != expected:
                    raise _stamp_error(path, row.line, contract_stamp(row.data).value, expected)
        return seen.hexdigest(), n
    n = 0
    for row in rows:
        n += 1
        if contract_stamp(row.data).value != expected:
            raise _stamp_error(path, row.line, contract_stamp(row.data).value, expected)
    return digest, n


def verify_prepared(
    directory: str | os.PathLike,
    policy: GradingPolicy | None = None,
    *,
    progress: Progress | None = None,
    contract: bool = True,
) -> VerifyReport:
    """Every check a reader of prepared data needs; raises IncompletePreparation, ContractMismatch or
    IntegrityError naming the file, the line and what differs. `contract=False` checks the bytes only (for
    a reader that regrades the rows itself, such as a rescore join)."""
    manifest = mf.read(directory)
    if contract:
        check_contract(manifest, policy)
    return verify_files(manifest, progress=progress)


def verify_files(manifest: mf.Manifest, *, progress: Progress | None = None) -> VerifyReport:
    """The files of a preparation whose manifest was read (and its contract checked) against that manifest:
    no data file beside the listed ones, every listed one with its recorded size, sha256, rows and stamps."""
    expected = manifest.contract_id
    unlisted_files(manifest)
    total = manifest.total_bytes
    bar = progress(total=total, desc="verify", unit="B") if progress is not None else None
    on_bytes = bar.update if bar is not None else None
    rows_total = 0
    try:
        for entry in manifest.files:
            path = manifest.path(entry)
            check_size(path, entry.bytes)
            if entry.kind == mf.REJECTS:
                digest, _, rows = sha256_file(path, on_bytes, count_lines=True)
            else:
                digest, rows = _scan_shard(path, manifest.output_format, expected, on_bytes)
                rows_total += rows
            check_recorded(path, entry, digest, rows)
    finally:
        if bar is not None:
            bar.close()
    return VerifyReport(
        str(manifest.directory),
        expected,
        manifest.grader_version,
        len(manifest.files),
        rows_total,
        total,
        manifest.splits,
        manifest,
    )


def check_recorded(path: Path, entry: mf.ListedFile, digest: str, rows: int) -> None:
    """A file's sha256 and row count against its manifest entry."""
    if digest != entry.sha256:
        raise IntegrityError(
            f"{path}: sha256 is {digest} but the manifest records {entry.sha256}: the file changed "
            "after preparation",
            path=str(path),
        )
    if rows != entry.rows:
        raise IntegrityError(f"{path}: {rows} rows, the manifest records {entry.rows}", path=str(path))


def unlisted_files(manifest: mf.Manifest) -> None:
    """No data file may lie beside the listed ones (a reader of the directory would take it for data)."""
    d = manifest.directory
    listed = {f.name for f in manifest.files}
    unlisted = sorted(p.name for p in d.iterdir() if mf.DATA_FILE.match(p.name) and p.name not in listed)
    if unlisted:
        raise IntegrityError(
            f"{d}: data file(s) not in the manifest: {', '.join(unlisted)}", directory=str(d)
        )


def check_size(path: Path, recorded: int) -> None:
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise IntegrityError(f"{path}: missing (listed in the manifest)", path=str(path)) from None
    if size != recorded:
        raise IntegrityError(
            f"{path}: {size} bytes, the manifest records {recorded}: the file changed after preparation",
            path=str(path),
        )
