"""Workers: chunks carry exact addresses, and N workers write byte for byte what one writes."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import rescore_request

from mcqa_prep import parallel
from mcqa_prep.errors import UsageError
from mcqa_prep.io.newlines import count_newlines
from mcqa_prep.io.readers import iter_file
from mcqa_prep.records import Finding
from mcqa_prep.rescore.run import rescore


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


@pytest.mark.parametrize("row_group_size", [None, 9])
def test_parquet_chunks_give_the_rows_iter_file_gives(tmp_path, small_chunks, monkeypatch, row_group_size):
    """Large row groups are cut into record batches here; small ones are read by the worker itself."""
    monkeypatch.setattr(parallel, "ROW_GROUP_DIRECT_ROWS", 10)
    rows = [
        {"uuid": f"u{i}", "options": [{"A": "x", "B": None}, {"A": None, "B": f"y{i}"}]} for i in range(50)
    ]
    p = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist(rows), p, row_group_size=row_group_size)
    whole = [(r.line, r.data, r.hint) for r in iter_file(p)]
    cs = list(parallel.chunks(p, "train"))
    chunked = [(r.line, r.data, r.hint) for c in cs for r in c.rows()]
    assert chunked == whole and whole[0][1]["options"] == [{"A": "x"}, {"B": "y0"}]
    direct = [c.row_group is not None for c in cs]
    assert all(direct) if row_group_size else not any(direct)
    assert cs[-1].row_at(50).data["uuid"] == "u49"


def test_rows_of_a_row_group_chunk_read_again_read_the_group_once(tmp_path, monkeypatch):
    """The parent reads a chunk's rows again to write their rejects (prepare --on-invalid reject): a row group
    chunk reads its group once for all of them, not once per row (a row group per reject made a dataset with
    many rejects take minutes)."""
    monkeypatch.setattr(parallel, "ROW_GROUP_DIRECT_ROWS", 10)
    rows = [{"uuid": f"u{i}", "n": i} for i in range(24)]
    p = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist(rows), p, row_group_size=8)
    reads = []
    real = parallel.Chunk._row_group

    def counted(self):
        reads.append(self.row_group)
        return real(self)

    monkeypatch.setattr(parallel.Chunk, "_row_group", counted)
    cs = list(parallel.chunks(p, "train"))
    assert [c.row_group for c in cs] == [0, 1, 2]
    got = [c.row_at(line).data["uuid"] for c in cs for line in range(c.first_line, c.first_line + 8)]
    assert got == [r["uuid"] for r in rows] and reads == [0, 1, 2]
    # what crosses to a worker is the chunk's address, not its rows
    assert cs[0].__getstate__()["_group"] is None


def _spill_probe(chunk):
    """What a worker saw of a chunk: its rows, and whether its batch came as a file (not pickled)."""
    as_file = chunk.batch is None and chunk.spill is not None and os.path.exists(chunk.spill)
    return [(r.line, r.data) for r in chunk.rows()], as_file


def test_large_row_group_batches_reach_the_workers_as_files_and_none_is_left(tmp_path, monkeypatch):
    """A large row group's batches are decoded here, written once as Arrow IPC files the workers map (no
    pickled batch crosses the pipe), with the same chunks and rows as one worker; the files are gone after."""
    import tempfile

    monkeypatch.setattr(parallel, "ROW_GROUP_DIRECT_ROWS", 10)
    monkeypatch.setattr(parallel, "PARQUET_CHUNK_ROWS", 7)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    rows = [{"uuid": f"u{i}", "options": [{"A": "x", "B": None}, {"B": f"y{i}"}]} for i in range(60)]
    p = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist(rows), p)
    one = [(c.seq, res[0]) for c, res in parallel.ordered_map(_spill_probe, parallel.chunks(p, "t"), 1)]
    two = list(parallel.ordered_map(_spill_probe, parallel.chunks(p, "t"), 2))
    assert [(c.seq, res[0]) for c, res in two] == one and len(one) == 9
    assert all(res[1] for _, res in two)  # the worker got a file, and read it before it was removed
    assert [c.row_at(c.first_line + 1).data["uuid"] for c, _ in two][:2] == ["u1", "u8"]  # the parent's copy
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_batch_that_cannot_be_written_travels_pickled(tmp_path, monkeypatch):
    """No temporary directory (TMPDIR not writable): the batches are pickled to the workers, as before."""
    import tempfile

    monkeypatch.setattr(parallel, "ROW_GROUP_DIRECT_ROWS", 10)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    p = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist([{"uuid": f"u{i}"} for i in range(5000)]), p)
    got = list(parallel.ordered_map(_spill_probe, parallel.chunks(p, "t"), 2))
    assert [r[0][1]["uuid"] for _, (rs, _) in got for r in [rs]] == ["u0", "u2048", "u4096"]
    assert not any(spilled for _, (_, spilled) in got)


@pytest.mark.parametrize("workers", [2, 3])
def test_rescore_output_is_byte_identical_for_any_worker_count(tmp_path, small_chunks, workers):
    src = tmp_path / "requests.jsonl"
    _write_requests(src, 400)
    one, many = tmp_path / "one.jsonl", tmp_path / "many.jsonl"
    r1 = rescore(rescore_request(src, one, workers=1))
    rn = rescore(rescore_request(src, many, workers=workers))
    assert one.read_bytes() == many.read_bytes()
    assert r1.to_dict() | {"output": None} == rn.to_dict() | {"output": None}
    assert r1.rows == 400 + 4 + 1 and r1.invalid.count == 4 + 1  # 4 broken lines and the undecodable one


def test_worker_count_must_be_positive(tmp_path):
    with pytest.raises(UsageError):
        parallel.check_workers(0)
    assert parallel.check_workers(None) >= 1


def _dataset(tmp_path, n: int = 300):
    """JSONL and Parquet rows with duplicates across chunks, invalid rows and a biased gold."""
    import sys

    sys.path.insert(0, str(tmp_path.parent))
    from prep_helpers import make_row

    rows = [make_row(i, 4 + i % 7, template=i % 3 == 0) for i in range(n)]
    rows += [rows[5], rows[250]]  # repeated rows, far from their first occurrence
    rows[17]["expected_answer"] = "Z"  # not an option
    rows[40]["options"] = "nope"
    lines = [json.dumps(r) for r in rows] + ["{broken"]
    jl = tmp_path / "train.jsonl"
    jl.write_text("\n".join(lines) + "\n")
    pqf = tmp_path / "validation.parquet"
    pq.write_table(pa.Table.from_pylist([make_row(i, 10) for i in range(1000, 1120)]), pqf)
    return jl, pqf


def test_validate_report_is_identical_for_any_worker_count(tmp_path, small_chunks):
    from mcqa_prep.validate import validate_paths

    jl, pqf = _dataset(tmp_path)
    one = validate_paths([jl, pqf], max_findings=0, workers=1).to_dict()
    two = validate_paths([jl, pqf], max_findings=0, workers=2).to_dict()
    assert one == two
    rules = one["summary"]["findings_by_rule"]
    assert rules["duplicate_row"] >= 2 and rules["malformed_row"] == 1
    rows = [f["row"] for f in one["findings"] if f["rule"] == "duplicate_row" and f["file"] == str(jl)]
    assert rows == [300, 301]  # 0-based indexes across chunks, fixed up by the parent


@pytest.mark.parametrize("on_invalid", ["reject", "fail"])
def test_prepare_output_is_byte_identical_for_any_worker_count(tmp_path, small_chunks, on_invalid):
    from mcqa_prep.errors import InvalidRows
    from mcqa_prep.prepare.run import prepare

    jl, pqf = _dataset(tmp_path)
    outs = {}
    for w in (1, 2):
        out = tmp_path / f"out{w}"
        try:
            prepare([jl, pqf], out, on_invalid=on_invalid, shard_rows=50, workers=w)
        except InvalidRows as exc:
            outs[w] = (exc.counts, [f.to_dict() for f in exc.findings])
            assert not out.exists()
            continue
        files = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.name != "manifest.json"}
        manifest = json.loads((out / "manifest.json").read_text())
        manifest.pop("created_at")
        outs[w] = (files, manifest)
    assert outs[1] == outs[2]
    if on_invalid == "reject":
        files, manifest = outs[1]
        assert (
            manifest["counts"]["rejected"] == 5
            and manifest["counts"]["rejected_by_rule"]["duplicate_row"] == 2
        )
        rejects = [json.loads(x) for x in files["rejects.jsonl"].splitlines()]
        dup = [r for r in rejects if r["findings"][0]["rule"] == "duplicate_row"]
        assert [r["row"]["uuid"] for r in dup] == ["row-000005", "row-000250"]  # the raw rows, as read


def test_workers_leave_ctrl_c_to_the_parent():
    """A terminal's Ctrl-C reaches every process of the group: workers ignore it, so the parent reports it
    once instead of each worker printing a KeyboardInterrupt traceback (found by tests/hostile)."""
    import signal

    from mcqa_prep.parallel import Chunk, ordered_map

    chunks = [Chunk(i, "x", None, 1, data=b"{}\n") for i in range(4)]
    got = [r for _, r in ordered_map(lambda c: signal.getsignal(signal.SIGINT), chunks, 2)]
    assert got == [signal.SIG_IGN] * 4


def test_one_pool_for_every_input_and_an_unreadable_one_is_a_finding_in_its_place(tmp_path, small_chunks):
    from mcqa_prep.validate import validate_paths

    jl, pqf = _dataset(tmp_path)
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1" + b"\x00" * 64 + b"PAR1")
    docs = [validate_paths([broken, jl, pqf], max_findings=0, workers=w).to_dict() for w in (1, 2)]
    assert docs[0] == docs[1]
    unreadable = [f for f in docs[0]["findings"] if f["rule"] == "unreadable_file"]
    assert [f["file"] for f in unreadable] == [str(broken)]
    assert [i["rows"] for i in docs[0]["summary"]["inputs"]] == [0, 303, 120]


def test_a_finding_crosses_the_pipe_whole():
    """Workers hand findings back pickled (Finding.__reduce__): every field, set or left at its default,
    arrives as it left."""
    values = {f.name: f"{f.name}-value" for f in dataclasses.fields(Finding)}
    values.update(line=12, row=11)
    whole = Finding(**values)
    bare = Finding("f.jsonl", None, None, "$", "malformed_row", "error", "m")
    for f in (whole, bare):
        back = pickle.loads(pickle.dumps(f, pickle.HIGHEST_PROTOCOL))
        assert back == f and type(back) is Finding
        assert [getattr(back, x.name) for x in dataclasses.fields(Finding)] == [
            getattr(f, x.name) for x in dataclasses.fields(Finding)
        ]


def test_merging_chunk_reports_is_adding_their_rows_one_by_one():
    """Workers fold their chunk's rows into a report and the parent merges them in order: counts, example
    lists (cut at the limit across chunk boundaries) and buckets must equal adding every row in order."""
    from mcqa_prep.rescore.rows import Outcome
    from mcqa_prep.rescore.run import RescoreReport

    rng = random.Random(7)
    outcomes = []
    for i in range(300):
        status = rng.choice(["ok", "ok", "no_answer", "invalid_row"])
        outcomes.append(
            Outcome(
                rid=f"r{i}",
                status=status,
                mode=rng.choice(["strict_single_letter_boxed", "robust"]),
                reward=float(rng.random() < 0.5),
                previous=rng.choice([None, 0.0, 1.0]),
                joined=rng.choice([None, True, False]),
                input_contract=rng.choice([None, "sha256:a", "sha256:b"]),
                compare=rng.choice([None, "same", "0->1", "1->0"]),
                template=rng.choice([None, "t1", "t2"]),
                format_miss=rng.choice([None, True, False]),
                problem="response" if status == "invalid_row" else None,
                replaced=rng.random() < 0.2,
            )
        )
    whole = RescoreReport(
        "in", "out", "sha256:c", examples=3, compare_contract="sha256:d", compare_mode="robust"
    )
    for o in outcomes:
        whole.add(o)
    merged = whole.empty()
    for start in range(0, len(outcomes), 7):  # small chunks: the example limit is reached mid-chunk
        part = whole.empty()
        for o in outcomes[start : start + 7]:
            part.add(o)
        merged.merge(part)
    assert merged.to_dict() == whole.to_dict()
    assert merged.up.examples == whole.up.examples and len(merged.up.examples) == 3


def _random_keys(rng: random.Random, n: int):
    from mcqa_prep.validate.crossrow import RowKeys

    out = []
    for _ in range(n):
        if rng.random() < 0.03:
            out.append(None)  # an unreadable row: no keys
            continue
        prompt = rng.choice([None, *range(12)]) if rng.random() < 0.2 else rng.getrandbits(64)
        uuid = rng.choice([None, "u1", "u2"]) if rng.random() < 0.2 else f"u{rng.getrandbits(40)}"
        letters = rng.choice(["ABCD", "ABCDEFGHIJ", ("A", "SS")])
        gold = rng.choice([None, letters[0]])
        out.append(RowKeys(prompt, uuid, gold, letters, rng.choice([(), ("x",), ("x", "y")])))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_observing_a_chunk_at_once_is_observing_its_rows_one_by_one(seed, monkeypatch):
    """CrossRow.observe_many (a C-level fast path when no row repeats anything) against observe() per row,
    on chunks that mix clean chunks with repeats inside a chunk, across chunks, rows without uuid or prompt,
    and unreadable rows."""
    from mcqa_prep.records import Row
    from mcqa_prep.validate import packed
    from mcqa_prep.validate.crossrow import CrossRow, KeyColumns

    if seed % 2:
        monkeypatch.setattr(packed, "SPILL", 5)  # the index's numpy columns, not only its dict
    rng = random.Random(seed)
    one, many = CrossRow(), CrossRow()
    slow = []
    many.observe = lambda row, keys: slow.append(row) or CrossRow.observe(many, row, keys)
    clean = rng.random() < 0.5  # half the seeds: mostly clean chunks, so the fast path runs
    line = 1
    for c in range(6):
        n = rng.randint(0, 30)
        keys = _random_keys(rng, n)
        if clean and c % 2 == 0:
            keys = [k._replace(prompt=rng.getrandbits(64), uuid=f"c{rng.getrandbits(48)}") for k in keys if k]
            n = len(keys)
        lines = sorted(rng.sample(range(line, line + 3 * n + 1), n))
        first_index = line * 2
        line += 3 * n + 1
        want = {}
        for i, (ln, k) in enumerate(zip(lines, keys, strict=True)):
            if k is not None:
                s = one.observe(Row("f", ln, first_index + i, None, None, "train"), k)
                if s is not None:
                    want[i] = s
        before = len(slow)
        got = many.observe_many("f", "train", lines, first_index, KeyColumns.of(keys))
        assert {i: vars(s) for i, s in got.items()} == {i: vars(s) for i, s in want.items()}
        if clean and c % 2 == 0:
            assert len(slow) == before  # nothing repeats: the fast path took the whole chunk
    del many.observe
    assert vars(many) == vars(one)


@pytest.mark.parametrize("shard_rows", [1, 3, 7, 50])
def test_a_run_of_lines_is_cut_into_shards_where_single_lines_are(tmp_path, shard_rows):
    from mcqa_prep.io.shards import SplitWriter

    rng = random.Random(shard_rows)
    lines = [f'{{"n": {i}, "pad": "{"x" * rng.randint(0, 40)}"}}\n'.encode() for i in range(60)]
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    single, runs = SplitWriter(a, "train", shard_rows, "jsonl"), SplitWriter(b, "train", shard_rows, "jsonl")
    for line in lines:
        single.write(line)
    at = 0
    while at < len(lines):
        k = rng.randint(0, 9)
        part = lines[at : at + k]
        runs.write_run(b"".join(part), [len(x) for x in part])
        at += k
    shards_a, shards_b = single.finish(), runs.finish()
    assert [s.entry() for s in shards_a] == [s.entry() for s in shards_b]
    assert [(a / s.final).read_bytes() for s in shards_a] == [(b / s.final).read_bytes() for s in shards_b]
    assert len(shards_a) == -(-60 // shard_rows)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_valid_row_that_cannot_carry_the_stamp_is_rejected_with_its_reason(tmp_path, small_chunks, workers):
    """metadata that is not an object: the validator has nothing against the row, the stamper does; the row
    is rejected as prepare.unwritable (the raw row kept), the others written."""
    import sys

    sys.path.insert(0, str(tmp_path.parent))
    from prep_helpers import make_row

    from mcqa_prep.prepare.run import prepare

    rows = [make_row(i, 4) for i in range(40)]
    rows[3]["metadata"] = "a string"
    rows[31]["metadata"] = [1, 2]
    src = tmp_path / "train.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    report = prepare([src], tmp_path / "out", on_invalid="reject", workers=workers)
    assert report.counts["written"] == 38 and report.counts["rejected_by_rule"] == {"prepare.unwritable": 2}
    rejects = [json.loads(x) for x in (tmp_path / "out" / "rejects.jsonl").read_text().splitlines()]
    assert [r["source"]["row"] for r in rejects] == [4, 32]
    assert [r["row"]["metadata"] for r in rejects] == ["a string", [1, 2]]
    assert all("metadata must be an object" in r["findings"][0]["message"] for r in rejects)


# ---- workers read their own input and write their own output ---------------------------------------------


def test_file_chunks_are_byte_ranges_and_a_pipe_s_chunks_carry_their_bytes(tmp_path, small_chunks):
    """From a regular file the parent sends a byte range (no bytes through the pipe); from a FIFO, which can
    be read only once, the bytes travel with the chunk. Both give the rows iter_file gives."""
    import os
    import pickle
    import threading

    p = tmp_path / "r.jsonl"
    _write_requests(p, 300)
    p.write_bytes(p.read_bytes() + b'{"no": "newline at the end"}')
    whole = [(r.line, r.data, r.error) for r in iter_file(p)]
    cs = list(parallel.chunks(p, None))
    assert all(c.data is None and c.span is not None for c in cs) and len(cs) > 10
    sent = [pickle.loads(pickle.dumps(c)) for c in cs]  # as a worker gets them
    assert max(len(pickle.dumps(c)) for c in cs) < 400
    assert [(r.line, r.data, r.error) for c in sent for r in c.rows()] == whole
    assert cs[-1].row_at(whole[-1][0]).data == {"no": "newline at the end"}

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(p.read_bytes()))
    writer.start()
    piped = list(parallel.chunks(fifo, None))
    writer.join()
    assert all(c.span is None and c.data for c in piped)
    assert [(r.line, r.data, r.error) for c in piped for r in c.rows()] == [
        (line, data, err.replace(str(p), str(fifo)) if err else err) for line, data, err in whole
    ]


@pytest.mark.parametrize("seed", range(3))
def test_newlines_are_counted_alike_for_long_short_and_mixed_lines(seed):
    rng = random.Random(seed)
    for _ in range(200):
        lines = [b"x" * rng.choice((0, 1, 30, 900, 1024, 3000, 9000)) for _ in range(rng.randint(0, 60))]
        buf = bytearray(b"\n".join(lines) + rng.choice((b"", b"\n", b"tail")))
        a, b = sorted(rng.randint(0, len(buf)) for _ in range(2))
        for long_lines in (False, True):
            assert count_newlines(buf, a, b, long_lines) == buf.count(b"\n", a, b)


def test_chunk_first_lines_are_right_when_long_lines_turn_short_and_back(tmp_path):
    """The planning pass counts newlines one way for long lines and another for short ones: line numbers
    come out the same as reading the file whole, whichever way each block was counted."""
    p = tmp_path / "mixed.jsonl"
    sizes = [3000] * 40 + [5] * 3000 + [2500] * 40 + [1] * 2000 + [4000] * 10
    p.write_text("".join(json.dumps({"i": i, "pad": "x" * n}) + "\n" for i, n in enumerate(sizes)))
    whole = [(r.line, r.data) for r in iter_file(p)]
    cs = list(parallel.chunks(p, None, chunk_bytes=8192))
    assert len(cs) > 20
    assert [(r.line, r.data) for c in cs for r in c.rows()] == whole


@pytest.mark.parametrize("change", ["truncated", "rewritten", "replaced"])
def test_a_file_that_changes_under_the_run_is_an_input_error_not_other_rows(tmp_path, small_chunks, change):
    from mcqa_prep.errors import InputError

    p = tmp_path / "r.jsonl"
    _write_requests(p, 200)
    data = p.read_bytes()
    cs = list(parallel.chunks(p, None))
    if change == "truncated":
        p.write_bytes(data[: len(data) // 3])
    elif change == "rewritten":  # same length, lines cut elsewhere
        p.write_bytes(data.replace(b"\n", b" ", 3).replace(b'"uuid"', b'"uuid"\n', 3))
    else:  # another file renamed over it, byte for byte the same
        other = tmp_path / "other.jsonl"
        other.write_bytes(data)
        other.replace(p)
    with pytest.raises(InputError, match="changed while it was being read") as err:
        for c in cs:
            list(c.rows())
    assert err.value.reason == "input_changed"


def test_worker_pieces_are_appended_and_none_is_left_behind(tmp_path, small_chunks, monkeypatch):
    """rescore's workers write their lines as the run's shards beside the output; the parent appends them (in
    the kernel, or through a buffer where the kernel cannot), and the run's work directory goes when the run
    completes, and when it fails."""
    import errno
    import os

    from mcqa_prep.errors import McqaPrepError
    from mcqa_prep.rescore import run as rescore_mod

    src = tmp_path / "requests.jsonl"
    _write_requests(src, 400)
    out = tmp_path / "out"
    out.mkdir()
    rescore(rescore_request(src, out / "one.jsonl", workers=1))
    expected = (out / "one.jsonl").read_bytes()
    calls = []
    real = os.copy_file_range

    def no_kernel_copy(*a):
        calls.append(a)
        if len(calls) > 3:  # part of the way in the kernel, then the buffer loop goes on where it stopped
            raise OSError(errno.EXDEV, "cross-device")
        return real(a[0], a[1], 1000)

    for name, patch in [("kernel", None), ("buffer", no_kernel_copy)]:
        if patch is not None:
            monkeypatch.setattr(os, "copy_file_range", patch)
        rescore(rescore_request(src, out / f"{name}.jsonl", workers=2))
        assert (out / f"{name}.jsonl").read_bytes() == expected, name
    assert len(calls) > 3
    assert sorted(p.name for p in out.iterdir()) == ["buffer.jsonl", "kernel.jsonl", "one.jsonl"]

    real_chunk = rescore_mod.rescore_chunk

    def fails_later(chunk, job):
        if chunk.seq == 6:
            raise OSError(errno.EIO, "worker failed")
        return real_chunk(chunk, job)

    monkeypatch.setattr(rescore_mod, "rescore_chunk", fails_later)
    with pytest.raises((OSError, McqaPrepError)):
        rescore(rescore_request(src, out / "failed.jsonl", workers=2))
    assert sorted(p.name for p in out.iterdir()) == ["buffer.jsonl", "kernel.jsonl", "one.jsonl"]


def test_pieces_of_a_killed_run_go_with_its_temporary_file(tmp_path):
    import subprocess

    from mcqa_prep.errors import OutputError
    from mcqa_prep.io.writers import Parts, remove_dead_temporaries

    proc = subprocess.Popen(["true"])
    proc.wait()
    dead = proc.pid  # a pid that is gone
    target = tmp_path / "out.jsonl"
    parts = Parts(str(tmp_path / f".out.jsonl.{dead}-0a1b2c3d"), str(target))
    left = [parts.write(n, b"x\n") for n in (0, 1, 17)]
    keep = tmp_path / "keep.jsonl"
    keep.write_text("{}\n")
    remove_dead_temporaries(target)
    assert not any(map(os.path.exists, left)) and keep.exists()
    with pytest.raises(OutputError) as err:
        Parts(str(tmp_path / "missing" / ".x.1-ab"), str(target)).write(0, b"x\n")
    assert err.value.reason == "output_missing_directory" and str(target) in str(err.value)


def test_a_stop_inside_a_deferred_block_is_raised_when_the_block_ends():
    """SIGTERM/SIGHUP/Ctrl-C arriving while the pool is being started, fed or shut down used to cut
    ProcessPoolExecutor's bookkeeping in two ('cannot join thread before it is started', or a worker nobody
    told to exit, waited for forever at exit): found by running the stop tests under load."""
    from mcqa_prep.errors import Stopped, stop, stops_deferred

    done = []
    with pytest.raises(Stopped, match="SIGTERM"):
        with stops_deferred():
            with stops_deferred():
                stop("SIGTERM")
                stop("SIGHUP")  # the first one counts
                done.append("inner")
            done.append("outer")  # still inside: not raised yet
    assert done == ["inner", "outer"]
    with pytest.raises(KeyboardInterrupt):
        with stops_deferred():
            stop("SIGINT")
    with pytest.raises(ValueError):
        with stops_deferred():
            stop("SIGTERM")
            raise ValueError("the block's own failure ends the run")
    with stops_deferred():  # nothing left pending from the failed block
        pass
    with pytest.raises(Stopped):
        stop("SIGHUP")


def test_workers_above_the_cores_are_capped_with_one_note(tmp_path, monkeypatch):
    """--workers 999 used to start a process per chunk in flight (168 on 2 cores); every command that takes
    --workers caps it at the cores available, with the same one-line note."""
    from click.testing import CliRunner

    from mcqa_prep.cli import main

    monkeypatch.setattr("mcqa_prep.parallel.available_cores", lambda: 2)
    started = []
    real = parallel.ordered_map

    def spy(fn, items, workers, **kw):
        started.append(workers)
        return real(fn, items, 1, **kw)

    monkeypatch.setattr("mcqa_prep.engine.job.ordered_map", spy)
    src = Path(__file__).resolve().parents[1] / "data" / "sample" / "train.jsonl"
    for args in (
        ["validate", src],
        ["prepare", src, "-o", tmp_path / "p"],
        ["rescore", src, "-o", tmp_path / "r.jsonl"],
    ):
        res = CliRunner().invoke(main, [str(a) for a in (*args, "--workers", "999", "-q")])
        assert res.exit_code in (0, 1), res.output
        notes = [ln for ln in res.stderr.splitlines() if ln.startswith("note: --workers")]
        assert notes == ["note: --workers 999 capped at 2, the cores available to this process"], res.stderr
    assert started == [2, 2, 2]
