"""Where convert reads rows from: local JSONL / Parquet / CSV files and directories, directories written by
`pull` (verified against their lock), and hub datasets read with the `datasets` library.

Every source streams (index, line, data, error) tuples: `index` is the 0-based row within the source's
split (what the uuid is derived from), `line` the 1-based line (JSONL, CSV) or record number (Parquet,
hub) for messages, and exactly one of `data` / `error` is set. Parquet is read batch by batch with only
the columns the conversion needs.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import InputError, UsageError
from ..io.paths import require_regular
from ..io.readers import read_jsonl
from ..records import display_name

SUFFIXES = (".jsonl", ".ndjson", ".json", ".parquet", ".csv", ".tsv")
PARQUET_BATCH = 4096
SourceRow = tuple[int, int, "dict[str, Any] | None", "str | None"]

_SHARD = re.compile(r"^(?P<split>.+?)[-_]\d{5}[-_]of[-_]\d{5}$")
_SPLIT_WORD = re.compile(
    r"(?:^|[/_.-])(train|training|validation|valid|val|dev|test|eval|evaluation)(?=[/_.-]|$)", re.I
)
_HUB_ID = re.compile(r"^(?:hf:|hf://datasets/)?([A-Za-z0-9][\w.-]*/[\w.-]+)$")


def split_of(relpath: str, default: str = "train") -> str:
    """The split a data file belongs to: `test-00000-of-00001.parquet` -> test, `mmlu_dev.csv` -> dev,
    `validation/part-0.parquet` -> validation; `default` when the name says nothing."""
    p = PurePosixPath(relpath)
    stem = p.name.split(".")[0]
    m = _SHARD.match(stem)
    if m:
        return m.group("split")
    for part in [stem, *reversed(p.parts[:-1])]:
        m = _SPLIT_WORD.search(part)
        if m:
            return m.group(1).lower()
    return default


@dataclass
class Source:
    """One stream of rows with its identity (what every output row records in metadata.source)."""

    kind: str  # jsonl, parquet, csv, hub
    label: str  # path or repo id, for messages
    dataset: str
    split: str
    config: str | None = None
    file: str | None = None  # path within the dataset (local sources); None when rows are indexed per split
    revision: str | None = None
    commit: str | None = None
    path: Path | None = None
    start_index: int = 0  # first row index (shards of one split continue each other's numbering)
    _hub: Any = field(default=None, repr=False)

    def identity(self) -> dict[str, Any]:
        """Where the rows came from, as the rows and the rejects record it (names in their display form)."""
        d: dict[str, Any] = {"dataset": self.dataset, "config": self.config, "split": self.split}
        if self.revision is not None:
            d["revision"] = self.revision
        if self.commit is not None:
            d["commit"] = self.commit
        if self.file is not None:
            d["file"] = self.file
        return {k: display_name(v) if isinstance(v, str) else v for k, v in d.items()}

    def columns(self) -> list[str] | None:
        """Column names known before reading (Parquet schema, CSV header, hub features), or the first JSON
        row's keys; None when the source is empty."""
        if self.kind == "parquet":
            return list(_parquet(self.path).schema_arrow.names)
        if self.kind == "csv":
            with _open_text(self.path, errors="surrogateescape") as fh:  # type: ignore[arg-type]
                try:
                    header = next(csv.reader(fh, delimiter=self._delim()), None)
                except csv.Error as exc:
                    raise InputError(f"{self.label}: cannot read the CSV header: {exc}") from None
            bad = _not_utf8(dict.fromkeys(header or []))
            if bad:
                raise InputError(f"{self.label}: cannot read the CSV header: {bad}")
            return header
        if self.kind == "hub":
            names = self._hub.column_names
            if names:
                return list(names)
        for _, _, data, _ in self.rows(None):
            if data is not None:
                return list(data)
        return None

    def num_rows(self) -> int | None:
        if self.kind == "parquet":
            return _parquet(self.path).metadata.num_rows
        return None

    def _delim(self) -> str:
        return "\t" if self.path is not None and self.path.suffix == ".tsv" else ","

    def rows(self, columns: Sequence[str] | None) -> Iterator[SourceRow]:
        """Stream the rows; `columns` (top-level names) restricts Parquet reads when given."""
        if self.kind == "parquet":
            return self._parquet_rows(columns)
        if self.kind == "csv":
            return self._csv_rows()
        if self.kind == "hub":
            return self._hub_rows()
        return self._json_rows()

    def _json_rows(self) -> Iterator[SourceRow]:
        """A `.json` file holding one array of objects, or JSONL read by the one reader (io.readers): a bad
        line (bytes that are not UTF-8, not JSON, too deep) is one malformed row at its line, and the next
        line is read as usual. NaN/Infinity is read, as from Parquet: convert's _jsonable decides."""
        assert self.path is not None
        if self.path.suffix == ".json":
            with _open_text(self.path) as fh:
                if _peek(fh) == "[":  # not streamed: such files are small
                    yield from self._json_array(fh)
                    return
        try:
            fh = open(self.path, "rb")  # noqa: SIM115 - closed below, after the generator is done
        except OSError as exc:
            raise InputError(f"{self.path}: cannot open: {exc.strerror}") from None
        with fh:
            for rec in read_jsonl(fh, self.label, self.split):
                yield self.start_index + rec.index, rec.line, rec.data, rec.error

    def _json_array(self, fh: Any) -> Iterator[SourceRow]:
        i = self.start_index
        try:
            doc = json.load(fh)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            reason = "nested too deeply" if isinstance(exc, RecursionError) else exc
            yield i, 1, None, f"not valid JSON: {reason}"
            return
        for k, data in enumerate(doc if isinstance(doc, list) else [doc]):
            ok = isinstance(data, dict)
            yield i, k + 1, data if ok else None, None if ok else f"element {k} is not an object"
            i += 1

    def _csv_rows(self) -> Iterator[SourceRow]:
        """CSV records; bytes that are not UTF-8 cost their record (a malformed row at its line), not the
        rest of the file: they are decoded as surrogates and the record holding them is refused."""
        i = self.start_index
        with _open_text(self.path, errors="surrogateescape") as fh:  # type: ignore[arg-type]
            reader = csv.DictReader(fh, delimiter=self._delim())
            try:
                reader.fieldnames  # noqa: B018 - reads the header now, so line_num counts it
            except csv.Error as exc:
                raise InputError(f"{self.label}: cannot read the CSV header: {exc}") from None
            while True:
                start = reader.line_num + 1  # a quoted cell may span lines: report where the record starts
                try:
                    data = next(reader)
                except StopIteration:
                    return
                except csv.Error as exc:
                    yield i, start, None, f"not valid CSV: {exc}"
                    i += 1
                    continue
                data.pop(None, None)  # cells past the header
                bad = _not_utf8(data)
                yield (i, start, None, bad) if bad else (i, start, data, None)
                i += 1

    def _parquet_rows(self, columns: Sequence[str] | None) -> Iterator[SourceRow]:
        pf = _parquet(self.path)
        names = pf.schema_arrow.names
        cols = None if columns is None else [c for c in names if c in set(columns)]
        i = self.start_index
        try:
            for batch in pf.iter_batches(batch_size=PARQUET_BATCH, columns=cols):
                bnames = batch.schema.names
                data = [c.to_pylist() for c in batch.columns]
                if data:
                    rows = [dict(zip(bnames, vals, strict=True)) for vals in zip(*data, strict=True)]
                else:
                    rows = [{} for _ in range(batch.num_rows)]
                for r in rows:
                    yield i, i - self.start_index + 1, r, None
                    i += 1
        except Exception as exc:  # noqa: BLE001 - pyarrow raises OSError and ArrowException kinds for bad pages
            import pyarrow as pa

            if isinstance(exc, (OSError, pa.ArrowException)):
                raise InputError(f"{self.label}: not a readable Parquet file: {exc}") from None
            raise

    def _hub_rows(self) -> Iterator[SourceRow]:
        i = self.start_index
        it = iter(self._hub)
        while True:
            try:
                data = next(it)
            except StopIteration:
                return
            except Exception as exc:  # noqa: BLE001 - the datasets library raises many kinds
                raise InputError(
                    f"{self.label}: reading split {self.split!r} failed: {_one_line(exc)}"
                ) from None
            yield i, i + 1, data, None
            i += 1


def _peek(fh) -> str:
    """The first non-blank character of a text stream, without consuming it (seekable files only)."""
    try:
        pos = fh.tell()
        head = fh.read(64)
        fh.seek(pos)
    except (OSError, ValueError, UnicodeDecodeError):
        return ""
    return head.lstrip("\ufeff \t\r\n")[:1]


def _not_utf8(record: dict[str, Any]) -> str | None:
    """Why a CSV record read with surrogateescape is not UTF-8 text (the first bad byte and its column)."""
    for key, cell in record.items():
        for text in (key, cell):
            if isinstance(text, str):
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError as exc:
                    return f"not valid UTF-8: byte 0x{ord(text[exc.start]) & 0xFF:02x} in column {key!r}"
    return None


def _open_text(path: Path, errors: str = "strict"):
    try:
        return open(path, encoding="utf-8-sig", newline="", errors=errors)
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror}") from None


_PQ_CACHE: dict[Path, Any] = {}


def _parquet(path: Path | None):
    import pyarrow as pa
    import pyarrow.parquet as pq

    assert path is not None
    pf = _PQ_CACHE.get(path)
    if pf is None:
        try:
            pf = pq.ParquetFile(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputError(f"{path}: not a readable Parquet file: {exc}") from None
        _PQ_CACHE.clear()
        _PQ_CACHE[path] = pf
    return pf


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip(": ")


def _kind(path: Path) -> str:
    s = path.suffix.lower()
    if s == ".parquet":
        return "parquet"
    if s in (".csv", ".tsv"):
        return "csv"
    return "jsonl"


def _local_files(root: Path) -> list[Path]:
    return sorted(
        f
        for f in root.rglob("*")
        if f.is_file()
        and f.suffix.lower() in SUFFIXES
        and not any(part.startswith(".") for part in f.relative_to(root).parts)
    )


def is_hub_id(spec: str) -> bool:
    return bool(_HUB_ID.match(spec)) and not Path(spec).exists()


Progress = Callable[..., Any]


def plan_sources(
    specs: Sequence[str],
    *,
    revision: str | None = None,
    config: str | None = None,
    split: str | None = None,
    dataset: str | None = None,
    verify: bool = True,
    progress: Progress | None = None,
) -> list[Source]:
    """Sources for the SOURCE arguments, in order. Raises UsageError for a missing input or an option that
    does not apply, InputError for unreadable input."""
    from ..pull import lock as lockmod

    out: list[Source] = []
    for spec in specs:
        p = Path(spec)
        if spec == "-":
            raise UsageError(
                "-: convert reads files, directories or hub datasets, not stdin; save the rows to a file"
            )
        if p.is_dir() and lockmod.is_pulled_dir(p):
            out.extend(_pulled(p, lockmod, config=config, split=split, verify=verify, progress=progress))
        elif p.is_dir():
            files = _local_files(p)
            if not files:
                raise UsageError(f"{spec}: the directory holds no {', '.join(SUFFIXES)} files")
            name = dataset or p.resolve().name
            found = [(f, f.relative_to(p).as_posix()) for f in files]
            if split is not None:  # a directory: --split selects the files of that split
                splits = sorted({split_of(rel) for _, rel in found})
                found = [(f, rel) for f, rel in found if split_of(rel) == split]
                if not found:
                    raise UsageError(
                        f"{spec}: no file of split {split!r} (splits by file name: {', '.join(splits)})"
                    )
            for f, rel in found:
                out.append(Source(_kind(f), str(f), name, split_of(rel), file=rel, path=f))
        elif p.is_file():
            if p.suffix.lower() not in SUFFIXES:
                raise UsageError(
                    f"{spec}: unsupported file type {p.suffix!r}; convert reads {', '.join(SUFFIXES)}"
                )
            out.append(
                Source(_kind(p), spec, dataset or p.name, split or split_of(p.name), file=p.name, path=p)
            )
        elif p.exists():
            require_regular(p, "convert reads a source twice (its columns, then its rows)")
        elif _HUB_ID.match(spec) and p.suffix.lower() not in SUFFIXES:
            repo = _HUB_ID.match(spec).group(1)  # type: ignore[union-attr]
            out.extend(open_hub(repo, revision=revision, config=config, split=split, dataset=dataset))
        else:
            raise UsageError(f"{spec}: no such file or directory (nor a hub dataset id like owner/name)")
    return out


def _pulled(p: Path, lockmod: Any, *, config, split, verify, progress) -> list[Source]:
    doc = lockmod.read_lock(p)
    if verify:
        lockmod.verify_pulled_dir(p, progress=progress)
    out: list[Source] = []
    next_index: dict[tuple[str | None, str], int] = {}
    for f, fsplit in lockmod.data_files(p, doc):
        rel = f.relative_to(p).as_posix()
        parts = PurePosixPath(rel).parts
        cfg = parts[0] if len(parts) > 1 and parts[0] not in ("data", fsplit) else None
        if split is not None and fsplit != split:
            continue
        if config is not None and cfg != config:
            continue
        src = Source(
            _kind(f),
            str(f),
            doc["repo"],
            fsplit,
            config=cfg,
            file=None,
            revision=doc.get("requested_revision"),
            commit=doc["commit"],
            path=f,
        )
        key = (cfg, fsplit)
        src.start_index = next_index.get(key, 0)
        n = src.num_rows()
        if n is None:  # JSONL shards: count lines up front so the next shard continues the numbering
            n = sum(1 for _, _, _, _ in src.rows(None))
        next_index[key] = src.start_index + n
        out.append(src)
    if not out:
        what = ", ".join(
            x for x in (f"split {split!r}" if split else "", f"config {config!r}" if config else "") if x
        )
        raise UsageError(f"{p}: the pulled directory has no data files{' for ' + what if what else ''}")
    return out


_COMMIT = re.compile(r"@([0-9a-f]{40})(?:/|$)")


def open_hub(
    repo: str, *, revision: str | None, config: str | None, split: str | None, dataset: str | None = None
) -> list[Source]:
    """One source per split of a hub dataset, streamed by the `datasets` library (HF_ENDPOINT and HF_TOKEN
    apply). The commit is read from the resolved data file URLs (hf://datasets/REPO@SHA/...)."""
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - a dependency
        raise InputError(f"reading hub datasets needs the datasets library: {exc}") from None
    try:
        builder = datasets.load_dataset_builder(repo, name=config, revision=revision)
    except Exception as exc:  # noqa: BLE001 - classify the library's many exception types
        raise _hub_error(repo, revision, exc) from None
    commit = None
    files = getattr(builder.config, "data_files", None) or {}
    for paths in files.values():
        for u in paths:
            m = _COMMIT.search(str(u))
            if m:
                commit = m.group(1)
                break
        if commit:
            break
    if commit is None and revision and re.fullmatch(r"[0-9a-f]{40}", revision):
        commit = revision
    available = list((builder.info.splits or {}).keys()) or list(files.keys())
    wanted = [split] if split else available
    if split and available and split not in available:
        raise UsageError(
            f"{repo}: no split {split!r} (splits: {', '.join(available)})", reason="unknown_split"
        )
    out = []
    for s in wanted:
        try:
            ds = builder.as_streaming_dataset(split=s)
        except Exception as exc:  # noqa: BLE001
            raise _hub_error(repo, revision, exc) from None
        cfg = builder.config.name if builder.config.name != "default" else None
        src = Source(
            "hub", f"{repo}@{revision or 'main'}", dataset or repo, s, config=cfg, revision=revision or "main"
        )
        src.commit = commit
        src._hub = ds
        out.append(src)
    return out


def _hub_error(repo: str, revision: str | None, exc: Exception) -> Exception:
    name = type(exc).__name__
    msg = _one_line(exc)
    if name in (
        "DatasetNotFoundError",
        "RepositoryNotFoundError",
        "FileNotFoundError",
        "RevisionNotFoundError",
    ):
        return UsageError(f"{repo}@{revision or 'main'}: not found on the hub ({msg})")
    if isinstance(exc, ValueError):  # unknown config / split: the library lists the valid ones
        return UsageError(f"{repo}: {msg}")
    return InputError(f"{repo}@{revision or 'main'}: cannot read from the hub: {msg}")
