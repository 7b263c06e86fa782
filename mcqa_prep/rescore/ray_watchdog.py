"""The watchdog of a local Ray instance a command started: when the command ends, or dies (SIGKILL
included), every process of that instance is killed and its temporary directory removed.

    python -m mcqa_prep.rescore.ray_watchdog TOKEN TEMP_DIR DRIVER_PID

The command starts this process (in a session of its own, so a terminal's Ctrl-C does not reach it) before
it starts Ray, and keeps the write end of its stdin. Ray's processes (GCS, raylet, its agents, the workers)
inherit the variable `MARK=TOKEN` from the command's environment; this process finds them by it in
/proc/<pid>/environ, so it kills exactly that instance's processes, wherever Ray's process tree put them.
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


def marked_pids(token: str, exclude: set[int]) -> list[int]:
    """The processes whose environment holds MARK=token (other users' processes are unreadable: skipped)."""
    needle = f"{MARK}={token}".encode()
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for e in entries:
        if not e.isdigit() or int(e) in exclude:
            continue
        try:
            with open(f"/proc/{e}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            found.append(int(e))
    return found


def sweep(token: str, exclude: set[int], deadline_s: float = _SWEEP_S) -> int:
    """SIGKILL every marked process until none is left (or the deadline passes); how many were killed."""
    killed: set[int] = set()
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        pids = marked_pids(token, exclude)
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
    sweep(token, {os.getpid(), driver})
    remove(temp_dir, word.strip() == b"keep-logs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
