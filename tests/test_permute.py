"""prepare --permute / convert --permute (issue 38): the orders, the prompt's option block, the variants as
complete prepared rows, anchored options in every language, byte identity per seed, the preparation's
settings; golden cases: data/golden/permute_block_cases.jsonl, data/golden/permute_anchor_cases.jsonl."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from conftest import REPO, SAMPLE, read_jsonl, write_jsonl
from prep_helpers import make_row

from mcqa_prep.convert.option_block import find_block, rewrite
from mcqa_prep.convert.orders import PermuteSpec, orders_for, rng_for
from mcqa_prep.convert.variants import expand
from mcqa_prep.errors import StaleCache, UsageError
from mcqa_prep.prepare.run import prepare
from mcqa_prep.prepared.verify import verify_prepared
from mcqa_prep.prompt import user_prompt

GOLDEN = REPO / "data" / "golden"
BLOCK_CASES = [json.loads(x) for x in (GOLDEN / "permute_block_cases.jsonl").read_text("utf-8").splitlines()]
ANCHOR_CASES = [
    json.loads(x) for x in (GOLDEN / "permute_anchor_cases.jsonl").read_text("utf-8").splitlines()
]


def shard_rows(out: Path) -> list[dict]:
    return [r for p in sorted(out.glob("*-0*.jsonl")) for r in read_jsonl(p)]


def texts_of(row: dict) -> list[str]:
    return [next(iter(o.values())) for o in row["options"]]


def gold_text(row: dict) -> str:
    return next(o[row["expected_answer"]] for o in row["options"] if row["expected_answer"] in o)


def assert_block_consistent(row: dict) -> None:
    """The prompt shows exactly the row's options, in its order (the block is found again)."""
    letters = [next(iter(o)) for o in row["options"]]
    tm = row.get("template_metadata") or {}
    found = find_block(
        user_prompt(row["responses_create_params"]), letters, texts_of(row), tm.get("option_labels")
    )
    assert not isinstance(found, str), found


# ---- orders ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 4, 5, 10])
def test_rotation_puts_the_gold_at_every_position_once(n):
    spec = PermuteSpec(n, "rotation", 0, True)
    found = orders_for([f"t{i}" for i in range(n)], spec, rng_for("q", spec.salt()))
    assert found.orders[0] == tuple(range(n)) and len(found.orders) == n and found.short is None
    for gold in range(n):
        assert sorted(o.index(gold) for o in found.orders) == list(range(n))
    assert len(set(found.orders)) == n


def test_rotation_without_identity_and_fewer_orders_than_positions():
    spec = PermuteSpec(3, "rotation", 5, False)
    found = orders_for(list("abcdef"), spec, rng_for("q", spec.salt()))
    assert len(found.orders) == 3 and tuple(range(6)) not in found.orders
    # evenly spread shifts: the gold of option 0 lands on three different positions
    assert len({o.index(0) for o in found.orders}) == 3


@pytest.mark.parametrize("n,k", [(4, 10), (4, 24), (10, 16), (12, 5)])
def test_random_orders_are_distinct_and_capped_at_what_exists(n, k):
    for identity in (True, False):
        spec = PermuteSpec(k, "random", 3, identity)
        found = orders_for([f"t{i}" for i in range(n)], spec, rng_for("q", spec.salt()))
        total = 24 if n == 4 else 10**9
        want = min(k, total - (not identity))
        assert len(found.orders) == want and len(set(found.orders)) == want
        assert (tuple(range(n)) in found.orders) == identity
        assert all(sorted(o) == list(range(n)) for o in found.orders)
        assert found.short == ("few_orders" if want < k else None)


def test_orders_depend_on_the_seed_and_the_question_only():
    a = PermuteSpec(5, "random", 1)
    b = PermuteSpec(5, "random", 2)
    texts = [f"t{i}" for i in range(8)]
    one = orders_for(texts, a, rng_for("uuid:x", a.salt())).orders
    assert one == orders_for(texts, a, rng_for("uuid:x", a.salt())).orders
    assert one != orders_for(texts, b, rng_for("uuid:x", b.salt())).orders
    assert one != orders_for(texts, a, rng_for("uuid:y", a.salt())).orders


def test_bad_requests_are_usage_errors():
    for spec in (PermuteSpec(0), PermuteSpec(65), PermuteSpec(4, "shuffle"), PermuteSpec(1, identity=True)):
        with pytest.raises(UsageError):
            spec.check()
    PermuteSpec(1, identity=False).check()  # one other order than the row's own is a request


# ---- the prompt's option block (golden cases) -------------------------------------------------------------------


@pytest.mark.parametrize("case", BLOCK_CASES, ids=[c["name"] for c in BLOCK_CASES])
def test_option_block_golden_cases(case):
    found = find_block(case["prompt"], case["letters"], case["texts"], case["option_labels"])
    if "refused" in case:
        assert found == case["refused"]
        return
    assert not isinstance(found, str), found
    assert found.scheme == case["scheme"]
    new = [case["texts"][j] for j in case["order"]]
    assert rewrite(case["prompt"], found, new) == case["rewritten"]
    again = find_block(case["rewritten"], case["letters"], new, case["option_labels"])
    assert not isinstance(again, str)


def test_a_rewritten_prompt_differs_only_in_the_option_texts():
    case = next(c for c in BLOCK_CASES if c["name"] == "parens")
    found = find_block(case["prompt"], case["letters"], case["texts"])
    out = rewrite(case["prompt"], found, case["texts"])
    assert out == case["prompt"]  # the identity order rewrites nothing


# ---- prepare --permute ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def permuted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("permuted")
    inputs = [SAMPLE / "train.jsonl", SAMPLE / "validation.parquet"]
    out = tmp / "p4"
    report = prepare(inputs, out, permute=PermuteSpec(4))
    return inputs, out, report


def test_every_row_becomes_k_complete_variants(permuted):
    inputs, out, report = permuted
    rows = shard_rows(out)
    c = report.counts
    assert c["read"] == 12 and c["rejected"] == 0 and c["written"] == len(rows) == 48
    assert c["permutation"] == {
        "questions": 12,
        "variants": 48,
        "by_variants": {"4": 12},
        "fewer_orders": {},
        "anchored_questions": 0,
    }
    by_q: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        link = r["metadata"]["mcqa_prep"]["permutation"]
        assert link["question"] == f"uuid:{r['uuid']}" and link["variants"] == 4
        by_q[link["question"]].append(r)
    assert len(by_q) == 12
    for variants in by_q.values():
        assert sorted(v["metadata"]["mcqa_prep"]["permutation"]["variant"] for v in variants) == [0, 1, 2, 3]
        golds = {gold_text(v) for v in variants}
        assert len(golds) == 1  # the gold text is the same in every variant
        assert len({v["expected_answer"] for v in variants}) == 4  # at four positions (rotation, K >= 4)
        assert len({json.dumps(v["responses_create_params"]) for v in variants}) == 4
        for v in variants:
            order = v["metadata"]["mcqa_prep"]["permutation"]["order"]
            first = next(x for x in variants if x["metadata"]["mcqa_prep"]["permutation"]["variant"] == 0)
            assert texts_of(v) == [texts_of(first)[j] for j in order]
            assert v.get("template_metadata") == first.get("template_metadata")
            assert v["grading_mode"] == first["grading_mode"]
            assert_block_consistent(v)
    verify_prepared(out)


def test_variants_pass_validate_and_the_prompt_format_check(permuted, cli):
    _, out, _ = permuted
    res = cli("validate", out, "--format", "json")
    doc = json.loads(res.stdout)
    assert res.exit_code == 0 and doc["summary"]["errors"] == 0, res.stdout[:2000]
    assert doc["summary"]["rows_read"] == 48
    # the orders share their question's uuid by design: not reported as reusing it
    assert doc["summary"]["findings_by_rule"] == {}


def test_one_order_twice_is_still_a_duplicate_row(permuted, tmp_path, cli):
    _, out, _ = permuted
    rows = shard_rows(out)
    path = write_jsonl(tmp_path / "train.jsonl", [*rows[:4], rows[1]])
    doc = json.loads(cli("validate", path, "--format", "json").stdout)
    assert doc["summary"]["findings_by_rule"] == {"duplicate_row": 1}
    f = next(x for x in doc["findings"] if x["rule"] == "duplicate_row")
    assert f["line"] == 5 and f"same uuid '{rows[1]['uuid']}'" in f["message"]  # shown without its order


def test_same_seed_same_bytes_other_seed_other_bytes_any_worker_count(permuted, tmp_path):
    inputs, out, _ = permuted
    again = tmp_path / "again"
    prepare(inputs, again, permute=PermuteSpec(4), workers=2)
    for p in sorted(out.glob("*-0*.jsonl")):
        assert (again / p.name).read_bytes() == p.read_bytes()
    random_a = tmp_path / "ra"
    random_b = tmp_path / "rb"
    prepare(inputs, random_a, permute=PermuteSpec(6, "random", 1))
    prepare(inputs, random_b, permute=PermuteSpec(6, "random", 2))
    name = "train-00000-of-00001.jsonl"
    assert (random_a / name).read_bytes() != (random_b / name).read_bytes()
    prepare(inputs, tmp_path / "ra2", permute=PermuteSpec(6, "random", 1))
    assert (tmp_path / "ra2" / name).read_bytes() == (random_a / name).read_bytes()


def test_the_settings_are_part_of_the_preparation(permuted):
    inputs, out, _ = permuted
    assert prepare(inputs, out, permute=PermuteSpec(4)).status == "up_to_date"
    for other in (
        PermuteSpec(4, seed=1),
        PermuteSpec(3),
        PermuteSpec(4, "random"),
        PermuteSpec(4, identity=False),
        None,
    ):
        with pytest.raises(StaleCache) as exc:
            prepare(inputs, out, permute=other)
        assert exc.value.reason == "stale_settings"
        assert [d.field for d in exc.value.differences] == ["settings.permute"]


def test_an_unpermuted_preparation_is_unchanged(tmp_path):
    """--permute absent: no settings.permute, no counts.permutation, rows without a link."""
    out = tmp_path / "plain"
    prepare([SAMPLE / "train.jsonl"], out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert "permute" not in manifest["settings"] and "permutation" not in manifest["counts"]
    assert all("permutation" not in r["metadata"]["mcqa_prep"] for r in shard_rows(out))


def test_rows_whose_block_cannot_be_found_are_rejected_saying_why(tmp_path, cli):
    inline = make_row(1)
    inline["responses_create_params"]["input"][0]["content"] = "Question 1? " + " ".join(
        f"({c}) option {c} of question 1" for c in "ABCD"
    )
    rows = write_jsonl(tmp_path / "train.jsonl", [make_row(0), inline, make_row(2)])
    res = cli("prepare", rows, "-o", tmp_path / "out", "--permute", "3", "--on-invalid", "reject")
    assert res.exit_code == 0, res.output
    rejects = read_jsonl(tmp_path / "out" / "rejects.jsonl")
    assert len(rejects) == 1 and rejects[0]["source"]["row"] == 2
    f = rejects[0]["findings"][0]
    assert f["rule"] == "permute.option_block"
    assert "does not end a line of the prompt" in f["message"]
    assert len(shard_rows(tmp_path / "out")) == 6
    res = cli("prepare", rows, "-o", tmp_path / "fail", "--permute", "3")
    assert res.exit_code == 1 and "permute.option_block" in res.output
    assert not (tmp_path / "fail").exists()


def test_a_permuted_row_is_not_permuted_again_and_keeps_its_link_when_prepared_again(permuted, tmp_path, cli):
    _, out, _ = permuted
    again = tmp_path / "again"
    res = cli("prepare", out, "-o", again)
    assert res.exit_code == 0, res.output
    assert [r["metadata"]["mcqa_prep"]["permutation"] for r in shard_rows(again)] == [
        r["metadata"]["mcqa_prep"]["permutation"] for r in shard_rows(out)
    ]
    res = cli("prepare", out, "-o", tmp_path / "twice", "--permute", "2")
    assert res.exit_code == 1 and not (tmp_path / "twice").exists()
    assert "already one order of a permuted question" in res.output and "permute.option_block" in res.output


def test_uuidless_rows_name_their_own_prompt_as_the_question(tmp_path):
    row = make_row(3)
    del row["uuid"]
    out = tmp_path / "out"
    prepare([write_jsonl(tmp_path / "train.jsonl", [row])], out, permute=PermuteSpec(2))
    rows = shard_rows(out)
    from mcqa_prep.prompt import prompt_id

    q = prompt_id(row["responses_create_params"])
    assert [r["metadata"]["mcqa_prep"]["permutation"]["question"] for r in rows] == [q, q]


def test_the_options_require_permute(cli, tmp_path):
    res = cli("prepare", SAMPLE / "train.jsonl", "-o", tmp_path / "o", "--permute-seed", "3")
    assert res.exit_code == 2 and "--permute K" in res.output
    res = cli("prepare", SAMPLE / "train.jsonl", "-o", tmp_path / "o", "--permute", "1")
    assert res.exit_code == 2 and "permutes nothing" in res.output


# ---- anchored options in place, every language -------------------------------------------------------------------


def anchor_row(i: int, case: dict) -> dict:
    letters = "ABCDE"[: len(case["options"])]
    block = "\n".join(
        f"{lab}{case['sep']}{t}" for lab, t in zip(case["labels"], case["options"], strict=True)
    )
    return {
        "responses_create_params": {
            "input": [
                {"role": "user", "content": f"{case['question']}\n{block}\nPut the letter in \\boxed{{}}."}
            ]
        },
        "options": [{L: t} for L, t in zip(letters, case["options"], strict=True)],
        "expected_answer": "A" if 0 not in case["anchored"] or len(case["options"]) < 5 else "C",
        "uuid": f"anchor-{i}-{case['lang']}",
    }


def test_anchored_options_stay_in_place_in_at_least_16_languages(tmp_path):
    assert len({c["lang"] for c in ANCHOR_CASES}) >= 16
    rows = [anchor_row(i, c) for i, c in enumerate(ANCHOR_CASES)]
    out = tmp_path / "out"
    for mode in ("rotation", "random"):
        report = prepare(
            [write_jsonl(tmp_path / "train.jsonl", rows)], out, permute=PermuteSpec(4, mode), overwrite=True
        )
        assert report.counts["rejected"] == 0, report.rejected
        written = shard_rows(out)
        by_uuid: dict[str, list[dict]] = defaultdict(list)
        for r in written:
            by_uuid[r["uuid"]].append(r)
        for i, case in enumerate(ANCHOR_CASES):
            variants = by_uuid[f"anchor-{i}-{case['lang']}"]
            movable = len(case["options"]) - len(case["anchored"])
            assert len(variants) == (
                min(4, movable) if mode == "rotation" else min(4, 2 if movable == 2 else 4)
            )
            for v in variants:
                for p in case["anchored"]:
                    assert texts_of(v)[p] == case["options"][p], (case["lang"], v["options"])
                assert_block_consistent(v)
            assert len({tuple(texts_of(v)) for v in variants}) == len(variants)  # the others do move
        assert report.counts["permutation"]["anchored_questions"] == len(ANCHOR_CASES)


# ---- convert --permute -----------------------------------------------------------------------------------------


def test_convert_permute_renders_each_order_with_its_template(cli, tmp_path):
    out = tmp_path / "arc.jsonl"
    res = cli(
        "convert", REPO / "data" / "examples" / "arc_sample.jsonl", "-o", out, "--shuffle", "--permute", "4",
        "--template", "final_choice", "--format", "json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    rows = read_jsonl(out)
    p = doc["permutation"]
    assert (
        p["rows"] == len(rows) == doc["output_files"][0]["rows"]
        and p["questions"] == doc["counts"]["written"]
    )
    by_q = defaultdict(list)
    for r in rows:
        by_q[r["metadata"]["mcqa_prep"]["permutation"]["question"]].append(r)
        assert_block_consistent(r)
        assert r["metadata"]["mcqa_prep"]["permutation"]["question"] == f"uuid:{r['uuid']}"
    for variants in by_q.values():
        assert len({gold_text(v) for v in variants}) == 1
        srcs = {tuple(v["metadata"]["convert"]["option_source_index"]) for v in variants}
        assert len(srcs) == len(variants)
        for v in variants:  # the gold's source index is the same option's in every order
            i = "ABCDEFGHIJ".index(v["expected_answer"])
            assert (
                v["metadata"]["convert"]["option_source_index"][i]
                == v["metadata"]["convert"]["gold_source_index"]
            )
    prepared = tmp_path / "prepared"
    assert cli("prepare", out, "-o", prepared).exit_code == 0
    assert Counter(
        r["metadata"]["mcqa_prep"]["permutation"]["question"] for r in shard_rows(prepared)
    ) == Counter({q: len(v) for q, v in by_q.items()})


def test_expand_refuses_content_parts_and_keeps_other_fields():
    row = make_row(
        0, extra={"metadata": {"source": "x"}, "reward_profiles": [{"model_hf_path": "m", "pass_rate": 0.5}]}
    )
    spec = PermuteSpec(2)
    exp = expand(row, spec, spec.salt())
    assert exp.rows is not None and all(r["reward_profiles"] == row["reward_profiles"] for r in exp.rows)
    assert all(r["metadata"]["source"] == "x" for r in exp.rows)
    parts = make_row(0)
    parts["responses_create_params"]["input"][0]["content"] = [
        {"type": "input_text", "text": "Q?\nA: a\nB: b"}
    ]
    assert expand(parts, spec, spec.salt()).problem == "the prompt's content is not one text (content parts)"
