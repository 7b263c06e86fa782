"""`mcqa-prep validate` and the RowValidator: every rule at its address, the fast path agreeing with the
schema, controls that never hang, and the command's output and exit codes."""

from __future__ import annotations

import copy
import json
import re
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, write_jsonl
from pull_helpers import write_pulled

from mcqa_prep import schema
from mcqa_prep.io.readers import read_jsonl
from mcqa_prep.records import Row as RowRecord
from mcqa_prep.validate import RULES, RowValidator, controls, normalize_texts, rules_markdown, validate_paths
from mcqa_prep.validate.facts import Config, schema_quiet
from mcqa_prep.validate.registry import ROW
from mcqa_prep.validate.row_checker import RowChecker

CASES_FILE = REPO / "data" / "golden" / "validate_cases.jsonl"
CASES = [json.loads(line) for line in CASES_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]


def _record(case: dict, file: str = "cases.jsonl", line: int = 9) -> RowRecord:
    """The case's row as the reader makes it (a "line" is read as JSONL text: NaN, bad JSON, ...; "arrow"
    columns are added to the row in a Parquet record batch: bytes, decimals, NaN as Parquet holds them)."""
    if "arrow" in case:
        return _arrow_record(case, file, line)
    text = case["line"] if "line" in case else json.dumps(case["row"], ensure_ascii=False)
    [rec] = read_jsonl([text.encode()], file, None, first_line=line, first_index=line - 1)
    return rec


def _arrow_record(case: dict, file: str, line: int) -> RowRecord:
    import datetime
    import decimal

    import pyarrow as pa

    from mcqa_prep.io.readers import batch_records

    def column(spec: dict) -> pa.Array:
        kind, value = spec["type"], spec["value"]
        if kind == "binary":
            return pa.array([bytes.fromhex(value)], pa.binary())
        if kind == "decimal":
            return pa.array([decimal.Decimal(value)], pa.decimal128(9, 2))
        if kind == "duration":
            return pa.array([datetime.timedelta(seconds=value)], pa.duration("s"))
        return pa.array([float(value)], getattr(pa, kind)())

    table = pa.Table.from_pylist([case["row"]])
    for name, spec in case["arrow"].items():
        table = table.append_column(name, column(spec))
    [batch] = table.to_batches()
    return next(batch_records(batch, file, None, line, line - 1))


def _triples(findings) -> list[tuple[str, str, str]]:
    return sorted((f.path, f.rule, f.severity) for f in findings)


def _want(case: dict) -> list[tuple[str, str, str]]:
    return sorted((w["path"], w["rule"], w["severity"]) for w in case["want"])


# ---------------------------------------------------------------------------------------------- golden


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_golden_case(case):
    v = RowValidator()
    for i, row in enumerate(case.get("before", [])):
        v.check(RowRecord("cases.jsonl", i + 1, i, copy.deepcopy(row)))
    findings = v.check(_record(case))
    assert _triples(findings) == _want(case), [f.render() for f in findings]
    for f in findings:
        assert f.file == "cases.jsonl" and f.line == 9 and f.row == 8
        assert f.message and f.rule in RULES
        assert f.severity == RULES[f.rule].severity


def test_golden_cases_cover_every_row_rule():
    covered = {w["rule"] for c in CASES for w in c["want"]}
    row_rules = {name for name, r in RULES.items() if r.scope == ROW or name.startswith("duplicate_")}
    assert row_rules <= covered, sorted(row_rules - covered)


def test_rule_table_in_docs_is_the_registry():
    """docs/design/validate.md's rule table is generated from the registry (regenerate it with
    mcqa_prep.validate.rules_markdown() when a rule changes)."""
    doc = (REPO / "docs" / "design" / "validate.md").read_text(encoding="utf-8")
    table = doc.split("<!-- rules:begin", 1)[1].split("-->", 1)[1].split("<!-- rules:end -->", 1)[0]
    assert table.strip() == rules_markdown().strip()


def test_report_schema_names_every_rule():
    """The validate-report schema's rule enum is the registry's rule list."""
    doc = schema.load_schema("validate_report")
    assert doc["$defs"]["rule"]["enum"] == list(RULES)
    for r in RULES.values():
        assert r.severity in doc["$defs"]["finding"]["properties"]["severity"]["enum"]
        assert r.description and r.fix and r.check is not None


# ---------------------------------------------------------------------------------------------- fixtures


def test_nemo_gym_fixture_rows_are_valid():
    report = validate_paths([FIXTURES / "example.jsonl"], max_findings=0)
    errors = [f.render() for f in report.findings if f.severity == "error"]
    assert errors == []
    assert report.summary["rows_read"] == 5 and report.ok


def test_nemo_gym_template_fixture_is_audited():
    """NeMo Gym 0.7.0's own templated examples: four of five regexes misgrade ordinary English under its
    IGNORECASE/last-match semantics, and the first prompt shows unrendered `{{...}}` (issue 24)."""
    report = validate_paths([FIXTURES / "example_with_template_metadata.jsonl"], max_findings=0)
    got = sorted((f.line, f.rule, f.severity) for f in report.findings)
    assert got == [
        (
            1,
            "prompt_answer_format_regex",
            "warning",
        ),  # 'Answer: \\boxed{{D}}' is read by the mode, not the regex
        (1, "regex_audit_edge", "warning"),  # '\\boxed{Q}': a letter outside the options
        (1, "template_unrendered", "error"),
        (2, "regex_audit", "error"),
        (3, "regex_audit", "error"),
        (3, "regex_negative_control", "warning"),
        (4, "regex_audit", "error"),
        (5, "regex_audit", "error"),
    ]
    by_line = {f.line: f.message for f in report.findings if f.rule == "regex_audit"}
    assert (
        "template 'mcqa_benchmark_002' grades the answer 'Answer: because" in by_line[3]
        and "as B" in by_line[3]
    )
    assert "template 'mcqa_generated_015'" in by_line[5]
    assert all("(?-i:[A-J])" in m and "fix: `" in m for m in by_line.values())  # a fix that passes the audit
    assert not report.ok


def test_fixture_benchmark_002_prompt_echo_is_a_negative_control_warning():
    report = validate_paths([FIXTURES / "example_with_template_metadata.jsonl"], max_findings=0)
    neg = [f for f in report.findings if f.rule == "regex_negative_control"]
    assert [(f.line, f.path, f.severity) for f in neg] == [(3, "$.template_metadata.output_regex", "warning")]
    assert "graded as option A (match 'Answer: A'" in neg[0].message


# ---------------------------------------------------------------------------------------------- one run


def _mixed_file(tmp_path: Path) -> tuple[Path, dict[int, list[tuple[str, str, str]]]]:
    """Every single-row golden case in one file (unique uuids and prompts), with the wanted findings by line."""
    lines: list[str] = []
    want: dict[int, list[tuple[str, str, str]]] = {}
    for i, case in enumerate(c for c in CASES if "before" not in c and "arrow" not in c):  # JSONL cases
        if "line" in case:
            lines.append(case["line"])
        else:
            row = copy.deepcopy(case["row"])
            if isinstance(row.get("uuid"), str):
                row["uuid"] = f"u-{i}"
            msgs = row.get("responses_create_params", {}).get("input") or []
            if len(msgs) == 1 and isinstance(msgs[0].get("content"), str) and msgs[0]["content"].strip():
                msgs[0]["content"] = f"[{i}] " + msgs[0]["content"]
            lines.append(json.dumps(row))
        want[len(lines)] = _want(case)
    return write_jsonl(tmp_path / "mixed.jsonl", lines), want


def test_one_run_reports_every_defect_at_its_line_and_clean_rows_none(tmp_path, cli):
    path, want = _mixed_file(tmp_path)
    report = validate_paths([path], max_findings=0)
    got: dict[int, list] = {line: [] for line in want}
    for f in report.findings:
        got[f.line].append((f.path, f.rule, f.severity))
        assert f.row == f.line - 1 and f.file == str(path)
    assert {k: sorted(v) for k, v in got.items()} == want
    assert report.summary["rows_read"] == len(want)
    assert report.summary["rows_with_errors"] == sum(
        1 for w in want.values() if any(s == "error" for *_, s in w)
    )
    assert not report.ok and report.exit_code == 1
    assert cli("validate", path, "-q").exit_code == 1


def test_parquet_null_filled_options_addresses_are_record_numbers(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    def opts(texts):
        return [{L: (t if L == k else None) for L in "ABCD"} for k, t in texts]

    base = [("A", "Argon"), ("B", "Nitrogen"), ("C", "Oxygen"), ("D", "Carbon dioxide")]
    rows = []
    for i, (gold, options) in enumerate(
        [("A", base), ("E", base), ("B", base[:3] + [("D", None)]), ("C", base)]
    ):
        prompt = f"Q{i}: which is a noble gas?\n" + "\n".join(f"{k}: {t}" for k, t in base)
        rows.append(
            {
                "responses_create_params": {"input": [{"role": "user", "content": prompt}]},
                "options": opts(options),
                "expected_answer": gold,
                "uuid": f"p-{i}",
            }
        )
    path = tmp_path / "train-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    report = validate_paths([path], max_findings=0)
    assert [(f.line, f.row, f.path, f.rule) for f in report.findings] == [
        (2, 1, "$.expected_answer", "expected_answer_not_option"),
        (3, 2, "$.options[3]", "option_shape"),
    ]
    assert report.summary["inputs"] == [{"path": str(path), "kind": "parquet", "rows": 4, "split": "train"}]


def test_malformed_line_is_reported_and_the_next_lines_checked(tmp_path):
    good = CASES[0]["row"]
    other = copy.deepcopy(good)
    other["uuid"] = "u-2"
    other["responses_create_params"]["input"][0]["content"] += " (2)"
    path = write_jsonl(tmp_path / "rows.jsonl", [good, '{"broken": ', other | {"expected_answer": "Z"}])
    report = validate_paths([path], max_findings=0)
    assert [(f.line, f.rule) for f in report.findings] == [
        (2, "malformed_row"),
        (3, "expected_answer_not_option"),
    ]
    assert report.summary["rows_read"] == 3


def test_duplicates_reported_on_later_occurrence_naming_the_first(tmp_path):
    row = CASES[0]["row"]
    a = write_jsonl(tmp_path / "a.jsonl", [row])
    b = write_jsonl(tmp_path / "b.jsonl", [{"x": 1}, row])
    report = validate_paths([a, b], max_findings=0)
    dups = [f for f in report.findings if f.rule.startswith("duplicate_")]
    assert [(f.file, f.line, f.rule, f.severity) for f in dups] == [(str(b), 2, "duplicate_row", "error")]
    assert all(f"{a}:1" in f.message for f in dups)


def test_uuid_shared_by_template_variants_is_a_warning_and_fixture_files_validate_together():
    """NeMo Gym's example files render the same five questions under two templates with the same uuids."""
    files = [FIXTURES / "example.jsonl", FIXTURES / "example_with_template_metadata.jsonl"]
    report = validate_paths(files, max_findings=0)
    errors = {f.rule for f in report.findings if f.severity == "error"}
    assert errors == {"regex_audit", "template_unrendered"}  # the templated file's own defects, nothing else
    dups = [f for f in report.findings if f.rule == "duplicate_uuid"]
    assert len(dups) == 5 and all(f.severity == "warning" and f.path == "$.uuid" for f in dups)


def test_duplicate_prompt_across_splits_mentions_leakage():
    v = RowValidator()
    row = CASES[0]["row"]
    v.check(RowRecord("train.jsonl", 1, 0, copy.deepcopy(row), None, "train"))
    fs = v.check(RowRecord("validation.jsonl", 1, 0, copy.deepcopy(row) | {"uuid": "x"}, None, "validation"))
    assert [f.rule for f in fs] == ["duplicate_prompt"]
    assert "split train vs validation" in fs[0].message


# ---------------------------------------------------------------------------------------------- regex controls


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(\w+\s?)*:", r"(x+x+)+y", r"\s*\s*\s*x"])
def test_catastrophic_regex_is_an_error_quickly(pattern):
    row = copy.deepcopy(CASES[0]["row"]) | {"template_metadata": {"output_regex": pattern}}
    t0 = time.monotonic()
    fs = RowValidator(regex_timeout=0.2).check(RowRecord("x.jsonl", 1, 0, row))
    assert time.monotonic() - t0 < 15
    assert [(f.path, f.rule, f.severity) for f in fs] == [
        ("$.template_metadata.output_regex", "regex_time_bound", "error")
    ]


def test_time_bound_runs_re_in_a_child_for_patterns_only_re_can_run():
    # a pattern compiled by `re` only (no timeout possible in-process) is run in a killed child process
    t0 = time.monotonic()
    tb = controls.check_time_bound(r"(a|aa)+$", re.compile(r"(a|aa)+$", re.IGNORECASE), timeout=0.2)
    assert not tb.ok and tb.engine == "re"
    assert time.monotonic() - t0 < controls.RE_CHILD_BUDGET + 5


def test_safe_patterns_pass_the_time_bound():
    import regex

    for p in [
        r"Answer\s*:\s*(?!Answer)\s*([A-Za-z])\s*",
        r"\\boxed\{\s*([A-Za-z])\s*\}",
        r"ANSWER IS\s*([A-Za-z])\s*",
    ]:
        assert controls.check_time_bound(p, regex.compile(p, regex.I), timeout=0.5).ok, p


@pytest.mark.parametrize(
    ("pattern", "sample"),
    [
        (r"\\boxed\{\s*([A-Za-z])\s*\}", "\\boxed{C}"),
        (r"Option Selected:\s*([A-Za-z])\s*", "Option Selected: C"),
        (r"ANSWER IS\s*([A-Za-z])\s*", "ANSWER IS C"),
        (r"(?<=Answer: )([A-J])\b(?=\s*$)", "Answer: C"),
        (r"\*\*Answer:\*\*\s*([A-J])", "**Answer:** C"),
        (r"(?:answer|choice)\s*[:=]\s*([A-J])", "answer: C"),
        (r"[A-J](?=\s*$)", "C"),
        (r"Answer: (\w)\1?", "Answer: C"),
    ],
)
def test_synthesized_compliant_answers(pattern, sample):
    assert controls.synthesize(pattern, "C") == sample


def test_controls_are_cached_per_pattern_and_letter_set(monkeypatch):
    calls = []
    real = controls.positive_controls
    monkeypatch.setattr(controls, "positive_controls", lambda *a, **k: calls.append(1) or real(*a, **k))
    v = RowValidator()
    row = CASES[0]["row"] | {"template_metadata": {"output_regex": r"Cached Choice:\s*([A-Za-z])"}}
    for i in range(50):
        r = copy.deepcopy(row) | {"uuid": f"u{i}"}
        r["responses_create_params"]["input"][0]["content"] += f" #{i}"
        v.check(RowRecord("x.jsonl", i + 1, i, r))
    assert len(calls) == 1 and v.summary()["patterns_checked"] == 1


# ---------------------------------------------------------------------------------------------- fast path


def _mutations():
    """Clean rows and one-field mutations of them: every field set to values of every JSON type."""
    values = [
        None,
        0,
        1,
        1.0,
        1.5,
        True,
        "",
        " ",
        "A",
        "a",
        "{{",
        [],
        [None],
        [1],
        ["x"],
        [{}],
        {},
        {"A": None},
    ]
    bases = [c["row"] for c in CASES if "row" in c and not c["want"]]
    bases.append(json.loads((FIXTURES / "example.jsonl").read_text().splitlines()[0]))
    for base in bases:
        yield base
        for key in [
            "responses_create_params",
            "options",
            "expected_answer",
            "grading_mode",
            "template_metadata",
            "uuid",
            "reward_profiles",
            "metadata",
        ]:
            for v in values:
                yield base | {key: v}
        for v in values:
            r = copy.deepcopy(base)
            r["responses_create_params"]["input"][0]["content"] = v
            yield r
            r = copy.deepcopy(base)
            r["responses_create_params"]["input"][0]["role"] = v
            yield r
            r = copy.deepcopy(base)
            r["options"][1] = v
            yield r
            r = copy.deepcopy(base)
            r["options"][0] = {"A": v} if not isinstance(v, (list, dict)) else v
            yield r
            r = copy.deepcopy(base)
            r["template_metadata"] = {"output_regex": v, "answer_prefix": v}
            yield r
    for c in CASES:
        if "row" in c:
            yield c["row"]


def test_schema_guard_agrees_with_jsonschema():
    """jsonschema-rs (the guard) accepts a row exactly when jsonschema (the definition) finds nothing."""
    val = schema.validator("row")
    n = 0
    for row in _mutations():
        n += 1
        assert schema_quiet(row) == (not list(val.iter_errors(row))), json.dumps(row)[:300]
    assert n > 500


def _guarded_out(checker: RowChecker, rec: RowRecord) -> tuple[object, list]:
    """The row's facts, and every row rule the guards skipped together with what it finds unguarded."""
    f = checker.facts(rec)
    skipped = []
    for r in RULES.values():
        if r.scope == ROW and r.name != "malformed_row" and r.guard and not (r.guard & f.may):
            skipped.append((r.name, list(r.check(f))))
    return f, skipped


def test_guards_only_skip_rules_that_cannot_fire():
    """Every rule a guard skipped finds nothing when run anyway, on every mutated row; and the offered letters,
    texts and gold the cheap facts give are those of the option walk (the definition)."""
    checker = RowChecker(Config(0.5))
    skips = 0
    for i, row in enumerate(_mutations()):
        for hint in (False, True):
            rec = RowRecord("x.jsonl", i + 1, i, copy.deepcopy(row))
            if hint:  # as the Parquet reader vouches for single-key options
                pairs = (
                    [next(iter(o.items())) for o in row["options"] if isinstance(o, dict) and len(o) == 1]
                    if isinstance(row.get("options"), list)
                    else []
                )
                if (
                    not pairs
                    or len(pairs) != len(row["options"])
                    or not all(isinstance(t, str) for _, t in pairs)
                ):
                    continue
                rec.hint = ([k for k, _ in pairs], [t for _, t in pairs])
            f, skipped = _guarded_out(checker, rec)
            for name, hits in skipped:
                assert hits == [], (name, json.dumps(row)[:300])
                skips += 1
            walk = f.walk()
            usable = [(L, t) for L, (_, _, t) in walk.letters.items() if t.strip()]
            assert list(f.letters) == [L for L, _ in usable] and f.texts == [t for _, t in usable]
    assert skips > 5000


@pytest.mark.parametrize(
    "texts",
    [
        ["Argon", "argon "],
        ["a  b", "A b"],
        ["x\ty", "x y"],
        ["é", "É"],
        ["one", "two", "three"],
        ["a\x01b", "a b"],
    ],
)
def test_normalize_texts_matches_per_text_normalisation(texts):
    assert normalize_texts(texts) == [" ".join(t.lower().split()) for t in texts]


# ---------------------------------------------------------------------------------------------- summary


def test_position_bias_rule(tmp_path):
    base = CASES[0]["row"]
    rows = []
    for i in range(100):
        r = copy.deepcopy(base) | {"uuid": f"u{i}", "expected_answer": "A" if i < 60 else "BCD"[i % 3]}
        r["responses_create_params"]["input"][0]["content"] += f" #{i}"
        rows.append(r)
    report = validate_paths([write_jsonl(tmp_path / "bias.jsonl", rows)], max_findings=0)
    bias = report.summary["position_bias"]
    assert bias["expected"] == {"A": 25.0, "B": 25.0, "C": 25.0, "D": 25.0}
    assert bias["flagged"] == ["A"]
    assert report.summary["expected_answer_histogram"]["A"] == 60
    [f] = report.findings
    assert (f.file, f.line, f.path, f.rule, f.severity) == (
        "<inputs>",
        None,
        "$.expected_answer",
        "answer_position_bias",
        "warning",
    )
    assert report.ok  # a warning only


def test_position_bias_needs_enough_rows(tmp_path):
    rows = []
    for i in range(40):  # expected count per letter 10 < 20: never flagged, whatever the skew
        r = copy.deepcopy(CASES[0]["row"]) | {"uuid": f"u{i}"}
        r["responses_create_params"]["input"][0]["content"] += f" #{i}"
        rows.append(r)
    report = validate_paths([write_jsonl(tmp_path / "small.jsonl", rows)])
    assert report.summary["position_bias"]["flagged"] == [] and report.findings == []


# ---------------------------------------------------------------------------------------------- CLI


def _small_file(tmp_path: Path) -> Path:
    good = CASES[0]["row"]
    bad = copy.deepcopy(good) | {"uuid": "u-2", "expected_answer": "E"}
    bad["responses_create_params"]["input"][0]["content"] += " (2)"
    return write_jsonl(tmp_path / "small.jsonl", [good, bad, "{oops"])


def test_cli_text_output_exact(tmp_path, cli):
    path = _small_file(tmp_path)
    res = cli("validate", path)
    assert res.exit_code == 1
    assert res.output.splitlines() == [
        "findings by rule and template: 2 error(s), 0 warning(s) in 2 group(s)",
        "  error expected_answer_not_option: 1 row(s)",
        "    fix: set it to the correct option's letter",
        f"    e.g. {path}:2: $.expected_answer: error: expected_answer 'E' is not one of the option letters (A, B, C, "
        "D); set it to the letter of the correct option [expected_answer_not_option]",
        "  error malformed_row: 1 row(s)",
        "    fix: fix or remove the line",
        f"    e.g. {path}:3: $: error: not valid JSON: Expecting property name enclosed in double quotes (column 2); "
        "fix or remove this line (the other lines are still checked) [malformed_row]",
        "3 rows read from 1 input(s): 2 with errors, 0 with warnings only; 2 errors, 0 warnings",
        "expected_answer letters (share vs. the share if each row's gold were uniform over its offered "
        "letters): A 1 (100.0% vs 25.0%)",
        "position bias: none (flagged when observed > 2x expected, expected = sum over rows of 1/(number of "
        "offered letters) for rows offering the letter, flagged only when expected >= 20)",
        "FAILED: 2 error(s), 0 warning(s)",
    ]


def test_cli_max_shown_cuts_the_groups_saying_how_many_more(tmp_path, cli):
    res = cli("validate", _small_file(tmp_path), "--max-shown", "1")
    lines = res.output.splitlines()
    assert res.exit_code == 1
    assert lines[4] == "  … and 1 more group(s) (--max-shown 0 lists all; --format json lists every finding)"
    assert lines[5].startswith("3 rows read")
    doc = json.loads(cli("validate", _small_file(tmp_path), "--max-shown", "1", "--format", "json").output)
    assert len(doc["findings"]) == 2 and [g["rule"] for g in doc["summary"]["finding_groups"]] == [
        "expected_answer_not_option",
        "malformed_row",
    ]  # the JSON document keeps every finding and every group


def test_cli_json_report_validates_against_schema(tmp_path, cli):
    path, want = _mixed_file(tmp_path)
    res = cli("validate", path, "--format", "json", "--max-findings", "5")
    assert res.exit_code == 1
    doc = json.loads(res.output)
    schema.validator("validate_report").validate(doc)
    s = doc["summary"]
    assert len(doc["findings"]) == s["findings_shown"] == 5
    assert s["findings_total"] == sum(len(w) for w in want.values())
    assert s["report_version"] == "validate-report.v1" and s["ok"] is False
    assert set(doc["findings"][0]) == {
        "file", "line", "row", "uuid", "template", "path", "rule", "severity", "message"
    }  # fmt: skip


def test_cli_clean_file_exits_0(cli):
    res = cli("validate", FIXTURES / "example.jsonl")
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[-1] == "OK: 0 error(s), 0 warning(s)"


def test_cli_warnings_only_exit_0_and_strict_exit_1(tmp_path, cli):
    # NeMo Gym's mcqa_benchmark_002 row with its regex fixed as the audit proposes: only warnings remain (its
    # prompt shows 'Answer: A', which the regex reads)
    lines = (FIXTURES / "example_with_template_metadata.jsonl").read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[2])
    row["template_metadata"]["output_regex"] = r"Answer\s*:\s*(?!Answer)\s*((?-i:[A-J]))(?![^\n]*\w)\s*"
    path = tmp_path / "warn.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert cli("validate", path).exit_code == 0
    res = cli("validate", path, "--strict")
    assert res.exit_code == 1
    assert "error: the prompt itself is graded as option A" in res.output
    assert (
        res.output.splitlines()[-1] == "FAILED: 2 error(s), 0 warning(s) (--strict: warnings count as errors)"
    )


def test_cli_usage_errors_exit_2(tmp_path, cli):
    assert cli("validate").exit_code == 2
    res = cli("validate", tmp_path / "nope.jsonl")
    assert res.exit_code == 2 and "no such file or directory" in res.output
    assert cli("validate", "--max-findings", "-1", FIXTURES / "example.jsonl").exit_code == 2


def test_cli_stdin(cli):
    text = (FIXTURES / "example.jsonl").read_text(encoding="utf-8") + "not json\n"
    res = cli("validate", "-", input=text)
    assert res.exit_code == 1
    assert res.output.splitlines()[3].startswith("    e.g. <stdin>:6: $: error: not valid JSON")


def test_cli_directory_recursive(tmp_path, cli):
    (tmp_path / "sub").mkdir()
    write_jsonl(tmp_path / "sub" / "train.jsonl", [CASES[0]["row"]])
    write_jsonl(tmp_path / "validation.jsonl", [CASES[0]["row"] | {"uuid": "v-1"}])
    res = cli("validate", tmp_path, "--format", "json")
    doc = json.loads(res.output)
    assert [i["path"] for i in doc["summary"]["inputs"]] == [
        str(tmp_path / "sub" / "train.jsonl"),
        str(tmp_path / "validation.jsonl"),
    ]
    assert [f["rule"] for f in doc["findings"]] == ["duplicate_prompt"]
    assert "(split train vs validation: evaluation leaks into training)" in doc["findings"][0]["message"]
    assert res.exit_code == 0


def _pulled(tmp_path: Path, rows: list) -> Path:
    path = "data/train-00000-of-00001.jsonl"
    data = write_jsonl(tmp_path / "rows.jsonl", rows).read_bytes()
    return write_pulled(tmp_path / "pulled", {path: data}, rows={path: len(rows)})


def test_cli_pulled_dir_verified_and_provenance_recorded(tmp_path, cli):
    d = _pulled(tmp_path, [CASES[0]["row"]])
    res = cli("validate", d, "--format", "json")
    assert res.exit_code == 0, res.output
    [inp] = json.loads(res.output)["summary"]["inputs"]
    assert inp == {
        "path": str(d),
        "kind": "pulled",
        "rows": 1,
        "repo": "nvidia/Nemotron-RL-knowledge-mcqa",
        "repo_type": "dataset",
        "commit": "a" * 40,
        "verified": True,
    }
    text = cli("validate", d).output
    assert (
        f"input {d}: pulled nvidia/Nemotron-RL-knowledge-mcqa@{'a' * 40}, verified against its lock, 1 rows"
        in text
    )


def test_cli_pulled_dir_tampered_fails_unless_no_verify(tmp_path, cli):
    d = _pulled(tmp_path, [CASES[0]["row"]])
    f = d / "data" / "train-00000-of-00001.jsonl"
    f.write_text(f.read_text().replace("Argon", "Argom"), encoding="utf-8")
    res = cli("validate", d)
    assert res.exit_code == 1
    assert "train-00000-of-00001.jsonl: sha256 is" in res.output and "--force-download" in res.output
    res = cli("validate", d, "--no-verify")
    assert res.exit_code == 0
    assert "warning:" in res.output and "--no-verify" in res.output
    assert "NOT verified (--no-verify)" in res.output
