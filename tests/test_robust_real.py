"""The real-output corpus of `robust` (tests/robust_real/README.md): its tune part, graded as the lead's
measurement grades the sealed part (tests/robust_real/measure.py).

The tune part was studied while the mode was changed (it is what the mode was tuned on), so its figures are
not a measurement of the mode on unseen text; the sealed part, kept outside the repository, is. The bounds
below sit just under the figures reached at the end of that tuning (README, "Figures"): they catch a
regression, per source and pooled, not a generalisation claim.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from conftest import report

HERE = Path(__file__).resolve().parent / "robust_real"
TUNE = HERE / "tune"
_spec = importlib.util.spec_from_file_location("robust_real_measure", HERE / "measure.py")
measure = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(measure)  # type: ignore[union-attr]

FIELDS = {
    "id",
    "source",
    "origin",
    "lang",
    "reasoning",
    "committed",
    "options",
    "labels",
    "text",
    "want",
    "why",
    "tags",
}
# Per source: (right at least, false positives at most) over its counted (non-contested) cases, just under
# the figures the tuning reached (README, "Figures": right/counted, false positives).
BOUNDS = {
    "enem-gpt": (70, 0),
    "kice_gpt": (60, 0),
    "kice_hcx": (59, 0),
    "kmmlu_rag": (28, 0),
    "kojima-zscot": (54, 1),
    "lawbench": (96, 0),
    "lawbench_1shot": (44, 0),
    "medreason-codex": (30, 1),
    "mmmlu-sw-qwen3": (65, 0),
    "mmmlu_bn": (43, 0),
    "mmmlu_ja": (36, 0),
    "persian_chatgpt": (67, 0),
    "simple-evals-ru": (73, 0),
    "thaiexam": (72, 0),
    "thaiexam_qwq": (53, 0),
    "thought-anchors-r1": (64, 0),
    "tumlu-cot": (78, 0),
    "tumlu-nocot": (35, 0),
    "zno-uk-cot": (67, 0),
    "zno-uk-nocot": (41, 0),
}
POOLED_RATE = 0.96  # pooled right / counted at least
POOLED_FALSE_POSITIVES = 2  # at most


def _cases() -> list[dict]:
    return list(measure.load([TUNE]))


def test_tune_files_are_well_formed():
    cases = _cases()
    assert len(cases) >= 1000
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids))
    for c in cases:
        assert FIELDS <= set(c), (c["id"], FIELDS - set(c))
        assert c["want"] is None or c["want"] in c["options"], c["id"]
        assert Path(c["_file"].split(":")[0]).stem == c["source"], c["id"]
        assert measure.option_labels(c["labels"]) is not None or c["labels"] in ("latin", "unlabelled"), c[
            "id"
        ]
    assert {c["source"] for c in cases} == set(BOUNDS)


@pytest.fixture(scope="module")
def result():
    return measure.measure(_cases(), by=("lang", "reasoning", "committed"))


def test_tune_part_per_source(result):
    lines = []
    for source, tally in result["sources"].items():
        lines.append(tally.line(source))
        right, fps = BOUNDS[source]
        assert tally.right >= right, (source, tally.as_dict())
        assert tally.false_pos <= fps, (source, tally.as_dict())
    print("\n" + "\n".join(lines))


def test_tune_part_pooled(result):
    p = result["pooled"]
    report(
        f"robust real corpus, tune part (tuned on): {p.right}/{p.counted} right, {p.false_pos} false "
        f"positive(s), {p.contested} contested not counted"
    )
    for w in result["wrong"]:
        print("  WRONG", json.dumps(w, ensure_ascii=False))
    assert p.right >= POOLED_RATE * p.counted, p.as_dict()
    assert p.false_pos <= POOLED_FALSE_POSITIVES, p.as_dict()


def test_measure_script_reports_a_directory(tmp_path, capsys):
    """measure.py is what the lead runs on the sealed part: per source and pooled, contested apart."""
    rows = [
        {"id": "s-1", "source": "s", "text": "<think>B?</think>\n\nAnswer: C", "options": {"A": "x", "B": "y", "C": "z"},
         "want": "C", "tags": ["think_block"], "labels": "latin"},
        {"id": "s-2", "source": "s", "text": "Answer: A", "options": {"A": "x", "B": "y"}, "want": None,
         "tags": ["hedge"], "labels": "latin"},
        {"id": "t-1", "source": "t", "text": "정답: 2번", "options": {"A": "x", "B": "y"}, "want": "B",
         "tags": [], "labels": "numbers"},
        {"id": "t-2", "source": "t", "text": "A", "options": {"A": "x", "B": "y"}, "want": "B", "tags": [],
         "labels": "latin", "contested": True},
    ]  # fmt: skip
    (tmp_path / "part.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert measure.main([str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["pooled"]["counted"] == 3 and doc["pooled"]["right"] == 2
    assert doc["pooled"]["false_positives"] == 1 and doc["pooled"]["contested"] == 1
    assert doc["sources"]["s"]["false_positives_by_tag"] == {"hedge": 1}
    assert doc["sources"]["t"]["right"] == 1
    assert measure.main([str(tmp_path / "missing")]) == 1
