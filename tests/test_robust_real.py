"""The real-output corpus of `robust` (tests/robust_real/README.md): its tune part, graded as the lead's
measurement grades the sealed part (tests/robust_real/measure.py).

The tune part of the first twenty sources (sources-i25a.md, sources-i25b.md) was studied while the mode was
changed (it is what the mode was tuned on), so its figures are not a measurement of the mode on unseen text;
the sealed part's first sight was (grader 1.4.0). Their bounds sit just under the figures reached at the end
of that tuning (README, "Figures"). The five sources of the third part (sources-i25c.md) arrived after that
tuning and were first bounded at their first-sight figures; grader 1.5.0 was then tuned on them too (numbered
options answered by number), and they stay pooled apart. The sealed part was measured once at first sight
(grader 1.4.0) and then studied for grader 1.5.0 (README, "Figures"): its bounds are the figures after that
study. Either way the bounds catch a regression, per source and pooled; they are not a generalisation claim.
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
    # the third part (sources-i25c.md): first bounded at its first-sight figures, tuned on for grader 1.5.0
    "ct-ar": (24, 0),
    "fse-dscoder": (102, 0),
    "fse-phi3": (46, 0),
    "mir-mt5": (18, 0),
    "ps-aqua": (37, 0),
}
THIRD_PART = frozenset(("ct-ar", "fse-dscoder", "fse-phi3", "mir-mt5", "ps-aqua"))
POOLED_RATE = 0.96  # pooled right / counted at least, over the first two parts' sources
POOLED_FALSE_POSITIVES = 2  # at most, over the first two parts' sources
THIRD_PART_RIGHT = (
    229  # pooled right at least, over the third part (193/234 at first sight, 230/234 at 1.5.0)
)
THIRD_PART_FALSE_POSITIVES = 0  # at most, over the third part


SEALED = HERE / "sealed"
# The sealed part: measured once at first sight (547/585, 5 false positives, grader 1.4.0), then studied for
# grader 1.5.0 (README, "Figures": which commits). These bounds are the figures after that study, so a
# regression on it fails; they are no longer a held-out measurement.
SEALED_RIGHT = 571  # of 585 counted
SEALED_FALSE_POSITIVES = 0


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


def _pool(result, third: bool) -> tuple[int, int, int, int]:
    """(right, counted, false positives, contested) over the first two parts' sources, or over the third's."""
    tallies = [t for source, t in result["sources"].items() if (source in THIRD_PART) == third]
    return (
        sum(t.right for t in tallies),
        sum(t.counted for t in tallies),
        sum(t.false_pos for t in tallies),
        sum(t.contested for t in tallies),
    )


def test_tune_part_pooled(result):
    right, counted, fps, contested = _pool(result, third=False)
    report(
        f"robust real corpus, tune part (first two parts): {right}/{counted} right, {fps} false "
        f"positive(s), {contested} contested not counted"
    )
    u_right, u_counted, u_fps, u_contested = _pool(result, third=True)
    report(
        f"robust real corpus, tune part (third part, sources-i25c.md): {u_right}/{u_counted} right, {u_fps} "
        f"false positive(s), {u_contested} contested not counted"
    )
    for w in result["wrong"]:
        print("  WRONG", json.dumps(w, ensure_ascii=False))
    assert right >= POOLED_RATE * counted, (right, counted)
    assert fps <= POOLED_FALSE_POSITIVES, fps
    assert u_right >= THIRD_PART_RIGHT, (u_right, u_counted)
    assert u_fps <= THIRD_PART_FALSE_POSITIVES, u_fps
    p = result["pooled"]
    assert (p.right, p.counted, p.false_pos) == (right + u_right, counted + u_counted, fps + u_fps)


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


def test_sealed_part_at_least_its_studied_figures():
    cases = list(measure.load([SEALED]))
    assert len(cases) == 596 and {c["source"] for c in cases} == set(BOUNDS)
    res = measure.measure(cases, by=())
    right = sum(t.right for t in res["sources"].values())
    counted = sum(t.counted for t in res["sources"].values())
    fps = sum(t.false_pos for t in res["sources"].values())
    report(f"robust real corpus, sealed part: {right}/{counted} right, {fps} false positive(s)")
    assert right >= SEALED_RIGHT and fps <= SEALED_FALSE_POSITIVES, (right, counted, fps)
