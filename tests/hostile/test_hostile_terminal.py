"""Through a real process (`python -m mcqa_prep`), what a terminal sees: no traceback on stderr for bad bytes
on stdin or in argv, a closed pipe, Ctrl-C, a SIGKILL of `rescore --workers 2` mid-run (whose dead temporary
a rerun removes), and a worker process killed under it (out of memory) reported in one line."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from . import build
from .kit import FAILURE, OK, USAGE, leftovers

COVERS = {"validate": 6, "grade": 2, "prepare": 2, "rescore": 7, "passrates": 1, "convert": 1}
DEADLINE = 120  # seconds a step may take before the test gives up (never a performance claim)


def cli(*args: object, stdin: bytes | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mcqa_prep",
            *(a if isinstance(a, bytes) else os.fsencode(str(a)) for a in args),
        ],
        input=stdin,
        capture_output=True,
        timeout=DEADLINE,
        env={**os.environ, **(env or {})},
    )


def no_traceback(p: subprocess.CompletedProcess | bytes) -> None:
    err = p if isinstance(p, bytes) else p.stderr
    assert b"Traceback" not in err and b"internal error" not in err, err.decode("utf-8", "replace")[-3000:]


def test_invalid_utf8_file(tmp_path):
    data = build.TRAIN.read_bytes().replace(b"Nucleus", b"Nucl\xffeus", 1)
    src = build.write(tmp_path / "train.jsonl", data)
    p = cli("validate", src)
    no_traceback(p)
    assert p.returncode == FAILURE and b":1: $: error: not valid UTF-8" in p.stdout
    piped = cli("validate", "-", stdin=data)
    no_traceback(piped)
    assert piped.returncode == FAILURE and piped.stdout.count(b"error:") == p.stdout.count(b"error:")


def test_bad_bytes_on_stdin_and_in_argv_of_grade():
    p = cli("grade", "--option", "A=x", "--option", "B=y", "--expected", "A", stdin=b"\\boxed{A} \xff\xfe")
    no_traceback(p)
    assert p.returncode == FAILURE and b"stdin: not valid UTF-8 text: byte 0xff at offset 10" in p.stderr
    q = cli(b"grade", b"\\boxed{A} \xff", b"--option", b"A=x\xfe", b"--expected", b"A", b"--format", b"json")
    no_traceback(q)
    assert q.returncode == USAGE and b"RESPONSE" in q.stderr


def test_deeply_nested_value(tmp_path):
    deep = b'{"options": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    src = build.write(tmp_path / "train.jsonl", build.TRAIN.read_bytes() + deep)
    p = cli("prepare", src, "-o", tmp_path / "p", "--on-invalid", "reject")
    no_traceback(p)
    assert p.returncode == OK and b"rejected 1" in p.stdout


def test_closed_stdout_is_not_a_traceback(tmp_path):
    """`mcqa-prep summarize ... | head -1`: the reader goes away early."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcqa_prep", "validate", build.TRAIN, "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.read(1)
    proc.stdout.close()
    err = proc.stderr.read()
    proc.wait(timeout=DEADLINE)
    no_traceback(err)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_reader_that_goes_away_stops_the_command_quietly(tmp_path, big_input, workers):
    """`mcqa-prep rescore big.jsonl -o - | head -c 100`: like any Unix filter, the command stops without a
    message (not "Error: (unknown path): Broken pipe") and exits 1: its output was not all delivered."""
    src = build.write(tmp_path / "big.jsonl", big_input)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcqa_prep", "rescore", src, "-o", "-", "--workers", workers],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout.read(100)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=DEADLINE) == FAILURE
    assert err == b"", err.decode("utf-8", "replace")[-2000:]


def test_file_names_that_are_not_utf8(tmp_path):
    """Linux file names are bytes: such a name is reported, in text and in JSON, even where stdout refuses
    what is not UTF-8."""
    name = os.fsdecode(b"bad\xffname.jsonl")
    src = build.write(tmp_path / name, build.TRAIN.read_bytes() + b"{oops\n")
    strict = {"PYTHONIOENCODING": "utf-8:strict"}
    for fmt in ("text", "json"):
        p = cli("validate", src, "--format", fmt, env=strict)
        no_traceback(p)
        assert p.returncode == FAILURE and b"bad" in p.stdout
        if fmt == "json":
            import json

            json.loads(p.stdout.decode("utf-8"))
    out = tmp_path / os.fsdecode(b"out\xfe.jsonl")
    p = cli("rescore", build.ROLLOUTS, "--rows", src, "-o", out, "--format", "json", env=strict)
    no_traceback(p)


class Fifo:
    """A named pipe fed by a thread (what `<(zcat rows.jsonl.gz)` gives a command); released on exit even
    when the command never opened it."""

    def __init__(self, path: Path, data: bytes):
        self.path = path
        os.mkfifo(path)
        self.thread = threading.Thread(target=self._feed, args=(data,), daemon=True)
        self.thread.start()

    def _feed(self, data: bytes) -> None:
        try:
            with open(self.path, "wb") as fh:
                fh.write(data)
        except OSError:
            pass

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc) -> None:
        try:  # a reader that never came: open the pipe ourselves so the writer's open() returns
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError:
            pass
        self.thread.join(DEADLINE)


@pytest.mark.parametrize("command", ["validate", "rescore-rows", "prepare", "passrates", "convert"])
def test_a_pipe_as_input(tmp_path, command):
    """Read once (validate, rescore): a pipe works. Hashed then read (prepare, passrates), or read twice
    (convert): a usage error saying so, never an empty result from a consumed pipe."""
    data = {"convert": build.jsonl(build.arc_rows(5)), "passrates": build.ROLLOUTS.read_bytes()}
    with Fifo(tmp_path / "rows.jsonl", data.get(command, build.TRAIN.read_bytes())) as fifo:
        args = {
            "validate": ["validate", fifo],
            "rescore-rows": [
                "rescore",
                build.ROLLOUTS,
                "--rows",
                fifo,
                "--rows",
                build.VALIDATION,
                "-o",
                tmp_path / "r.jsonl",
            ],
            "prepare": ["prepare", fifo, "-o", tmp_path / "p"],
            "passrates": ["passrates", fifo, "-o", tmp_path / "t.jsonl", "--rescore"],
            "convert": ["convert", fifo, "-o", tmp_path / "c.jsonl"],
        }[command]
        p = cli(*args)
    no_traceback(p)
    if command in ("validate", "rescore-rows"):
        assert p.returncode == OK, p.stderr
    else:
        assert p.returncode == USAGE and b"not a regular file" in p.stderr, p.stderr
        assert not leftovers(tmp_path)


# ---- rescore --workers 2, killed ---------------------------------------------------------------------------


def _rollouts(n: int) -> bytes:
    rows = [build.mcqa_row(i, 10) for i in range(n)]
    text = "Let me think. " * 40 + "The answer is \\boxed{C}."
    return build.jsonl([build.rollout(r, text, 1.0) for r in rows])


@pytest.fixture(scope="module")
def big_input() -> bytes:
    """More than the 6 chunks (2 MiB each) `rescore --workers 2` keeps in flight before it writes."""
    return _rollouts(16_000)


def _feed(fifo: Path, data: bytes, done: threading.Event) -> None:
    try:
        with open(fifo, "wb") as fh:
            fh.write(data)
            done.wait(DEADLINE)  # keep the pipe open: the run cannot finish until it is killed
    except (BrokenPipeError, OSError):
        pass


def _wait_for(predicate, what: str) -> None:
    t0 = time.monotonic()
    while not predicate():
        if time.monotonic() - t0 > DEADLINE:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def _temporaries(d: Path) -> list[Path]:
    """What a running rescore writes before its output is in place: its temporary file, or the stream of
    rescored rows in its work directory (the engine's)."""
    found = [p for p in d.iterdir() if p.name.startswith(".out.jsonl.") and p.name.endswith(".tmp")]
    stream = d / ".out.jsonl.mcqa-run" / "stream"
    return [*found, stream] if stream.exists() else found


def _children(pid: int) -> list[int]:
    kids = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with open(task / "children") as fh:
            kids += [int(x) for x in fh.read().split()]
    return kids


def _start_rescore(tmp_path: Path, data: bytes, done: threading.Event, *extra: str):
    fifo = tmp_path / "rollouts.jsonl"
    os.mkfifo(fifo)
    out_dir = tmp_path / "o"
    out_dir.mkdir()
    feeder = threading.Thread(target=_feed, args=(fifo, data, done), daemon=True)
    feeder.start()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcqa_prep",
            "rescore",
            fifo,
            "-o",
            out_dir / "out.jsonl",
            "--workers",
            "2",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: the test can kill exactly what it started
    )
    return proc, out_dir, feeder


def test_sigkill_mid_run_then_a_rerun_removes_the_dead_temporary(tmp_path, big_input):
    done = threading.Event()
    proc, out_dir, feeder = _start_rescore(tmp_path, big_input, done)
    try:
        # mid-run: the workers graded chunks and the parent wrote some of them into its temporary file
        _wait_for(lambda: any(p.stat().st_size > 0 for p in _temporaries(out_dir)), "rescored rows")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=DEADLINE)
    finally:
        done.set()
        feeder.join(DEADLINE)
    assert not (out_dir / "out.jsonl").exists(), "a killed run left a complete-looking output"
    assert _temporaries(out_dir), "expected the killed run's temporary file"
    src = build.write(tmp_path / "small.jsonl", _rollouts(20))
    p = cli("rescore", src, "-o", out_dir / "out.jsonl", "--workers", "2")
    no_traceback(p)
    assert p.returncode == OK
    assert not leftovers(out_dir), "the rerun left the dead run's temporary file"


def test_a_worker_killed_under_rescore_is_one_line(tmp_path, big_input):
    done = threading.Event()
    proc, out_dir, feeder = _start_rescore(tmp_path, big_input, done)
    try:
        _wait_for(lambda: len(_children(proc.pid)) >= 2, "the worker processes")
        os.kill(_children(proc.pid)[0], signal.SIGKILL)  # what the kernel's OOM killer does
        done.set()
        _, err = proc.communicate(timeout=DEADLINE)
    finally:
        done.set()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=DEADLINE)
        feeder.join(DEADLINE)
    no_traceback(err)
    assert proc.returncode == FAILURE
    assert len(err.strip().splitlines()) == 1 and b"worker process died" in err, err
    assert not (out_dir / "out.jsonl").exists() and not leftovers(out_dir)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_ctrl_c_mid_run_is_not_a_traceback(tmp_path, big_input, fmt):
    """...and with --format json, stdout still holds its one document (it held none; found by an audit)."""
    import json

    done = threading.Event()
    proc, out_dir, feeder = _start_rescore(tmp_path, big_input, done, "--format", fmt)
    try:
        _wait_for(lambda: any(p.stat().st_size > 0 for p in _temporaries(out_dir)), "rescored rows")
        os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole foreground group
        out, err = proc.communicate(timeout=DEADLINE)
    finally:
        done.set()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=DEADLINE)
        feeder.join(DEADLINE)
    no_traceback(err)
    assert proc.returncode == FAILURE and err.strip().splitlines()[-1] == b"Aborted!", err
    assert not (out_dir / "out.jsonl").exists() and not leftovers(out_dir)
    if fmt == "json":
        error = json.loads(out)["error"]
        assert error == {
            "type": "Interrupted",
            "reason": "interrupted",
            "message": "stopped by SIGINT",
            "hint": None,
            "exit_code": 1,
            "signal": "SIGINT",
        }


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGKILL"])
def test_the_parent_stopped_alone_takes_its_workers_with_it(tmp_path, big_input, sig):
    """`timeout 600 mcqa-prep ... | tee log` sends SIGTERM to mcqa-prep alone: the workers were left running
    with the caller's pipes open, and the caller hung (found by an audit). SIGTERM and SIGHUP end the run as
    Ctrl-C does (one line, exit 1, no temporary file); after SIGKILL the workers die with the parent."""
    done = threading.Event()
    proc, out_dir, feeder = _start_rescore(tmp_path, big_input, done)
    try:
        _wait_for(lambda: len(_children(proc.pid)) >= 2, "the worker processes")
        workers = _children(proc.pid)
        os.kill(proc.pid, getattr(signal, sig))
        done.set()
        _, err = proc.communicate(timeout=DEADLINE)
        _wait_for(lambda: not any(map(_alive, workers)), "the workers to end")
    finally:
        done.set()
        with contextlib.suppress(ProcessLookupError):  # the group: orphaned workers too, if the test failed
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=DEADLINE)
        feeder.join(DEADLINE)
    assert not (out_dir / "out.jsonl").exists()
    if sig == "SIGKILL":
        return
    no_traceback(err)
    assert proc.returncode == FAILURE
    assert err.strip().splitlines() == [
        f"Error: stopped by {sig}; outputs not finished were removed".encode()
    ], err
    assert not leftovers(out_dir)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["validate"], ["validate", "--format", "json"], ["rescore", "-o", "-"]])
def test_a_full_stdout_is_named_in_one_line(tmp_path, args):
    """`mcqa-prep ... > report.txt` on a full disk said "Error: (unknown path): ..." (found by an audit)."""
    src = build.write(tmp_path / "rows.jsonl", _rollouts(50))
    with open("/dev/full", "wb") as full:
        p = subprocess.run(
            [sys.executable, "-m", "mcqa_prep", args[0], src, *args[1:]], stdout=full, stderr=subprocess.PIPE
        )
    no_traceback(p.stderr)
    assert p.returncode == FAILURE
    assert p.stderr.decode().splitlines() == [
        "Error: stdout: cannot write: No space left on device; free disk space, or write to another filesystem (-o)"
    ]
