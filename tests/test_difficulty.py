"""`prepare` with pass rates: filtering by measured difficulty, refusing foreign or damaged evidence, cache
rules. End to end through the CLI, plus the library's decisions (golden cases, accept.decide)."""

from __future__ import annotations

import json

import pytest
from conftest import REPO, read_jsonl
from passrate_helpers import DESIGN, QUESTIONS, dataset, make_setup, read_table_lines, rollouts
from passrate_helpers import json_doc as _json
from passrate_helpers import kept as _kept
from prep_helpers import mtimes

from mcqa_prep.errors import IntegrityError, StaleCache
from mcqa_prep.passrates.difficulty import DifficultyRequest, PassRateFilter
from mcqa_prep.policy import GradingPolicy
from mcqa_prep.prepare.run import prepare
from mcqa_prep.prepared import manifest as mf

DEFAULT = GradingPolicy()
FAO = GradingPolicy(final_answer_only=True)


@pytest.fixture
def setup(cli, tmp_path):
    return make_setup(cli, tmp_path)


# ---- filtering keeps exactly the right rows ------------------------------------------------------------------

CASES = [
    (["--drop-solved"], {"solved": {4, 5}}),
    (["--drop-unsolved"], {"unsolved": {0, 6}}),
    (["--drop-solved", "--drop-unsolved"], {"solved": {4, 5}, "unsolved": {0, 6}}),
    (["--keep-pass-rate", "0.25:0.75"], {"pass_rate_below": {0, 6}, "pass_rate_above": {4, 5}}),
    (["--keep-pass-rate", "0.5:"], {"pass_rate_below": {0, 1, 6}}),
    (["--keep-pass-rate", ":0.5"], {"pass_rate_above": {3, 4, 5}}),
    (["--drop-solved", "--no-evidence", "drop"], {"solved": {4, 5}, "no_evidence": {7, 8, 9}}),
    (["--no-evidence", "drop"], {"no_evidence": {7, 8, 9}}),
    (["--drop-solved", "--model", "m2"], {"solved": {2}}),
    (
        ["--drop-unsolved", "--model", "m2", "--no-evidence", "drop"],
        {"unsolved": {4}, "no_evidence": {0, 1, 3, 5, 6, 7, 8, 9}},
    ),
]


@pytest.mark.parametrize("args, dropped", CASES)
def test_filter_keeps_exactly_the_right_rows(cli, tmp_path, setup, args, dropped):
    ds, table = setup
    out = tmp_path / "out"
    model = [] if "--model" in args else ["--model", "m1"]
    res = cli("prepare", ds, "-o", out, "--pass-rates", table, *model, *args, "--format", "json")
    assert res.exit_code == 0, res.output
    gone = set().union(*dropped.values())
    assert _kept(out) == set(range(QUESTIONS)) - gone
    counts = _json(res)["counts"]
    assert counts["dropped_by_reason"] == {r: len(q) for r, q in sorted(dropped.items())}
    assert counts["read"] == counts["written"] + counts["rejected"] + counts["dropped"] == QUESTIONS
    m = mf.read(out).to_dict()  # schema-valid and self-consistent: read = written + rejected + dropped
    assert m["counts"]["dropped"] == len(gone)
    assert cli("verify", out).exit_code == 0


def test_manifest_records_table_contract_settings_and_evidence(cli, tmp_path, setup):
    ds, table = setup
    out = tmp_path / "out"
    res = cli(
        "prepare", ds, "-o", out, "--pass-rates", table, "--model", "m1", "--keep-pass-rate", "0.25:0.75"
    )
    assert res.exit_code == 0, res.output
    assert "dropped 4 (pass_rate_above: 2, pass_rate_below: 2)" in res.output
    d = mf.read(out).section("difficulty")
    header, _ = read_table_lines(table)
    assert d["settings"]["table"] == {
        "table_schema": "passrates.v3",
        "content_sha256": header["content_sha256"],
        "contract_id": DEFAULT.contract_id(),
        "key_by": "uuid",
    }
    assert d["settings"]["filter"] == {
        "evidence": "table",
        "evidence_contract_id": DEFAULT.contract_id(),
        "legacy_evidence": False,
        "model": "m1",
        "keep_pass_rate": [0.25, 0.75],
        "drop_solved": False,
        "drop_unsolved": False,
        "no_evidence": "keep",
    }
    assert d["table_path"] == str(table)
    assert d["evidence"]["rows_with_evidence"] == len(DESIGN) and d["evidence"]["rows_without_evidence"] == 3
    assert d["evidence"]["table_questions_matched"] == len(DESIGN)


def test_prompt_keyed_evidence_matches_rows_by_their_prompt(cli, tmp_path):
    ds = dataset(tmp_path)
    for by in ("uuid", "prompt"):
        table = tmp_path / f"t-{by}.jsonl"
        src = rollouts(tmp_path, uuid=False)  # rollouts that name no uuid: keyed by prompt
        assert cli("passrates", src, "--rescore", "-o", table, "--key-by", by).exit_code == 0
        out = tmp_path / f"out-{by}"
        res = cli("prepare", ds, "-o", out, "--pass-rates", table, "--model", "m1", "--drop-solved")
        assert res.exit_code == 0, res.output
        assert _kept(out) == set(range(QUESTIONS)) - {4, 5}
        assert mf.read(out).section("difficulty")["evidence"]["by_source"] == {"prompt": len(DESIGN)}


def test_every_row_dropped_is_not_a_preparation(cli, tmp_path, setup):
    ds, table = setup
    res = cli(
        "prepare",
        ds,
        "-o",
        tmp_path / "out",
        "--pass-rates",
        table,
        "--model",
        "m1",
        "--keep-pass-rate",
        "0.1:0.2",
        "--no-evidence",
        "drop",
    )
    assert res.exit_code == 1 and "dropped by pass rate" in res.output
    assert not (tmp_path / "out").exists()


# ---- refusing foreign or damaged evidence -------------------------------------------------------------------


def test_table_of_another_contract_refused_naming_both(cli, tmp_path, setup):
    ds, table = setup
    out = tmp_path / "out"
    res = cli(
        "prepare",
        ds,
        "-o",
        out,
        "--pass-rates",
        table,
        "--model",
        "m1",
        "--drop-solved",
        "--final-answer-only",
    )
    assert res.exit_code == 1 and not out.exists()
    assert DEFAULT.contract_id() in res.output and FAO.contract_id() in res.output
    assert "policy.final_answer_only" in res.output
    err = _json(
        cli(
            "prepare",
            ds,
            "-o",
            out,
            "--pass-rates",
            table,
            "--model",
            "m1",
            "--drop-solved",
            "--final-answer-only",
            "--format",
            "json",
        )
    )["error"]
    assert err["reason"] == "table_contract" and err["exit_code"] == 1
    assert (err["found"], err["expected"]) == (DEFAULT.contract_id(), FAO.contract_id())
    assert {"field": "policy.final_answer_only", "recorded": False, "requested": True} in err["differences"]
    # and the other way round: measured under final-answer-only, prepared under the default policy
    fao_table = tmp_path / "fao.jsonl"
    assert (
        cli(
            "passrates", rollouts(tmp_path, "r2.jsonl"), "--rescore", "--final-answer-only", "-o", fao_table
        ).exit_code
        == 0
    )
    res = cli("prepare", ds, "-o", out, "--stamp-reward-profiles", fao_table)
    assert res.exit_code == 1 and DEFAULT.contract_id() in res.output and FAO.contract_id() in res.output
    assert (
        cli("prepare", ds, "-o", out, "--stamp-reward-profiles", fao_table, "--final-answer-only").exit_code
        == 0
    )


def test_table_recording_only_its_contract_id(cli, tmp_path):
    ds = dataset(tmp_path)
    rescored = tmp_path / "rescored.jsonl"
    cli("rescore", rollouts(tmp_path), "-o", rescored, "--final-answer-only")
    table = tmp_path / "t.jsonl"
    assert cli("passrates", "--key-by", "uuid", rescored, "-o", table).exit_code == 0  # contract id only
    res = cli("prepare", ds, "-o", tmp_path / "a", "--pass-rates", table, "--model", "m1", "--drop-solved")
    assert res.exit_code == 1 and "records only its contract id" in res.output
    assert FAO.contract_id() in res.output and DEFAULT.contract_id() in res.output
    res = cli(
        "prepare",
        ds,
        "-o",
        tmp_path / "b",
        "--pass-rates",
        table,
        "--model",
        "m1",
        "--drop-solved",
        "--final-answer-only",
    )
    assert res.exit_code == 0, res.output


def test_table_edited_after_it_was_written_refused(cli, tmp_path, setup):
    ds, table = setup
    out = tmp_path / "out"
    args = ("prepare", ds, "-o", out, "--pass-rates", table, "--model", "m1", "--drop-solved")
    assert cli(*args).exit_code == 0
    header, lines = read_table_lines(table)
    # make q4 look unsolved: consistent numbers, but not the bytes that were hashed
    i = next(i for i, line in enumerate(lines) if b"row-000004" in line and b'"m1"' in line)
    lines[i] = lines[i].replace(b'"passes":4', b'"passes":0').replace(b"1.0", b"0.0")
    table.write_bytes(json.dumps(header).encode() + b"\n" + b"".join(lines))
    before = mtimes(out)
    res = cli(*args)
    assert res.exit_code == 1 and "edited after it was written" in res.output and "content hash" in res.output
    assert mtimes(out) == before  # refused before anything: the preparation is untouched
    res = cli(*args[:3], tmp_path / "other", *args[4:], "--format", "json")
    assert _json(res)["error"]["reason"] == "table_edited"


def test_unknown_table_schema_refused(cli, tmp_path, setup):
    from passrate_helpers import forge_table

    ds, table = setup
    header, lines = read_table_lines(table)
    forge_table(table, {**header, "table_schema": "passrates.v9"}, lines)
    res = cli("prepare", ds, "-o", tmp_path / "out", "--pass-rates", table, "--drop-solved", "--model", "m1")
    assert res.exit_code == 1 and "'passrates.v9' is not supported" in res.output


def test_table_for_rows_that_do_not_exist_refused(cli, tmp_path, setup):
    _, table = setup
    other = dataset(tmp_path, "other.jsonl", range(100, 105))
    res = cli(
        "prepare",
        other,
        "-o",
        tmp_path / "out",
        "--pass-rates",
        table,
        "--model",
        "m1",
        "--drop-solved",
        "--format",
        "json",
    )
    assert res.exit_code == 1 and not (tmp_path / "out").exists()
    err = _json(res)["error"]
    assert err["reason"] == "table_matches_no_rows" and "none of its 7 question(s)" in err["message"]


def test_models_missing_or_ambiguous(cli, tmp_path, setup):
    ds, table = setup
    res = cli("prepare", ds, "-o", tmp_path / "out", "--pass-rates", table, "--drop-solved", "--model", "m3")
    assert (
        res.exit_code == 1
        and "no pass rates for model 'm3'" in res.output
        and "m1 (7 question(s))" in res.output
    )
    res = cli("prepare", ds, "-o", tmp_path / "out", "--pass-rates", table, "--drop-solved")
    assert res.exit_code == 2 and "--model" in res.output and "m2 (2 question(s))" in res.output


def test_single_model_table_needs_no_model(cli, tmp_path):
    ds = dataset(tmp_path)
    table = tmp_path / "t.jsonl"
    cli(
        "passrates",
        "--key-by",
        "uuid",
        rollouts(tmp_path, design={q: {"m1": v["m1"]} for q, v in DESIGN.items()}),
        "--rescore",
        "-o",
        table,
    )
    res = cli("prepare", ds, "-o", tmp_path / "out", "--pass-rates", table, "--drop-unsolved")
    assert res.exit_code == 0, res.output
    assert _kept(tmp_path / "out") == set(range(QUESTIONS)) - {0, 6}


@pytest.mark.parametrize(
    "args",
    [
        ["--drop-solved"],
        ["--model", "m1"],
        ["--pass-rates", "{table}"],
        ["--pass-rates", "{table}", "--upstream-pass-rates", "--drop-solved"],
        ["--pass-rates", "{table}", "--keep-pass-rate", "0.9:0.1"],
        ["--pass-rates", "{table}", "--keep-pass-rate", "half"],
        ["--pass-rates", "{table}", "--drop-solved", "--stamp-reward-profiles", "{other}"],
        ["--upstream-pass-rates", "--drop-solved"],
    ],
)
def test_meaningless_option_combinations_are_usage_errors(cli, tmp_path, setup, args):
    ds, table = setup
    other = tmp_path / "copy.jsonl"
    other.write_bytes(table.read_bytes())
    args = [a.format(table=table, other=other) for a in args]
    res = cli("prepare", ds, "-o", tmp_path / "out", *args)
    assert res.exit_code == 2, res.output
    assert not (tmp_path / "out").exists()


def test_table_inside_an_input_directory_refused(cli, tmp_path, setup):
    ds, table = setup
    res = cli(
        "prepare",
        tmp_path,
        "-o",
        tmp_path.parent / f"{tmp_path.name}-out",
        "--pass-rates",
        table,
        "--drop-solved",
        "--model",
        "m1",
    )
    assert res.exit_code == 2 and "also an input" in res.output


# ---- cache rules ----------------------------------------------------------------------------------------------


def test_same_table_and_thresholds_up_to_date_other_ones_stale(cli, tmp_path, setup):
    ds, table = setup
    out = tmp_path / "out"
    base = ("prepare", ds, "-o", out, "--pass-rates", table, "--model", "m1")
    assert cli(*base, "--keep-pass-rate", "0.25:0.75").exit_code == 0
    before = mtimes(out)
    res = cli(*base, "--keep-pass-rate", "0.25:0.75")
    assert res.exit_code == 0 and "up to date" in res.output and "dropped 4" in res.output
    # the same rollouts (same name, bytes) measured again elsewhere: another file, the same table
    (tmp_path / "elsewhere").mkdir()
    again = tmp_path / "again.jsonl"
    assert (
        cli(
            "passrates", "--key-by", "uuid", rollouts(tmp_path / "elsewhere"), "--rescore", "-o", again
        ).exit_code
        == 0
    )
    assert read_table_lines(again)[0]["content_sha256"] == read_table_lines(table)[0]["content_sha256"]
    assert (
        "up to date"
        in cli(
            "prepare", ds, "-o", out, "--pass-rates", again, "--model", "m1", "--keep-pass-rate", "0.25:0.75"
        ).output
    )
    assert mtimes(out) == before

    res = cli(*base, "--keep-pass-rate", "0.5:1", "--format", "json")
    assert res.exit_code == 1
    err = _json(res)["error"]
    assert err["reason"] == "stale_difficulty" and "--overwrite" in err["hint"]
    assert err["differences"] == [
        {"field": "difficulty.filter.keep_pass_rate", "recorded": [0.25, 0.75], "requested": [0.5, 1.0]}
    ]
    res = cli(*base, "--keep-pass-rate", "0.25:0.75", "--no-evidence", "drop")
    assert res.exit_code == 1 and "difficulty.filter.no_evidence" in res.output
    res = cli("prepare", ds, "-o", out)  # no filter at all is another preparation too
    assert res.exit_code == 1 and "difficulty.filter" in res.output
    assert mtimes(out) == before
    assert cli(*base, "--keep-pass-rate", "0.5:1", "--overwrite").exit_code == 0
    assert _kept(out) == {2, 3, 4, 5, 7, 8, 9}


def test_another_table_is_another_preparation(cli, tmp_path, setup):
    ds, table = setup
    out = tmp_path / "out"
    assert (
        cli("prepare", ds, "-o", out, "--pass-rates", table, "--model", "m1", "--drop-solved").exit_code == 0
    )
    other = tmp_path / "other.jsonl"
    cli(
        "passrates",
        "--key-by",
        "uuid",
        rollouts(tmp_path, "r2.jsonl", design={4: {"m1": [False]}}),
        "--rescore",
        "-o",
        other,
    )
    res = cli(
        "prepare", ds, "-o", out, "--pass-rates", other, "--model", "m1", "--drop-solved", "--format", "json"
    )
    assert res.exit_code == 1
    fields = [d["field"] for d in _json(res)["error"]["differences"]]
    assert fields == ["difficulty.table.content_sha256"]


def test_decide_returns_structured_differences(tmp_path):
    ds = dataset(tmp_path)
    table = tmp_path / "t.jsonl"
    from mcqa_prep.passrates.measure import measure

    measure([rollouts(tmp_path)], table, rescore=True, key_by="uuid")
    request = DifficultyRequest(table, PassRateFilter(model="m1", drop_solved=True))
    prepare([ds], tmp_path / "out", difficulty=request)
    assert prepare([ds], tmp_path / "out", difficulty=request).status == "up_to_date"
    with pytest.raises(StaleCache) as exc:
        prepare(
            [ds],
            tmp_path / "out",
            difficulty=DifficultyRequest(table, PassRateFilter(model="m2", drop_solved=True)),
        )
    assert exc.value.reason == "stale_difficulty"
    assert [(d.field, d.recorded, d.requested) for d in exc.value.differences] == [
        ("difficulty.filter.model", "m1", "m2")
    ]
    with pytest.raises(StaleCache) as exc:
        prepare([ds], tmp_path / "out", difficulty=DifficultyRequest(table, None, stamp=True))
    assert {d.field for d in exc.value.differences} == {
        "difficulty.filter",
        "difficulty.stamp_reward_profiles",
    }


def test_manifest_consistency_counts_dropped_rows(tmp_path, setup):
    ds, table = setup
    out = tmp_path / "out"
    prepare([ds], out, difficulty=DifficultyRequest(table, PassRateFilter(model="m1", drop_solved=True)))
    doc = mf.read(out).to_dict()
    mf.check_consistency(doc, "m")
    for change in (
        lambda c: c["dropped_by_reason"].update(solved=1),
        lambda c: c.update(dropped=5),
        lambda c: c.update(read=c["read"] + 1),
    ):
        bad = json.loads(json.dumps(doc))
        change(bad["counts"])
        with pytest.raises(IntegrityError):
            mf.check_consistency(bad, "m")
    bad = json.loads(json.dumps(doc))
    bad["difficulty"]["settings"]["table"]["contract_id"] = FAO.contract_id()
    with pytest.raises(IntegrityError, match="not the preparation's contract"):
        mf.check_consistency(bad, "m")


def test_old_manifest_without_difficulty_still_reads(tmp_path):
    ds = dataset(tmp_path)
    prepare([ds], tmp_path / "out")
    doc = mf.read(tmp_path / "out").to_dict()
    assert "difficulty" not in doc and "dropped" not in doc["counts"]
    assert prepare([ds], tmp_path / "out").status == "up_to_date"


# ---- golden decisions ----------------------------------------------------------------------------------------


def test_golden_filter_decisions():
    cases = read_jsonl(REPO / "data" / "golden" / "difficulty_cases.jsonl")
    assert len(cases) >= 10
    for case in cases:
        f = PassRateFilter(**case["filter"])
        s, p = case["samples"], case["passes"]
        got = f.reason(None, False, False) if s is None else f.reason(p / s, p == s, p == 0)
        assert got == case["expect"], case["name"]


@pytest.mark.parametrize(
    "lines, reason",
    [
        (
            [
                b'{"key":"uuid:row-000001","mean_reward":0.5,"model":"m1","pass_rate":NaN,"passes":1,"samples":2}\n'
            ],
            "table_invalid",
        ),
        (
            [
                b'{"key":"uuid:row-000001","mean_reward":0.5,"model":"m1","pass_rate":0.5,"passes":1,"samples":2}\n'
            ]
            * 2,
            "table_invalid",
        ),
    ],
)
def test_forged_tables_refused_by_prepare(cli, tmp_path, setup, lines, reason):
    from passrate_helpers import forge_table

    ds, table = setup
    header, _ = read_table_lines(table)
    counts = {**header["counts"], "models": {"m1": len(lines)}}
    forge_table(table, {**header, "entries": len(lines), "counts": counts}, lines)
    res = cli(
        "prepare",
        ds,
        "-o",
        tmp_path / "out",
        "--pass-rates",
        table,
        "--drop-solved",
        "--model",
        "m1",
        "--format",
        "json",
    )
    assert res.exit_code == 1 and _json(res)["error"]["reason"] == reason
    # the same lines without a matching hash: an edited table
    table.write_bytes(json.dumps({**header, "entries": len(lines)}).encode() + b"\n" + b"".join(lines))
    res = cli(
        "prepare",
        ds,
        "-o",
        tmp_path / "out",
        "--pass-rates",
        table,
        "--drop-solved",
        "--model",
        "m1",
        "--format",
        "json",
    )
    assert res.exit_code == 1 and _json(res)["error"]["reason"] == "table_edited"


def test_explicit_full_range_drops_nothing_but_checks_and_counts_the_evidence(cli, tmp_path, setup):
    ds, table = setup
    out = tmp_path / "out"
    res = cli("prepare", ds, "-o", out, "--pass-rates", table, "--model", "m1", "--keep-pass-rate", "0:1")
    assert res.exit_code == 0, res.output
    assert _kept(out) == set(range(QUESTIONS))
    m = mf.read(out).to_dict()
    assert m["counts"]["dropped"] == 0 and m["counts"]["dropped_by_reason"] == {}
    assert m["difficulty"]["evidence"]["rows_with_evidence"] == len(DESIGN)
    res = cli("prepare", ds, "-o", out, "--pass-rates", table, "--model", "m1", "--keep-pass-rate", "0.2:0.8")
    assert res.exit_code == 1 and "difficulty.filter.keep_pass_rate: [0.0, 1.0] != [0.2, 0.8]" in res.output
