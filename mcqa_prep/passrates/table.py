"""The pass-rate table format, in one place: writing it, reading it back with every check, and finding a row's
evidence in it.

A table is JSONL (schemas/passrates.v2.schema.json): line 1 a header (table schema version, the grading
contract and its id, grader version, key kind, the counting rule, the fitted priors, per-model pass@k /
majority@k / no_answer, input hashes, counts, content hash), then one entry per (question key, model)
(passrates/entries.py), sorted by (key, model), no repeat. Why JSONL and not one JSON document: a table for
the whole dataset holds about a million entries; JSONL is written and checked line by line, every problem is
reported with its line number, and a change shows up as a line in a diff.

`content_sha256` covers the header (canonical JSON, without itself, `created_at` and `tool`) and the entry
lines' bytes exactly as written: measuring the same rollouts again gives the same hash (a preparation made
with the old table stays up to date), and any edit after writing is detected. It is an integrity check, not
a signature. A reader refuses: an unknown or missing table_schema (no legacy reading of unversioned tables),
a header or entry that does not follow the schema, a NaN, a repeated (key, model), unsorted entries, counts
that disagree with the counting rule, a hash that does not match, and (check_contract) a contract other than
the caller's. passrates.v1 and v2 tables are still read: v1 records no counting rule and no posterior, which is
computed on reading (the same estimate a v2 table records); neither records the question across its variants
(v3: consistency.py), whose fields are then None.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import itemgetter
from pathlib import Path
from typing import Any

import orjson

from .._version import __version__
from ..errors import ContractMismatch, Difference, InputError, IntegrityError, UsageError, refusal
from ..evidence import row_keys
from ..io.readers import block_lines, is_blank
from ..io.writers import AtomicFile
from ..policy import GradingPolicy, canonical_json, contract_differences, contract_id
from ..progress import Progress
from ..schema import json_path, schema_version, validator
from .entries import (
    KEY_PATTERN,
    V1_FIELDS,
    V2_FIELDS,
    V3_FIELDS,
    Entry,
    entry_from_v2,
    entry_from_v3,
    entry_lines_shaped,
    entry_lines_v3,
    entry_problem,
    v2_fields_ok,
    v2_problem,
    v3_fields_ok,
    v3_problem,
)
from .kmetrics import describe_rule
from .posterior import DEFAULT_BUCKETS, DEFAULT_LEVEL, Prior

TABLE_SCHEMA = schema_version("passrates")  # "passrates.v3"
TABLE_SCHEMA_V2 = schema_version("passrates_v2")
TABLE_SCHEMA_V1 = schema_version("passrates_v1")
SUPPORTED_TABLES = (TABLE_SCHEMA, TABLE_SCHEMA_V2, TABLE_SCHEMA_V1)
_SCHEMA_NAME = {TABLE_SCHEMA: "passrates", TABLE_SCHEMA_V2: "passrates_v2", TABLE_SCHEMA_V1: "passrates_v1"}
_FIELDS = {TABLE_SCHEMA: V3_FIELDS, TABLE_SCHEMA_V2: V2_FIELDS, TABLE_SCHEMA_V1: V1_FIELDS}
UNHASHED = ("content_sha256", "created_at", "tool")
PROBLEMS_KEPT = 5


def _hashed_header(header: Mapping[str, Any]) -> bytes:
    return canonical_json({k: v for k, v in header.items() if k not in UNHASHED}) + b"\n"


def write_table(
    path: str | os.PathLike,
    header: Mapping[str, Any],
    entries: list[tuple[str, str, Entry]],
    shapes: list[Any] | None = None,
) -> dict[str, Any]:
    """Write a passrates.v3 table atomically: `header` without its computed fields, `entries` as (key, model,
    Entry) with their posterior (passrates/estimate.py) and fields across variants (consistency.py); `shapes`,
    when given, per entry its shape (estimate.Estimated.shapes: the lines of one shape are serialised from one
    cut line, entries.entry_lines_shaped; the same bytes). Returns the header as written."""
    if shapes is None:
        entries = sorted(entries, key=itemgetter(0, 1))
    else:
        pairs = sorted(zip(entries, shapes, strict=True), key=_by_key_model)
        entries, shapes = [e for e, _ in pairs], [s for _, s in pairs]
    doc = {
        "table_schema": TABLE_SCHEMA,
        "tool": {"name": "mcqa-prep", "version": __version__},
        "created_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        **header,
        "entries": len(entries),
    }
    h = hashlib.sha256(_hashed_header(doc))
    # the entry lines serialised once, hashed, and kept in a spool (memory up to SPOOL_BYTES, then a
    # temporary file) until the header that records their hash is written before them
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as body:
        for i in range(0, len(entries), _BLOCK):
            part = entries[i : i + _BLOCK]
            block = (
                entry_lines_v3(part) if shapes is None else entry_lines_shaped(part, shapes[i : i + _BLOCK])
            )
            h.update(block)
            body.write(block)
        doc["content_sha256"] = h.hexdigest()
        # the header is this module's own document, not input: its schema is checked by the tests on every
        # shape they write, not here (loading jsonschema would cost every run's start); canonical_json still
        # refuses a NaN or a value that is not JSON
        body.seek(0)
        with AtomicFile(path, "wb") as fh:
            fh.write(canonical_json(doc) + b"\n")
            shutil.copyfileobj(body, fh, 1 << 20)
    return doc


SPOOL_BYTES = 256 << 20


def _by_key_model(pair: tuple[tuple[str, str, Entry], Any]) -> tuple[str, str]:
    return pair[0][0], pair[0][1]


_BLOCK = 4096


# ---- reading ------------------------------------------------------------------------------------------


@dataclass
class PassRateTable:
    """A verified table: its header and its entries by key, then model (with their posterior: recorded in a
    v2 table, computed on reading a v1 table)."""

    path: str
    header: dict[str, Any]
    entries: dict[str, dict[str, Entry]]
    priors: dict[str, Prior]

    @property
    def version(self) -> str:
        return self.header["table_schema"]

    @property
    def counting(self) -> dict[str, Any] | None:
        """What a sample and a pass are (None: a v1 table, which records no rule)."""
        return self.header.get("counting")

    @property
    def no_answer(self) -> str | None:
        c = self.counting
        return c["no_answer"] if c is not None else None

    @property
    def level(self) -> float:
        post = self.header.get("posterior")
        return post["credible_level"] if post is not None else DEFAULT_LEVEL

    @property
    def buckets(self) -> int:
        post = self.header.get("posterior")
        return post["buckets"]["count"] if post is not None else DEFAULT_BUCKETS

    def describe_counting(self) -> str:
        return describe_rule(self.no_answer)

    @property
    def contract_id(self) -> str:
        return self.header["contract_id"]

    @property
    def contract(self) -> dict[str, Any] | None:
        return self.header["contract"]

    @property
    def content_sha256(self) -> str:
        return self.header["content_sha256"]

    @property
    def key_by(self) -> str:
        return self.header["key_by"]

    @property
    def models(self) -> dict[str, int]:
        """Entries per model, as the header counts them (checked against the entries on reading)."""
        return dict(self.header["counts"]["models"])

    def choose_model(self, model: str | None, purpose: str) -> str:
        """The model whose pass rates to use: `model`, which the table must hold, or (None) the table's only
        one; UsageError naming `purpose` when it holds several, InputError when it lacks `model`."""
        models = self.models
        if model is None:
            if len(models) == 1:
                return next(iter(models))
            raise UsageError(
                f"{self.path}: holds pass rates of {len(models)} models ({describe_models(models)}): name the "
                f"model to {purpose}",
                reason="model_ambiguous",
                models=models,
            )
        if model not in models:
            raise InputError(
                f"{self.path}: no pass rates for model {model!r}; the table has: {describe_models(models)}",
                reason="model_not_in_table",
                models=models,
            )
        return model

    def find(self, row: Mapping[str, Any]) -> tuple[str, dict[str, Entry]] | None:
        """(key, entries by model) of a dataset row: by its uuid, else by its prompt; None without evidence."""
        for key in row_keys(row, self.key_by):
            found = self.entries.get(key)
            if found is not None:
                return key, found
        return None

    def identity(self) -> dict[str, Any]:
        """What makes two tables the same evidence (a preparation records it; its path is not part of it)."""
        return {
            "table_schema": self.header["table_schema"],
            "content_sha256": self.content_sha256,
            "contract_id": self.contract_id,
            "key_by": self.key_by,
        }

    def identities(self) -> list[dict[str, Any]]:
        """The identity and path of each table behind this one (several when tables were pooled)."""
        return self.header.get("pooled_from") or [{**self.identity(), "path": self.path}]

    def check_contract(self, policy: GradingPolicy) -> None:
        """ContractMismatch (naming both ids and the fields that differ) unless the table was measured under
        exactly `policy`'s contract."""
        mine = policy.contract_id()
        if self.contract_id == mine:
            return
        head = (
            f"{self.path}: pass rates measured under contract {self.contract_id}, but this preparation grades "
            f"under contract {mine}; evidence from another grading contract is not evidence here"
        )
        if self.contract is not None:
            diff = contract_differences(self.contract, policy.contract())
        else:  # the fields are unknown: the table records only its contract id
            head += " (the table records only its contract id, not the contract's fields)"
            diff = [Difference("contract_id", self.contract_id, mine)]
        raise refusal(
            ContractMismatch,
            head,
            diff,
            expected=mine,
            found=self.contract_id,
            reason="table_contract",
            table=self.path,
        )


def _invalid(path: Path, message: str, reason: str = "table_invalid") -> InputError:
    return InputError(f"{path}: {message}", reason=reason, table=str(path))


def _read_header(path: Path, raw: bytes) -> dict[str, Any]:
    if is_blank(raw):
        raise _invalid(path, "empty: not a pass-rate table")
    try:
        header = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise _invalid(path, "line 1: not a JSON header: not a pass-rate table") from None
    version = header.get("table_schema") if isinstance(header, dict) else None
    if version not in SUPPORTED_TABLES:
        what = "no table_schema (an unversioned table)" if version is None else f"table_schema {version!r}"
        raise _invalid(
            path,
            f"{what} is not supported: this mcqa-prep reads {', '.join(SUPPORTED_TABLES)}",
            reason="table_schema",
        )
    errors = sorted(validator(_SCHEMA_NAME[version]).iter_errors(header), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        raise _invalid(path, f"line 1: {json_path(e.absolute_path)}: {e.message} [{version}]")
    contract = header["contract"]
    if contract is not None and (
        contract_id(contract) != header["contract_id"]
        or contract["grader_version"] != header["grader_version"]
    ):
        raise IntegrityError(
            f"{path}: line 1: contract_id or grader_version does not match the recorded contract (edited?)",
            reason="table_edited",
            table=str(path),
        )
    return header


class _Reader:
    """Entries in, index out, problems collected with their line numbers. The common case (a well-formed,
    sorted entry) is checked inline; anything else goes through entries.entry_problem for a precise
    message."""

    def __init__(self, header: Mapping[str, Any], variants: bool = True) -> None:
        self.keep_variants = variants
        self.v3 = header["table_schema"] == TABLE_SCHEMA
        self.v2 = (
            self.v3 or header["table_schema"] == TABLE_SCHEMA_V2
        )  # v2's fields and checks (v3: and more)
        self.schema = _SCHEMA_NAME[header["table_schema"]]
        self.fields = _FIELDS[header["table_schema"]]
        # the no_answer rule, read by v2 entries only (a v1 table has none)
        self.rule: str = header["counting"]["no_answer"] if self.v2 else ""
        self.buckets = header["posterior"]["buckets"]["count"] if self.v2 else DEFAULT_BUCKETS
        self.entries: dict[str, dict[str, Entry]] = {}
        self.models: dict[str, int] = {}
        self.problems: list[str] = []
        self.count = 0
        self.n_problems = 0
        self.prev_key = ""
        self.prev_model = ""
        self.by_model: dict[str, Entry] = {}

    def problem(self, line: int, message: str) -> None:
        self.n_problems += 1
        if len(self.problems) < PROBLEMS_KEPT:
            self.problems.append(f"line {line}: {message}")

    def add(self, line: int, raw: bytes) -> None:
        self.count += 1
        parsed = self._v2(raw) if self.v2 else self._v1(raw)
        if parsed is None:
            d, why = entry_problem(raw, self.schema, self.fields)
            if d is not None:
                check = v3_problem if self.v3 else v2_problem
                why = check(d, self.rule, self.buckets) if self.v2 else _v1_problem(d)
                if why is None:
                    parsed = d["key"], d["model"], self._entry(d)
            if parsed is None:
                self.problem(line, why or "invalid entry")
                return
        self._index(line, *parsed)

    def _entry(self, d: dict[str, Any]) -> Entry:
        if self.v3:
            return entry_from_v3(d, self.keep_variants)
        return entry_from_v2(d) if self.v2 else Entry(d["samples"], d["passes"], float(d["mean_reward"]))

    def _v1(self, raw: bytes) -> tuple[str, str, Entry] | None:
        try:
            d = orjson.loads(raw)
            key, model = d["key"], d["model"]
            s, p, r, mr = d["samples"], d["passes"], d["pass_rate"], d["mean_reward"]
            ok = (
                len(d) == 6
                and type(key) is str
                and type(model) is str
                and model
                and type(s) is int
                and type(p) is int
                and 0 <= p <= s
                and type(r) is float
                and r == p / s
                and type(mr) is float
                and 0.0 <= mr <= 1.0
                and KEY_PATTERN.match(key) is not None
            )
        except (orjson.JSONDecodeError, TypeError, KeyError):
            return None
        return (key, model, Entry(s, p, mr)) if ok else None

    def _v2(self, raw: bytes) -> tuple[str, str, Entry] | None:
        try:
            d = orjson.loads(raw)
            if self.v3:
                ok = v3_fields_ok(d) and v3_problem(d, self.rule, self.buckets) is None
            else:
                ok = v2_fields_ok(d) and v2_problem(d, self.rule, self.buckets) is None
        except (orjson.JSONDecodeError, TypeError, KeyError, AttributeError):
            return None
        if not ok:
            return None
        return d["key"], d["model"], entry_from_v3(d, self.keep_variants) if self.v3 else entry_from_v2(d)

    def _index(self, line: int, key: str, model: str, e: Entry) -> None:
        if key == self.prev_key:
            if model == self.prev_model:
                self.problem(line, f"duplicate entry for key {key!r} and model {model!r}")
                return
            if model < self.prev_model:
                self.problem(line, "entries are not sorted by (key, model)")
        else:
            if key < self.prev_key:
                self.problem(line, "entries are not sorted by (key, model)")
            by_model = self.entries.get(key)
            self.by_model = by_model if by_model is not None else self.entries.setdefault(key, {})
        if model in self.by_model:  # only in an unsorted table: already a problem
            self.problem(line, f"duplicate entry for key {key!r} and model {model!r}")
            return
        self.prev_key, self.prev_model = key, model
        self.by_model[model] = e
        self.models[model] = self.models.get(model, 0) + 1


def _v1_problem(d: dict[str, Any]) -> str | None:
    if not math.isclose(d["pass_rate"], d["passes"] / d["samples"], rel_tol=0, abs_tol=1e-12):
        return f"$.pass_rate: {d['pass_rate']} is not passes / samples ({d['passes']}/{d['samples']})"
    return None


def read_table(
    path: str | os.PathLike, progress: Progress | None = None, *, variants: bool = True
) -> PassRateTable:
    """A verified table (see the module docstring for every check). Raises InputError (unreadable, unknown
    version, invalid) or IntegrityError (edited: the content hash does not match). `progress` is a bar
    factory (progress(total=, desc=, unit=)). `variants=False`: a v3 entry's per-variant counts are checked
    but not kept (its other fields are; for readers that need only the estimates)."""
    p = Path(path)
    try:
        fh = open(p, "rb")
    except FileNotFoundError:
        raise InputError(f"{p}: no such file", reason="missing_input", path=str(p)) from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a directory, not a pass-rate table", reason="table_invalid") from None
    except OSError as exc:
        raise InputError(f"{p}: cannot open: {exc.strerror or exc}", reason="input_unreadable") from None
    bar = None
    with fh:
        try:
            header = _read_header(p, fh.readline())
            h = hashlib.sha256(_hashed_header(header))
            on_block: Callable[[bytes], Any] = h.update
            if progress is not None:
                bar = progress(total=os.fstat(fh.fileno()).st_size, desc="read pass-rate table", unit="B")

                def on_block(b: bytes) -> None:
                    h.update(b)
                    bar.update(len(b))

            reader = _Reader(header, variants)
            for i, raw in enumerate(block_lines(fh, on_block), start=2):
                reader.add(i, raw)
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{p}: cannot read: {exc}", reason="input_unreadable") from None
        finally:
            if bar is not None:
                bar.close()
    return _verified(p, header, reader, h.hexdigest())


def _verified(p: Path, header: dict[str, Any], reader: _Reader, digest: str) -> PassRateTable:
    first = f"; first problem: {reader.problems[0]}" if reader.problems else ""
    if digest != header["content_sha256"]:
        raise IntegrityError(
            f"{p}: content hash {digest[:16]}... does not match the recorded {header['content_sha256'][:16]}...: "
            f"the table was edited after it was written{first}",
            reason="table_edited",
            table=str(p),
            recorded=header["content_sha256"],
            found=digest,
            problems=reader.problems,
        )
    if reader.n_problems:
        more = f" (and {reader.n_problems - 1} more)" if reader.n_problems > 1 else ""
        raise _invalid(p, f"{reader.problems[0]}{more}")
    if reader.count != header["entries"] or dict(reader.models) != header["counts"]["models"]:
        raise _invalid(p, f"the header counts {header['entries']} entries, the table holds {reader.count}")
    if reader.v2:
        priors = {m: Prior.from_dict(d) for m, d in header["posterior"]["priors"].items()}
        if set(priors) != set(reader.models):
            raise _invalid(p, "line 1: $.posterior.priors: not one prior per model of the entries")
        return PassRateTable(str(p), header, reader.entries, priors)
    from .estimate import with_posterior

    entries, priors = with_posterior(reader.entries)
    return PassRateTable(str(p), header, entries, priors)


def describe_models(models: Mapping[str, int]) -> str:
    return ", ".join(f"{m} ({n} question(s))" for m, n in sorted(models.items())) or "none"
