"""verify and load_prepared: the same checks, typed errors, datasets output."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from prep_helpers import make_row, write_rows

from mcqa_prep.errors import ContractMismatch, IncompletePreparation, IntegrityError
from mcqa_prep.policy import GradingPolicy
from mcqa_prep.prepare.run import prepare
from mcqa_prep.prepared import load_prepared, verify_prepared


@pytest.fixture
def prepared(tmp_path):
    # 4- and 10-option rows mixed, and shards holding only one kind, so Arrow must unify across files
    rows = [make_row(i, 4) for i in range(6)] + [make_row(i, 10, template=True) for i in range(6, 12)]
    rows.append(
        make_row(12, 2, extra={"options": [{"Q": "q text"}, {"Z": "z text"}], "expected_answer": "z"})
    )
    src = write_rows(tmp_path / "train.jsonl", rows)
    write_rows(tmp_path / "validation.jsonl", [make_row(i, 10) for i in range(50, 53)])
    out = tmp_path / "prepared"
    prepare([src, tmp_path / "validation.jsonl"], out, shard_rows=6)
    return out


def _shard(out, name="train-00000-of-00003.jsonl"):
    return out / name


def _rewrite_manifest_hashes(out):
    """Re-record every file's hash (a forger's move) so that only the per-row stamp check can notice."""
    m = json.loads((out / "manifest.json").read_text())
    for f in m["files"]:
        data = (out / f["path"]).read_bytes()
        f["sha256"], f["bytes"] = hashlib.sha256(data).hexdigest(), len(data)
    (out / "manifest.json").write_text(json.dumps(m))


def test_verify_ok_cli(prepared, cli):
    r = cli("verify", prepared)
    assert r.exit_code == 0, r.output
    assert "ok (5 files, 16 rows; train: 13, validation: 3)" in r.output
    doc = json.loads(cli("verify", prepared, "--format", "json").output)
    assert doc["status"] == "ok" and doc["contract_id"] == GradingPolicy().contract_id()


def test_tampered_shard_refused(prepared, cli):
    shard = _shard(prepared)
    before = shard.read_bytes()
    data = before.replace(b'"expected_answer":"A"', b'"expected_answer":"B"', 1)
    assert data != before and len(data) == len(before)
    shard.write_bytes(data)
    with pytest.raises(IntegrityError, match="sha256 is .* but the manifest records"):
        verify_prepared(prepared)
    with pytest.raises(IntegrityError):
        load_prepared(prepared)
    r = cli("verify", prepared)
    assert r.exit_code == 1 and str(shard) in r.output


def test_truncated_or_missing_shard_refused(prepared):
    shard = _shard(prepared)
    shard.write_bytes(shard.read_bytes()[:-10])
    with pytest.raises(IntegrityError, match="bytes, the manifest records"):
        verify_prepared(prepared)
    shard.unlink()
    with pytest.raises(IntegrityError, match="missing"):
        load_prepared(prepared)


def test_unlisted_data_file_refused(prepared):
    (prepared / "train-00009-of-00010.jsonl").write_text("{}\n")
    with pytest.raises(IntegrityError, match="not in the manifest"):
        verify_prepared(prepared)


def test_row_stamped_with_other_contract_refused(prepared):
    shard = _shard(prepared)
    other = GradingPolicy(zero_truncated=True).contract_id()
    lines = shard.read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace(GradingPolicy().contract_id(), other)
    shard.write_text("".join(lines))
    _rewrite_manifest_hashes(prepared)
    with pytest.raises(
        IntegrityError, match=rf"{shard}:3: \$\.metadata\.mcqa_prep\.contract: row stamped \"{other}\""
    ):
        verify_prepared(prepared)
    with pytest.raises(IntegrityError):
        load_prepared(prepared)


def test_unstamped_row_refused(prepared):
    shard = _shard(prepared)
    lines = shard.read_text().splitlines(keepends=True)
    lines[0] = json.dumps(make_row(0)) + "\n"
    shard.write_text("".join(lines))
    _rewrite_manifest_hashes(prepared)
    with pytest.raises(IntegrityError, match=":1: .*row stamped null"):
        verify_prepared(prepared)


def test_policy_mismatch(prepared, cli):
    verify_prepared(prepared, GradingPolicy())
    with pytest.raises(ContractMismatch) as ei:
        verify_prepared(prepared, GradingPolicy(final_answer_only=True))
    assert "policy.final_answer_only" in ei.value.fields
    assert ei.value.found == GradingPolicy().contract_id()
    r = cli("verify", prepared, "--final-answer-only")
    assert r.exit_code == 1
    assert (
        GradingPolicy().contract_id() in r.output
        and GradingPolicy(final_answer_only=True).contract_id() in r.output
    )
    with pytest.raises(ContractMismatch):
        load_prepared(prepared, GradingPolicy(prompt_thinking="open"))


def test_other_policy_preparation_is_valid_for_this_grader(tmp_path):
    src = write_rows(tmp_path / "train.jsonl", [make_row(0)])
    out = tmp_path / "out"
    policy = GradingPolicy(zero_truncated=True)
    prepare([src], out, policy)
    verify_prepared(out)  # no policy: only the installation's versions are compared
    verify_prepared(out, policy)


def test_other_grader_version_refused(prepared, monkeypatch, cli):
    import mcqa_prep.policy as policy_mod

    installed = policy_mod.GRADER_VERSION  # the version that prepared the directory
    monkeypatch.setattr(policy_mod, "GRADER_VERSION", "2.0.0")
    with pytest.raises(
        ContractMismatch,
        match=f"prepared by grader version {re.escape(installed)} .* this is grader version 2.0.0",
    ):
        verify_prepared(prepared)
    r = cli("verify", prepared)
    assert (
        r.exit_code == 1 and f"grader version {installed}" in r.output and "grader version 2.0.0" in r.output
    )
    with pytest.raises(ContractMismatch):
        load_prepared(prepared)


def test_incomplete_directory(tmp_path, prepared):
    (prepared / "manifest.json").unlink()
    with pytest.raises(IncompletePreparation):
        verify_prepared(prepared)
    with pytest.raises(IncompletePreparation):
        load_prepared(prepared)


def test_edited_manifest_contract_refused(prepared):
    m = json.loads((prepared / "manifest.json").read_text())
    m["contract"]["policy"]["zero_truncated"] = True
    (prepared / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(IntegrityError, match="contract_id does not match"):
        verify_prepared(prepared)


def test_load_prepared_mixed_letters(prepared, tmp_path):
    import datasets

    dd = load_prepared(prepared, cache_dir=tmp_path / "cache")
    assert isinstance(dd, datasets.DatasetDict)
    assert set(dd) == {"train", "validation"}
    train = dd["train"]
    assert train.num_rows == 13
    from mcqa_prep.grader.letters import allowed_letters

    assert list(allowed_letters(train[0]["options"])) == list("ABCD")
    assert list(allowed_letters(train[6]["options"])) == list("ABCDEFGHIJ")
    assert allowed_letters(train[12]["options"]) == {"Q": "q text", "Z": "z text"}
    assert train[12]["expected_answer"] == "Z"
    assert train[0]["metadata"]["mcqa_prep"]["contract"] == GradingPolicy().contract_id()
    ds = load_prepared(prepared, split="validation", cache_dir=tmp_path / "cache")
    assert isinstance(ds, datasets.Dataset) and ds.num_rows == 3


def test_load_prepared_parquet(tmp_path):
    rows = [make_row(i, 4) for i in range(5)] + [make_row(i, 10) for i in range(5, 10)]
    src = write_rows(tmp_path / "train.jsonl", rows)
    out = tmp_path / "pq"
    prepare([src], out, output_format="parquet", shard_rows=5)
    ds = load_prepared(out, split="train", cache_dir=tmp_path / "cache")
    from mcqa_prep.grader.letters import allowed_letters

    assert [len(allowed_letters(r["options"])) for r in ds] == [4] * 5 + [10] * 5


def test_lazy_top_level_export(prepared, tmp_path):
    import mcqa_prep

    assert mcqa_prep.load_prepared(prepared, split="train", cache_dir=tmp_path / "c").num_rows == 13


def test_a_split_renamed_everywhere_but_in_the_inputs_is_refused(prepared):
    """validation -> test in the manifest and on disk, consistently: only the inputs still say validation,
    and a split no input is of cannot hold rows (found by tests/hostile)."""
    m = json.loads((prepared / "manifest.json").read_text())
    for f in m["files"]:
        if f["split"] == "validation":
            new = f["path"].replace("validation", "test")
            (prepared / f["path"]).rename(prepared / new)
            f.update(path=new, split="test")
    m["splits"]["test"] = m["splits"].pop("validation")
    (prepared / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(IntegrityError, match=r"\['test'\] hold rows, but no input is of that split"):
        verify_prepared(prepared)


def test_manifest_is_read_once_typed_and_keeps_its_bytes(prepared, tmp_path, monkeypatch):
    """The manifest is read once per call (load_prepared read it twice: once to check, once to hash), it
    keeps the exact bytes it was read from and their sha256 (the load cache's key), finds the shards of a
    split itself, and hands out copies: a reader cannot change what the next reader sees."""
    from mcqa_prep.prepared import manifest as mf

    raw = (prepared / "manifest.json").read_bytes()
    reads = []
    real = mf.document_bytes

    def counted(path):
        reads.append(path)
        return real(path)

    monkeypatch.setattr(mf, "document_bytes", counted)
    load_prepared(prepared, split="validation", cache_dir=tmp_path / "cache")
    assert len(reads) == 1
    (entry,) = [p.name for p in (tmp_path / "cache" / "load-v1").iterdir()]
    m = mf.read(prepared)
    assert m.raw == raw and m.sha256 == hashlib.sha256(raw).hexdigest() == entry
    assert [f.name for f in m.shards("train")] == [f"train-0000{i}-of-00003.jsonl" for i in range(3)]
    assert [f.name for f in m.shards("validation")] == ["validation-00000-of-00001.jsonl"]
    assert m.shards("test") == () and m.split_names == ("train", "validation")
    assert [f.kind for f in m.files] == ["shard"] * 4 + ["rejects"]
    assert [f.to_dict() for f in m.files] == json.loads(raw)["files"]
    m.contract["policy"]["final_answer_only"] = True
    m.settings["shard_rows"] = 1
    m.to_dict()["splits"].clear()
    assert m.contract == json.loads(raw)["contract"] and m.settings == json.loads(raw)["settings"]
    assert m.to_dict() == json.loads(raw)
    with pytest.raises(AttributeError):
        m.sha256 = "0" * 64  # type: ignore[misc]
