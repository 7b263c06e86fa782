"""passrates.v2: the counting rule, the posterior in the table, v1 tables still read, pooling, NeMo Gym profile
rows as evidence, and prepare filtering on the posterior and writing the blend fields back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import read_jsonl, write_jsonl
from passrate_helpers import DESIGN, entry, forge_table, json_doc, make_setup, read_table_lines, to_v1
from synthetic_rollouts import generate, rescored_row, write

from mcqa_prep.errors import ContractMismatch, InputError, UsageError
from mcqa_prep.passrates.measure import Estimate, measure
from mcqa_prep.passrates.pool import pool_tables
from mcqa_prep.passrates.table import read_table
from mcqa_prep.policy import GradingPolicy
from mcqa_prep.prepared import manifest as mf

DEFAULT = GradingPolicy()
FAO = GradingPolicy(final_answer_only=True)


@pytest.fixture
def setup(cli, tmp_path):
    return make_setup(cli, tmp_path)


def _rows(q: int, outcomes: list[tuple[float, str | None]], model: str = "m") -> list[dict]:
    c = DEFAULT.contract()
    return [rescored_row(q, model, r, a, DEFAULT.contract_id(), c["grader_version"]) for r, a in outcomes]


# ---- counting and the table -------------------------------------------------------------------------------


def test_no_answer_rule_decides_samples_and_passes(tmp_path):
    rows = _rows(0, [(1.0, "A"), (0.0, None), (0.0, None), (0.0, "B")]) + _rows(1, [(0.0, None)] * 2)
    src = write(tmp_path / "r.jsonl", rows)
    measure([src], tmp_path / "fail.jsonl", key_by="uuid")
    measure([src], tmp_path / "ex.jsonl", estimate_with=Estimate(no_answer="exclude"), key_by="uuid")
    fail, ex = read_table(tmp_path / "fail.jsonl"), read_table(tmp_path / "ex.jsonl")
    e = fail.entries["uuid:q00000"]["m"]
    assert (e.rollouts, e.samples, e.passes, e.unanswered, e.votes) == (4, 4, 1, 2, ((1,), (1,)))
    assert fail.entries["uuid:q00001"]["m"][:2] == (2, 0)
    e = ex.entries["uuid:q00000"]["m"]
    assert (e.rollouts, e.samples, e.passes, e.unanswered) == (4, 2, 1, 2)
    assert "uuid:q00001" not in ex.entries and ex.header["counts"]["unanswered_only"] == 1
    assert (
        fail.header["metrics"]["m"]["no_answer"]
        == ex.header["metrics"]["m"]["no_answer"]
        == pytest.approx(4 / 6)
    )
    assert fail.header["metrics"]["m"]["majority_at_k"]["1"]["value"] == pytest.approx((1 / 4 + 0) / 2)


def test_exclude_refused_when_answers_are_unknown(tmp_path):
    rows = _rows(0, [(1.0, "A"), (0.0, "B")])
    for r in rows:
        del r["extracted_answer"]
    src = write(tmp_path / "r.jsonl", rows)
    with pytest.raises(InputError, match="extracted_answer") as exc:
        measure([src], tmp_path / "t.jsonl", estimate_with=Estimate(no_answer="exclude"), key_by="uuid")
    assert exc.value.reason == "answers_unknown" and not (tmp_path / "t.jsonl").exists()
    measure([src], tmp_path / "t.jsonl", key_by="uuid")  # fail: the passes are known from the rewards
    t = read_table(tmp_path / "t.jsonl")
    assert t.entries["uuid:q00000"]["m"].unanswered is None and t.header["counts"]["answers_unknown"] == 2
    assert t.header["metrics"]["m"]["majority_at_k"] is None and t.header["metrics"]["m"]["no_answer"] is None


@pytest.mark.parametrize("level, buckets", [(0.8, 4), (0.95, 10)])
def test_credible_level_and_buckets_are_recorded(tmp_path, level, buckets):
    design = generate(seed=1, questions=60, models={"m": (2, 2)}, samples=6)
    src = write(tmp_path / "r.jsonl", design.rows)
    measure([src], tmp_path / "t.jsonl", estimate_with=Estimate(level=level, buckets=buckets), key_by="uuid")
    t = read_table(tmp_path / "t.jsonl")
    assert (t.level, t.buckets) == (level, buckets)
    assert {e.bucket for per in t.entries.values() for e in per.values()} <= set(range(buckets))
    assert t.header["posterior"]["method"].startswith("beta-binomial marginal maximum likelihood")


def test_v1_table_still_reads_with_its_posterior_computed(tmp_path, setup):
    _, table = setup
    v2 = read_table(table)
    v1 = read_table(to_v1(table, tmp_path / "v1.jsonl"))
    assert v1.version == "passrates.v1" and v1.counting is None and v1.no_answer is None
    for key, per in v2.entries.items():
        for model, e in per.items():
            old = v1.entries[key][model]
            assert old[:3] == e[:3] and old.votes is None
            assert (old.posterior_mean, old.bucket) == (e.posterior_mean, e.bucket)  # the same estimate
    assert v1.priors == v2.priors


def test_v2_entries_that_disagree_with_the_counting_rule_are_refused(tmp_path, setup):
    _, table = setup
    header, _ = read_table_lines(table)
    counts = {**header["counts"], "models": {"m1": 1}}
    posterior = {**header["posterior"], "priors": {"m1": header["posterior"]["priors"]["m1"]}}
    bad = entry("uuid:a", "m1", 4, 2).replace(b'"pass":[2]', b'"pass":[1]')
    forge_table(table, {**header, "entries": 1, "counts": counts, "posterior": posterior}, [bad])
    with pytest.raises(InputError, match=r"line 2: \$.votes: the answer groups do not add up"):
        read_table(table)
    bad = entry("uuid:a", "m1", 4, 2).replace(b'"rollouts":4', b'"rollouts":5')
    forge_table(table, {**header, "entries": 1, "counts": counts, "posterior": posterior}, [bad])
    with pytest.raises(InputError, match="disagree under no_answer=fail"):
        read_table(table)


# ---- pooling ----------------------------------------------------------------------------------------------


def test_pooling_adds_counts_and_refuses_what_does_not_pool(tmp_path):
    a = write(tmp_path / "a.jsonl", _rows(0, [(1.0, "A"), (0.0, "B")]))
    b = write(tmp_path / "b.jsonl", _rows(0, [(1.0, "A")]) + _rows(1, [(0.0, "C")]))
    measure([a], tmp_path / "ta.jsonl", key_by="uuid")
    measure([b], tmp_path / "tb.jsonl", key_by="uuid")
    ta, tb = read_table(tmp_path / "ta.jsonl"), read_table(tmp_path / "tb.jsonl")
    pooled = pool_tables([ta, tb])
    e = pooled.entries["uuid:q00000"]["m"]
    assert (e.samples, e.passes, e.rollouts, e.unanswered, e.votes) == (3, 2, 3, 0, None)  # letters unknown
    assert pooled.models == {"m": 2} and len(pooled.identities()) == 2
    with pytest.raises(InputError, match="would count twice") as exc:
        pool_tables([ta, read_table(tmp_path / "ta.jsonl")])
    assert exc.value.reason == "tables_overlap"
    measure([b], tmp_path / "tx.jsonl", estimate_with=Estimate(no_answer="exclude"), key_by="uuid")
    with pytest.raises(InputError, match="no_answer=fail .* no_answer=exclude") as exc:
        pool_tables([ta, read_table(tmp_path / "tx.jsonl")])
    assert exc.value.reason == "counting_mixed" and "\n" not in str(exc.value)
    with pytest.raises(InputError, match="no_answer=unrecorded"):
        pool_tables([ta, read_table(to_v1(tmp_path / "tb.jsonl", tmp_path / "v1.jsonl"))])
    measure([b], tmp_path / "tp.jsonl", key_by="prompt")
    with pytest.raises(InputError, match="keyed by uuid") as exc:
        pool_tables([ta, read_table(tmp_path / "tp.jsonl")])
    c = DEFAULT.contract()
    other = [rescored_row(0, "m", 1.0, "A", FAO.contract_id(), c["grader_version"])]
    measure([write(tmp_path / "c.jsonl", other)], tmp_path / "tc.jsonl", FAO, key_by="uuid")
    with pytest.raises(ContractMismatch, match="two grading contracts"):
        pool_tables([ta, read_table(tmp_path / "tc.jsonl")])


# ---- NeMo Gym profile rows --------------------------------------------------------------------------------


def _profile_row(q: int, rewards: list[float], model: str | None = None) -> dict:
    sample = {
        "responses_create_params": {"input": [{"role": "user", "content": f"Question {q}?"}]},
        "uuid": f"q{q:05d}",
        "expected_answer": "A",
        "pass_rate": 0.5,
    }
    if model:
        sample["responses_create_params"]["model"] = model
    return {
        "_ng_task_index": q,
        "mean/reward": sum(rewards) / len(rewards),
        "num_rollouts": len(rewards),
        "rollout_infos": [{"rollout_id": f"{q}:{i}", "reward": r} for i, r in enumerate(rewards)],
        "sample": sample,
    }


def test_nemo_gym_profile_rows_are_evidence(cli, tmp_path):
    src = write_jsonl(
        tmp_path / "profile.jsonl", [_profile_row(0, [1.0, 0.0, 1.0, 1.0]), _profile_row(1, [0.0] * 4)]
    )
    out = tmp_path / "t.jsonl"
    res = cli(
        "passrates",
        "--key-by",
        "uuid",
        src,
        "--nemo-gym-profile",
        "--model",
        "Qwen/Q",
        "-o",
        out,
        "--format",
        "json",
    )
    assert res.exit_code == 0, res.output
    doc = json_doc(res)
    assert (
        doc["grading"] == "nemo_gym_profile" and doc["counts"]["rollouts"] == 8 and doc["counts"]["used"] == 8
    )
    t = read_table(out)
    assert t.contract_id == DEFAULT.contract_id() and t.contract == DEFAULT.contract()
    e = t.entries["uuid:q00000"]["Qwen/Q"]
    assert (e.samples, e.passes, e.unanswered, e.votes) == (4, 3, None, None)
    res = cli(
        "passrates",
        "--key-by",
        "uuid",
        src,
        "--nemo-gym-profile",
        "--model",
        "M",
        "-o",
        out,
        "--no-answer",
        "exclude",
    )
    assert res.exit_code == 2 and "--no-answer fail" in res.output
    res = cli("passrates", "--key-by", "uuid", src, "--nemo-gym-profile", "--rescore", "-o", out)
    assert res.exit_code == 2


def test_bad_profile_rows_are_counted_invalid(cli, tmp_path):
    bad = _profile_row(1, [1.0])
    bad["rollout_infos"][0]["reward"] = "yes"
    rows = [_profile_row(0, [1.0, 1.0]), {"no": "sample"}, bad]
    src = write_jsonl(tmp_path / "profile.jsonl", rows)
    out = tmp_path / "t.jsonl"
    res = cli("passrates", "--key-by", "uuid", src, "--nemo-gym-profile", "--model", "M", "-o", out)
    assert res.exit_code == 1 and "2 of 4 rollout(s) could not be graded" in res.output and not out.exists()
    res = cli(
        "passrates",
        "--key-by",
        "uuid",
        src,
        "--nemo-gym-profile",
        "--model",
        "M",
        "-o",
        out,
        "--on-invalid",
        "reject",
        "--format",
        "json",
    )
    doc = json_doc(res)
    c = doc["counts"]
    assert c["rollouts"] == c["used"] + c["invalid"] + c["other_contracts"] == 4
    assert "rollout_infos[0].reward" in json.dumps(doc["invalid"])


# ---- prepare: filtering on the posterior, writing the blend fields ------------------------------------------


def test_keep_on_a_credible_bound_is_recorded_and_changes_the_preparation(cli, tmp_path, setup):
    ds, table = setup
    t = read_table(table)
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
        "--keep-pass-rate",
        "0.5:",
        "--keep-on",
        "lower",
    )
    assert res.exit_code == 0, res.output
    assert "keep 0.5..1 (lower credible bound)" in res.output
    f = mf.read(out).section("difficulty")["settings"]["filter"]
    assert f["keep_on"] == "lower" and f["credible_level"] == t.level
    kept = {int(r["uuid"].removeprefix("row-")) for p in out.glob("train-*.jsonl") for r in read_jsonl(p)}
    lower_ok = {q for q in DESIGN if t.entries[f"uuid:row-{q:06d}"]["m1"].posterior_lower >= 0.5}
    assert kept == lower_ok | set(range(len(DESIGN), 10))  # rows without evidence are kept
    res = cli("prepare", ds, "-o", out, "--pass-rates", table, "--model", "m1", "--keep-pass-rate", "0.5:")
    assert res.exit_code == 1 and "difficulty.filter.keep_on" in res.output  # another preparation: stale
    out2 = tmp_path / "out2"
    assert (
        cli(
            "prepare", ds, "-o", out2, "--pass-rates", table, "--model", "m1", "--keep-pass-rate", "0.5:"
        ).exit_code
        == 0
    )
    assert "keep_on" not in mf.read(out2).section("difficulty")["settings"]["filter"]  # as before issue 27


@pytest.mark.parametrize(
    "args, message",
    [
        (["--keep-on", "mean"], "--keep-on says what --keep-pass-rate"),
        (["--stamp-blend-fields"], "--stamp-blend-fields is written with --stamp-reward-profiles"),
    ],
)
def test_posterior_options_usage_errors(cli, tmp_path, setup, args, message):
    ds, table = setup
    res = cli(
        "prepare", ds, "-o", tmp_path / "o", "--pass-rates", table, "--model", "m1", "--drop-solved", *args
    )
    assert res.exit_code == 2 and message in res.output


def test_blend_fields_written_back_with_their_contract(cli, tmp_path, setup):
    ds, table = setup
    rows = read_jsonl(ds)
    rows[1]["pass_rate"], rows[1]["pass_rate_total"], rows[1]["pass_rate_passed"] = (
        0.125,
        8,
        1,
    )  # an upstream blend
    src = write_jsonl(tmp_path / "blend.jsonl", rows)
    out = tmp_path / "out"
    res = cli(
        "prepare", src, "-o", out, "--stamp-reward-profiles", table, "--stamp-blend-fields", "--model", "m1"
    )
    assert res.exit_code == 0, res.output
    got = {r["uuid"]: r for p in out.glob("train-*.jsonl") for r in read_jsonl(p)}
    r1 = got["row-000001"]
    assert (r1["pass_rate"], r1["pass_rate_total"], r1["pass_rate_passed"]) == (0.25, 4, 1)
    assert r1["pass_rate_model"] == "m1" and r1["pass_rate_contract"] == DEFAULT.contract_id()
    assert r1["pass_rate_upstream"] == {"pass_rate": 0.125, "pass_rate_total": 8, "pass_rate_passed": 1}
    assert "pass_rate" not in got["row-000009"]  # no evidence: nothing written
    assert mf.read(out).section("difficulty")["settings"]["stamp_blend_fields"] == {"model": "m1"}
    res = cli("prepare", src, "-o", tmp_path / "o2", "--stamp-reward-profiles", table, "--stamp-blend-fields")
    assert res.exit_code == 2 and "--model" in res.output  # the table has two models: which one?


def test_passrates_text_names_prior_metrics_and_rule(cli, tmp_path):
    src = write(tmp_path / "r.jsonl", generate(seed=5, questions=30, models={"m": (2, 2)}, samples=4).rows)
    res = cli("passrates", "--key-by", "uuid", src, "-o", tmp_path / "t.jsonl", "--credible-level", "0.95")
    assert res.exit_code == 0, res.output
    assert "prior Beta(" in res.output and "0.95 credible intervals" in res.output
    assert (
        "pass@1 " in res.output and "majority@4 " in res.output and "counting: no_answer=fail" in res.output
    )


def test_schema_files_are_valid_and_versioned():
    from mcqa_prep.schema import load_schema, validator

    for name in ("passrates", "passrates_v2", "passrates_v1", "curriculum"):
        validator(name)  # checks the schema itself
    assert load_schema("passrates")["properties"]["table_schema"]["const"] == "passrates.v3"
    assert load_schema("passrates_v2")["properties"]["table_schema"]["const"] == "passrates.v2"
    assert Path(__file__).resolve().parents[1].joinpath("schemas", "passrates.v3.schema.json").is_file()


def test_estimate_settings_are_checked():
    for est in (
        Estimate(no_answer="skip"),
        Estimate(level=1.0),
        Estimate(buckets=1),
        Estimate(profile=True, no_answer="exclude"),
    ):
        with pytest.raises(UsageError):
            est.check()


def test_estimated_counts_gathered_in_its_pass_are_those_of_the_entries():
    """`estimated` counts what the header and report need while it makes the entries (not in passes of their
    own): each count must be the one recounted from the entries and cells, on a pool with uuid and prompt keys,
    several models, questions of one and of several variants, known and unknown option counts, and cells
    added out of key order."""
    import random
    from collections import Counter

    from mcqa_prep.evidence import key_kind
    from mcqa_prep.passrates.cells import PassPool, counted
    from mcqa_prep.passrates.consistency import counts_doc, header_doc
    from mcqa_prep.passrates.estimate import estimated

    rng = random.Random(7)
    pool = PassPool()
    for _ in range(600):
        q = rng.randrange(60)
        key = f"uuid:q{q}" if q % 3 else f"prompt:{q:032x}"
        k = None if q % 5 == 0 else 4
        prompt = bytes([q, rng.randrange(2 if q % 4 == 0 else 1)]) * 16  # every 4th question: two variants
        where = (prompt, rng.randrange(4) if k else None, k)
        pool.add(key, rng.choice(("m-b", "m-a", "m-c")), float(rng.random() < 0.6), rng.choice("AB"), where)
    cells, _ = counted(pool, "fail")
    variants = pool.variants.counted("fail")
    e = estimated(cells, variants, "fail")
    grouped: dict[str, list] = {}
    for key, model, ent in e.entries:
        grouped.setdefault(model, []).append((key, ent))
    assert e.per_model == dict(sorted(grouped.items()))
    pairs: dict[str, list] = {}
    for (_, model), c in cells.items():  # the cells' order, as the distributions and priors read them
        pairs.setdefault(model, []).append((c.samples, c.passes))
    assert e.pairs == pairs and list(e.pairs) == list(pairs)
    keys = {key for key, _ in cells}
    assert e.keys_by_kind == dict(sorted(Counter(map(key_kind, keys)).items()))
    assert set(e.keys_by_kind) == {"uuid", "prompt"} and e.with_variants > 0 and 0 < e.with_k < len(e.entries)
    assert counts_doc(e.with_k, e.with_variants, 5, e.priors_by_k) == header_doc(e.entries, 5, e.priors_by_k)


@pytest.mark.parametrize("rule", ["fail", "exclude"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_lines_serialised_by_shape_are_the_lines_serialised_whole(rule, seed):
    """write_table serialises the lines of entries that share a shape (estimate.estimated) from one line cut
    around the fields of their own: the bytes must be those of every entry serialised whole, for entries with
    and without answers known, unanswered rollouts, uuid and prompt keys, several variants, unknown and known
    option counts and gold positions, rewards between 0 and 1, and model names that hold JSON escapes or the
    cut's own marks (those are serialised whole)."""
    import random

    from mcqa_prep.passrates.cells import UNKNOWN, PassPool, counted
    from mcqa_prep.passrates.entries import entry_lines_shaped, entry_lines_v3
    from mcqa_prep.passrates.estimate import estimated

    rng = random.Random(seed)
    models = ("m", 'q"uote\\d', "\x00\x010", "é\n", "\x00\x01")
    pool = PassPool()
    for _ in range(4000):
        q = rng.randrange(1000)
        key = f'uuid:q{q},"{q}' if q % 3 else f"prompt:{q:032x}"
        k = None if q % 7 == 0 else 2 + q % 4
        prompt = b"" if q % 11 == 0 else bytes([q % 256, rng.randrange(2 if q % 4 == 0 else 1)]) * 16
        where = (prompt, None if k is None or q % 13 == 0 else rng.randrange(k), k)
        answer = UNKNOWN if rule == "fail" and q % 17 == 0 else rng.choice(("A", "B", None, "A"))
        reward = rng.choice((0.0, 1.0, 1.0, 0.5)) if q % 5 == 0 else float(rng.random() < 0.5)
        pool.add(key, models[q % len(models)], reward, answer, where if q % 19 else None)
    cells, _ = counted(pool, rule)
    e = estimated(cells, pool.variants.counted(rule), rule)
    shaped = [id(s) for s in e.shapes if s is not None]
    assert len(set(shaped)) < len(shaped) * 3 // 4  # shapes are shared
    assert any(s is None for s in e.shapes)  # and some entries have several variants
    assert entry_lines_shaped(e.entries, e.shapes) == entry_lines_v3(e.entries)


def test_a_table_written_by_shape_is_the_table_written_whole(tmp_path):
    from mcqa_prep.passrates.cells import PassPool, counted
    from mcqa_prep.passrates.estimate import estimated
    from mcqa_prep.passrates.table import write_table

    pool = PassPool()
    for q in range(200):
        for r in range(q % 6 + 1):
            pool.add(f"uuid:{q}", "m", float((q + r) % 3 == 0), "AB"[r % 2], (bytes([q]) * 32, q % 4, 4))
    cells, _ = counted(pool, "fail")
    e = estimated(cells, pool.variants.counted("fail"), "fail")
    header = {"contract_id": "sha256:x", "created_at": None}
    whole = write_table(tmp_path / "whole.jsonl", header, e.entries[::-1])
    shaped = write_table(tmp_path / "shaped.jsonl", header, e.entries[::-1], e.shapes[::-1])
    assert whole["content_sha256"] == shaped["content_sha256"]
    assert (tmp_path / "whole.jsonl").read_bytes().split(b"\n", 1)[1] == (
        tmp_path / "shaped.jsonl"
    ).read_bytes().split(b"\n", 1)[1]
