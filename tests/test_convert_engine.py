"""`convert` on the row engine (convert/chunked.py, convert/merge.py): for local JSONL and Parquet sources
without --shuffle, the output files, the rejects file and the report are byte for byte those of one pass
(the path every other run takes), for one worker and two, with chunks far smaller than the sources (rows of
one pass cross chunk boundaries; blank, whitespace-only and malformed lines shift the row indexes); a
run-level failure is the one one pass raises, at the same row."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from convert_layouts import make_layout, write_rows

from mcqa_prep import parallel
from mcqa_prep.convert import chunked, core
from mcqa_prep.convert.core import convert
from mcqa_prep.convert.orders import PermuteSpec
from mcqa_prep.errors import McqaPrepError, UsageError
from mcqa_prep.runs import RunRequest


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 4 KB of JSONL, Parquet row groups over 64 rows cut into batches of 16."""
    monkeypatch.setenv(parallel.CHUNK_BYTES_ENV, "4096")
    monkeypatch.setattr(parallel, "ROW_GROUP_DIRECT_ROWS", 64)
    monkeypatch.setattr(parallel, "PARQUET_CHUNK_ROWS", 16)


def _bytes(out: Path, rejects: Path, doc: dict) -> bytes:
    files = sorted(out.iterdir()) if out.is_dir() else [out]
    parts = [p.name.encode() + b"\0" + p.read_bytes() for p in files]
    parts.append(rejects.read_bytes())
    parts.append(json.dumps(doc, sort_keys=True).encode())
    return b"\0\0".join(parts).replace(str(out.parent).encode(), b"<tmp>")


def _runs(tmp_path: Path, monkeypatch, srcs, name: str, **kw) -> list[bytes]:
    """The conversion's bytes: one pass, then the engine with 1 and 2 workers (each in its own directory)."""
    got = []
    for label, workers in (("one-pass", None), ("w1", 1), ("w2", 2)):
        d = tmp_path / label
        d.mkdir(exist_ok=True)
        out, rej = d / name, d / "rejects.jsonl"
        if workers is None:
            monkeypatch.setattr(core, "engine_able", lambda *a: False)
            req = None
        else:
            monkeypatch.setattr(core, "engine_able", chunked.engine_able)
            req = RunRequest(tuple(map(str, srcs)), out, workers)
        rep = convert([str(s) for s in srcs], out, rejects=rej, request=req, **kw)
        got.append(_bytes(out, rej, rep.doc))
        assert not any(p.name.endswith(".mcqa-run") for p in d.iterdir())
    return got


def _jsonl_with_gaps(path: Path, n: int, k=lambda i: 4) -> Path:
    """mmlu-layout rows with blank, whitespace-only and malformed lines between them, and rows whose answer
    is out of range (rejected at extraction)."""
    lines = []
    for i in range(n):
        m = k(i)
        lines.append(json.dumps({"question": f"Q{i}: which is right? " + "x" * (i % 70),
                                 "choices": [f"opt {j}/{i}" for j in range(m)],
                                 "answer": (i * 7) % m if i % 41 else 99}))  # fmt: skip
        if i % 13 == 5:
            lines.append("")
        if i % 17 == 3:
            lines.append("  \t\r")
        if i % 29 == 8:
            lines.append('{"question": ')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_jsonl_with_blank_and_malformed_lines_and_several_files(tmp_path, monkeypatch, small_chunks):
    a = _jsonl_with_gaps(tmp_path / "a.jsonl", 400, lambda i: 3 + i % 4)
    b = _jsonl_with_gaps(tmp_path / "b.jsonl", 150)
    got = _runs(tmp_path, monkeypatch, [a, b], "out.jsonl",
                templates=["boxed:2", "answer_colon:1", "final_choice:1"], max_shown=7)  # fmt: skip
    assert got[0] == got[1] == got[2]
    assert b"malformed_row" in got[0] and b"prompt_self_graded" not in got[0]


def test_parquet_layouts_directory_output_permute_and_pins(tmp_path, monkeypatch, small_chunks):
    srcdir = tmp_path / "src"
    srcdir.mkdir()
    mp, _ = make_layout(srcdir, "mmlu_pro", n=300, split="test")
    arc, _ = make_layout(srcdir, "arc", n=90, split="validation")
    table = pq.read_table(mp)
    pq.write_table(table, mp, row_group_size=23)  # many small row groups, each a chunk
    pq.write_table(table.slice(0, 200), srcdir / "big.parquet", row_group_size=100)  # batches of one group
    sup, _ = make_layout(srcdir, "supergpqa", n=120, split="train")
    got = _runs(tmp_path, monkeypatch, [mp, arc, sup], "outdir", permute=PermuteSpec(3), pins=["opt 1/7"])
    assert got[0] == got[1] == got[2]
    assert b"convert.json" in got[0] and b"test.jsonl" in got[0] and b"train.jsonl" in got[0]
    got = _runs(tmp_path, monkeypatch, [srcdir / "big.parquet"], "big.jsonl", preset="mmlu_pro")
    assert got[0] == got[1] == got[2]


def test_self_graded_rejects_and_first_rejects_shown(tmp_path, monkeypatch, small_chunks):
    rows = []
    for i in range(200):
        q = f"Question {i}?" if i % 9 else f"Someone wrote\nFinal choice: C\nIs row {i} right?"
        rows.append(
            {"question": q, "A": "one", "B": "two", "C": "three", "D": f"four {i}", "answer": "ABCD"[i % 4]}
        )
    src = write_rows(tmp_path / "s.jsonl", rows, "jsonl")
    maps = ["question=question", "options=A,B,C,D", "answer=answer"]
    got = _runs(
        tmp_path, monkeypatch, [src], "o.jsonl", mapping=maps, templates=["final_choice"], max_shown=4
    )
    assert got[0] == got[1] == got[2]
    assert got[0].count(b"prompt_self_graded") > 10


def _failing(tmp_path: Path, monkeypatch, srcs, **kw) -> list[tuple[str, str]]:
    out = []
    for label, workers in (("one-pass", None), ("w2", 2)):
        d = tmp_path / f"fail-{label}"
        d.mkdir()
        monkeypatch.setattr(
            core, "engine_able", (lambda *a: False) if workers is None else chunked.engine_able
        )
        req = None if workers is None else RunRequest(tuple(map(str, srcs)), d / "o.jsonl", workers)
        with pytest.raises(McqaPrepError) as err:
            convert([str(s) for s in srcs], d / "o.jsonl", request=req, **kw)
        out.append((type(err.value).__name__, str(err.value)))
        assert sorted(p.name for p in d.iterdir()) == []  # nothing written, no work directory left
    return out


def test_a_template_control_failure_is_raised_at_the_first_row_that_needs_it(
    tmp_path, monkeypatch, small_chunks
):
    """A template that reads only A-D fails its controls with 5 options: the first 5-option row (deep in the
    input) raises it, before the empty prompt of a later row; the controls before it ran in input order."""
    tpl = tmp_path / "ad.j2"
    tpl.write_text("---\nid: ad_only\noutput_regex: 'Verdict:\\s*\\(?((?-i:[A-D]))\\)?(?![^\\n]*\\w)'\n---\n"
                   "{{ question }}\n{{ options_block }}\n{% if row.question %}{% endif %}End with Verdict: <letter>.\n")  # fmt: skip
    src = _jsonl_with_gaps(tmp_path / "a.jsonl", 300, lambda i: 5 if i >= 250 else 3 + i % 2)
    got = _failing(tmp_path, monkeypatch, [src], templates=[str(tpl)])
    assert got[0] == got[1]
    assert "fails its controls with 5 options" in got[0][1]


def test_an_empty_prompt_is_raised_at_its_row(tmp_path, monkeypatch, small_chunks):
    tpl = tmp_path / "empty.j2"
    tpl.write_text("---\nid: sometimes_empty\ngrading_mode: lenient_boxed\n---\n{% if not row.hide %}{{ question }}\n{{ options_block }}\n"
                   "Answer with \\boxed{LETTER}.{% endif %}")  # fmt: skip
    rows = [{"question": f"Q{i}?", "choices": ["a", "b", "c", "d"], "answer": i % 4, "hide": i == 230}
            for i in range(300)]  # fmt: skip
    src = write_rows(tmp_path / "h.jsonl", rows, "jsonl")
    got = _failing(tmp_path, monkeypatch, [src], templates=[str(tpl)])
    assert got[0] == got[1]
    assert "rendered an empty prompt" in got[0][1] and "row 230" in got[0][1]


def test_which_runs_go_on_the_engine(tmp_path):
    from mcqa_prep.convert.sources import plan_sources

    src, _ = make_layout(tmp_path, "mmlu", n=5)
    csv_src, _ = make_layout(tmp_path, "gpqa", n=5)
    js = tmp_path / "doc.json"
    js.write_text(json.dumps([{"question": "q", "choices": ["a", "b"], "answer": 0}]))
    big = tmp_path / "big.parquet"
    pq.write_table(pq.read_table(src), big, row_group_size=2)  # three chunks
    out = tmp_path / "o.jsonl"
    two, one = RunRequest((str(big),), out, 2), RunRequest((str(big),), out, 1)
    assert chunked.engine_able(plan_sources([str(big)]), False, False, out, one)
    assert not chunked.engine_able(plan_sources([str(src)]), False, False, out, two)  # one chunk
    assert not chunked.engine_able(plan_sources([str(big), str(csv_src)]), False, False, out, two)
    assert not chunked.engine_able(plan_sources([str(js), str(big)]), False, False, out, two)
    assert chunked.engine_able(plan_sources([str(big)]), True, False, out, two)
    assert not chunked.engine_able(plan_sources([str(big)]), True, False, out, one)  # one core
    assert not chunked.engine_able(plan_sources([str(src)]), True, False, out, two)  # one chunk
    assert not chunked.engine_able(plan_sources([str(big)]), True, True, out, two)  # --permute
    assert not chunked.engine_able(plan_sources([str(big)]), True, False, Path("/dev/null"), two)


def test_a_usage_error_names_the_template_not_a_chunk(tmp_path, monkeypatch):
    """(A template file that does not parse fails before any chunk runs, as in one pass.)"""
    bad = tmp_path / "bad.j2"
    bad.write_text("---\nid: bad\n---\n{% if %}")
    src, _ = make_layout(tmp_path, "mmlu", n=5)
    with pytest.raises(UsageError):
        convert([str(src)], tmp_path / "o.jsonl", templates=[str(bad)])
    assert not (tmp_path / "o.jsonl").exists()


# ---- --shuffle: placements in pass 1, the conversion in pass 2 ------------------------------------------


def _pinned_rows(path: Path, n: int) -> Path:
    """Rows with positional options ("None of the above", "Both A and B"), unresolved letter references,
    --pin texts and varying option counts, and blank and malformed lines (shifting the row indexes)."""
    lines = []
    for i in range(n):
        m = 3 + i % 5
        ch = [f"term {j} for {i}" for j in range(m)]
        if i % 7 == 0:
            ch[-1] = "None of the above"
        if i % 11 == 0:
            ch[1] = "Both A and C" if m > 2 else ch[1]
        if i % 23 == 0:
            ch[0] = "Options Q and R"  # letters that are not options: the row keeps its order
        if i % 9 == 0:
            ch[0] = "keep me here"
        lines.append(json.dumps({"question": f"Q{i}? " + "y" * (i % 50), "choices": ch,
                                 "answer": (i * 5) % m if i % 37 else m + 3}))  # fmt: skip
        if i % 19 == 4:
            lines += ["", "[1, 2]"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def fallbacks(monkeypatch):
    """How many engine runs fell back to one pass (a row rejected after its placement)."""
    seen = []
    real = core._write

    def spy(run, srcs, maps, out, rejects, tick, on_engine=None):
        if on_engine is None:
            seen.append(out)
        return real(run, srcs, maps, out, rejects, tick, on_engine)

    monkeypatch.setattr(core, "_write", spy)
    return seen


def test_shuffle_on_the_engine_is_one_pass_byte_for_byte(tmp_path, monkeypatch, small_chunks, fallbacks):
    a = _pinned_rows(tmp_path / "a.jsonl", 500)
    b = tmp_path / "b.parquet"
    pq.write_table(pq.read_table(make_layout(tmp_path, "mmlu_pro", n=260)[0]), b, row_group_size=90)
    got = _runs(tmp_path, monkeypatch, [a, b], "out", shuffle=True, seed=3, pins=["keep me here"],
                templates=["boxed:2", "answer_colon:1"], max_shown=3)  # fmt: skip
    assert got[0] == got[1] == got[2]
    assert len(fallbacks) == 2  # one pass, and --shuffle on one worker (its two passes would cost more)
    doc = json.loads(got[0].rsplit(b"\0\0", 1)[1])
    assert doc["shuffle"]["rows_with_pins"] > 50 and doc["shuffle"]["unresolved_references"]["rows"] > 5
    assert doc["shuffle"]["gold_pinned"] > 0


def test_a_row_rejected_after_its_placement_falls_back_to_one_pass(
    tmp_path, monkeypatch, small_chunks, fallbacks
):
    rows = []
    for i in range(300):
        q = f"Question {i}?" if i % 31 != 30 else f"Someone wrote\nFinal choice: B\nIs row {i} right?"
        rows.append(
            {"question": q, "A": f"one {i}", "B": "two", "C": "three", "D": "four", "answer": "ABCD"[i % 4]}
        )
    src = write_rows(tmp_path / "s.jsonl", rows, "jsonl")
    maps = ["question=question", "options=A,B,C,D", "answer=answer"]
    got = _runs(
        tmp_path, monkeypatch, [src], "o.jsonl", mapping=maps, templates=["final_choice"], shuffle=True
    )
    assert got[0] == got[1] == got[2]
    assert got[0].count(b"prompt_self_graded") >= 9
    assert len(fallbacks) == 3  # one pass, and each engine run once it met the first such row


def test_shuffle_with_permute_stays_in_one_process(tmp_path, fallbacks):
    src, _ = make_layout(tmp_path, "mmlu", n=30)
    convert([str(src)], tmp_path / "o.jsonl", shuffle=True, permute=PermuteSpec(2))
    assert fallbacks == [tmp_path / "o.jsonl"]


def test_a_pulled_directory_continues_one_numbering_across_its_shards(tmp_path, monkeypatch, small_chunks):
    """A pulled dataset's files of one split continue each other's row numbering (start_index): Parquet
    shards, and JSONL shards with blank lines, each cut into many chunks."""
    import io

    from pull_helpers import write_pulled

    def parquet(lo: int, hi: int) -> bytes:
        buf = io.BytesIO()
        rows = [{"question": f"P{i}?", "choices": [f"a{i}", "b", "c", "None of the above"], "answer": i % 4}
                for i in range(lo, hi)]  # fmt: skip
        pq.write_table(pa.Table.from_pylist(rows), buf, row_group_size=30)
        return buf.getvalue()

    jl = _jsonl_with_gaps(tmp_path / "j.jsonl", 200).read_bytes()
    jl2 = _jsonl_with_gaps(tmp_path / "k.jsonl", 170).read_bytes()
    d = write_pulled(tmp_path / "pulled", {
        "data/test-00000-of-00002.parquet": parquet(0, 130),
        "data/test-00001-of-00002.parquet": parquet(130, 250),
        "data/train-00000-of-00002.jsonl": jl,
        "data/train-00001-of-00002.jsonl": jl2,
    })  # fmt: skip
    got = _runs(tmp_path, monkeypatch, [d], "outdir", shuffle=True, seed=1)
    assert got[0] == got[1] == got[2]
    got = _runs(tmp_path, monkeypatch, [d], "outdir2")
    assert got[0] == got[1] == got[2]
    assert b'"row":249' in got[0] or b'"row": 249' in got[0]
