"""What reads permuted rows (issue 38): passrates across variants, prepare --keep-on on the corrected and
consistent posteriors, curriculum --epochs, report and audit across option orders and the letter-prior drift."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import REPO, SAMPLE, read_jsonl
from passrate_helpers import to_v2

from mcqa_prep.convert.orders import PermuteSpec
from mcqa_prep.passrates.pool import pool_tables
from mcqa_prep.passrates.positions import drift, model_entries, summary
from mcqa_prep.passrates.table import read_table
from mcqa_prep.prepare.run import prepare

_spec = importlib.util.spec_from_file_location("simulate_rollouts", REPO / "scripts" / "simulate_rollouts.py")
sim = importlib.util.module_from_spec(_spec)
sys.modules["simulate_rollouts"] = sim
_spec.loader.exec_module(sim)


def shard_rows(out: Path) -> list[dict]:
    return [r for p in sorted(out.glob("*-0*.jsonl")) for r in read_jsonl(p)]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The sample permuted 4 ways, and two simulated checkpoints: a strong letter prior, then a weak one."""
    tmp = tmp_path_factory.mktemp("world")
    out = tmp / "p4"
    prepare([SAMPLE / "train.jsonl", SAMPLE / "validation.parquet"], out, permute=PermuteSpec(4))
    tables = {}
    for name, prior, seed in (("before", 0.9, 1), ("after", 0.25, 2)):
        r = tmp / f"{name}.rollouts.jsonl"
        assert sim.main([str(out), "-o", str(r), "--model", name, "--samples", "6", "--prior", str(prior),
                         "--seed", str(seed), "--skill", "0.6:1.4"]) == 0  # fmt: skip
        from mcqa_prep.passrates.measure import measure

        measure([r], tmp / f"{name}.jsonl", rescore=True)
        tables[name] = tmp / f"{name}.jsonl"
    return tmp, out, tables


def test_a_table_of_permuted_rollouts_holds_each_question_with_its_variants(world):
    _, out, tables = world
    t = read_table(tables["before"])
    assert t.version == "passrates.v3" and len(t.entries) == 12
    for key, per in t.entries.items():
        e = per["before"]
        assert key.startswith("uuid:") and len(e.variants) == 4 and e.samples == 24
        golds = sorted(v.gold for v in e.variants)
        assert e.k in (4, 10) and e.corrected_mean is not None
        # rotation: with 4 options every gold position once; with 10, four shifts spread over them
        assert golds == list(range(4)) if e.k == 4 else len(set(golds)) == 4
        observed = 1.0
        for v in e.variants:
            observed *= v.passes / v.samples
        assert e.consistent_rate == pytest.approx(observed, abs=1e-6)
        assert e.consistent_lower <= e.consistent_mean <= e.consistent_upper
    assert t.header["consistency"]["questions_with_variants"] == 12


def test_variants_without_a_uuid_are_one_question_by_their_link(tmp_path):
    from prep_helpers import make_row, write_rows

    rows = []
    for i in range(3):
        r = make_row(i)
        del r["uuid"]
        rows.append(r)
    out = tmp_path / "p"
    prepare([write_rows(tmp_path / "train.jsonl", rows)], out, permute=PermuteSpec(4))
    r = tmp_path / "r.jsonl"
    sim.main([str(out), "-o", str(r), "--samples", "2"])
    from mcqa_prep.passrates.measure import measure

    measure([r], tmp_path / "t.jsonl", rescore=True)
    t = read_table(tmp_path / "t.jsonl")
    assert len(t.entries) == 3 and all(len(per["simulated"].variants) == 4 for per in t.entries.values())
    prepared = shard_rows(out)
    assert all(t.find(row) is not None for row in prepared)  # a variant finds its question's entry


def test_drift_shows_the_letter_prior_falling(world):
    _, _, tables = world
    before, after = (summary(model_entries(read_table(tables[n]).entries, n)) for n in ("before", "after"))
    d = drift(before, after)
    assert d["rstd_before"]["4"] > d["rstd_after"]["4"]
    a4 = next(r for r in d["by_position"] if r["k"] == 4 and r["position"] == "A")
    assert a4["change"] < 0  # the prior letter's advantage shrinks
    assert d["consistent_before"] <= d["consistent_after"]


def test_report_sections_across_orders_and_the_drift(world, cli):
    tmp, out, tables = world
    res = cli("report", out, "--pass-rates", tables["before"], "--drift", tables["before"], tables["after"],
              "--format", "json")  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    kinds = [s["kind"] for s in doc["sections"]]
    assert kinds == ["dataset", "passrates", "drift"]
    pr = doc["sections"][1]
    ids = [b.get("id", "") for b in pr["blocks"]]
    assert any(i.endswith("orders") for i in ids) and any(i.endswith("one-position") for i in ids)
    orders = next(b for b in pr["blocks"] if b.get("id", "").endswith("orders"))
    s = pr["summary"]["positions"]
    assert orders["panels"][0]["series"][0]["values"] == [s["plain_on_variants"], s["consistent_on_variants"]]
    assert orders["panels"][1]["categories"] == list(s["by_position"]["4"])
    dr = doc["sections"][2]
    assert dr["summary"]["drift"] == drift(
        dr["summary"]["before"]["summary"], dr["summary"]["after"]["summary"]
    )
    text = cli("report", out, "--pass-rates", tables["before"], "--drift", tables["before"], tables["after"],
               "-o", tmp / "r.html")  # fmt: skip
    assert text.exit_code == 0 and "letter-prior drift before -> after" in text.output
    assert "across option orders: 12 question(s) in 2+ orders" in text.output


def test_drift_refuses_old_tables_and_tables_of_several_models(world, cli):
    tmp, _, tables = world
    old = to_v2(tables["before"], tmp / "v2.jsonl")
    res = cli("report", SAMPLE / "train.jsonl", "--drift", old, tables["after"], "-o", tmp / "x.html")
    assert res.exit_code == 1 and "passrates.v2 table records no gold positions" in res.output
    both = pool_tables([read_table(tables["before"]), read_table(tables["after"])])
    assert set(both.models) == {"before", "after"}
    from mcqa_prep.passrates.measure import measure

    measure([tmp / "before.rollouts.jsonl", tmp / "after.rollouts.jsonl"], tmp / "two.jsonl", rescore=True)
    res = cli(
        "report", SAMPLE / "train.jsonl", "--drift", tmp / "two.jsonl", tables["after"], "--format", "json"
    )
    err = json.loads(res.stdout)["error"]
    assert res.exit_code == 2 and err["reason"] == "drift_models" and "2 models (after" in err["message"]
    res = cli("audit", SAMPLE / "train.jsonl", "--pass-rates", tables["before"], "--pass-rates", tables["after"],
              "--drift", tables["before"], tables["before"], "--format", "json")  # fmt: skip
    assert res.exit_code == 0, res.output
    o = json.loads(res.stdout)["option_orders"]
    assert set(o["models"]) == {"before", "after"} and o["drift"]["drift"]["largest_change"] == 0.0


def test_audit_across_orders_and_variants_are_not_duplicates_within_a_split(world, cli, tmp_path):
    _, out, tables = world
    res = cli("audit", out, "--pass-rates", tables["after"], "--format", "json")
    doc = json.loads(res.stdout)
    assert res.exit_code == 0 and doc["duplicates"]["rows"] == 0
    s = doc["option_orders"]["models"]["after"]
    assert s == summary(model_entries(read_table(tables["after"]).entries, "after"))
    # one order of a train question in validation is leakage all the same
    train = [r for r in shard_rows(out) if r["metadata"]["mcqa_prep"]["permutation"]["variant"] == 1][:1]
    leak = tmp_path / "validation.jsonl"
    leak.write_text(json.dumps(train[0]) + "\n")
    res = cli("audit", out, leak, "--format", "json")
    d = json.loads(res.stdout)["duplicates"]
    assert d["rows"] == 1 and d["cross_split"] == 1


def test_keep_on_corrected_treats_rows_at_chance_as_without_evidence(world, tmp_path):
    _, out, tables = world
    t = read_table(tables["before"])
    at_chance = {k for k, per in t.entries.items() if per["before"].at_chance}
    from mcqa_prep.passrates.difficulty import DifficultyRequest, PassRateFilter

    def run(no_evidence: str) -> dict:
        f = PassRateFilter(low=0.0, high=1.0, on="corrected-mean", no_evidence=no_evidence)
        return prepare(
            [out], tmp_path / no_evidence, difficulty=DifficultyRequest(tables["before"], f)
        ).counts

    dropped = run("drop")
    assert dropped["dropped_by_reason"].get("at_chance", 0) == 4 * len(at_chance)
    assert run("keep")["dropped"] == 0
    old = to_v2(tables["before"], tmp_path / "v2.jsonl")
    from mcqa_prep.errors import InputError

    with pytest.raises(InputError, match="records no chance-corrected or consistent posterior"):
        prepare(
            [out], tmp_path / "v2", difficulty=DifficultyRequest(old, PassRateFilter(on="consistent-lower"))
        )


def test_pooling_v3_tables_adds_variants_by_prompt(world):
    _, _, tables = world
    t = read_table(tables["before"])
    pooled = pool_tables([t, to_v3_copy(t, tables["before"])])
    for key, per in pooled.entries.items():
        e, one = per["before"], t.entries[key]["before"]
        assert e.samples == 2 * one.samples
        assert sorted((v.prompt, v.samples) for v in e.variants) == sorted(
            (v.prompt, 2 * v.samples) for v in one.variants
        )


def to_v3_copy(t, path: Path):
    """The same table under another input hash (a second collection run of the same rollouts)."""
    from passrate_helpers import forge_table, read_table_lines

    header, lines = read_table_lines(path)
    header["inputs"] = [{**f, "sha256": "f" * 64} for f in header["inputs"]]
    return read_table(forge_table(path.with_name("copy.jsonl"), header, lines))


def test_curriculum_epochs_deal_every_order_once(world, cli):
    tmp, out, tables = world
    args = ["curriculum", tables["before"], "--rows", out, "-o", tmp / "s.jsonl", "--rows-out", tmp / "rows.jsonl",
            "--ordered-out", tmp / "ord.jsonl", "--prompts-per-step", "4", "--steps", "12", "--epochs", "4"]  # fmt: skip
    res = cli(*args, "--format", "json")
    assert res.exit_code == 0, res.output
    header = json.loads(res.stdout)["header"]
    assert header["epochs"] == {"count": 4, "seed": 0, "questions": 12, "orders": 48, "questions_with_orders": 12,
                                "repeating": 0, "by_orders": {"4": 12}}  # fmt: skip
    assert sum(header["buckets"]["rows"]) == 12  # a question counts once
    rows = read_jsonl(tmp / "rows.jsonl")
    by_q = defaultdict(list)
    for r in rows:
        by_q[r["uuid"]].append(r["difficulty"]["epochs"])
    for epochs in by_q.values():
        assert sorted(e for es in epochs for e in es) == [0, 1, 2, 3]  # each epoch one order, no order twice
    seen: dict[str, list[int]] = defaultdict(list)
    for r in read_jsonl(tmp / "ord.jsonl"):
        seen[r["uuid"]].append(r["metadata"]["mcqa_prep"]["permutation"]["variant"])
    for q, variants in seen.items():
        first = variants[:4]
        assert len(set(first)) == len(first), (q, variants)  # no order again before every order was shown
        epoch0 = next(r["metadata"]["mcqa_prep"]["permutation"]["variant"] for r in rows
                      if r["uuid"] == q and 0 in r["difficulty"]["epochs"])  # fmt: skip
        assert variants[0] == epoch0
    outs = {
        tmp / "s.jsonl": tmp / "s2.jsonl",
        tmp / "rows.jsonl": tmp / "rows2.jsonl",
        tmp / "ord.jsonl": tmp / "ord2.jsonl",
    }
    assert cli(*[outs.get(a, a) for a in args]).exit_code == 0
    assert (tmp / "ord2.jsonl").read_bytes() == (
        tmp / "ord.jsonl"
    ).read_bytes()  # the same seed, the same deal
    assert (tmp / "rows2.jsonl").read_bytes() == (tmp / "rows.jsonl").read_bytes()


def test_curriculum_on_the_corrected_posterior_has_a_bucket_at_chance(world, cli):
    tmp, out, tables = world
    t = read_table(tables["before"])
    res = cli("curriculum", tables["before"], "--rows", out, "-o", tmp / "c.jsonl", "--rows-out", tmp / "c-rows.jsonl",
              "--estimate", "corrected", "--format", "json")  # fmt: skip
    assert res.exit_code == 0, res.output
    b = json.loads(res.stdout)["header"]["buckets"]
    assert b["by"] == "corrected_mean" and b["count"] == t.buckets + 1 and b["chance_bucket"] == t.buckets
    for r in read_jsonl(tmp / "c-rows.jsonl"):
        e = t.find(r)[1]["before"]
        d = r["difficulty"]
        assert d["at_chance"] == e.at_chance and d["bucket_index"] == e.corrected_bucket
        assert d["posterior_mean"] == min(1.0, max(0.0, e.corrected_mean))
    old = to_v2(tables["before"], tmp / "v2-c.jsonl")
    res = cli("curriculum", old, "--rows", out, "-o", tmp / "c2.jsonl", "--estimate", "corrected")
    assert res.exit_code == 1 and "records no chance-corrected posterior" in res.output
