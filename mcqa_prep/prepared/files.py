"""A preparation's files against its manifest (`verify_files`): the second half of the one acceptance rule
(accept.accept; the first half, the manifest's contract and version, is accept.py's too).

No data file lies beside the listed ones; every listed file has the recorded size, sha256 and row count;
every row parses and carries the manifest's contract id; and, in a preparation whose rows are bound
(preparation version 3 on: `Manifest.binds_rows`), every row's grading fields still hash to the digests its
stamp records (binding.py): a row edited after prepare, with the manifest's hashes written again to match,
is refused too (`row_changed`). A mismatch raises a typed error; nothing is silently rebuilt or reused.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import binding
from ..errors import IntegrityError
from ..fields import contract_stamp
from ..io.hashing import Digest, sha256_file
from ..io.readers import block_lines, read_jsonl, read_parquet
from ..progress import Progress
from . import manifest as mf

# what verify_files hands a caller that indexes the rows (serve --prepared): the row, and where it lies
# (its file's position in the manifest's list, its byte offset in a JSONL shard or its index in a Parquet one)
OnRow = Callable[[dict[str, Any], int, int], Any]


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


def row_changed(path: Path | str, line: int, c: binding.Check) -> IntegrityError:
    """The refusal of a prepared row whose grading fields no longer match its stamp (binding.check)."""
    return IntegrityError(
        f"{path}:{line}: {binding.describe(c)}",
        reason="row_changed",
        path=str(path),
        line=line,
        fields=list(c.fields),
    )


class _Offsets:
    """The lines of a JSONL file passed through, each one's byte offset kept as it goes by (the reader yields
    a row as soon as it has read its line, so `start` is the offset of the row just read)."""

    def __init__(self, lines: Any) -> None:
        self.lines = lines
        self.start = self.pos = 0

    def __iter__(self) -> Any:
        for raw in self.lines:
            self.start = self.pos
            self.pos += len(raw) + 1
            yield raw


def _scan_shard(
    path: Path,
    fmt: str,
    expected: str,
    on_bytes: Callable[[int], Any] | None,
    bound: bool = False,
    on_row: Callable[[dict[str, Any], int], Any] | None = None,
) -> tuple[str, int, IntegrityError | None]:
    """(sha256, rows, the first row edited after prepare or None) of one shard, every row parsed and its stamp
    checked (and, `bound`, its grading fields against its stamp), in one pass over a JSONL file. An edited row
    is returned, not raised: the caller raises it once the file's bytes are found to be the manifest's (a
    file whose bytes differ is refused for that, whatever its rows say)."""
    edited: IntegrityError | None = None
    n = 0
    if fmt == "parquet":
        digest = sha256_file(path, on_bytes)[0]
        rows: Any = read_parquet(path, None, columns=None if bound or on_row else ["metadata"])
        offsets = None
    else:
        seen = Digest(on_bytes)
        fh = open(path, "rb")  # noqa: SIM115 - closed below, after the generator is spent
        offsets = _Offsets(block_lines(fh, seen))
        rows = read_jsonl(offsets, str(path), None)
    try:
        for row in rows:
            n += 1
            if row.data is None:
                raise IntegrityError(f"{path}:{row.line}: {row.error}", path=str(path), line=row.line)
            if contract_stamp(row.data).value != expected:
                raise _stamp_error(path, row.line, contract_stamp(row.data).value, expected)
            if bound and edited is None:
                c = binding.check(row.data)
                if c.state != binding.OK:
                    edited = (
                        row_changed(path, row.line, c)
                        if c.state == binding.CHANGED
                        else _unbound(path, row.line)
                    )
            if on_row is not None:
                on_row(row.data, offsets.start if offsets is not None else n - 1)
    finally:
        if offsets is not None:
            fh.close()
    return (seen.hexdigest() if offsets is not None else digest), n, edited


def _unbound(path: Path, line: int) -> IntegrityError:
    return IntegrityError(
        f"{path}:{line}: $.metadata.mcqa_prep.{binding.STAMP_KEY}: the stamp records no digests of the row's "
        "grading fields, which every row of this preparation version carries: the stamp was edited",
        reason="row_changed",
        path=str(path),
        line=line,
    )


def verify_files(
    manifest: mf.Manifest, *, progress: Progress | None = None, on_row: OnRow | None = None
) -> VerifyReport:
    """The files of a preparation whose manifest was read (and its contract checked) against that manifest:
    no data file beside the listed ones, every listed one with its recorded size, sha256, rows and stamps,
    every row of a bound preparation as prepared. `on_row(row, file, location)` sees every shard row."""
    expected = manifest.contract_id
    unlisted_files(manifest)
    total = manifest.total_bytes
    bar = progress(total=total, desc="verify", unit="B") if progress is not None else None
    on_bytes = bar.update if bar is not None else None
    rows_total = 0
    try:
        for i, entry in enumerate(manifest.files):
            path = manifest.path(entry)
            check_size(path, entry.bytes)
            edited = None
            if entry.kind == mf.REJECTS:
                digest, _, rows = sha256_file(path, on_bytes, count_lines=True)
            else:
                see = (lambda row, at, i=i: on_row(row, i, at)) if on_row is not None else None
                digest, rows, edited = _scan_shard(
                    path, manifest.output_format, expected, on_bytes, manifest.binds_rows, see
                )
                rows_total += rows
            check_recorded(path, entry, digest, rows)
            if edited is not None:
                raise edited
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
