"""End to end: pull from a loopback fake hub -> validate -> prepare -> verify -> load_prepared -> rescore.

Covers the seams between workflows: pulled directories are verified against their lock before their rows
are read, and the lock (repo, commit, file hashes) is recorded as input provenance."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fakehub import FakeHub, nemotron_like_repo
from test_pull import REPO, _env

from mcqa_prep.grader.letters import allowed_letters


def run_cli(tmp: Path, endpoint: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcqa_prep", *map(str, args)],
        cwd=tmp,
        env=_env(endpoint, tmp),
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.fixture(scope="module")
def pulled(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pipeline")
    with FakeHub() as h:
        h.repos[REPO] = nemotron_like_repo()[0]
        proc = run_cli(tmp, h.url, "pull", REPO, "--to", "d")
        assert proc.returncode == 0, proc.stderr
        endpoint = h.url
    return tmp, endpoint, tmp / "d"


def test_pulled_dir_validates_prepares_and_records_the_lock(pulled):
    tmp, endpoint, d = pulled
    lock = json.loads((d / "mcqa-prep.lock.json").read_text())

    v = run_cli(tmp, endpoint, "validate", d, "--format", "json")
    assert v.returncode in (0, 1), v.stderr
    report = json.loads(v.stdout)
    assert report["summary"]["rows_read"] == sum(f.get("rows") or 0 for f in lock["files"])

    p = run_cli(tmp, endpoint, "prepare", d, "-o", tmp / "prepared", "--on-invalid", "reject")
    assert p.returncode == 0, p.stderr
    manifest = json.loads((tmp / "prepared" / "manifest.json").read_text())
    (inp,) = manifest["inputs"]
    assert inp["repo"] == REPO and inp["commit"] == lock["commit"]
    assert {f["hash"] for f in inp["files"]} == {f["hash"] for f in lock["files"]}

    first = json.loads((tmp / "prepared" / "train-00000-of-00001.jsonl").read_text().splitlines()[0])
    src = first["metadata"]["mcqa_prep"]["source"]
    assert src["repo"] == REPO and src["commit"] == lock["commit"] and src["path"].startswith("data/train")
    # Parquet null-filled options come out normalised: single-key dicts, no nulls
    assert all(len(o) == 1 and None not in o.values() for o in first["options"])
    assert list(allowed_letters(first["options"])) == [next(iter(o)) for o in first["options"]]

    from mcqa_prep import load_prepared

    ds = load_prepared(tmp / "prepared")
    assert set(ds) == {s for s in manifest["splits"]}
    assert sum(len(x) for x in ds.values()) == manifest["counts"]["written"]


def test_corrupted_pulled_file_is_refused_before_any_row_is_read(pulled, tmp_path):
    import shutil

    tmp, endpoint, d = pulled
    copy = tmp_path / "d"
    shutil.copytree(d, copy)
    victim = sorted((copy / "data").glob("train-*.parquet"))[0]
    victim.write_bytes(victim.read_bytes()[:-10] + b"0123456789")
    for args in (("validate", copy), ("prepare", copy, "-o", tmp_path / "out")):
        proc = run_cli(tmp_path, endpoint, *args)
        assert proc.returncode == 1, (args, proc.stderr)
        assert victim.name in proc.stderr and "--force-download" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_prepare_no_verify_records_the_files_own_hashes_not_the_commit(pulled, tmp_path):
    import hashlib
    import shutil

    tmp, endpoint, d = pulled
    copy = tmp_path / "d"
    shutil.copytree(d, copy)
    proc = run_cli(
        tmp_path, endpoint, "prepare", copy, "-o", tmp_path / "out", "--no-verify", "--on-invalid", "reject"
    )
    assert proc.returncode == 0, proc.stderr
    assert "--no-verify" in proc.stderr and "warning" in proc.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert {i["kind"] for i in manifest["inputs"]} == {"file"}
    for i in manifest["inputs"]:
        assert i["sha256"] == hashlib.sha256(Path(i["path"]).read_bytes()).hexdigest()
        assert i["name"].startswith("data/")
    first = json.loads(next((tmp_path / "out").glob("train-*.jsonl")).read_text().splitlines()[0])
    assert "commit" not in first["metadata"]["mcqa_prep"]["source"]


def test_load_prepared_embedded_sample_with_string_and_list_output_regex(tmp_path):
    """The sample's train split mixes string and list output_regex (both valid for NeMo Gym)."""
    from click.testing import CliRunner

    from mcqa_prep import load_prepared
    from mcqa_prep.cli import main
    from mcqa_prep.grader.letters import allowed_letters

    sample = Path(__file__).resolve().parents[1] / "data" / "sample"
    res = CliRunner().invoke(main, ["prepare", str(sample / "train.jsonl"), "-o", str(tmp_path / "p")])
    assert res.exit_code == 0, res.output
    shard = next((tmp_path / "p").glob("train-*.jsonl"))
    before = shard.read_bytes()
    train = load_prepared(tmp_path / "p", split="train", cache_dir=tmp_path / "cache")
    assert len(train) == 8
    rows = [json.loads(x) for x in before.decode().splitlines()]
    for loaded, raw in zip(train, rows, strict=True):
        tm = raw.get("template_metadata")
        if tm is None:
            assert loaded["template_metadata"] is None
        else:
            want = tm["output_regex"] if isinstance(tm["output_regex"], list) else [tm["output_regex"]]
            assert loaded["template_metadata"]["output_regex"] == want
        assert allowed_letters(loaded["options"]) == allowed_letters(raw["options"])
        assert loaded["metadata"]["mcqa_prep"] == raw["metadata"]["mcqa_prep"]
    assert shard.read_bytes() == before  # the verified shards are never rewritten
