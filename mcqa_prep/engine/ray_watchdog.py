"""The watchdog of a local Ray instance a command started: when the command ends, or dies (SIGKILL
included), every process of that instance is killed and its temporary directory removed.

    python -m mcqa_prep.engine.ray_watchdog TOKEN TEMP_DIR DRIVER_PID

The command starts this process (in a session of its own, so a terminal's Ctrl-C does not reach it) before
it starts Ray, and keeps the write end of its stdin. Ray's processes (GCS, raylet, its agents, the workers)
inherit the variable `MARK=TOKEN` from the command's environment and write their logs under TEMP_DIR; this
process finds them by either (/proc/<pid>/environ, /proc/<pid>/fd), so it kills exactly that instance's
processes, wherever Ray's process tree put them (an agent whose raylet died is a child of init).
Stdin carries at most one word before it closes: "keep-logs" (the run failed: the session's logs stay,
everything else of the temporary directory goes). End of file without a word (the command died) removes
the whole directory. Linux only (/proc); elsewhere it only removes the directory.

Standard library only, and nothing of mcqa_prep: it must start fast and keep working whatever the command's
state.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time

MARK = "MCQA_PREP_RAY_RUN"
_SWEEP_S = 15.0


def marked_pids(token: str, temp_dir: str, exclude: set[int]) -> list[int]:
    """The instance's processes: those whose environment holds MARK=token, or that have a file open under
    `temp_dir` (every Ray process writes its logs there). Both are needed: a process that sets its title
    (Ray's agents and workers do) may overwrite the memory /proc shows as its environment, and the
    environment is what finds a process before it opens anything. Other users' processes are unreadable:
    skipped."""
    needle = f"{MARK}={token}".encode()
    prefix = temp_dir.rstrip("/") + "/"
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for e in entries:
        if not e.isdigit() or int(e) in exclude:
            continue
        if _has_mark(e, needle) or _has_file_under(e, prefix):
            found.append(int(e))
    return found


def _has_mark(pid: str, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return needle in fh.read().split(b"\0")
    except OSError:
        return False


def _has_file_under(pid: str, prefix: str) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(prefix):
                return True
        except OSError:
            continue
    return False


def sweep(token: str, temp_dir: str, exclude: set[int], deadline_s: float = _SWEEP_S) -> int:
    """SIGKILL every marked process until none is left (or the deadline passes); how many were killed."""
    killed: set[int] = set()
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        pids = marked_pids(token, temp_dir, exclude)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except OSError:
                pass
        time.sleep(0.1)
    return len(killed)


def remove(temp_dir: str, keep_logs: bool) -> None:
    if not temp_dir or not os.path.isdir(temp_dir):
        return
    if not keep_logs:
        shutil.rmtree(temp_dir, ignore_errors=True)
        return
    for root, dirs, files in os.walk(temp_dir, topdown=True):
        if os.path.basename(root) == "logs":
            dirs[:] = []
            continue
        for f in files:
            try:
                os.unlink(os.path.join(root, f))
            except OSError:
                pass


def main(argv: list[str]) -> int:
    token, temp_dir, driver = argv[0], argv[1], int(argv[2])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    word = b""
    try:
        while True:
            data = os.read(0, 64)
            if not data:
                break
            word += data
    except OSError:
        pass
    sweep(token, temp_dir, {os.getpid(), driver})
    remove(temp_dir, word.strip() == b"keep-logs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
