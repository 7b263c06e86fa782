"""A Parquet batch checked from its columns (validate/batch.py) gives every row the findings and keys the row
checker gives the row read as a dict: the same rules, messages, paths and duplicate keys, row by row, for clean
rows and for every kind of defect, in batches that mix them."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import REPO
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mcqa_prep.parallel import chunks_of
from mcqa_prep.validate.batch import BatchView, chunk_facts
from mcqa_prep.validate.facts import Config
from mcqa_prep.validate.row_checker import RowChecker

sys.path.insert(0, str(REPO / "bench"))
import bench_validate  # noqa: E402

CASES = [
    json.loads(x) for x in (REPO / "data/golden/validate_cases.jsonl").read_text().splitlines() if x.strip()
]


def _bench_rows(n: int, seed: int = 7) -> list[dict]:
    import random

    rng = random.Random(seed)
    return [bench_validate.make_row(i, rng) for i in range(n)]


def _both(path: Path) -> tuple[list, list]:
    """(reference, columns): every row's (findings, keys) read as a dict, and through the batch's columns."""
    checker = RowChecker(Config(0.5))
    ref, new = [], []
    for chunk in chunks_of([(str(path), "train")]):
        ref += [checker.check(row) for row in chunk.rows()]
        new += [
            checker.check(r) if f is None else checker.check_facts(f)
            for r, f in chunk_facts(chunk, checker.cfg)
        ]
    return ref, new


def _write(rows: list[dict], path: Path, group: int = 7) -> Path | None:
    try:
        pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=group)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    return path


MUTATIONS = {
    "none": lambda r: r,
    "prompt_blank": lambda r: _set(r, ("responses_create_params", "input", 0, "content"), "   "),
    "prompt_null": lambda r: _set(r, ("responses_create_params", "input", 0, "content"), None),
    "prompt_marker": lambda r: _set(
        r, ("responses_create_params", "input", 0, "content"), "Q {problem}\nA: x\nB: y"
    ),
    "prompt_control": lambda r: _set(r, ("responses_create_params", "input", 0, "content"), "Q\x0c\nA: x"),
    "role_system": lambda r: _set(r, ("responses_create_params", "input", 0, "role"), "system"),
    "role_null": lambda r: _set(r, ("responses_create_params", "input", 0, "role"), None),
    "two_messages": lambda r: _set(r, ("responses_create_params", "input"), [_msg(r), _msg(r)]),
    "no_messages": lambda r: _set(r, ("responses_create_params", "input"), []),
    "input_null": lambda r: _set(r, ("responses_create_params", "input"), None),
    "rcp_null": lambda r: {**r, "responses_create_params": None},
    "options_null": lambda r: {**r, "options": None},
    "options_empty": lambda r: {**r, "options": []},
    "option_all_null": lambda r: _opt(r, 1, {}),
    "option_two_letters": lambda r: _opt(r, 1, {"A": "x", "B": "y"}),
    "option_lower_key": lambda r: _rename(r, "b"),
    "option_dup_text": lambda r: _opt(r, 1, {_key(r, 1): _text(r, 0)}),
    "option_empty_text": lambda r: _opt(r, 1, {_key(r, 1): " "}),
    "option_control": lambda r: _opt(r, 1, {_key(r, 1): "a\x07b"}),
    "option_missing_from_prompt": lambda r: _opt(r, 1, {_key(r, 1): "never rendered"}),
    "gold_lower": lambda r: {**r, "expected_answer": " b "},
    "gold_out": lambda r: {**r, "expected_answer": "Z"},
    "gold_empty": lambda r: {**r, "expected_answer": ""},
    "gold_null": lambda r: {**r, "expected_answer": None},
    "mode_unknown": lambda r: {**r, "grading_mode": "fuzzy"},
    "mode_md": lambda r: {**r, "grading_mode": "lenient_answer_colon_md"},
    "mode_robust": lambda r: {**r, "grading_mode": "robust"},
    "mode_lenient": lambda r: {**r, "grading_mode": "lenient_boxed"},
    "template_null_regex": lambda r: {**r, "template_metadata": {"template_id": "t", "output_regex": None}},
    "template_bad_regex": lambda r: {**r, "template_metadata": {"template_id": "t", "output_regex": "([A-Z"}},
    "template_good_regex": lambda r: {**r, "template_metadata": {"output_regex": "Answer:\\s*([A-J])$"}},
    "uuid_null": lambda r: {**r, "uuid": None},
    "uuid_dup": lambda r: {**r, "uuid": "same"},
    "profiles": lambda r: {
        **r,
        "reward_profiles": [{"model_hf_path": "m", "num_generations": 4, "pass_rate": 0.5}],
    },
    "profiles_null_item": lambda r: {**r, "reward_profiles": [None]},
}


def _msg(r: dict) -> dict:
    return copy.deepcopy(r["responses_create_params"]["input"][0])


def _set(r: dict, path: tuple, value) -> dict:
    r = copy.deepcopy(r)
    obj = r
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value
    return r


def _live(o: dict) -> tuple[str, str]:
    return next((k, v) for k, v in o.items() if v is not None)


def _key(r: dict, i: int) -> str:
    return _live(r["options"][i])[0]


def _text(r: dict, i: int) -> str:
    return _live(r["options"][i])[1]


def _opt(r: dict, i: int, elem: dict) -> dict:
    r = copy.deepcopy(r)
    r["options"][i] = {k: elem.get(k) for k in bench_validate.LETTERS} | elem
    return r


def _rename(r: dict, key: str) -> dict:
    r = copy.deepcopy(r)
    r["options"] = [{**o, key: o.get("B")} if o.get("B") is not None else o for o in r["options"]]
    for o in r["options"]:
        if o.get(key) is not None:
            o["B"] = None
    return r


def test_the_bench_data_is_read_from_columns_and_agrees(tmp_path):
    path = _write(_bench_rows(300), tmp_path / "train.parquet", group=64)
    ref, new = _both(path)
    assert ref == new
    assert sum(1 for fs, _ in ref if fs) > 30  # the bench's templates are audited: rows with findings too
    view = BatchView(next(pq.ParquetFile(path).iter_batches()), str(path), "train", 1, 0)
    assert all(view.fast)  # every row of the common layout is read from the columns


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_each_defect_agrees_in_a_batch_of_clean_rows(tmp_path, name):
    rows = _bench_rows(12)
    rows[5] = MUTATIONS[name](rows[5])
    rows[9] = MUTATIONS[name](rows[9])
    path = _write(rows, tmp_path / "train.parquet")
    if path is None:  # a value Arrow cannot put in one column with the others: alone in its file
        path = _write([rows[5]], tmp_path / "train.parquet")
    assert path is not None
    ref, new = _both(path)
    assert ref == new


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(sorted(MUTATIONS)), min_size=1, max_size=24), st.integers(1, 9))
def test_mixed_batches_agree(tmp_path_factory, names, group):
    rows = [MUTATIONS[n](r) for n, r in zip(names, _bench_rows(len(names), seed=len(names)), strict=True)]
    path = _write(rows, tmp_path_factory.mktemp("b") / "train.parquet", group)
    assume(path is not None)
    ref, new = _both(path)
    assert ref == new


def test_golden_rows_agree(tmp_path):
    """Each golden case's row alone in a Parquet file (the layout Arrow infers for it)."""
    n = 0
    for i, case in enumerate(CASES):
        if "row" not in case:
            continue
        path = _write([case["row"]], tmp_path / f"c{i}.parquet")
        if path is None:
            continue
        ref, new = _both(path)
        assert ref == new, case["name"]
        n += 1
    assert n > 40
