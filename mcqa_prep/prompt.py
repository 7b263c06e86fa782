"""What "the prompt" of a row is, in one place: its text, and the key that says two rows share a prompt.

- `content_text(content)`: a message content as text: a string is itself; a list of content parts gives the
  concatenated `text` of the parts that have one (input_text, output_text, text), in order; anything else
  is None. NeMo Gym rows carry a string; rollouts echo the same prompt in either shape.
- `prompt_key(rcp)`: a 16-byte digest of the prompt's (role, text) pairs. Only role and text count:
  NeMo Gym rollouts echo `input` with extra keys (`"type": "message"`, nulls) that the dataset row does not
  have, and a string `input` is one user message (as the Responses API reads it). Used by validate (repeated
  prompts), rescore (joining rollouts with their dataset rows), summarize and passrates (per-prompt rates).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

_USER = b"user\x00"


def content_text(content: Any) -> str | None:
    if type(content) is str:
        return content
    if isinstance(content, list):
        return "".join(
            p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)
        )
    return None


def messages(rcp: Any) -> list[tuple[Any, str | None]] | None:
    """(role, text) of every input message of responses_create_params; None when there is no input."""
    if not isinstance(rcp, Mapping):
        return None
    inp = rcp.get("input")
    if isinstance(inp, str):
        return [("user", inp)]
    if not isinstance(inp, list):
        return None
    return [
        (m.get("role"), content_text(m.get("content"))) if isinstance(m, Mapping) else (None, None)
        for m in inp
    ]


def user_prompt(rcp: Any) -> str | None:
    """The text of the single user message of a row (what the model is asked); None for any other shape."""
    msgs = messages(rcp)
    if msgs is None or len(msgs) != 1 or msgs[0][0] != "user":
        return None
    return msgs[0][1]


def key_of_text(text: str) -> bytes:
    """prompt_key of a prompt that is one user message with this text (the common case, without JSON)."""
    return hashlib.blake2b(_USER + text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def prompt_key(rcp: Any) -> bytes | None:
    """16-byte digest of the prompt's (role, text) pairs; None when responses_create_params has no input."""
    msgs = messages(rcp)
    if msgs is None:
        return None
    if len(msgs) == 1 and msgs[0][0] == "user" and isinstance(msgs[0][1], str):
        return key_of_text(msgs[0][1])
    blob = json.dumps(msgs, separators=(",", ":"), ensure_ascii=False)
    return hashlib.blake2b(blob.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def prompt_id(rcp: Any) -> str | None:
    """prompt_key as text ('prompt:' + 32 hex digits), for tables and reports."""
    key = prompt_key(rcp)
    return None if key is None else "prompt:" + key.hex()
