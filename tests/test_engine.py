"""The row engine (mcqa_prep.engine): one executor for every row-parallel command.

- a job's chunks are folded in input order, whoever ran them: any number of workers gives the same result;
- every complete chunk is recorded in the run's work directory; a run that is stopped keeps them and
  `resume` runs only the rest (a damaged shard is run again; another job is refused, naming what differs);
- every command on the engine writes the same bytes for --workers 1 and 2, and after a SIGKILL mid-run and
  `--resume` the same bytes as a run that was never interrupted.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from engine_helpers import COMMANDS, write_inputs

from mcqa_prep import parallel
from mcqa_prep.engine import Job, Piece, run
from mcqa_prep.engine.work import SLOW_ENV, run_chunk
from mcqa_prep.engine.workdir import Done, WorkDir, work_path
from mcqa_prep.errors import StaleCache, UsageError
from mcqa_prep.runs import RunRequest

# ---- the engine on a job of its own --------------------------------------------------------------------


def count_lines(chunk, settings):
    """A job's per-chunk work: each row's line number, tagged, as the chunk's shard; the count as its part.
    `settings` names a file every run of a chunk appends its number to (which chunks were run)."""
    with open(settings["log"], "a") as fh:
        fh.write(f"{chunk.seq}\n")
    data = b"".join(f"{settings['tag']}:{r.line}\n".encode() for r in chunk.rows())
    return Piece(data, data.count(b"\n"))


def _job(tmp_path, inp, tag="x"):
    log = tmp_path / "ran.log"
    return Job("count", ((str(inp), None),), count_lines, {"log": str(log), "tag": tag}, {"tag": tag},
               tmp_path / "out.txt")  # fmt: skip


def _ran(tmp_path):
    log = tmp_path / "ran.log"
    got = sorted(int(x) for x in log.read_text().split()) if log.exists() else []
    log.unlink(missing_ok=True)
    return got


def _input(tmp_path, n=400):
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps({"i": i, "pad": "x" * (i % 50)}) + "\n" for i in range(n)))
    return p


class _Stop(KeyboardInterrupt):
    pass


def test_results_are_folded_in_input_order_for_any_worker_count(tmp_path):
    inp = _input(tmp_path)
    outs = []
    for workers in (1, 2, 3):
        got: list[bytes] = []
        info = run(
            RunRequest((inp,), tmp_path / "out.txt", workers, chunk_bytes=1000),
            _job(tmp_path, inp),
            lambda c, part, shard, got=got: got.append(shard.read()),
        )
        outs.append(b"".join(got))
        assert info.chunks == len(got) == -(-inp.stat().st_size // 1000) and info.resumed == 0
        assert _ran(tmp_path) == list(range(info.chunks))
    assert outs[0] == outs[1] == outs[2]
    assert outs[0].decode().split() == [f"x:{i}" for i in range(1, 401)]
    assert not work_path(tmp_path / "out.txt").exists()  # a run that completes leaves no work directory


class _Counted:
    """A chunk's result that counts how often it is pickled."""

    pickled = 0

    def __init__(self, n):
        self.n = n

    def __reduce__(self):
        _Counted.pickled += 1
        return _Counted, (self.n,)


def _counted(chunk, settings):
    data = b"".join(b"%d\n" % r.line for r in chunk.rows())
    return Piece(data, _Counted(data.count(b"\n")))


def test_a_worker_pickles_a_recorded_chunk_once_and_the_driver_gets_what_it_recorded(tmp_path):
    inp = _input(tmp_path, 40)
    work = tmp_path / "work"
    (work / "chunks").mkdir(parents=True)
    chunk = next(parallel.chunks_of([(str(inp), None)], 10_000))
    shard = str(work / "s-00000.bin")
    _Counted.pickled = 0
    sent = run_chunk(_counted, None, lambda seq: shard, -1, False, str(work), chunk)  # -1: not the driver
    wire = pickle.dumps(sent)  # what crosses the pipe (or Ray's object store) to the driver
    assert _Counted.pickled == 1  # for the record and the pipe alike
    assert (work / "chunks" / "00000.rec").read_bytes() in wire
    done = pickle.loads(wire)
    assert isinstance(done, Done) and done.recorded and done.part.n == 40
    assert (done.shard.path, done.shard.size) == (shard, Path(shard).stat().st_size)
    assert done.shard.sha256 == hashlib.sha256(Path(shard).read_bytes()).hexdigest()
    assert WorkDir(work, "out").completed(chunk).shard.sha256 == done.shard.sha256


def test_a_stopped_run_keeps_its_complete_chunks_and_resume_runs_only_the_rest(tmp_path):
    inp = _input(tmp_path)
    req = RunRequest((inp,), tmp_path / "out.txt", 1, chunk_bytes=1000)
    folded: list[int] = []

    def stop_after_five(c, part, shard):
        folded.append(c.seq)
        if len(folded) == 5:
            raise _Stop()

    with pytest.raises(_Stop):
        run(req, _job(tmp_path, inp), stop_after_five)
    work = work_path(tmp_path / "out.txt")
    assert work.is_dir() and _ran(tmp_path) == [0, 1, 2, 3, 4]
    shards = sorted(work.glob("count-*"))
    assert len(shards) == 5
    shards[2].write_bytes(b"X" + shards[2].read_bytes()[1:])  # damaged: run again
    got: list[bytes] = []
    info = run(
        RunRequest((inp,), tmp_path / "out.txt", 2, resume=True, chunk_bytes=1000),  # (another worker count)
        _job(tmp_path, inp),
        lambda c, part, shard: got.append(shard.read()),
    )
    assert info.resumed == 4 and _ran(tmp_path) == [2, *range(5, info.chunks)]
    assert b"".join(got).decode().split() == [f"x:{i}" for i in range(1, 401)]
    assert not work.exists()


def test_a_streaming_job_resumes_from_the_stream_ends_it_recorded_and_not_from_a_torn_one(tmp_path):
    """A job whose output is its shards in order (stream=True): a stopped run's folded chunks are in the stream
    and their ends in one file, a line each; a resume keeps those chunks (not run again), the line a kill tore
    is not one, and the stream comes out as an uninterrupted run's."""
    inp = _input(tmp_path)
    job = Job("count", ((str(inp), None),), count_lines, {"log": str(tmp_path / "ran.log"), "tag": "x"},
              {"tag": "x"}, tmp_path / "out.txt", stream=True)  # fmt: skip
    folded: list[int] = []

    def stop_at_five(c, part, shard):
        folded.append(c.seq)
        if len(folded) == 5:  # (raised before its shard is appended: four chunks are in the stream)
            raise _Stop()

    with pytest.raises(_Stop):
        run(RunRequest((inp,), tmp_path / "out.txt", 1, chunk_bytes=1000), job, stop_at_five)
    assert _ran(tmp_path) == [0, 1, 2, 3, 4]
    ends = work_path(tmp_path / "out.txt") / "chunks" / "stream.ends"
    lines = ends.read_bytes().splitlines()
    assert [int(x.split()[0]) for x in lines] == [0, 1, 2, 3]
    with open(ends, "ab") as fh:  # torn by a kill: no line end (read as a line, chunk 4 would count as in)
        fh.write(b"4 " + lines[-1].split()[1])
    got: dict[str, bytes] = {}
    info = run(
        RunRequest((inp,), tmp_path / "out.txt", 1, resume=True, chunk_bytes=1000),
        job,
        lambda c, part, shard: None,
        then=lambda _work, info: got.setdefault("stream", Path(info.stream).read_bytes()),
    )
    assert info.resumed == 4 and _ran(tmp_path) == list(range(4, info.chunks))
    assert got["stream"].decode().split() == [f"x:{i}" for i in range(1, 401)]


def test_resume_refuses_another_job_and_a_run_without_resume_starts_over(tmp_path):
    inp = _input(tmp_path)
    req = RunRequest((inp,), tmp_path / "out.txt", 1, chunk_bytes=1000)

    def stop(c, part, shard):
        raise _Stop()

    with pytest.raises(_Stop):
        run(req, _job(tmp_path, inp), stop)
    work = work_path(tmp_path / "out.txt")
    before = sorted(p.name for p in work.rglob("*"))
    with pytest.raises(StaleCache) as err:
        run(RunRequest((inp,), tmp_path / "out.txt", resume=True), _job(tmp_path, inp, tag="y"), stop)
    assert err.value.reason == "resume_mismatch"
    assert [d.field for d in err.value.differences] == ["settings.tag"]
    assert sorted(p.name for p in work.rglob("*")) == before  # refused: nothing of the job was touched
    os.utime(inp, ns=(1, 1))
    with pytest.raises(StaleCache) as err:
        run(RunRequest((inp,), tmp_path / "out.txt", resume=True), _job(tmp_path, inp), stop)
    assert [d.field for d in err.value.differences] == ["inputs"]
    _ran(tmp_path)
    info = run(req, _job(tmp_path, inp), lambda *a: None)  # no resume: the interrupted chunks are dropped
    assert info.resumed == 0 and _ran(tmp_path) == list(range(info.chunks)) and not work.exists()


def test_stdin_runs_but_cannot_resume_nor_leave_the_machine(tmp_path, monkeypatch):
    job = Job("count", (("-", None),), count_lines, {"log": str(tmp_path / "l"), "tag": "s"}, {}, None)
    with pytest.raises(UsageError, match="cannot be resumed"):
        run(RunRequest(("-",), resume=True), job, lambda *a: None)
    with pytest.raises(UsageError, match="local engine only"):
        run(RunRequest(("-",), engine="ray"), job, lambda *a: None)
    with pytest.raises(UsageError, match="engine must be one of"):
        run(RunRequest(("-",), engine="spark"), job, lambda *a: None)


# ---- every command on the engine ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return write_inputs(tmp_path_factory.mktemp("engine-inputs"))


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_every_command_writes_the_same_bytes_for_any_worker_count(
    cli, inputs, tmp_path, monkeypatch, command
):
    monkeypatch.setattr(parallel, "JSONL_CHUNK_BYTES", 8192)  # many chunks: rows of one pass cross them
    got = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        out.mkdir()
        res = cli(*command.args(inputs, out), "--workers", workers, "-q")
        assert res.exit_code in (0, 1), res.output
        got.append((res.exit_code, command.output(out, res.stdout)))
        assert [p.name for p in out.iterdir() if p.name.endswith(".mcqa-run")] == []
    assert got[0] == got[1]
    assert len(got[0][1]) > 1000


def _records(command, out: Path) -> list[Path]:
    """The complete chunks' records of a running command's work directory."""
    if command.beside is not None:
        base = [work_path(out / command.beside)]
    else:
        base = list((Path(os.environ["MCQA_PREP_CACHE"]) / "runs").glob(f"{command.name}-*"))
    return [p for b in base for p in (b / "chunks").glob("*.rec")]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_a_killed_command_resumes_to_the_bytes_of_an_uninterrupted_run(inputs, tmp_path, command):
    """SIGKILL mid-run (a chunk complete, others not), then the same command with --resume: the output is
    byte for byte the output of a run that was never interrupted, and nothing of the run is left."""
    env = dict(os.environ, **{parallel.CHUNK_BYTES_ENV: "16384"})
    clean = tmp_path / "clean"
    clean.mkdir()
    base = [sys.executable, "-m", "mcqa_prep"]
    want = subprocess.run([*base, *map(str, command.args(inputs, clean)), "-q", "--workers", "2"],
                          env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert want.returncode in (0, 1), want.stderr
    out = tmp_path / "killed"
    out.mkdir()
    argv = [*base, *map(str, command.args(inputs, out)), "-q", "--workers", "2"]
    proc = subprocess.Popen(argv, env=dict(env, **{SLOW_ENV: "0.3"}), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip
    try:
        end = time.monotonic() + 300
        while not _records(command, out):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < end, "timed out"
            time.sleep(0.02)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    kept = len(_records(command, out))
    assert kept >= 1
    res = subprocess.run([*argv, "--resume"], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == want.returncode, res.stderr
    assert command.output(out, res.stdout) == command.output(clean, want.stdout)
    assert _records(command, out) == []
    assert [p.name for p in out.iterdir() if p.name.endswith(".mcqa-run")] == []


def test_a_command_without_an_output_runs_beside_another_run_of_the_same_inputs(tmp_path):
    """Two `validate` of one file at once: the second finds the cache's work directory held and runs in a
    private one of its own (unrecorded), instead of refusing."""
    from mcqa_prep.engine.job import _place
    from mcqa_prep.engine.workdir import WorkDir

    inp = _input(tmp_path, 50)
    job = Job("count", ((str(inp), None),), count_lines, {"log": str(tmp_path / "ran.log"), "tag": "v"}, {})
    held = WorkDir(_place(job), "held")
    try:
        got: list[bytes] = []
        info = run(RunRequest((inp,), workers=1), job, lambda c, p, s: got.append(s.read()))
        assert b"".join(got).decode().split() == [f"v:{i}" for i in range(1, 51)]
        assert info.work_dir != str(held.path) and not os.path.exists(info.work_dir)
    finally:
        held.close(keep=False)
