"""convert on a source none of whose lines is readable: each line is still read, counted and rejected at its
file and line (read = written + rejected), alone or beside good files, in text and JSON output.

convert looked for the columns first and, finding no readable row, left the source without reading its
rows: `no row could be converted (0 read, 0 rejected: no rows)`, and in a directory the bad file's lines
vanished from the counts of a run that exited 0 (found by the hostile-input audit)."""

from __future__ import annotations

import io
import json

import pytest

try:
    from .convert_layouts import read_jsonl
except ImportError:
    from convert_layouts import read_jsonl

MAP = ["--map", "question=q", "--map", "choices=c", "--map", "answer=a"]
ROW = {"q": "Which is red?", "c": ["apple", "sky", "grass"], "a": 0}


def _parquet_bytes() -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    rows = [{**ROW, "q": f"Which is red, case {i}?"} for i in range(40)]
    pq.write_table(pa.Table.from_pylist(rows), buf)
    return buf.getvalue()


def _validate_malformed_lines(cli, src) -> list[int]:
    """The lines `validate` calls malformed: convert must reject exactly these."""
    doc = json.loads(cli("validate", src, "--format", "json", "-q").stdout)
    return [f["line"] for f in doc["findings"] if f["rule"] == "malformed_row"]


UNREADABLE = {
    # the audit's file: not JSON, not UTF-8, not an object
    "garbage.jsonl": b"garbage\n\xff\n[]\n",
    # rows separated by a lone CR only: one line, not one JSON value
    "only-cr.jsonl": (json.dumps(ROW) + "\r" + json.dumps(ROW) + "\r").encode(),
    # a one-line file whose object is cut off, and a first line cut off before a non-object
    "cut-off.jsonl": json.dumps(ROW).encode()[:30],
    "cut-off-then-array.jsonl": json.dumps(ROW).encode()[:30] + b"\n[1]\n",
    # a Parquet file named .jsonl: read as lines of bytes
    "parquet-named.jsonl": None,
}


@pytest.mark.parametrize("name", sorted(UNREADABLE))
def test_every_unreadable_line_is_counted_and_reported(tmp_path, cli, name):
    data = UNREADABLE[name]
    src = tmp_path / name
    src.write_bytes(_parquet_bytes() if data is None else data)
    lines = _validate_malformed_lines(cli, src)
    assert lines, "the case must hold malformed lines"
    n = len(lines)
    out = tmp_path / "o.jsonl"

    res = cli("convert", src, "-o", out, *MAP)
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output
    assert f"no row could be converted ({n} read, 0 written, {n} rejected: malformed_row {n})" in res.output
    shown = [ln for ln in res.output.splitlines() if ": rejected: " in ln]
    assert shown == [ln for ln in shown if ln.endswith("[malformed_row]")]
    assert [ln.split(": rejected: ")[0] for ln in shown] == [f"{src}:{k}" for k in lines[:20]]
    assert "check that each SOURCE holds what its name says" in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no output, no rejects file

    res = cli("convert", src, "-o", out, *MAP, "--format", "json")
    assert res.exit_code == 1
    err = json.loads(res.stdout)["error"]
    assert err["reason"] == "nothing_readable" and err["exit_code"] == 1
    assert err["counts"] == {
        "read": n,
        "written": 0,
        "rejected": n,
        "rejected_by_reason": {"malformed_row": n},
    }
    assert [(s["read"], s["written"], s["rejected"]) for s in err["sources"]] == [(n, 0, n)]
    assert [(r["source"]["path"], r["source"]["line"]) for r in err["rejects_shown"]] == [
        (str(src), k) for k in lines[:20]
    ]


def test_a_json_document_that_is_not_an_array_of_objects(tmp_path, cli):
    """The `.json` reader (one array, loaded whole) takes the same path: a broken document is one malformed
    row, an array of non-objects one per element."""
    broken = tmp_path / "broken.json"
    broken.write_text('[{"q": "cut off')
    res = cli("convert", broken, "-o", tmp_path / "o.jsonl", *MAP, "--format", "json")
    err = json.loads(res.stdout)["error"]
    assert res.exit_code == 1 and err["counts"]["read"] == err["counts"]["rejected"] == 1, err
    scalars = tmp_path / "scalars.json"
    scalars.write_text("[1, 2, 3]")
    res = cli("convert", scalars, "-o", tmp_path / "o.jsonl", *MAP, "--format", "json")
    err = json.loads(res.stdout)["error"]
    assert res.exit_code == 1 and err["counts"]["rejected_by_reason"] == {"malformed_row": 3}, err
    assert [r["source"]["line"] for r in err["rejects_shown"]] == [1, 2, 3]


def test_an_unreadable_file_in_a_directory_is_counted_and_in_the_rejects_file(tmp_path, cli):
    """The worse shape of the bug: beside a good file, the bad file's lines were dropped from a run that
    exited 0, in no count and no rejects file."""
    d = tmp_path / "data"
    d.mkdir()
    (d / "a.jsonl").write_bytes(b"garbage\n\xff\n[]\n")
    (d / "b.jsonl").write_text(
        json.dumps(ROW) + "\n" + json.dumps({**ROW, "q": "Which is blue?", "a": 1}) + "\n"
    )
    out = tmp_path / "o.jsonl"
    res = cli("convert", d, "-o", out, *MAP)
    assert res.exit_code == 0, res.output
    for k in (1, 2, 3):
        assert f"{d / 'a.jsonl'}:{k}: rejected: " in res.output
    assert "5 rows read: 2 written, 3 rejected (malformed_row 3)" in res.output
    assert "file a.jsonl, split train: no readable row, 3 read, 0 written, 3 rejected" in res.output
    assert "file b.jsonl, split train: preset (--map), 2 read, 2 written, 0 rejected" in res.output
    rejects = read_jsonl(tmp_path / "o.rejects.jsonl")
    assert [(r["source"]["file"], r["source"]["line"], r["reason"]) for r in rejects] == [
        ("a.jsonl", 1, "malformed_row"),
        ("a.jsonl", 2, "malformed_row"),
        ("a.jsonl", 3, "malformed_row"),
    ]
    assert len(read_jsonl(out)) == 2

    res = cli("convert", d, "-o", out, *MAP, "--format", "json")
    doc = json.loads(res.stdout)
    assert doc["counts"] == {
        "read": 5,
        "written": 2,
        "rejected": 3,
        "rejected_by_reason": {"malformed_row": 3},
    }
    assert [(s["file"], s["read"], s["rejected"]) for s in doc["sources"]] == [
        ("a.jsonl", 3, 3),
        ("b.jsonl", 2, 0),
    ]


def test_an_empty_source_is_no_rows_not_a_mapping_mistake(tmp_path, cli):
    src = tmp_path / "empty.jsonl"
    src.write_text("\n\n")
    res = cli("convert", src, "-o", tmp_path / "o.jsonl", *MAP, "--format", "json")
    err = json.loads(res.stdout)["error"]
    assert res.exit_code == 1 and err["reason"] == "no_rows", err
    assert err["counts"]["read"] == 0


def test_rows_that_appear_between_the_two_reads_are_an_input_change(tmp_path, cli, monkeypatch):
    """No row held data when the columns were looked for, yet one does when the rows are read: the file
    changed in between; a failure (exit 1), not a row converted under no mapping."""
    from mcqa_prep.convert import sources

    src = tmp_path / "s.jsonl"
    src.write_text(json.dumps(ROW) + "\n")
    monkeypatch.setattr(sources.Stream, "columns", lambda self: None)
    res = cli("convert", src, "-o", tmp_path / "o.jsonl", *MAP, "--format", "json")
    err = json.loads(res.stdout)["error"]
    assert res.exit_code == 1 and err["reason"] == "input_changed", err
    assert not (tmp_path / "o.jsonl").exists()
