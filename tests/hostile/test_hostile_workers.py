"""The commands that take --workers, under hostile input and a dying worker: the same output for every N
(bad lines land on the same line numbers across chunk boundaries), and a worker killed by the kernel (out
of memory) is one line, exit 1, nothing written. Chunks are made small so a small input spans many."""

from __future__ import annotations

import os
import signal

import pytest

from mcqa_prep import parallel

from . import build
from .kit import FAILURE, assert_clean, check, run
from .mutate import mutated

COVERS = {"validate": 5, "prepare": 5, "rescore": 5}
HOSTILE = ["invalid-utf8-in-a-string", "crlf", "deep-100k", "nan", "non-object-lines"]


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(parallel, "JSONL_CHUNK_BYTES", 2048)


def _data(name: str) -> bytes:
    return mutated(name, build.TRAIN.read_bytes() * 3)


def _outputs(tmp_path, name, workers):
    d = tmp_path / f"w{workers}"
    src = tmp_path / "train.jsonl"
    if not src.exists():
        build.write(src, _data(name))
    w = ["--workers", str(workers)]
    v = check(run(["validate", src, "--format", "json", "--max-findings", "0", *w]), (0, 1))
    p = check(run(["prepare", src, "-o", d / "p", "--on-invalid", "reject", "--format", "json", "-q", *w]), 0)
    r = check(run(["rescore", src, "-o", d / "r.jsonl", "--format", "json", "-q", *w]), (0, 1))
    for doc in (v, p, r):
        for key in ("seconds", "input", "output", "out_dir"):
            doc.pop(key, None)
    v["summary"].pop("inputs", None)
    shards = {f.name: f.read_bytes() for f in sorted((d / "p").iterdir()) if f.name != "manifest.json"}
    return v, p, r, shards, (d / "r.jsonl").read_bytes()


@pytest.mark.parametrize("name", HOSTILE)
def test_same_output_for_every_worker_count(tmp_path, small_chunks, name):
    one, two = _outputs(tmp_path, name, 1), _outputs(tmp_path, name, 2)
    assert one[0]["findings"] == two[0]["findings"]
    assert one[1]["counts"] == two[1]["counts"]
    assert one[2:] == two[2:]


def _killer(key, chunk):
    if os.getpid() != PARENT[0]:
        os.kill(os.getpid(), signal.SIGKILL)  # what the kernel's OOM killer does to a worker
    return parallel._STATE[key](chunk)


PARENT = [0]


@pytest.mark.parametrize("command", ["validate", "prepare", "rescore"])
def test_a_killed_worker_is_one_line_and_nothing_written(tmp_path, small_chunks, monkeypatch, command):
    PARENT[0] = os.getpid()
    monkeypatch.setattr(parallel, "_call", _killer)
    src = build.write(tmp_path / "in" / "train.jsonl", build.TRAIN.read_bytes() * 4)
    out = tmp_path / "out"
    args = {
        "validate": ["validate", src],
        "prepare": ["prepare", src, "-o", out / "p"],
        "rescore": ["rescore", src, "-o", out / "r.jsonl"],
    }[command]
    res = run([*args, "--workers", "2", "--format", "json", "-q"])
    doc = check(res, FAILURE)
    assert doc["error"]["reason"] == "worker_died"
    assert len(res.stderr.strip().splitlines()) == 1
    assert not out.exists() or not any(out.iterdir())
    assert_clean(tmp_path / "in", out)
