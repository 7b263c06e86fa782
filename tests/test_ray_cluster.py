"""The Ray engine as an operator runs it, in separate processes: a command killed with SIGKILL leaves no Ray
process and no Ray directory behind and its job resumes; a two-node cluster (`ray start --head` and a worker
node on this machine, with token authentication) loses its worker node mid-run, for rescore, prepare and
passrates, and each still writes the local engine's output. Every Ray process a test starts is found and
stopped by process id.

`MCQA_PREP_TEST_CHUNK_SLEEP` makes each chunk wait before its shard is written, so that a kill lands
mid-run whatever the machine's speed; it changes no byte of the output.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from conftest import rescore_request
from engine_helpers import COMMANDS, write_inputs
from test_ray import _rollouts

from mcqa_prep.engine.work import SLOW_ENV
from mcqa_prep.parallel import CHUNK_BYTES_ENV
from mcqa_prep.rescore.run import rescore

RAY = str(Path(sys.executable).with_name("ray"))


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcqa_prep", *args]


def _input(tmp_path: Path, rows: int = 6000) -> Path:
    """About 3.5 MB of generated rollouts: four chunks of 1 MiB (the smallest chunk the engine makes)."""
    inp = tmp_path / "rollouts.jsonl"
    inp.write_text("\n".join(_rollouts(rows, seed=21)) + "\n", encoding="utf-8")
    return inp


def _local(tmp_path: Path, inp: Path) -> tuple[bytes, dict]:
    report = rescore(rescore_request(inp, tmp_path / "local.jsonl"))
    doc = report.to_dict()
    doc.pop("output")
    return (tmp_path / "local.jsonl").read_bytes(), doc


def _ray_output(out: Path) -> tuple[bytes, dict]:
    names = sorted(p.name for p in out.iterdir() if p.name != "summary.json")
    summary = json.loads((out / "summary.json").read_text())
    summary.pop("output"), summary.pop("engine")
    return b"".join((out / n).read_bytes() for n in names), summary


def _of_run(tag: str, tmp: Path) -> list[int]:
    """Processes of a run: those whose environment holds TEST_TAG=tag (everything the command started
    inherits it), or that have a file open under `tmp` (the run's TMPDIR, where its Ray instance writes):
    a process that sets its title (Ray's agents and workers) may overwrite what /proc shows of its
    environment, so the environment alone would miss it."""
    needle = f"TEST_TAG={tag}".encode()
    prefix = str(tmp) + "/"
    found = []
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    found.append(int(e))
                    continue
            for fd in os.listdir(f"/proc/{e}/fd"):
                if os.readlink(f"/proc/{e}/fd/{fd}").startswith(prefix):
                    found.append(int(e))
                    break
        except OSError:
            pass
    return found


def _wait_gone(pids_of, seconds: float = 30.0) -> list[int]:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        left = [p for p in pids_of() if _alive(p)]
        if not left:
            return []
        time.sleep(0.2)
    return left


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_for(cond, proc: subprocess.Popen, seconds: float = 120.0) -> None:
    end = time.monotonic() + seconds
    while not cond():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def _records(out: Path) -> int:
    d = out.parent / f".{out.name}.mcqa-run" / "chunks"
    try:
        return sum(1 for p in d.iterdir() if p.suffix == ".rec")  # complete records, not temporary files
    except OSError:
        return 0


def test_sigkilled_command_leaves_no_ray_behind_and_its_job_resumes(tmp_path):
    inp = _input(tmp_path)
    want, want_summary = _local(tmp_path, inp)
    tmp = Path(f"/tmp/mcqa-tk-{secrets.token_hex(3)}")  # short, as Ray's socket paths need
    tmp.mkdir()
    try:
        _killed_then_resumed(tmp_path, tmp, inp, want, want_summary)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _killed_then_resumed(tmp_path: Path, tmp: Path, inp: Path, want: bytes, want_summary: dict) -> None:
    tag = secrets.token_hex(6)
    env = dict(os.environ, TEST_TAG=tag, TMPDIR=str(tmp), **{SLOW_ENV: "0.5"})
    env.pop("RAY_ADDRESS", None)
    out = tmp_path / "ray"
    cmd = _cli("rescore", str(inp), "--engine", "ray", "--workers", "1", "-o", str(out), "-q")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(lambda: _records(out) >= 1, proc)
        started = _of_run(tag, tmp)
        assert len(started) > 3  # the command, its watchdog, Ray's GCS, raylet, agents, a worker...
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert _wait_gone(lambda: _of_run(tag, tmp)) == []  # no process of that run survives it
    assert _wait_gone(lambda: [1] if any(tmp.iterdir()) else [], 10) == []  # nor Ray's session directory
    assert not out.exists() and _records(out) >= 1

    env.pop(SLOW_ENV)
    res = subprocess.run([*cmd[:-1], "--resume"], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 1, res.stderr  # the generated rows include unreadable lines: invalid_row, exit 1
    assert re.search(r"^note: resumed: [1-9]\d* complete chunk\(s\)", res.stderr, re.M)
    assert (
        res.stderr.strip()
        .splitlines()[-1]
        .startswith(f"Error: {want_summary['invalid_rows']['count']} row(s)")
    )
    got, summary = _ray_output(out)
    assert got == want and summary == want_summary
    assert _wait_gone(lambda: _of_run(tag, tmp)) == [] and not any(tmp.iterdir())


# ---- a two-node cluster --------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node_pids(pgid: int) -> set[int]:
    """A node's processes: the process group `ray start` made, and their descendants (Ray starts its workers
    in sessions of their own)."""
    stats = {}
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                with open(f"/proc/{e}/stat") as fh:
                    f = fh.read().rsplit(")", 1)[1].split()
                stats[int(e)] = (int(f[1]), int(f[2]))  # ppid, pgid
            except OSError:
                pass
    pids = {p for p, (_, g) in stats.items() if g == pgid}
    grown = True
    while grown:
        more = {p for p, (pp, _) in stats.items() if pp in pids} - pids
        pids |= more
        grown = bool(more)
    return pids


def _kill(pids: set[int]) -> None:
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def _ray_start(env: dict, temp: Path, *args: str) -> tuple[int, str]:
    """`ray start` in a session of its own: its daemons keep its process group, by which they are found."""
    p = subprocess.Popen(
        [RAY, "start", "--num-cpus=1", f"--temp-dir={temp}", "--disable-usage-stats",
         f"--dashboard-agent-listen-port={_free_port()}", *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    out, _ = p.communicate(timeout=180)
    assert p.returncode == 0, out
    return p.pid, out


def _busy(worker: int) -> bool:
    """A chunk task runs on the worker node now."""
    for p in _node_pids(worker):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as fh:
                if fh.read().startswith(b"ray::_chunk_task"):
                    return True
        except OSError:
            pass
    return False


def _lose_the_worker_node(env: dict, temp: Path, address: str, groups: list[int], argv: list[str]) -> tuple:
    """A worker node joins; `argv` runs on the cluster; the worker node is killed (every process of it,
    SIGKILL) while it runs a chunk. The command's (exit code, stdout, stderr)."""
    worker, _ = _ray_start(env, temp, f"--address={address}")
    groups.append(worker)
    driver_env = {k: v for k, v in env.items() if k != SLOW_ENV}
    proc = subprocess.Popen(argv, env=dict(driver_env, RAY_ADDRESS=address), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    _wait_for(lambda: _busy(worker), proc)
    _kill(_node_pids(worker))
    stdout, stderr = proc.communicate(timeout=300)
    assert _wait_gone(lambda: _node_pids(worker)) == []
    return proc.returncode, stdout, stderr


def test_two_node_cluster_with_token_auth_survives_losing_its_worker_node(tmp_path):
    """The operator's set-up of docs/design/ray.md: `ray start --head` and `ray start --address` with
    RAY_AUTH_MODE=token and one token on every node and the driver. For rescore, prepare and passrates in
    turn, a worker node joins and is killed (every process of it, SIGKILL) while it runs a chunk: its chunks
    run again on the head, and the output is, byte for byte, the local engine's."""
    inp = _input(tmp_path)
    want, want_summary = _local(tmp_path, inp)
    (tmp_path / "data").mkdir()
    data = write_inputs(tmp_path / "data")
    local = tmp_path / "local"
    local.mkdir()
    chunked = dict(os.environ, **{CHUNK_BYTES_ENV: "65536"})  # many chunks of the small inputs
    wants = {}
    for command in (c for c in COMMANDS if c.name in ("prepare", "passrates")):
        res = subprocess.run(_cli(*map(str, command.args(data, local)), "-q"), env=chunked, capture_output=True,
                             text=True, timeout=600)  # fmt: skip
        assert res.returncode in (0, 1), res.stderr
        wants[command.name] = (
            res.returncode,
            command.output(local, res.stdout),
            res.stderr.replace(str(local), ""),
        )
    temp = Path(
        f"/tmp/mcqa-t2n-{secrets.token_hex(3)}"
    )  # short: Ray's socket paths must stay under 108 bytes
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16))
    env.pop("RAY_ADDRESS", None)
    env[SLOW_ENV] = "1.0"  # the nodes' workers inherit it
    env[CHUNK_BYTES_ENV] = "262144"  # (the driver plans the chunks)
    groups: list[int] = []
    try:
        head, said = _ray_start(env, temp, "--head", "--port=0", "--include-dashboard=false",
                                f"--dashboard-port={_free_port()}")  # fmt: skip
        groups.append(head)
        address = re.search(r"--address='([^']+)'", said).group(1)
        out = tmp_path / "ray"
        argv = _cli(
            "rescore", str(inp), "--engine", "ray", "--workers", "2", "-o", str(out), "--format", "json"
        )
        code, stdout, stderr = _lose_the_worker_node(env, temp, address, groups, argv)
        assert code == 1, stderr  # the generated rows include unreadable lines: invalid_row
        assert stderr.count("\n") == 1 and "row(s) could not be graded" in stderr  # nothing of Ray's
        doc = json.loads(stdout)
        assert doc["error"]["reason"] == "invalid_rows" and doc["rows"] == want_summary["rows"]
        got, summary = _ray_output(out)
        assert got == want and summary == want_summary
        env[CHUNK_BYTES_ENV] = "65536"  # as the local runs above
        for command in (c for c in COMMANDS if c.name in ("prepare", "passrates")):
            there = tmp_path / f"ray-{command.name}"
            there.mkdir()
            argv = _cli(*map(str, command.args(data, there)), "--engine", "ray", "--workers", "2", "-q")
            code, stdout, stderr = _lose_the_worker_node(env, temp, address, groups, argv)
            got = (code, command.output(there, stdout), stderr.replace(str(there), ""))
            assert got == wants[command.name], stderr  # the same output, and nothing of Ray's on stderr
        # relative paths, from a directory that is not the one the cluster was started in: the tasks run in
        # the driver's directory, so they read the inputs and write the shards the user named
        prepare = next(c for c in COMMANDS if c.name == "prepare")
        rel = {k: Path(v).relative_to(tmp_path) for k, v in data.items()}
        runs = {}
        quick = {k: v for k, v in env.items() if k != SLOW_ENV}
        for name, how in (("rel-local", []), ("rel-ray", ["--engine", "ray", "--workers", "2"])):
            (tmp_path / name).mkdir()
            res = subprocess.run(_cli(*map(str, prepare.args(rel, Path(name))), *how, "-q"),
                                 env=dict(quick, RAY_ADDRESS=address), cwd=tmp_path, capture_output=True,
                                 text=True, timeout=600)  # fmt: skip
            runs[name] = (
                res.returncode,
                prepare.output(tmp_path / name, res.stdout),
                res.stderr.replace(name, ""),
            )
        assert runs["rel-ray"] == runs["rel-local"] and runs["rel-local"][0] in (0, 1), runs["rel-ray"][2]
    finally:
        for g in groups:
            _kill(_node_pids(g))
        left = _wait_gone(lambda: set().union(*(_node_pids(g) for g in groups)) if groups else set())
        shutil.rmtree(temp, ignore_errors=True)
    assert left == []
