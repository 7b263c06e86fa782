"""Golden cases from NeMo Gym 0.7.0's own `mcqa` server code, for the wire-parity tests of `serve` and the
component (tests/test_serve_wire.py). Run it with a Python that has NeMo Gym 0.7.0 installed with its
dependencies (`make gym-venv`; NeMo Gym needs Python 3.13):

    .venv-gym/bin/python tests/gym_golden.py            # rewrites data/golden/nemo_gym_*.jsonl

Each case is built here (seeded, so a rerun writes the same bytes), then answered by NeMo Gym's code in this
process, as its server answers it:

- nemo_gym_aggregate_cases.jsonl: `{"name", "request", "status", "answer"}`: POST /aggregate_metrics with
  `request` through the mcqa server's `aggregate_metrics` (its `compute_metrics`, `get_key_metrics`, NeMo
  Gym's RewardProfiler); `answer` is the AggregateMetrics document as JSON (status 200), or, for a request it
  raises on, the body its exception middleware answers with (status 500: the exception's repr as a JSON
  string).
- nemo_gym_request_cases.jsonl: `{"name", "route", "body", "status", "loc"}`: whether the request model of
  the route (`MCQAVerifyRequest` for /verify, `ResourcesCloseSessionRequest` for /close_session, the seed
  union for /seed_session) accepts the body (200) or refuses it (422, and the location of its first error).

    .venv-gym/bin/python tests/gym_golden.py --aggregate ROLLOUTS.json   # one answer, on stdout

    .venv-gym/bin/python tests/gym_golden.py --sample-rollouts     # data/sample/rollouts.jsonl, NeMo Gym's form

`--sample-rollouts` rewrites the sample rollouts as NeMo Gym's rollout collection writes them (its agent's
verify response model dumped, then the task and rollout indices and the agent), keeping each one's prompt,
response text, recorded reward and answers: recorded as if by an earlier grader, so `rescore` has changes to
find.

`--aggregate` strips the rollouts as NeMo Gym's rollout collection does before it posts them (no
`responses_create_params`, `response` reduced to its usage) and prints `{"status", "answer"}`.

The 95% intervals in the answers come from scipy's t quantile, whose digits changed between scipy releases:
tests/test_serve_wire.py compares them exactly only with the scipy these were written with (GOLDEN_SCIPY).

NeMo Gym's code is imported, never copied.
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
import sys
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "data" / "golden"
TASK, ROLLOUT = "_ng_task_index", "_ng_rollout_index"


def _response(text: str, usage: dict[str, Any] | None) -> dict[str, Any]:
    doc: dict[str, Any] = {"id": "r", "created_at": 1.0, "model": "m", "object": "response", "output": []}
    if usage is not None:
        doc["usage"] = usage
    return doc


def _usage(rng: random.Random) -> dict[str, Any]:
    i, o = rng.randint(20, 400), rng.randint(1, 900)
    return {
        "input_tokens": i,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": o,
        "output_tokens_details": {"reasoning_tokens": rng.randint(0, o)},
        "total_tokens": i + o,
    }


def stripped(
    task: int | None, rollout: int | None, reward: Any, answer: Any, rng: random.Random, **extra: Any
) -> dict:
    """A verify response as NeMo Gym's rollout collection posts it to /aggregate_metrics (heavy fields
    stripped, `response` kept with its usage only)."""
    doc: dict[str, Any] = {
        "reward": reward,
        "mask_sample": False,
        "failure_kind": None,
        "failure_reason": None,
        "expected_answer": "B",
        "extracted_answer": answer,
    }
    if task is not None:
        doc[TASK] = task
    if rollout is not None:
        doc[ROLLOUT] = rollout
    doc["agent_ref"] = {"name": "mcqa_simple_agent"}
    doc["_ng_environment_server"] = "mcqa_environment_server"
    doc["response"] = {"usage": _usage(rng)}
    doc.update(extra)
    return doc


def grid(
    rng: random.Random, tasks: int, repeats: int, *, p: float = 0.5, shuffle: bool = True, **kw: Any
) -> list:
    out = []
    for t in range(tasks):
        for r in range(repeats):
            right = rng.random() < p
            answer = "B" if right else rng.choice(["A", "C", "D", None, None])
            out.append(stripped(t, r, 1.0 if right else 0.0, answer, rng, **kw))
    if shuffle:
        rng.shuffle(out)
    return out


def aggregate_cases() -> list[tuple[str, list[dict[str, Any]]]]:
    rng = random.Random(20261207)
    cases: list[tuple[str, list[dict[str, Any]]]] = [("empty", [])]
    cases.append(("one_rollout", grid(rng, 1, 1)))
    cases.append(("five_tasks_one_repeat", grid(rng, 5, 1)))
    cases.append(("eight_tasks_four_repeats", grid(rng, 8, 4)))
    cases.append(("eight_tasks_four_repeats_in_order", grid(rng, 8, 4, shuffle=False)))
    cases.append(("twenty_tasks_sixteen_repeats", grid(rng, 20, 16, p=0.3)))
    cases.append(("fifty_tasks_ten_repeats", grid(rng, 50, 10, p=0.7)))
    cases.append(("one_task_forty_repeats", grid(rng, 1, 40, p=0.2)))
    cases.append(("all_right", grid(rng, 6, 3, p=1.0)))
    cases.append(("all_wrong", grid(rng, 6, 3, p=0.0)))
    uneven = [r for r in grid(rng, 9, 5) if not (r[TASK] % 3 == 1 and r[ROLLOUT] >= 2)]
    cases.append(("uneven_repeats", uneven))
    gaps = [r for r in grid(rng, 7, 4) if not (r[TASK] == 3 and r[ROLLOUT] == 0)]
    cases.append(("a_repeat_missing_one_task", gaps))
    masked = grid(rng, 8, 4)
    for r in masked[::5]:
        r.update(reward=0.0, mask_sample=True, failure_kind="mcqa:contract_mismatch", extracted_answer=None)
    cases.append(("some_masked", masked))
    whole = grid(rng, 4, 3)
    for r in whole:
        if r[TASK] == 2:
            r.update(reward=0.0, mask_sample=True)
    cases.append(("a_task_fully_masked", whole))
    allmasked = grid(rng, 3, 2)
    for r in allmasked:
        r.update(mask_sample=True)
    cases.append(("all_masked", allmasked))
    dup = grid(rng, 3, 2)
    dup.append(copy.deepcopy(dup[0]))
    cases.append(("duplicate_task_rollout", dup))
    dupmask = grid(rng, 3, 2)
    twin = copy.deepcopy(dupmask[1])
    twin["mask_sample"] = True
    dupmask.append(twin)
    cases.append(("duplicate_one_masked", dupmask))
    both = grid(rng, 2, 2)
    t1, t2 = copy.deepcopy(both[0]), copy.deepcopy(both[0])
    t1["mask_sample"] = t2["mask_sample"] = True
    both[0] = t1
    both.append(t2)
    cases.append(("duplicate_both_masked", both))
    cases.append(("no_indices_one", [stripped(None, None, 1.0, "B", rng)]))
    cases.append(
        ("no_indices_two", [stripped(None, None, 1.0, "B", rng), stripped(None, None, 0.0, "A", rng)])
    )
    cases.append(("no_rollout_index", [stripped(t, None, float(t % 2), "B", rng) for t in range(4)]))
    nousage = grid(rng, 5, 3)
    for r in nousage:
        del r["response"]
    cases.append(("no_usage", nousage))
    partial = grid(rng, 6, 3)
    for r in partial[::4]:
        del r["response"]
    cases.append(("usage_on_some", partial))
    extra = grid(rng, 5, 3)
    for i, r in enumerate(extra):
        r["latency_s"] = round(rng.uniform(0.1, 3.0), 3)
        r["judged"] = i % 2 == 0
        if i % 3 == 0:
            r["score_bonus"] = rng.randint(0, 5)
    cases.append(("extra_numeric_fields", extra))
    partial_rewards = grid(rng, 5, 4)
    for r in partial_rewards[::3]:
        r["reward"] = 0.5
    cases.append(("non_binary_rewards", partial_rewards))
    ints = grid(rng, 4, 3)
    for r in ints:
        r["reward"] = int(r["reward"])
    cases.append(("integer_rewards", ints))
    bools = grid(rng, 4, 3)
    for r in bools:
        r["reward"] = bool(r["reward"])
    cases.append(("boolean_rewards", bools))
    noreward = grid(rng, 2, 2)
    del noreward[1]["reward"]
    cases.append(("a_response_without_reward", noreward))
    perf = grid(rng, 4, 3)
    for r in perf[:-2]:
        r["ng_perf"] = {
            "prompt_tokens": rng.randint(10, 99),
            "completion_tokens": rng.randint(10, 999),
            "num_turns": rng.randint(1, 4),
            "total_latency_ms": round(rng.uniform(10, 5000), 2),
            "token_observability_coverage": rng.choice([0.0, 1.0]),
        }
    cases.append(("ng_perf", perf))
    incomplete = grid(rng, 3, 2)
    incomplete[0]["response"]["incomplete_details"] = {"reason": "max_output_tokens"}
    cases.append(("incomplete_details", incomplete))
    many = grid(rng, 120, 3, p=0.4)
    cases.append(("hundred_twenty_tasks_three_repeats", many))
    return cases


def request_cases() -> list[tuple[str, str, Any]]:
    row = json.loads(
        (REPO / "tests" / "fixtures" / "nemo_gym_0.7.0" / "example.jsonl").read_text().splitlines()[0]
    )
    resp = {
        "id": "resp_1",
        "created_at": 1700000000,
        "model": "m",
        "object": "response",
        "output": [
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "\\boxed{B}", "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    good = {**row, "response": resp}
    out: list[tuple[str, str, Any]] = [("verify_ok", "/verify", good)]

    def var(name: str, fn: Any) -> None:
        body = copy.deepcopy(good)
        fn(body)
        out.append((name, "/verify", body))

    for field in (
        "created_at",
        "parallel_tool_calls",
        "tool_choice",
        "tools",
        "id",
        "model",
        "object",
        "output",
    ):
        var(f"response_without_{field}", lambda b, f=field: b["response"].pop(f))
    var("response_missing", lambda b: b.pop("response"))
    var("response_not_object", lambda b: b.update(response="text"))
    var("rcp_missing", lambda b: b.pop("responses_create_params"))
    var("rcp_without_input", lambda b: b["responses_create_params"].pop("input"))
    var("rcp_unknown_key", lambda b: b["responses_create_params"].update(frobnicate=1))
    var("rcp_input_string", lambda b: b["responses_create_params"].update(input="hello"))
    var("rcp_temperature_string", lambda b: b["responses_create_params"].update(temperature="hot"))
    var("grading_mode_null", lambda b: b.update(grading_mode=None))
    var("grading_mode_absent", lambda b: b.pop("grading_mode", None))
    var("grading_mode_md", lambda b: b.update(grading_mode="lenient_answer_colon_md"))
    var("grading_mode_robust", lambda b: b.update(grading_mode="robust"))
    var("grading_mode_lenient_boxed", lambda b: b.update(grading_mode="lenient_boxed"))
    var("grading_mode_number", lambda b: b.update(grading_mode=3))
    var("uuid_integer", lambda b: b.update(uuid=123))
    var("uuid_null", lambda b: b.update(uuid=None))
    var("expected_answer_integer", lambda b: b.update(expected_answer=2))
    var("expected_answer_null", lambda b: b.update(expected_answer=None))
    var("options_not_list", lambda b: b.update(options={"A": "x"}))
    var("options_value_number", lambda b: b.update(options=[{"A": 1}]))
    var("options_value_null", lambda b: b.update(options=[{"A": None}, {"B": "x"}]))
    var("options_null", lambda b: b.update(options=None))
    var("metadata_list", lambda b: b.update(metadata=[1]))
    var("metadata_with_stamp", lambda b: b.update(metadata={"mcqa_prep": {"contract": "sha256:" + "0" * 64}}))
    var("template_metadata_string", lambda b: b.update(template_metadata="x"))
    var("unknown_top_level_field", lambda b: b.update(reward_profiles=[{"a": 1}], extra_field="kept?"))
    var("rollout_id_string", lambda b: b.update(_ng_rollout_id="0-1"))
    var("rollout_id_integer", lambda b: b.update(_ng_rollout_id=5))
    var("task_index_present", lambda b: b.update(_ng_task_index=3, _ng_rollout_index=1))
    var("output_item_unknown_type", lambda b: b["response"]["output"].append({"type": "frobnicate"}))
    var(
        "output_text_without_annotations",
        lambda b: b["response"]["output"][0]["content"][0].pop("annotations"),
    )
    var("created_at_string", lambda b: b["response"].update(created_at="yesterday"))
    var(
        "usage_present",
        lambda b: b["response"].update(
            usage={
                "input_tokens": 3,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 2,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 5,
            }
        ),
    )
    var("big_integer_in_metadata", lambda b: b["responses_create_params"].update(metadata={"k": "v"}))
    out.append(("body_array", "/verify", [good]))
    out.append(("seed_legacy", "/seed_session", {"responses_create_params": {"input": "hi"}}))
    out.append(("seed_empty", "/seed_session", {}))
    out.append(("seed_array", "/seed_session", []))
    episode = {"rollout_id": "0-0", "attempt": 0}
    task = {"taskset": "mcqa:train", "task_id": "7"}
    out.append(
        (
            "seed_environment",
            "/seed_session",
            {"resources_session_id": "s1", "episode_id": episode, "task_id": task, "task_data": {"a": 1}},
        )
    )
    out.append(("close_ok", "/close_session", {"resources_session_id": "s1", "episode_id": episode}))
    out.append(("close_without_episode", "/close_session", {"resources_session_id": "s1"}))
    out.append(
        ("close_extra_field", "/close_session", {"resources_session_id": "s1", "episode_id": episode, "x": 1})
    )
    out.append(
        ("close_session_id_number", "/close_session", {"resources_session_id": 5, "episode_id": episode})
    )
    out.append(
        (
            "close_bad_rollout_id",
            "/close_session",
            {"resources_session_id": "s1", "episode_id": {"rollout_id": "-x"}},
        )
    )
    out.append(("close_empty", "/close_session", {}))
    return out


def _answer_aggregate(server: Any, request_model: Any, responses: list[dict[str, Any]]) -> tuple[int, Any]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            doc = asyncio.run(
                server.aggregate_metrics(request_model(verify_responses=copy.deepcopy(responses)))
            )
    except Exception as exc:  # noqa: BLE001 - NeMo Gym's exception middleware answers 500 with repr(exc)
        return 500, repr(exc)
    return 200, json.loads(doc.model_dump_json())


def _validate(route: str, body: Any, models: dict[str, Any]) -> tuple[int, Any]:
    from pydantic import TypeAdapter, ValidationError

    try:
        TypeAdapter(models[route]).validate_python(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        return 422, ["body", *first["loc"]]
    return 200, None


def strip(rollout: dict[str, Any]) -> dict[str, Any]:
    """A rollout as NeMo Gym's rollout collection sends it to /aggregate_metrics."""
    heavy = (
        "response",
        "responses_create_params",
        "ng_agent_observations",
        "ng_model_call_capture",
        "ng_trajectory",
    )
    entry = {k: v for k, v in rollout.items() if k not in heavy}
    response = rollout.get("response") or {}
    kept = {k: response[k] for k in ("usage", "incomplete_details") if response.get(k) is not None}
    if kept:
        entry["response"] = kept
    return entry


def answer_one(path: str) -> None:
    from nemo_gym.config_types import AggregateMetricsRequest
    from resources_servers.mcqa.app import MCQAResourcesServer

    rollouts = json.loads(Path(path).read_text(encoding="utf-8"))
    status, answer = _answer_aggregate(
        object.__new__(MCQAResourcesServer), AggregateMetricsRequest, [strip(r) for r in rollouts]
    )
    print(json.dumps({"status": status, "answer": answer}))


def sample_rollouts() -> None:
    from responses_api_agents.simple_agent.app import SimpleAgentVerifyResponse

    path = REPO / "data" / "sample" / "rollouts.jsonl"
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    out = []
    for i, old in enumerate(lines):
        prompt = old["responses_create_params"]["input"][-1]["content"]
        text = "".join(
            c.get("text", "") for item in old["response"]["output"] for c in item.get("content", [])
        )
        response = {
            "created_at": 1_767_225_600,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            **{k: v for k, v in old["response"].items() if k not in ("usage",)},
            "usage": {
                "input_tokens": len(prompt.split()), "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": len(text.split()), "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": len(prompt.split()) + len(text.split()),
            },
        }  # fmt: skip
        doc = {
            k: old[k] for k in ("responses_create_params", "reward", "expected_answer", "extracted_answer")
        }
        written = SimpleAgentVerifyResponse.model_validate({**doc, "response": response}).model_dump(
            mode="json"
        )
        written.update(
            {
                "_ng_task_index": i,
                "_ng_rollout_index": 0,
                "agent_ref": {"name": "mcqa_simple_agent"},
                "_ng_environment_server": "mcqa_environment_server",
                "_ng_result_type": "legacy_agent",
            }
        )
        out.append(written)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out), encoding="utf-8")
    print(f"wrote {path}: {len(out)} rollouts", file=sys.stderr)


def main() -> None:
    if sys.argv[1:2] == ["--sample-rollouts"]:
        sample_rollouts()
        return
    if sys.argv[1:2] == ["--aggregate"]:
        answer_one(sys.argv[2])
        return
    from nemo_gym.base_resources_server import (
        BaseSeedSessionRequest,
        ResourcesCloseSessionRequest,
        ResourcesSeedSessionRequest,
    )
    from nemo_gym.config_types import AggregateMetricsRequest
    from resources_servers.mcqa.app import MCQAResourcesServer, MCQAVerifyRequest

    server = object.__new__(MCQAResourcesServer)
    with (GOLDEN / "nemo_gym_aggregate_cases.jsonl").open("w", encoding="utf-8") as f:
        for name, responses in aggregate_cases():
            status, answer = _answer_aggregate(server, AggregateMetricsRequest, responses)
            doc = {
                "name": name,
                "request": {"verify_responses": responses},
                "status": status,
                "answer": answer,
            }
            f.write(json.dumps(doc, sort_keys=False) + "\n")
    models = {
        "/verify": MCQAVerifyRequest,
        "/close_session": ResourcesCloseSessionRequest,
        "/seed_session": ResourcesSeedSessionRequest | BaseSeedSessionRequest,
    }
    with (GOLDEN / "nemo_gym_request_cases.jsonl").open("w", encoding="utf-8") as f:
        for name, route, body in request_cases():
            status, loc = _validate(route, body, models)
            f.write(
                json.dumps({"name": name, "route": route, "body": body, "status": status, "loc": loc}) + "\n"
            )
    print(f"wrote {GOLDEN}/nemo_gym_aggregate_cases.jsonl and nemo_gym_request_cases.jsonl", file=sys.stderr)


if __name__ == "__main__":
    main()
