"""A real `mcqa-prep serve` in a subprocess on 127.0.0.1 (port 0: the OS picks a free one, the server prints
it), and a small HTTP/1.1 client over keep-alive sockets. No mock app: every test speaks HTTP to the server."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DEADLINE = 60  # seconds a step may take before a test gives up (never a performance claim)


class Server:
    def __init__(self, proc: subprocess.Popen, doc: dict[str, Any]) -> None:
        self.proc = proc
        self.doc = doc
        self.url = doc["url"]
        host, port = self.url.split("//")[1].rsplit(":", 1)
        self.host, self.port = host, int(port)

    def client(self) -> Client:
        return Client(self.host, self.port)

    def post(self, path: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        with self.client() as c:
            return c.request("POST", path, body, headers)

    def get(self, path: str) -> tuple[int, Any]:
        with self.client() as c:
            return c.request("GET", path)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("the server did not stop on SIGTERM") from None


def start(*args: Any, env: dict[str, str] | None = None) -> Server:
    """`mcqa-prep serve --port 0 --format json ARGS`, started and answering; fails the test with its stderr."""
    cmd = [sys.executable, "-m", "mcqa_prep", "serve", "--port", "0", "--format", "json", *map(str, args)]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **(env or {})}
    )
    assert proc.stdout is not None and proc.stderr is not None
    lines: list[bytes] = []
    while True:
        line = proc.stdout.readline()
        if not line:
            proc.wait(DEADLINE)
            raise AssertionError(f"serve exited {proc.returncode}: {proc.stderr.read().decode()[-3000:]}")
        lines.append(line)
        if line.rstrip() == b"}":
            break
    doc = json.loads(b"".join(lines))
    assert doc["ok"] is True, doc
    server = Server(proc, doc)
    t0 = time.monotonic()
    while True:
        try:
            if server.get("/healthz")[0] == 200:
                return server
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() - t0 > DEADLINE:
            raise AssertionError(f"serve did not answer: {proc.stderr.read().decode()[-3000:]}")
        time.sleep(0.05)


@contextlib.contextmanager
def serving(*args: Any, env: dict[str, str] | None = None) -> Iterator[Server]:
    server = start(*args, env=env)
    try:
        yield server
    finally:
        code = server.stop()
        assert code == 0, f"serve exited {code} on SIGTERM"


class Client:
    """HTTP/1.1 over one keep-alive connection; bodies: bytes as they are, anything else as JSON."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=DEADLINE)
        self.buf = b""

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.sock.close()

    def send(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        head = f"{method} {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        if not any(k.lower() == "content-length" for k in headers or {}):
            head += f"Content-Length: {len(data)}\r\n"
        self.sock.sendall(head.encode() + b"\r\n" + data)

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def receive(self) -> tuple[int, Any, dict[str, str]]:
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])}
        body = self._read(int(headers.get("content-length", "0")))
        ctype = headers.get("content-type", "")
        return status, (json.loads(body) if "json" in ctype else body.decode()), headers

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        self.send(method, path, body, headers)
        status, doc, _ = self.receive()
        return status, doc


def prepared_rows(directory: Path) -> list[dict[str, Any]]:
    rows = []
    for p in sorted(directory.glob("*-of-*.jsonl")):
        rows += [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows
