"""Regression tests for the bugs the design review found where one job was written two to four times and
the copies disagreed (each fails on the code before the one-home-per-concept layout)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from mcqa_prep.errors import IntegrityError
from mcqa_prep.io.writers import AtomicFile
from mcqa_prep.prepare.run import prepare
from mcqa_prep.prompt import prompt_key

sys.path.insert(0, str(Path(__file__).parent))
from prep_helpers import make_row, write_rows  # noqa: E402


def test_atomic_file_dash_writes_stdout_not_a_file_named_dash(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with AtomicFile("-") as fh:
        fh.write("hello\n")
    assert capsys.readouterr().out == "hello\n"
    assert not (tmp_path / "-").exists()


def test_atomic_file_gets_the_umask_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        with AtomicFile(tmp_path / "x.jsonl") as fh:
            fh.write("x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "x.jsonl").stat().st_mode) == 0o644


def test_the_pull_lock_is_written_durably(tmp_path, monkeypatch):
    from mcqa_prep.pull import lock

    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    from pull_helpers import lock_document, lock_entry

    doc = lock_document([lock_entry("README.md", b"", lfs=False)], repo="o/n", commit="0" * 40)
    lock.write_lock(tmp_path, doc)
    assert calls, "the lock must be fsynced before it is renamed into place"
    assert json.loads((tmp_path / lock.LOCK_NAME).read_text())["commit"] == "0" * 40


def test_prepare_findings_use_the_zero_based_row_index(tmp_path):
    rows = [json.dumps(make_row(0)), "", "{broken", json.dumps(make_row(1, extra={"expected_answer": "Q"}))]
    src = tmp_path / "train.jsonl"
    src.write_text("\n".join(rows) + "\n")
    report = prepare([src], tmp_path / "out", on_invalid="reject")
    by_line = {f.line: f.row for f in report.rejected}
    assert by_line == {3: 1, 4: 2}  # line 2 is blank: not a row


def test_rescore_rows_from_a_prepared_directory_are_verified_and_never_rejects(tmp_path, cli):
    good, bad = make_row(0), make_row(1, extra={"expected_answer": "Q"})
    src = write_rows(tmp_path / "train.jsonl", [good, bad])
    out = tmp_path / "prepared"
    assert cli("prepare", src, "-o", out, "--on-invalid", "reject").exit_code == 0
    rollout = {
        "responses_create_params": bad["responses_create_params"],
        "response": {
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "\\boxed{A}"}]}]
        },
    }
    ro = write_rows(tmp_path / "rollouts.jsonl", [rollout])
    res = cli("rescore", ro, "--rows", out, "-o", tmp_path / "r.jsonl", "--format", "json")
    doc = json.loads(res.stdout)
    assert doc["join"]["dataset_prompts"] == 1  # the rejected row is not a dataset row
    assert doc["invalid_rows"]["by_kind"] == {"no_match": 1}

    shard = next(out.glob("train-*.jsonl"))
    shard.write_bytes(shard.read_bytes().replace(b"option A", b"option Z", 1))
    res = cli("rescore", ro, "--rows", out, "-o", tmp_path / "r2.jsonl")
    assert res.exit_code == 1 and "sha256" in res.output and str(shard) in res.output


@pytest.mark.parametrize(
    "rcp",
    [
        {"input": [{"role": "user", "content": "What is 2+2?\nA: 3\nB: 4"}]},
        {
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "What is 2+2?\nA: 3\nB: 4"}]}
            ]
        },
        {"input": [{"role": "user", "content": "What is 2+2?\nA: 3\nB: 4", "type": "message"}]},
        {"input": "What is 2+2?\nA: 3\nB: 4"},
    ],
)
def test_one_definition_of_the_same_prompt(rcp):
    base = {"input": [{"role": "user", "content": "What is 2+2?\nA: 3\nB: 4"}]}
    assert prompt_key(rcp) == prompt_key(base)


def test_validate_rescore_and_summarize_agree_on_the_same_prompt(tmp_path, cli):
    text = "What is 2+2?\nA: 3\nB: 4"
    row = {
        "responses_create_params": {"input": [{"role": "user", "content": text}]},
        "options": [{"A": "3"}, {"B": "4"}],
        "expected_answer": "B",
    }
    parts = {
        **row,
        "responses_create_params": {
            "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}]
        },
    }
    rows = write_rows(tmp_path / "rows.jsonl", [row, parts])
    res = cli("validate", rows, "--format", "json")
    assert json.loads(res.stdout)["summary"]["findings_by_rule"].get("duplicate_prompt") == 1

    answer = {"output": [{"type": "message", "content": [{"type": "output_text", "text": "\\boxed{B}"}]}]}
    rollouts = [
        {
            "responses_create_params": {"input": [{"role": "user", "content": text, "type": "message"}]},
            "response": answer,
        },
        {"responses_create_params": parts["responses_create_params"], "response": answer},
    ]
    ro = write_rows(tmp_path / "rollouts.jsonl", rollouts)
    res = cli("rescore", ro, "--rows", rows, "-o", tmp_path / "r.jsonl", "--format", "json")
    assert json.loads(res.stdout)["join"]["joined"] == 2
    res = cli("summarize", tmp_path / "r.jsonl", "--format", "json")
    assert json.loads(res.stdout)["prompts"]["count"] == 1


def test_verify_refuses_a_manifest_that_disagrees_with_itself(tmp_path):
    from mcqa_prep.prepared.verify import verify_prepared

    src = write_rows(tmp_path / "train.jsonl", [make_row(i) for i in range(6)])
    out = tmp_path / "p"
    prepare([src], out)
    m = json.loads((out / "manifest.json").read_text())
    for edit in (
        lambda d: d["splits"]["train"].update(rows=7),
        lambda d: d["counts"].update(written=7, read=7),
        lambda d: d.update(splits={"training": d["splits"]["train"]}),
    ):
        doc = json.loads(json.dumps(m))
        edit(doc)
        (out / "manifest.json").write_text(json.dumps(doc))
        with pytest.raises(IntegrityError, match="disagrees with itself"):
            verify_prepared(out)
