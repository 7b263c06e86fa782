"""`prepare` knows its runtime: the manifest's `runtimes` record (stock NeMo Gym 0.7.0 only when it would grade
every row identically; `mcqa-prep serve` always), `--runtime nemo-gym` refusing a contract NeMo Gym cannot
honour (naming the setting, pointing to serve) and rejecting rows its request model refuses, and one warning
line without it."""

from __future__ import annotations

import json

from prep_helpers import make_row, write_rows

from mcqa_prep.prepared.verify import verify_prepared


def _prep(cli_run, tmp_path, rows, *args):
    src = write_rows(tmp_path / "train.jsonl", rows)
    out = tmp_path / "p"
    return cli_run(["prepare", src, "-o", out, "-q", *args]), out


def _manifest(out):
    return json.loads((out / "manifest.json").read_text())


def _run(args):
    from click.testing import CliRunner

    from mcqa_prep.cli import main

    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=True)


def test_a_nemo_gym_contract_is_recorded_honoured_without_a_warning(tmp_path):
    res, out = _prep(_run, tmp_path, [make_row(i) for i in range(4)])
    assert res.exit_code == 0 and "warning" not in res.stderr
    r = _manifest(out)["runtimes"]
    assert r["nemo-gym"] == {
        "runtime": "nemo_gym==0.7.0",
        "honours": True,
        "server_config": {"grading_mode": None},
    }
    assert r["mcqa-prep-serve"] == {"runtime": "mcqa-prep-serve", "honours": True}
    assert (
        "runtime" not in _manifest(out)["settings"]
    )  # not asked: settings as before (old preparations stay fresh)


def test_the_md_override_needs_nemo_gyms_server_config(tmp_path):
    res, out = _prep(
        _run, tmp_path, [make_row(i) for i in range(3)], "--grading-mode-override", "lenient_answer_colon_md"
    )
    assert res.exit_code == 0
    gym = _manifest(out)["runtimes"]["nemo-gym"]
    assert gym["honours"] is True and gym["server_config"] == {"grading_mode": "lenient_answer_colon_md"}


def test_a_contract_nemo_gym_cannot_honour_warns_in_one_line(tmp_path):
    res, out = _prep(_run, tmp_path, [make_row(i) for i in range(3)], "--final-answer-only")
    assert res.exit_code == 0
    warnings = [ln for ln in res.stderr.splitlines() if ln.startswith("warning:")]
    assert (
        len(warnings) == 1
        and "policy.final_answer_only=true" in warnings[0]
        and "mcqa-prep serve" in warnings[0]
    )
    gym = _manifest(out)["runtimes"]["nemo-gym"]
    assert gym["honours"] is False and any("final_answer_only" in w for w in gym["why_not"])


def test_runtime_nemo_gym_refuses_such_a_contract_before_reading_rows(tmp_path):
    res, out = _prep(
        _run, tmp_path, [make_row(0)], "--zero-truncated", "--runtime", "nemo-gym", "--format", "json"
    )
    assert res.exit_code == 2 and not out.exists()
    doc = json.loads(res.stdout)
    assert (
        doc["error"]["reason"] == "runtime_nemo_gym"
        and "policy.zero_truncated=true" in doc["error"]["message"]
    )
    assert "mcqa-prep serve" in doc["error"]["hint"]
    assert doc["error"]["blockers"][0]["setting"] == "policy.zero_truncated"


def test_runtime_nemo_gym_rejects_rows_its_request_model_refuses(tmp_path):
    rows = [make_row(i) for i in range(5)]
    rows[1]["grading_mode"] = "robust"
    rows[3]["uuid"] = 12345
    res, out = _prep(_run, tmp_path, rows, "--runtime", "nemo-gym", "--on-invalid", "reject")
    assert res.exit_code == 0, res.output
    m = _manifest(out)
    assert m["counts"]["written"] == 3 and m["counts"]["rejected_by_rule"] == {"runtime_nemo_gym": 2}
    assert m["settings"]["runtime"] == "nemo-gym" and m["runtimes"]["nemo-gym"]["honours"] is True
    rejects = [json.loads(x) for x in (out / "rejects.jsonl").read_text().splitlines()]
    assert {r["source"]["row"] for r in rejects} == {2, 4}
    assert (
        "NeMo Gym 0.7.0's request model refuses this row: grading_mode 'robust'"
        in rejects[0]["findings"][0]["message"]
    )
    verify_prepared(out)  # a valid preparation
    # the same rows without --runtime: all written, the record says why NeMo Gym cannot honour them
    (tmp_path / "again").mkdir()
    res, out2 = _prep(_run, tmp_path / "again", rows)
    gym = _manifest(out2)["runtimes"]["nemo-gym"]
    assert _manifest(out2)["counts"]["written"] == 5 and gym["honours"] is False
    assert gym["why_not"] == [
        "2 row(s) NeMo Gym 0.7.0 refuses (first: grading_mode 'robust' is not one NeMo Gym 0.7.0 accepts (strict_single_letter_boxed, lenient_boxed, lenient_answer_colon))"
    ]


def test_up_to_date_reports_the_record_and_an_older_manifest_without_it_still_verifies(tmp_path):
    rows = [make_row(i) for i in range(3)]
    res, out = _prep(_run, tmp_path, rows)
    res = _run(["prepare", tmp_path / "train.jsonl", "-o", out, "--format", "json"])
    doc = json.loads(res.stdout)
    assert doc["status"] == "up_to_date" and doc["runtimes"]["nemo-gym"]["honours"] is True
    m = _manifest(out)
    del m["runtimes"]
    (out / "manifest.json").write_text(json.dumps(m))
    assert verify_prepared(out).rows == 3
