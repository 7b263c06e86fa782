"""Decoding source rows: the golden cases in data/golden/convert_cases.jsonl (one row, a preset or a column
map, and the choices + gold it must give or the reason it must be rejected), and column-map errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcqa_prep.convert.extract import Extractor
from mcqa_prep.convert.presets import PRESETS, detect, get_preset
from mcqa_prep.convert.shapes import REJECT_REASONS, ColumnMap, RowReject
from mcqa_prep.errors import UsageError

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden" / "convert_cases.jsonl"
CASES = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()]


def _cmap(case) -> ColumnMap:
    if "preset" in case:
        return PRESETS[case["preset"]].cmap
    return ColumnMap().with_pairs(f"{k}={v}" for k, v in case["map"].items())


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_golden_decoding(case):
    # the source's columns: the row's own keys, unless the case says the file has more (a JSONL row
    # missing a field that other rows have)
    ext = Extractor(_cmap(case), case.get("columns", list(case["row"])))
    exp = case["expect"]
    if "reject" in exp:
        assert exp["reject"] in REJECT_REASONS
        with pytest.raises(RowReject) as info:
            ext.extract(case["row"])
        assert info.value.reason == exp["reject"], info.value.message
        return
    item = ext.extract(case["row"])
    assert item.choices == exp["choices"]
    assert item.gold == exp["gold"]
    if "source_index" in exp:
        assert item.source_index == exp["source_index"]
    if "context" in exp:
        assert item.context == exp["context"]


def test_golden_cases_cover_every_reject_reason_but_the_row_level_ones():
    seen = {c["expect"]["reject"] for c in CASES if "reject" in c["expect"]}
    # malformed_row comes from the readers, prompt_self_graded from the rendered prompt: tested elsewhere
    assert set(REJECT_REASONS) - seen == {"malformed_row", "prompt_self_graded"}


def test_missing_column_names_the_columns():
    with pytest.raises(UsageError) as info:
        Extractor(PRESETS["gpqa"].cmap, ["question", "choices", "answer"], where="x.parquet")
    msg = str(info.value)
    # 'Question' matches 'question' (case-insensitive); the correct/incorrect columns are missing
    assert "x.parquet: no column 'Correct Answer'" in msg and "'choices'" in msg
    from mcqa_prep.cli.errors import hint

    assert info.value.reason == "map_missing_column" and "--map" in hint(info.value)


@pytest.mark.parametrize(
    "pairs, needle",
    [
        (["question=q"], "exactly one choice layout"),
        (["question=q", "choices=c"], "no answer column"),
        (["choices=c", "answer=a"], "no question column"),
        (["question=q", "correct=r"], "go together"),
        (["question=q", "choices=c", "answer=a", "answer_type=roman"], "answer_type 'roman'"),
        (["question=q", "choices=c", "nonsense=a"], "expected KEY=COLUMN"),
        (["question"], "expected KEY=COLUMN"),
    ],
)
def test_bad_maps_are_usage_errors(pairs, needle):
    with pytest.raises(UsageError) as info:
        ColumnMap().with_pairs(pairs).check()
    assert needle in str(info.value)


def test_map_on_a_preset_replaces_its_shape():
    m = PRESETS["gpqa"].cmap.with_pairs(["choices=opts", "answer=key"])
    assert m.shape == "choices" and m.correct is None and m.incorrect == ()
    m.check()


def test_detect_and_aliases():
    assert detect(["Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2"]).name == "gpqa"
    assert detect(["id", "question", "choices", "answerKey"]).name == "arc"
    assert detect(["question", "choices", "answer", "subject"]).name == "mmlu"
    assert detect(["foo", "bar"]) is None
    assert get_preset("ARC").name == "arc" and get_preset("mmlu-pro").name == "mmlu_pro"
    with pytest.raises(UsageError):
        get_preset("nope")
