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

The fourth wave's 39 tune sources (sources-i35*.md, issue 35) were bounded at their first sight (grader 1.5.0,
2,054/2,210 right, 30 false positives) and tuned on since: 1.8.0 2,108/30, 1.9.0 2,133/7, 1.10.0 2,136/4, 1.11.0
2,154/2,210 right (97.5%), 4 false positives (README, "Figures"). Their bounds are those last figures.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import NamedTuple

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
# The fourth wave's sources (sources-i35{a..f}.md, issue 35): first bounded at their first-sight figures (grader
# 1.5.0 on main 5afafe9, before any change prompted by them), raised to what grader 1.11.0 reads (a floor a
# regression breaks, not a generalisation claim). Their 30% sealed parts and 13 whole sealed sources are kept
# outside the repository.
WAVE4 = {
    "bangla-rqa-api": (48, 0),
    "bangla-rqa-open": (67, 0),
    "bilge-tr": (63, 0),
    "eus-exams-gpt35": (47, 0),
    "eus-exams-gpt4": (42, 0),
    "eus-trivia-gpt35": (41, 0),
    "f-acegpt-base": (40, 0),
    "f-acegpt-bloomz": (31, 0),
    "f-acegpt-jais13b": (41, 0),
    "f-afrimed-open": (50, 0),
    "llada-cmmlu-ceval": (70, 1),
    "mmlupro-api": (52, 0),
    "mmlupro-base-unparsed": (60, 0),
    "mmlupro-chat-unparsed": (58, 1),
    "mmlupro-instruct": (54, 0),
    "mmlupro-llama2": (62, 0),
    "mmlupro-llama3-8b": (63, 0),
    "mmlupro-mistral-base": (55, 0),
    "mmlupro-qwen-chat": (53, 0),
    "mmlupro-yi-gemma": (58, 0),
    "persian-eval": (66, 0),
    "persian-eval-local": (46, 0),
    "pl-law-json": (49, 0),
    "qwen3-cs-bias": (59, 0),
    "qwen3-cs-think": (47, 0),
    "seaeval-c3": (49, 0),
    "seaeval-ceval": (61, 1),
    "seaeval-cmmlu": (58, 0),
    "seaeval-crosslogiqa": (68, 0),
    "seaeval-crossmmlu": (62, 0),
    "seaeval-merlion-nochat": (55, 0),
    "sk-monitor-session": (65, 0),
    "sv-med-emergency": (67, 0),
    "urdu-llama1b-base": (43, 0),
    "urdu-mmlu-api": (32, 0),
    "uzlib-frontier": (53, 0),
    "uzlib-qwen3": (57, 0),
    "uzlib-small": (48, 1),
    "yks-tr": (39, 0),
    "yue-arc": (57, 0),
}
WAVE4_RIGHT = 2154  # pooled right at least (2,054/2,210 at first sight, 2,154/2,210 at grader 1.11.0)
WAVE4_FALSE_POSITIVES = 4  # pooled at most (30 at first sight, 4 at grader 1.11.0)
THIRD_PART = frozenset(("ct-ar", "fse-dscoder", "fse-phi3", "mir-mt5", "ps-aqua"))
POOLED_RATE = 0.96  # pooled right / counted at least, over the first two parts' sources
POOLED_FALSE_POSITIVES = 2  # at most, over the first two parts' sources
THIRD_PART_RIGHT = (
    229  # pooled right at least, over the third part (193/234 at first sight, 230/234 at 1.5.0)
)
THIRD_PART_FALSE_POSITIVES = 0  # at most, over the third part


class RuleCheck(NamedTuple):
    """A rule written while reading some tune sources, and cases of other sources it must read right: every
    rule of issue 35 is tested on a source it was not written from (the tune sources split by rule)."""

    written_from: tuple[str, ...]  # the tune sources whose cases the rule was written from
    checked_on: tuple[str, ...]  # ids of cases of other sources where the rule applies, each read right


RULE_CHECKS = {
    # grader 1.8.0 (labels by script)
    "a label of several characters (the Persian الف) read where it stands alone": RuleCheck(
        ("persian-eval",),
        ("persian-eval-local-43", "persian-eval-local-96", "persian-eval-local-72", "persian-eval-local-102"),
    ),
    "a capital that is a word of its language before a lower-case word is that word": RuleCheck(
        ("sk-monitor-session",),
        (
            "pl-law-json-258",
            "pl-law-json-580",
            "zno-uk-cot-13",
            "zno-uk-cot-30",
            "zno-uk-cot-53",
            "zno-uk-cot-62",
            "simple-evals-ru-6",
            "enem-gpt-28",
            "enem-gpt-29",
        ),
    ),  # fmt: skip
    # grader 1.9.0 (echoes, listings)
    "an anchor whose payload lists several option lines, each with its text, gives no single answer": RuleCheck(
        ("seaeval-cmmlu",),
        ("mmlupro-chat-unparsed-11979", "mmlupro-base-unparsed-16052", "seaeval-crosslogiqa-6760"),
    ),
    "closing lines that list several options, each with its text, are several answers or the listing": RuleCheck(
        ("sk-monitor-session",), ("uzlib-small-2573", "yue-arc-084")
    ),
    "a letter with another option's whole text on the line below is two answers": RuleCheck(
        ("urdu-llama1b-base",),
        ("urdu-mmlu-api-000", "urdu-mmlu-api-001", "urdu-mmlu-api-002", "urdu-mmlu-api-015"),
    ),
    "an echo of the prompt that holds letters is blanked": RuleCheck(
        ("urdu-llama1b-base",), ("bangla-rqa-open-027", "bangla-rqa-open-071", "bangla-rqa-open-098")
    ),
    "a line opening with the prompt's question header starts another question": RuleCheck(
        ("f-acegpt-base",), ("bangla-rqa-open-027", "bangla-rqa-open-071", "bangla-rqa-open-098")
    ),
    # grader 1.10.0 (commitment): where the rule lets an answer stand on other sources (answer first, then an
    # explanation cut at the token limit); it changed no outcome outside the sources it was written from
    "a response cut mid-sentence after taking its reasoning up again, or read from its cut last lines, "
    "has no answer": RuleCheck(
        ("uzlib-qwen3", "mmlupro-chat-unparsed"),
        (
            "f-afrimed-open-3068",
            "f-afrimed-open-644",
            "yks-tr-270",
            "yks-tr-81",
            "seaeval-crossmmlu-50737",
            "persian-eval-local-102",
            "persian-eval-local-105",
        ),
    ),  # fmt: skip
    # grader 1.11.0: a label whose line goes on with its own option's text is no abbreviation ("B. rabbits")
    "a capital, a period and its own option's text in lower case is a label, not an abbreviation": RuleCheck(
        ("f-afrimed-open",), ("enem-gpt-42", "enem-gpt-44", "enem-gpt-70", "enem-gpt-72", "enem-gpt-79")
    ),
    "a line opening with the word for 'question' (问题, 問題) after the answer starts an invented one": RuleCheck(
        ("yue-arc",), ("seaeval-cmmlu-1652", "seaeval-cmmlu-1531")
    ),
    "the Turkish 'Seçenek:' line is an answer line; the word elsewhere in a sentence is not": RuleCheck(
        ("yks-tr",), ("bilge-tr-516", "bilge-tr-198", "tumlu-cot-61")
    ),
}


def test_every_rule_is_checked_on_a_source_it_was_not_written_from():
    by_id = {c["id"]: c for c in _cases()}
    wrong = []
    for rule, check in RULE_CHECKS.items():
        assert check.written_from and check.checked_on, rule
        for source in check.written_from:
            assert source in BOUNDS or source in WAVE4, (rule, source)
        for cid in check.checked_on:
            case = by_id[cid]
            assert case["source"] not in check.written_from and not case.get("contested"), (rule, cid)
            if measure.grade(case).extracted_answer != case["want"]:
                wrong.append((rule, cid))
    assert not wrong, wrong


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
    assert {c["source"] for c in cases} == set(BOUNDS) | set(WAVE4)


@pytest.fixture(scope="module")
def result():
    return measure.measure(_cases(), by=("lang", "reasoning", "committed"))


def test_tune_part_per_source(result):
    lines = []
    for source, tally in result["sources"].items():
        lines.append(tally.line(source))
        right, fps = BOUNDS[source] if source in BOUNDS else WAVE4[source]
        assert tally.right >= right, (source, tally.as_dict())
        assert tally.false_pos <= fps, (source, tally.as_dict())
    print("\n" + "\n".join(lines))


def _part(source: str) -> str:
    return "wave4" if source in WAVE4 else "third" if source in THIRD_PART else "first"


def _pool(result, part: str) -> tuple[int, int, int, int]:
    """(right, counted, false positives, contested) over one part's sources: the first two parts of wave 3
    ("first"), its third part ("third"), or the fourth wave's ("wave4")."""
    tallies = [t for source, t in result["sources"].items() if _part(source) == part]
    return (
        sum(t.right for t in tallies),
        sum(t.counted for t in tallies),
        sum(t.false_pos for t in tallies),
        sum(t.contested for t in tallies),
    )


def test_tune_part_pooled(result):
    right, counted, fps, contested = _pool(result, "first")
    report(
        f"robust real corpus, tune part (first two parts): {right}/{counted} right, {fps} false "
        f"positive(s), {contested} contested not counted"
    )
    u_right, u_counted, u_fps, u_contested = _pool(result, "third")
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
    w_right, w_counted, w_fps, w_contested = _pool(result, "wave4")
    report(
        f"robust real corpus, tune part (fourth wave, sources-i35*.md): {w_right}/{w_counted} right, {w_fps} "
        f"false positive(s), {w_contested} contested not counted"
    )
    assert w_right >= WAVE4_RIGHT, (w_right, w_counted)
    assert w_fps <= WAVE4_FALSE_POSITIVES, w_fps
    p = result["pooled"]
    assert (p.right, p.counted, p.false_pos) == (
        right + u_right + w_right,
        counted + u_counted + w_counted,
        fps + u_fps + w_fps,
    )


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


# The fourth wave's sealed part (issue 35): 30% of each of its 40 tune sources and 13 sources kept whole (sources
# i35a-f), 1,964 records, kept outside the repository while grader 1.7.0-1.11.0 were written and read by no one
# who worked on them; measured by the lead at first sight (main 5afafe9, grader 1.5.0) and once after (grader
# 1.11.0, the merge of wave 4), then committed as sealed4/ (README, "Figures"). Bounded at the after figures:
# a regression floor, not a generalisation claim any more (the part is in the repository now).
SEALED4 = HERE / "sealed4"
SEALED4_WHOLE = {
    "belebele-de-llama2",
    "cmmlu-qwen25-manual",
    "eus-trivia-gpt4",
    "f-acegpt-llama2",
    "f-afrimed-api",
    "mmlupro-llama3-70b",
    "nepali-belebele-num",
    "seaeval-cneval",
    "seaeval-zbench",
    "sk-monitor-pertask",
    "sv-med-gp",
    "uzlib-open-mid",
    "yue-cmmlu",
}
# (part: right at least, counted, false positives at most): grader 1.11.0's figures
SEALED4_BOUNDS = {"whole": (896, 978, 5), "held_back": (913, 959, 6)}


def test_fourth_wave_sealed_part_at_least_its_measured_figures():
    cases = list(measure.load([SEALED4]))
    assert len(cases) == 1964
    sources = {c["source"] for c in cases}
    assert SEALED4_WHOLE <= sources and len(sources) == 53
    res = measure.measure(cases, by=())
    for part, (right_min, counted, fps_max) in SEALED4_BOUNDS.items():
        tallies = [t for s, t in res["sources"].items() if (s in SEALED4_WHOLE) == (part == "whole")]
        right = sum(t.right for t in tallies)
        fps = sum(t.false_pos for t in tallies)
        report(
            f"robust real corpus, fourth-wave sealed part ({part}): {right}/{counted} right, {fps} false positive(s)"
        )
        assert sum(t.counted for t in tallies) == counted
        assert right >= right_min and fps <= fps_max, (part, right, fps)
