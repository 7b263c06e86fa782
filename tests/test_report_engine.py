"""report on the row engine: the document of chunked, folded tallies is the one-pass document, for any number of
workers and any chunking (capped groups, first examples, file kinds, malformed lines, several contracts)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import SAMPLE
from report_helpers import heldback_inputs

from mcqa_prep.report import collect, dataset
from mcqa_prep.runs import RunRequest


def _one_pass(monkeypatch, paths: list[Path], **kw) -> str:
    with monkeypatch.context() as m:
        m.setattr(
            collect, "_on_engine", lambda state, srcs, entries, progress, how: collect._one_pass(state, srcs, entries, progress)
        )  # fmt: skip
        return json.dumps(collect.build_report(paths, **kw), sort_keys=True)


def _engine(paths: list[Path], workers: int, chunk_bytes: int | None, **kw) -> str:
    how = RunRequest((), workers=workers, chunk_bytes=chunk_bytes)
    return json.dumps(collect.build_report(paths, run=how, **kw), sort_keys=True)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> list[Path]:
    """Dataset and rescored files under two contracts, leading and inner malformed lines, an unreadable file."""
    tmp = tmp_path_factory.mktemp("report-engine")
    p = heldback_inputs(tmp)
    lines = p["data"].read_text(encoding="utf-8").splitlines()
    ra = p["rescored_a"].read_text(encoding="utf-8").splitlines()
    mixed = tmp / "mixed.jsonl"
    mixed.write_text(
        "\n".join(["{bad", "nope", *lines[:150], "{oops", *lines[150:]]) + "\n", encoding="utf-8"
    )
    resc = tmp / "rescored-malformed.jsonl"
    resc.write_text("\n".join(["{bad"] * 3 + ra + ["{x"]) + "\n", encoding="utf-8")
    stamped = tmp / "stamped.jsonl"  # two contracts interleaved row by row, and duplicates within each
    rows = [json.loads(x) for x in lines[:120]]
    for k, r in enumerate(rows):
        r.setdefault("metadata", {})["mcqa_prep"] = {"contract": f"contract-{k % 3 % 2}"}
    stamped.write_text("\n".join(json.dumps(r) for r in rows + rows[:30]) + "\n", encoding="utf-8")
    garbage = tmp / "garbage.jsonl"
    garbage.write_bytes(b"\x00\xff{bad\n")
    return [
        p["data"],
        stamped,
        mixed,
        p["rescored_a"],
        p["rescored_b"],
        resc,
        garbage,
        SAMPLE / "validation.parquet",
    ]


def test_sample_document_is_the_one_pass_document_for_any_workers(monkeypatch):
    paths = [SAMPLE / "train.jsonl", SAMPLE / "rollouts.jsonl", SAMPLE / "validation.parquet"]
    want = _one_pass(monkeypatch, paths)
    assert _engine(paths, 1, None) == want
    assert _engine(paths, 2, 2000) == want


def test_mixed_inputs_many_chunks_equal_one_pass(monkeypatch, mixed):
    want = _one_pass(monkeypatch, mixed, examples=2)
    doc = json.loads(want)
    assert doc["distinct_contracts"] >= 2
    assert any(e["malformed"] for e in doc["inputs"])
    assert [e["detected"] for e in doc["inputs"]].count("rescored") == 3
    assert {"contract-0", "contract-1"} <= set(doc["contracts"]["dataset"])
    assert "duplicate_prompt" in want or "duplicate_row" in want
    assert _engine(mixed, 1, None, examples=2) == want
    assert _engine(mixed, 1, 4096, examples=2) == want  # many chunks per file
    assert _engine(mixed, 2, 4096, examples=2) == want


def test_capped_groups_merge_in_input_order(monkeypatch, mixed):
    """Caps small enough that templates and patterns overflow inside chunks: the pooled groups are one pass's."""
    monkeypatch.setattr(dataset, "TEMPLATE_CAP", 2)
    monkeypatch.setattr(dataset, "PATTERN_CAP", 1)
    want = _one_pass(monkeypatch, mixed[:3])
    assert "(other templates)" in want
    assert _engine(mixed[:3], 2, 4096) == want


def test_parquet_batches_tallied_from_columns_equal_one_pass(monkeypatch, tmp_path):
    """Parquet batches whose rows' facts are all in their columns are tallied a batch at once
    (DatasetTally.count_batch), the one-pass document reads each row's dict: both documents are one."""
    p = heldback_inputs(tmp_path)
    rows = [json.loads(x) for x in p["data"].read_text(encoding="utf-8").splitlines() if x.strip()]
    for k, r in enumerate(rows):  # pass rates of three models, one without a model path, some rows without
        model = f"org/model-{k % 3}" if k % 5 else None
        r["reward_profiles"] = [{"model_hf_path": model, "pass_rate": (k % 7) / 7}] if k % 4 else None
    data = tmp_path / "columns.parquet"
    pq.write_table(pa.Table.from_pylist(rows), data, row_group_size=37)
    calls: list[int] = []
    count_batch = dataset.DatasetTally.count_batch

    def counted(self, *a):
        calls.append(len(a[1]))
        return count_batch(self, *a)

    want = _one_pass(monkeypatch, [data])
    monkeypatch.setattr(dataset.DatasetTally, "count_batch", counted)
    doc = json.loads(want)
    assert {"org/model-0", "org/model-1", "(no model_hf_path)"} <= set(json.dumps(doc["sections"]).split('"'))
    assert _engine([data], 1, None) == want
    assert _engine([data], 1, 5000) == want
    assert sum(calls) == 2 * len(rows)  # every row of both runs was tallied from its batch's columns


def test_parquet_kind_is_detected_from_its_first_row(monkeypatch, tmp_path):
    """A Parquet file of rescored rows (metadata.grading) is detected as one, a dataset's with a metadata
    column (its stamp) or none as a dataset, as one pass detects them."""
    p = heldback_inputs(tmp_path)
    paths = []
    for name in ("rescored_a", "data"):
        rows = [json.loads(x) for x in p[name].read_text(encoding="utf-8").splitlines() if x.strip()]
        if name == "data":
            for r in rows[:40]:
                r["metadata"] = {"mcqa_prep": {"contract": "c"}}
            rows = rows[:40]
        paths.append(tmp_path / f"{name}.parquet")
        pq.write_table(pa.Table.from_pylist(rows), paths[-1])
    paths.append(tmp_path / "plain.parquet")
    pq.write_table(
        pa.Table.from_pylist([json.loads(p["data"].read_text(encoding="utf-8").splitlines()[50])]), paths[-1]
    )
    want = _one_pass(monkeypatch, paths)
    assert [e["detected"] for e in json.loads(want)["inputs"]] == ["rescored", "dataset", "dataset"]
    assert _engine(paths, 1, None) == want
