"""rescore: one output row per input row, in order; joins rollouts with dataset rows; explains changes."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from conftest import CONFORMANCE, FIXTURES, SAMPLE, read_jsonl, report, rescore_request, write_jsonl

# the embedded sample's dataset rows, for joining its rollouts
SAMPLE_ROWS = ("--rows", SAMPLE / "train.jsonl", "--rows", SAMPLE / "validation.parquet")


def _rescore_json(cli, tmp_path, inp, *extra, name="out.jsonl"):
    out = tmp_path / name
    res = cli("rescore", inp, "-o", out, "--format", "json", *extra)
    return res, (json.loads(res.stdout) if res.stdout.strip().startswith("{") else None), out


def test_nemo_gym_example_rollouts_nine_unchanged_one_up(cli, tmp_path):
    ro = tmp_path / "rollouts.jsonl"
    lines = (FIXTURES / "example_rollouts.jsonl").read_text().splitlines() + (
        FIXTURES / "example_rollouts_with_template_metadata.jsonl"
    ).read_text().splitlines()
    write_jsonl(ro, lines)
    res, rep, out = _rescore_json(
        cli,
        tmp_path,
        ro,
        "--rows",
        FIXTURES / "example.jsonl",
        "--rows",
        FIXTURES / "example_with_template_metadata.jsonl",
    )
    assert res.exit_code == 0, res.output
    agree = rep["agreement"]
    report(
        f"NeMo Gym example rollouts rescored with --rows: {agree['unchanged']['count']} unchanged, "
        f"{agree['0->1']['count']} 0->1, {agree['1->0']['count']} 1->0"
    )
    assert agree["recorded"] == 10
    assert agree["unchanged"]["count"] == 9
    assert agree["0->1"]["count"] == 1
    assert agree["1->0"]["count"] == 0
    assert rep["join"]["joined"] == 10
    rows = read_jsonl(out)
    assert len(rows) == 10
    changed = [i for i, r in enumerate(rows) if r["metadata"]["grading"]["changed"]]
    assert changed == [2]  # example_rollouts.jsonl line 3: \boxed{C: text} label form
    g = rows[2]["metadata"]["grading"]
    assert g["previous_reward"] == 0.0 and rows[2]["reward"] == 1.0 and rows[2]["extracted_answer"] == "C"
    # rows keep their input fields, in input order
    for src, dst in zip(lines, rows, strict=True):
        src = json.loads(src)
        assert dst["responses_create_params"] == src["responses_create_params"]
        assert "options" not in dst  # the join feeds the grader; it does not rewrite the rollout


def test_rollouts_without_rows_are_invalid_with_the_fix(cli, tmp_path):
    res, rep, out = _rescore_json(cli, tmp_path, FIXTURES / "example_rollouts.jsonl")
    assert res.exit_code == 1
    assert rep["invalid_rows"]["count"] == 5
    row = read_jsonl(out)[0]
    assert row["metadata"]["grading"]["status"] == "invalid_row"
    assert "join them with their dataset rows" in row["metadata"]["grading"]["message"]
    assert rep["invalid_rows"]["by_kind"] == {"no_options": 5}
    assert "pass --rows DATASET" in res.stderr


def test_bad_lines_become_invalid_rows_and_run_goes_on(cli, tmp_path):
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
    inp = write_jsonl(tmp_path / "in.jsonl", [good, "{not json", no_resp, bad_types, "[1, 2]", good])
    res, rep, out = _rescore_json(cli, tmp_path, inp)
    assert res.exit_code == 1
    rows = read_jsonl(out)
    assert len(rows) == 6
    statuses = [r["metadata"]["grading"]["status"] for r in rows]
    assert statuses == ["ok", "invalid_row", "invalid_row", "invalid_row", "invalid_row", "ok"]
    assert [r["reward"] for r in rows] == [1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    assert "in.jsonl:2" in rows[1]["metadata"]["grading"]["message"]
    assert "not valid JSON" in rows[1]["metadata"]["grading"]["message"]
    assert "response" in rows[2]["metadata"]["grading"]["message"]
    assert "options" in rows[3]["metadata"]["grading"]["message"]
    assert rep["invalid_rows"]["count"] == 4
    assert rep["by_status"] == {"invalid_row": 4, "ok": 2}


def test_fail_on_change_and_text_summary(cli, tmp_path):
    res = cli(
        "rescore",
        SAMPLE / "rollouts.jsonl",
        *SAMPLE_ROWS,
        "-o",
        tmp_path / "o.jsonl",
        "--fail-on-change",
    )
    assert res.exit_code == 1
    assert "recorded reward(s) changed" in res.output
    assert "0->1" in res.output and "1->0" in res.output


def test_output_is_atomic_on_failure(cli, tmp_path):
    out = tmp_path / "o.jsonl"
    res = cli("rescore", tmp_path / "missing.jsonl", "-o", out)
    assert res.exit_code in (1, 2)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_compare_mode_robust_reports_format_misses(cli, tmp_path):
    res, rep, out = _rescore_json(
        cli,
        tmp_path,
        SAMPLE / "rollouts.jsonl",
        *SAMPLE_ROWS,
        "--compare-mode",
        "robust",
    )
    cm = rep["compare_mode"]
    # sample row 5 answers "The answer is C." without the template's box: 0, but robust reads the gold C
    assert cm["format_misses"] >= 1
    assert cm["per_template"]["sample_answer_boxed"]["format_misses"] == 1
    row5 = read_jsonl(out)[5]
    assert row5["reward"] == 0.0
    assert row5["metadata"]["grading"]["compare_mode"]["format_miss"] is True


def _parity_cases():
    return read_jsonl(CONFORMANCE / "nemo_gym_parity_dev.jsonl")


def test_parity_suite_through_rescore(cli, tmp_path):
    """Every parity request through `rescore`, grouped by NeMo Gym's server-config grading_mode."""
    cases = _parity_cases()
    groups = defaultdict(list)
    for c in cases:
        groups[c["config_grading_mode"]].append(c)
    failures, passed = [], 0
    for mode, group in groups.items():
        inp = write_jsonl(tmp_path / f"in-{mode}.jsonl", [c["request"] for c in group])
        extra = ("--grading-mode-override", mode) if mode else ()
        res = cli("rescore", inp, "-o", tmp_path / f"out-{mode}.jsonl", "--format", "json", *extra)
        assert res.exit_code in (0, 1), res.output
        rows = read_jsonl(tmp_path / f"out-{mode}.jsonl")
        assert len(rows) == len(group)
        for c, r in zip(group, rows, strict=True):
            want = c["want"]
            if want.get("error"):
                ok = "status" in r["metadata"]["grading"]  # processed, typed status, run went on
            else:
                from mcqa_prep.grader.letters import allowed_letters

                letters = allowed_letters(c["request"].get("options"))
                w = want["extracted_answer"]
                if w is not None and letters and w.upper() not in letters:
                    w = None  # deliberate deviation: out-of-range letters come back as null
                ok = r["reward"] == want["reward"] and r["extracted_answer"] == w
            if ok:
                passed += 1
            else:
                failures.append((c["id"], want, r["reward"], r["extracted_answer"], r["metadata"]["grading"]))
    print(f"\nparity via rescore: {passed}/{len(cases)} passed")
    report(f"nemo_gym_parity_dev (through rescore): {passed}/{len(cases)} passed")
    assert not failures, failures[:5]


def test_every_rescored_row_matches_the_rescored_row_schema(cli, tmp_path):
    from mcqa_prep.schema import validator

    v = validator("rescored_row")
    good = read_jsonl(SAMPLE / "rollouts.jsonl")
    inp = write_jsonl(tmp_path / "in.jsonl", [*good, "{broken", {"response": 3}])
    res = cli(
        "rescore",
        inp,
        *SAMPLE_ROWS,
        "-o",
        tmp_path / "o.jsonl",
        "--explain",
        "--compare-mode",
        "robust",
    )
    assert res.exit_code == 1  # the two bad rows
    rows = read_jsonl(tmp_path / "o.jsonl")
    assert len(rows) == len(good) + 2
    for i, row in enumerate(rows):
        errors = [e.message for e in v.iter_errors(row)]
        assert errors == [], (i, errors)
        # provenance never copies the response text
        for part in (
            row.get("response", {}).get("output", []) if isinstance(row.get("response"), dict) else []
        ):
            for c in part.get("content", []):
                if len(c.get("text", "")) > 20:
                    assert c["text"] not in json.dumps(row["metadata"])


def _verify_request(text, *, gold="B", tm=None, status="completed", uuid="r"):
    row = {
        "responses_create_params": {
            "input": [{"role": "user", "content": "Q?\nA: alpha\nB: beta\nC: gamma"}]
        },
        "options": [{"A": "alpha"}, {"B": "beta"}, {"C": "gamma"}],
        "expected_answer": gold,
        "uuid": uuid,
        "response": {
            "status": status,
            "output": [{"type": "message", "content": [{"type": "output_text", "text": text}]}],
        },
    }
    if tm is not None:
        row["template_metadata"] = tm
    return row


def test_catastrophic_template_regex_times_out_and_the_run_goes_on(cli, tmp_path):
    evil = {"output_regex": r"(a|aa)+$"}  # exponential backtracking even for the `regex` engine
    rows = [
        _verify_request("a" * 40 + "!", tm=evil, uuid="evil"),
        _verify_request("\\boxed{B}", uuid="fine"),
    ]
    res, rep, out = _rescore_json(cli, tmp_path, write_jsonl(tmp_path / "in.jsonl", rows))
    assert res.exit_code == 0
    got = read_jsonl(out)
    assert got[0]["metadata"]["grading"]["status"] == "regex_timeout" and got[0]["reward"] == 0.0
    assert got[1]["metadata"]["grading"]["status"] == "ok" and got[1]["reward"] == 1.0
    assert rep["by_status"] == {"ok": 1, "regex_timeout": 1}


def test_compare_policy_finds_credit_that_came_only_from_the_thinking(cli, tmp_path):
    rows = [
        _verify_request("<think>It is \\boxed{B}.</think>\nI am not sure.", uuid="thinking-only"),
        _verify_request("<think>maybe A</think>\n\\boxed{B}", uuid="both"),
        _verify_request("<think>\\boxed{B}</think>", uuid="no-final"),
    ]
    policy = tmp_path / "final.json"
    policy.write_text(json.dumps({"final_answer_only": True, "reasoning_mode": "required"}))
    res, rep, out = _rescore_json(
        cli, tmp_path, write_jsonl(tmp_path / "in.jsonl", rows), "--compare-policy", policy
    )
    assert res.exit_code == 0, res.output
    cp = rep["compare_policy"]
    assert cp["same"] == 1
    assert cp["differ"]["1->0"]["count"] == 2
    assert cp["differ"]["1->0"]["examples"] == ["thinking-only", "no-final"]
    got = read_jsonl(out)
    assert got[2]["metadata"]["grading"]["compare_policy"]["status"] == "missing_final_answer"
    assert got[0]["metadata"]["grading"]["compare_policy"]["contract"] == cp["contract"] != rep["contract"]


def test_final_answer_flags_and_rows_from_another_contract_are_reported(cli, tmp_path):
    rows = [_verify_request("<think>\\boxed{A}</think> \\boxed{B}", uuid="x")]
    first = tmp_path / "first.jsonl"
    cli("rescore", write_jsonl(tmp_path / "in.jsonl", rows), "-o", first)
    res, rep, out = _rescore_json(cli, tmp_path, first, "--final-answer-only", name="second.jsonl")
    assert res.exit_code == 0
    old = read_jsonl(first)[0]["metadata"]["grading"]["contract"]
    assert rep["input_contracts"] == {old: 1} and rep["contract"] != old
    g = read_jsonl(out)[0]["metadata"]["grading"]
    assert g["final_answer_only"] is True and g["contract"] == rep["contract"]
    assert g["thinking_chars"] > 0 and g["closing_markers"] == 1


def test_answer_corpus_through_rescore_with_robust_override(cli, tmp_path):
    """The issue's check: answer_corpus_dev.jsonl through `rescore --grading-mode-override robust`."""
    cases = read_jsonl(CONFORMANCE / "answer_corpus_dev.jsonl")
    inp = write_jsonl(tmp_path / "corpus.jsonl", [c["request"] for c in cases])
    res = cli(
        "rescore", inp, "-o", tmp_path / "o.jsonl", "--grading-mode-override", "robust", "--format", "json"
    )
    assert res.exit_code in (0, 1)
    got = read_jsonl(tmp_path / "o.jsonl")
    right = fp = counted = 0
    per_tag: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for c, r in zip(cases, got, strict=True):
        if c["contested"]:
            continue
        counted += 1
        ok = r["extracted_answer"] == c["want"]["extracted_answer"]
        right += ok
        fp += c["want"]["extracted_answer"] is None and r["extracted_answer"] is not None
        for t in c["tags"]:
            per_tag[t][0] += ok
            per_tag[t][1] += 1
    print(f"\nrobust via rescore: {right}/{counted} non-contested right, {fp} false positive(s)")
    report(
        f"answer_corpus_dev robust (through rescore): {right}/{counted} non-contested right, {fp} false positive(s)"
    )
    for t, (a, n) in sorted(per_tag.items()):
        print(f"  {t:24} {a}/{n}")
    assert right >= 0.95 * counted and fp <= 1


def test_rows_index_leaves_out_rows_without_options_and_counts_them(cli, tmp_path):
    """`--rows data/sample` also reads rollouts.jsonl itself: those rows cannot complete a join, and are
    counted as left out (no_options)."""
    res, rep, out = _rescore_json(cli, tmp_path, SAMPLE / "rollouts.jsonl", "--rows", SAMPLE)
    assert res.exit_code == 0
    assert rep["join"] == {
        "joined": 12,
        "not_found": {"count": 0, "examples": []},
        "dataset_rows_read": 24,
        "dataset_prompts": 12,
        "dataset_prompt_duplicates": 0,
        "dataset_prompt_conflicts": {"count": 0, "examples": []},
        "dataset_rows_left_out": {
            "count": 12,
            "by_reason": {
                "no_options": {
                    "count": 12,
                    "examples": rep["join"]["dataset_rows_left_out"]["by_reason"]["no_options"]["examples"],
                }
            },
        },
    }
    assert rep["join"]["dataset_rows_left_out"]["by_reason"]["no_options"]["examples"][0].endswith(
        "rollouts.jsonl:1"
    )
    assert "invalid_row" not in rep["by_status"]


def test_rows_with_null_options_and_a_custom_regex_are_graded_as_nemo_gym_does(cli, tmp_path):
    """NeMo Gym 0.7.0 trusts the captured letter when a row has no options (grading.md, deviation 1)."""
    row = {
        "responses_create_params": {"input": [{"role": "user", "content": "Q?"}]},
        "options": None,
        "expected_answer": "B",
        "template_metadata": {"output_regex": r"Answer:\s*([A-D])"},
        "response": {
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "Answer: B"}]}]
        },
    }
    res, rep, out = _rescore_json(cli, tmp_path, write_jsonl(tmp_path / "in.jsonl", [row]))
    assert res.exit_code == 0, res.output
    graded = read_jsonl(out)[0]
    assert graded["reward"] == 1.0 and graded["extracted_answer"] == "B"


def test_parquet_values_json_cannot_hold_are_written_as_null_and_listed(cli, tmp_path):
    """A Parquet verify request with a bytes column is rescored, not a crash (found by tests/hostile)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = read_jsonl(SAMPLE / "train.jsonl")[:2]
    for r in rows:
        r["response"] = {"output": [{"type": "message", "content": [{"type": "output_text", "text": "x"}]}]}
    src = tmp_path / "requests.parquet"
    pq.write_table(pa.Table.from_pylist(rows).append_column("blob", pa.array([b"\xff", None])), src)
    res = cli("rescore", src, "-o", tmp_path / "out.jsonl", "-q")
    assert res.exit_code == 0, res.output
    out = read_jsonl(tmp_path / "out.jsonl")
    assert out[0]["blob"] is None and out[0]["metadata"]["grading"]["non_json_replaced"] == ["$.blob"]
    assert "non_json_replaced" not in out[1]["metadata"]["grading"]


@pytest.mark.parametrize("workers", [1, 2])
def test_rows_whose_nan_was_written_as_null_are_counted(tmp_path, workers):
    """NaN/Infinity cannot be written as JSON: rescore writes null and lists the paths in the row's
    metadata.grading; the report counted nothing, so a run that changed values read as clean (found by an
    audit)."""
    from mcqa_prep import parallel
    from mcqa_prep.rescore.run import rescore

    lines = []
    for i in range(40):
        row = {
            "uuid": f"u{i}",
            "responses_create_params": {"input": [{"role": "user", "content": f"Q{i}?"}]},
            "options": [{"A": "a"}, {"B": "b"}],
            "expected_answer": "A",
            "metadata": {"score": float("nan") if i % 7 == 3 else 1.5},
            "response": {"output_text": "\\boxed{A}"},
        }
        lines.append(json.dumps(row))  # Python's json writes NaN, as a careless producer does
    src = tmp_path / "req.jsonl"
    src.write_text("\n".join(lines) + "\n")
    mp = pytest.MonkeyPatch()
    mp.setattr(parallel, "JSONL_CHUNK_BYTES", 1024)
    try:
        rep = rescore(rescore_request(src, tmp_path / "out.jsonl", workers=workers))
    finally:
        mp.undo()
    doc = rep.to_dict()["values_written_as_null"]
    assert doc["count"] == 6 and doc["examples"] == ["u3", "u10", "u17", "u24", "u31"]
    rows = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["uuid"] for r in rows if r["metadata"]["score"] is None] == [f"u{i}" for i in range(3, 40, 7)]


def test_a_run_request_is_checked_alike_for_every_engine(tmp_path):
    """rescore's local and Ray engines take one request (RescoreRequest: the run's settings, runs.RunRequest,
    beside rescore's own) and refuse a bad run setting in one way, before anything is read."""
    from mcqa_prep.errors import UsageError
    from mcqa_prep.rescore.run import rescore, setup
    from mcqa_prep.rescore.shards import rescore_shards as rescore_on_ray

    src = write_jsonl(tmp_path / "in.jsonl", [{"options": [{"A": "a"}], "expected_answer": "A"}])
    for bad, message in (
        ({"workers": 0}, "workers must be at least 1"),
        ({"examples": -1}, "examples must be"),
    ):
        for run in (rescore, rescore_on_ray, setup):
            with pytest.raises(UsageError, match=message):
                run(rescore_request(src, tmp_path / "out", **bad))
    assert not (tmp_path / "out").exists()
    req = rescore_request(src, tmp_path / "out.jsonl", examples=2, rows=[src])
    assert req.run.input == src and req.rows == (src,) and req.run.workers == 1
