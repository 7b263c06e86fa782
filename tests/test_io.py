"""Row readers: every row comes out with its address; Parquet options arrive in the canonical shape."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mcqa_prep.errors import InputError, UsageError
from mcqa_prep.io import readers
from mcqa_prep.io.paths import split_of
from mcqa_prep.io.readers import iter_rows, read_jsonl


def _null_filled(pairs, letters="ABCDEFGHIJ"):
    return [{L: (t if L == k else None) for L in letters} for k, t in pairs]


@pytest.mark.parametrize("batch_rows", [1, 3, 2048])
def test_parquet_options_are_normalised_column_wise_and_odd_elements_kept_as_stored(
    tmp_path, monkeypatch, batch_rows
):
    monkeypatch.setattr(readers, "PARQUET_BATCH_ROWS", batch_rows)
    rows = [
        {"options": _null_filled([("A", "Argon"), ("B", "Neon")]), "uuid": "r0"},
        {"options": _null_filled([("A", "x"), ("B", "y"), ("J", "z")]), "uuid": "r1"},
        {
            "options": [
                {L: None for L in "ABCDEFGHIJ"},
                {**{L: None for L in "ABCDEFGHIJ"}, "C": "c", "D": "d"},
            ],
            "uuid": "r2",
        },
        {"options": None, "uuid": "r3"},
        {"options": [], "uuid": "r4"},
        {"options": _null_filled([("Q", "quark")], "QZ"), "uuid": "r5"},
    ]
    path = tmp_path / "validation-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    got = list(iter_rows([path]))
    assert [(r.line, r.index, r.split, r.data["uuid"]) for r in got] == [
        (i + 1, i, "validation", f"r{i}") for i in range(6)
    ]
    opts = [r.data["options"] for r in got]
    assert opts[0] == [{"A": "Argon"}, {"B": "Neon"}]
    assert opts[1] == [{"A": "x"}, {"B": "y"}, {"J": "z"}]
    # an all-null element and a two-text element stay as stored (with nulls) so validate can explain them
    assert set(opts[2][0]) >= set("ABCDEFGHIJ") and set(opts[2][0].values()) == {None}
    assert opts[2][1]["C"] == "c" and opts[2][1]["D"] == "d" and opts[2][1]["A"] is None
    assert opts[3] is None and opts[4] == []
    assert opts[5] == [{"Q": "quark"}]


def test_jsonl_bad_lines_keep_their_line_numbers(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"a": 1}\n\n{oops\n[1]\n{"b": 2}\n', encoding="utf-8")
    got = list(iter_rows([p]))
    assert [(r.line, r.index, r.data, r.error is not None) for r in got] == [
        (1, 0, {"a": 1}, False),
        (3, 1, None, True),
        (4, 2, None, True),
        (5, 3, {"b": 2}, False),
    ]
    assert "not valid JSON" in got[1].error and "JSON object" in got[2].error


def test_directories_are_read_recursively_in_order_skipping_hidden(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / ".cache").mkdir()
    (tmp_path / "b" / "train.jsonl").write_text('{"i": 2}\n')
    (tmp_path / "a.jsonl").write_text('{"i": 1}\n')
    (tmp_path / ".cache" / "x.jsonl").write_text('{"i": 9}\n')
    (tmp_path / "notes.txt").write_text("ignored")
    assert [r.data["i"] for r in iter_rows([tmp_path])] == [1, 2]


def test_missing_and_empty_inputs_are_clear_errors(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        list(iter_rows([tmp_path / "nope.jsonl"]))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no .jsonl or .parquet files"):
        list(iter_rows([tmp_path / "empty"]))


@pytest.mark.parametrize(
    "name,split",
    [
        ("data/train-00000-of-00004.parquet", "train"),
        ("validation-00000-of-00001.parquet", "validation"),
        ("my_val.jsonl", "validation"),
        ("test.jsonl", "test"),
        ("example.jsonl", "train"),
        ("trainers.jsonl", "train"),
        # one rule whether or not a pull lock sits beside the file (these three used to disagree)
        ("test/part-0.parquet", "test"),
        ("eval.jsonl", "test"),
        ("dev.jsonl", "validation"),
        ("data/dev/part-00.jsonl", "validation"),
        ("Validation.JSONL".lower(), "validation"),
        ("data/unsupervised-00000-of-00001.parquet", "unsupervised"),
        ("unsupervised-00000-of-00001.parquet", "train"),  # sharded names count under data/ only
    ],
)
def test_split_from_path(name, split):
    assert split_of(name) == split


def test_lock_and_reader_share_the_split_rule():
    from mcqa_prep.pull import lock

    for name in ("test/part-0.parquet", "eval.jsonl", "dev.jsonl", "data/train-00000-of-00002.parquet"):
        assert lock.split_of(name) == split_of(name)


def test_an_invalid_byte_costs_one_line_not_the_rest_of_the_file(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"a": 1}\n{"b": "\xff\xfe"}\n{"c": 3}\n{"d": 4}\n')
    got = list(iter_rows([p]))
    assert [(r.line, r.index, r.data) for r in got] == [
        (1, 0, {"a": 1}),
        (2, 1, None),
        (3, 2, {"c": 3}),
        (4, 3, {"d": 4}),
    ]
    assert "UTF-8" in got[1].error and "0xff" in got[1].error


def test_stdin_reads_like_a_file(tmp_path):
    import io

    data = b'{"a": 1}\n\xff\n{"c": 3}\n'
    got = list(read_jsonl(io.BytesIO(data), "<stdin>", "train"))
    assert [(r.line, r.data is None) for r in got] == [(1, False), (2, True), (3, False)]


def test_deep_nesting_and_nan_are_findings_not_crashes(tmp_path):
    p = tmp_path / "x.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    p.write_text(
        f'{{"a": {deep}}}\n{{"r": NaN, "m": {{"x": [1, Infinity]}}}}\n{{"big": 123456789012345678901234567890}}\n'
    )
    got = list(iter_rows([p]))
    assert got[0].data is None and "nested too deeply" in got[0].error
    assert got[1].data is not None and got[1].nonfinite == ("$.r", "$.m.x[1]")
    assert got[2].data == {"big": 123456789012345678901234567890}  # exact, not a float
    assert got[1].error is None and got[2].nonfinite == ()


def test_byte_order_mark_on_the_first_line_is_skipped(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'\xef\xbb\xbf{"a": 1}\n')
    assert [r.data for r in iter_rows([p])] == [{"a": 1}]


def test_parquet_template_metadata_nulls_filled_by_arrow_are_dropped(tmp_path):
    rows = [
        {"uuid": "a", "template_metadata": {"template_id": "t1", "output_regex": "Answer: ([A-D])"}},
        {"uuid": "b", "template_metadata": {"template_id": "t2"}},
        {"uuid": "c", "template_metadata": None},
    ]
    path = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    got = [r.data["template_metadata"] for r in iter_rows([path])]
    assert got == [{"template_id": "t1", "output_regex": "Answer: ([A-D])"}, {"template_id": "t2"}, None]


def test_a_row_is_only_what_every_writer_can_write_back(tmp_path):
    """Deeper than orjson writes, or a lone surrogate (Python's json reads both): a finding on its line, never
    a crash later when the row is written (found by tests/hostile)."""
    from mcqa_prep.io.readers import MAX_DEPTH

    def nested(levels):  # a row (1 level) holding a list nested levels - 1 deep
        return "[" * (levels - 1) + "]" * (levels - 1)

    p = tmp_path / "x.jsonl"
    p.write_text(
        f'{{"ok": {nested(MAX_DEPTH)}}}\n{{"deep": {nested(MAX_DEPTH + 1)}}}\n'
        '{"s": "\\ud800"}\n{"k\\udc00": 1}\n{"pair": "\\ud83d\\ude00", "n": NaN}\n{"last": 1}\n'
    )
    got = list(iter_rows([p]))
    assert [r.data is not None for r in got] == [True, False, False, False, True, True]
    assert "nested too deeply" in got[1].error
    assert "lone surrogate" in got[2].error and "$.s" in got[2].error and "\\ud800" in got[2].error
    assert "lone surrogate" in got[3].error
    assert got[4].data["pair"] == "\U0001f600" and got[4].nonfinite == ("$.n",)


def test_parquet_rows_list_nan_and_values_json_cannot_hold(tmp_path):
    """NaN/Infinity in floating columns (nested too) are listed like JSONL's, nulls are not NaN; bytes and
    decimals are listed as foreign (found by tests/hostile: they passed validate, then failed to write)."""
    import decimal

    t = pa.table(
        {
            "score": pa.array([0.5, float("nan"), None, float("inf")]),
            "m": pa.array([{"w": [1.0]}, {"w": [1.0]}, {"w": [float("-inf")]}, {"w": None}]),
            "blob": pa.array([None, b"\x00", None, None], pa.binary()),
            "price": pa.array([decimal.Decimal("1.5"), None, None, None], pa.decimal128(4, 2)),
        }
    )
    path = tmp_path / "x.parquet"
    pq.write_table(t, path)
    got = [(r.nonfinite, r.foreign) for r in iter_rows([path])]
    assert got == [
        ((), ("$.price",)),
        (("$.score",), ("$.blob",)),
        (("$.m.w[0]",), ()),
        (("$.score",), ()),
    ]


def test_a_pipe_is_an_input_where_it_is_read_once(tmp_path):
    """`<(zcat rows.jsonl.gz)` was taken for a missing file; commands that read an input twice (hash, then
    rows) refuse it by name instead of reporting an empty input (found by tests/hostile)."""
    import os

    from mcqa_prep.errors import UsageError
    from mcqa_prep.io.paths import expand_inputs, require_regular

    fifo = tmp_path / "rows.jsonl"
    os.mkfifo(fifo)
    assert [f.path for f in expand_inputs([fifo])] == [fifo]
    with pytest.raises(UsageError, match="not a regular file .* hashes") as err:
        require_regular(fifo, "it hashes")
    assert err.value.reason == "input_not_regular"
    require_regular(tmp_path, "a directory is fine")


def test_parquet_rows_without_nan_are_not_walked(tmp_path, monkeypatch):
    """Only a batch holding a NaN (or bytes) is walked in Python: a struct mixing strings and finite floats
    (template_metadata with a weight) is cleared column-wise."""
    t = pa.table({"tm": pa.array([{"id": "t", "weight": 0.1}, None, {"id": "u", "weight": None}])})
    path = tmp_path / "x.parquet"
    pq.write_table(t, path)

    def walked(*a, **k):
        raise AssertionError("walked a batch without NaN")

    monkeypatch.setattr(readers, "odd_paths", walked)
    assert [r.nonfinite for r in iter_rows([path])] == [(), (), ()]


def test_an_output_that_is_a_device_a_pipe_or_a_link_is_written_not_replaced(tmp_path):
    """Renaming the temporary file over `-o /dev/full` replaced the device with a regular file and exited 0
    (found by an audit; as root, `-o /dev/null` would have replaced /dev/null for the whole machine)."""
    import os
    import stat
    import threading

    from mcqa_prep.errors import OutputError
    from mcqa_prep.io.writers import AtomicFile

    if os.path.exists("/dev/full"):
        with pytest.raises(OutputError) as err:
            with AtomicFile("/dev/full", "wb") as fh:
                fh.write(b"x" * 100_000)
        assert err.value.reason == "output_disk_full"
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    with AtomicFile("/dev/null", "wb") as fh:
        fh.write(b"row\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    with AtomicFile(fifo, "wb") as fh:
        fh.write(b"a\nb\n")
    reader.join()
    assert got == [b"a\nb\n"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)

    real = tmp_path / "real.jsonl"
    real.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real.name)
    with AtomicFile(link, "w") as fh:
        fh.write("new\n")
    assert link.is_symlink() and real.read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.jsonl", "out.fifo", "real.jsonl"]


def test_a_line_of_form_feeds_or_vertical_tabs_is_a_malformed_row_not_a_blank_one(tmp_path):
    """bytes.strip() took \\v and \\f for blank: such lines vanished without a finding (found by an audit).
    JSON's whitespace is space, tab, CR and LF only."""
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"a": 1}\n\x0b\n\x0c\x0c\n \t\r\n\x1c\n{"b": 2}\n')
    got = [(r.line, r.data is not None) for r in iter_rows([p])]
    assert got == [(1, True), (2, False), (3, False), (5, False), (6, True)]


def test_data_files_are_known_by_their_suffix_in_any_case_and_compressed_ones_are_not_skipped(tmp_path):
    """A directory's `TRAIN.JSONL` was skipped and a `.PARQUET` file given by name read as JSONL (23
    malformed rows); a `.jsonl.gz` beside the other files was left out without a word (found by an audit)."""
    d = tmp_path / "d"
    d.mkdir()
    (d / "A.JSONL").write_text('{"uuid": "a"}\n')
    pq.write_table(pa.Table.from_pylist([{"uuid": "b"}]), d / "b.Parquet")
    (d / "notes.txt").write_text("not data\n")
    assert [r.data["uuid"] for r in iter_rows([d])] == ["a", "b"]
    upper = tmp_path / "X.PARQUET"
    pq.write_table(pa.Table.from_pylist([{"uuid": "x"}]), upper)
    assert [r.data["uuid"] for r in iter_rows([upper])] == ["x"]
    (d / "more.jsonl.gz").write_bytes(b"\x1f\x8b")
    with pytest.raises(InputError, match="compressed data files .*more.jsonl.gz") as err:
        list(iter_rows([d]))
    assert err.value.reason == "compressed_input"


def test_a_document_is_read_with_a_bound(tmp_path, monkeypatch):
    """--policy pointed at an endless device (/dev/zero) read until the machine ran out of memory (found by an
    audit): a document (policy, manifest, lock) is read up to MAX_DOCUMENT_BYTES, a larger one refused."""
    from mcqa_prep.io.readers import read_document

    monkeypatch.setattr(readers, "MAX_DOCUMENT_BYTES", 1000)
    small, big = tmp_path / "small.json", tmp_path / "big.json"
    small.write_text('{"a": "' + "x" * 900 + '"}')
    big.write_text('{"a": "' + "x" * 1000 + '"}')
    assert read_document(small)[0]["a"] == "x" * 900
    assert read_document(big) == (None, "larger than 1,000 bytes: not a document this command reads")
    if os.path.exists("/dev/zero"):
        assert read_document("/dev/zero")[0] is None


def test_only_a_regular_file_is_hashed(tmp_path):
    """A FIFO among a pulled directory's files hung `pull --offline` and `prepare`, waiting for a writer
    (found by an audit): hashing refuses it at once."""
    from mcqa_prep.io.hashing import hash_file

    fifo = tmp_path / "train.parquet"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file") as err:
        hash_file(fifo)
    assert err.value.reason == "input_not_regular"
    (tmp_path / "ok.jsonl").write_bytes(b"{}\n")
    assert hash_file(tmp_path / "ok.jsonl")[1] == 3


def test_one_json_safe_conversion():
    """jsonsafe.json_safe is every writer's answer to a value JSON has no form for (error details, convert's
    source fields, rescored rows, the one JSON document): NaN as null, exact integers, ISO dates, text keys,
    and the rest dropped (null) or kept as text (as_text: base64 bytes, decimal digits, an object's to_dict)."""
    import datetime
    import decimal
    import json

    from mcqa_prep.errors import Difference
    from mcqa_prep.jsonsafe import as_text, json_safe

    value = {
        "n": 2**70, "x": float("-inf"), "t": (1, [float("nan")]), 3: datetime.datetime(2024, 1, 2, 3, 4, 5),
        "b": b"\x00\xff", "d": decimal.Decimal("1.50"), "dt": datetime.timedelta(seconds=1),
        "diff": Difference("f", 1, float("nan")), "s": frozenset({"a"}),
    }  # fmt: skip
    assert json_safe(value) == {
        "n": 2**70, "x": None, "t": [1, [None]], "3": "2024-01-02T03:04:05",
        "b": None, "d": None, "dt": None, "diff": None, "s": ["a"],
    }  # fmt: skip
    kept = json_safe(value, as_text)
    assert (kept["b"], kept["d"], kept["dt"]) == ("AP8=", "1.50", "0:00:01")
    assert kept["diff"] == {"field": "f", "recorded": 1, "requested": None}
    assert json.loads(json.dumps(kept, allow_nan=False)) == kept


def test_an_output_under_a_file_says_the_file_is_not_a_directory(tmp_path):
    """Making the parent of an output where a file of that name stands fails with EEXIST ("File exists"),
    which names neither the file nor the fix; the error says which path is a file."""
    from mcqa_prep.io import AtomicFile
    from mcqa_prep.io.writers import output_error

    (tmp_path / "plain").write_text("x")
    target = tmp_path / "plain" / "out.jsonl"
    try:
        os.makedirs(target.parent)
    except OSError as exc:
        err = output_error(exc, target)
    assert str(err) == f"{target}: cannot write: {tmp_path / 'plain'} is a file, not a directory"
    assert err.reason == "output_missing_directory"
    with pytest.raises(Exception) as info:
        with AtomicFile(target) as fh:
            fh.write(b"{}\n")
    assert "is a file, not a directory" in str(info.value) or "Not a directory" in str(info.value)
    assert not target.exists()
