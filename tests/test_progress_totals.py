"""Progress bars know their total (and so show the time left) wherever it is known before reading: Parquet's row
count from its footer, a regular file's size; only stdin and pipes go without."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import SAMPLE, read_jsonl

from mcqa_prep.parallel import InputMeter, chunks_of, rows_estimate


def _jsonl(path, n: int):
    """n distinct rows (the sample's, each question under its own uuid and prompt)."""
    rows = read_jsonl(SAMPLE / "train.jsonl")
    out = []
    for i in range(n):
        r = json.loads(json.dumps(rows[i % len(rows)]))
        r["uuid"] = f"{r['uuid']}-{i}"
        r["responses_create_params"]["input"][0]["content"] += f" ({i})"
        out.append(json.dumps(r) + "\n")
    path.write_text("".join(out), encoding="utf-8")
    return path


def _parquet(path, n: int):
    pq.write_table(pa.table({"x": list(range(n))}), path, row_group_size=max(1, n // 7))
    return path


def _steps(meter: InputMeter, files) -> int:
    return sum(meter.step(c, sum(1 for _ in c.rows())) for c in chunks_of((f, None) for f in files))


def test_a_regular_file_counts_its_bytes_and_the_chunks_add_up_to_them(tmp_path):
    a, b = _jsonl(tmp_path / "a.jsonl", 3000), _jsonl(tmp_path / "b.jsonl", 10)
    meter = InputMeter([a, b])
    assert meter.unit == "B" and meter.total == a.stat().st_size + b.stat().st_size
    assert _steps(meter, [a, b]) == meter.total


def test_parquet_counts_its_rows_from_the_footer(tmp_path):
    a, b = _parquet(tmp_path / "a.parquet", 700), _parquet(tmp_path / "b.parquet", 5)
    meter = InputMeter([a, b])
    assert (meter.unit, meter.total) == ("row", 705)
    assert _steps(meter, [a, b]) == 705


def test_a_mix_counts_bytes_a_parquet_chunk_its_share_of_its_file(tmp_path):
    a, b = _jsonl(tmp_path / "a.jsonl", 500), _parquet(tmp_path / "b.parquet", 700)
    meter = InputMeter([a, b])
    assert meter.unit == "B" and meter.total == a.stat().st_size + b.stat().st_size
    assert abs(_steps(meter, [a, b]) - meter.total) <= 8  # rounding, one byte a chunk at most


@pytest.mark.parametrize("name", ["-", "missing.jsonl"])
def test_stdin_or_an_unreadable_input_has_no_total(tmp_path, name):
    meter = InputMeter([_jsonl(tmp_path / "a.jsonl", 3), tmp_path / name if name != "-" else "-"])
    assert (meter.unit, meter.total) == ("row", None)
    assert rows_estimate([tmp_path / name if name != "-" else "-"]) is None


def test_rows_read_one_by_one_get_an_estimated_total(tmp_path):
    a, b = _jsonl(tmp_path / "a.jsonl", 2000), _parquet(tmp_path / "b.parquet", 33)
    est = rows_estimate([a, b])
    assert est is not None and abs(est - 2033) <= 0.05 * 2033  # lines of similar length: close
    assert rows_estimate([_jsonl(tmp_path / "small.jsonl", 4)]) == 4  # a file read whole: exact


def test_the_bar_shows_a_total_and_the_time_left(cli, tmp_path, monkeypatch):
    import mcqa_prep.cli.common as common

    monkeypatch.setattr(common, "progress_enabled", lambda quiet: not quiet)
    src = _jsonl(tmp_path / "train.jsonl", 400)
    res = cli("validate", src)
    assert res.exit_code == 0
    bar = res.stderr.replace("\r", "\n").splitlines()
    assert any("validate" in x and f"/{src.stat().st_size / 1024:.0f}k" in x and "<" in x for x in bar), bar
    assert cli("validate", src, "-q").stderr == ""
