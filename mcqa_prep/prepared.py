"""Reading a prepared directory: manifest, verification, and loading as a `datasets` object.

The same checks guard every reader (CLI `verify`, `load_prepared`, `prepare`'s up-to-date path): the manifest
is a supported, schema-valid one; the contract is the one this grader (or the given policy) means; every
listed file has the recorded size, sha256 and row count; every row carries the manifest's contract id.
A mismatch raises a typed error; nothing is silently rebuilt or reused.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ContractMismatch, IncompletePreparation, InputError, IntegrityError
from .io.hashing import sha256_file
from .policy import GradingPolicy, contract_diff, contract_id
from .schema import json_path, schema_version, validator

MANIFEST_NAME = "manifest.json"
SUPPORTED_MANIFESTS = (schema_version("manifest"),)
_SCAN_BLOCK = 8 << 20
_DATA_FILE = re.compile(r"^.+\.(jsonl|parquet)$")

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
    schemas: dict[str, Any] = field(default_factory=dict, repr=False)  # split -> unified pyarrow schema

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


_REFIX = "prepare again into a fresh output directory (or with --overwrite)"


def read_manifest(directory: str | os.PathLike) -> dict[str, Any]:
    """The schema-valid manifest of a prepared directory; IncompletePreparation when there is none."""
    d = Path(directory)
    if not d.is_dir():
        raise InputError(f"{d}: no such directory")
    path = d / MANIFEST_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise IncompletePreparation(
            f"{d}: no {MANIFEST_NAME}: not a complete preparation (interrupted, or not written by "
            f"`mcqa-prep prepare`); {_REFIX}"
        ) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IncompletePreparation(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); {_REFIX}") from None
    version = doc.get("manifest_schema") if isinstance(doc, dict) else None
    if version not in SUPPORTED_MANIFESTS:
        raise IncompletePreparation(
            f"{path}: manifest schema {json.dumps(version)} is not supported (this mcqa-prep reads "
            f"{', '.join(SUPPORTED_MANIFESTS)}); {_REFIX}"
        )
    errors = sorted(validator("manifest").iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise IncompletePreparation(
            f"{path}: {json_path(e.absolute_path)}: {e.message}{more} [{SUPPORTED_MANIFESTS[0]}]; {_REFIX}"
        )
    if contract_id(doc["contract"]) != doc["contract_id"]:
        raise IntegrityError(f"{path}: contract_id does not match the recorded contract (edited?); {_REFIX}")
    return doc


def check_contract(manifest: dict[str, Any], policy: GradingPolicy | None, where: str) -> None:
    """Is the recorded contract the one this grader (policy None) or the given policy means?

    Without a policy only the installation's part is compared (grader, selector, contract and schema
    versions): a preparation made under any policy is valid for this grader. With a policy, everything."""
    found = manifest["contract"]
    mine = (policy or GradingPolicy()).contract()
    if found.get("grader_version") != mine["grader_version"]:
        raise ContractMismatch(
            f"{where}: prepared by grader version {found.get('grader_version')} (contract "
            f"{manifest['contract_id']}); this is grader version {mine['grader_version']} (contract "
            f"{contract_id(mine)}): grading semantics changed; {_REFIX}",
            expected=contract_id(mine),
            found=manifest["contract_id"],
            fields=["grader_version"],
        )
    if policy is None:
        mine = {k: v for k, v in mine.items() if k != "policy"}
        found = {k: v for k, v in found.items() if k != "policy"}
    diff = contract_diff(found, mine)
    if diff:
        want = policy.contract_id() if policy is not None else "this installation's contract"
        raise ContractMismatch(
            f"{where}: prepared under contract {manifest['contract_id']}, expected {want}; fields that differ: "
            f"{'; '.join(diff)}; {_REFIX}",
            expected=policy.contract_id() if policy is not None else None,
            found=manifest["contract_id"],
            fields=[d.split(":", 1)[0] for d in diff],
        )


def _stamp_error(path: Path, line: int, found: Any, expected: str) -> IntegrityError:
    return IntegrityError(
        f"{path}:{line}: $.metadata.mcqa_prep.contract: row stamped {json.dumps(found)}, the manifest says "
        f"{expected}; the file was mixed with another preparation; {_REFIX}"
    )


def _stamps_python(block: bytes, path: Path, first_line: int, expected: str) -> IntegrityError | None:
    for i, raw in enumerate(block.splitlines()):
        try:
            row = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return IntegrityError(f"{path}:{first_line + i}: not a valid JSON row ({exc}); {_REFIX}")
        stamp = None
        if isinstance(row, dict):
            md = row.get("metadata")
            if isinstance(md, dict) and isinstance(md.get("mcqa_prep"), dict):
                stamp = md["mcqa_prep"].get("contract")
        if stamp != expected:
            return _stamp_error(path, first_line + i, stamp, expected)
    return None


def _contract_column(table: Any) -> list[Any] | None:
    import pyarrow as pa

    if "metadata" not in table.column_names:
        return None
    col = table.column("metadata")
    for name in ("mcqa_prep", "contract"):
        if not pa.types.is_struct(col.type) or col.type.get_field_index(name) < 0:
            return None
        col = pa.chunked_array([c.field(name) for c in col.chunks], type=col.type.field(name).type)
    return col.to_pylist() if pa.types.is_string(col.type) else None


def _scan_jsonl(
    path: Path, expected: str, schemas: list | None, on_bytes
) -> tuple[str, int, int, Exception | None]:
    """One pass: sha256, bytes, rows, first stamp problem; Arrow schemas of each block when asked."""
    import pyarrow as pa
    import pyarrow.json as pj

    h = hashlib.sha256()
    size = rows = 0
    problem: Exception | None = None
    rest = b""
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(_SCAN_BLOCK)
            if chunk:
                h.update(chunk)
                size += len(chunk)
                if on_bytes is not None:
                    on_bytes(len(chunk))
                data = rest + chunk
                cut = data.rfind(b"\n") + 1
                block, rest = data[:cut], data[cut:]
            else:
                block, rest = rest, b""
            if block:
                first = rows + 1
                n = block.count(b"\n") + (0 if block.endswith(b"\n") else 1)
                rows += n
                if problem is None or schemas is not None:
                    table = None
                    try:
                        table = pj.read_json(pa.BufferReader(block))
                    except (pa.ArrowInvalid, pa.ArrowTypeError):
                        table = None
                    stamps = _contract_column(table) if table is not None and table.num_rows == n else None
                    if problem is None:
                        if stamps is None:
                            problem = _stamps_python(block, path, first, expected)
                        else:
                            bad = next((i for i, s in enumerate(stamps) if s != expected), None)
                            if bad is not None:
                                problem = _stamp_error(path, first + bad, stamps[bad], expected)
                    if schemas is not None:
                        schemas.append(table.schema if table is not None else None)
            if not chunk:
                break
    return h.hexdigest(), size, rows, problem


def _scan_parquet(
    path: Path, expected: str, schemas: list | None, on_bytes
) -> tuple[str, int, int, Exception | None]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    digest, size, _ = sha256_file(path, on_bytes)
    try:
        pf = pq.ParquetFile(path)
        rows = pf.metadata.num_rows
        stamps = _contract_column(pf.read(columns=["metadata"]))
    except (pa.ArrowInvalid, OSError) as exc:
        return (
            digest,
            size,
            -1,
            IntegrityError(f"{path}: not a readable Parquet file ({exc}); {_REFIX}"),
        )
    problem: Exception | None = None
    if stamps is None:
        problem = _stamp_error(path, 1, None, expected)
    else:
        bad = next((i for i, s in enumerate(stamps) if s != expected), None)
        if bad is not None:
            problem = _stamp_error(path, bad + 1, stamps[bad], expected)
    if schemas is not None:
        schemas.append(pf.schema_arrow)
    return digest, size, rows, problem


def verify_prepared(
    directory: str | os.PathLike,
    policy: GradingPolicy | None = None,
    *,
    progress: Progress | None = None,
    collect_schemas: bool = False,
) -> VerifyReport:
    """Every check a reader of prepared data needs; raises IncompletePreparation, ContractMismatch or
    IntegrityError naming the file, the line and the fix."""
    d = Path(directory)
    manifest = read_manifest(d)
    check_contract(manifest, policy, str(d))
    expected = manifest["contract_id"]
    listed = {f["path"] for f in manifest["files"]}
    unlisted = sorted(p.name for p in d.iterdir() if _DATA_FILE.match(p.name) and p.name not in listed)
    if unlisted:
        raise IntegrityError(f"{d}: data file(s) not in the manifest: {', '.join(unlisted)}; {_REFIX}")
    total = sum(f["bytes"] for f in manifest["files"])
    bar = progress(total=total, desc="verify", unit="B") if progress is not None else None
    per_split: dict[str, list] = {}
    rows_total = 0
    try:
        for entry in manifest["files"]:
            path = d / entry["path"]
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                raise IntegrityError(f"{path}: missing (listed in the manifest); {_REFIX}") from None
            if size != entry["bytes"]:
                raise IntegrityError(
                    f"{path}: {size} bytes, the manifest records {entry['bytes']}: the file changed after "
                    f"preparation; {_REFIX}"
                )
            schemas = (
                per_split.setdefault(entry["split"], [])
                if collect_schemas and entry["kind"] == "shard"
                else None
            )
            scan = _scan_parquet if entry.get("format") == "parquet" else _scan_jsonl
            if entry["kind"] == "rejects":
                digest, _, rows, problem = _hash_and_count(path, bar.update if bar is not None else None)
            else:
                digest, _, rows, problem = scan(
                    path, expected, schemas, bar.update if bar is not None else None
                )
            if digest != entry["sha256"]:
                raise IntegrityError(
                    f"{path}: sha256 is {digest} but the manifest records {entry['sha256']}: the file changed "
                    f"after preparation; {_REFIX}"
                )
            if rows != entry["rows"]:
                raise IntegrityError(f"{path}: {rows} rows, the manifest records {entry['rows']}; {_REFIX}")
            if problem is not None:
                raise problem
            if entry["kind"] == "shard":
                rows_total += rows
    finally:
        if bar is not None:
            bar.close()
    unified: dict[str, Any] = {}
    if collect_schemas:
        for sp, schemas in per_split.items():
            unified[sp] = _unify(schemas, d, sp)
    return VerifyReport(
        str(d),
        expected,
        manifest["contract"]["grader_version"],
        len(manifest["files"]),
        rows_total,
        total,
        manifest["splits"],
        manifest,
        unified,
    )


def _hash_and_count(path: Path, on_bytes) -> tuple[str, int, int, None]:
    digest, size, rows = sha256_file(path, on_bytes, count_lines=True)
    return digest, size, rows, None


# ---- Arrow schema for loading --------------------------------------------------------------------------


def strings_for_timestamps(schema: Any) -> Any:
    """Arrow's JSON reader turns ISO-date-looking strings into timestamps; keep them strings, as written."""
    import pyarrow as pa

    def fix(t: Any) -> Any:
        if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t):
            return pa.string()
        if pa.types.is_struct(t):
            return pa.struct([pa.field(f.name, fix(f.type), f.nullable) for f in t])
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return pa.list_(fix(t.value_type))
        return t

    return pa.schema([pa.field(f.name, fix(f.type), f.nullable) for f in schema])


def _unify(schemas: list, d: Path, split: str) -> Any:
    import pyarrow as pa

    if any(s is None for s in schemas) or not schemas:
        return None
    try:
        return strings_for_timestamps(pa.unify_schemas(schemas, promote_options="permissive"))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None


# ---- datasets ------------------------------------------------------------------------------------------

_MIXED_BATCH = 2048


def _uniform_row(row: dict[str, Any]) -> dict[str, Any]:
    """One Arrow type per field: template_metadata.output_regex as a list of patterns. NeMo Gym accepts a
    string or a list, and a one-pattern list grades exactly like the string, so real data mixes both."""
    tm = row.get("template_metadata")
    if isinstance(tm, dict) and isinstance(tm.get("output_regex"), str):
        row["template_metadata"] = {**tm, "output_regex": [tm["output_regex"]]}
    return row


def _iter_shard_rows(paths: list[str], columns: tuple[str, ...] | None = None):
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    row = _uniform_row(json.loads(line))
                    yield row if columns is None else {c: row.get(c) for c in columns}


def _load_mixed_jsonl(d: Path, split: str, paths: list[str], cache: Path):
    """A split whose JSONL rows give one field several types (typically output_regex as a string in some
    rows and a list in others): stream it twice, once to find the one schema of the uniform rows, once to
    build the Dataset from it. The shards themselves stay exactly as prepared and verified."""
    import datasets
    import pyarrow as pa

    def batch_schema(rows: list[dict[str, Any]]) -> Any:
        # pa.array infers one struct over the keys of every row (Table.from_pylist reads the first row's)
        return pa.schema(list(pa.array(rows).type))

    schemas = []
    batch: list[dict[str, Any]] = []
    try:
        for row in _iter_shard_rows(paths):
            batch.append(row)
            if len(batch) == _MIXED_BATCH:
                schemas.append(batch_schema(batch))
                batch = []
        if batch:
            schemas.append(batch_schema(batch))
        schema = strings_for_timestamps(pa.unify_schemas(schemas, promote_options="permissive"))
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise IntegrityError(
            f"{d}: split {split!r}: rows disagree on the type of a field, so it cannot be one Arrow column "
            f"({exc}); read the JSONL shards directly"
        ) from None
    features = datasets.Features.from_arrow_schema(schema)
    return datasets.Dataset.from_generator(
        _iter_shard_rows,
        gen_kwargs={"paths": paths, "columns": tuple(schema.names)},  # a tuple: lists are shard lists
        features=features,
        cache_dir=str(cache),
        split=split,
    )


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
    is the union struct of every letter seen, null-filled (the hub's Parquet shape; mcqa-prep readers and
    `allowed_letters` drop the nulls). The unified schema is computed from every shard while verifying, so
    4- and 10-option rows (or other letters) in any order load as one column. A split that mixes string
    and list `output_regex` loads with every output_regex as a list (the same grading). Raises ContractMismatch,
    IntegrityError or IncompletePreparation like `verify`.
    """
    import datasets

    report = verify_prepared(directory, policy, progress=progress, collect_schemas=True)
    d = Path(directory)
    manifest = report.manifest
    shards: dict[str, list[str]] = {}
    fmt = manifest["settings"]["output_format"]
    for f in manifest["files"]:
        if f["kind"] == "shard":
            shards.setdefault(f["split"], []).append(str(d / f["path"]))
    if split is not None and split not in shards:
        raise InputError(f"{d}: no split {split!r} (splits: {', '.join(sorted(shards)) or 'none'})")
    cache = Path(cache_dir) if cache_dir is not None else Path(tempfile.gettempdir()) / "mcqa-prep-datasets"
    out: dict[str, Any] = {}
    for sp in [split] if split is not None else list(shards):
        schema = report.schemas.get(sp)
        if schema is None and fmt != "parquet":
            out[sp] = _load_mixed_jsonl(d, sp, shards[sp], cache)
            continue
        if schema is None:
            raise IntegrityError(
                f"{d}: split {sp!r}: rows disagree on the type of a field, so it cannot be one Arrow column; "
                "read the shards directly"
            )
        features = datasets.Features.from_arrow_schema(schema)
        built = datasets.load_dataset(
            "parquet" if fmt == "parquet" else "json",
            data_files={sp: shards[sp]},
            features=features,
            cache_dir=str(cache),
            keep_in_memory=False,
        )
        out[sp] = built[sp]
    if split is not None:
        return out[split]
    return datasets.DatasetDict(out)
