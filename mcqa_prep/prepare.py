"""`prepare`: validate -> normalise -> stamp -> write shards + manifest, atomically, with cache rules.

Why this shape (docs/prepare.md has the full story):
- Inputs are hashed before any row is read, so an up-to-date or stale output directory is recognised
  without parsing data.
- Everything is written into a staging directory beside the output and renamed into place at the end
  (an atomic swap with --overwrite), so the output directory is always either the previous preparation or
  a complete new one; manifest.json is written last, and a directory without a valid one is never trusted.
- Shards are hashed while they are written (never re-read) and get their final names
  (`<split>-00000-of-0000N`) only when the row count per split is known.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import __version__
from ._perf import streaming_gc
from .errors import InputError, McqaPrepError, StaleCache, UsageError
from .grader import ROW_MODES
from .grader.letters import normalize_gold
from .io.hashing import sha256_file
from .io.readers import DATA_SUFFIXES, RowRecord, detect_split, expand_inputs, iter_file
from .policy import GradingPolicy, contract_diff
from .records import Finding
from .schema import schema_version

MANIFEST_NAME = "manifest.json"
REJECTS_NAME = "rejects.jsonl"
MANIFEST_SCHEMA = schema_version("manifest")  # "manifest.v1"
ROW_SCHEMA = schema_version("prepared_row")  # "prepared-row.v1"
DEFAULT_SHARD_ROWS = 100_000
OUTPUT_FORMATS = ("jsonl", "parquet")
ON_INVALID = ("fail", "reject")
CRASH_ENV = "MCQA_PREP_TEST_CRASH_AT"
# Phases at which MCQA_PREP_TEST_CRASH_AT makes the process die (os._exit) so tests can prove atomicity.
CRASH_PHASES = ("staging", "rows", "shards", "manifest", "swap", "cleanup")
FINDINGS_KEPT = 50  # findings kept in a report (counts by rule are always complete)
_SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")
_WRITE_CHUNK = 1 << 20

Progress = Callable[..., Any]
"""A bar factory like cli.common.progress: progress(total=..., desc=..., unit=...) -> bar with update()/close()."""


class InvalidRows(McqaPrepError):
    """--on-invalid fail and at least one row has an error: nothing was committed."""

    def __init__(self, message: str, findings: Sequence[Finding], counts: dict[str, Any]):
        super().__init__(message)
        self.findings = list(findings)
        self.counts = counts


# ---- report ---------------------------------------------------------------------------------------------


@dataclass
class PrepareReport:
    """What prepare did: 'written' (new), 'overwritten', or 'up_to_date' (nothing rewritten)."""

    out_dir: str
    status: str
    contract_id: str
    counts: dict[str, Any]
    splits: dict[str, dict[str, int]]
    files: list[dict[str, Any]]
    warnings: list[Finding] = field(default_factory=list)
    rejected: list[Finding] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "out_dir": self.out_dir,
            "status": self.status,
            "contract_id": self.contract_id,
            "counts": self.counts,
            "splits": self.splits,
            "files": self.files,
            "warnings": [f.to_dict() for f in self.warnings],
            "rejected": [f.to_dict() for f in self.rejected],
            "seconds": round(self.seconds, 3),
        }


# ---- inputs ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _DataFile:
    path: Path
    display: str
    split: str
    source: dict[str, str] | None  # pulled: {"repo", "commit", "path"}; plain file: None


def _sha256_file(path: Path, on_bytes: Callable[[int], Any] | None = None) -> tuple[str, int]:
    digest, size, _ = sha256_file(path, on_bytes)
    return digest, size


def resolve_inputs(
    inputs: Iterable[str | os.PathLike],
    *,
    split: str | None = None,
    progress: Progress | None = None,
    verify: bool = True,
) -> tuple[list[_DataFile], list[dict[str, Any]]]:
    """Data files to read and their provenance records, hashing every input (pulled dirs: verified lock).

    This runs before any row is read, so the cache decision costs one hash pass and no parsing."""
    from . import lock as locks

    files: list[_DataFile] = []
    prov: list[dict[str, Any]] = []
    plain: list[tuple[Path, str, str]] = []  # (path, name, split) still to hash
    for arg in inputs:
        if str(arg) == "-":
            raise UsageError("prepare cannot read stdin: inputs are hashed before reading; give a file")
        p = Path(arg)
        if p.is_dir() and locks.is_pulled_dir(p) and not verify:
            # --no-verify: the bytes may not be the locked commit's, so they are recorded as what they are,
            # plain files with their own sha256 (no repo/commit claim in the manifest or the rows)
            lock = locks.read_lock(p)
            for path, sp in locks.data_files(p, lock, [split] if split else None):
                plain.append((Path(path), Path(path).relative_to(p).as_posix(), split or sp))
        elif p.is_dir() and locks.is_pulled_dir(p):
            locks.verify_pulled_dir(p, progress=progress)
            lock = locks.read_lock(p)
            chosen = locks.data_files(p, lock, [split] if split else None)
            if not chosen:
                raise InputError(f"{p}: the pull lock lists no data files")
            by_path = {str(Path(p) / f["path"]): f for f in lock["files"]}
            for path, sp in chosen:
                entry = by_path[str(path)]
                files.append(
                    _DataFile(
                        path,
                        str(path),
                        sp,
                        {"repo": lock["repo"], "commit": lock["commit"], "path": entry["path"]},
                    )
                )
            prov.append(
                {
                    "kind": "pulled",
                    "path": str(p),
                    "repo": lock["repo"],
                    "repo_type": lock["repo_type"],
                    "commit": lock["commit"],
                    "requested_revision": lock["requested_revision"],
                    "splits": [split] if split else None,
                    "files": [
                        {
                            "path": f["path"],
                            "split": f["split"],
                            "hash_kind": f["hash_kind"],
                            "hash": f["hash"],
                            "size": f["size"],
                        }
                        for f in lock["files"]
                    ],
                }
            )
        elif p.is_dir():
            for f in expand_inputs([p]):
                assert isinstance(f, Path)
                plain.append((f, f.relative_to(p).as_posix(), split or detect_split(f)))
        elif p.is_file():
            if p.suffix not in DATA_SUFFIXES:
                raise InputError(f"{p}: unsupported input (expected .jsonl, .parquet or a directory)")
            plain.append((p, p.name, split or detect_split(p)))
        else:
            raise InputError(f"{p}: no such file or directory")
    if plain:
        total = sum(path.stat().st_size for path, _, _ in plain)
        bar = progress(total=total, desc="hash inputs", unit="B") if progress is not None else None
        try:
            for path, name, sp in plain:
                digest, size = _sha256_file(path, bar.update if bar is not None else None)
                files.append(_DataFile(path, str(path), sp, None))
                prov.append(
                    {
                        "kind": "file",
                        "path": str(path),
                        "name": name,
                        "split": sp,
                        "sha256": digest,
                        "bytes": size,
                    }
                )
        finally:
            if bar is not None:
                bar.close()
    for f in files:
        if not _SPLIT_NAME.match(f.split):
            raise UsageError(f"{f.display}: split {f.split!r} cannot name shards; pass --split NAME")
    return files, prov


def _input_identity(prov: Iterable[dict[str, Any]]) -> list[Any]:
    """What makes two input lists 'the same inputs': content hashes, names relative to the argument, splits;
    not the absolute paths (the same data reached through another path is the same input)."""
    out: list[Any] = []
    for p in prov:
        if p["kind"] == "file":
            out.append(("file", p["name"], p["split"], p["sha256"], p["bytes"]))
        else:
            files = tuple((f["path"], f.get("split"), f["hash"], f["size"]) for f in p["files"])
            out.append(("pulled", p["repo"], p["commit"], tuple(p["splits"] or ()), files))
    return out


def _describe_input_change(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[str]:
    def key(p: dict[str, Any]) -> str:
        return p["name"] if p["kind"] == "file" else f"{p['repo']}@{p['commit'][:12]}"

    a = {key(p): i for i, p in zip(_input_identity(old), old, strict=True)}
    b = {key(p): i for i, p in zip(_input_identity(new), new, strict=True)}
    out = [f"removed: {k}" for k in a if k not in b] + [f"added: {k}" for k in b if k not in a]
    out += [f"changed: {k}" for k in a if k in b and a[k] != b[k]]
    if not out:
        out.append("same files in another order")
    return out


# ---- rows -----------------------------------------------------------------------------------------------


def normalise_options(options: Any) -> Any:
    """Drop null-valued keys (the Parquet all-letters shape), keep letter order; other shapes pass through
    unchanged (validate reports them)."""
    if not isinstance(options, list):
        return options
    out = []
    for opt in options:
        if isinstance(opt, dict):
            kept = {k: v for k, v in opt.items() if v is not None}
            if kept:
                out.append(kept)
        else:
            out.append(opt)
    return out


class _RowStamper:
    """Turns a valid input row into a prepared row in place (key order kept, every other field kept)."""

    def __init__(self, policy: GradingPolicy, contract: str):
        self.override = policy.grading_mode_override
        self.default = policy.grading_mode_default
        self.contract = contract

    def stamp(self, data: dict[str, Any], source: dict[str, Any]) -> str | None:
        """Rewrite `data`; return an error message when it cannot carry the stamp."""
        md = data.get("metadata")
        if md is not None and not isinstance(md, dict):
            return f"metadata must be an object to carry the preparation stamp, got {type(md).__name__}"
        data["options"] = normalise_options(data.get("options"))
        if "expected_answer" in data:
            data["expected_answer"] = normalize_gold(data["expected_answer"])
        row_mode = data.get("grading_mode") or self.default
        effective = self.override or row_mode
        # An override-only mode (lenient_answer_colon_md) is not a valid row mode: the row keeps its own,
        # and the stamp records the mode that grades it.
        data["grading_mode"] = effective if effective in ROW_MODES else row_mode
        md = dict(md) if md else {}
        md["mcqa_prep"] = {
            "contract": self.contract,
            "row_schema": ROW_SCHEMA,
            "grading_mode": effective,
            "source": source,
        }
        data["metadata"] = md
        return None


# ---- output files ---------------------------------------------------------------------------------------


class _HashingWriter:
    """Binary file that hashes and counts what goes through it (so nothing is re-read for the manifest)."""

    def __init__(self, path: Path):
        self.path = path
        self._fh = open(path, "wb")
        self._h = hashlib.sha256()
        self.bytes = 0
        self.rows = 0
        self._buf: list[bytes] = []
        self._buffered = 0

    def write_line(self, line: bytes) -> None:
        self._buf.append(line)
        self._buffered += len(line)
        self.rows += 1
        if self._buffered >= _WRITE_CHUNK:
            self._flush()

    def write(self, data: bytes) -> int:  # file-like, for pyarrow's ParquetWriter
        self._flush()
        self._fh.write(data)
        self._h.update(data)
        self.bytes += len(data)
        return len(data)

    def _flush(self) -> None:
        if self._buf:
            data = b"".join(self._buf)
            self._buf.clear()
            self._buffered = 0
            self._fh.write(data)
            self._h.update(data)
            self.bytes += len(data)

    def close(self) -> str:
        self._flush()
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        return self._h.hexdigest()

    # pyarrow's PythonFile wants these
    closed = False

    def flush(self) -> None:
        self._flush()

    def tell(self) -> int:
        return self.bytes + self._buffered


@dataclass
class _Shard:
    split: str
    index: int
    tmp: Path
    fmt: str
    sha256: str = ""
    rows: int = 0
    bytes: int = 0
    final: str = ""


class _SplitWriter:
    """Rows of one split into temporary shard files of at most shard_rows rows each."""

    def __init__(
        self, staging: Path, split: str, shard_rows: int, fmt: str, on_shard_closed: Callable[[], Any]
    ):
        self.staging = staging
        self.split = split
        self.shard_rows = shard_rows
        self.fmt = fmt
        self.shards: list[_Shard] = []
        self._w: _HashingWriter | None = None
        self._on_closed = on_shard_closed

    def write(self, line: bytes) -> None:
        if self._w is None:
            shard = _Shard(
                self.split,
                len(self.shards),
                self.staging / f".part-{self.split}-{len(self.shards):05d}.jsonl",
                self.fmt,
            )
            self.shards.append(shard)
            self._w = _HashingWriter(shard.tmp)
        self._w.write_line(line)
        if self._w.rows >= self.shard_rows:
            self._close_current()

    def _close_current(self) -> None:
        if self._w is None:
            return
        shard = self.shards[-1]
        shard.sha256 = self._w.close()
        shard.rows, shard.bytes = self._w.rows, self._w.bytes
        self._w = None
        if self.fmt == "parquet":
            _jsonl_to_parquet(shard)
        self._on_closed()

    def close(self) -> None:
        self._close_current()


def _iter_line_blocks(path: Path, block: int = 8 << 20) -> Iterator[bytes]:
    """Whole-line chunks of a JSONL file (bounded memory)."""
    rest = b""
    with open(path, "rb") as fh:
        while chunk := fh.read(block):
            chunk = rest + chunk
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:
                rest = chunk
                continue
            rest = chunk[cut:]
            yield chunk[:cut]
    if rest:
        yield rest


def _jsonl_to_parquet(shard: _Shard) -> None:
    """Convert a finished temporary JSONL shard to Parquet with one schema unified over all its rows.

    Parquet needs one schema per file; per-row key sets (options letters, free-form metadata) become the
    union struct, null-filled (the shape of Parquet datasets on the hub, which readers normalise)."""
    import pyarrow as pa
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    from .prepared import strings_for_timestamps

    schemas = [pj.read_json(pa.BufferReader(b)).schema for b in _iter_line_blocks(shard.tmp)]
    try:
        schema = strings_for_timestamps(pa.unify_schemas(schemas, promote_options="permissive"))
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise InputError(
            f"cannot write split {shard.split!r} as Parquet: rows disagree on a field type ({exc}); "
            "use --output-format jsonl"
        ) from None
    out = shard.tmp.with_suffix(".parquet")
    sink = _HashingWriter(out)
    opts = pj.ParseOptions(explicit_schema=schema)
    with pq.ParquetWriter(pa.PythonFile(sink, mode="w"), schema) as pw:
        for b in _iter_line_blocks(shard.tmp):
            pw.write_table(pj.read_json(pa.BufferReader(b), parse_options=opts))
    shard.sha256 = sink.close()
    shard.bytes = sink.bytes
    shard.tmp.unlink()
    shard.tmp = out


# ---- atomic directory replacement -----------------------------------------------------------------------


def _crash_point(phase: str) -> None:
    """Test hook: MCQA_PREP_TEST_CRASH_AT=<phase> kills the process here, like SIGKILL would."""
    if os.environ.get(CRASH_ENV) == phase:
        os._exit(137)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two directories (Linux renameat2 RENAME_EXCHANGE); False when unsupported."""
    if os.environ.get("MCQA_PREP_NO_RENAME_EXCHANGE"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _clean_leftovers(out_dir: Path) -> None:
    """Remove staging/old directories left beside out_dir by preparations that died (their pid is gone)."""
    pat = re.compile(rf"^\.{re.escape(out_dir.name)}\.(staging|old)-(\d+)-[0-9a-f]+$")
    with contextlib.suppress(OSError):
        for p in out_dir.parent.iterdir():
            m = pat.match(p.name)
            if m and p.is_dir() and not _pid_alive(int(m.group(2))):
                shutil.rmtree(p, ignore_errors=True)


_OWN_FILE = re.compile(
    rf"^(\w+(\.\w+)*-\d{{5}}-of-\d{{5}}\.(jsonl|parquet)|{re.escape(REJECTS_NAME)}|{re.escape(MANIFEST_NAME)})$"
)


def _looks_prepared(out_dir: Path) -> bool:
    """Whether out_dir holds only files a preparation writes (so --overwrite never deletes foreign data)."""
    return all(p.is_file() and _OWN_FILE.match(p.name) for p in out_dir.iterdir())


def _side_name(out_dir: Path, kind: str) -> Path:
    return out_dir.parent / f".{out_dir.name}.{kind}-{os.getpid()}-{secrets.token_hex(4)}"


def _commit(staging: Path, out_dir: Path, replace: bool) -> None:
    """Put the finished staging directory at out_dir: a rename, or an atomic swap with the old one."""
    _fsync_dir(staging)
    if not replace:
        try:
            os.rename(staging, out_dir)  # atomic; also replaces an empty directory
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise StaleCache(
                    f"{out_dir}: another preparation appeared while this one ran; not replaced"
                ) from None
            raise
        _fsync_dir(out_dir.parent)
        return
    if _exchange(staging, out_dir):
        _fsync_dir(out_dir.parent)
        _crash_point("swap")
        _crash_point("cleanup")
        shutil.rmtree(staging, ignore_errors=True)  # now holds the old preparation
        return
    aside = _side_name(out_dir, "old")
    os.rename(out_dir, aside)
    _crash_point("swap")
    os.rename(staging, out_dir)
    _fsync_dir(out_dir.parent)
    _crash_point("cleanup")
    shutil.rmtree(aside, ignore_errors=True)


# ---- the workflow ---------------------------------------------------------------------------------------


def _counts(read: int, written: int, rejected: int, warned: int, rej_rules: Counter, warn_rules: Counter):
    return {
        "read": read,
        "written": written,
        "rejected": rejected,
        "rows_with_warnings": warned,
        "rejected_by_rule": dict(sorted(rej_rules.items())),
        "warnings_by_rule": dict(sorted(warn_rules.items())),
    }


def _check_existing(
    out_dir: Path, policy: GradingPolicy, prov: list[dict[str, Any]], settings: dict[str, Any]
):
    """Up to date -> the manifest; anything else -> StaleCache naming what differs and the fix."""
    from .prepared import read_manifest

    manifest = read_manifest(out_dir)
    fix = "use a fresh output directory, or --overwrite to replace it"
    new_id = policy.contract_id()
    if manifest["contract_id"] != new_id:
        diff = contract_diff(manifest["contract"], policy.contract())
        raise StaleCache(
            f"{out_dir}: prepared under contract {manifest['contract_id']}, but this run asks for {new_id}; "
            f"fields that differ: {'; '.join(diff) or '(none: ids differ only)'}; {fix}"
        )
    if _input_identity(manifest["inputs"]) != _input_identity(prov):
        changes = _describe_input_change(manifest["inputs"], prov)
        raise StaleCache(f"{out_dir}: prepared from other inputs ({'; '.join(changes)}); {fix}")
    if manifest["settings"] != settings:
        diff = [
            f"{k}: {json.dumps(manifest['settings'].get(k))} != {json.dumps(v)}"
            for k, v in settings.items()
            if manifest["settings"].get(k) != v
        ]
        raise StaleCache(f"{out_dir}: prepared with other settings ({'; '.join(diff)}); {fix}")
    return manifest


def prepare(
    inputs: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    policy: GradingPolicy | None = None,
    *,
    split: str | None = None,
    shard_rows: int = DEFAULT_SHARD_ROWS,
    output_format: str = "jsonl",
    on_invalid: str = "fail",
    overwrite: bool = False,
    regex_timeout: float | None = None,
    progress: Progress | None = None,
    verify: bool = True,
) -> PrepareReport:
    """Prepare INPUTS into out_dir (see module docstring); raises StaleCache, InvalidRows, InputError, ..."""
    t0 = time.monotonic()
    policy = policy or GradingPolicy()
    policy.check()
    if not inputs:
        raise UsageError("prepare needs at least one input")
    if shard_rows < 1:
        raise UsageError(f"--shard-rows must be at least 1, got {shard_rows}")
    if output_format not in OUTPUT_FORMATS:
        raise UsageError(f"--output-format must be one of {', '.join(OUTPUT_FORMATS)}")
    if on_invalid not in ON_INVALID:
        raise UsageError(f"--on-invalid must be one of {', '.join(ON_INVALID)}")
    if split is not None and not _SPLIT_NAME.match(split):
        raise UsageError(f"--split {split!r}: a split name is letters, digits, '_' and '.'")
    out = Path(out_dir)
    settings = {
        "split": split,
        "shard_rows": shard_rows,
        "output_format": output_format,
        "on_invalid": on_invalid,
    }
    contract = policy.contract()
    cid = policy.contract_id()

    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory")
    existing = out.is_dir() and any(out.iterdir())
    if existing and overwrite and not _looks_prepared(out):
        raise UsageError(
            f"{out}: holds files that a preparation does not write; refusing to replace it "
            "with --overwrite (choose another output directory)"
        )
    files, prov = resolve_inputs(inputs, split=split, progress=progress, verify=verify)

    if existing and not overwrite:
        from .prepared import verify_prepared

        manifest = _check_existing(out, policy, prov, settings)
        verify_prepared(out, policy, progress=progress)
        return PrepareReport(
            str(out),
            "up_to_date",
            cid,
            manifest["counts"],
            manifest["splits"],
            [dict(f) for f in manifest["files"]],
            seconds=time.monotonic() - t0,
        )

    from .validate import RowValidator

    validator = RowValidator(regex_timeout=regex_timeout) if regex_timeout is not None else RowValidator()
    # Policy and arguments are checked; from here on, rows are read.
    stamper = _RowStamper(policy, cid)
    _clean_leftovers(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = _side_name(out, "staging")
    staging.mkdir()
    try:
        _crash_point("staging")
        writers: dict[str, _SplitWriter] = {}
        first_shard = [False]

        def shard_closed() -> None:
            if not first_shard[0]:
                first_shard[0] = True
                _crash_point("rows")

        rejects = _HashingWriter(staging / REJECTS_NAME)
        read = written = rejected = warned = 0
        rej_rules: Counter = Counter()
        warn_rules: Counter = Counter()
        warnings: list[Finding] = []
        errors_kept: list[Finding] = []
        failing = False
        dumps = json.dumps
        total = None
        if files and all(f.path.suffix == ".parquet" for f in files):
            from .io.readers import parquet_num_rows

            total = sum(parquet_num_rows(f.path) for f in files)
        bar = progress(total=total, desc="prepare", unit="row") if progress is not None else None
        try:
            with streaming_gc():  # rows are acyclic: skip needless cyclic-GC scans
                for df in files:
                    base = dict(df.source) if df.source else {"file": df.display}
                    for rec in iter_file(df.path, split=df.split):
                        read += 1
                        if bar is not None:
                            bar.update(1)
                        findings = _findings(validator, rec)
                        errs = [f for f in findings if f.severity == "error"]
                        line: bytes | None = None
                        if not errs:
                            assert rec.data is not None
                            message = stamper.stamp(rec.data, {**base, "row": rec.line})
                            if message is None:
                                try:
                                    line = (
                                        dumps(rec.data, ensure_ascii=False, allow_nan=False) + "\n"
                                    ).encode("utf-8")
                                except (ValueError, TypeError) as exc:
                                    message = f"the row cannot be written as JSON: {exc}"
                            if message is not None:
                                errs = [
                                    Finding(
                                        rec.file,
                                        rec.line,
                                        rec.index + 1,
                                        "$",
                                        "prepare.unwritable",
                                        "error",
                                        message,
                                    )
                                ]
                        warns = [f for f in findings if f.severity != "error"]
                        if warns:
                            warned += 1
                            warn_rules.update({f.rule for f in warns})
                            if len(warnings) < FINDINGS_KEPT:
                                warnings.extend(warns[: FINDINGS_KEPT - len(warnings)])
                        if errs:
                            rejected += 1
                            rej_rules.update({f.rule for f in errs})
                            if len(errors_kept) < FINDINGS_KEPT:
                                errors_kept.extend(errs[: FINDINGS_KEPT - len(errors_kept)])
                            if on_invalid == "fail":
                                failing = True
                            else:
                                rejects.write_line(_reject_line(rec, df, errs))
                            continue
                        if failing:
                            continue
                        w = writers.get(df.split)
                        if w is None:
                            w = writers[df.split] = _SplitWriter(
                                staging, df.split, shard_rows, output_format, shard_closed
                            )
                        assert line is not None
                        w.write(line)
                        written += 1
        finally:
            if bar is not None:
                bar.close()
        finish = getattr(validator, "finish", None)
        for f in finish() if finish is not None else ():  # whole-input warnings (e.g. answer position bias)
            warn_rules[f.rule] += 1
            if len(warnings) < FINDINGS_KEPT:
                warnings.append(f)
        counts = _counts(read, written, rejected, warned, rej_rules, warn_rules)
        if failing:
            raise InvalidRows(_invalid_message(errors_kept, counts), errors_kept, counts)
        for w in writers.values():
            w.close()
        rejects_sha = rejects.close()

        # final shard names, now that the number of shards per split is known
        manifest_files: list[dict[str, Any]] = []
        splits: dict[str, dict[str, int]] = {}
        for sp, w in writers.items():
            n = len(w.shards)
            splits[sp] = {"rows": sum(s.rows for s in w.shards), "shards": n}
            for s in w.shards:
                s.final = f"{sp}-{s.index:05d}-of-{n:05d}.{output_format}"
                os.rename(s.tmp, staging / s.final)
                manifest_files.append(
                    {
                        "path": s.final,
                        "kind": "shard",
                        "split": sp,
                        "format": output_format,
                        "sha256": s.sha256,
                        "rows": s.rows,
                        "bytes": s.bytes,
                    }
                )
        manifest_files.append(
            {
                "path": REJECTS_NAME,
                "kind": "rejects",
                "split": None,
                "format": "jsonl",
                "sha256": rejects_sha,
                "rows": rejects.rows,
                "bytes": rejects.bytes,
            }
        )
        _crash_point("shards")

        manifest = {
            "manifest_schema": MANIFEST_SCHEMA,
            "tool": {"name": "mcqa-prep", "version": __version__},
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
            "contract_id": cid,
            "contract": contract,
            "row_schema": ROW_SCHEMA,
            "settings": settings,
            "inputs": prov,
            "files": manifest_files,
            "splits": splits,
            "counts": counts,
        }
        mpath = staging / MANIFEST_NAME
        with open(mpath, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        _crash_point("manifest")
        _commit(staging, out, replace=existing)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    status = "overwritten" if existing else "written"
    return PrepareReport(
        str(out), status, cid, counts, splits, manifest_files, warnings, errors_kept, time.monotonic() - t0
    )


def _findings(validator: Any, rec: RowRecord) -> list[Finding]:
    findings = list(validator.check(rec))
    if rec.data is None and not any(f.severity == "error" for f in findings):
        # a row that could not be parsed is never written, whatever the validator says about it
        findings.append(
            Finding(
                rec.file,
                rec.line,
                rec.index + 1,
                "$",
                "row.parse",
                "error",
                rec.error or "row could not be read",
            )
        )
    return findings


def _reject_line(rec: RowRecord, df: _DataFile, errs: list[Finding]) -> bytes:
    doc: dict[str, Any] = {
        "source": {**(df.source or {"file": df.display}), "row": rec.line},
        "findings": [f.to_dict() for f in errs],
        "row": rec.data,
    }
    if rec.error:
        doc["error"] = rec.error
    try:
        text = json.dumps(doc, ensure_ascii=False, allow_nan=False)
    except (ValueError, TypeError):
        doc["row"] = None  # the row itself is not JSON (NaN, ...): keep its address and findings
        text = json.dumps(doc, ensure_ascii=False)
    return (text + "\n").encode("utf-8")


def _invalid_message(errs: list[Finding], counts: dict[str, Any]) -> str:
    shown = [f.render() for f in errs[:20]]
    more = counts["rejected"] - len(shown)
    lines = shown + ([f"... and more ({counts['rejected']} invalid row(s) in all)"] if more > 0 else [])
    by_rule = ", ".join(f"{r}: {n}" for r, n in counts["rejected_by_rule"].items())
    return (
        "\n".join(lines)
        + f"\n{counts['rejected']} of {counts['read']} row(s) invalid ({by_rule}); nothing written. "
        "Fix the rows, or pass --on-invalid reject to write the valid rows and list the others in rejects.jsonl"
    )
