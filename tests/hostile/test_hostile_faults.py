"""Filesystem faults through every command that writes: a read-only mount, a tiny filesystem that fills up
mid-run, and injected ENOSPC/EIO/EACCES/EROFS failures of a write, an open, an fsync or a rename. Each must
end in one line with exit 1, no output that looks complete, and no temporary file or staging directory
left behind; commands that only read must not care that the filesystem is read-only."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter

import pytest

from . import build, faults
from .kit import FAILURE, OK, assert_clean, check, run


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Inputs big enough that their outputs overflow a tiny filesystem (~100 KiB each)."""
    tmp = tmp_path_factory.mktemp("fault-inputs")
    rows = [build.mcqa_row(i) for i in range(200)]
    requests = [
        build.rollout(r, f"The answer is \\boxed{{{'ABCD'[i % 4]}}}.", 1.0) for i, r in enumerate(rows)
    ]
    rescored = tmp / "rescored.jsonl"
    src = build.write(tmp / "requests.jsonl", build.jsonl(requests))
    check(run(["rescore", src, "-o", rescored, "-q"]), OK)
    check(run(["passrates", rescored, "-o", tmp / "t.jsonl", "--model", "m", "-q"]), OK)
    return {
        "rows": build.write(tmp / "train.jsonl", build.jsonl(rows)),
        "requests": src,
        "rescored": rescored,
        "table": tmp / "t.jsonl",
        "arc": build.write(tmp / "arc_test.jsonl", build.jsonl(build.arc_rows(300) + [_duplicate_choices()])),
    }


def _duplicate_choices():
    """A source row convert rejects: its rejects file is an output too."""
    row = build.arc_rows(1)[0]
    row["choices"]["text"][1] = row["choices"]["text"][0]
    return {**row, "id": "dup"}


def writers(inputs, out_dir):
    """Each writing command, with its output under out_dir: name -> (args, outputs that must not appear)."""
    return {
        "prepare": (["prepare", inputs["rows"], "-o", out_dir / "p"], [out_dir / "p"]),
        "prepare-parquet": (
            ["prepare", inputs["rows"], "-o", out_dir / "pq", "--output-format", "parquet"],
            [out_dir / "pq"],
        ),
        "rescore": (["rescore", inputs["requests"], "-o", out_dir / "r.jsonl"], [out_dir / "r.jsonl"]),
        "convert-file": (
            ["convert", inputs["arc"], "-o", out_dir / "c.jsonl"],
            [out_dir / "c.jsonl", out_dir / "c.rejects.jsonl"],
        ),
        "convert-dir": (["convert", inputs["arc"], "-o", out_dir / "cdir"], [out_dir / "cdir"]),
        "passrates": (
            ["passrates", inputs["rescored"], "-o", out_dir / "t.jsonl", "--model", "m"],
            [out_dir / "t.jsonl"],
        ),
        "report": (
            ["report", inputs["rows"], inputs["rescored"], "-o", out_dir / "r.html"],
            [out_dir / "r.html"],
        ),
        "curriculum": (
            [
                "curriculum",
                inputs["table"],
                "--rows",
                inputs["rows"],
                "-o",
                out_dir / "s.jsonl",
                "--rows-out",
                out_dir / "rows.jsonl",
            ],  # fmt: skip
            [out_dir / "s.jsonl", out_dir / "rows.jsonl"],
        ),
    }


WRITERS = [
    "prepare",
    "prepare-parquet",
    "rescore",
    "convert-file",
    "convert-dir",
    "passrates",
    "report",
    "curriculum",
]


def _command(writer: str) -> str:
    return writer.split("-")[0]


def _refused(args, outputs, where):
    doc = check(run([*args, "--format", "json", "-q"]), FAILURE)
    assert doc["error"]["reason"].startswith("output_"), doc["error"]
    for p in outputs:
        assert not p.exists(), f"{p} exists after a failed write"
    assert_clean(where)
    return doc


# every fault for every writer; the Parquet shard path of prepare once (it shares the rest)
INJECTED = [
    (w, f) for w in WRITERS for f in faults.FAULTS if w != "prepare-parquet" or f == "write-later:eio"
]
# injected faults; a full disk, a read-only output and a dead writer's leftovers for each writer; convert's
# last output failing; the read-only filesystem read by every reading command
COVERS = Counter(_command(w) for w, _ in INJECTED) + Counter(_command(w) for w in WRITERS * 3)
COVERS += Counter({"convert": 2, **dict.fromkeys(["pull", "verify", "validate", "summarize"], 1)})
COVERS += Counter(["prepare", "rescore", "passrates"]) + Counter(["prepare", "passrates"])


@pytest.mark.parametrize("writer, fault", INJECTED)
def test_injected_fault(inputs, tmp_path, monkeypatch, writer, fault):
    args, outputs = writers(inputs, tmp_path)[writer]
    with monkeypatch.context() as m:
        faults.inject(m, fault)
        _refused(args, outputs, tmp_path)
    check(run([*args, "-q"]), OK)  # the fault gone, the same command succeeds: nothing stale is in the way
    assert_clean(tmp_path)


@pytest.mark.parametrize("writer", WRITERS)
def test_disk_fills_up_mid_run(inputs, tmp_path, monkeypatch, writer):
    # room for the largest output (rescore's, 247 kB) and a run's own records beside it (a few pages)
    with faults.tmpfs(tmp_path / "fs", "320k") as fs:
        out_dir = fs if fs is not None else tmp_path / "fs"
        args, outputs = writers(inputs, out_dir)[writer]
        if fs is not None:
            faults.fill(fs, leave=12 << 10)
            _refused(args, outputs, fs)
            (fs / ".filler").unlink()
            check(run([*args, "-q"]), OK)
        else:  # mounting refused here: the same failure from a patched writer
            with monkeypatch.context() as m:
                faults.inject(m, "write-later:enospc")
                _refused(args, outputs, out_dir)


@pytest.fixture(scope="module")
def read_only(tmp_path_factory):
    """A read-only filesystem holding a prepared directory, a pulled directory and a rescored file."""
    tmp = tmp_path_factory.mktemp("ro")
    src = {"prepared": build.prepared(tmp / "src"), "pulled": build.pulled(tmp / "src")}
    with faults.tmpfs(tmp / "ro", "4m") as fs:
        if fs is None:
            yield None
            return
        for name, d in src.items():
            shutil.copytree(d, fs / name)
        shutil.copyfile(build.rescored(tmp), fs / "rescored.jsonl")
        if not faults.remount_read_only(fs):
            yield None
            return
        yield fs


@pytest.mark.parametrize("writer", WRITERS)
def test_read_only_output(inputs, read_only, tmp_path, monkeypatch, writer):
    if read_only is None:
        with monkeypatch.context() as m:
            faults.inject(m, "create:erofs")
            args, outputs = writers(inputs, tmp_path)[writer]
            _refused(args, outputs, tmp_path)
        return
    args, outputs = writers(inputs, read_only)[writer]
    doc = _refused(args, outputs, read_only)
    assert doc["error"]["reason"] == "output_read_only"


def test_reading_from_a_read_only_filesystem(read_only, tmp_path):
    if read_only is None:
        pytest.skip("mounting is refused here; reading needs no write access anyway")
    check(run(["pull", "--to", read_only / "pulled", "--offline", "--format", "json"]), OK)
    check(run(["verify", read_only / "prepared", "--format", "json"]), OK)
    check(run(["validate", read_only / "pulled", "--format", "json"]), OK)
    again = check(
        run(["prepare", build.TRAIN, build.VALIDATION, "-o", read_only / "prepared", "--format", "json"]), OK
    )
    assert again["status"] == "up_to_date"
    out = tmp_path / "r.jsonl"
    check(
        run(["rescore", build.ROLLOUTS, "--rows", read_only / "prepared", "-o", out, "--format", "json"]), OK
    )
    check(run(["summarize", read_only / "rescored.jsonl", "--format", "json"]), OK)
    check(
        run(["passrates", read_only / "rescored.jsonl", "-o", tmp_path / "t.jsonl", "--format", "json"]), OK
    )


DIRECTORY_WRITERS = {"prepare", "prepare-parquet", "convert-dir"}


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.parametrize("writer", WRITERS)
def test_a_dead_writers_leftovers_are_removed_by_the_next_run(inputs, tmp_path, writer):
    """What a SIGKILLed run leaves beside its output (a temporary file, a staging directory) is removed by the
    next run of the same command, whatever its pid was."""
    args, outputs = writers(inputs, tmp_path)[writer]
    pid = _dead_pid()
    out = outputs[0]
    if writer in DIRECTORY_WRITERS:
        for kind in ("staging", "old"):
            d = tmp_path / f".{out.name}.{kind}-{pid}-deadbeef"
            d.mkdir()
            (d / "train-00000-of-00001.jsonl").write_bytes(b"partial")
    else:
        (tmp_path / f".{out.name}.{pid}-deadbeef.tmp").write_bytes(b"partial")
    check(run([*args, "-q"]), OK)
    assert_clean(tmp_path)


@pytest.mark.parametrize("writer", ["convert-file", "convert-dir"])
def test_an_output_that_fails_last_takes_its_rejects_file_with_it(inputs, tmp_path, monkeypatch, writer):
    """convert writes two outputs (rows, rejects); when the second cannot be put in place, the first must not
    stay behind looking complete."""
    args, outputs = writers(inputs, tmp_path)[writer]
    real = os.replace

    def replace(a, b, **kw):
        if os.path.basename(b) in (outputs[0].name, "c.jsonl"):
            raise OSError(28, os.strerror(28), str(b))
        return real(a, b, **kw)

    with monkeypatch.context() as m:
        m.setattr(os, "replace", replace)
        m.setattr(os, "rename", replace)
        _refused(args, [*outputs, tmp_path / "c.rejects.jsonl", tmp_path / "cdir.rejects.jsonl"], tmp_path)


@pytest.mark.parametrize("command", ["prepare", "passrates"])
def test_an_input_written_to_while_it_is_read(inputs, tmp_path, monkeypatch, command):
    """prepare and passrates record each input's hash, then read its rows: a concurrent writer in between
    must not leave an output that records one hash for other rows."""
    import importlib

    module = importlib.import_module(
        {"prepare": "mcqa_prep.prepare.run", "passrates": "mcqa_prep.passrates.reading"}[command]
    )
    src = tmp_path / "in" / ("train.jsonl" if command == "prepare" else "rescored.jsonl")
    src.parent.mkdir()
    shutil.copyfile(inputs["rows"] if command == "prepare" else inputs["rescored"], src)
    real = module.sha256_file

    def hash_then_append(path, *a, **kw):
        out = real(path, *a, **kw)
        with open(path, "ab") as fh:  # the concurrent writer
            fh.write(src.read_bytes().splitlines(keepends=True)[0])
        return out

    monkeypatch.setattr(module, "sha256_file", hash_then_append)
    out = tmp_path / "out" / ("p" if command == "prepare" else "t.jsonl")
    extra = ["--model", "m"] if command == "passrates" else []
    doc = check(run([command, src, "-o", out, "--format", "json", "-q", *extra]), FAILURE)
    assert doc["error"]["reason"] == "input_changed"
    assert not out.exists()
    assert_clean(tmp_path / "out")
