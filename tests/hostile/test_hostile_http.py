"""Hostile HTTP requests against a real `mcqa-prep serve` (a subprocess on 127.0.0.1): each is answered with a
4xx and a JSON error, or graded (an `invalid` status among them), never a 5xx but NeMo Gym's own 500 for a
(task, rollout) pair twice in /aggregate_metrics; the worker survives every one (the server answers /healthz
after each); a catastrophic custom regex in one request does not hold up another request (the other's answer
comes first), nor does a robust grading of a long run of spaces hold up /healthz; integers beyond 64 bits come
back exact; the workers of a killed `serve` die with it and free its port; and `gym-component` faces hostile
arguments and inputs."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prep_helpers import make_row, write_rows  # noqa: E402
from response_helpers import fake_response  # noqa: E402
from serve_helpers import serving  # noqa: E402

from mcqa_prep.prepare import prepare  # noqa: E402

from .kit import FAILURE, USAGE, check, run  # noqa: E402

ROW = {**make_row(1), "grading_mode": "strict_single_letter_boxed"}
GOOD = {**ROW, "response": fake_response("\\boxed{B}", model="m")}


def _with(**fields):
    return json.dumps({**copy.deepcopy(GOOD), **fields}).encode()


def _deep(n: int) -> bytes:
    return b'{"response": ' + b"[" * n + b"]" * n + b"}"


# id -> (method, path, body bytes, extra headers): what a hostile or broken client sends
REQUESTS = {
    "malformed-json": ("POST", "/verify", b'{"options": [', {}),
    "empty-body": ("POST", "/verify", b"", {}),
    "json-array": ("POST", "/verify", b"[1, 2]", {}),
    "json-string": ("POST", "/verify", b'"verify me"', {}),
    "json-null": ("POST", "/verify", b"null", {}),
    "no-response": ("POST", "/verify", json.dumps(ROW).encode(), {}),
    "response-is-a-string": ("POST", "/verify", _with(response="\\boxed{B}"), {}),
    "response-without-output": ("POST", "/verify", _with(response={"id": "x"}), {}),
    "output-not-a-list": ("POST", "/verify", _with(response={"output": "\\boxed{B}"}), {}),
    "options-a-string": ("POST", "/verify", _with(options="A,B,C"), {}),
    "options-with-numbers": ("POST", "/verify", _with(options=[{"A": 1}, {"B": 2}]), {}),
    "options-missing": (
        "POST",
        "/verify",
        json.dumps({k: v for k, v in GOOD.items() if k != "options"}).encode(),
        {},
    ),
    "gold-a-number": ("POST", "/verify", _with(expected_answer=2), {}),
    "gold-missing": (
        "POST",
        "/verify",
        json.dumps({k: v for k, v in GOOD.items() if k != "expected_answer"}).encode(),
        {},
    ),
    "mode-unknown": ("POST", "/verify", _with(grading_mode="nope"), {}),
    "mode-a-list": ("POST", "/verify", _with(grading_mode=["robust"]), {}),
    "template-metadata-a-list": ("POST", "/verify", _with(template_metadata=[1]), {}),
    "output-regex-a-number": (
        "POST",
        "/verify",
        _with(template_metadata={"output_regex": 5}, response=fake_response("B", model="m")),
        {},
    ),
    "output-regex-invalid": (
        "POST",
        "/verify",
        _with(template_metadata={"output_regex": "(["}, response=fake_response("B", model="m")),
        {},
    ),
    "output-regex-catastrophic": (
        "POST",
        "/verify",
        _with(
            template_metadata={"output_regex": "(a|aa)+$"}, response=fake_response("a" * 40 + "!", model="m")
        ),
        {},
    ),
    "metadata-a-string": ("POST", "/verify", _with(metadata="stamp"), {}),
    "stamp-a-number": ("POST", "/verify", _with(metadata={"mcqa_prep": {"contract": 7}}), {}),
    "thousands-of-options": (
        "POST",
        "/verify",
        _with(options=[{f"K{i}": f"option {i}"} for i in range(5000)]),
        {},
    ),
    "ten-megabytes": (
        "POST",
        "/verify",
        _with(response=fake_response("x" * (10 * 1024 * 1024), model="m")),
        {},
    ),
    "declared-twenty-megabytes": ("POST", "/verify", b"{}", {"Content-Length": str(20 * 1024 * 1024)}),
    "twenty-megabytes": (
        "POST",
        "/verify",
        _with(response=fake_response("x" * (20 * 1024 * 1024), model="m")),
        {},
    ),
    "not-utf8": ("POST", "/verify", _with(uuid="@@").replace(b"@@", b"\xff\xfe"), {}),
    "lone-surrogate-escape": ("POST", "/verify", _with(uuid="@@").replace(b"@@", b"\\ud800"), {}),
    "nan": ("POST", "/verify", _with(uuid="@@").replace(b'"@@"', b"NaN"), {}),
    "huge-integer": ("POST", "/verify", _with(uuid="@@").replace(b'"@@"', b"1" + b"0" * 40), {}),
    "nested-100k": ("POST", "/verify", _deep(100_000), {}),
    "nested-500": ("POST", "/verify", _deep(500), {}),
    "unknown-route": ("POST", "/nope", b"{}", {}),
    "get-verify": ("GET", "/verify", b"", {}),
    "seed-not-json": ("POST", "/seed_session", b"\x00\x01", {}),
    "seed-array": ("POST", "/seed_session", b"[]", {}),
    "close-without-id": ("POST", "/close_session", b"{}", {}),
    "aggregate-not-a-list": ("POST", "/aggregate_metrics", b'{"verify_responses": 3}', {}),
    "aggregate-bad-reward": ("POST", "/aggregate_metrics", b'{"verify_responses": [{"reward": "1"}]}', {}),
    "aggregate-nan-reward": ("POST", "/aggregate_metrics", b'{"verify_responses": [{"reward": NaN}]}', {}),
    "aggregate-pair-twice": (
        "POST",
        "/aggregate_metrics",
        json.dumps(
            {"verify_responses": [{"reward": 1.0, "_ng_task_index": 0, "_ng_rollout_index": 0}] * 2}
        ).encode(),
        {},
    ),
    "aggregate-no-reward": (
        "POST",
        "/aggregate_metrics",
        b'{"verify_responses": [{"_ng_task_index": 0}]}',
        {},
    ),
    "close-episode-a-string": (
        "POST",
        "/close_session",
        b'{"resources_session_id": "s", "episode_id": "e"}',
        {},
    ),
    "prefixed-route": ("POST", "/ng-rollout/1-2/verify", json.dumps(GOOD).encode(), {}),
    "prefix-bad-id": ("POST", "/ng-rollout/-x/verify", json.dumps(GOOD).encode(), {}),
}
NEMO_GYM_500 = {"aggregate-pair-twice"}  # NeMo Gym's own answer (its exception middleware), kept for parity
GRADED_INVALID = {
    "output-regex-a-number",
    "output-regex-invalid",
    "output-regex-catastrophic",
}

# gym-component: arguments and inputs a user gets wrong (each exit 2 or 1, one line, nothing written)
COMPONENT_CASES = {
    "missing-prepared": (["--prepared", "{missing}"], USAGE),
    "bad-mode": (["--grading-mode-override", "nope"], USAGE),
    "bad-on-mismatch": (["--on-mismatch", "maybe"], USAGE),
    "bad-regex-timeout": (["--regex-timeout", "0"], USAGE),
    "prepared-not-a-preparation": (["--prepared", "{plain}"], FAILURE),
    "dir-is-a-file": (["--prepared", "{prep}"], USAGE),
    "license-not-nemo-gyms": (["--prepared", "{preparation}", "--license", "WTFPL"], USAGE),
    "no-license-for-local-inputs": (["--prepared", "{preparation}"], USAGE),
}

COVERS = {"serve": len(REQUESTS) + 4, "gym-component": len(COMPONENT_CASES) + 1}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serving("--regex-timeout", "1") as s:
        yield s


@pytest.mark.parametrize("case", sorted(REQUESTS))
def test_hostile_request(server, case):
    method, path, body, headers = REQUESTS[case]
    with server.client() as c:
        try:
            c.send(method, path, body, headers)
            status, doc, head = c.receive()
        except (ConnectionError, OSError):
            status, doc, head = None, None, {}  # the server may close a connection whose body it refused
    if status is not None:
        assert "json" in head.get("content-type", ""), (case, head)
        if case in NEMO_GYM_500:
            assert status == 500 and doc.startswith("ValueError('Duplicate"), (case, status, doc)
        elif status >= 400:
            assert status < 500, (case, status, doc)
            assert "detail" in doc, (case, doc)
        elif path.endswith("/verify"):
            status_ = doc["mcqa_prep"]["status"]
            assert doc["reward"] in (0.0, 1.0) and isinstance(status_, str)
            if case in GRADED_INVALID:
                assert doc["failure_kind"] == f"mcqa:{status_}" and status_ in (
                    "invalid_row",
                    "invalid_regex",
                    "regex_timeout",
                ), doc
    else:
        assert case.endswith("megabytes"), case
    assert server.get("/healthz")[0] == 200  # the worker is alive
    m = server.get("/metrics?format=json")[1]
    assert m["grader_errors"] == 0


def test_a_catastrophic_regex_does_not_hold_up_another_request(server):
    """The catastrophic request is sent first; the plain request sent after it is answered first (graded off
    the event loop, the regex under its bound): an order, not a timing threshold."""
    slow, fast = server.client(), server.client()
    slow.send("POST", "/verify", REQUESTS["output-regex-catastrophic"][2])
    fast.send("POST", "/verify", GOOD)
    status, doc, _ = fast.receive()
    assert status == 200 and doc["reward"] == 1.0
    slow.sock.setblocking(False)
    try:
        pending = slow.sock.recv(1)
    except BlockingIOError:
        pending = b""
    slow.sock.setblocking(True)
    assert pending == b"", "the catastrophic request was answered before the plain one"
    status, doc, _ = slow.receive()
    assert status == 200 and doc["mcqa_prep"]["status"] == "regex_timeout" and doc["mask_sample"] is False
    slow.sock.close()
    fast.sock.close()


def test_a_long_robust_grading_holds_up_neither_the_worker_nor_its_health(server):
    """`Answer:` and 80,000 spaces graded robust (once seconds of grading): sent first, /healthz sent after it
    is answered while it is still pending, or it was answered first (graded fast); either way the verify is
    answered: graded, or masked at the per-request bound (mcqa:grading_timeout)."""
    slow, health = server.client(), server.client()
    slow.send(
        "POST",
        "/verify",
        _with(grading_mode="robust", response=fake_response("Answer:" + " " * 80_000 + "x", model="m")),
    )
    health.send("GET", "/healthz")
    status, doc, _ = health.receive()
    assert status == 200 and doc["status"] == "ok"
    status, doc, _ = slow.receive()
    assert status == 200 and doc["reward"] == 0.0
    assert doc["mcqa_prep"]["status"] in ("grading_timeout", "no_answer", "ok"), doc["mcqa_prep"]
    assert (doc["failure_kind"] == "mcqa:grading_timeout") == doc["mask_sample"]
    slow.sock.close()
    health.sock.close()


def test_integers_beyond_64_bits_come_back_exact(server):
    big = 123456789012345678901234567890
    body = {**GOOD, "response": {**fake_response("\\boxed{B}", model="m"), "x_big": big, "x_neg": -(2**80)}}
    status, doc = server.post("/verify", body)
    assert status == 200 and doc["response"]["x_big"] == big and doc["response"]["x_neg"] == -(2**80)


def test_the_workers_of_a_killed_serve_die_with_it_and_free_the_port():
    """SIGKILL to `serve --workers 2` (no chance to stop its workers): each worker stops (the kernel's
    parent-death signal, and the pipe from the parent at end of file), nothing answers, the port is free."""
    import os
    import signal
    import socket
    import time

    from serve_helpers import start

    s = start("--workers", "2")
    children = [int(x) for x in open(f"/proc/{s.proc.pid}/task/{s.proc.pid}/children").read().split()]
    assert len(children) == 2
    os.kill(s.proc.pid, signal.SIGKILL)
    s.proc.wait(60)
    deadline = time.monotonic() + 60  # a hang guard; the drain takes up to 10 s
    alive = children
    while alive and time.monotonic() < deadline:
        alive = [
            p
            for p in alive
            if os.path.exists(f"/proc/{p}") and "Z" not in open(f"/proc/{p}/stat").read().split()[2]
        ]
        time.sleep(0.1)
    assert alive == [], f"workers outlived their parent: {alive}"
    with pytest.raises(OSError):
        socket.create_connection((s.host, s.port), timeout=5).close()
    with socket.socket() as again:  # the next start gets the port
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind((s.host, s.port))


@pytest.mark.parametrize("case", sorted(COMPONENT_CASES))
def test_gym_component_refuses_bad_arguments(tmp_path, case):
    args, code = COMPONENT_CASES[case]
    (tmp_path / "plain").mkdir()
    write_rows(tmp_path / "plain" / "train.jsonl", [make_row(0)])
    (tmp_path / "prep").write_text("a file")
    places = {"missing": tmp_path / "nope", "plain": tmp_path / "plain", "prep": tmp_path / "prep"}
    if "{preparation}" in args:
        places["preparation"] = tmp_path / "preparation"
        prepare([tmp_path / "plain" / "train.jsonl"], places["preparation"])
    target = tmp_path / "component"
    argv = ["gym-component", target, *(a.format(**places) for a in args), "--format", "json"]
    res = run(argv)
    doc = check(res, code)
    assert doc["error"]["exit_code"] == code
    assert not target.exists()


def test_gym_component_will_not_replace_without_overwrite(tmp_path):
    src = write_rows(tmp_path / "train.jsonl", [make_row(i) for i in range(3)])
    prepare([src], tmp_path / "p")
    target = tmp_path / "c"
    check(run(["gym-component", target, "--prepared", tmp_path / "p", "--license", "MIT"]), 0)
    before = (target / "resources_servers/mcqa/app.py").read_bytes()
    doc = check(run(["gym-component", target, "--format", "json"]), USAGE)
    assert doc["error"]["reason"] == "component_exists" and "--overwrite" in doc["error"]["hint"]
    assert (target / "resources_servers/mcqa/app.py").read_bytes() == before
    check(run(["gym-component", target, "--overwrite"]), 0)
