"""Reading a prepared directory: `verify_prepared` (every check a reader needs) and `load_prepared` (the
verified data as a `datasets` object).

The same checks guard every reader (CLI `verify`, `load_prepared`, `prepare`'s up-to-date path, `rescore
--rows`, any command given a prepared directory as input): the manifest is a supported, schema-valid,
self-consistent one (manifest.read); the contract is the one this grader or the given policy means
(manifest.check_contract); no data file lies beside the listed ones; every listed file has the recorded
size, sha256 and row count; every row parses and carries the manifest's contract id. A mismatch raises a
typed error; nothing is silently rebuilt or reused.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import manifest as mf
from .errors import InputError, IntegrityError
from .io.hashing import sha256_file
from .io.readers import block_lines, iter_file, read_jsonl, read_parquet
from .io.shards import read_json_block, strings_for_timestamps
from .policy import GradingPolicy

Progress = Callable[..., Any]


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
    manifest: dict[str, Any] = field(repr=False)

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

    def shards(self, split: str | None = None) -> list[tuple[Path, str]]:
        """(path, split) of every shard (of one split), in manifest order."""
        d = Path(self.out_dir)
        return [
            (d / f["path"], f["split"])
            for f in self.manifest["files"]
            if f["kind"] == "shard" and (split is None or f["split"] == split)
        ]


def _stamp(row: dict[str, Any] | None) -> Any:
    md = row.get("metadata") if row is not None else None
    stamp = md.get("mcqa_prep") if isinstance(md, dict) else None
    return stamp.get("contract") if isinstance(stamp, dict) else None


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
        h = hashlib.sha256()

        def seen(block: bytes) -> None:
            h.update(block)
            if on_bytes is not None:
                on_bytes(len(block))

        with open(path, "rb") as fh:
            n = 0
            for row in read_jsonl(block_lines(fh, seen), str(path), None):
                n += 1
                if row.data is None:
                    raise IntegrityError(f"{path}:{row.line}: {row.error}", path=str(path), line=row.line)
                if _stamp(row.data) != expected:
                    raise _stamp_error(path, row.line, _stamp(row.data), expected)
        return h.hexdigest(), n
    n = 0
    for row in rows:
        n += 1
        if _stamp(row.data) != expected:
            raise _stamp_error(path, row.line, _stamp(row.data), expected)
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
    d = Path(directory)
    manifest = mf.read(d)
    if contract:
        mf.check_contract(manifest, policy, str(d))
    expected = manifest["contract_id"]
    fmt = manifest["settings"]["output_format"]
    listed = {f["path"] for f in manifest["files"]}
    unlisted = sorted(p.name for p in d.iterdir() if mf.DATA_FILE.match(p.name) and p.name not in listed)
    if unlisted:
        raise IntegrityError(
            f"{d}: data file(s) not in the manifest: {', '.join(unlisted)}", directory=str(d)
        )
    total = sum(f["bytes"] for f in manifest["files"])
    bar = progress(total=total, desc="verify", unit="B") if progress is not None else None
    on_bytes = bar.update if bar is not None else None
    rows_total = 0
    try:
        for entry in manifest["files"]:
            path = d / entry["path"]
            _check_size(path, entry["bytes"])
            if entry["kind"] == "rejects":
                digest, _, rows = sha256_file(path, on_bytes, count_lines=True)
            else:
                digest, rows = _scan_shard(path, fmt, expected, on_bytes)
                rows_total += rows
            if digest != entry["sha256"]:
                raise IntegrityError(
                    f"{path}: sha256 is {digest} but the manifest records {entry['sha256']}: the file changed "
                    "after preparation",
                    path=str(path),
                )
            if rows != entry["rows"]:
                raise IntegrityError(
                    f"{path}: {rows} rows, the manifest records {entry['rows']}", path=str(path)
                )
    finally:
        if bar is not None:
            bar.close()
    return VerifyReport(
        str(d),
        expected,
        manifest["contract"]["grader_version"],
        len(manifest["files"]),
        rows_total,
        total,
        manifest["splits"],
        manifest,
    )


def _check_size(path: Path, recorded: int) -> None:
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise IntegrityError(f"{path}: missing (listed in the manifest)", path=str(path)) from None
    if size != recorded:
        raise IntegrityError(
            f"{path}: {size} bytes, the manifest records {recorded}: the file changed after preparation",
            path=str(path),
        )


# ---- Arrow schema for loading --------------------------------------------------------------------------


_SCHEMA_BATCH = 2048


def _uniform_row(row: dict[str, Any]) -> dict[str, Any]:
    """One Arrow type per field: template_metadata.output_regex as a list of patterns. NeMo Gym accepts a
    string or a list, and a one-pattern list grades exactly like the string, so real data mixes both."""
    tm = row.get("template_metadata")
    if isinstance(tm, dict) and isinstance(tm.get("output_regex"), str):
        row["template_metadata"] = {**tm, "output_regex": [tm["output_regex"]]}
    return row


def _shard_rows(
    paths: list[str], columns: tuple[str, ...] | None = None, shard_hashes: tuple[str, ...] = ()
) -> Iterator[dict[str, Any]]:
    for path in paths:
        for rec in iter_file(path):
            if rec.data is None:  # verified just before: only a concurrent edit gets here
                raise IntegrityError(f"{rec.file}:{rec.line}: {rec.error}", path=rec.file)
            row = _uniform_row(rec.data)
            yield row if columns is None else {c: row.get(c) for c in columns}


def _parquet_schema(paths: list[str]) -> Any:
    """The union of the shards' own schemas (4- and 10-option shards hold different option structs)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pa.unify_schemas([pq.read_schema(p) for p in paths], promote_options="permissive")


def _arrow_json_schema(paths: list[str]) -> Any:
    """The unified schema Arrow's JSON reader infers over every block of the shards; None when the rows
    disagree on a field's type (then _split_schema builds one from uniform Python rows)."""
    import pyarrow as pa

    schemas = []
    try:
        for path in paths:
            with open(path, "rb") as fh:
                rest = b""
                while chunk := fh.read(8 << 20):
                    data = rest + chunk
                    cut = data.rfind(b"\n") + 1
                    block, rest = data[:cut], data[cut:]
                    if block:
                        schemas.append(read_json_block(block).schema)
                if rest.strip():
                    schemas.append(read_json_block(rest).schema)
        return strings_for_timestamps(pa.unify_schemas(schemas, promote_options="permissive"))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None


def _split_schema(d: Path, split: str, paths: list[str]) -> Any:
    """One Arrow schema for every row of a split (the union of every batch's inferred struct types)."""
    import pyarrow as pa

    schemas = []
    batch: list[dict[str, Any]] = []
    try:
        for row in _shard_rows(paths):
            batch.append(row)
            if len(batch) == _SCHEMA_BATCH:
                schemas.append(pa.schema(list(pa.array(batch).type)))
                batch = []
        if batch:
            schemas.append(pa.schema(list(pa.array(batch).type)))
        return strings_for_timestamps(pa.unify_schemas(schemas, promote_options="permissive"))
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise IntegrityError(
            f"{d}: split {split!r}: rows disagree on the type of a field, so it cannot be one Arrow column "
            f"({exc}); read the JSONL shards directly",
            directory=str(d),
        ) from None


def load_prepared(
    directory: str | os.PathLike,
    policy: GradingPolicy | None = None,
    split: str | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    progress: Progress | None = None,
):
    """A `datasets.DatasetDict` (or the Dataset of `split`) of a verified preparation.

    Options keep their per-row letters in the JSONL shards, but one Arrow column needs one type: the column
    is the union struct of every letter seen, null-filled (the hub's Parquet shape; mcqa-prep readers drop
    the nulls). The schema is unified over every row of a split, so 4- and 10-option rows (or other
    letters) in any order load as one column, and a split that mixes string and list `output_regex` loads
    with every output_regex as a list (the same grading). Raises ContractMismatch, IntegrityError or
    IncompletePreparation like `verify`.
    """
    import datasets

    report = verify_prepared(directory, policy, progress=progress)
    d = Path(directory)
    shards: dict[str, list[str]] = {}
    for path, sp in report.shards():
        shards.setdefault(sp, []).append(str(path))
    if split is not None and split not in shards:
        raise InputError(
            f"{d}: no split {split!r} (splits: {', '.join(sorted(shards)) or 'none'})", reason="unknown_split"
        )
    cache = Path(cache_dir) if cache_dir is not None else Path(tempfile.gettempdir()) / "mcqa-prep-datasets"
    fmt = report.manifest["settings"]["output_format"]
    out: dict[str, Any] = {}
    for sp in [split] if split is not None else list(shards):
        schema = _parquet_schema(shards[sp]) if fmt == "parquet" else _arrow_json_schema(shards[sp])
        if fmt == "parquet":
            built = datasets.load_dataset(
                "parquet",
                data_files={sp: shards[sp]},
                features=datasets.Features.from_arrow_schema(schema),
                cache_dir=str(cache),
                keep_in_memory=False,
            )
            out[sp] = built[sp]
            continue
        if schema is not None:
            built = datasets.load_dataset(
                "json",
                data_files={sp: shards[sp]},
                features=datasets.Features.from_arrow_schema(schema),
                cache_dir=str(cache),
                keep_in_memory=False,
            )
            out[sp] = built[sp]
            continue
        schema = _split_schema(d, sp, shards[sp])
        # the shards' hashes are part of the arguments, so datasets' cache never serves another
        # preparation's rows under the same file names
        hashes = tuple(
            f["sha256"] for f in report.manifest["files"] if f["split"] == sp and f["kind"] == "shard"
        )
        out[sp] = datasets.Dataset.from_generator(
            _shard_rows,
            gen_kwargs={"paths": shards[sp], "columns": tuple(schema.names), "shard_hashes": hashes},
            features=datasets.Features.from_arrow_schema(schema),
            cache_dir=str(cache),
            split=sp,
        )
    if split is not None:
        return out[split]
    return datasets.DatasetDict(out)
