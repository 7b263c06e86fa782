"""`load_prepared`: a verified preparation as `datasets` objects, memory-mapped from the preparation's own
cache (cache.py).

Every call checks the manifest (supported, self-consistent, the contract this grader or the given policy
means) and that no data file lies beside the listed ones. Then:

- warm: every listed file has the identity (size, mtime_ns, ctime_ns, inode, device) it had when its bytes
  were last hashed against the manifest, and each wanted split's Arrow file was built from exactly the
  manifest's shards and is the file that was written: the splits are memory-mapped, nothing is read or
  hashed. `verify=True` forces the full check (every file hashed, rows and stamps checked, the Arrow files'
  sha256 compared) on any call.
- cold (first call, a file's identity changed, a split not built yet, `verify=True`): one pass verifies
  every file as `verify_prepared` does and parses the wanted splits into Arrow on the way (arrow_build.py);
  a file whose bytes differ from the manifest is refused (IntegrityError), never cached.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import IntegrityError, UnrepresentableValue, UsageError
from ..io.hashing import sha256_file
from ..io.readers import iter_file
from ..io.shards import strings_for_timestamps
from ..policy import GradingPolicy
from ..progress import Progress
from . import manifest as mf
from .accept import accept_manifest
from .arrow_build import Slow, SplitSpill, verify_and_spill
from .cache import Entry, default_root, identity
from .files import unlisted_files, verify_files

_SCHEMA_BATCH = 2048


def load_prepared(
    directory: str | os.PathLike,
    policy: GradingPolicy | None = None,
    split: str | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    progress: Progress | None = None,
    verify: bool = False,
):
    """A `datasets.DatasetDict` (or the Dataset of `split`) of a verified preparation, memory-mapped.

    Options keep their per-row letters in the JSONL shards, but one Arrow column needs one type: the column
    is the union struct of every letter seen, null-filled (the hub's Parquet shape; mcqa-prep readers drop
    the nulls). A split that mixes string and list `output_regex` loads with every output_regex as a list
    (the same grading). An integer that its Arrow column cannot hold exactly is refused
    (UnrepresentableValue), never rounded. Raises ContractMismatch, IntegrityError or IncompletePreparation
    like `verify`, CacheError when the cache directory is not safely the user's own (see cache.py).
    `cache_dir`: where the cache lives (default: a per-user cache directory). `verify=True`: every file
    hashed and checked again even when the cache vouches for it.
    """
    import datasets

    manifest, _ = accept_manifest(directory, policy)  # the one rule's manifest half; the files below
    unlisted_files(manifest)
    d = manifest.directory
    names = list(manifest.split_names)
    if split is not None and split not in names:
        raise UsageError(  # the caller's argument, as every command's --split that names no split
            f"{d}: no split {split!r} (splits: {', '.join(sorted(names)) or 'none'})", reason="unknown_split"
        )
    wanted = [split] if split is not None else names
    entry = Entry(Path(cache_dir) if cache_dir is not None else default_root(), manifest.sha256)
    seal = entry.read_seal()
    real = os.path.realpath(d)
    fresh = not verify and seal.get("directory") == real and _identities_hold(manifest, seal)
    built = [sp for sp in wanted if _split_holds(entry, seal, sp, manifest.shards(sp), verify)]
    if not fresh or len(built) < len(wanted):
        todo = [sp for sp in wanted if sp not in built]
        old = tuple(str(seal.get("splits", {}).get(sp, {}).get("arrow")) for sp in todo)
        seal = _verify_and_build(manifest, entry, seal, todo, policy, progress)
        seal["directory"] = real
        entry.write_seal(seal, replaced=old)
    out = {sp: datasets.Dataset.from_file(str(entry.path / seal["splits"][sp]["arrow"])) for sp in wanted}
    if split is not None:
        return out[split]
    return datasets.DatasetDict(out)


def _identities_hold(manifest: mf.Manifest, seal: dict[str, Any]) -> bool:
    """Every listed file is, by its identity, the file whose bytes were hashed to the manifest's sha256."""
    for f in manifest.files:
        rec = seal.get("files", {}).get(f.name)
        if not isinstance(rec, dict) or rec.get("sha256") != f.sha256:
            return False
        if rec.get("identity") != identity(manifest.path(f)):
            return False
    return True


def _split_holds(
    entry: Entry, seal: dict[str, Any], sp: str, files: tuple[mf.ListedFile, ...], verify: bool
) -> bool:
    """A split's Arrow file was built from these shards (their sha256s) and is the file that was written."""
    rec = seal.get("splits", {}).get(sp)
    if not isinstance(rec, dict) or rec.get("shards") != [f.sha256 for f in files]:
        return False
    if not isinstance(rec.get("arrow"), str) or rec.get("rows") != sum(f.rows for f in files):
        return False
    path = entry.path / rec["arrow"]
    if rec.get("identity") is None or identity(path) != rec["identity"]:
        return False
    return not verify or sha256_file(path)[0] == rec.get("sha256")


def _verify_and_build(
    manifest: mf.Manifest,
    entry: Entry,
    seal: dict[str, Any],
    todo: list[str],
    policy: GradingPolicy | None,
    progress: Progress | None,
) -> dict[str, Any]:
    """Verify every file (building the splits in `todo` on the way) and return the updated seal."""
    d = manifest.directory
    before = {f.name: identity(manifest.path(f)) for f in manifest.files}
    total = manifest.total_bytes
    bar = progress(total=total, desc="verify", unit="B") if progress is not None else None
    spills = {sp: SplitSpill(entry, sp) for sp in todo}
    splits: dict[str, dict[str, Any]] = {}
    try:
        slow = False
        try:
            verify_and_spill(manifest, spills, bar.update if bar is not None else None)
            for sp in todo:
                splits[sp] = spills[sp].write(entry.new_arrow_name(sp))
        except Slow:
            slow = True  # outside this handler, so that an error below is not chained to Arrow's
        if slow:
            verify_files(manifest)  # raises what is wrong with the files precisely, if anything is
            for sp in todo:
                splits[sp] = _build_by_rows(
                    d, sp, [str(manifest.path(f)) for f in manifest.shards(sp)], entry
                )
    finally:
        for s in spills.values():
            s.discard()
        if bar is not None:
            bar.close()
    files = {}
    for f in manifest.files:  # a file that changed while it was read is not vouched for
        now = identity(manifest.path(f))
        if now is not None and now == before[f.name]:
            files[f.name] = {"identity": now, "sha256": f.sha256}
    kept = {sp: rec for sp, rec in seal.get("splits", {}).items() if sp not in splits}
    for sp, rec in splits.items():
        rec["shards"] = [f.sha256 for f in manifest.shards(sp)]
    return {**seal, "files": files, "splits": {**kept, **splits}}


# ---- the row-by-row path ------------------------------------------------------------------------------


def _uniform_row(row: dict[str, Any]) -> dict[str, Any]:
    """One Arrow type per field: template_metadata.output_regex (and the original a repaired row records in
    its stamp) as a list of patterns. NeMo Gym accepts a string or a list, and a one-pattern list grades
    exactly like the string, so real data mixes both."""
    tm = row.get("template_metadata")
    if isinstance(tm, dict) and isinstance(tm.get("output_regex"), str):
        row["template_metadata"] = {**tm, "output_regex": [tm["output_regex"]]}
    md = row.get("metadata")
    stamp = md.get("mcqa_prep") if isinstance(md, dict) else None
    fixed = stamp.get("repaired") if isinstance(stamp, dict) else None
    if isinstance(fixed, dict) and isinstance(fixed.get("output_regex"), (str, dict)):
        # the original of a repaired output_regex (prepare repair_regexes), as the grader took it: a list
        old = fixed["output_regex"]
        old = [old] if isinstance(old, str) else list(old)
        # a repaired record is only found in a dict stamp, in a dict metadata
        assert isinstance(md, dict) and isinstance(stamp, dict)
        row["metadata"] = {**md, "mcqa_prep": {**stamp, "repaired": {**fixed, "output_regex": old}}}
    return row


def _shard_rows(paths: list[str], columns: tuple[str, ...] | None = None) -> Iterator[dict[str, Any]]:
    for path in paths:
        for rec in iter_file(path):
            if rec.data is None:  # verified just before: only a concurrent edit gets here
                raise IntegrityError(f"{rec.file}:{rec.line}: {rec.error}", path=rec.file)
            row = _uniform_row(rec.data)
            yield row if columns is None else {c: row.get(c) for c in columns}


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
        if "exactly representable" in str(exc):
            raise UnrepresentableValue(
                f"{d}: split {split!r}: {exc}; read the JSONL shards directly for exact values",
                directory=str(d),
            ) from None
        raise IntegrityError(
            f"{d}: split {split!r}: rows disagree on the type of a field, so it cannot be one Arrow column "
            f"({exc}); read the JSONL shards directly",
            directory=str(d),
        ) from None
    except OverflowError:
        raise _too_wide(d, split) from None


def _too_wide(d: Path, split: str) -> UnrepresentableValue:
    return UnrepresentableValue(
        f"{d}: split {split!r}: an integer needs more than 64 bits, which no Arrow integer column holds; read "
        "the JSONL shards directly for exact values",
        directory=str(d),
    )


def _build_by_rows(d: Path, split: str, paths: list[str], entry: Entry) -> dict[str, Any]:
    """A split's Arrow stream from its rows one by one (for rows Arrow's JSON reader cannot take as they
    are: a field that is a string in some rows and a list in others)."""
    import pyarrow as pa

    schema = _split_schema(d, split, paths)
    name = entry.new_arrow_name(split)
    tmp, final = entry.path / f".{name}.{os.getpid()}.tmp", entry.path / name
    rows = 0
    try:
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_stream(sink, schema) as out:
            batch: list[dict[str, Any]] = []
            for row in _shard_rows(paths, tuple(schema.names)):
                batch.append(row)
                if len(batch) == _SCHEMA_BATCH:
                    out.write_batch(_batch(batch, schema, d, split))
                    rows += len(batch)
                    batch = []
            if batch:
                out.write_batch(_batch(batch, schema, d, split))
                rows += len(batch)
        os.replace(tmp, final)
    except OSError as exc:
        raise entry.write_error(exc) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return {"arrow": name, "identity": identity(final), "sha256": sha256_file(final)[0], "rows": rows}


def _batch(rows: list[dict[str, Any]], schema: Any, d: Path, split: str) -> Any:
    import pyarrow as pa

    try:
        return pa.RecordBatch.from_pylist(rows, schema=schema)
    except OverflowError:
        raise _too_wide(d, split) from None
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:  # e.g. an integer a float64 column would round
        raise UnrepresentableValue(
            f"{d}: split {split!r}: {exc}; read the JSONL shards directly for exact values", directory=str(d)
        ) from None
