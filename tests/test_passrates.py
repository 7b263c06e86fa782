"""`passrates`: measuring pass rates under one contract, the table format and every way a table is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, SAMPLE, read_jsonl, write_jsonl
from passrate_helpers import DESIGN, dataset, entry, forge_table, read_table_lines, rollout, rollouts
from prep_helpers import make_row

from mcqa_prep.errors import ContractMismatch, InputError, IntegrityError, UsageError
from mcqa_prep.passrates.measure import measure
from mcqa_prep.passrates.table import read_table
from mcqa_prep.policy import GradingPolicy
from mcqa_prep.prompt import prompt_id

DEFAULT = GradingPolicy()
FAO = GradingPolicy(final_answer_only=True)


def _json(res) -> dict:
    assert res.stdout.count('"ok"') == 1, res.stdout  # exactly one JSON document
    return json.loads(res.stdout)


def _rescored(cli, tmp_path: Path, src: Path, name: str, *policy: str) -> Path:
    out = tmp_path / name
    res = cli("rescore", src, "-o", out, *policy)
    assert res.exit_code == 0, res.output
    return out


# ---- measuring ------------------------------------------------------------------------------------------


def test_measure_counts_samples_passes_and_rates_per_question_and_model(tmp_path):
    report = measure([rollouts(tmp_path)], tmp_path / "t.jsonl", rescore=True, key_by="uuid")
    table = read_table(tmp_path / "t.jsonl")
    assert table.contract_id == DEFAULT.contract_id() and table.contract == DEFAULT.contract()
    assert table.header["grader_version"] == DEFAULT.contract()["grader_version"]
    for q, per_model in DESIGN.items():
        by_model = table.entries[f"uuid:row-{q:06d}"]
        assert set(by_model) == set(per_model)
        for model, outcomes in per_model.items():
            e = by_model[model]
            assert (e.samples, e.passes) == (len(outcomes), sum(outcomes))
            assert e.pass_rate == e.mean_reward == sum(outcomes) / len(outcomes)
    c = table.header["counts"]
    assert c["rollouts"] == c["used"] == sum(len(v) for m in DESIGN.values() for v in m.values())
    assert c["questions"] == len(DESIGN) and c["models"] == {"m1": 7, "m2": 2}
    assert table.header["inputs"][0]["name"] == "rollouts.jsonl"
    m1 = report.models["m1"]
    assert m1["pass_rate"] == {"0%": 2, "partial": 3, "100%": 2}
    assert m1["histogram"] == [2, 0, 0, 1, 0, 1, 0, 0, 1, 0, 0, 2]  # rates 0 0 .25 .5 .75 1 1


def test_rescored_input_and_on_the_fly_give_the_same_entries(cli, tmp_path):
    src = rollouts(tmp_path)
    rescored = _rescored(cli, tmp_path, src, "rescored.jsonl")
    a = measure([rescored], tmp_path / "a.jsonl", key_by="uuid")
    b = measure([src], tmp_path / "b.jsonl", rescore=True, key_by="uuid")
    assert a.header["grading"] == "input" and b.header["grading"] == "rescored"
    assert read_table_lines(tmp_path / "a.jsonl")[1] == read_table_lines(tmp_path / "b.jsonl")[1]


def test_measuring_again_gives_the_same_content_hash(tmp_path):
    src = rollouts(tmp_path)
    a = measure([src], tmp_path / "a.jsonl", rescore=True).header
    b = measure([src], tmp_path / "b.jsonl", rescore=True).header
    assert a["content_sha256"] == b["content_sha256"]


def test_pass_is_the_reward_under_the_contract_not_the_recorded_one(tmp_path):
    # recorded rewards say 1 for every rollout; graded here, only the gold letter passes
    rows = [{**rollout(0, ok, "m1"), "reward": 1.0} for ok in (True, False, False)]
    src = write_jsonl(tmp_path / "r.jsonl", rows)
    measure([src], tmp_path / "t.jsonl", rescore=True, key_by="uuid")
    e = read_table(tmp_path / "t.jsonl").entries["uuid:row-000000"]["m1"]
    assert (e.samples, e.passes) == (3, 1)


def test_key_by_prompt_and_uuid_fallback_to_prompt(tmp_path):
    src = rollouts(tmp_path, design={0: {"m1": [True]}, 1: {"m1": [False]}}, uuid=False)
    measure([src], tmp_path / "u.jsonl", rescore=True, key_by="uuid")
    t = read_table(tmp_path / "u.jsonl")
    p0 = prompt_id(make_row(0)["responses_create_params"])
    assert set(t.entries) == {p0, prompt_id(make_row(1)["responses_create_params"])}
    assert t.header["counts"]["keys_by_kind"] == {"prompt": 2}
    measure([rollouts(tmp_path, "r2.jsonl")], tmp_path / "p.jsonl", rescore=True, key_by="prompt")
    assert all(k.startswith("prompt:") for k in read_table(tmp_path / "p.jsonl").entries)


def test_rows_join_gives_options_for_grading_and_uuid_for_the_key(cli, tmp_path):
    ds = dataset(tmp_path)
    src = rollouts(tmp_path, design={3: {"m1": [True, False]}}, uuid=False, options=False)
    out = tmp_path / "t.jsonl"
    res = cli("passrates", "--key-by", "uuid", src, "--rescore", "--rows", ds, "-o", out, "--format", "json")
    assert res.exit_code == 0, res.output
    doc = _json(res)
    assert doc["join"] == {
        "dataset_rows_read": 10,
        "dataset_prompts": 10,
        "dataset_prompt_duplicates": 0,
        "dataset_prompt_conflicts": {"count": 0, "examples": []},
        "dataset_rows_left_out": {"count": 0, "by_reason": {}},
        "uuid_from_join": 2,
    }
    assert doc["counts"]["keys_by_kind"] == {"uuid": 1}
    assert read_table(out).entries["uuid:row-000003"]["m1"].passes == 1
    assert read_table(out).header["join_inputs"][0]["name"] == "train.jsonl"


def test_model_comes_from_request_then_response_then_default(tmp_path):
    a = rollout(0, True, "asked")
    b = rollout(0, True, None)
    b["response"]["model"] = "served"
    c = rollout(0, True, None)
    src = write_jsonl(tmp_path / "r.jsonl", [a, b, c])
    with pytest.raises(InputError) as exc:
        measure([src], tmp_path / "t.jsonl", rescore=True, key_by="uuid")
    assert exc.value.reason == "rollout_model_unknown" and "r.jsonl:3" in str(exc.value)
    measure([src], tmp_path / "t.jsonl", rescore=True, default_model="named", key_by="uuid")
    assert set(read_table(tmp_path / "t.jsonl").entries["uuid:row-000000"]) == {"asked", "served", "named"}


def test_nemo_gym_fixture_rollouts_joined_by_prompt(cli, tmp_path):
    out = tmp_path / "t.jsonl"
    res = cli(
        "passrates",
        "--key-by",
        "uuid",
        FIXTURES / "example_rollouts_with_template_metadata.jsonl",
        "--rescore",
        "--rows",
        FIXTURES / "example_with_template_metadata.jsonl",
        "-o",
        out,
    )
    assert res.exit_code == 0, res.output
    t = read_table(out)
    uuids = {f"uuid:{r['uuid']}" for r in read_jsonl(FIXTURES / "example_with_template_metadata.jsonl")}
    assert set(t.entries) == uuids
    assert t.models == {"/hf_models/Qwen/Qwen3-30B-A3B-Instruct-2507": 5}


def test_sample_rollouts_golden_entries(tmp_path):
    """The table's entry lines for the embedded sample are data (a format change changes the golden file)."""
    out = tmp_path / "t.jsonl"
    measure(
        [SAMPLE / "rollouts.jsonl"],
        out,
        rescore=True,
        rows_paths=[SAMPLE / "train.jsonl", SAMPLE / "validation.parquet"],
        key_by="uuid",
    )
    golden = REPO / "data" / "golden" / "passrates_sample_entries.jsonl"
    assert read_table_lines(out)[1] == golden.read_bytes().splitlines(keepends=True)


# ---- refusals while measuring ------------------------------------------------------------------------------


def test_two_contracts_refused_naming_each_with_its_row_count(cli, tmp_path):
    src = rollouts(tmp_path)
    a = _rescored(cli, tmp_path, src, "a.jsonl")
    b = _rescored(
        cli,
        tmp_path,
        rollouts(tmp_path, "r2.jsonl", design={0: {"m1": [True]}}),
        "b.jsonl",
        "--final-answer-only",
    )
    out = tmp_path / "t.jsonl"
    res = cli("passrates", "--key-by", "uuid", a, b, "-o", out)
    assert res.exit_code == 1 and not out.exists()
    n = sum(len(v) for m in DESIGN.values() for v in m.values())
    assert f"{DEFAULT.contract_id()} ({n} rollout(s))" in res.output
    assert f"{FAO.contract_id()} (1 rollout(s))" in res.output
    assert "--contract" in res.output
    doc = _json(cli("passrates", "--key-by", "uuid", a, b, "-o", out, "--format", "json"))
    assert doc["ok"] is False and doc["error"]["reason"] == "contracts_mixed"
    assert doc["error"]["contracts"] == {DEFAULT.contract_id(): n, FAO.contract_id(): 1}
    # --contract chooses one; the others are counted as left out
    res = cli(
        "passrates",
        "--key-by",
        "uuid",
        a,
        b,
        "-o",
        out,
        "--contract",
        DEFAULT.contract_id(),
        "--format",
        "json",
    )
    assert res.exit_code == 0, res.output
    assert _json(res)["counts"]["other_contracts"] == 1
    assert read_table(out).contract == DEFAULT.contract()


def test_chosen_contract_without_its_policy_records_the_id_only(cli, tmp_path):
    a = _rescored(cli, tmp_path, rollouts(tmp_path), "a.jsonl", "--final-answer-only")
    out = tmp_path / "t.jsonl"
    assert cli("passrates", "--key-by", "uuid", a, "-o", out).exit_code == 0
    t = read_table(out)
    assert t.contract_id == FAO.contract_id() and t.contract is None
    assert cli("passrates", "--key-by", "uuid", a, "-o", out, "--final-answer-only").exit_code == 0
    assert read_table(out).contract == FAO.contract()
    res = cli("passrates", "--key-by", "uuid", a, "-o", out, "--format", "json", "--reasoning-mode", "none")
    assert res.exit_code == 1 and _json(res)["error"]["reason"] == "rollouts_contract"
    assert FAO.contract_id() in res.stdout


def test_rollouts_without_a_contract_refused(cli, tmp_path):
    src = rollouts(tmp_path)
    res = cli("passrates", "--key-by", "uuid", src, "-o", tmp_path / "t.jsonl")
    assert res.exit_code == 1 and "carry no grading contract" in res.output and "--rescore" in res.output
    assert not (tmp_path / "t.jsonl").exists()


def test_contract_not_found_and_contract_with_rescore(cli, tmp_path):
    a = _rescored(cli, tmp_path, rollouts(tmp_path), "a.jsonl")
    res = cli("passrates", "--key-by", "uuid", a, "-o", tmp_path / "t.jsonl", "--contract", FAO.contract_id())
    assert res.exit_code == 1 and DEFAULT.contract_id() in res.output
    res = cli(
        "passrates",
        "--key-by",
        "uuid",
        a,
        "-o",
        tmp_path / "t.jsonl",
        "--contract",
        FAO.contract_id(),
        "--rescore",
    )
    assert res.exit_code == 2


def test_rollouts_that_cannot_be_graded_fail_or_are_skipped_and_counted(cli, tmp_path):
    rows = [rollout(0, True, "m1"), {**rollout(1, True, "m1"), "response": None}, "{not json"]
    src = write_jsonl(tmp_path / "r.jsonl", rows)
    out = tmp_path / "t.jsonl"
    res = cli("passrates", "--key-by", "uuid", src, "--rescore", "-o", out, "--format", "json")
    assert res.exit_code == 1 and not out.exists()
    err = _json(res)["error"]
    assert err["reason"] == "invalid_rollouts" and err["by_kind"] == {"response": 1, "unreadable": 1}
    res = cli(
        "passrates",
        "--key-by",
        "uuid",
        src,
        "--rescore",
        "-o",
        out,
        "--on-invalid",
        "reject",
        "--format",
        "json",
    )
    assert res.exit_code == 0, res.output
    assert _json(res)["counts"]["invalid"] == 2 and read_table(out).header["counts"]["used"] == 1


def test_rescored_invalid_rows_and_bad_rewards_are_not_samples(cli, tmp_path):
    src = write_jsonl(
        tmp_path / "r.jsonl", [rollout(0, True, "m1"), {**rollout(1, True, "m1"), "response": 3}]
    )
    rescored = tmp_path / "rescored.jsonl"
    cli("rescore", src, "-o", rescored)  # exits 1 (one invalid row) but writes both rows
    rows = read_jsonl(rescored)
    rows.append({**rows[0], "reward": float("nan")})
    write_jsonl(tmp_path / "x.jsonl", [json.dumps(r) for r in rows])  # Python writes NaN
    with pytest.raises(InputError) as exc:
        measure([tmp_path / "x.jsonl"], tmp_path / "t.jsonl", key_by="uuid")
    assert exc.value.details["by_kind"] == {"invalid_row": 1, "reward": 1}


def test_output_equal_to_input_and_stdin_refused(cli, tmp_path):
    src = rollouts(tmp_path)
    assert cli("passrates", "--key-by", "uuid", src, "--rescore", "-o", src).exit_code == 2
    with pytest.raises(UsageError):
        measure(["-"], tmp_path / "t.jsonl", rescore=True, key_by="uuid")


def test_text_report(cli, tmp_path):
    res = cli("passrates", "--key-by", "uuid", rollouts(tmp_path), "--rescore", "-o", tmp_path / "t.jsonl")
    assert res.exit_code == 0, res.output
    assert "9 entries (7 question(s), 2 model(s)), keyed by uuid" in res.output
    assert "m1: 7 question(s), mean pass rate 0.5000; 0%: 2, partial: 3, 100%: 2" in res.output


# ---- reading a table: every refusal ------------------------------------------------------------------------


@pytest.fixture
def table(tmp_path) -> Path:
    measure([rollouts(tmp_path)], tmp_path / "t.jsonl", rescore=True, key_by="uuid")
    return tmp_path / "t.jsonl"


def test_edited_entry_is_refused_by_its_content_hash(table):
    header, lines = read_table_lines(table)
    lines[0] = lines[0].replace(b'"passes":0', b'"passes":1').replace(b'"pass_rate":0.0', b'"pass_rate":0.25')
    table.write_bytes(json.dumps(header).encode() + b"\n" + b"".join(lines))
    with pytest.raises(IntegrityError) as exc:
        read_table(table)
    assert exc.value.reason == "table_edited" and "edited after it was written" in str(exc.value)


def test_edited_header_is_refused(table):
    header, lines = read_table_lines(table)
    header["key_by"] = "prompt"
    table.write_bytes(json.dumps(header).encode() + b"\n" + b"".join(lines))
    with pytest.raises(IntegrityError, match="content hash"):
        read_table(table)
    header["key_by"] = "uuid"
    header["contract_id"] = FAO.contract_id()
    table.write_bytes(json.dumps(header).encode() + b"\n" + b"".join(lines))
    with pytest.raises(IntegrityError, match="does not match the recorded contract"):
        read_table(table)


def test_removed_line_is_refused(table):
    header, lines = read_table_lines(table)
    table.write_bytes(json.dumps(header).encode() + b"\n" + b"".join(lines[1:]))
    with pytest.raises(IntegrityError):
        read_table(table)


def _forge(table: Path, lines: list[bytes], **header_changes) -> Path:
    header, _ = read_table_lines(table)
    return forge_table(table, {**header, **header_changes}, lines)


def test_duplicate_keys_refused_even_with_a_matching_hash(table):
    e = entry("uuid:a", "m1", 2, 1)
    _forge(table, [e, e], entries=2, counts={**read_table_lines(table)[0]["counts"], "models": {"m1": 2}})
    with pytest.raises(InputError, match="line 3: duplicate entry for key 'uuid:a' and model 'm1'"):
        read_table(table)


def test_nan_rate_refused(table):
    bad = entry("uuid:a", "m1", 2, 1).replace(b'"pass_rate":0.5', b'"pass_rate":NaN')
    _forge(table, [bad], entries=1, counts={**read_table_lines(table)[0]["counts"], "models": {"m1": 1}})
    with pytest.raises(InputError, match=r"line 2: \$.pass_rate: NaN"):
        read_table(table)


@pytest.mark.parametrize(
    "line, message",
    [
        (entry("uuid:a", "m1", 2, 3).replace(b"1.5", b"1"), "3 passes out of 2 samples"),
        (
            entry("uuid:a", "m1", 2, 1).replace(b'"pass_rate":0.5', b'"pass_rate":0.75'),
            "not passes / samples",
        ),
        (b'{"key":"uuid:a"}\n', "required"),
        (entry("other:a", "m1", 2, 1), "does not match"),
        (b"[1, 2]\n", "not of type 'object'"),
        (b"{nope\n", "not valid JSON"),
    ],
)
def test_invalid_entries_refused_with_their_line(table, line, message):
    _forge(table, [line], entries=1, counts={**read_table_lines(table)[0]["counts"], "models": {"m1": 1}})
    with pytest.raises(InputError, match=message) as exc:
        read_table(table)
    assert exc.value.reason == "table_invalid" and "line 2" in str(exc.value)


def test_unsorted_entries_refused(table):
    lines = [entry("uuid:b", "m1", 1, 1), entry("uuid:a", "m1", 1, 1)]
    _forge(table, lines, entries=2, counts={**read_table_lines(table)[0]["counts"], "models": {"m1": 2}})
    with pytest.raises(InputError, match="not sorted"):
        read_table(table)


def test_unknown_and_missing_table_schema_refused(table):
    header, lines = read_table_lines(table)
    forge_table(table, {**header, "table_schema": "passrates.v9"}, lines)
    with pytest.raises(InputError, match="'passrates.v9' is not supported") as exc:
        read_table(table)
    assert exc.value.reason == "table_schema"
    del header["table_schema"]
    forge_table(table, header, lines)
    with pytest.raises(InputError, match="unversioned table"):
        read_table(table)


@pytest.mark.parametrize("content", [b"", b"not json\n", b'{"table_schema": "passrates.v1"}\n'])
def test_not_a_table_refused(tmp_path, content):
    p = tmp_path / "t.jsonl"
    p.write_bytes(content)
    with pytest.raises(InputError) as exc:
        read_table(p)
    assert exc.value.reason == "table_invalid"


def test_contract_check_names_both_ids_and_the_fields(table):
    t = read_table(table)
    t.check_contract(DEFAULT)
    with pytest.raises(ContractMismatch) as exc:
        t.check_contract(FAO)
    e = exc.value
    assert (
        e.reason == "table_contract" and e.found == DEFAULT.contract_id() and e.expected == FAO.contract_id()
    )
    assert "policy.final_answer_only" in e.fields
    assert DEFAULT.contract_id() in str(e) and FAO.contract_id() in str(e)


def test_table_schema_registered_and_header_valid(table):
    from mcqa_prep.schema import SCHEMA_FILES, validator

    assert SCHEMA_FILES["passrates"] == "passrates.v3.schema.json"
    assert SCHEMA_FILES["passrates_v1"] == "passrates.v1.schema.json"  # still read
    header, _ = read_table_lines(table)
    assert list(validator("passrates").iter_errors(header)) == []


def test_hand_made_rescored_rows_with_contract_ids_only(cli, tmp_path):
    """Rows that carry only a contract id (no grader_version, no policy known): the table records the id."""
    c1, c2 = "sha256:" + "1" * 64, "sha256:" + "2" * 64

    def row(q: str, reward: float, contract: str) -> dict:
        return {
            "responses_create_params": {"input": [{"role": "user", "content": q}], "model": "m"},
            "uuid": q,
            "reward": reward,
            "metadata": {"grading": {"status": "ok", "contract": contract}},
        }

    rows = [row("q1", 1.0, c1), row("q1", 0.0, c1), row("q2", 1.0, c1), row("q1", 1.0, c2)]
    src = write_jsonl(tmp_path / "rescored.jsonl", rows)
    out = tmp_path / "t.jsonl"
    res = cli("passrates", "--key-by", "uuid", src, "-o", out)
    assert (
        res.exit_code == 1 and f"{c1} (3 rollout(s))" in res.output and f"{c2} (1 rollout(s))" in res.output
    )
    res = cli("passrates", "--key-by", "uuid", src, "-o", out, "--contract", c1)
    assert res.exit_code == 0, res.output
    t = read_table(out)
    assert (t.contract_id, t.contract, t.header["grader_version"]) == (c1, None, None)
    assert t.entries["uuid:q1"]["m"][:3] == (2, 1, 0.5) and t.entries["uuid:q2"]["m"].pass_rate == 1.0
    assert t.entries["uuid:q1"]["m"].unanswered is None  # the rows record no extracted_answer
    with pytest.raises(ContractMismatch) as exc:
        t.check_contract(DEFAULT)
    assert exc.value.found == c1 and exc.value.expected == DEFAULT.contract_id()
