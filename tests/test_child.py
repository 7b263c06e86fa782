"""The one bounded helper process (mcqa_prep/child.py) behind the regex helper and the template sandbox:
JSON on the pipe (no class crosses), a deadline on every answer, killed and started again after a failure."""

from __future__ import annotations

import pickle
import time

import pytest

from mcqa_prep.child import BoundedChild, ChildFailed, encode

ECHO = "while True:\n    send(read())\n"


def test_messages_cross_as_json_any_text_included():
    child = BoundedChild(ECHO)
    try:
        assert child.start() is True and child.start() is False
        message = {"text": "B \udcff \u2028 \x00", "n": 2**70, "list": [1.5, None, True]}
        assert child.ask(message, 10.0) == message
        with pytest.raises(TypeError):
            encode({"b": b"bytes"})  # no class crosses: a value JSON has no form for is refused ...
        answer = child.send_and_receive(encode({"b": b"\x00"}, default=str), time.monotonic() + 10)
        assert answer == {"b": "b'\\x00'"}  # ... or crosses as the text the caller chose
    finally:
        child.close()


def test_an_answer_that_is_not_json_kills_the_child():
    """A child that answers with a pickle (a class could ride on it) is a failed child, never unpickled."""
    frame = pickle.dumps(object())
    code = f"read()\n_out.write(len({frame!r}).to_bytes(8, 'little') + {frame!r})\n_out.flush()\nread()\n"
    child = BoundedChild(code)
    child.start()
    with pytest.raises(ChildFailed):
        child.ask("go", 10.0)
    assert child.proc is None


def test_past_the_deadline_the_child_is_killed_and_started_again():
    child = BoundedChild("import time\nwhile True:\n    m = read()\n    time.sleep(m)\n    send(m)\n")
    try:
        child.start()
        first = child.proc
        with pytest.raises(TimeoutError):
            child.ask(30, 0.3)
        assert child.proc is None and first.poll() is not None
        assert child.start() is True and child.ask(0, 10.0) == 0
    finally:
        child.close()
