"""`load_prepared`: a verified preparation as a `datasets` object (verify.py does every check first)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import InputError, IntegrityError
from ..io.readers import iter_file
from ..io.shards import read_json_block, strings_for_timestamps
from ..policy import GradingPolicy
from .verify import verify_prepared

Progress = Callable[..., Any]


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
