"""A prepared row bound to its contract (mcqa_prep/binding.py): what is bound and what is not, as golden cases
(data/golden/binding_cases.jsonl: an edit of a stamped row, and the fields it must be reported as changing,
none for what a runtime legitimately adds), and the digests prepare writes checked by every way a prepared row
is read back."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from conftest import REPO

from mcqa_prep import binding
from mcqa_prep.prepare.run import prepare

CASES = [
    json.loads(x) for x in (REPO / "data/golden/binding_cases.jsonl").read_text(encoding="utf-8").splitlines()
]
BASE = CASES[0]["base"]
EDITS = CASES[1:]


def _stamped(row: dict[str, Any]) -> dict[str, Any]:
    """A row stamped as prepare stamps it: the digests of its bound fields in metadata.mcqa_prep.bound."""
    out = copy.deepcopy(row)
    out["metadata"]["mcqa_prep"]["bound"] = binding.digests(out)
    return out


def _edited(row: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    out = copy.deepcopy(row)
    for op in ops:
        *head, last = op["path"]
        target = out
        for k in head:
            target = target[k]
        if op["op"] == "set":
            target[last] = op["value"]
        elif op["op"] == "del":
            del target[last]
        else:
            target[last].insert(op["index"], op["value"])
    return out


@pytest.mark.parametrize("case", EDITS, ids=[c["name"] for c in EDITS])
def test_an_edit_is_reported_as_the_fields_it_changes(case):
    row = _edited(_stamped(BASE), case["edit"])
    c = binding.check(row)
    if case.get("unbound"):
        assert c.state == binding.UNBOUND
        return
    assert list(c.fields) == case["changed"], case.get("why")
    assert c.state == (binding.CHANGED if case["changed"] else binding.OK)


def test_the_golden_cases_cover_every_bound_field_and_runtime_additions():
    changed = {f for c in EDITS for f in c.get("changed", ())}
    assert changed == {*binding.BOUND, binding.MODE_FIELD}
    assert sum(1 for c in EDITS if c.get("changed") == []) >= 10


def test_the_stamp_mode_is_checked_against_the_served_policy():
    row = _stamped(BASE)
    assert binding.check(row, (None, "strict_single_letter_boxed")).state == binding.OK
    # served with an override, the stamp should name the override: it names the row's mode
    c = binding.check(row, ("lenient_answer_colon_md", "strict_single_letter_boxed"))
    assert c.fields == (binding.MODE_FIELD,)
    assert c.mode == ("lenient_answer_colon", "lenient_answer_colon_md")
    # an override-only mode in the stamp is checked only against the policy that makes it
    md = _edited(
        row,
        [
            {
                "op": "set",
                "path": ["metadata", "mcqa_prep", "grading_mode"],
                "value": "lenient_answer_colon_md",
            }
        ],
    )
    assert binding.check(md).state == binding.OK
    assert binding.check(md, ("lenient_answer_colon_md", "strict_single_letter_boxed")).state == binding.OK
    assert binding.check(md, (None, "strict_single_letter_boxed")).fields == (binding.MODE_FIELD,)


def test_differences_name_each_field_with_both_values():
    prepared = _stamped(BASE)
    row = _edited(
        prepared,
        [
            {"op": "set", "path": ["expected_answer"], "value": "c"},
            {"op": "set", "path": ["options", 2, "C"], "value": "Mars"},
            {"op": "set", "path": ["template_metadata", "output_regex"], "value": "([A-D])"},
            {
                "op": "set",
                "path": ["responses_create_params", "input", 0, "content"],
                "value": BASE["responses_create_params"]["input"][0]["content"].replace("Red", "Blue"),
            },
        ],
    )
    got = {d.field: (d.recorded, d.requested) for d in binding.differences(row, prepared)}
    assert got["expected_answer"] == ("C", "B")
    assert got["options[2]"] == ({"C": "Mars"}, {"C": "Jupiter"})
    assert got["template_metadata.output_regex"] == (["([A-D])"], ["Answer:\\s*([A-D])"])
    assert "Blue Planet" in got["prompt"][0] and "Red Planet" in got["prompt"][1]
    assert list(got) == ["options[2]", "expected_answer", "template_metadata.output_regex", "prompt"]
    assert binding.differences(prepared, prepared) == []


def test_a_long_prompt_is_shown_around_its_first_difference():
    a = "x" * 500 + "The answer is B." + "y" * 500
    b = "x" * 500 + "The answer is C." + "y" * 500
    mine, theirs = binding._around_first_difference(a, b)
    assert mine.startswith("...") and mine.endswith("...") and "answer is B" in mine and len(mine) < 100
    assert "answer is C" in theirs


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_prepared_rows_are_bound_as_every_reader_reads_them(tmp_path, fmt):
    """prepare records the digests of the row it writes; the row read back from JSONL, Parquet (null-filled
    structs) and load_prepared's Arrow columns checks OK."""
    from mcqa_prep.io.readers import iter_file
    from mcqa_prep.prepared import load_prepared
    from mcqa_prep.prepared.manifest import read

    src = tmp_path / "in.jsonl"
    rows = [json.loads(x)["row"] for x in (REPO / "data/golden/prepare_cases.jsonl").open(encoding="utf-8")]
    rows = [r for r in rows if not re.search(r"\d{19}", json.dumps(r))]  # (no Arrow column holds those)
    rows += [json.loads(x) for x in (REPO / "data/sample/train.jsonl").open(encoding="utf-8")]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "p"
    prepare([src], out, workers=1, output_format=fmt, on_invalid="reject")
    m = read(out)
    read_back = [r.data for f in m.shards() for r in iter_file(m.path(f))]
    assert read_back and all(binding.recorded(r) is not None for r in read_back)
    assert [binding.check(r).state for r in read_back] == [binding.OK] * len(read_back)
    loaded = [r for sp in load_prepared(out, cache_dir=tmp_path / "cache").values() for r in sp.to_list()]
    assert [binding.check(r).state for r in loaded] == [binding.OK] * len(read_back)


def test_every_option_order_of_a_permuted_question_is_bound_to_itself(tmp_path):
    """prepare --permute writes each option order as its own prepared row: bound to its own options, gold and
    prompt (not the digests of the row it was made from), so each verifies and an edit of any is told."""
    from mcqa_prep.convert.orders import PermuteSpec
    from mcqa_prep.io.readers import iter_file
    from mcqa_prep.prepared import verify_prepared
    from mcqa_prep.prepared.manifest import read

    out = tmp_path / "p4"
    prepare([REPO / "data/sample/train.jsonl"], out, permute=PermuteSpec(4), workers=1)
    verify_prepared(out)
    m = read(out)
    rows = [r.data for f in m.shards() for r in iter_file(m.path(f))]
    assert len(rows) == 32 and all(binding.check(r).state == binding.OK for r in rows)
    first = [
        r
        for r in rows
        if r["metadata"]["mcqa_prep"]["permutation"]["question"]
        == rows[0]["metadata"]["mcqa_prep"]["permutation"]["question"]
    ]
    assert len({r["metadata"]["mcqa_prep"]["bound"]["options"] for r in first}) == 4


DIGEST_SHAPES = [  # values the cached digests of repeated fields (gold, mode, template) must hash as defined
    {"expected_answer": " b ", "grading_mode": "strict_single_letter_boxed", "template_metadata": None},
    {"expected_answer": None, "grading_mode": None, "template_metadata": {"output_regex": None}},
    {"expected_answer": 3, "grading_mode": 7, "template_metadata": {"output_regex": ["a(B)", "(C)"]}},
    {
        "expected_answer": "c" * 100,
        "grading_mode": "m" * 100,
        "template_metadata": {"output_regex": "x" * 300},
    },
    {
        "template_metadata": {
            "output_regex": "Answer: ([A-D])",
            "answer_prefix": "Answer:",
            "template_id": "t",
        }
    },
    {"template_metadata": {"output_regex": {"en": "A: ([A-D])"}, "option_labels": "ABCD"}},
    {"template_metadata": "not an object", "options": [{"A": "x", "B": None}, {}, "odd"]},
]


@pytest.mark.parametrize("shape", DIGEST_SHAPES)
def test_digests_equal_their_definition(shape: dict[str, Any]) -> None:
    """digests() caches the repeated fields' digests: each must equal the digest of bound_values' canonical
    form, twice in a row (the second from the cache), with and without options known to be normal."""
    row = {**copy.deepcopy(BASE), **shape}
    want = {k: binding._digest(v) for k, v in binding.bound_values(row).items()}
    assert binding.digests(row) == want
    assert binding.digests(copy.deepcopy(row)) == want
    row["options"] = binding.normalise_options(row.get("options"))
    assert binding.digests(row, options_normal=True) == want
