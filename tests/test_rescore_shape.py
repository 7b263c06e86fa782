"""rescore --output-shape grading: one line per input row holding only its grading, the same values the full
row's metadata.grading holds, as JSONL or (into *.parquet) as a Parquet table; the same for every --workers."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, SAMPLE, read_jsonl, rescore_request, write_jsonl

FIELDS = ["line", "id", "reward", "extracted_answer", "status", "rule", "contract"]


def _mixed_input(tmp_path):
    """Rollouts of the embedded sample and NeMo Gym's examples, with every kind of row rescore meets: bad
    JSON, an array, no response, options of the wrong type, NaN in the metadata, a template regex."""
    good = {
        "responses_create_params": {"input": [{"role": "user", "content": "Q\nA: x\nB: y"}]},
        "options": [{"A": "x"}, {"B": "y"}],
        "expected_answer": "B",
        "response": {
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "\\boxed{B}"}]}]
        },
        "uuid": "u-good",
    }
    no_resp = {k: v for k, v in good.items() if k != "response"} | {"uuid": "u-noresp"}
    bad_types = dict(good, options="A: x", uuid="u-types")
    regex = dict(
        good,
        uuid=None,
        id=7,
        template_metadata={"output_regex": "Final:\\s*([A-Z])"},
        response={"output_text": "Final: A"},
    )
    lines = [good, "{not json", no_resp, bad_types, "[1, 2]", regex]
    lines += (SAMPLE / "rollouts.jsonl").read_text().splitlines()
    lines += (FIXTURES / "example_rollouts.jsonl").read_text().splitlines()
    lines.append(json.dumps(dict(good, uuid="u-nan", metadata={"score": float("nan")})))
    return write_jsonl(tmp_path / "in.jsonl", lines)


def _run(tmp_path, src, out, workers, shape, monkeypatch):
    from mcqa_prep import parallel
    from mcqa_prep.rescore.run import rescore

    monkeypatch.setattr(parallel, "JSONL_CHUNK_BYTES", 2048)  # several chunks, so workers share them
    rows = [SAMPLE / "train.jsonl", SAMPLE / "validation.parquet", FIXTURES / "example.jsonl"]
    req = rescore_request(src, out, workers=workers, rows=rows, output_shape=shape)
    return rescore(req).to_dict()


@pytest.mark.parametrize("workers", [1, 2])
def test_grading_lines_say_what_the_full_rows_say(tmp_path, monkeypatch, workers):
    src = _mixed_input(tmp_path)
    full_rep = _run(tmp_path, src, tmp_path / "full.jsonl", workers, "full", monkeypatch)
    grade_rep = _run(tmp_path, src, tmp_path / "grades.jsonl", workers, "grading", monkeypatch)
    assert full_rep == {**grade_rep, "output": full_rep["output"]}  # the same summary, whatever the shape
    full = read_jsonl(tmp_path / "full.jsonl")
    raw = (tmp_path / "grades.jsonl").read_bytes().splitlines()
    grades = [json.loads(x) for x in raw]
    assert len(grades) == len(full) == len(src.read_text().splitlines())
    statuses = set()
    for n, (f, g) in enumerate(zip(full, grades, strict=True), start=1):
        assert list(g) == FIELDS
        meta = f["metadata"]["grading"]
        assert g["line"] == n
        assert (g["reward"], g["extracted_answer"]) == (f["reward"], f["extracted_answer"])
        assert (g["status"], g["rule"], g["contract"]) == (meta["status"], meta["rule"], meta["contract"])
        statuses.add(g["status"])
    assert {"ok", "invalid_row", "no_answer"} <= statuses
    ids = [g["id"] for g in grades]
    assert ids[:6] == ["u-good", "in.jsonl:2", "u-noresp", "u-types", "in.jsonl:5", "7"]
    assert ids[-1] == "u-nan"


def test_grading_shape_is_the_same_for_every_worker_count_and_as_parquet(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    src = _mixed_input(tmp_path)
    _run(tmp_path, src, tmp_path / "w1.jsonl", 1, "grading", monkeypatch)
    _run(tmp_path, src, tmp_path / "w2.jsonl", 2, "grading", monkeypatch)
    assert (tmp_path / "w1.jsonl").read_bytes() == (tmp_path / "w2.jsonl").read_bytes()
    for workers in (1, 2):
        out = tmp_path / f"w{workers}.parquet"
        _run(tmp_path, src, out, workers, "grading", monkeypatch)
        table = pq.read_table(out)
        assert table.schema.names == FIELDS
        assert [str(t) for t in table.schema.types] == ["int64", "string", "double"] + ["string"] * 4
        assert table.to_pylist() == read_jsonl(tmp_path / "w1.jsonl")


def test_cli_output_shape(cli, tmp_path):
    src = _mixed_input(tmp_path)
    rows = ("--rows", SAMPLE / "train.jsonl", "--rows", FIXTURES / "example.jsonl")
    res = cli("rescore", src, "-o", tmp_path / "g.jsonl", "--output-shape", "grading", *rows, "-j", "1")
    assert res.exit_code == 1  # the mixed input holds rows that cannot be graded
    first = json.loads((tmp_path / "g.jsonl").read_text().splitlines()[0])
    assert first == {
        "line": 1,
        "id": "u-good",
        "reward": 1.0,
        "extracted_answer": "B",
        "status": "ok",
        "rule": first["rule"],
        "contract": first["contract"],
    }
    assert first["contract"].startswith("sha256:")
    res = cli("rescore", src, "-o", tmp_path / "g.jsonl", "--output-shape", "rows")
    assert res.exit_code == 2 and "--output-shape" in res.output


def test_a_shape_the_library_does_not_know_is_a_usage_error(tmp_path):
    from mcqa_prep.errors import UsageError
    from mcqa_prep.rescore.run import rescore

    src = write_jsonl(tmp_path / "in.jsonl", [{"options": [{"A": "a"}], "expected_answer": "A"}])
    with pytest.raises(UsageError, match="output_shape must be one of full, grading"):
        rescore(rescore_request(src, tmp_path / "out.jsonl", output_shape="rows"))
    assert not (tmp_path / "out.jsonl").exists()
