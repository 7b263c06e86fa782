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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import InputError, UsageError
from ..io.paths import CONVERT_KINDS, STDIN, require_regular
from ..io.readers import batch_rows, open_parquet, parquet_batches, read_jsonl
from ..progress import Progress
from ..records import display_name
from ..sources import KIND_PULLED, Inputs, resolve

SUFFIXES = tuple(CONVERT_KINDS)
SourceRow = tuple[int, int, "dict[str, Any] | None", "str | None"]

_HUB_ID = re.compile(r"^(?:hf:|hf://datasets/)?([A-Za-z0-9][\w.-]*/[\w.-]+)$")


@dataclass
class Stream:
    """One stream of rows with its identity (what every output row records in metadata.source): a file
    that sources.resolve found, or one split of a hub dataset."""

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
            return list(open_parquet(self.path).schema_arrow.names)  # type: ignore[arg-type]
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
            return open_parquet(self.path).metadata.num_rows  # type: ignore[arg-type]
        return None

    def _delim(self) -> str:
        return "\t" if self.path is not None and self.path.suffix.lower() == ".tsv" else ","

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
        line is read as usual. NaN/Infinity is read, as from Parquet: convert writes it as null (jsonsafe.json_safe)."""
        assert self.path is not None
        if self.path.suffix.lower() == ".json":
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
        """The rows by io.readers' Parquet reader, with only the columns the conversion needs."""
        assert self.path is not None
        names = open_parquet(self.path).schema_arrow.names
        cols = None if columns is None else [c for c in names if c in set(columns)]
        # the reader's batches and rows (io.readers.read_parquet's), without its per-row records: convert
        # reads no option hints or value marks (a value JSON cannot hold is made representable on writing)
        i = 0
        start = self.start_index
        for batch in parquet_batches(self.path, None, cols):
            for data in batch_rows(batch)[0]:
                yield start + i, i + 1, data, None
                i += 1

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


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip(": ")


def is_hub_id(spec: str) -> bool:
    return bool(_HUB_ID.match(spec)) and not Path(spec).exists()


def plan_sources(
    specs: Sequence[str],
    *,
    revision: str | None = None,
    config: str | None = None,
    split: str | None = None,
    dataset: str | None = None,
    verify: bool = True,
    progress: Progress | None = None,
) -> list[Stream]:
    """Streams for the SOURCE arguments, in order: local paths as sources.resolve finds them (with convert's
    wider set of kinds; `split` selects a directory's files of that split), hub ids by `datasets`. Raises
    UsageError for a missing input or an option that does not apply, InputError for unreadable input."""
    out: list[Stream] = []
    for spec in specs:
        p = Path(spec)
        if spec == STDIN:
            raise UsageError(
                "-: convert reads files, directories or hub datasets, not stdin; save the rows to a file"
            )
        if p.is_file() and p.suffix.lower() not in SUFFIXES:
            raise UsageError(
                f"{spec}: unsupported file type {p.suffix!r}; convert reads {', '.join(SUFFIXES)}"
            )
        if p.exists() and not p.is_dir():
            require_regular(p, "convert reads a source twice (its columns, then its rows)")
        if p.exists():
            found = resolve(
                [spec],
                split=split,
                verify=verify,
                progress=progress,
                allow_stdin=False,
                kinds=CONVERT_KINDS,
                select=True,
            )
            out.extend(_local(spec, found, config=config, split=split, dataset=dataset))
        elif _HUB_ID.match(spec) and p.suffix.lower() not in SUFFIXES:
            repo = _HUB_ID.match(spec).group(1)  # type: ignore[union-attr]
            out.extend(open_hub(repo, revision=revision, config=config, split=split, dataset=dataset))
        else:
            raise UsageError(f"{spec}: no such file or directory (nor a hub dataset id like owner/name)")
    return out


def _local(spec: str, found: Inputs, *, config, split, dataset) -> list[Stream]:
    """Streams for one local argument: a pulled directory's files continue one numbering per (config,
    split) and record the lock's repo and commit; any other file records its path within the argument."""
    if found.locks:
        return _pulled(Path(spec), found, config=config, split=split)
    p = Path(spec)
    name = dataset or (p.resolve().name if p.is_dir() else p.name)
    return [
        Stream(
            src.format,
            str(src.path),
            name,
            src.split,
            file=src.name,
            path=Path(src.path),
        )
        for src in found.sources
    ]


def _pulled(p: Path, found: Inputs, *, config, split) -> list[Stream]:
    _, doc, _ = found.locks[0]
    out: list[Stream] = []
    next_index: dict[tuple[str | None, str], int] = {}
    for src in found.sources:
        assert src.kind == KIND_PULLED
        f, fsplit = Path(src.path), src.split
        parts = PurePosixPath(src.name).parts
        cfg = parts[0] if len(parts) > 1 and parts[0] not in ("data", fsplit) else None
        if config is not None and cfg != config:
            continue
        stream = Stream(
            src.format,
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
        stream.start_index = next_index.get(key, 0)
        n = stream.num_rows()
        if n is None:  # JSONL shards: count lines up front so the next shard continues the numbering
            n = sum(1 for _, _, _, _ in stream.rows(None))
        next_index[key] = stream.start_index + n
        out.append(stream)
    if not out:
        what = ", ".join(
            x for x in (f"split {split!r}" if split else "", f"config {config!r}" if config else "") if x
        )
        raise UsageError(f"{p}: the pulled directory has no data files{' for ' + what if what else ''}")
    return out


_COMMIT = re.compile(r"@([0-9a-f]{40})(?:/|$)")


def open_hub(
    repo: str, *, revision: str | None, config: str | None, split: str | None, dataset: str | None = None
) -> list[Stream]:
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
        src = Stream(
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
