"""Headless Chromium (Debian's `chromium` package) driven over the DevTools protocol, for the report tests.

No browser is downloaded: the test uses the system's chromium binary, started with networking features off
and every host name unresolvable, and talks to it on 127.0.0.1 with websocket-client. `open_page` loads a
file:// page and records what a person's browser would hide: console errors, uncaught exceptions, log
errors (e.g. a content-security-policy violation), and every network request other than the page itself.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NAMES = ("chromium", "chromium-browser")
START_TIMEOUT = 30.0
CALL_TIMEOUT = 30.0


def find_chromium() -> str | None:
    for name in NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def flags(user_data_dir: Path) -> list[str]:
    return [
        "--headless",
        "--no-sandbox",  # root in CI
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--mute-audio",
        "--host-resolver-rules=MAP * ~NOTFOUND",  # nothing resolves: a stray request fails fast
        f"--user-data-dir={user_data_dir}",
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
        "--remote-allow-origins=*",
        "--window-size=1280,900",
        "about:blank",
    ]


@dataclass
class Visit:
    """What happened while a page loaded."""

    url: str
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


class Session:
    """One page target's DevTools connection: call(method, **params) -> result; events are recorded."""

    def __init__(self, ws_url: str) -> None:
        import websocket

        self.ws = websocket.create_connection(ws_url, timeout=CALL_TIMEOUT, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_for(self, event: str, timeout: float = CALL_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        if any(e["method"] == event for e in self.events):
            return
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == event:
                    return
        raise TimeoutError(event)

    def evaluate(self, expression: str) -> Any:
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"script failed: {res['exceptionDetails']}")
        return res["result"].get("value")

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])

    def set_width(self, width: int, height: int = 900) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def close(self) -> None:
        self.ws.close()


def _endpoint(user_data_dir: Path, proc: subprocess.Popen) -> int:
    """The DevTools port chromium chose (it writes it to DevToolsActivePort)."""
    marker = user_data_dir / "DevToolsActivePort"
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"chromium exited with code {proc.returncode} before it listened")
        if marker.exists():
            lines = marker.read_text().split()
            if lines and lines[0].isdigit():
                return int(lines[0])
        time.sleep(0.05)
    raise TimeoutError("chromium did not open its DevTools port")


@contextmanager
def browser(binary: str, tmp: Path):
    """A running headless chromium; yields a Session on its first page. Stops the process it started."""
    profile = tmp / "chromium-profile"
    profile.mkdir()
    log = open(tmp / "chromium.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([binary, *flags(profile)], stdout=log, stderr=subprocess.STDOUT)
    session = None
    try:
        port = _endpoint(profile, proc)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=CALL_TIMEOUT) as r:
            targets = json.loads(r.read())
        page = next(t for t in targets if t.get("type") == "page")
        session = Session(page["webSocketDebuggerUrl"])
        for domain in ("Page", "Runtime", "Log", "Network"):
            session.call(f"{domain}.enable")
        yield session
    finally:
        if session is not None:
            session.close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def open_page(session: Session, path: Path) -> Visit:
    """Load a file and return the errors and requests seen until its load event (plus a short settle)."""
    url = path.resolve().as_uri()
    session.events.clear()
    session.call("Page.navigate", url=url)
    session.wait_for("Page.loadEventFired")
    session.evaluate("new Promise(r => requestAnimationFrame(() => setTimeout(r, 100)))")
    visit = Visit(url)
    for e in session.events:
        m, p = e["method"], e.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            visit.errors.append(
                "console: " + " ".join(str(a.get("value", a.get("description"))) for a in p["args"])
            )
        elif m == "Runtime.exceptionThrown":
            visit.errors.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:500])
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            visit.errors.append("log: " + p["entry"].get("text", ""))
        elif m == "Network.requestWillBeSent":
            visit.requests.append(p["request"]["url"])
        elif m == "Network.loadingFailed":
            visit.failed.append(f"{p.get('errorText')} ({p.get('blockedReason') or p.get('type')})")
    return visit


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false")
