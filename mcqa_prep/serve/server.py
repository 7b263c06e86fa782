"""Running the server: one listening socket, N worker processes, a graceful drain on SIGTERM.

The parent binds the socket (a busy port is refused in one line before any worker starts), builds what every
worker shares (the served contract and its lookup index, the counters in shared memory) and forks the
workers; each runs the ASGI app on uvicorn (httptools, uvloop where installed) on the inherited socket. A
worker that dies (killed, out of memory) is started again in its place. SIGTERM or SIGINT: the parent
forwards SIGTERM to every worker, each stops accepting, finishes its in-flight requests and exits 0, and the
parent returns 0. With one worker the app runs in the parent process itself.

Workers never outlive their parent: on Linux the kernel sends each worker SIGTERM when the parent dies
(prctl PR_SET_PDEATHSIG), and on every platform a worker also watches a pipe whose only writer is the parent
(end of file: the parent is gone) and stops itself. A worker told to stop closes its listening socket at
once and finishes its in-flight requests, so a killed `serve` frees its port within the drain (10 s at most).
"""

from __future__ import annotations

import contextlib
import errno
import multiprocessing
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

from ..errors import McqaPrepError
from ..grader import DEFAULT_REGEX_TIMEOUT
from .app import GRADE_TIMEOUT, MAX_BODY, ServeApp
from .contract import ServedContract
from .metrics import Counters
from .verifier import Verifier

GRACE_SECONDS = 10  # how long a worker waits for its in-flight requests once told to stop
BACKLOG = 2048


class ServeError(McqaPrepError):
    reason = "serve"


@dataclass(frozen=True)
class ServeSettings:
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    on_mismatch: str = "mask"
    regex_timeout: float = DEFAULT_REGEX_TIMEOUT
    max_body: int = MAX_BODY
    lenient: bool = False
    grade_timeout: float = GRADE_TIMEOUT


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket (ServeError naming the address when it cannot be had)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ServeError(
            f"{host}: not an address to listen on ({exc.strerror})", reason="bad_address"
        ) from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        reason = "address_in_use" if exc.errno == errno.EADDRINUSE else "bad_address"
        raise ServeError(f"{host}:{port}: cannot listen ({exc.strerror or exc})", reason=reason) from None
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{'[' + host + ']' if ':' in host else host}:{port}"


def _uvicorn_config(app: ServeApp) -> Any:
    import uvicorn

    try:
        import uvloop  # noqa: F401

        loop = "uvloop"
    except ImportError:
        loop = "asyncio"
    try:
        import httptools  # noqa: F401

        http = "httptools"
    except ImportError:
        http = "h11"
    return uvicorn.Config(
        app,
        loop=loop,
        http=http,
        lifespan="on",
        access_log=False,
        log_level="warning",
        timeout_keep_alive=30,
        timeout_graceful_shutdown=GRACE_SECONDS,
        backlog=BACKLOG,
    )


def _server_class(early: list[int]) -> type:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, minus its re-raising of the stop signal after the drain (a drained server exits
        0), and told to stop at once when a stop signal came before it started (`early`)."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            sigs = (signal.SIGINT, signal.SIGTERM)
            originals = {s: signal.signal(s, self.handle_exit) for s in sigs}
            if early:
                self.should_exit = True
            try:
                yield
            finally:
                for s, handler in originals.items():
                    signal.signal(s, handler)

    return Server


def run_worker(
    row: int,
    sock: socket.socket,
    served: ServedContract,
    s: ServeSettings,
    counters: Counters,
    early: list[int] | None = None,
) -> None:
    """One worker: the app on uvicorn on `sock` until told to stop (then its in-flight requests finish)."""
    counters.row = row
    verifier = Verifier(
        served, on_mismatch=s.on_mismatch, regex_timeout=s.regex_timeout, counters=counters, lenient=s.lenient
    )
    app = ServeApp(verifier, max_body=s.max_body, workers=s.workers, grade_timeout=s.grade_timeout)
    _server_class(early if early is not None else [])(_uvicorn_config(app)).run(sockets=[sock])


def _child(
    row: int,
    sock: socket.socket,
    served: ServedContract,
    s: ServeSettings,
    counters: Counters,
    lifeline: tuple[int, int],
    parent: int,
) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    _tie_to_parent(lifeline, parent)
    run_worker(row, sock, served, s, counters)


def _tie_to_parent(lifeline: tuple[int, int], parent: int) -> None:
    """Stop this worker (SIGTERM to itself: the drain) when its parent dies, however it dies."""
    read_end, write_end = lifeline
    os.close(write_end)  # the parent's copy is then the pipe's only writer
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG

    def watch() -> None:
        with contextlib.suppress(OSError):
            while os.read(read_end, 1):
                pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="mcqa-parent-watch", daemon=True).start()
    if os.getppid() != parent:  # the parent died before the tie was made
        os.kill(os.getpid(), signal.SIGTERM)


def serve(
    served: ServedContract,
    settings: ServeSettings,
    sock: socket.socket,
    *,
    on_ready: Callable[[], Any] | None = None,
    on_event: Callable[[str], Any] | None = None,
) -> int:
    """Serve until SIGTERM/SIGINT; returns the exit code (0 after a clean drain). `on_ready` runs once the
    server is set to serve (a stop signal from then on drains and exits 0); `on_event` hears about worker
    restarts (one line each)."""
    early: list[int] = []
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        early.append(signum)
        stop.set()

    originals = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        served.prepare_lookup()
        counters = Counters(settings.workers)
        if on_ready is not None:
            on_ready()
        if settings.workers == 1:
            run_worker(0, sock, served, settings, counters, early)
            return 0
        return _supervise(served, settings, sock, counters, stop, on_event)
    finally:
        for s, handler in originals.items():
            signal.signal(s, handler)


def _supervise(
    served: ServedContract,
    settings: ServeSettings,
    sock: socket.socket,
    counters: Counters,
    stop: threading.Event,
    on_event: Callable[[str], Any] | None,
) -> int:
    ctx = multiprocessing.get_context("fork")
    lifeline = os.pipe()  # the parent holds the write end; a worker reads end of file when the parent is gone
    parent = os.getpid()

    def start(row: int) -> Any:
        args = (row, sock, served, settings, counters, lifeline, parent)
        p = ctx.Process(target=_child, args=args, name=f"mcqa-serve-{row}")
        p.start()
        return p

    procs: dict[int, Any] = {}
    try:
        procs = {row: start(row) for row in range(settings.workers)}
        while not stop.is_set():
            wait([p.sentinel for p in procs.values()], timeout=0.5)
            for row, p in list(procs.items()):
                if not p.is_alive() and not stop.is_set():
                    if on_event is not None:
                        on_event(f"worker {row} (pid {p.pid}) exited with {p.exitcode}; starting it again")
                    procs[row] = start(row)
    finally:
        codes = _stop_all(list(procs.values()))
        for fd in lifeline:
            os.close(fd)
    return 0 if all(c == 0 for c in codes) else 1


def _stop_all(procs: list[Any]) -> list[int]:
    for p in procs:
        if p.is_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGTERM)
    for p in procs:
        p.join(GRACE_SECONDS + 5)
        if p.is_alive():
            p.kill()
            p.join()
    return [p.exitcode if p.exitcode is not None else 1 for p in procs]
