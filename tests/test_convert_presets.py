"""Every preset on a small file in its public layout: detected from the columns, converted with and without
--shuffle and with every built-in template, validated clean, every answer text on its letter, every row
accounted for."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from mcqa_prep.convert import BUILTIN_TEMPLATES, PRESETS
from mcqa_prep.validate import validate_paths

try:
    from .convert_layouts import LAYOUTS, make_layout, option_text, read_jsonl
except ImportError:
    from convert_layouts import LAYOUTS, make_layout, option_text, read_jsonl


def _validate_clean(path: Path) -> dict:
    rep = validate_paths([path], max_findings=0)
    errors = [f for f in rep.findings if f.severity == "error"]
    assert errors == [], [f.render() for f in errors[:5]]
    warnings = [f for f in rep.findings if f.severity == "warning"]
    assert warnings == [], [f.render() for f in warnings[:5]]
    return rep.summary


def _source_order(case, correct_first: bool) -> list[str]:
    """The choices in the source's own order: correct-answer layouts list the correct answer first."""
    if correct_first:
        return [case.gold_text] + [t for j, t in enumerate(case.choices) if j != case.gold]
    return case.choices


def _check_rows(out: Path, cases, *, shuffled: bool, correct_first: bool = False) -> list[dict]:
    rows = read_jsonl(out)
    assert len(rows) == len(cases)
    for row in rows:
        case = cases[row["metadata"]["source"]["row"]]
        order = _source_order(case, correct_first)
        # the answer text sits on the gold letter, the options are the source's choices
        assert option_text(row, row["expected_answer"]) == case.gold_text
        texts = [next(iter(o.values())) for o in row["options"]]
        assert sorted(texts) == sorted(case.choices)
        # the recorded permutation restores the source order (placeholders such as N/A were dropped, so
        # positions refer to the source's list, gaps included)
        mc = row["metadata"]["convert"]
        placed = dict(zip(mc["option_source_index"], texts, strict=True))
        assert [placed[i] for i in sorted(placed)] == order
        assert placed[mc["gold_source_index"]] == case.gold_text
        if not shuffled:
            assert texts == order
    return rows


CORRECT_FIRST = {"gpqa", "sciq"}


def test_every_public_layout_has_a_test():
    assert set(LAYOUTS) == set(PRESETS)


@pytest.mark.parametrize("preset", sorted(LAYOUTS))
def test_preset_detected_and_converted(cli, tmp_path, preset):
    src, cases = make_layout(tmp_path, preset)
    out = tmp_path / "out.jsonl"
    res = cli("convert", src, "-o", out, "--format", "json", "-q")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["sources"][0]["preset"] == preset
    assert doc["counts"] == {
        "read": len(cases),
        "written": len(cases),
        "rejected": 0,
        "rejected_by_reason": {},
    }
    _check_rows(out, cases, shuffled=False, correct_first=preset in CORRECT_FIRST)
    _validate_clean(out)
    if preset in CORRECT_FIRST:  # every gold is A without --shuffle: the report says so and how to fix it
        assert any("pass --shuffle" in w for w in doc["warnings"]), doc["warnings"]


@pytest.mark.parametrize("preset", sorted(LAYOUTS))
def test_preset_shuffled_balanced_every_template(cli, tmp_path, preset):
    src, cases = make_layout(tmp_path, preset, n=60, seed=3)
    out = tmp_path / "out.jsonl"
    tpl = [a for t in BUILTIN_TEMPLATES for a in ("--template", f"{t}:1")]
    res = cli(
        "convert", src, "-o", out, "--preset", preset, "--shuffle", "--seed", "7", *tpl, "--format", "json"
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    rows = _check_rows(out, cases, shuffled=True, correct_first=preset in CORRECT_FIRST)
    _validate_clean(out)
    # gold letters balanced per option count: within one of each other
    by_n: dict[int, Counter] = {}
    for r in rows:
        by_n.setdefault(len(r["options"]), Counter())[r["expected_answer"]] += 1
    for n, hist in by_n.items():
        counts = [hist.get(chr(65 + k), 0) for k in range(n)]
        assert max(counts) - min(counts) <= 1, (n, counts)
    assert all(s <= 1 for s in doc["gold_spread"]["all"].values())
    # every built-in template was used, and the template is recorded on the row
    used = Counter(r["template_metadata"]["template_id"] for r in rows)
    assert set(used) == set(BUILTIN_TEMPLATES)
    assert {t["id"]: t["rows"] for t in doc["templates"]} == dict(used)


@pytest.mark.parametrize("preset", ["gpqa", "arc", "medmcqa", "truthfulqa_mc1"])
def test_preset_by_explicit_map(cli, tmp_path, preset):
    """The same files converted with --map alone (no preset) give the same rows as the preset."""
    src, cases = make_layout(tmp_path, preset)
    maps = {
        "gpqa": [
            "question=Question",
            "correct=Correct Answer",
            "incorrect=Incorrect Answer 1,Incorrect Answer 2,Incorrect Answer 3",
        ],
        "arc": ["question=question", "choices=choices", "answer=answerKey", "answer_type=label"],
        "medmcqa": ["question=question", "options=opa,opb,opc,opd", "answer=cop"],
        "truthfulqa_mc1": ["question=question", "choices=mc1_targets.choices", "answer=mc1_targets.labels"],
    }[preset]
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    args = [x for m in maps for x in ("--map", m)]
    assert cli("convert", src, "-o", a, *args, "--shuffle").exit_code == 0
    assert cli("convert", src, "-o", b, "--preset", preset, "--shuffle").exit_code == 0
    ra, rb = read_jsonl(a), read_jsonl(b)
    for x, y in zip(ra, rb, strict=True):
        assert x["options"] == y["options"] and x["expected_answer"] == y["expected_answer"]
        assert x["uuid"] == y["uuid"]
    _check_rows(a, cases, shuffled=True, correct_first=preset in CORRECT_FIRST)


def test_map_words_after_map_as_in_the_issue(cli, tmp_path):
    """`--map question=… choices=… answer=…`: the words after --map are mapping entries too."""
    src, cases = make_layout(tmp_path, "mmlu")
    out = tmp_path / "o.jsonl"
    res = cli("convert", src, "-o", out, "--map", "question=question", "choices=choices", "answer=answer")
    assert res.exit_code == 0, res.output
    _check_rows(out, cases, shuffled=False)


def test_directory_output_goes_to_prepare(cli, tmp_path):
    """A directory of <split>.jsonl that prepare takes as it is."""
    d = tmp_path / "src"
    d.mkdir()
    make_layout(d, "mmlu", split="test")
    make_layout(d, "mmlu", split="validation", seed=5)
    out = tmp_path / "rows"
    res = cli("convert", d, "-o", out, "--shuffle")
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == ["convert.json", "test.jsonl", "validation.jsonl"]
    assert (tmp_path / "rows.rejects.jsonl").exists()
    prep = cli("prepare", out, "-o", tmp_path / "prepared")
    assert prep.exit_code == 0, prep.output
    assert "rejected 0" in prep.output
