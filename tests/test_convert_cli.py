"""The convert command: reruns are identical, every row is written or rejected with a reason, a bad line
is reported with file and line, exit codes 0/1/2, one JSON document, and no complete-looking output after a
failure."""

from __future__ import annotations

import json

import pytest

try:
    from .convert_layouts import make_layout, read_jsonl, write_rows
except ImportError:
    from convert_layouts import make_layout, read_jsonl, write_rows


def test_rerun_is_identical_and_seed_changes_only_the_order(tmp_path, cli):
    src, _ = make_layout(tmp_path, "arc", n=50)
    a, b, c = (tmp_path / f"{x}.jsonl" for x in "abc")
    for out in (a, b):
        assert (
            cli(
                "convert",
                src,
                "-o",
                out,
                "--shuffle",
                "--seed",
                "1",
                "--template",
                "boxed:1",
                "--template",
                "answer_is:1",
            ).exit_code
            == 0
        )
    assert a.read_bytes() == b.read_bytes()
    assert (
        cli(
            "convert",
            src,
            "-o",
            c,
            "--shuffle",
            "--seed",
            "2",
            "--template",
            "boxed:1",
            "--template",
            "answer_is:1",
        ).exit_code
        == 0
    )
    ra, rc = read_jsonl(a), read_jsonl(c)
    assert [r["uuid"] for r in ra] == [r["uuid"] for r in rc]
    assert [r["options"] for r in ra] != [r["options"] for r in rc]
    # the same output path again: replaced atomically, same bytes
    assert (
        cli(
            "convert",
            src,
            "-o",
            a,
            "--shuffle",
            "--seed",
            "1",
            "--template",
            "boxed:1",
            "--template",
            "answer_is:1",
        ).exit_code
        == 0
    )
    assert a.read_bytes() == b.read_bytes()


def test_every_row_written_or_rejected_with_file_and_line(tmp_path, cli):
    good = {"question": "Which is red?", "choices": ["apple", "sky", "grass"], "answer": 0}
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps({"question": "Q2?", "choices": ["a", "a"], "answer": 0}),
        "",
        json.dumps([1, 2]),
        json.dumps({"question": "Q3?", "choices": ["x", "y"], "answer": 5}),
        json.dumps({**good, "question": "Which is green?", "answer": 2}),
    ]
    src = tmp_path / "src.jsonl"
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "o.jsonl"
    res = cli("convert", src, "-o", out, "--preset", "mmlu")
    assert res.exit_code == 0, res.output
    assert f"{src}:2: rejected: not valid JSON" in res.output
    assert f"{src}:3: rejected: choices 0 and 1 have the same text ('a') [duplicate_choices]" in res.output
    assert f"{src}:5: rejected: a row must be a JSON object, got an array [malformed_row]" in res.output
    assert f"{src}:6: rejected: answer 5 is past the last of 2 choices [answer_not_in_choices]" in res.output
    assert "6 rows read: 2 written, 4 rejected" in res.output
    rejects = read_jsonl(tmp_path / "o.rejects.jsonl")
    assert [r["reason"] for r in rejects] == [
        "malformed_row",
        "duplicate_choices",
        "malformed_row",
        "answer_not_in_choices",
    ]
    assert [r["source"]["line"] for r in rejects] == [2, 3, 5, 6]
    assert rejects[1]["row"] == {"question": "Q2?", "choices": ["a", "a"], "answer": 0}
    assert len(read_jsonl(out)) == 2


def test_csv_line_numbers_and_prompt_self_graded(tmp_path, cli):
    rows = [
        {"question": "Plain question?", "A": "one", "B": "two", "C": "three", "D": "four", "answer": "A"},
        # a question that already holds an answer in the template's format: a response echoing it would score
        {
            "question": "Someone wrote\nFinal choice: C\nIs that right?",
            "A": "one",
            "B": "two",
            "C": "three",
            "D": "four",
            "answer": "C",
        },
    ]
    src = write_rows(tmp_path / "s.csv", rows, "csv")
    out = tmp_path / "o.jsonl"
    maps = ["--map", "question=question", "--map", "options=A,B,C,D", "--map", "answer=answer"]
    res = cli("convert", src, "-o", out, *maps, "--template", "final_choice")
    assert res.exit_code == 0, res.output
    assert f"{src}:3: rejected: the prompt itself is graded as C under template 'final_choice'" in res.output
    assert len(read_jsonl(out)) == 1


def test_json_report_is_one_document(tmp_path, cli):
    src, cases = make_layout(tmp_path, "gpqa", n=40)
    res = cli("convert", src, "-o", tmp_path / "o.jsonl", "--shuffle", "--format", "json", "-q")
    assert res.exit_code == 0
    doc = json.loads(res.stdout)
    assert doc["counts"]["read"] == doc["counts"]["written"] + doc["counts"]["rejected"] == 40
    assert doc["gold_histogram"]["all"]["4"] == {"A": 10, "B": 10, "C": 10, "D": 10}
    assert doc["shuffle"] == {
        "enabled": True,
        "seed": 0,
        "pins": [],
        "rows_with_pins": 0,
        "gold_pinned": 0,
        "unresolved_references": {"rows": 0, "shown": []},
    }
    assert doc["templates"][0]["id"] == "boxed" and doc["templates"][0]["rows"] == 40
    assert doc["sources"][0]["map"]["correct"] == "Correct Answer"


@pytest.mark.parametrize(
    "args, code, needle",
    [
        (["missing.parquet", "-o", "{tmp}/o.jsonl"], 2, "missing.parquet: no such file"),
        (["{src}", "-o", "{src}"], 2, "is an input"),
        (["{src}", "-o", "{tmp}/o.jsonl", "--preset", "nope"], 2, "unknown preset 'nope'"),
        (["{src}", "-o", "{tmp}/o.jsonl", "--map", "question=q"], 2, "no column 'q'"),
        (["{src}", "-o", "{tmp}/o.jsonl", "--preset", "gpqa"], 2, "no column 'Correct Answer'"),
        (["{src}", "-o", "{tmp}/o.jsonl", "--map", "answer_type=index1"], 0, ""),
        (["{src}", "-o", "{tmp}/o.jsonl", "--map", "answer_type=letter"], 1, "no row could be converted"),
        (["{src}", "-o", "{tmp}/o.jsonl", "--template", "boxed:x"], 2, "neither a built-in template"),
        (["{src}", "-o", "-"], 2, "not stdout"),
        (["-", "-o", "{tmp}/o.jsonl"], 2, "not stdin"),
        (["{src}", "-o", "{tmp}/o.jsonl", "--revision", "main"], 2, "a revision applies to hub datasets"),
        (["{src}", "-o", "{tmp}/o.jsonl", "--config", "all"], 2, "a config applies to hub datasets"),
        (["{tmp}/notes.txt", "-o", "{tmp}/o.jsonl"], 2, "unsupported file type"),
        (["{bad}", "-o", "{tmp}/o.jsonl"], 1, "not a readable Parquet file"),
    ],
)
def test_exit_codes(tmp_path, cli, args, code, needle):
    src, _ = make_layout(tmp_path, "mmlu")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really")
    fill = {"tmp": str(tmp_path), "src": str(src), "bad": str(tmp_path / "bad.parquet")}
    res = cli("convert", *[a.format(**fill) for a in args])
    assert res.exit_code == code, res.output
    assert needle in res.output
    assert "Traceback" not in res.output
    if code:
        assert not (tmp_path / "o.jsonl").exists()
        json_res = cli("convert", *[a.format(**fill) for a in args], "--format", "json")
        doc = json.loads(json_res.stdout)
        assert doc["ok"] is False and doc["error"]["exit_code"] == code


def test_failure_mid_run_leaves_no_output(tmp_path, cli):
    """A template that breaks only on rows with 5 options: rows with 3 and 4 options were already written to
    the temporary files; none of it may appear under the output or rejects names."""
    src, _ = make_layout(tmp_path, "arc", n=12)  # 3, 4, 5 options in turn
    f = tmp_path / "t.j2"
    f.write_text(
        "---\ngrading_mode: lenient_answer_colon\n---\n{{ question }}\n{{ options_block }}\n"
        "{% if n_options == 5 %}{{ oops }}{% endif %}Answer: <letter>\n"
    )
    for out in (tmp_path / "o.jsonl", tmp_path / "outdir"):
        res = cli("convert", src, "-o", out, "--template", f)
        assert res.exit_code == 2 and "'oops' is undefined" in res.output
        assert not out.exists()
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["arc_test.parquet", "t.j2"])


def test_existing_directory_rules(tmp_path, cli):
    src, _ = make_layout(tmp_path, "mmlu")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    res = cli("convert", src, "-o", foreign)
    assert res.exit_code == 2 and "was not written by convert" in res.output
    assert (foreign / "keep.txt").read_text() == "mine"
    ours = tmp_path / "ours"
    assert cli("convert", src, "-o", ours).exit_code == 0
    first = (ours / "test.jsonl").read_bytes()
    assert cli("convert", src, "-o", ours, "--shuffle").exit_code == 0  # a convert output is replaced
    assert (ours / "test.jsonl").read_bytes() != first
    assert json.loads((ours / "convert.json").read_text())["shuffle"]["enabled"] is True


def test_help_teaches(cli):
    res = cli("convert", "--help")
    assert res.exit_code == 0
    for needle in ("Examples:", "--shuffle", "--template", "front matter", "Exit codes"):
        assert needle in res.output
    assert "gpqa" in cli("convert", "--list-presets").output
    assert "final_choice" in cli("convert", "--list-templates").output


def test_uuid_is_uuid5_of_the_documented_identity(tmp_path, cli):
    import uuid

    src, _ = make_layout(tmp_path, "mmlu", n=5)
    out = tmp_path / "o.jsonl"
    assert cli("convert", src, "-o", out).exit_code == 0
    ns = uuid.uuid5(uuid.NAMESPACE_URL, "mcqa-prep/convert")
    for r in read_jsonl(out):
        s = r["metadata"]["source"]
        name = "\x1f".join([s["dataset"], s["config"] or "", s["split"], s["file"], str(s["row"])])
        assert r["uuid"] == str(uuid.uuid5(ns, name))


def test_same_identity_twice_is_refused(tmp_path, cli):
    src, _ = make_layout(tmp_path, "mmlu")
    other = tmp_path / "copy"
    other.mkdir()
    (other / src.name).write_bytes(src.read_bytes())
    for args in ([src, src], [src, other / src.name]):
        res = cli("convert", *args, "-o", tmp_path / "o.jsonl")
        assert res.exit_code == 2 and "would get the same uuids" in res.output
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert cli("convert", src, "-o", a, "--dataset", "mmlu-a").exit_code == 0
    assert cli("convert", other / src.name, "-o", b, "--dataset", "mmlu-b").exit_code == 0
    assert {r["uuid"] for r in read_jsonl(a)}.isdisjoint(r["uuid"] for r in read_jsonl(b))


def test_twenty_six_options_every_template(tmp_path, cli):
    """Up to 26 options: every built-in template passes its controls for letters A-Z and validates."""
    rows = [
        {
            "question": f"Q{i}: which one?",
            "choices": [f"item {i}-{k}" for k in range(2 + i % 25)],
            "answer": i % (2 + i % 25),
        }
        for i in range(75)
    ]
    src = write_rows(tmp_path / "wide.jsonl", rows, "jsonl")
    out = tmp_path / "o.jsonl"
    tpl = [
        "--template",
        "boxed:1",
        "--template",
        "answer_colon:1",
        "--template",
        "final_choice:1",
        "--template",
        "answer_is:1",
    ]
    res = cli("convert", src, "-o", out, "--preset", "mmlu", "--shuffle", *tpl, "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["option_counts"]["26"] == 3 and doc["counts"]["written"] == 75
    controlled = {(c["template_id"], c["options"]) for c in doc["template_controls"]}
    used = {(r["template_metadata"]["template_id"], len(r["options"])) for r in read_jsonl(out)}
    assert used == controlled  # controls ran for exactly the (template, option count) pairs written
    v = cli("validate", out, "--format", "json")
    assert v.exit_code == 0 and json.loads(v.stdout)["summary"]["errors"] == 0
    for r in read_jsonl(out):
        assert (
            r["options"][ord(r["expected_answer"]) - 65][r["expected_answer"]]
            == rows[r["metadata"]["source"]["row"]]["choices"][rows[r["metadata"]["source"]["row"]]["answer"]]
        )


def test_unwritable_output_is_a_failure_not_a_crash(tmp_path, cli):
    src, _ = make_layout(tmp_path, "mmlu")
    blocker = tmp_path / "afile"
    blocker.write_text("a file where a directory should be")
    for out in (blocker / "o.jsonl", blocker / "outdir"):
        res = cli("convert", src, "-o", out)
        assert res.exit_code == 1, res.output
        assert str(blocker) in res.output and "Traceback" not in res.output
        assert len(res.stderr.strip().splitlines()) == 1 and not out.exists()
    assert blocker.read_text() == "a file where a directory should be"


def test_rerun_in_fresh_processes_is_byte_identical(tmp_path):
    """Nothing depends on Python's per-process hash seed (set order, dict of sets...)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    src, _ = make_layout(tmp_path, "medmcqa", n=40)
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"o{seed}.jsonl"
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "mcqa_prep",
                "convert",
                str(src),
                "-o",
                str(out),
                "--shuffle",
                "-q",
                "--template",
                "boxed:1",
                "--template",
                "final_choice:1",
                "--pin",
                "x",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_placeholder_duplicates_hint_at_drop_choice(tmp_path, cli):
    rows = [
        {"question": "Q?", "choices": ["a", "b", "N/A", "N/A"], "answer": 0},
        {"question": "Q2?", "choices": ["a", "b"], "answer": 1},
    ]
    src = write_rows(tmp_path / "s.jsonl", rows, "jsonl")
    res = cli("convert", src, "-o", tmp_path / "o.jsonl", "--preset", "mmlu")
    assert "remove it with --drop-choice 'N/A'" in res.output
    res = cli(
        "convert",
        src,
        "-o",
        tmp_path / "o.jsonl",
        "--preset",
        "mmlu",
        "--drop-choice",
        "N/A",
        "--format",
        "json",
    )
    assert json.loads(res.stdout)["counts"]["written"] == 2


def test_keep_columns_and_values_json_cannot_hold_natively(tmp_path, cli):
    rows = [
        {"question": "Q?", "choices": ["a", "b"], "answer": 1, "big": 2**70, "tags": ["x", {"y": None}]},
        {"question": "Q2?", "choices": ["c", "d"], "answer": 0, "tags": []},
    ]
    src = write_rows(tmp_path / "s.jsonl", rows, "jsonl")
    out = tmp_path / "o.jsonl"
    res = cli("convert", src, "-o", out, "--preset", "mmlu", "--map", "keep=big,tags")
    assert res.exit_code == 0, res.output
    got = [r["metadata"]["source_fields"] for r in read_jsonl(out)]
    # an integer beyond 64 bits stays exact, as every command writes it (io/writers.row_line); convert wrote
    # it as a string, the one writer that did
    assert got == [{"big": 2**70, "tags": ["x", {"y": None}]}, {"big": None, "tags": []}]
    assert f'"big":{2**70}' in out.read_text(encoding="utf-8")


def test_split_selects_in_a_directory_and_names_a_file(tmp_path, cli):
    d = tmp_path / "src"
    d.mkdir()
    make_layout(d, "mmlu", split="test", n=5)
    make_layout(d, "mmlu", split="validation", n=3, seed=2)
    out = tmp_path / "o.jsonl"
    res = cli("convert", d, "-o", out, "--split", "validation", "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["counts"]["read"] == 3
    res = cli("convert", d, "-o", out, "--split", "train")
    assert (
        res.exit_code == 2
        and "no file of split 'train' (splits by file name: test, validation)" in res.output
    )
    res = cli("convert", d / "mmlu_test.parquet", "-o", out, "--split", "dev")
    assert res.exit_code == 0
    assert {r["metadata"]["source"]["split"] for r in read_jsonl(out)} == {"dev"}


def test_a_bad_byte_costs_one_row_not_the_rest_of_the_file(tmp_path, cli):
    """convert read JSONL as text: one invalid byte ended the file, reported at line 1 (the decoder works in
    8 KiB blocks); it now reads through the one reader (found by tests/hostile)."""
    rows = [
        {
            "id": f"q{i}",
            "question": f"Which is item {i}?",
            "choices": {"text": [f"item {i}", "x", "y"], "label": ["A", "B", "C"]},
            "answerKey": "A",
        }
        for i in range(120)
    ]
    src = tmp_path / "arc.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = src.read_bytes().splitlines(keepends=True)
    lines[100] = lines[100].replace(b'"', b'"\xff', 1)
    lines[101] = lines[101][:-1] + b" " + b"[" * 2000 + b"]" * 2000 + b"\n"
    src.write_bytes(b"".join(lines))
    res = cli("convert", src, "-o", tmp_path / "out.jsonl", "--format", "json")
    doc = json.loads(res.stdout)
    assert doc["counts"]["read"] == 120 and doc["counts"]["written"] == 118, doc["counts"]
    rejects = read_jsonl(tmp_path / "out.rejects.jsonl")
    assert [r["source"]["line"] for r in rejects] == [101, 102]


def test_a_bad_byte_in_a_csv_costs_its_record(tmp_path, cli):
    """The CSV reader ended the file at a byte that is not UTF-8 ('the rest is skipped'); now only that
    record is rejected, at its line (found while fixing the JSONL reader, same class as tests/hostile's)."""
    src = tmp_path / "gpqa.csv"
    body = "".join(f'"Which is item {i}?","item {i}","x {i}","y {i}","z {i}"\n' for i in range(30))
    data = (
        "Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2,Incorrect Answer 3\n" + body
    ).encode()
    lines = data.splitlines(keepends=True)
    lines[10] = lines[10].replace(b"item", b"it\xffem", 1)
    src.write_bytes(b"".join(lines))
    res = cli("convert", src, "-o", tmp_path / "out.jsonl", "--format", "json")
    doc = json.loads(res.stdout)
    assert (doc["counts"]["read"], doc["counts"]["written"], doc["counts"]["rejected"]) == (30, 29, 1)
    [reject] = read_jsonl(tmp_path / "out.rejects.jsonl")
    assert reject["source"]["line"] == 11 and "byte 0xff" in reject["message"]


def test_convert_lines_keep_integers_exact_and_make_other_values_representable():
    import datetime
    import decimal

    from mcqa_prep.convert.run import _dumps

    row = {"n": 2**70, "m": -(2**64), "x": float("nan"), "b": b"\x00\xff", "d": decimal.Decimal("1.50"),
           "t": datetime.date(2024, 1, 2), 3: "key"}  # fmt: skip
    line = _dumps(row)
    assert line.endswith(b"\n") and b"1180591620717411303424" in line
    assert json.loads(line) == {"n": 2**70, "m": -(2**64), "x": None, "b": "AP8=", "d": "1.50",
                                "t": "2024-01-02", "3": "key"}  # fmt: skip
