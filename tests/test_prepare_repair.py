"""`prepare --repair-regexes`: rows whose template output_regex the regex audit errs on (rule regex_audit) are
written with the audit's fix in its place, the original in their stamp, counted by template; without it the
failure names the remedy and counts the rows it repairs (docs/design/prepare.md, "Repairing template regexes")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import FIXTURES, SAMPLE, read_jsonl, write_jsonl

from mcqa_prep.grader import grade_text
from mcqa_prep.prepare import prepare
from mcqa_prep.prepared import manifest as mf
from mcqa_prep.runtimes import row_problem
from mcqa_prep.schema import validator

TEMPLATED = "example_with_template_metadata.jsonl"
REPAIRED_TEMPLATES = {
    "mcqa_benchmark_002": 1,
    "mcqa_generated_015": 1,
    "mcqa_generated_019": 1,
    "mcqa_generated_027": 1,
}
MODE = "strict_single_letter_boxed"  # the rows' own mode: the policy default (they name none)


def _shard_rows(out: Path) -> list[dict]:
    doc = mf.read(out).to_dict()
    return [r for f in doc["files"] if f["kind"] == "shard" for r in read_jsonl(out / f["path"])]


def _prompt(row: dict) -> str:
    return row["responses_create_params"]["input"][0]["content"]


def _letters(row: dict) -> str:
    return "".join(next(iter(o)) for o in row["options"])


def _fixes_named_by_validate(src: Path) -> dict[int, str]:
    """Row line -> the rewritten pattern that validate's regex_audit finding names."""
    from mcqa_prep.validate import validate_paths

    report = validate_paths([src], max_findings=0)
    out = {}
    for f in report.findings:
        if f.rule == "regex_audit":
            out[f.line] = re.search(r"; fix: `(.+?)` \(", f.message).group(1)
    return out


def _nemo_gym_re(pattern: str, text: str) -> str | None:
    """NeMo Gym 0.7.0's reading of one output_regex pattern, written from docs/design/grading.md with Python's re (not
    the project's grader): IGNORECASE, every match, the last one wins, group 1 stripped and upper-cased."""
    found = list(re.compile(pattern, re.IGNORECASE).finditer(text))
    if not found:
        return None
    m = found[-1]
    got = (m.group(1) if m.re.groups else m.group(0)).strip().upper()
    return got if len(got) == 1 else None


def test_nemo_gym_templated_example_repaired(tmp_path, cli):
    """The upstream templates: four rows repaired and counted, the fifth (an unrendered prompt, not a regex)
    rejected; each repaired row carries validate's named fix, its original in the stamp, is a valid NeMo Gym
    row, and grades its rollout as the recorded reward while no longer misgrading the audit's prose."""
    src = FIXTURES / TEMPLATED
    originals = read_jsonl(src)
    out = tmp_path / "prepared"
    r = cli("prepare", src, "-o", out, "--repair-regexes", "--on-invalid", "reject", "--format", "json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["counts"]["repaired"] == 4
    assert report["counts"]["repaired_by_template"] == REPAIRED_TEMPLATES
    assert report["counts"]["rejected_by_rule"] == {"template_unrendered": 1}
    assert [x["template_id"] for x in report["repairs"]] == [
        "mcqa_generated_027",
        "mcqa_benchmark_002",
        "mcqa_generated_019",
        "mcqa_generated_015",
    ]
    manifest = mf.read(out).to_dict()
    assert manifest["settings"]["repair_regexes"] is True
    assert manifest["counts"]["repaired"] == 4 and manifest["repairs"] == report["repairs"]
    assert list(validator("manifest").iter_errors(manifest)) == []
    assert manifest["runtimes"]["nemo-gym"]["honours"] is True

    named = _fixes_named_by_validate(src)
    rows = _shard_rows(out)
    assert len(rows) == 4
    row_schema = validator("prepared_row")
    from mcqa_prep.validate.regex_audit import audit

    for row in rows:
        line = row["metadata"]["mcqa_prep"]["source"]["row"]
        orig = originals[line - 1]
        original = orig["template_metadata"]["output_regex"]
        fixed = row["template_metadata"]["output_regex"]
        assert fixed == named[line] != original  # the fix validate's finding names
        assert row["metadata"]["mcqa_prep"]["repaired"] == {"output_regex": original, "rule": "regex_audit"}
        # nothing else of the row changed
        rest = {k: v for k, v in row.items() if k not in ("metadata", "template_metadata", "grading_mode")}
        assert rest == {k: v for k, v in orig.items() if k not in ("template_metadata",)}
        assert {k: v for k, v in row["template_metadata"].items() if k != "output_regex"} == {
            k: v for k, v in orig["template_metadata"].items() if k != "output_regex"
        }
        assert list(row_schema.iter_errors(row)) == [] and row_problem(row) is None
        # every counterexample the audit found in the original is no longer misgraded
        letters = _letters(row)
        errors = audit("str", (original,), letters, MODE, 0.5).errors
        assert errors
        for c in errors:
            res = grade_text(c.probe.text, row["options"], "", MODE, row["template_metadata"])
            assert res.mode != "output_regex" or res.extracted_answer in c.probe.accept, c.probe.text
            assert _nemo_gym_re(fixed, c.probe.text) in c.probe.accept | {None}
            assert _nemo_gym_re(original, c.probe.text) == c.got  # the original misgrades it

    # the recorded rollouts: where the original regex read the answer right, the repaired row gives the
    # recorded reward (through rescore's join with the prepared rows)
    rollouts = read_jsonl(FIXTURES / "example_rollouts_with_template_metadata.jsonl")
    by_prompt = {_prompt(o): o for o in originals}
    kept = {_prompt(r) for r in rows}
    mine = [ro for ro in rollouts if _prompt(ro) in kept]
    assert len(mine) == 4
    for ro in mine:
        orig = by_prompt[_prompt(ro)]
        text = ro["response"]["output"][-1]["content"][0]["text"]
        before = grade_text(text, orig["options"], orig["expected_answer"], MODE, orig["template_metadata"])
        assert before.extracted_answer == ro["extracted_answer"] and before.reward == ro["reward"] == 1.0
    ro_file = write_jsonl(tmp_path / "rollouts.jsonl", mine)
    res = cli("rescore", ro_file, "--rows", out, "-o", tmp_path / "rescored.jsonl", "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["agreement"]["recorded"] == 4 and doc["agreement"]["unchanged"]["count"] == 4
    for ro, graded in zip(mine, read_jsonl(tmp_path / "rescored.jsonl"), strict=True):
        assert graded["reward"] == ro["reward"] and graded["extracted_answer"] == ro["extracted_answer"]
        assert graded["metadata"]["grading"]["mode"] == "output_regex"
        fixed = next(r for r in rows if _prompt(r) == _prompt(ro))["template_metadata"]["output_regex"]
        text = ro["response"]["output"][-1]["content"][0]["text"]
        assert _nemo_gym_re(fixed, text) == ro["extracted_answer"]

    # the setting is part of the cache decision
    again = cli("prepare", src, "-o", out, "--repair-regexes", "--on-invalid", "reject")
    assert (
        again.exit_code == 0
        and "up to date" in again.output
        and "4 with a repaired output_regex" in again.output
    )
    stale = cli("prepare", src, "-o", out, "--on-invalid", "reject")
    assert stale.exit_code == 1
    assert "settings.repair_regexes: true != false" in stale.output and "--overwrite" in stale.output
    assert cli("verify", out).exit_code == 0


def test_the_failure_names_the_remedy_and_counts_rows_and_templates(tmp_path, cli):
    src = FIXTURES / TEMPLATED
    r = cli("prepare", src, "-o", tmp_path / "out", "--format", "json")
    assert r.exit_code == 1
    err = json.loads(r.stdout)["error"]
    assert err["reason"] == "invalid_rows_some_repairable"
    assert err["repairable_rows"] == 4 and err["repairable_templates"] == 4
    assert err["repairable"]["by_template"] == REPAIRED_TEMPLATES
    assert "--repair-regexes" in err["hint"] and "--on-invalid reject" in err["hint"]
    assert "--" not in err["message"]  # the library names no flag
    # every invalid row repairable: the hint names that remedy alone
    only = write_jsonl(tmp_path / "regexes.jsonl", read_jsonl(src)[1:])
    r = cli("prepare", only, "-o", tmp_path / "out")
    assert r.exit_code == 1
    last = r.output.strip().splitlines()[-1]
    assert (
        "4 of 4 row(s) invalid (regex_audit: 4); the regex audit's fix repairs the output_regex of all of them"
        in last
    )
    assert last.endswith(
        "nothing written; pass --repair-regexes to write the regex audit's fix in place of their output_regex and "
        "keep them (docs/design/prepare.md, 'Repairing template regexes')"
    )
    assert "--on-invalid" not in last
    # a repairable regex on a row that another rule rejects too: the repair alone would not do
    rows = read_jsonl(src)[1:]
    rows[0]["expected_answer"] = "Z"
    mixed = write_jsonl(tmp_path / "mixed.jsonl", rows)
    err = json.loads(cli("prepare", mixed, "-o", tmp_path / "out", "--format", "json").stdout)["error"]
    assert err["reason"] == "invalid_rows_some_repairable" and err["repairable_rows"] == 4
    assert "--on-invalid reject" in err["hint"]


def test_rejecting_without_the_option_reports_the_repairable_rows(tmp_path, cli):
    rows = read_jsonl(SAMPLE / "train.jsonl") + read_jsonl(FIXTURES / TEMPLATED)[1:]
    src = write_jsonl(tmp_path / "mixed.jsonl", rows)
    r = cli("prepare", src, "-o", tmp_path / "out", "--on-invalid", "reject", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["repairable"] == {"rows": 4, "templates": 4, "by_template": REPAIRED_TEMPLATES}
    assert "repaired" not in doc["counts"] and "repair_regexes" not in mf.read(tmp_path / "out").settings
    r = cli("prepare", src, "-o", tmp_path / "out2", "--on-invalid", "reject")
    assert "note: 4 rejected row(s) of 4 template(s)" in r.output and "--repair-regexes" in r.output


def _row(
    tmp_path: Path, output_regex, prompt_tail: str = "Answer with the letter.", clean: bool = False
) -> Path:
    row = {
        "responses_create_params": {
            "input": [
                {"role": "user", "content": f"Which one?\nA: red\nB: green\nC: blue\nD: gray\n{prompt_tail}"}
            ]
        },
        "options": [{"A": "red"}, {"B": "green"}, {"C": "blue"}, {"D": "gray"}],
        "expected_answer": "C",
        "uuid": "r1",
        "template_metadata": {"template_id": "t1", "output_regex": output_regex},
    }
    return write_jsonl(tmp_path / "row.jsonl", [row] + (read_jsonl(SAMPLE / "train.jsonl") if clean else []))


def test_every_pattern_of_a_list_is_repaired(tmp_path):
    patterns = [r"Final Choice:\s*([A-Za-z])", r"answer is\s*\(?([A-Za-z])\)?"]
    src = _row(tmp_path, patterns)
    out = tmp_path / "out"
    rep = prepare([src], out, repair_regexes=True, workers=1)
    assert rep.counts["repaired"] == 1 and rep.counts["repaired_by_template"] == {"t1": 1}
    (row,) = _shard_rows(out)
    fixed = row["template_metadata"]["output_regex"]
    assert isinstance(fixed, list) and len(fixed) == 2
    assert all(new != old and "(?-i:[A-D])" in new for new, old in zip(fixed, patterns, strict=True))
    assert row["metadata"]["mcqa_prep"]["repaired"]["output_regex"] == patterns
    for text, want in (("Final Choice: C", "C"), ("so the answer is (C).", "C")):
        assert grade_text(text, row["options"], "C", MODE, row["template_metadata"]).extracted_answer == want
    for text in ("Final Choice: because C fits.", "The answer is C.\n\nNote that the answer is a guess."):
        res = grade_text(text, row["options"], "C", MODE, row["template_metadata"])
        assert res.extracted_answer in ("C", None), text
    # validate's finding names the whole list, since no single rewrite clears it
    from mcqa_prep.validate import validate_paths

    (f,) = [f for f in validate_paths([src]).findings if f.rule == "regex_audit"]
    assert json.dumps(fixed) in f.message


def test_a_regex_without_a_fix_stays_an_error(tmp_path):
    from mcqa_prep.errors import InvalidRows

    src = _row(tmp_path, r"(?<=Answer: )[A-Za-z]", clean=True)  # no capture group to rewrite
    for repair in (False, True):
        with pytest.raises(InvalidRows) as failed:
            prepare([src], tmp_path / "out", repair_regexes=repair, workers=1)
        assert failed.value.counts["rejected_by_rule"] == {"regex_audit": 1}
        assert failed.value.reason == "invalid_rows" and "repairs" not in str(failed.value)
    rep = prepare([src], tmp_path / "rej", repair_regexes=True, on_invalid="reject", workers=1)
    assert rep.counts["rejected"] == 1 and rep.counts["repaired"] == 0 and rep.counts["written"] == 8


def test_edge_cases_alone_are_not_repaired(tmp_path):
    """A regex with only regex_audit_edge warnings (NeMo Gym's boxed template reads `\\boxed{Q}` as Q, which
    earns 0 anyway) is written as it is, with or without the option."""
    src = _row(tmp_path, r"\\boxed\{\s*([A-Za-z])\s*\}", "Put the letter in \\boxed{}.")
    rep = prepare([src], tmp_path / "out", repair_regexes=True, workers=1)
    assert rep.counts["written"] == 1 and rep.counts["repaired"] == 0
    assert rep.counts["warnings_by_rule"].get("regex_audit_edge") == 1
    (row,) = _shard_rows(tmp_path / "out")
    assert row["template_metadata"]["output_regex"] == r"\\boxed\{\s*([A-Za-z])\s*\}"
    assert "repaired" not in row["metadata"]["mcqa_prep"]


def test_parquet_and_workers_give_the_same_repairs(tmp_path):
    src = FIXTURES / TEMPLATED
    first = prepare([src], tmp_path / "a", repair_regexes=True, on_invalid="reject", workers=1)
    more = prepare([src], tmp_path / "b", repair_regexes=True, on_invalid="reject", workers=2, shard_rows=1)
    assert first.counts == more.counts and first.repairs == more.repairs
    assert [r["template_metadata"] for r in _shard_rows(tmp_path / "a")] == [
        r["template_metadata"] for r in _shard_rows(tmp_path / "b")
    ]
    pq = prepare([src], tmp_path / "p", repair_regexes=True, on_invalid="reject", output_format="parquet")
    assert pq.counts["repaired"] == 4
    from mcqa_prep import load_prepared

    ds = load_prepared(tmp_path / "p", split="train")
    for row, want in zip(ds, _shard_rows(tmp_path / "a"), strict=True):
        assert row["template_metadata"]["output_regex"] == [want["template_metadata"]["output_regex"]]
        stamp = row["metadata"]["mcqa_prep"]["repaired"]
        assert stamp == {
            "output_regex": [want["metadata"]["mcqa_prep"]["repaired"]["output_regex"]],
            "rule": "regex_audit",
        }


def test_validate_says_prepare_can_repair(cli):
    src = FIXTURES / TEMPLATED
    r = cli("validate", src)
    assert r.exit_code == 1
    assert "4 row(s) fail regex_audit" in r.output and "mcqa-prep prepare --repair-regexes" in r.output
    doc = json.loads(cli("validate", src, "--format", "json").stdout)
    assert "--repair-regexes" in doc["error"]["hint"]
    clean = cli("validate", FIXTURES / "example.jsonl")
    assert "--repair-regexes" not in clean.output


def test_nemo_gym_itself_takes_the_repaired_rows_and_grades_them_right(tmp_path):
    """NeMo Gym 0.7.0's own code (its wheel, `make bench-deps`; skipped when absent): its row models accept the
    repaired rows, its verify() gives the recorded rollouts their reward, and it no longer misgrades the
    audit's counterexamples, which it misgrades with the original rows."""
    from nemo_gym_models import load_models

    models = load_models()  # skips, saying why, when the wheel is not installed
    import nemo_gym_ref

    from mcqa_prep.validate.regex_audit import audit

    ng = nemo_gym_ref.load(nemo_gym_ref.SITE)
    src = FIXTURES / TEMPLATED
    prepare([src], tmp_path / "out", repair_regexes=True, on_invalid="reject", workers=1)
    rows = _shard_rows(tmp_path / "out")
    originals = {_prompt(r): r for r in read_jsonl(src)}
    rollouts = {_prompt(r): r for r in read_jsonl(FIXTURES / "example_rollouts_with_template_metadata.jsonl")}
    assert len(rows) == 4

    def verify(row: dict, text: str) -> dict:
        response = json.loads(json.dumps(rollouts[_prompt(row)]["response"]))
        response["output"][-1]["content"][0]["text"] = text
        return json.loads(ng.verify_row({**row, "response": response}))

    for row in rows:
        models.task_data.model_validate(row)
        models.run_request.model_validate(row)
        ro = rollouts[_prompt(row)]
        got = verify(row, ro["response"]["output"][-1]["content"][0]["text"])
        assert (got["reward"], got["extracted_answer"]) == (ro["reward"], ro["extracted_answer"])
        orig = originals[_prompt(row)]
        errors = audit("str", (orig["template_metadata"]["output_regex"],), _letters(row), MODE, 0.5).errors
        for c in errors:
            assert verify(orig, c.probe.text)["extracted_answer"] == c.got  # the original misgrades it
            assert verify(row, c.probe.text)["extracted_answer"] in c.probe.accept | {None}, c.probe.text


def test_a_repaired_rows_facts_rejudged_equal_a_fresh_check(tmp_path):
    """RowChecker.check_fixed (the repaired row's facts re-judged under the fix, prepare's second pass) gives
    the findings and keys that checking the repaired row anew gives, for every repairable row: the templated
    fixture's string regexes, a list of patterns, and a string one in a row with other findings."""
    import dataclasses

    from mcqa_prep.io.readers import iter_file
    from mcqa_prep.validate.facts import Config
    from mcqa_prep.validate.row_checker import RowChecker

    rows = [*read_jsonl(FIXTURES / TEMPLATED), *read_jsonl(_row(tmp_path, [r"Final Choice:\s*([A-Za-z])"]))]
    odd = dict(rows[0], grading_mode="no_such_mode", uuid=None)  # other rules fire besides the audit
    src = write_jsonl(tmp_path / "all.jsonl", [*rows, odd])
    checker = RowChecker(Config(1.0))
    seen = []
    for rec in iter_file(src):
        out, keys, fix = checker.check_repair(rec)
        if fix is None:
            continue
        seen.append(type(fix.value).__name__)
        tm = rec.data["template_metadata"]
        fixed = dataclasses.replace(
            rec, data={**rec.data, "template_metadata": {**tm, "output_regex": fix.value}}
        )
        assert checker.check_fixed(fix, fixed) == RowChecker(Config(1.0)).check(fixed), rec.line
    assert seen.count("str") >= 4 and "list" in seen, seen  # re-judged, and (a list) checked anew
