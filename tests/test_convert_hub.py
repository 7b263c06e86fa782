"""convert from the hub (the `datasets` library against the loopback fake hub of tests/fakehub.py, through
HF_ENDPOINT) and from a directory written by `mcqa-prep pull` from the same fake hub. Both record the
commit, and give the same uuids for the same rows. No test reaches the internet.

The CLI runs in a subprocess: huggingface_hub reads HF_ENDPOINT once, at import."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

try:
    from .convert_layouts import bank, mmlu, option_text, read_jsonl
    from .fakehub import FakeHub, FakeRepo
except ImportError:
    from convert_layouts import bank, mmlu, option_text, read_jsonl
    from fakehub import FakeHub, FakeRepo

ROOT = Path(__file__).resolve().parents[1]
REPO = "acme/mmlu-mini"
README = b"""---
license: mit
configs:
- config_name: default
  data_files:
  - split: test
    path: data/test-*
  - split: validation
    path: data/validation-*
---
# mini MMLU served by tests/fakehub.py
"""


def _parquet(rows) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    return buf.getvalue()


@pytest.fixture(scope="module")
def hub():
    test_cases = bank(30, 4, seed=1)
    val_cases = bank(8, 4, seed=2)
    repo = FakeRepo()
    commit = repo.add_commit(
        "v1",
        {
            "README.md": README,
            "data/test-00000-of-00002.parquet": _parquet(mmlu(test_cases[:18])),
            "data/test-00001-of-00002.parquet": _parquet(mmlu(test_cases[18:])),
            "data/validation-00000-of-00001.parquet": _parquet(mmlu(val_cases)),
        },
    )
    h = FakeHub(page_size=100)
    h.repos[REPO] = repo
    h.start()
    h.commit = commit
    h.cases = {"test": test_cases, "validation": val_cases}
    yield h
    h.stop()


def run(hub, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(
        HF_ENDPOINT=hub.url,
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HOME=str(tmp / "hf-home"),
        HF_DATASETS_CACHE=str(tmp / "hf-datasets"),
        HF_HUB_ETAG_TIMEOUT="5",
        PYTHONPATH=str(ROOT),
    )
    return subprocess.run(
        [sys.executable, "-m", "mcqa_prep", *args],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _check(rows, cases, commit):
    for r in rows:
        src = r["metadata"]["source"]
        assert src["dataset"] == REPO and src["commit"] == commit
        case = cases[src["split"]][src["row"]]
        assert option_text(r, r["expected_answer"]) == case.gold_text


def test_hub_and_pulled_directory_agree(hub, tmp_path):
    # from the hub, one split, at a branch name: the commit it resolved to is recorded
    out = tmp_path / "hub.jsonl"
    p = run(
        hub, tmp_path, "convert", REPO, "--revision", "main", "--split", "test", "-o", str(out), "--shuffle"
    )
    assert p.returncode == 0, p.stderr
    hub_rows = read_jsonl(out)
    assert len(hub_rows) == 30
    _check(hub_rows, hub.cases, hub.commit)
    assert {r["metadata"]["source"]["revision"] for r in hub_rows} == {"main"}
    assert [r["metadata"]["source"]["row"] for r in hub_rows] == list(range(30))

    # the same dataset pulled, then converted offline: same rows, same ids, same order
    p = run(hub, tmp_path, "pull", REPO, "--revision", "main", "--to", "mini")
    assert p.returncode == 0, p.stderr
    out2 = tmp_path / "pulled"
    p = run(hub, tmp_path, "convert", "mini", "-o", str(out2), "--shuffle", "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert {f["split"]: f["rows"] for f in doc["output_files"]} == {"test": 30, "validation": 8}
    pulled_test = read_jsonl(out2 / "test.jsonl")
    _check(pulled_test, hub.cases, hub.commit)
    _check(read_jsonl(out2 / "validation.jsonl"), hub.cases, hub.commit)
    # rows are numbered across the split's shards, as the datasets library numbers them
    assert [r["uuid"] for r in pulled_test] == [r["uuid"] for r in hub_rows]
    assert [r["options"] for r in pulled_test] == [r["options"] for r in hub_rows]


def test_hub_errors_are_usage_errors(hub, tmp_path):
    p = run(hub, tmp_path, "convert", "acme/nope", "--revision", "main", "-o", "x.jsonl")
    assert p.returncode == 2, p.stderr
    assert "acme/nope@main: not found" in p.stderr
    p = run(hub, tmp_path, "convert", REPO, "--split", "train", "-o", "x.jsonl")
    assert p.returncode == 2, p.stderr
    assert "no split 'train'" in p.stderr and "test, validation" in p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_pulled_directory_is_verified_first(hub, tmp_path):
    p = run(hub, tmp_path, "pull", REPO, "--revision", "main", "--to", "mini")
    assert p.returncode == 0, p.stderr
    shard = tmp_path / "mini" / "data" / "validation-00000-of-00001.parquet"
    original = shard.read_bytes()
    shard.write_bytes(original + b"tampered")
    p = run(hub, tmp_path, "convert", "mini", "-o", "out.jsonl")
    assert p.returncode == 1 and "the file changed after the pull" in p.stderr, p.stderr
    assert not (tmp_path / "out.jsonl").exists()
    # --no-verify skips the check, as in validate, prepare and report, and says so (convert was silent)
    shard.write_bytes(original)
    p = run(hub, tmp_path, "convert", "mini", "-o", "out.jsonl", "--no-verify")
    assert p.returncode == 0, p.stderr
    assert "warning: mini: --no-verify: the files were not checked against mcqa-prep.lock.json" in p.stderr


def test_a_pulled_shard_with_no_readable_line_is_counted(tmp_path):
    """A pulled JSONL shard none of whose lines is readable: its lines are rejects at their lines, counted
    with the split's others, and the next shard's rows keep their numbers (found by the hostile-input audit:
    such a source was left unread). From the hub, the datasets library refuses the split as a whole."""
    readme = (
        b"---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n    path: data/test-*\n---\n"
    )
    good = "".join(
        json.dumps({"question": f"Which is {i}?", "choices": [f"{i}", "x", "y", "z"], "answer": 0}) + "\n"
        for i in range(3)
    )
    repo = FakeRepo()
    repo.add_commit(
        "v1",
        {
            "README.md": readme,
            "data/test-00000-of-00002.jsonl": b"garbage\n\xff\n[]\n",
            "data/test-00001-of-00002.jsonl": good.encode(),
        },
    )
    h = FakeHub(page_size=100)
    h.repos["acme/bad-shard"] = repo
    with h:
        p = run(h, tmp_path, "pull", "acme/bad-shard", "--revision", "main", "--to", "bad")
        assert p.returncode == 0, p.stderr
        p = run(h, tmp_path, "convert", "bad", "-o", "out.jsonl", "--preset", "mmlu", "--format", "json")
        assert p.returncode == 0, p.stderr
        doc = json.loads(p.stdout)
        assert doc["counts"] == {
            "read": 6,
            "written": 3,
            "rejected": 3,
            "rejected_by_reason": {"malformed_row": 3},
        }
        rejects = read_jsonl(tmp_path / "out.rejects.jsonl")
        assert [(r["source"]["row"], r["source"]["line"]) for r in rejects] == [(0, 1), (1, 2), (2, 3)]
        assert [r["metadata"]["source"]["row"] for r in read_jsonl(tmp_path / "out.jsonl")] == [3, 4, 5]

        p = run(
            h,
            tmp_path,
            "convert",
            "acme/bad-shard",
            "--revision",
            "main",
            "-o",
            "hub.jsonl",
            "--preset",
            "mmlu",
        )
        assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
        assert "acme/bad-shard@main: reading split 'test' failed" in p.stderr, p.stderr
        assert not (tmp_path / "hub.jsonl").exists()
