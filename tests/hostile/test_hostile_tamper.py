"""Tampering with prepared and pulled directories: edited counts and split names, renamed, removed, extra and
edited files, edited contracts and locks. Expectations (which command must refuse) are data: tamper.json.
A refusal is one line with exit 1; an "up to date" or a verified directory after tampering would overstate."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from . import build
from .kit import OK, assert_clean, check, run

EXPECT = json.loads((Path(__file__).parent / "tamper.json").read_text(encoding="utf-8"))
TRAIN_SHARD = "train-00000-of-00001.jsonl"
VALIDATION_SHARD = "validation-00000-of-00001.jsonl"


class Prepared:
    """A copy of a prepared directory and its manifest, edited in place."""

    def __init__(self, d: Path):
        self.d = d
        self.m = json.loads((d / "manifest.json").read_text(encoding="utf-8"))

    def save(self) -> None:
        (self.d / "manifest.json").write_text(json.dumps(self.m, indent=2), encoding="utf-8")

    def entry(self, name: str) -> dict:
        return next(f for f in self.m["files"] if f["path"] == name)

    def rehash(self, name: str) -> None:
        """Make the manifest's entry agree with the bytes on disk (a careful tamperer)."""
        data = (self.d / name).read_bytes()
        e = self.entry(name)
        e.update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data), rows=data.count(b"\n"))


def _count(key):
    def edit(p: Prepared) -> None:
        p.m["counts"][key] += 1

    return edit


def _split_rows(p: Prepared) -> None:
    p.m["splits"]["train"]["rows"] += 1


def _rename_split_in_manifest(p: Prepared) -> None:
    p.m["splits"]["training"] = p.m["splits"].pop("train")


def _rename_split_with_shard(p: Prepared) -> None:
    """train -> test everywhere the manifest and the disk say it: only the inputs still say train."""
    new = TRAIN_SHARD.replace("train", "test")
    (p.d / TRAIN_SHARD).rename(p.d / new)
    e = p.entry(TRAIN_SHARD)
    e.update(path=new, split="test")
    p.m["splits"]["test"] = p.m["splits"].pop("train")


def _swap_splits(p: Prepared) -> None:
    a, b = p.d / TRAIN_SHARD, p.d / VALIDATION_SHARD
    a.rename(p.d / "swap")
    b.rename(a)
    (p.d / "swap").rename(b)


def _rename_shard(p: Prepared) -> None:
    (p.d / TRAIN_SHARD).rename(p.d / "train-00000-of-00002.jsonl")


def _remove(name):
    def edit(p: Prepared) -> None:
        (p.d / name).unlink()

    return edit


def _drop_last_row(p: Prepared) -> None:
    path = p.d / TRAIN_SHARD
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))


def _drop_last_row_rehash(p: Prepared) -> None:
    _drop_last_row(p)
    p.rehash(TRAIN_SHARD)


def _flip_bit(name: str, at: float):
    def edit(p: Prepared) -> None:
        b = bytearray((p.d / name).read_bytes())
        b[int(len(b) * at)] ^= 0x20
        (p.d / name).write_bytes(bytes(b))

    return edit


def _append_blank(p: Prepared) -> None:
    with open(p.d / TRAIN_SHARD, "ab") as fh:
        fh.write(b"\n")


def _edit_stamp(p: Prepared) -> None:
    path = p.d / TRAIN_SHARD
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    rows[0]["metadata"]["mcqa_prep"]["contract"] = "sha256:" + "0" * 64
    path.write_bytes(build.jsonl(rows))
    p.rehash(TRAIN_SHARD)


def _extra(name):
    def edit(p: Prepared) -> None:
        (p.d / name).write_bytes((p.d / TRAIN_SHARD).read_bytes())

    return edit


def _drop_entry(p: Prepared) -> None:
    p.m["files"] = [f for f in p.m["files"] if f["path"] != VALIDATION_SHARD]


def _list_twice(p: Prepared) -> None:
    p.m["files"].append(dict(p.entry(TRAIN_SHARD)))


def _edit_contract(with_id: bool):
    def edit(p: Prepared) -> None:
        from mcqa_prep.policy import contract_id

        p.m["contract"]["policy"]["final_answer_only"] = not p.m["contract"]["policy"]["final_answer_only"]
        if with_id:
            p.m["contract_id"] = contract_id(p.m["contract"])

    return edit


def _output_format(p: Prepared) -> None:
    p.m["settings"]["output_format"] = "parquet"


def _manifest_schema(p: Prepared) -> None:
    p.m["manifest_schema"] = "manifest.v9"


def _split_not_in_inputs(p: Prepared) -> None:
    for i in p.m["inputs"]:
        if i["split"] == "train":
            i["split"] = "other"


PREPARED_EDITS: dict[str, Callable[[Prepared], None]] = {
    "counts-read-edited": _count("read"),
    "counts-written-edited": _count("written"),
    "counts-rejected-edited": _count("rejected"),
    "split-rows-edited": _split_rows,
    "split-renamed-in-manifest": _rename_split_in_manifest,
    "split-renamed-with-its-shard": _rename_split_with_shard,
    "splits-swapped": _swap_splits,
    "shard-renamed-on-disk": _rename_shard,
    "shard-removed": _remove(TRAIN_SHARD),
    "shard-row-removed": _drop_last_row,
    "shard-row-removed-and-file-entry-updated": _drop_last_row_rehash,
    "shard-blank-line-appended": _append_blank,
    "shard-bit-flipped": _flip_bit(TRAIN_SHARD, 0.37),
    "manifest-bit-flipped-in-a-count": lambda p: p.m["counts"].update(written=p.m["counts"]["written"] ^ 2),
    "row-stamp-edited-and-hash-updated": _edit_stamp,
    "extra-data-file": _extra("extra.jsonl"),
    "extra-shard-file": _extra("train-00001-of-00002.jsonl"),
    "extra-non-data-file": lambda p: (p.d / "NOTES.txt").write_text("hello"),
    "file-entry-removed": _drop_entry,
    "file-listed-twice": _list_twice,
    "rejects-removed": _remove("rejects.jsonl"),
    "manifest-removed": _remove("manifest.json"),
    "contract-edited": _edit_contract(False),
    "contract-edited-with-its-id": _edit_contract(True),
    "output-format-edited": _output_format,
    "manifest-schema-edited": _manifest_schema,
    "split-not-among-the-inputs": _split_not_in_inputs,
}


def _lock_edit(fn):
    def edit(d: Path) -> None:
        path = d / "mcqa-prep.lock.json"
        lock = json.loads(path.read_text(encoding="utf-8"))
        fn(lock)
        path.write_text(json.dumps(lock, indent=2), encoding="utf-8")

    return edit


def _lock_entry(key, value):
    def fn(lock):
        lock["files"][0][key] = value

    return _lock_edit(fn)


DATA = "data/train-00000-of-00001.jsonl"


def _flip(d: Path) -> None:
    b = bytearray((d / DATA).read_bytes())
    b[100] ^= 1
    (d / DATA).write_bytes(bytes(b))


PULLED_EDITS: dict[str, Callable[[Path], None]] = {
    "data-byte-flipped": _flip,
    "data-removed": lambda d: (d / DATA).unlink(),
    "data-renamed": lambda d: (d / DATA).rename(d / "data" / "train-00000-of-00002.jsonl"),
    "data-truncated": lambda d: (d / DATA).write_bytes((d / DATA).read_bytes()[:-300]),
    "data-appended": lambda d: (d / DATA).write_bytes((d / DATA).read_bytes() * 2),
    "extra-data-file": lambda d: (d / "data" / "extra-00000-of-00001.jsonl").write_bytes(
        (d / DATA).read_bytes()
    ),
    "lock-hash-edited": _lock_entry("hash", "0" * 64),
    "lock-size-edited": _lock_entry("size", 1),
    "lock-path-escapes": _lock_entry("path", "../outside.jsonl"),
    "lock-path-absolute": _lock_entry("path", "/etc/hostname"),
    "lock-file-listed-twice": _lock_edit(lambda lock: lock["files"].append(dict(lock["files"][0]))),
    "lock-commit-edited": _lock_edit(lambda lock: lock.update(commit="b" * 40)),
    "lock-removed": lambda d: (d / "mcqa-prep.lock.json").unlink(),
}

COVERS = {
    "verify": len(PREPARED_EDITS),
    "prepare": len(PREPARED_EDITS) + len(PULLED_EDITS),
    "validate": len(PREPARED_EDITS) + len(PULLED_EDITS),
    "rescore": len(PREPARED_EDITS),
    "pull": len(PULLED_EDITS),
    "convert": len(PULLED_EDITS),
}


def test_expectations_and_edits_agree():
    assert set(EXPECT["prepared"]) == set(PREPARED_EDITS)
    assert set(EXPECT["pulled"]) == set(PULLED_EDITS)


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tamper-base")
    arc = {DATA: build.jsonl(build.arc_rows(12))}
    return {
        "prepared": build.prepared(tmp),
        "pulled": build.pulled(tmp),
        "pulled-arc": build.pulled(tmp / "arc", arc),  # what convert reads: a layout it knows
    }


@pytest.mark.parametrize("name", sorted(PREPARED_EDITS))
def test_prepared(originals, tmp_path, name):
    p = Prepared(shutil.copytree(originals["prepared"], tmp_path / "prepared"))
    PREPARED_EDITS[name](p)
    if (p.d / "manifest.json").exists() and name != "manifest-removed":
        p.save()
    want = EXPECT["prepared"][name]
    verified = check(run(["verify", p.d, "--format", "json"]), want["verify"])
    if verified["ok"]:
        assert verified["rows"] == 12
    before = {q.name: q.read_bytes() for q in p.d.iterdir()}
    again = run(["prepare", build.TRAIN, build.VALIDATION, "-o", p.d, "--format", "json", "-q"])
    doc = check(again, want["prepare_again"])
    if doc["ok"]:
        assert doc["status"] == "up_to_date"
    assert {q.name: q.read_bytes() for q in p.d.iterdir()} == before, "a refused directory was changed"
    check(run(["validate", p.d, "--format", "json"]), want["validate"])
    out = tmp_path / "r.jsonl"
    joined = check(
        run(["rescore", build.ROLLOUTS, "--rows", p.d, "-o", out, "--format", "json"]), want["rescore_rows"]
    )
    assert out.exists() is joined["ok"]
    assert_clean(tmp_path)


@pytest.mark.parametrize("name", sorted(PULLED_EDITS))
def test_pulled(originals, tmp_path, name):
    d = shutil.copytree(originals["pulled"], tmp_path / "pulled")
    (tmp_path / "outside.jsonl").write_bytes(build.TRAIN.read_bytes())
    PULLED_EDITS[name](d)
    want = EXPECT["pulled"][name]
    check(run(["pull", "--to", d, "--offline", "--format", "json"]), want["pull"])
    doc = check(run(["validate", d, "--format", "json"]), want["validate"])
    if doc["ok"] and (d / "mcqa-prep.lock.json").exists():
        assert doc["summary"]["rows_read"] == 12  # the locked files, nothing else
    prepared = check(run(["prepare", d, "-o", tmp_path / "p", "--format", "json", "-q"]), want["prepare"])
    assert (tmp_path / "p").exists() is prepared["ok"]
    arc = shutil.copytree(originals["pulled-arc"], tmp_path / "pulled-arc")
    PULLED_EDITS[name](arc)
    out = tmp_path / "c.jsonl"
    converted = check(run(["convert", arc, "-o", out, "--format", "json", "-q"]), want["convert"])
    assert out.exists() is converted["ok"]
    assert_clean(tmp_path)
    if want["pull"] == OK and name != "lock-removed":
        assert (d / "mcqa-prep.lock.json").exists()
