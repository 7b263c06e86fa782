"""The rows the engine counts as it cuts a JSONL file (io.newlines.RowCount, a job's `count_rows`): each chunk's
`rows_before` is the number of rows read_jsonl yields before the chunk, whatever the chunk size, the blank and
whitespace-only lines, a byte order mark or lines longer than a chunk. convert numbers its rows by it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mcqa_prep import parallel
from mcqa_prep.io.readers import read_jsonl

BOM = b"\xef\xbb\xbf"
# what a line is made of: JSON's whitespace (blank), other control bytes (not blank: a finding), values, a BOM
# and half of one (a row's bytes anywhere but at the start of the file), and a long value
PIECES = [
    b"",
    b" ",
    b"\t",
    b"\r",
    b"\v",
    b"\f",
    b"{}",
    b' {"a": 1} ',
    b"x",
    b" \r",
    BOM,
    BOM[:2],
    b"[1]" * 30,
]


def _reader_rows(data: bytes) -> int:
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return sum(1 for _ in read_jsonl(lines, "f", None))


def _check(path: Path, data: bytes, size: int) -> None:
    path.write_bytes(data)
    seen = 0
    cut = list(parallel.chunks(path, None, 3, size, count_rows=True))
    for c in cut:
        assert c.rows_before == seen, (data, size, c.seq)
        seen += sum(1 for _ in c.rows())
    assert seen == _reader_rows(data)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n\n\n",
        BOM + b"\n{}\n",  # a BOM and nothing else on the first line: blank
        BOM + b"  \r\n{}\n{}",
        BOM[:2] + b"\n{}\n",  # half a BOM is a row's byte (a finding, not a blank line)
        b"{}\n" + BOM + b"\n",  # a BOM past the first line is a row's byte too
        b"\v\n\f\n \n{}",  # vertical tab and form feed are not JSON's whitespace
        b'{"a": "' + b"y" * 40 + b'"}\n\n  \n{}\n',  # a line longer than a chunk
    ],
)
@pytest.mark.parametrize("size", [1, 2, 3, 4, 7, 64])
def test_rows_before_each_chunk_are_the_rows_the_reader_yields_before_it(tmp_path, data, size):
    _check(tmp_path / "f.jsonl", data, size)


def test_rows_before_hold_on_random_files(tmp_path):
    rnd = random.Random(7)
    for _ in range(400):
        lines = [
            b"".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 3))) for _ in range(rnd.randint(0, 12))
        ]
        data = (
            (BOM if rnd.random() < 0.3 else b"") + b"\n".join(lines) + (b"\n" if rnd.random() < 0.5 else b"")
        )
        _check(tmp_path / "f.jsonl", data, rnd.choice([1, 2, 3, 5, 16, 64]))


def test_a_job_that_does_not_ask_gets_no_counts(tmp_path):
    p = tmp_path / "f.jsonl"
    p.write_bytes(b"{}\n" * 50)
    cut = list(parallel.chunks(p, None, 0, 16))
    assert len(cut) > 1 and {c.rows_before for c in cut} == {None}
