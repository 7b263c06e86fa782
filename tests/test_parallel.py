"""Workers: chunks carry exact addresses, and N workers write byte for byte what one writes."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mcqa_prep import parallel
from mcqa_prep.errors import UsageError
from mcqa_prep.io.readers import iter_file
from mcqa_prep.policy import GradingPolicy
from mcqa_prep.rescore import rescore


def _request(i: int, rng: random.Random) -> dict:
    letters = "ABCD"
    gold = letters[i % 4]
    said = rng.choice(letters)
    text = rng.choice([f"Reasoning... \\boxed{{{said}}}", f"Answer: {said}", "no idea", ""])
    return {
        "uuid": f"q{i}",
        "responses_create_params": {
            "input": [{"role": "user", "content": f"Question {i}?\nA: a\nB: b\nC: c\nD: d"}]
        },
        "options": [{L: L.lower()} for L in letters],
        "expected_answer": gold,
        "response": {"output": [{"type": "message", "content": [{"type": "output_text", "text": text}]}]},
        "reward": float(rng.random() < 0.5),
    }


def _write_requests(path, n: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        lines.append(json.dumps(_request(i, rng)))
        if i % 97 == 13:
            lines.append("")  # blank lines are not rows
        if i % 131 == 5:
            lines.append('{"broken": ')  # a bad line is an invalid_row, reading goes on
    data = ("\n".join(lines) + "\n").encode()
    cut = data.index(b"\n", len(data) // 2) + 1
    path.write_bytes(data[:cut] + b"\xff\xfe\n" + data[cut:])  # one undecodable line in the middle


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(parallel, "JSONL_CHUNK_BYTES", 4096)
    monkeypatch.setattr(parallel, "PARQUET_CHUNK_ROWS", 7)


def test_jsonl_chunks_give_the_rows_iter_file_gives(tmp_path, small_chunks):
    p = tmp_path / "r.jsonl"
    _write_requests(p, 300)
    whole = [(r.line, r.data, r.error) for r in iter_file(p)]
    chunked = [(r.line, r.data, r.error) for c in parallel.chunks(p, None) for r in c.rows()]
    assert len(list(parallel.chunks(p, None))) > 10
    assert chunked == whole


def test_parquet_chunks_give_the_rows_iter_file_gives(tmp_path, small_chunks):
    rows = [
        {"uuid": f"u{i}", "options": [{"A": "x", "B": None}, {"A": None, "B": f"y{i}"}]} for i in range(50)
    ]
    p = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist(rows), p)
    whole = [(r.line, r.data, r.hint) for r in iter_file(p)]
    chunked = [(r.line, r.data, r.hint) for c in parallel.chunks(p, "train") for r in c.rows()]
    assert chunked == whole and whole[0][1]["options"] == [{"A": "x"}, {"B": "y0"}]


@pytest.mark.parametrize("workers", [2, 3])
def test_rescore_output_is_byte_identical_for_any_worker_count(tmp_path, small_chunks, workers):
    src = tmp_path / "requests.jsonl"
    _write_requests(src, 400)
    one, many = tmp_path / "one.jsonl", tmp_path / "many.jsonl"
    r1 = rescore(src, one, GradingPolicy(), workers=1)
    rn = rescore(src, many, GradingPolicy(), workers=workers)
    assert one.read_bytes() == many.read_bytes()
    assert r1.to_dict() | {"output": None} == rn.to_dict() | {"output": None}
    assert r1.rows == 400 + 4 + 1 and r1.invalid.count == 4 + 1  # 4 broken lines and the undecodable one


def test_worker_count_must_be_positive(tmp_path):
    with pytest.raises(UsageError):
        parallel.check_workers(0)
    assert parallel.check_workers(None) >= 1
