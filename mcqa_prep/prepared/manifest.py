"""The prepared-directory format, in one place: file names, the manifest (build, write, read as a typed
`Manifest`). The decisions taken from a manifest (is it valid for this grader or policy; is an output directory
up to date for this run) are accept.py's.

A prepared directory holds `<split>-00000-of-0000N.jsonl|parquet` shards, `rejects.jsonl` and
`manifest.json`, written last. A directory whose manifest is missing, of an unknown version, not valid
against its schema, or not consistent with itself (counts, splits, file names) is not a preparation.
Errors carry the facts (both contract ids, the fields that differ) and never a command-line flag.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import IncompletePreparation, InputError, IntegrityError
from ..io.readers import document_bytes, parse_document
from ..io.writers import write_atomic_json
from ..policy import GradingPolicy, contract_id
from ..schema import json_path, schema_version, validator

MANIFEST_NAME = "manifest.json"
REJECTS_NAME = "rejects.jsonl"
MANIFEST_SCHEMA = schema_version("manifest")  # "manifest.v1"
ROW_SCHEMA = schema_version("prepared_row")  # "prepared-row.v1"
SUPPORTED_MANIFESTS = (MANIFEST_SCHEMA,)
OUTPUT_FORMATS = ("jsonl", "parquet")
SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")  # a split name that can name shard files
_SHARD = re.compile(r"^(?P<split>\w+(?:\.\w+)*)-(?P<i>\d{5})-of-(?P<n>\d{5})\.(?P<fmt>jsonl|parquet)$")
_OWN_FILE = re.compile(
    rf"^(\w+(\.\w+)*-\d{{5}}-of-\d{{5}}\.(jsonl|parquet)|{re.escape(REJECTS_NAME)}|{re.escape(MANIFEST_NAME)})$"
)
DATA_FILE = re.compile(r"^.+\.(jsonl|parquet)$")
SHARD, REJECTS = "shard", "rejects"  # the kinds of file a manifest lists
SECTIONS = ("difficulty", "runtimes", "repairs", "decontamination")  # optional sections a preparation records

# A setting recorded only when asked for means this when absent (what a difference says: `false`, not `null`)
UNSET_SETTINGS: dict[str, Any] = {"repair_regexes": False}

# What prepare writes for given inputs, policy and settings: which rows pass validation (the validate rules and
# their severities), how a row is normalised and stamped, the prepared-row schema. Bump it in the same commit
# as any change of that output (tests/test_prepare_version.py hashes golden prepare outputs and fails when they
# change under an unchanged version), and note it in docs/design/prepare.md ("Preparation versions"). A manifest
# without the key was made before it was recorded: preparation version 1.
PREPARATION_VERSION = "3"
UNRECORDED_PREPARATION = "1"
# from this preparation version on, every row's stamp records its bound fields (binding.py)
BINDING_VERSION = 3


def shard_name(split: str, index: int, count: int, fmt: str) -> str:
    return f"{split}-{index:05d}-of-{count:05d}.{fmt}"


def is_prepared_dir(path: str | os.PathLike) -> bool:
    p = Path(path)
    return p.is_dir() and (p / MANIFEST_NAME).is_file()


def looks_prepared(directory: Path) -> bool:
    """Whether `directory` holds only files a preparation writes (so a replacement never deletes foreign data)."""
    return all(p.is_file() and _OWN_FILE.match(p.name) for p in directory.iterdir())


# ---- building and writing -------------------------------------------------------------------------------


def build(
    *,
    policy: GradingPolicy,
    settings: Mapping[str, Any],
    inputs: list[dict[str, Any]],
    files: list[dict[str, Any]],
    splits: Mapping[str, Mapping[str, int]],
    counts: Mapping[str, Any],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest of a finished preparation (checked against its schema and itself before it is written)."""
    doc = {
        "manifest_schema": MANIFEST_SCHEMA,
        "tool": {"name": "mcqa-prep", "version": __version__},
        "created_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "contract_id": policy.contract_id(),
        "contract": policy.contract(),
        "row_schema": ROW_SCHEMA,
        "preparation_version": PREPARATION_VERSION,
        "settings": dict(settings),
        "inputs": inputs,
        "files": files,
        "splits": {k: dict(v) for k, v in splits.items()},
        "counts": dict(counts),
        **(extra or {}),
    }
    _check_doc(doc, "manifest")
    return doc


def write(directory: str | os.PathLike, manifest: Mapping[str, Any]) -> Path:
    return write_atomic_json(Path(directory) / MANIFEST_NAME, manifest)


# ---- reading --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ListedFile:
    """One file a manifest lists: a shard of a split, or the rejects file (split None), with what was recorded
    of its bytes."""

    name: str  # the file's name in the prepared directory (the manifest's `path`)
    kind: str  # SHARD or REJECTS
    split: str | None
    sha256: str
    rows: int
    bytes: int
    format: str | None = None

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> ListedFile:
        return cls(
            entry["path"],
            entry["kind"],
            entry["split"],
            entry["sha256"],
            entry["rows"],
            entry["bytes"],
            entry.get("format"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The entry as the manifest lists it."""
        out: dict[str, Any] = {"path": self.name, "kind": self.kind, "split": self.split}
        if self.format is not None:
            out["format"] = self.format
        return {**out, "sha256": self.sha256, "rows": self.rows, "bytes": self.bytes}


def _by_split(files: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """The shard entries of each split, in manifest order: the one grouping of a manifest's files."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    for f in files:
        if f["kind"] == SHARD:
            out.setdefault(f["split"], []).append(f)
    return out


@dataclass(frozen=True)
class Manifest:
    """A prepared directory's manifest as read (`read`): supported, schema-valid, its contract id the hash of
    its contract, consistent with itself. Read once: the exact bytes it was read from and their sha256 are
    kept (the load cache is keyed on them), and every view is a copy (nothing a reader does changes it)."""

    directory: Path
    raw: bytes = field(repr=False)
    sha256: str
    files: tuple[ListedFile, ...]
    _doc: Mapping[str, Any] = field(repr=False)
    _splits: Mapping[str, tuple[ListedFile, ...]] = field(repr=False)

    @classmethod
    def of(cls, directory: Path, raw: bytes, doc: Mapping[str, Any]) -> Manifest:
        files = tuple(ListedFile.of(f) for f in doc["files"])
        splits = {sp: tuple(ListedFile.of(f) for f in fs) for sp, fs in _by_split(doc["files"]).items()}
        return cls(directory, raw, hashlib.sha256(raw).hexdigest(), files, doc, splits)

    @property
    def contract_id(self) -> str:
        return str(self._doc["contract_id"])

    @property
    def contract(self) -> dict[str, Any]:
        return copy.deepcopy(dict(self._doc["contract"]))

    @property
    def grader_version(self) -> Any:
        return self._doc["contract"].get("grader_version")

    @property
    def preparation_version(self) -> str:
        """The preparation version it records (UNRECORDED_PREPARATION when it predates the key)."""
        return str(self._doc.get("preparation_version", UNRECORDED_PREPARATION))

    @property
    def binds_rows(self) -> bool:
        """Whether its rows' stamps record the digests of their bound fields (binding.py): preparation
        version BINDING_VERSION and later."""
        v = self.preparation_version
        return v.isdigit() and int(v) >= BINDING_VERSION

    @property
    def output_format(self) -> str:
        return str(self._doc["settings"]["output_format"])

    @property
    def settings(self) -> dict[str, Any]:
        return copy.deepcopy(dict(self._doc["settings"]))

    @property
    def inputs(self) -> list[dict[str, Any]]:
        return copy.deepcopy(list(self._doc["inputs"]))

    @property
    def counts(self) -> dict[str, Any]:
        return copy.deepcopy(dict(self._doc["counts"]))

    @property
    def splits(self) -> dict[str, dict[str, int]]:
        """split -> {rows, shards}, as recorded."""
        return copy.deepcopy({k: dict(v) for k, v in self._doc["splits"].items()})

    @property
    def split_names(self) -> tuple[str, ...]:
        """The splits that hold rows, in the order of their first shard."""
        return tuple(self._splits)

    @property
    def total_bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    def shards(self, split: str | None = None) -> tuple[ListedFile, ...]:
        """The shards of one split (every split's, in manifest order, when split is None): the one place a
        reader finds them."""
        if split is not None:
            return self._splits.get(split, ())
        return tuple(f for f in self.files if f.kind == SHARD)

    def path(self, f: ListedFile) -> Path:
        return self.directory / f.name

    def section(self, name: str) -> Any:
        """An optional section (SECTIONS: difficulty, runtimes, repairs, decontamination), None when absent."""
        if name not in SECTIONS:
            raise KeyError(name)
        return copy.deepcopy(self._doc.get(name))

    def to_dict(self) -> dict[str, Any]:
        """The whole document (a copy), for a report that shows it."""
        return copy.deepcopy(dict(self._doc))


def read(directory: str | os.PathLike) -> Manifest:
    """The manifest of a prepared directory, read once: supported, schema-valid, its id the hash of its
    contract, and consistent with itself. IncompletePreparation when there is none; IntegrityError when it was
    edited."""
    d = Path(directory)
    if not d.is_dir():
        raise InputError(f"{d}: no such directory", reason="missing_input", path=str(d))
    path = d / MANIFEST_NAME
    try:
        raw = document_bytes(path)
    except FileNotFoundError:
        raise IncompletePreparation(
            f"{d}: no {MANIFEST_NAME}: not a complete preparation (interrupted, or not written by mcqa-prep)",
            directory=str(d),
        ) from None
    except OSError as exc:
        raise IncompletePreparation(
            f"{path}: cannot be read ({exc.strerror or exc})", directory=str(d)
        ) from None
    doc, problem = parse_document(raw)
    if problem is not None:
        raise IncompletePreparation(f"{path}: {problem}", directory=str(d))
    version = doc.get("manifest_schema") if isinstance(doc, dict) else None
    if version not in SUPPORTED_MANIFESTS:
        raise IncompletePreparation(
            f"{path}: manifest schema {json.dumps(version)} is not supported (this mcqa-prep reads "
            f"{', '.join(SUPPORTED_MANIFESTS)})",
            directory=str(d),
        )
    _check_doc(doc, str(path))
    if contract_id(doc["contract"]) != doc["contract_id"]:
        raise IntegrityError(
            f"{path}: contract_id does not match the recorded contract (edited?)", directory=str(d)
        )
    check_consistency(doc, str(path))
    return Manifest.of(d, raw, doc)


def _check_doc(doc: Any, where: str) -> None:
    errors = sorted(validator("manifest").iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise IncompletePreparation(
            f"{where}: {json_path(e.absolute_path)}: {e.message}{more} [{MANIFEST_SCHEMA}]"
        )


def check_consistency(doc: Mapping[str, Any], where: str) -> None:
    """The manifest agrees with itself: shard names, splits and formats; rows per split; counts."""
    problems: list[str] = []
    fmt = doc["settings"]["output_format"]
    names = [f["path"] for f in doc["files"]]
    if len(set(names)) != len(names):
        problems.append("$.files: a file is listed twice")
    rejects = [f for f in doc["files"] if f["kind"] == REJECTS]
    named = []
    for f in doc["files"]:
        if f["kind"] != SHARD:
            if f["path"] != REJECTS_NAME or f["split"] is not None:
                problems.append(f"$.files: {f['path']!r} is not the rejects file {REJECTS_NAME}")
        elif _names_itself(f, fmt):
            named.append(f)
        else:
            problems.append(
                f"$.files: shard {f['path']!r} does not name split {f['split']!r} and format {fmt}"
            )
    shards = _by_split(named)
    for split, files in shards.items():
        want = [shard_name(split, i, len(files), fmt) for i in range(len(files))]
        if sorted(f["path"] for f in files) != want:
            problems.append(f"$.files: the shards of split {split!r} are not {want[0]} ... {want[-1]}")
    splits = doc["splits"]
    if set(splits) != set(shards):
        problems.append(f"$.splits: {sorted(splits)} but the shards are of {sorted(shards)}")
    stray = sorted(set(splits) - _input_splits(doc["inputs"]))
    if stray:
        problems.append(f"$.splits: {stray} hold rows, but no input is of that split")
    for split, v in splits.items():
        files = shards.get(split, [])
        if v["shards"] != len(files) or v["rows"] != sum(f["rows"] for f in files):
            problems.append(
                f"$.splits.{split}: {v} but its shards hold {sum(f['rows'] for f in files)} rows in {len(files)}"
            )
    c = doc["counts"]
    written = sum(v["rows"] for v in splits.values())
    if c["written"] != written:
        problems.append(f"$.counts.written: {c['written']} but the splits hold {written} rows")
    dropped = sum(c.get("dropped_by_reason", {}).values())
    perm = c.get("permutation")  # prepare --permute: a question read is written as its variants
    kept = perm["questions"] if perm is not None else c["written"]
    if c["read"] != kept + c["rejected"] + dropped:
        what = "questions" if perm is not None else "written"
        problems.append(f"$.counts: read {c['read']} is not {what} + rejected + dropped")
    if perm is not None and perm["variants"] != c["written"]:
        problems.append(f"$.counts.permutation.variants: {perm['variants']} but {c['written']} rows written")
    if c.get("dropped", dropped) != dropped:
        problems.append(f"$.counts.dropped: {c['dropped']} but dropped_by_reason sums to {dropped}")
    repaired = sum(c.get("repaired_by_template", {}).values())
    if c.get("repaired", repaired) != repaired or repaired > c["written"]:
        problems.append(f"$.counts.repaired: {c['repaired']} but repaired_by_template sums to {repaired}")
    table = ((doc.get("difficulty") or {}).get("settings") or {}).get("table")
    if table is not None and table["contract_id"] != doc["contract_id"]:
        problems.append("$.difficulty.settings.table.contract_id: not the preparation's contract")
    if len(rejects) != 1 or rejects[0]["rows"] != c["rejected"]:
        problems.append(f"$.counts.rejected: {c['rejected']} but {REJECTS_NAME} is listed with other rows")
    if sum(c["rejected_by_rule"].values()) < c["rejected"] and c["rejected"]:
        problems.append("$.counts.rejected_by_rule: fewer rows than rejected")
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise IntegrityError(f"{where}: {problems[0]}{more}: the manifest disagrees with itself (edited?)")


def _names_itself(f: Mapping[str, Any], fmt: str) -> bool:
    """A shard's file name names its split and the preparation's format."""
    m = _SHARD.match(f["path"])
    return m is not None and m.group("split") == f["split"] and m.group("fmt") == fmt == f.get("format", fmt)


def _input_splits(inputs: Iterable[Mapping[str, Any]]) -> set[str]:
    """The splits the recorded inputs can give rows to (a split name in a manifest comes from one of them)."""
    out: set[str] = set()
    for p in inputs:
        if p["kind"] == "file":
            out.add(p["split"])
        elif p.get("splits"):
            out.update(p["splits"])
        else:
            out.update(f["split"] for f in p["files"] if f.get("split"))
    return out
