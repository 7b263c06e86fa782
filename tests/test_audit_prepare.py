"""`prepare --decontaminate-against BENCH`: rows holding a benchmark question are dropped (counted, with their
reason), the manifest records each benchmark's sha256 and the thresholds, and another benchmark set or
threshold makes the preparation stale."""

from __future__ import annotations

import json
import random

import pytest
from audit_helpers import A
from conftest import read_jsonl, write_jsonl

VOCAB = A.Vocabulary()


@pytest.fixture
def setup(tmp_path):
    for d in ("in", "in2", "in3"):
        (tmp_path / d).mkdir()
    qs = list(A.questions(40, 30, range(0, 6), VOCAB))
    other = list(A.questions(41, 30, range(0, 6), VOCAB))
    rnd = random.Random(3)
    rows = [A.row(q, rnd) for q in other[:20]] + [A.row(A.shuffled(q, rnd), rnd) for q in qs[:5]]
    data = write_jsonl(tmp_path / "in" / "train.jsonl", rows)
    bench = {
        "mmlu": A.write_mmlu(tmp_path / "mmlu.jsonl", qs[:3]),
        "gpqa": A.write_gpqa(tmp_path / "gpqa.csv", qs[3:10]),
    }
    return data, bench


def _prepare(cli, data, out, *extra):
    res = cli("prepare", data, "-o", out, "--format", "json", "-q", *extra)
    return res.exit_code, json.loads(res.stdout)


def test_contaminated_rows_are_dropped_counted_and_recorded(cli, tmp_path, setup):
    data, bench = setup
    out = tmp_path / "out"
    code, doc = _prepare(
        cli, data, out, "--decontaminate-against", bench["mmlu"], "--decontaminate-against", bench["gpqa"]
    )
    assert code == 0
    c = doc["counts"]
    assert c["read"] == 25 and c["written"] == 20 and c["dropped"] == 5
    assert c["dropped_by_reason"] == {"contaminated": 5}
    written = {r["uuid"] for p in out.glob("train-*.jsonl") for r in read_jsonl(p)}
    planted = {r["uuid"] for r in read_jsonl(data)[20:]}
    assert not written & planted
    manifest = json.loads((out / "manifest.json").read_text())
    d = manifest["decontamination"]
    sha = {p.name: __import__("hashlib").sha256(p.read_bytes()).hexdigest() for p in bench.values()}
    assert sorted(b["sha256"] for b in d["settings"]["benchmarks"]) == sorted(sha.values())
    assert d["settings"]["thresholds"]["ngram"] == 13 and d["settings"]["thresholds"]["similarity"] == 0.75
    assert d["evidence"]["rows_dropped"] == 5 and d["evidence"]["examples"][0].startswith(str(data))
    assert cli("verify", out, "-q").exit_code == 0


def test_the_same_benchmarks_in_another_order_are_up_to_date(cli, tmp_path, setup):
    data, bench = setup
    out = tmp_path / "out"
    _prepare(
        cli, data, out, "--decontaminate-against", bench["mmlu"], "--decontaminate-against", bench["gpqa"]
    )
    code, doc = _prepare(
        cli, data, out, "--decontaminate-against", bench["gpqa"], "--decontaminate-against", bench["mmlu"]
    )
    assert (
        code == 0
        and doc["status"] == "up_to_date"
        and doc["decontamination"]["evidence"]["rows_dropped"] == 5
    )


@pytest.mark.parametrize(
    "change",
    [
        ["--decontaminate-against", "{gpqa}"],  # another benchmark set
        [
            "--decontaminate-against",
            "{mmlu}",
            "--decontaminate-against",
            "{gpqa}",
            "--contamination-similarity",
            "0.9",
        ],
        [
            "--decontaminate-against",
            "{mmlu}",
            "--decontaminate-against",
            "{gpqa}",
            "--contamination-ngram",
            "8",
        ],
        [],  # no decontamination at all
    ],
)
def test_another_benchmark_set_or_threshold_is_another_preparation(cli, tmp_path, setup, change):
    data, bench = setup
    out = tmp_path / "out"
    _prepare(
        cli, data, out, "--decontaminate-against", bench["mmlu"], "--decontaminate-against", bench["gpqa"]
    )
    args = [a.format(**{k: str(v) for k, v in bench.items()}) for a in change]
    code, doc = _prepare(cli, data, out, *args)
    assert code == 1 and doc["error"]["reason"] == "stale_decontamination"
    assert "--overwrite" in doc["error"]["hint"]


def test_edited_benchmark_bytes_make_the_preparation_stale(cli, tmp_path, setup):
    data, bench = setup
    out = tmp_path / "out"
    _prepare(cli, data, out, "--decontaminate-against", bench["mmlu"])
    with open(bench["mmlu"], "a") as fh:
        fh.write(
            json.dumps({"question": "One more question about cells?", "choices": ["a", "b"], "answer": 0})
            + "\n"
        )
    code, doc = _prepare(cli, data, out, "--decontaminate-against", bench["mmlu"])
    assert code == 1 and doc["error"]["reason"] == "stale_decontamination"


def test_workers_give_the_same_preparation(cli, tmp_path, setup):
    data, bench = setup
    rnd = random.Random(9)
    clean = [A.row(q, rnd) for q in A.questions(42, 6000, range(0, 6), VOCAB)]
    many = write_jsonl(tmp_path / "in2" / "train.jsonl", clean[:3000] + read_jsonl(data)[20:] + clean[3000:])
    outs = []
    for w in ("1", "2"):
        out = tmp_path / f"out{w}"
        code, doc = _prepare(
            cli,
            many,
            out,
            "--decontaminate-against",
            bench["mmlu"],
            "--decontaminate-against",
            bench["gpqa"],
            "-j",
            w,
        )
        assert code == 0 and doc["counts"]["dropped"] == 5 and doc["counts"]["read"] == 6005
        outs.append([p.read_bytes() for p in sorted(out.glob("train-*"))])
    assert outs[0] == outs[1]


def test_a_benchmark_that_is_an_input_is_refused(cli, tmp_path, setup):
    data, _ = setup
    code, doc = _prepare(cli, data, tmp_path / "out", "--decontaminate-against", data)
    assert code == 2 and doc["error"]["reason"] == "bench_is_input"
    assert not (tmp_path / "out").exists()


def test_an_invalid_row_is_rejected_not_dropped(cli, tmp_path, setup):
    data, bench = setup
    rows = read_jsonl(data)
    rows[-1]["expected_answer"] = "Z"  # a planted copy that is also invalid
    bad = write_jsonl(tmp_path / "in3" / "train.jsonl", rows)
    code, doc = _prepare(
        cli,
        bad,
        tmp_path / "out",
        "--on-invalid",
        "reject",
        "--decontaminate-against",
        bench["mmlu"],
        "--decontaminate-against",
        bench["gpqa"],
    )
    assert code == 0 and doc["counts"]["rejected"] == 1 and doc["counts"]["dropped"] == 4
