"""`mcqa-prep serve`: the real server in a subprocess on 127.0.0.1, spoken to over HTTP.

The wire format (NeMo Gym 0.7.0's routes and response fields plus the `mcqa_prep` record), the contract per row
(match, unstamped, mismatch masked or rejected, the fields named), the counters, the start-up refusals, the
workers and SIGTERM's drain."""

from __future__ import annotations

import copy
import json
import signal
import subprocess
import sys
import time

import pytest
from prep_helpers import make_row, write_rows
from response_helpers import fake_response
from serve_helpers import prepared_rows, serving, start

from mcqa_prep.policy import GradingPolicy
from mcqa_prep.prepare import prepare


@pytest.fixture(scope="module")
def preps(tmp_path_factory):
    d = tmp_path_factory.mktemp("serve")
    src = write_rows(d / "train.jsonl", [make_row(i) for i in range(6)] + [make_row(6, template=True)])
    default = prepare([src], d / "default")
    fao = prepare([src], d / "fao", GradingPolicy(final_answer_only=True))
    robust = prepare([src], d / "robust", GradingPolicy(grading_mode_override="robust"))
    return {"src": src, "default": d / "default", "fao": d / "fao", "robust": d / "robust", "ids": {
        "default": default.contract_id, "fao": fao.contract_id, "robust": robust.contract_id}}  # fmt: skip


@pytest.fixture(scope="module")
def server(preps):
    with serving("--prepared", preps["default"]) as s:
        yield s


def request_for(row: dict, text: str | None = None) -> dict:
    return {
        **copy.deepcopy(row),
        "response": fake_response(text or f"\\boxed{{{row['expected_answer']}}}", model="m"),
    }


NEMO_GYM_FIELDS = [
    "responses_create_params", "response", "reward", "mask_sample", "failure_kind", "failure_reason",
    "expected_answer", "extracted_answer",
]  # fmt: skip


def test_a_stamped_row_is_graded_with_nemo_gyms_fields_plus_the_record(server, preps):
    row = prepared_rows(preps["default"])[0]
    req = {**request_for(row), "_ng_rollout_id": "r-1", "extra_field": [1, 2]}
    status, doc = server.post("/verify", req)
    assert status == 200
    assert doc["reward"] == 1.0 and doc["extracted_answer"] == row["expected_answer"]
    assert doc["expected_answer"] == row["expected_answer"]
    assert doc["mask_sample"] is False and doc["failure_kind"] is None and doc["failure_reason"] is None
    # the stock server's eight fields in its order, then this server's record; the row is not echoed
    assert list(doc) == [*NEMO_GYM_FIELDS, "mcqa_prep"]
    rec = doc["mcqa_prep"]
    assert rec["status"] == "ok" and rec["rule"] and rec["mask_reason"] is None
    assert rec["contract"] == {
        "state": "match",
        "id": preps["ids"]["default"],
        "row": preps["ids"]["default"],
        "reason": None,
    }
    assert (
        doc["response"] == req["response"]
        and doc["responses_create_params"] == row["responses_create_params"]
    )
    # NeMo Gym's observability prefix reaches the same route
    status, again = server.post("/ng-rollout/0-3/verify", req)
    assert status == 200 and again == doc


def test_a_wrong_answer_and_an_unstamped_row(server, preps):
    row = prepared_rows(preps["default"])[1]
    wrong = "B" if row["expected_answer"] != "B" else "C"
    status, doc = server.post("/verify", request_for(row, f"\\boxed{{{wrong}}}"))
    assert (
        status == 200 and doc["reward"] == 0.0 and doc["extracted_answer"] == wrong and not doc["mask_sample"]
    )
    bare = {k: v for k, v in row.items() if k != "metadata"}
    status, doc = server.post("/verify", request_for(bare))
    assert status == 200 and doc["reward"] == 1.0 and doc["mask_sample"] is False


def test_a_row_of_another_contract_is_masked_naming_every_field(server, preps):
    row = prepared_rows(preps["fao"])[0]
    status, doc = server.post("/verify", request_for(row))
    assert status == 200
    assert doc["reward"] == 0.0 and doc["mask_sample"] is True and doc["extracted_answer"] is None
    assert doc["failure_kind"] == "mcqa:contract_mismatch"
    rec = doc["mcqa_prep"]
    assert rec["status"] == "contract_mismatch" and rec["mask_reason"] == "contract_mismatch"
    assert rec["contract"]["state"] == "mismatch" and rec["contract"]["row"] == preps["ids"]["fao"]
    assert rec["contract"]["reason"] == "other_contract"
    reason = doc["failure_reason"]
    assert preps["ids"]["fao"] in reason and preps["ids"]["default"] in reason
    assert "policy.final_answer_only: true != false" in reason and "policy.component.scope" in reason


def test_an_unknown_contract_and_a_bad_stamp_say_how_to_see_the_fields(server, preps):
    row = prepared_rows(preps["default"])[0]
    row["metadata"]["mcqa_prep"]["contract"] = "sha256:" + "0" * 64
    status, doc = server.post("/verify", request_for(row))
    assert doc["mask_sample"] is True and "sha256:" + "0" * 64 in doc["failure_reason"]
    assert "manifest.json" in doc["failure_reason"] and "GET /contract" in doc["failure_reason"]
    row["metadata"]["mcqa_prep"] = "not a stamp"
    status, doc = server.post("/verify", request_for(row))
    assert status == 200 and doc["mask_sample"] is True and "not a contract id" in doc["failure_reason"]


def test_contract_healthz_reverify_mode_and_sessions(server, preps):
    status, doc = server.get("/contract")
    assert status == 200 and doc["contract_id"] == preps["ids"]["default"]
    assert doc["contract"] == GradingPolicy().contract() and doc["sources"] == [str(preps["default"])]
    health = {"status": "ok", "ok": True, "contract_id": preps["ids"]["default"], "workers": 1}
    for path in ("/", "/health", "/healthz", "/readyz", "/livez", "/ng-rollout/7-0/healthz"):
        assert server.get(path) == (200, health), path
    assert server.get("/reverify_mode") == (200, "stateless")
    assert server.post("/seed_session", make_row(0)) == (200, {})
    episode, task = {"rollout_id": "0-1", "attempt": 0}, {"taskset": "mcqa:train", "task_id": "3"}
    seed = {"resources_session_id": "s1", "episode_id": episode, "task_id": task, "task_data": {}}
    assert server.post("/seed_session", seed)[1] == {
        "resources_session_id": "s1", "resources_tools": None, "sandbox_access": None
    }  # fmt: skip
    assert server.post("/seed_session", {**seed, "episode_id": "e"}) == (200, {})  # not an environment's seed
    close = {"resources_session_id": "s1", "episode_id": episode}
    assert server.post("/close_session", close) == (200, {"resources_session_id": "s1"})
    # NeMo Gym's close request model: both fields, nothing else
    for bad in ({}, {"resources_session_id": "s1"}, {**close, "x": 1}, {**close, "episode_id": "e"}, [close]):
        assert server.post("/close_session", bad)[0] == 422, bad


def test_metrics_count_graded_mismatched_unstamped_and_invalid_rows_by_reason(preps):
    with serving("--prepared", preps["default"]) as s:
        rows = prepared_rows(preps["default"])
        s.post("/verify", request_for(rows[0]))
        s.post("/verify", request_for({k: v for k, v in rows[1].items() if k != "metadata"}))
        s.post("/verify", request_for(prepared_rows(preps["fao"])[0]))
        assert s.post("/verify", {**request_for(rows[2]), "grading_mode": "no-such-mode"})[0] == 422
        assert s.post("/verify", {**request_for(rows[2]), "options": "not options"})[0] == 422
        s.post("/verify", b"{not json")
        s.post("/verify", {"no": "response"})
        status, m = s.get("/metrics?format=json")
        assert status == 200
        assert m["verify_requests"] == 7 and m["graded"] == 2 and m["unstamped"] == 1 and m["mismatched"] == 1
        assert m["mismatched_by_reason"] == {"other_contract": 1} and m["masked"] == 1
        assert m["invalid_by_reason"] == {"not_json": 1, "no_response": 1, "bad_field": 2}
        assert m["graded_by_status"]["ok"] == 2
        status, text = s.get("/metrics")
        assert 'mcqa_prep_mismatched_total{contract="' in text and 'reason="other_contract"} 1' in text
        # /aggregate_metrics: NeMo Gym's shape, the contract accounting recomputed from the responses
        answers = [s.post("/verify", request_for(r))[1] for r in rows[:3]]
        answers.append(s.post("/verify", request_for(prepared_rows(preps["fao"])[0]))[1])
        for i, a in enumerate(answers):  # what NeMo Gym's rollout collection adds to each result
            a["_ng_task_index"], a["_ng_rollout_index"] = i, 0
        status, agg = s.post("/aggregate_metrics", {"verify_responses": answers})
        assert status == 200 and set(agg) >= {"group_level_metrics", "agent_metrics", "key_metrics"}
        a = agg["agent_metrics"]
        assert (
            a["mean/reward"] == 1.0 and a["coverage/masked_rollouts"] == 1 and a["mcqa_prep/mismatched"] == 1
        )
        assert a["mcqa_prep/graded"] == 3 and agg["key_metrics"]["mean/reward"] == 1.0
        assert s.post("/aggregate_metrics", {"verify_responses": {"reward": 1}})[0] == 422
        # NeMo Gym refuses a (task, rollout) pair given twice: its 500 and message
        status, body = s.post("/aggregate_metrics", {"verify_responses": [answers[0], answers[0]]})
        assert (status, body) == (
            500,
            "ValueError('Duplicate materialized input row for rollout key (0, 0)')",
        )


def test_reject_and_require_stamp(preps):
    with serving("--prepared", preps["default"], "--on-mismatch", "reject", "--require-stamp") as s:
        row = prepared_rows(preps["fao"])[0]
        status, doc = s.post("/verify", request_for(row))
        assert status == 422
        d = doc["detail"]
        assert d["failure_kind"] == "mcqa:contract_mismatch" and d["row_contract"] == preps["ids"]["fao"]
        assert {"field": "policy.final_answer_only", "recorded": True, "requested": False} in d["differences"]
        bare = {k: v for k, v in prepared_rows(preps["default"])[0].items() if k != "metadata"}
        status, doc = s.post("/verify", request_for(bare))
        assert status == 422 and doc["detail"]["reason"] == "stamp_required"


def _serve_fails(*args) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "mcqa_prep", "serve", "--port", "0", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, timeout=120)


def test_start_up_refusals_are_one_line_exit_1_before_listening(preps, tmp_path):
    p = _serve_fails("--prepared", preps["default"], "--final-answer-only")
    assert p.returncode == 1 and b"listening" not in p.stdout and len(p.stderr.strip().splitlines()) == 1
    assert b"policy.final_answer_only: false != true" in p.stderr and b"drop the policy options" in p.stderr
    p = _serve_fails("--prepared", preps["default"], "--prepared", preps["fao"])
    assert p.returncode == 1 and b"final_answer_only" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    bad = tmp_path / "tampered"
    subprocess.run(["cp", "-r", str(preps["default"]), str(bad)], check=True)
    shard = next(bad.glob("train-*.jsonl"))
    shard.write_bytes(shard.read_bytes().replace(b'"A"', b'"B"', 1))
    p = _serve_fails("--prepared", bad)
    assert p.returncode == 1 and b"changed after preparation" in p.stderr and b"Traceback" not in p.stderr


def test_a_busy_port_is_refused_in_one_line(server):
    p = subprocess.run(
        [sys.executable, "-m", "mcqa_prep", "serve", "--port", str(server.port)],
        capture_output=True,
        timeout=120,
    )
    assert p.returncode == 1 and b"cannot listen" in p.stderr and b"--port 0" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_policy_flags_serve_that_policy(preps):
    with serving("--grading-mode-override", "robust") as s:
        assert s.get("/contract")[1]["contract_id"] == preps["ids"]["robust"]
        row = prepared_rows(preps["robust"])[0]
        status, doc = s.post("/verify", request_for(row, f"The answer is ({row['expected_answer']})."))
        assert status == 200 and doc["reward"] == 1.0 and doc["mcqa_prep"]["status"] == "ok"


def test_sigterm_drains_the_request_in_flight_and_exits_0(preps):
    """A request whose custom regex runs into its time bound is in flight when SIGTERM arrives: it is answered
    (graded regex_timeout), then the server exits 0."""
    s = start("--prepared", preps["default"], "--regex-timeout", "2", "--grade-timeout", "120")
    try:
        row = {k: v for k, v in prepared_rows(preps["default"])[0].items() if k != "metadata"}  # (unstamped:
        # a prepared row with another regex would be an edited row)
        slow = {**request_for(row, "a" * 40 + "!"), "template_metadata": {"output_regex": "(a|aa)+$"}}
        c = s.client()
        c.send("POST", "/verify", slow)
        time.sleep(
            0.3
        )  # the request is being graded (not a timing claim: the answer is checked, not the time)
        s.proc.send_signal(signal.SIGTERM)
        status, doc, _ = c.receive()
        assert status == 200 and doc["mcqa_prep"]["status"] == "regex_timeout" and doc["reward"] == 0.0
        assert s.proc.wait(60) == 0
    finally:
        if s.proc.poll() is None:
            s.proc.kill()


def test_workers_share_the_port_the_counters_and_a_killed_worker_is_replaced(preps):
    import os

    with serving("--prepared", preps["default"], "--workers", "2") as s:
        row = prepared_rows(preps["default"])[0]
        clients = [s.client() for _ in range(6)]
        for c in clients:
            assert c.request("POST", "/verify", request_for(row))[1]["reward"] == 1.0
        m = s.get("/metrics?format=json")[1]
        assert m["graded"] == 6  # summed over both workers, whichever served each connection
        children = [int(x) for x in open(f"/proc/{s.proc.pid}/task/{s.proc.pid}/children").read().split()]
        assert len(children) == 2
        os.kill(children[0], signal.SIGKILL)
        for _ in range(200):
            now = [int(x) for x in open(f"/proc/{s.proc.pid}/task/{s.proc.pid}/children").read().split()]
            if len(now) == 2 and children[0] not in now:
                break
            time.sleep(0.05)
        assert len(now) == 2 and children[0] not in now
        for _ in range(4):
            assert s.post("/verify", request_for(row))[1]["reward"] == 1.0
        assert s.get("/metrics?format=json")[1]["graded"] >= 10
        for c in clients:
            c.sock.close()


def test_text_output_names_the_contract_and_the_url(preps):
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcqa_prep", "serve", "--port", "0", "--prepared", str(preps["default"])],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        first = proc.stdout.readline().decode()
        second = proc.stdout.readline().decode()
        assert first.startswith(f"serving contract {preps['ids']['default']}")
        assert (
            second.startswith("listening on http://127.0.0.1:") and "1 worker(s); on mismatch: mask" in second
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    assert json.loads(json.dumps(first))  # text, one line each
