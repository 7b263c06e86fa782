"""Contract ids: canonical, stable under key order, sensitive to every field; the `contract` command."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcqa_prep.grader import OVERRIDE_MODES, ROW_MODES
from mcqa_prep.policy import GradingPolicy, canonical_json, contract_id

# every single-field change a policy can make, as (CLI flags, with_overrides kwargs)
FIELD_CHANGES = [
    (["--grading-mode-default", "lenient_boxed"], {"grading_mode_default": "lenient_boxed"}),
    (
        ["--grading-mode-override", "lenient_answer_colon_md"],
        {"grading_mode_override": "lenient_answer_colon_md"},
    ),
    (["--final-answer-only"], {"final_answer_only": True}),
    (["--reasoning-mode", "none"], {"reasoning_mode": "none"}),
    (["--zero-truncated"], {"zero_truncated": True}),
    (["--prompt-thinking", "closed"], {"prompt_thinking": "closed"}),
]

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=10,
)


def _reorder(value):
    if isinstance(value, dict):
        return {k: _reorder(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reorder(v) for v in value]
    return value


@given(_json)
def test_contract_id_stable_under_key_order(doc):
    c = {"contract_version": 1, "payload": doc}
    assert contract_id(c) == contract_id(_reorder(c))
    assert canonical_json(c) == canonical_json(json.loads(json.dumps(_reorder(c))))


@given(
    st.sampled_from(ROW_MODES),
    st.sampled_from((None,) + OVERRIDE_MODES),
    st.booleans(),
    st.sampled_from(["required", "none"]),
    st.booleans(),
    st.sampled_from(["none", "open", "closed"]),
)
def test_contract_id_changes_when_any_field_changes(default, override, fao, rmode, zt, pt):
    base = GradingPolicy(default, override, fao, rmode, zt, pt)
    assert contract_id(_reorder(base.contract())) == base.contract_id()
    alternatives = {
        "grading_mode_default": [m for m in ROW_MODES if m != default][0],
        "grading_mode_override": "robust" if override != "robust" else None,
        "final_answer_only": not fao,
        "reasoning_mode": "none" if rmode == "required" else "required",
        "zero_truncated": not zt,
        "prompt_thinking": "open" if pt != "open" else "none",
    }
    for name, value in alternatives.items():
        changed = (
            base.with_overrides(**{name: value})
            if value is not None
            else base.with_overrides(clear_override=True)
        )
        assert changed.contract_id() != base.contract_id(), name


def test_contract_command_text_and_json(cli):
    text = cli("contract")
    assert text.exit_code == 0
    default_id = GradingPolicy().contract_id()
    assert text.output.splitlines()[0] == f"contract {default_id}"
    doc = json.loads(cli("contract", "--format", "json").output)
    assert doc["contract_id"] == default_id
    assert contract_id(doc["contract"]) == default_id
    assert doc["canonical"] == canonical_json(doc["contract"]).decode()


def test_contract_command_flags_and_policy_file(cli, tmp_path):
    flagged = json.loads(
        cli("contract", "--final-answer-only", "--zero-truncated", "--format", "json").output
    )
    expected = GradingPolicy().with_overrides(final_answer_only=True, zero_truncated=True)
    assert flagged["contract_id"] == expected.contract_id()
    policy = tmp_path / "p.json"
    policy.write_text(json.dumps({"grading_mode_override": "lenient_boxed", "zero_truncated": True}))
    from_file = json.loads(cli("contract", "--policy", policy, "--format", "json").output)
    assert from_file["contract"]["policy"]["grading_mode_override"] == "lenient_boxed"
    # a flag overrides the file's field; 'none' clears the override
    cleared = json.loads(
        cli(
            "contract",
            "--policy",
            policy,
            "--grading-mode-override",
            "none",
            "--no-zero-truncated",
            "--format",
            "json",
        ).output
    )
    assert cleared["contract_id"] == GradingPolicy().contract_id()


def test_invalid_policy_is_a_usage_error(cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"reasoning_mode": "sometimes"}))
    r = cli("contract", "--policy", bad)
    assert r.exit_code == 2
    assert "reasoning_mode" in r.output
    missing = cli("contract", "--policy", tmp_path / "nope.json")
    assert missing.exit_code == 2 and "not found" in missing.output


@pytest.mark.parametrize(
    "data, why",
    [
        (b'{"final_answer_only": \xff}', "not valid UTF-8"),
        (b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
        (b'{"final_answer_only": "\\ud800"}', "lone surrogate"),
        (b'{"final_answer_only": tru', "not valid JSON"),
    ],
)
def test_a_policy_file_that_is_not_a_json_document_is_a_policy_error(tmp_path, data, why):
    """The same document reader as manifests and locks: a reason, never an internal error (tests/hostile)."""
    from mcqa_prep.errors import PolicyError

    p = tmp_path / "policy.json"
    p.write_bytes(data)
    with pytest.raises(PolicyError, match=why):
        GradingPolicy.from_file(p)


def test_every_refusal_names_what_differs_one_way():
    """One builder (errors.refusal) makes every refusal of a recorded thing against a requested one: the
    differences travel as data and end the message in one spelling; a head that names its one difference
    itself (two versions) does not repeat it."""
    from mcqa_prep.errors import ContractMismatch, Difference, StaleCache, fields_that_differ, refusal
    from mcqa_prep.policy import contract_differences

    a, b = GradingPolicy(), GradingPolicy(final_answer_only=True)
    diff = contract_differences(a.contract(), b.contract())
    err = refusal(ContractMismatch, "d: prepared under contract X", diff, expected="Y", found="X")
    assert str(err) == (
        'd: prepared under contract X; fields that differ: policy.component.scope: "full" != "response"; '
        "policy.final_answer_only: false != true"
    )
    assert err.differences == tuple(diff) and err.fields == (
        "policy.component.scope",
        "policy.final_answer_only",
    )
    assert err.to_dict()["differences"][1] == {"field": "policy.final_answer_only", "recorded": False,
                                               "requested": True}  # fmt: skip
    assert (
        fields_that_differ([], "row != server")
        == "fields that differ (row != server): (none: ids differ only)"
    )
    one = refusal(
        StaleCache, "d: prepared by version 1; this is 2", [Difference("v", "1", "2")], listed=False
    )
    assert str(one) == "d: prepared by version 1; this is 2" and one.differences == (
        Difference("v", "1", "2"),
    )


def test_no_refusal_spells_its_differences_by_hand():
    """'fields that differ' was joined by hand in eleven places: now only errors.py spells it."""
    import re
    from pathlib import Path

    pkg = Path(__file__).resolve().parents[1] / "mcqa_prep"
    by_hand = re.compile(r"fields that differ( \(|: )|\.render\(\) for \w+ in (diff|differences)")
    offenders = [
        str(p.relative_to(pkg))
        for p in pkg.rglob("*.py")
        if p.name != "errors.py" and by_hand.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []
