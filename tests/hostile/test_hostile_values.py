"""Hypothesis-generated JSON values as whole rows and as fields of otherwise valid rows, through validate,
prepare, rescore, convert, summarize, passrates, grade and contract. Derandomized with a bounded number of
examples: the same tries on every run, and fast."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import build, tries
from .kit import OK, USAGE, check, run

EXAMPLES = 12
SETTINGS = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(st.characters(), max_size=12)  # any code point, lone surrogates included
)
json_values = st.recursive(
    leaves,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=10,
)
ROW_FIELDS = [
    "responses_create_params",
    "options",
    "expected_answer",
    "grading_mode",
    "template_metadata",
    "uuid",
    "metadata",
    "reward_profiles",
]
ROLLOUT_FIELDS = [*ROW_FIELDS, "response", "reward", "extracted_answer"]
ARC_FIELDS = ["id", "question", "choices", "answerKey"]
POLICY_FIELDS = [
    "grading_mode_default",
    "grading_mode_override",
    "final_answer_only",
    "component",
    "truncation",
]

# hypothesis tests: each runs EXAMPLES tries
COVERS = {
    "validate": 2 * EXAMPLES,
    "prepare": 2 * EXAMPLES,
    "rescore": 2 * EXAMPLES,
    "convert": EXAMPLES,
    "summarize": EXAMPLES,
    "passrates": EXAMPLES,
    "grade": EXAMPLES,
    "contract": EXAMPLES,
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("values")
    counter = itertools.count()

    def fresh():
        d = tmp / f"try-{next(counter)}"
        d.mkdir()
        return d

    fresh.rescored = build.rescored(tmp).read_bytes().splitlines()
    return fresh


def _line(value, ascii_only: bool) -> bytes:
    """One JSONL line as Python writes it: a lone surrogate becomes a \\ud800 escape (ascii_only) or the
    bytes UTF-8 forbids for it (surrogatepass), two ways a hostile file carries one."""
    return json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


@SETTINGS
@given(values=st.lists(json_values, min_size=1, max_size=5), ascii_only=st.booleans())
def test_any_json_values_as_rows(workdir, values, ascii_only):
    d = workdir()
    data = b"\n".join(_line(v, ascii_only) for v in values) + b"\n"
    src = build.write(d / "rows.jsonl", data)
    tries.validate(src, data, stdin=False)
    tries.prepare(src, data, d / "p")
    tries.rescore(src, data, d / "r.jsonl")


@SETTINGS
@given(field=st.sampled_from(ROW_FIELDS), value=json_values, ascii_only=st.booleans())
def test_any_json_value_as_a_row_field(workdir, field, value, ascii_only):
    d = workdir()
    rows = build.sample_rows()[:3]
    original = b"".join(_line(r, False) + b"\n" for r in rows)
    rows[1][field] = value
    data = b"".join(_line(r, ascii_only) + b"\n" for r in rows)
    src = build.write(d / "train.jsonl", data)
    tries.validate(src, data, original, stdin=False)
    tries.prepare(src, data, d / "p", original=original)


@SETTINGS
@given(field=st.sampled_from(ROLLOUT_FIELDS), value=json_values, ascii_only=st.booleans())
def test_any_json_value_as_a_rollout_field(workdir, field, value, ascii_only):
    d = workdir()
    rows = [json.loads(x) for x in build.ROLLOUTS.read_text(encoding="utf-8").splitlines()[:3]]
    rows[1][field] = value
    data = b"".join(_line(r, ascii_only) + b"\n" for r in rows)
    src = build.write(d / "rollouts.jsonl", data)
    tries.rescore(src, data, d / "r.jsonl", "--rows", build.TRAIN, "--rows", build.VALIDATION)


@SETTINGS
@given(field=st.sampled_from(ARC_FIELDS), value=json_values)
def test_any_json_value_as_a_source_field(workdir, field, value):
    d = workdir()
    rows = build.arc_rows(4)
    original = build.jsonl(rows)
    rows[2][field] = value
    data = build.jsonl(rows)
    tries.convert(build.write(d / "arc.jsonl", data), data, d / "out.jsonl", original=original)


@SETTINGS
@given(
    where=st.sampled_from(["reward", "metadata", "grading", "contract", "status", "template_metadata"]),
    value=json_values,
)
def test_any_json_value_in_a_rescored_row(workdir, where, value):
    d = workdir()
    rows = [json.loads(x) for x in workdir.rescored[:4]]
    r = rows[1]
    if where in ("reward", "metadata", "template_metadata"):
        r[where] = value
    elif where == "grading":
        r["metadata"]["grading"] = value
    else:
        r["metadata"]["grading"][where] = value
    data = b"".join(_line(r, False) + b"\n" for r in rows)
    src = build.write(d / "rescored.jsonl", data)
    tries.summarize(src, data)
    tries.passrates(src, data, d / "t.jsonl")


@SETTINGS
@given(
    response=st.text(max_size=200), texts=st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=4)
)
def test_any_text_is_graded(response, texts):
    """Any text is graded (exit 0); text that is not UTF-8 (a lone surrogate: what Python makes of such
    argv bytes) is a bad value (exit 2)."""
    opts = [x for i, t in enumerate(texts) for x in ("--option", f"{'ABCD'[i]}={t}")]
    args = ["grade", *opts, "--expected", "A", "--explain", "--format", "json", "--", response]
    utf8 = all(_encodable(t) for t in (response, *texts))
    doc = check(run(args), OK if utf8 else USAGE)
    if utf8:
        assert doc["reward"] in (0.0, 1.0)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@SETTINGS
@given(field=st.sampled_from(POLICY_FIELDS), value=json_values)
def test_any_json_value_in_a_policy(workdir, field, value):
    d = workdir()
    policy = build.write(d / "policy.json", json.dumps({field: value}).encode())
    doc = check(run(["contract", "--policy", policy, "--format", "json"]), (OK, USAGE))
    if doc["ok"]:
        assert doc["contract_id"].startswith("sha256:")
