"""Mutated Parquet bytes (bit flips, truncated footers, broken magic) and valid Parquet files holding what
JSON does not have (NaN, Infinity, bytes, decimals) or what Arrow fills in (null-filled structs), through
every command that reads Parquet: validate, prepare, convert, rescore (--rows and INPUT)."""

from __future__ import annotations

import datetime
import decimal
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from . import build, tries
from .kit import FAILURE, OK, check, run, strict_lines
from .mutate import bitflips


def _cut(n: int):
    return lambda data, rng: data[:-n]


def _cut_random(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(4, len(data) - 1)]


def _zero_footer_length(data: bytes, rng: random.Random) -> bytes:
    return data[:-8] + b"\x00\x00\x00\x00" + data[-4:]


def _huge_footer_length(data: bytes, rng: random.Random) -> bytes:
    return data[:-8] + b"\xff\xff\xff\x7f" + data[-4:]


def _bad_magic(data: bytes, rng: random.Random) -> bytes:
    return data[:-4] + b"PAR2"


def _garbage_after(data: bytes, rng: random.Random) -> bytes:
    return data + bytes(rng.randrange(256) for _ in range(64))


def _scribble_middle(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    start = rng.randrange(8, len(b) // 2)
    b[start : start + 64] = bytes(rng.randrange(256) for _ in range(64))
    return bytes(b)


def _only_magic(data: bytes, rng: random.Random) -> bytes:
    return b"PAR1PAR1"


PARQUET_MUTATIONS = {
    "bitflip-1": bitflips(1),
    "bitflip-16": bitflips(16),
    "cut-1": _cut(1),
    "cut-footer": _cut(64),
    "cut-random": _cut_random,
    "footer-length-zero": _zero_footer_length,
    "footer-length-huge": _huge_footer_length,
    "bad-magic": _bad_magic,
    "garbage-after": _garbage_after,
    "scribble-middle": _scribble_middle,
    "only-magic": _only_magic,
}


def _with_column(rows, name, array):
    return pa.Table.from_pylist(rows).append_column(name, array)


def _nan_metadata(rows):
    n = len(rows)
    scores = [float("nan") if i == 1 else (float("inf") if i == 2 else 0.5) for i in range(n)]
    return _with_column(rows, "score", pa.array(scores, pa.float64()))


def _nan_nested(rows):
    t = pa.Table.from_pylist(rows).drop_columns(["metadata"])
    meta = [{"w": [1.0, float("-inf")] if i == 3 else [1.0], "s": "x"} for i in range(len(rows))]
    return t.append_column("metadata", pa.array(meta))


def _nan_float32(rows):
    return _with_column(rows, "p", pa.array([float("nan")] + [0.25] * (len(rows) - 1), pa.float32()))


def _null_floats(rows):
    """Nulls in a float column are not NaN: nothing to report."""
    return _with_column(rows, "score", pa.array([None] * len(rows), pa.float64()))


def _sparse_template_metadata(rows):
    """Arrow fills every template_metadata struct with every key (null where a row had none)."""
    out = []
    for i, r in enumerate(rows):
        r = dict(r)
        r.pop("template_metadata", None)
        if i % 2:
            r["template_metadata"] = {"template_id": f"t{i}"}
        out.append(r)
    return pa.Table.from_pylist(out)


def _bytes_column(rows):
    return _with_column(rows, "blob", pa.array([b"\x00\xff"] * len(rows), pa.binary()))


def _decimal_column(rows):
    return _with_column(rows, "price", pa.array([decimal.Decimal("1.50")] * len(rows), pa.decimal128(5, 2)))


def _timestamp_column(rows):
    when = datetime.datetime(2024, 1, 2, 3, 4, 5)
    return _with_column(rows, "created", pa.array([when] * len(rows), pa.timestamp("us")))


def _huge_cell(rows):
    return _with_column(rows, "blob", pa.array(["x" * (3 << 20)] + [""] * (len(rows) - 1)))


def _zero_rows(rows):
    return pa.Table.from_pylist(rows).slice(0, 0)


def _gold_as_int(rows):
    t = pa.Table.from_pylist(rows).drop_columns(["expected_answer"])
    return t.append_column("expected_answer", pa.array(range(len(rows)), pa.int64()))


def _options_as_strings(rows):
    t = pa.Table.from_pylist(rows).drop_columns(["options"])
    return t.append_column("options", pa.array([["A: x", "B: y"]] * len(rows)))


# valid Parquet files with hostile contents -> which rows validate must report (None: no claim)
CONTENTS = {
    "nan-top-level": (_nan_metadata, {1: "$.score", 2: "$.score"}),
    "nan-nested": (_nan_nested, {3: "$.metadata.w[1]"}),
    "nan-float32": (_nan_float32, {0: "$.p"}),
    "null-floats": (_null_floats, {}),
    "sparse-template-metadata": (_sparse_template_metadata, {}),
    "bytes-column": (_bytes_column, {i: "$.blob" for i in range(5)}),
    "decimal-column": (_decimal_column, {i: "$.price" for i in range(5)}),
    "timestamp-column": (_timestamp_column, None),
    "huge-cell": (_huge_cell, {}),
    "zero-rows": (_zero_rows, {}),
    "gold-as-int": (_gold_as_int, None),
    "options-as-strings": (_options_as_strings, None),
}

COVERS = {
    "validate": len(PARQUET_MUTATIONS) + len(CONTENTS),
    "prepare": len(PARQUET_MUTATIONS) + len(CONTENTS),
    "rescore": len(PARQUET_MUTATIONS) + len(CONTENTS),
    "convert": len(PARQUET_MUTATIONS),
    "report": len(PARQUET_MUTATIONS),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("parquet-base")
    return {
        "validation": build.VALIDATION.read_bytes(),
        "arc": build.parquet_bytes(build.arc_rows(40), tmp / "arc.parquet"),
    }


def _readable_rows(path) -> int | None:
    """Rows of a Parquet file when pyarrow reads all of it, else None (the commands must then fail)."""
    try:
        return pq.read_table(path).num_rows
    except Exception:  # noqa: BLE001 - any way pyarrow refuses the bytes
        return None


@pytest.mark.parametrize("name", sorted(PARQUET_MUTATIONS))
def test_mutated_bytes(tmp_path, files, name):
    data = PARQUET_MUTATIONS[name](files["validation"], random.Random(f"hostile:{name}"))
    src = build.write(tmp_path / "in" / "validation.parquet", data)
    n = _readable_rows(src)
    doc = tries.validate(src, None, stdin=False)
    if n is None:
        assert not doc["ok"]
    else:
        assert doc["summary"]["rows_read"] == n
    prep = tries.prepare(src, None, tmp_path / "out" / "p")
    if prep["ok"]:
        assert n is not None and prep["counts"]["read"] == n
    joined = run(
        ["rescore", build.ROLLOUTS, "--rows", src, "--rows", build.TRAIN, "-o", tmp_path / "r.jsonl", "-q"]
    )
    check(joined, (OK, FAILURE))
    if n is None:
        assert joined.exit_code == FAILURE and not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("name", sorted(PARQUET_MUTATIONS))
def test_mutated_bytes_report(tmp_path, files, name):
    data = PARQUET_MUTATIONS[name](files["validation"], random.Random(f"hostile:{name}"))
    src = build.write(tmp_path / "in" / "validation.parquet", data)
    n = _readable_rows(src)
    doc = tries.report(src, None, tmp_path / "out" / "r.html")
    if doc["ok"]:
        assert n is not None and sum(i["rows"] for i in doc["inputs"]) == n


@pytest.mark.parametrize("name", sorted(PARQUET_MUTATIONS))
def test_mutated_bytes_convert(tmp_path, files, name):
    data = PARQUET_MUTATIONS[name](files["arc"], random.Random(f"hostile:{name}"))
    src = build.write(tmp_path / "in" / "arc.parquet", data)
    n = _readable_rows(src)
    doc = tries.convert(src, None, tmp_path / "out" / "rows.jsonl")
    if doc["ok"]:
        assert n is not None and doc["counts"]["read"] == n


@pytest.mark.parametrize("name", sorted(CONTENTS))
def test_contents(tmp_path, name):
    make, flagged = CONTENTS[name]
    src = tmp_path / "in" / "validation.parquet"
    src.parent.mkdir()
    # rows whose output_regex Arrow can keep in one column (a string; the sample's list-valued one would turn
    # every row's template_metadata null, leaving its prompt asking for a format nothing grades)
    rows = [
        r
        for r in build.sample_rows()
        if not isinstance((r.get("template_metadata") or {}).get("output_regex"), list)
    ]
    table = make(rows[:5])
    pq.write_table(table, src)
    doc = tries.validate(src, None, stdin=False)
    assert doc["summary"]["rows_read"] == table.num_rows
    if flagged is not None:
        errors = {(f["row"], f["path"]) for f in doc["findings"] if f["severity"] == "error"}
        assert set(flagged.items()) <= errors, errors
        assert doc["ok"] is (not flagged and table.num_rows > 0)
    prep = tries.prepare(src, None, tmp_path / "out" / "p")
    if prep["ok"]:
        assert prep["counts"]["read"] == table.num_rows
        if flagged is not None:
            assert prep["counts"]["rejected"] == len(flagged)
        for shard in (tmp_path / "out" / "p").glob("*.jsonl"):
            strict_lines(shard)
    rows = ("--rows", src)
    out = tmp_path / "r.jsonl"
    as_input = run(["rescore", src, "-o", out, "--format", "json", "-q"])
    check(as_input, (OK, FAILURE))
    if out.exists():
        assert len(strict_lines(out)) == table.num_rows
    joined = run(["rescore", build.ROLLOUTS, *rows, "-o", tmp_path / "j.jsonl", "--format", "json", "-q"])
    check(joined, (OK, FAILURE))
    if (tmp_path / "j.jsonl").exists():
        strict_lines(tmp_path / "j.jsonl")
