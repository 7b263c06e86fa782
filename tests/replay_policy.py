"""A replay policy server: answers OpenAI Responses API requests (`POST /v1/responses`) with recorded texts, so
NeMo Gym's own rollout collection can run end to end on loopback with no model.

    python tests/replay_policy.py RECORDING.json PORT_FILE

binds 127.0.0.1 on a free port, writes the port to PORT_FILE, serves until SIGTERM. Standard library only (it
runs on any interpreter: ours, or NeMo Gym's 3.13 venv).

RECORDING.json is `{"responses": {KEY: [text for rollout 0, text for rollout 1, ...]}}` where KEY is
`prompt_key(the request's last user message)`. The rollout is the request's `seed` (NeMo Gym's
`num_repeats_add_seed=true` puts the rollout index there, in `metadata.extra_body`), 0 when absent: the same
prompt and rollout always get the same text, so two collections (the stock server's and the component's) see
the same responses whatever the order the rollouts run in. An unknown prompt or rollout is a 404: a run that
asks for something not recorded fails instead of grading an invented answer.
"""

from __future__ import annotations

import hashlib
import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def prompt_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def last_user_text(body: dict[str, Any]) -> str:
    items = body.get("input")
    if isinstance(items, str):
        return items
    for item in reversed(items or []):
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            return "".join(
                c.get("text", "")
                for c in content or []
                if isinstance(c, dict) and c.get("type") == "input_text"
            )
    return ""


def seed_of(body: dict[str, Any]) -> int:
    for holder in (body, body.get("metadata") or {}):
        extra = holder.get("extra_body") if isinstance(holder, dict) else None
        if isinstance(extra, str):
            try:
                extra = json.loads(extra)
            except ValueError:
                extra = None
        if isinstance(extra, dict) and isinstance(extra.get("seed"), int):
            return extra["seed"]
    seed = body.get("seed")
    return seed if isinstance(seed, int) else 0


def response_doc(text: str, prompt: str, n: int) -> dict[str, Any]:
    """A complete Responses API response (what NeMo Gym's openai_model server validates)."""
    out_tokens = len(text.split())
    in_tokens = len(prompt.split())
    return {
        "id": f"resp_replay_{n}",
        "created_at": 1_700_000_000,
        "model": "replay",
        "object": "response",
        "status": "completed",
        "output": [
            {
                "id": f"msg_replay_{n}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": in_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": in_tokens + out_tokens,
        },
    }


class Replay(BaseHTTPRequestHandler):
    recording: dict[str, list[str]] = {}
    counter = 0
    lock = threading.Lock()

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, doc: Any) -> None:
        body = json.dumps(doc).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self._send(200, {"object": "list", "data": [{"id": "replay", "object": "model"}]})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        if not self.path.rstrip("/").endswith("/responses"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        prompt = last_user_text(body)
        texts = self.recording.get(prompt_key(prompt))
        seed = seed_of(body)
        if texts is None or not 0 <= seed < len(texts):
            self._send(404, {"error": {"message": f"no recorded response for this prompt, rollout {seed}"}})
            return
        with self.lock:
            Replay.counter += 1
            n = Replay.counter
        self._send(200, response_doc(texts[seed], prompt, n))


def main() -> None:
    recording, port_file = Path(sys.argv[1]), Path(sys.argv[2])
    Replay.recording = json.loads(recording.read_text(encoding="utf-8"))["responses"]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Replay)
    server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    port_file.write_text(str(server.server_address[1]))
    import signal

    signal.signal(signal.SIGTERM, lambda *a: threading.Thread(target=server.shutdown).start())
    server.serve_forever()


if __name__ == "__main__":
    main()
