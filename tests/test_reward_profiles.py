"""`prepare --stamp-reward-profiles` and `--upstream-pass-rates`: measured profiles travel with the rows under
their contract; the rows' own upstream profiles are kept, marked, and usable only as legacy evidence."""

from __future__ import annotations

import json

import pytest
from conftest import read_jsonl, repaired_templated_example, write_jsonl
from passrate_helpers import M1_RATE, QUESTIONS, make_setup
from prep_helpers import make_row

from mcqa_prep.policy import GradingPolicy
from mcqa_prep.prepared import manifest as mf

DEFAULT = GradingPolicy()


@pytest.fixture
def setup(cli, tmp_path):
    return make_setup(cli, tmp_path)


# ---- stamping reward_profiles -------------------------------------------------------------------------------


def test_stamp_measured_profiles_and_mark_upstream_ones(cli, tmp_path, setup):
    _, table = setup
    upstream = [{"model_hf_path": "org/big", "num_generations": 8, "pass_rate": 0.5}]
    rows = [
        make_row(i, extra={"reward_profiles": upstream} if i in (2, 8) else None) for i in range(QUESTIONS)
    ]
    ds = write_jsonl(tmp_path / "train.jsonl", rows)
    out = tmp_path / "out"
    res = cli("prepare", ds, "-o", out, "--stamp-reward-profiles", table)
    assert res.exit_code == 0, res.output
    assert "reward_profiles stamped on 7 row(s)" in res.output
    by_q = {int(r["uuid"][4:]): r for r in read_jsonl(out / "train-00000-of-00001.jsonl")}
    cid = DEFAULT.contract_id()
    assert by_q[2]["reward_profiles"] == [
        {**upstream[0], "contract": None, "source": "upstream"},
        {
            "model_hf_path": "m1",
            "num_generations": 4,
            "pass_rate": 0.5,
            "contract": cid,
            "source": "mcqa-prep",
        },
        {
            "model_hf_path": "m2",
            "num_generations": 4,
            "pass_rate": 1.0,
            "contract": cid,
            "source": "mcqa-prep",
        },
    ]
    assert by_q[8]["reward_profiles"] == [{**upstream[0], "contract": None, "source": "upstream"}]
    assert "reward_profiles" not in by_q[9]
    assert by_q[0]["reward_profiles"] == [
        {
            "model_hf_path": "m1",
            "num_generations": 4,
            "pass_rate": 0.0,
            "contract": cid,
            "source": "mcqa-prep",
        }
    ]
    assert len(by_q) == QUESTIONS  # stamping alone drops nothing
    from mcqa_prep.schema import validator

    assert [e.message for r in by_q.values() for e in validator("prepared_row").iter_errors(r)] == []
    doc = mf.read(out).to_dict()
    assert doc["difficulty"]["settings"]["filter"] is None and "dropped" not in doc["counts"]
    assert cli("verify", out).exit_code == 0
    assert "up to date" in cli("prepare", ds, "-o", out, "--stamp-reward-profiles", table).output


def test_stamp_and_filter_with_one_table_parquet_output(cli, tmp_path, setup):
    ds, table = setup
    out = tmp_path / "out"
    res = cli(
        "prepare",
        ds,
        "-o",
        out,
        "--pass-rates",
        table,
        "--stamp-reward-profiles",
        table,
        "--model",
        "m1",
        "--drop-unsolved",
        "--output-format",
        "parquet",
    )
    assert res.exit_code == 0, res.output
    assert cli("verify", out).exit_code == 0
    import pyarrow.parquet as pq

    rows = pq.read_table(out / "train-00000-of-00001.parquet").to_pylist()
    assert {int(r["uuid"][4:]) for r in rows} == set(range(QUESTIONS)) - {0, 6}
    r3 = next(r for r in rows if r["uuid"] == "row-000003")
    assert r3["reward_profiles"][0]["pass_rate"] == M1_RATE[3]


# ---- upstream reward_profiles: legacy evidence, explicit opt-in --------------------------------------------


def test_upstream_profiles_filter_records_unknown_contract(cli, tmp_path):
    src = repaired_templated_example(tmp_path)  # NeMo Gym's own regexes fail validate's audit
    out = tmp_path / "out"
    res = cli(
        "prepare",
        src,
        "-o",
        out,
        "--upstream-pass-rates",
        "--model",
        "openai/gpt-oss-120b",
        "--keep-pass-rate",
        "0.5:0.8",
    )
    assert res.exit_code == 0, res.output
    rates = [
        next(p["pass_rate"] for p in r["reward_profiles"] if p["model_hf_path"] == "openai/gpt-oss-120b")
        for r in read_jsonl(src)
    ]
    kept = {r["uuid"] for r in read_jsonl(out / "train-00000-of-00001.jsonl")}
    assert kept == {r["uuid"] for r, rate in zip(read_jsonl(src), rates, strict=True) if 0.5 <= rate <= 0.8}
    d = mf.read(out).section("difficulty")
    assert d["settings"]["table"] is None
    assert d["settings"]["filter"]["evidence"] == "upstream_reward_profiles"
    assert (
        d["settings"]["filter"]["evidence_contract_id"] is None
        and d["settings"]["filter"]["legacy_evidence"] is True
    )
    assert "legacy: contract unknown" in res.output
    res = cli(
        "prepare", src, "-o", tmp_path / "o2", "--upstream-pass-rates", "--model", "nobody", "--drop-solved"
    )
    assert res.exit_code == 1 and "openai/gpt-oss-120b (5 row(s))" in res.output


@pytest.mark.parametrize(
    "profiles, message",
    [
        ([{"model_hf_path": "m", "pass_rate": float("nan")}], "is not a pass rate"),
        ([{"model_hf_path": "m", "pass_rate": 1.5}], "is not a pass rate"),
        (
            [{"model_hf_path": "m", "pass_rate": 0.5}, {"model_hf_path": "m", "pass_rate": 0.25}],
            "2 profiles for model 'm'",
        ),
    ],
)
def test_bad_upstream_profiles_reject_the_row(tmp_path, cli, profiles, message):
    rows = [
        make_row(0, extra={"reward_profiles": [{"model_hf_path": "m", "pass_rate": 0.5}]}),
        make_row(1, extra={"reward_profiles": profiles}),
    ]
    src = tmp_path / "train.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")  # Python writes NaN
    out = tmp_path / "out"
    res = cli("prepare", src, "-o", out, "--upstream-pass-rates", "--model", "m", "--drop-solved")
    assert res.exit_code == 1 and not out.exists()
    res = cli(
        "prepare",
        src,
        "-o",
        out,
        "--upstream-pass-rates",
        "--model",
        "m",
        "--drop-solved",
        "--on-invalid",
        "reject",
    )
    assert res.exit_code == 0, res.output
    rejects = read_jsonl(out / "rejects.jsonl")
    assert len(rejects) == 1 and rejects[0]["source"]["row"] == 2
    if "nan" not in repr(profiles):  # a NaN row is rejected by validation already
        assert rejects[0]["findings"][0]["rule"] == "difficulty.reward_profiles"
        assert message in rejects[0]["findings"][0]["message"]


def test_stamping_prepared_rows_again_replaces_their_measured_profiles(cli, tmp_path, setup):
    ds, table = setup
    first = tmp_path / "first"
    assert cli("prepare", ds, "-o", first, "--stamp-reward-profiles", table).exit_code == 0
    again = tmp_path / "again"
    res = cli("prepare", first, "-o", again, "--stamp-reward-profiles", table)
    assert res.exit_code == 0, res.output
    a = {r["uuid"]: r for r in read_jsonl(first / "train-00000-of-00001.jsonl")}
    for r in read_jsonl(again / "train-00000-of-00001.jsonl"):
        assert r.get("reward_profiles") == a[r["uuid"]].get("reward_profiles")


def test_load_prepared_with_stamped_profiles(cli, tmp_path, setup):
    from mcqa_prep import load_prepared

    _, table = setup
    upstream = [{"model_hf_path": "org/big", "num_generations": 8, "pass_rate": 0.5}]
    rows = [make_row(i, extra={"reward_profiles": upstream} if i == 8 else None) for i in range(QUESTIONS)]
    ds = write_jsonl(tmp_path / "train.jsonl", rows)
    out = tmp_path / "out"
    assert cli("prepare", ds, "-o", out, "--stamp-reward-profiles", table).exit_code == 0
    train = load_prepared(out, split="train", cache_dir=tmp_path / "cache")
    profiles = {r["uuid"]: r["reward_profiles"] for r in train}
    assert profiles["row-000008"][0]["source"] == "upstream" and profiles["row-000008"][0]["contract"] is None
    assert profiles["row-000004"][0]["contract"] == DEFAULT.contract_id()
