"""Every command on the engine writes on Ray what it writes on local processes, byte for byte (one local Ray
instance for the module: 2 CPUs, no dashboard, its files in a temporary directory)."""

from __future__ import annotations

import shutil
import tempfile

import pytest
import ray  # the dev extra includes the ray extra: a missing Ray is an install error, never a skip
from engine_helpers import COMMANDS, write_inputs

from mcqa_prep import parallel


@pytest.fixture(scope="module")
def ray_session():
    temp = tempfile.mkdtemp(prefix="mcqa-ray-test-")  # short: Ray's socket paths must stay under 108 bytes
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR", _temp_dir=temp)
    yield
    ray.shutdown()
    shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return write_inputs(tmp_path_factory.mktemp("engine-ray-inputs"))


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_every_command_writes_on_ray_what_it_writes_locally(ray_session, cli, inputs, tmp_path, monkeypatch,
                                                           command):  # fmt: skip
    monkeypatch.setattr(parallel, "JSONL_CHUNK_BYTES", 8192)  # many chunks, run as many tasks
    got = []
    for engine in ("local", "ray"):
        out = tmp_path / engine
        out.mkdir()
        args = command.args(inputs, out)
        if command.name == "rescore" and engine == "ray":  # (on Ray, rescore writes a directory of shards)
            args = [*args[:-1], out / "shards"]
        res = cli(*args, "--engine", engine, "--workers", 2, "-q")
        assert res.exit_code in (0, 1), res.output
        if command.name == "rescore" and engine == "ray":
            shards = sorted(p for p in (out / "shards").iterdir() if p.name.startswith("rescored-"))
            assert len(shards) > 3
            (out / "r.jsonl").write_bytes(b"".join(p.read_bytes() for p in shards))
        got.append((res.exit_code, command.output(out, res.stdout)))
        assert [p.name for p in out.iterdir() if p.name.endswith(".mcqa-run")] == []
    assert got[0] == got[1]


def test_convert_shuffle_runs_both_passes_on_one_ray_connection(
    ray_session, cli, inputs, tmp_path, monkeypatch
):
    """--shuffle converts in two engine runs (the placements, then the rows): on Ray they share one connection,
    the command's, so a job's driver and worker processes start once; Ray is left as it was found."""
    from mcqa_prep.engine import ray_session as rs

    calls = []
    real_connect, real_disconnect = rs.connect, rs.disconnect

    def connect(*a, **k):
        session = real_connect(*a, **k)
        calls.append("connect")
        return session

    def disconnect(*a, **k):
        calls.append("disconnect")
        return real_disconnect(*a, **k)

    monkeypatch.setattr(rs, "connect", connect)
    monkeypatch.setattr(rs, "disconnect", disconnect)
    monkeypatch.setattr(parallel, "JSONL_CHUNK_BYTES", 8192)
    command = next(c for c in COMMANDS if c.name == "convert-shuffle")
    res = cli(*command.args(inputs, tmp_path), "--engine", "ray", "--workers", 2, "-q")
    assert res.exit_code == 0, res.output
    # the command's connection first and last; each pass's own inside it
    assert calls == ["connect", "connect", "disconnect", "connect", "disconnect", "disconnect"]
    assert ray.is_initialized()
