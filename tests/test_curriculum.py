"""`mcqa-prep curriculum`: the schedule kinds as asked, the per-row columns, rows in schedule order, what
becomes of every input row, and the refusals."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import read_jsonl, write_jsonl
from synthetic_rollouts import dataset_rows, generate, write

from mcqa_prep.columns import column_value, source_of
from mcqa_prep.curriculum.schedule import (
    NO_EVIDENCE,
    ScheduleSpec,
    build,
    materialize,
    quotas,
    row_weights,
    split_steps,
)
from mcqa_prep.errors import UsageError
from mcqa_prep.passrates.measure import measure
from mcqa_prep.policy import GradingPolicy

QUESTIONS = 300


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("curriculum")
    design = generate(seed=9, questions=QUESTIONS, models={"m1": (1.5, 1.5), "m2": (3, 1)}, samples=8)
    measure([write(tmp / "rescored.jsonl", design.rows)], tmp / "t.jsonl")
    rows = dataset_rows(QUESTIONS + 20, ["arc", "sciq"], ["bio", "chem", "phys"])  # 20 without evidence
    return tmp, tmp / "t.jsonl", write(tmp / "rows.jsonl", rows)


def _read(path: Path) -> tuple[dict, list[dict]]:
    lines = [json.loads(ln) for ln in path.read_text().splitlines()]
    return lines[0], lines[1:]


def test_easy_first_bootstrap_then_a_window_shifting_harder(cli, inputs, tmp_path):
    _, table, rows = inputs
    out = tmp_path / "s.jsonl"
    res = cli(
        "curriculum", table, "--rows", rows, "-o", out, "--model", "m1", "--schedule", "easy-first",
        "--bootstrap-steps", "10", "--steps", "70", "--window", "2",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    header, ranges = _read(out)
    assert header["schedule"] == {
        "kind": "easy-first",
        "steps": 70,
        "bootstrap_steps": 10,
        "window": 2,
        "no_evidence_weight": 0.1,
    }
    assert [r["window"] for r in ranges] == [[0, 1], [1, 2], [2, 3], [3, 4]]
    assert [r["phase"] for r in ranges] == ["bootstrap", "shift", "shift", "shift"]
    assert [(r["step_start"], r["step_end"]) for r in ranges] == [(0, 10), (10, 30), (30, 50), (50, 70)]
    per_bucket = header["buckets"]["rows"]
    assert header["rows"]["without_evidence"] > 0
    for r in ranges:
        lo, hi = r["window"]
        assert set(r["bucket_weights"]) <= {str(b) for b in range(lo, hi + 1)} | {"none"}
        # the rows without evidence: their own stream at its own weight, never in a difficulty bucket
        assert r["bucket_weights"]["none"] == pytest.approx(0.1)
        inside = sum(per_bucket[lo : hi + 1])
        for b in range(lo, hi + 1):  # within the window a bucket weighs its rows
            assert r["bucket_weights"].get(str(b), 0.0) == pytest.approx(0.9 * per_bucket[b] / inside)
    assert "steps 0-10 bootstrap window 0-1" in cli(
        "curriculum", table, "--rows", rows, "-o", out, "--model", "m1", "--schedule", "easy-first",
        "--bootstrap-steps", "10", "--steps", "70", "--window", "2",
    ).output  # fmt: skip


def test_uniform_schedule_and_columns_and_accounting(cli, inputs, tmp_path):
    _, table, rows = inputs
    out, rows_out = tmp_path / "s.jsonl", tmp_path / "r.jsonl"
    res = cli(
        "curriculum", table, "--rows", rows, "-o", out, "--rows-out", rows_out, "--model", "m2",
        "--schedule", "uniform", "--steps", "10", "--by", "subject", "--drop-unsolved", "--format", "json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    header, ranges = _read(out)
    r = header["rows"]
    written = read_jsonl(rows_out)
    assert (
        r["read"]
        == QUESTIONS + 20
        == r["scheduled"] + sum(r["dropped"].values()) + sum(r["rejected"].values())
    )
    assert len(written) == r["scheduled"] and r["without_evidence"] == 20
    assert len(ranges) == 1 and ranges[0]["phase"] == "main"
    shares = header["domains"]["ratios"]
    assert header["domains"]["ratio_source"] == "rows" and set(shares) == {"bio", "chem", "phys"}
    assert ranges[0]["domain_weights"] == pytest.approx(shares)
    no_ev = [w for w in written if not w["difficulty"]["evidence"]]
    prior_mean = round(header["prior"]["alpha"] / (header["prior"]["alpha"] + header["prior"]["beta"]), 6)
    assert len(no_ev) == 20 and {w["difficulty"]["posterior_mean"] for w in no_ev} == {prior_mean}
    col = written[0]["difficulty"]
    assert (
        col["model"] == "m2" and col["contract"] == GradingPolicy().contract_id() and col["bucket_count"] == 5
    )
    qs = [
        w["difficulty"]["expected_quantile"]
        for w in sorted(written, key=lambda w: -w["difficulty"]["posterior_mean"])
    ]
    assert qs == sorted(qs) and 0.0 <= qs[0] <= qs[-1] <= 1.0  # 0 the easiest
    assert {w["uuid"] for w in written} <= {f"q{q:05d}" for q in range(QUESTIONS + 20)}


def _cell(key: str) -> int:
    return NO_EVIDENCE if key == "none" else int(key)


def _row_cell(difficulty: dict) -> int:
    return difficulty["bucket_index"] if difficulty["evidence"] else NO_EVIDENCE


def test_rows_in_schedule_order_follow_the_quotas(cli, inputs, tmp_path):
    _, table, rows = inputs
    out, ordered = tmp_path / "s.jsonl", tmp_path / "o.jsonl"
    args = ["curriculum", table, "--rows", rows, "-o", out, "--model", "m1", "--steps", "12", "--ranges", "3"]
    res = cli(*args, "--ordered-out", ordered, "--prompts-per-step", "16", "--by", "source", "--seed", "7")
    assert res.exit_code == 0, res.output
    header, ranges = _read(out)
    got = read_jsonl(ordered)
    assert len(got) == 12 * 16 == header["ordered"]["rows"]
    for r in ranges:
        want = quotas({d: {_cell(b): w for b, w in per.items()} for d, per in r["weights"].items()}, 16)
        for step in range(r["step_start"], r["step_end"]):
            batch = got[step * 16 : (step + 1) * 16]
            cells = Counter((x["difficulty"]["domain"], _row_cell(x["difficulty"])) for x in batch)
            assert cells == Counter(want)
    again = tmp_path / "o2.jsonl"
    assert (
        cli(
            *args, "--ordered-out", again, "--prompts-per-step", "16", "--by", "source", "--seed", "7"
        ).exit_code
        == 0
    )
    assert again.read_bytes() == ordered.read_bytes()  # seeded: the same order again


def test_rows_prepared_under_another_contract_are_refused(cli, inputs, tmp_path):
    _, table, _ = inputs
    rows = dataset_rows(5, ["a"], ["s"])
    rows[2]["metadata"]["mcqa_prep"] = {"contract": GradingPolicy(final_answer_only=True).contract_id()}
    src = write_jsonl(tmp_path / "rows.jsonl", rows)
    res = cli("curriculum", table, "--rows", src, "-o", tmp_path / "s.jsonl", "--model", "m1")
    assert res.exit_code == 1 and "prepared under another grading contract" in res.output
    assert "rows.jsonl:3" in res.output and not (tmp_path / "s.jsonl").exists()


def test_a_stamp_that_names_no_contract_is_no_contract(cli, inputs, tmp_path):
    """A stamp holding no contract id (a number, an empty string) is read as none, as every command reads it
    (fields.stamp): the row is placed like an unstamped one. An empty string once counted as "another
    contract" and refused the run, while a number did not."""
    _, table, _ = inputs
    rows = dataset_rows(5, ["a"], ["s"])
    rows[1]["metadata"]["mcqa_prep"] = {"contract": 5}
    rows[2]["metadata"]["mcqa_prep"] = {"contract": ""}
    src = write_jsonl(tmp_path / "rows.jsonl", rows)
    res = cli("curriculum", table, "--rows", src, "-o", tmp_path / "s.jsonl", "--model", "m1")
    assert res.exit_code == 0, res.output


def test_unreadable_rows_are_rejected_and_counted(cli, inputs, tmp_path):
    _, table, _ = inputs
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in dataset_rows(4, ["a"], ["s"])) + "{broken\n")
    res = cli(
        "curriculum", table, "--rows", src, "-o", tmp_path / "s.jsonl", "--model", "m1", "--format", "json"
    )
    assert res.exit_code == 0, res.output
    r = json.loads(res.stdout)["header"]["rows"]
    assert (
        r["read"] == 5 and r["rejected"] == {"unreadable": 1} and "rows.jsonl:5" in r["rejected_examples"][0]
    )


@pytest.mark.parametrize(
    "extra, code, message",
    [
        ([], 2, "name the model"),
        (["--model", "nope"], 1, "no pass rates for model 'nope'"),
        (["--model", "m1", "--ordered-out", "o.jsonl"], 2, "--prompts-per-step"),
        (["--model", "m1", "--by", "source", "--domain-ratio", "arc=1"], 2, "no ratio for domain"),
        (
            ["--model", "m1", "--by", "source", "--domain-ratio", "mmlu=1", "--domain-ratio", "*=1"],
            2,
            "'mmlu'",
        ),
        (["--model", "m1", "--domain-ratio", "x"], 2, "DOMAIN=WEIGHT"),
        (["--model", "m1", "--steps", "5", "--bootstrap-steps", "5"], 2, "fewer than the steps"),
        (["--model", "m1", "--schedule", "easy-first", "--window", "9"], 2, "window must be 1..5"),
        (
            [
                "--model",
                "m1",
                "--no-evidence",
                "drop",
                "--drop-solved",
                "--drop-unsolved",
                "--rows-out",
                "s.jsonl",
            ],
            2,
            "three different files",
        ),
    ],
)
def test_refusals(cli, inputs, tmp_path, monkeypatch, extra, code, message):
    _, table, rows = inputs
    monkeypatch.chdir(tmp_path)
    res = cli("curriculum", table, "--rows", rows, "-o", "s.jsonl", *extra)
    assert res.exit_code == code and message in res.output, res.output
    assert len([ln for ln in res.output.splitlines() if ln.startswith("Error")]) == 1
    assert not (tmp_path / "s.jsonl").exists()


def test_schedule_functions():
    assert split_steps(0, 10, 3) == [(0, 3), (3, 7), (7, 10)]
    assert split_steps(5, 7, 10) == [(5, 6), (6, 7)]  # never an empty range
    assert quotas({"a": {0: 0.5, 1: 0.25}, "b": {0: 0.25}}, 3) == {("a", 0): 1, ("a", 1): 1, ("b", 0): 1}
    assert quotas({"a": {0: 0.5, 1: 0.5}}, 3) == {("a", 0): 2, ("a", 1): 1}  # ties: cell order
    cells = {"a": {0: [0.9] * 30, 4: [0.1] * 10}, "b": {2: [0.5] * 5}}
    spec = ScheduleSpec("gaussian", steps=100, ranges=2, start_rate=0.9, end_rate=0.1, sigma=0.05)
    ranges = build(spec, 5, cells, {"a": 0.6, "b": 0.4})
    assert [r.extra["gaussian_mean"] for r in ranges] == [0.7, 0.3]
    assert ranges[0].weights["b"] == {2: pytest.approx(0.4)}  # b has one bucket: all its share goes there
    weights = row_weights(ranges, cells, 100)
    assert sum(weights[(d, b)] * len(v) for d, per in cells.items() for b, v in per.items()) == pytest.approx(
        45
    )
    picks = list(materialize(ranges, {("a", 0): [0, 1], ("a", 4): [2], ("b", 2): [3]}, 4, 1))
    assert len(picks) == 400 and [s for s, _ in picks[:4]] == [0, 0, 0, 0]


def test_columns_read_source_subject_and_paths():
    row = {
        "uuid": "u",
        "category": "top",
        "metadata": {
            "source": {"repo": "cais/mmlu", "config": "anatomy", "split": "test"},
            "subject": "anatomy",
            "category": "meta",
            "source_fields": {"difficulty": 3},
        },
        "template_metadata": {"template_id": "t1"},
    }
    assert source_of(row) == "cais/mmlu/anatomy" and column_value(row, "source") == "cais/mmlu/anatomy"
    assert column_value(row, "subject") == "anatomy"
    assert column_value(row, "category") == "top"  # a top-level column first
    assert column_value(row, "metadata.category") == "meta"
    assert column_value(row, "difficulty") == "3"  # found under metadata.source_fields
    assert column_value(row, "template_metadata.template_id") == "t1"
    assert column_value({"metadata": {"source": {"dataset": "arc.jsonl"}}}, "source") == "arc.jsonl"
    assert column_value({}, "subject") is None


def test_convert_then_prepare_keeps_source_and_subject_for_the_breakdowns(cli, tmp_path):
    """The upstream dataset and subject written by convert survive prepare, so report and curriculum can break
    pass rates down by them."""
    subjects = ["anatomy", "virology", "astronomy"]
    src = write_jsonl(
        tmp_path / "mmlu.jsonl",
        [
            {
                "question": f"Question number {i}?",
                "choices": ["w", "x", "y", "z"],
                "answer": i % 4,
                "subject": subjects[i % 3],
            }
            for i in range(30)
        ],
    )
    converted = tmp_path / "converted.jsonl"
    assert (
        cli("convert", src, "-o", converted, "--preset", "mmlu", "--dataset", "mmlu-mini", "-q").exit_code
        == 0
    )
    prepared = tmp_path / "prepared"
    assert cli("prepare", converted, "-o", prepared, "-q").exit_code == 0
    rows = [r for p in sorted(prepared.glob("train-*.jsonl")) for r in read_jsonl(p)]
    assert len(rows) == 30
    assert {r["metadata"]["source"]["dataset"] for r in rows} == {"mmlu-mini"}
    assert {r["metadata"]["subject"] for r in rows} == set(subjects)
    policy = GradingPolicy()
    rollouts = []
    for i, r in enumerate(rows):
        for j in range(4):
            ok = (i + j) % 3 != 0
            rollouts.append(
                {
                    "responses_create_params": {**r["responses_create_params"], "model": "m"},
                    "uuid": r["uuid"],
                    "reward": 1.0 if ok else 0.0,
                    "extracted_answer": r["expected_answer"] if ok else None,
                    "metadata": {
                        "grading": {
                            "status": "ok",
                            "contract": policy.contract_id(),
                            "grader_version": policy.contract()["grader_version"],
                        }
                    },
                }
            )
    table = tmp_path / "t.jsonl"
    measure([write_jsonl(tmp_path / "rescored.jsonl", rollouts)], table)
    res = cli("report", prepared, "--pass-rates", table, "--by", "subject", "--format", "json", "-q")
    assert res.exit_code == 0, res.output
    section = next(s for s in json.loads(res.stdout)["sections"] if s["kind"] == "passrates")
    by = section["summary"]["by_column"]
    assert [(r["value"], r["questions"]) for r in by["source"]] == [("mmlu-mini", 30)]
    assert {r["value"]: r["questions"] for r in by["subject"]} == dict.fromkeys(subjects, 10)
    res = cli(
        "curriculum",
        table,
        "--rows",
        prepared,
        "-o",
        tmp_path / "s.jsonl",
        "--by",
        "subject",
        "--format",
        "json",
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["header"]["domains"]["rows"] == dict.fromkeys(subjects, 10)


@pytest.mark.parametrize("change", ["truncate", "append"])
def test_rows_changed_between_the_two_reads_are_one_clean_error(cli, inputs, tmp_path, monkeypatch, change):
    """The rows are read twice (placed, then written): a file edited in between was an internal error (a row
    placed by the first read missing from the second); it is the input_changed error, and nothing is written."""
    import shutil

    from mcqa_prep.curriculum import run as run_mod

    _, table, rows = inputs
    src = shutil.copyfile(rows, tmp_path / "rows.jsonl")
    real, reads = run_mod.iter_file, []

    def edited_before_the_second_read(path, *a, **kw):
        reads.append(path)
        if len(reads) == 2:  # the writer's read: the file changes under the command
            data = Path(path).read_bytes()
            Path(path).write_bytes(data[: len(data) // 2] if change == "truncate" else data + data)
        return real(path, *a, **kw)

    monkeypatch.setattr(run_mod, "iter_file", edited_before_the_second_read)
    out, rows_out = tmp_path / "s.jsonl", tmp_path / "r.jsonl"
    res = cli("curriculum", table, "--rows", src, "-o", out, "--rows-out", rows_out, "--model", "m2")
    assert res.exit_code == 1, res.output
    assert len(reads) == 2 and "changed while it was read" in res.output, res.output
    assert "internal error" not in res.output and not out.exists() and not rows_out.exists()


def test_rows_without_evidence_are_their_own_stream_and_a_warning_says_when_they_dominate(
    cli, inputs, tmp_path
):
    """Pass rates for a tenth of the rows: the 2,700 others are one stream at its own weight (default 0.1) in
    every range, never a difficulty bucket, and a warning says they are most of the rows."""
    _, table, _ = inputs
    rows = write(tmp_path / "rows.jsonl", dataset_rows(QUESTIONS * 10, ["arc"], ["bio"]))
    out, rows_out = tmp_path / "s.jsonl", tmp_path / "r.jsonl"
    args = ["curriculum", table, "--rows", rows, "-o", out, "--rows-out", rows_out, "--model", "m1"]
    res = cli(*args, "--steps", "100")
    assert res.exit_code == 0, res.output
    header, ranges = _read(out)
    unmeasured = QUESTIONS * 9
    assert (
        header["rows"]["without_evidence"] == unmeasured and header["schedule"]["no_evidence_weight"] == 0.1
    )
    assert sum(header["buckets"]["rows"]) == QUESTIONS  # the measured rows only
    assert all(r["bucket_weights"]["none"] == pytest.approx(0.1) for r in ranges)
    assert all(sum(r["bucket_weights"].values()) == pytest.approx(1.0) for r in ranges)
    written = read_jsonl(rows_out)
    share = sum(w["difficulty"]["weight"] for w in written if not w["difficulty"]["evidence"])
    assert share / sum(w["difficulty"]["weight"] for w in written) == pytest.approx(0.1, abs=1e-6)
    assert (
        f"warning: {unmeasured:,} of {QUESTIONS * 10:,} scheduled rows (90%) have no pass rate" in res.stderr
    )
    assert "without evidence: 2700 (none: their own stream, weight 0.1" in res.stdout

    res = cli(*args, "--steps", "100", "--no-evidence-weight", "0.3", "--format", "json")
    assert res.exit_code == 0 and "warning:" in res.stderr
    assert all(r["bucket_weights"]["none"] == pytest.approx(0.3) for r in json.loads(res.stdout)["ranges"])

    res = cli(*args, "--steps", "100", "--no-evidence", "drop", "--format", "json")
    assert res.exit_code == 0 and "warning" not in res.stderr
    doc = json.loads(res.stdout)
    assert doc["header"]["rows"]["dropped"] == {"no_evidence": unmeasured}
    assert all("none" not in r["bucket_weights"] for r in doc["ranges"])


def test_a_domain_without_measured_rows_is_all_stream_and_one_without_unmeasured_rows_has_none():
    cells = {"a": {0: [0.9, 0.8], 3: [0.3], -1: [0.5] * 5}, "b": {-1: [0.5, 0.5]}, "c": {1: [0.7]}}
    spec = ScheduleSpec("uniform", steps=10, no_evidence_weight=0.25)
    (r,) = build(spec, 5, cells, {"a": 0.5, "b": 0.3, "c": 0.2})
    assert r.weights["a"] == pytest.approx(
        {0: 0.5 * 0.75 * 2 / 3, 3: 0.5 * 0.75 / 3, NO_EVIDENCE: 0.5 * 0.25}
    )
    assert r.weights["b"] == {NO_EVIDENCE: 0.3} and r.weights["c"] == pytest.approx({1: 0.2})
    assert r.to_dict()["weights"]["a"]["none"] == pytest.approx(0.125)
    with pytest.raises(UsageError, match="without evidence must be in"):
        ScheduleSpec(no_evidence_weight=1.5).check(5)
