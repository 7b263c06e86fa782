"""Reaching Ray for a job, and leaving nothing of Ray behind.

- Which Ray: the session already running in this process (a notebook, NeMo RL), else the cluster the run
  names (`--address`: `auto` for the cluster `ray start --head` runs on this machine, or host:port), else the
  one in RAY_ADDRESS, else a local instance started here (one CPU per worker, no dashboard, its files in a
  short temporary directory). A cluster that is kept up pays Ray's start once for every command run on it;
  a local instance pays it per command.
- A local instance is this command's alone: a watchdog process (ray_watchdog.py) stops every one of its
  processes and removes its directory when the command ends, and also when the command is killed (SIGKILL
  included) — Ray's own clean-up runs in the command, so a killed command used to leave Ray's agents and its
  session directory behind.
- Quiet: while the job runs, Ray's Python loggers and the messages Ray's driver thread prints (a lost worker,
  a dead node: dozens of lines of traceback) go to `mcqa-prep-driver.log` in Ray's log directory, never to
  this command's stdout or stderr; a failure is one line that names that directory.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import McqaPrepError, Stopped, set_stop_handlers, stop_handlers
from .ray_watchdog import MARK

DRIVER_LOG = "mcqa-prep-driver.log"


@dataclass
class Session:
    """The Ray this job runs on: whether this command started it, and where Ray's logs are."""

    started: bool
    address: str | None
    log_dir: str | None
    temp_dir: str | None = None
    watchdog: subprocess.Popen[bytes] | None = None


def _logs_dir(ray: Any) -> str | None:
    with contextlib.suppress(Exception):
        node = ray._private.worker._global_node
        if node is not None:
            return str(node.get_logs_dir_path())
    return None


def _start_watchdog(token: str, temp: str) -> subprocess.Popen[bytes] | None:
    env = {k: v for k, v in os.environ.items() if k != MARK}
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "mcqa_prep.engine.ray_watchdog", token, temp, str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
    except OSError:
        return None


def _stop_watchdog(s: Session, keep_logs: bool) -> None:
    """Tell the watchdog the run is over (keeping the logs or not) and wait for its sweep."""
    w = s.watchdog
    if w is None:
        if s.temp_dir is not None and not keep_logs:
            shutil.rmtree(s.temp_dir, ignore_errors=True)
        return
    stdin = w.stdin
    assert stdin is not None  # the watchdog is started with stdin=PIPE
    with contextlib.suppress(OSError, ValueError):
        if keep_logs:
            stdin.write(b"keep-logs")
        stdin.close()
    try:
        w.wait(timeout=30)
    except subprocess.TimeoutExpired:
        w.kill()
        w.wait()
    s.watchdog = None


def connect(ray: Any, workers: int | None, address: str | None = None) -> Session:
    """Reach Ray (see the module's docstring); a failure to do so is one line."""
    if ray.is_initialized():
        return Session(False, None, _logs_dir(ray))
    named = address is not None
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        _probe(address, "--address" if named else "RAY_ADDRESS")
    kept = stop_handlers()  # ray.init replaces them: Ray's SIGTERM handler dumps a native stack and exits
    session = Session(True, address, None)
    said: list[str] = []
    try:
        with _stderr_aside(said):
            if address:
                ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
            else:
                _start_local(ray, workers, session)
        session.log_dir = _logs_dir(ray)
    except (Exception, SystemExit) as exc:
        _failed_start(ray, session, exc, kept, "".join(said))
    finally:
        set_stop_handlers(kept)
        os.environ.pop(MARK, None)
    return session


def _probe(address: str, where: str, timeout: float = 10.0) -> None:
    """Fail fast, in one line, when the address names a host:port nobody listens on: Ray's own client retries
    for minutes, printing warnings. Other forms (auto, ray://...) are left to Ray."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return
    host = host.strip("[]")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise McqaPrepError(
            f"cannot reach the Ray cluster at {address} ({where}): {exc.strerror or exc}",
            reason="ray_unreachable",
        ) from None


@contextlib.contextmanager
def _stderr_aside(said: list[str]) -> Iterator[None]:
    """Ray's native code logs to file descriptor 2 while it connects (before its log directory is known):
    those lines go to a temporary file, not to this command's stderr; what they said is appended to `said`."""
    try:
        saved = os.dup(2)
        aside = tempfile.TemporaryFile()
    except OSError:
        yield
        return
    try:
        sys.stderr.flush()
        os.dup2(aside.fileno(), 2)
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        with contextlib.suppress(OSError):
            aside.seek(0)
            said.append(aside.read(1 << 20).decode("utf-8", "replace"))
        aside.close()


_MAX_TEMP_ROOT = 24  # Ray's socket paths (<temp>/session_<date>_<pid>/sockets/plasma_store) stay < 108 bytes


def _short_temp_root() -> str:
    """The temporary directory, unless its path is too long for Ray's sockets: then /tmp."""
    root = tempfile.gettempdir()
    return root if len(root) <= _MAX_TEMP_ROOT else "/tmp"


def _start_local(ray: Any, workers: int | None, session: Session) -> None:
    temp = tempfile.mkdtemp(prefix="mcqa-ray-", dir=_short_temp_root())
    session.temp_dir = temp
    token = secrets.token_hex(12)
    session.watchdog = _start_watchdog(token, temp)
    os.environ[MARK] = token  # inherited by every process of the instance: how the watchdog finds them
    ray.init(
        num_cpus=workers,
        include_dashboard=False,
        logging_level=logging.ERROR,
        log_to_driver=False,
        _temp_dir=temp,
    )


def _failed_start(ray: Any, session: Session, exc: BaseException, kept: dict[Any, Any], said: str) -> None:
    import signal

    with contextlib.suppress(Exception):
        ray.shutdown()  # what ray.init started before it failed or was stopped
    _stop_watchdog(session, keep_logs=False)
    if isinstance(exc, SystemExit):  # Ray's handler, active while ray.init runs, turns a signal into exit
        code = exc.code if isinstance(exc.code, int) else 0
        if code in {int(s) for s in kept}:
            raise Stopped(signal.Signals(code).name) from None
        raise exc
    if isinstance(exc, McqaPrepError):
        raise exc
    if "InvalidAuthToken" in said or "Unauthenticated" in said:
        raise McqaPrepError(
            f"the Ray cluster at {session.address} refused this command's authentication token (the cluster "
            "uses token authentication: RAY_AUTH_MODE=token, with the cluster's token in RAY_AUTH_TOKEN or "
            "~/.ray/auth_token)",
            reason="ray_auth",
        ) from None
    first = (str(exc).strip().splitlines() or [""])[0]
    raise McqaPrepError(
        f"cannot start or reach Ray: {type(exc).__name__}: {first}", reason="ray_unreachable"
    ) from None


def disconnect(ray: Any, session: Session, keep_logs: bool) -> None:
    """Undo `connect`: a Ray this command started is shut down and swept (its logs kept when asked)."""
    if not session.started:
        return
    if session.temp_dir is not None:
        _stop_in_parallel(ray)
    with contextlib.suppress(Exception):
        ray.shutdown()
    _stop_watchdog(session, keep_logs)


def _stop_in_parallel(ray: Any) -> None:
    """Let `ray.shutdown` stop a local instance's processes at once: Ray's own stop sends SIGTERM to one
    process type at a time and waits up to a second for each (the GCS and the raylet take that second: over
    a second per command). The driver has disconnected by then and the instance's directory is removed
    after, so nothing is lost by SIGKILL. Only for an instance this command started (the watchdog sweeps
    whatever is left); Ray's own stop when its internals are not what is expected here."""
    node = getattr(getattr(getattr(ray, "_private", None), "worker", None), "_global_node", None)
    procs_of = getattr(node, "all_processes", None)
    if node is None or not isinstance(procs_of, dict):
        return

    def kill_all(*_: Any, **__: Any) -> None:
        found = [getattr(i, "process", None) for infos in procs_of.values() for i in infos]
        procs: list[Any] = [p for p in found if p is not None and hasattr(p, "kill")]
        for p in procs:
            with contextlib.suppress(OSError):
                p.kill()
        for p in procs:
            with contextlib.suppress(Exception):
                p.wait(timeout=5)
        procs_of.clear()

    with contextlib.suppress(Exception):
        node.kill_all_processes = kill_all


@contextlib.contextmanager
def quiet(ray: Any, log_dir: str | None) -> Iterator[None]:
    """Ray's Python logging and its driver's printed messages into DRIVER_LOG in `log_dir` (or nowhere)."""
    path = os.path.join(log_dir, DRIVER_LOG) if log_dir else os.devnull
    try:
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8", delay=True)
    except OSError:
        handler = logging.NullHandler()
    saved = []
    for name in ("ray", "ray.data", "ray.util"):
        lg = logging.getLogger(name)
        saved.append((lg, lg.handlers[:], lg.propagate))
        lg.handlers = [handler]
        lg.propagate = False
    # Ray's worker module, or None (and then printer is None too)
    worker_mod: Any = getattr(getattr(ray, "_private", None), "worker", None)
    printer = getattr(worker_mod, "print_to_stdstream", None)

    def to_log(data: Any, ignore_prefix: bool = False) -> None:
        with contextlib.suppress(Exception):
            for line in data.get("lines", []):
                handler.emit(logging.makeLogRecord({"msg": f"({data.get('pid')}) {line}", "levelno": 40}))

    if printer is not None:
        worker_mod.print_to_stdstream = to_log
    try:
        yield
    finally:
        if printer is not None:
            worker_mod.print_to_stdstream = printer
        for lg, handlers, propagate in saved:
            lg.handlers = handlers
            lg.propagate = propagate
        handler.close()
