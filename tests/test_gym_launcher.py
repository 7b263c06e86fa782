"""The component as NeMo Gym 0.7.0 starts it, next to NeMo Gym's own mcqa server, with NeMo Gym's own launcher.

`make gym-check` runs this (it is skipped by `make test`): NeMo Gym 0.7.0 installed with its dependencies on
the newest Python 3.13 here (`make gym-venv`: .venv-gym; `--ignore-requires-python` because NeMo Gym asks for
3.13.14 and pyenv has an earlier 3.13 patch release: only the patch level is short), a replay policy server on
loopback (tests/replay_policy.py), and three `gym env start` runs (tests/gym_launch.py):

1. stock: `--config resources_servers/mcqa/configs/mcqa.yaml` (+ NeMo Gym's openai_model policy config), the
   built-in server;
2. component: the same command with the component's root on NEMO_GYM_EXTRA_ROOTS: NeMo Gym resolves the same
   relative config to the component's (licenses and all, accepted unchanged) and runs its app.py;
3. user config: NeMo Gym's own built-in config file by its absolute path (a config a user already has, that
   names `mcqa` and knows nothing of mcqa-prep) with the component on NEMO_GYM_EXTRA_ROOTS.

`ng_collect_rollouts` collects the same rows in each (observability on: the verify calls go through NeMo Gym's
`/ng-rollout/<id>/` prefix), the policy answering from the same recording; rewards, extracted answers, masks and
the aggregate metrics NeMo Gym writes are compared with the stock server's. The summary of the last run is
written to bench/results/gym_check.json (MCQA_PREP_GYM_RESULT), and committed.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from gym_launch import MCQA_CONFIG, MODEL_CONFIG, GymEnv, Replay, site_packages, stock_aggregate

REPO = Path(__file__).resolve().parents[1]
VENV = os.environ.get("MCQA_PREP_GYM_VENV")
pytestmark = [
    pytest.mark.skipif(
        not VENV,
        reason="runs in `make gym-check`: NeMo Gym 0.7.0 with its dependencies on Python 3.13 in its own venv "
        "(.venv-gym, built by `make gym-venv`); `make test` does not build it",
    ),
    # a hang guard, as the suite's 300 s: three `gym env start` runs and their collections, in the first
    # test's set-up, take minutes on a busy 2-core machine
    pytest.mark.timeout(2400),
]
REPEATS = 4
TAMPERED = "sha256:" + "0" * 64


def _texts(row: dict[str, Any]) -> list[str]:
    """The recorded answers to one question, rollout 0..3: right, wrong, right in the row's own template's
    form (or a bare `Answer:`), no answer."""
    gold = row["expected_answer"]
    wrong = next(k for opt in row["options"] for k in opt if k != gold)
    regex = (row.get("template_metadata") or {}).get("output_regex")
    styled = f"Answer: \\boxed{{{gold}}}" if regex else f"Answer: {gold}"
    if isinstance(regex, list):
        styled = f"It must be that.\nANSWER IS {gold}"
    return [f"Reasoning...\n\\boxed{{{gold}}}", f"Hmm.\n\\boxed{{{wrong}}}", styled, "I cannot tell."]


def _post(url: str, body: Any) -> tuple[int, Any]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def _get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, None


def _wire(url: str, request: dict[str, Any]) -> dict[str, Any]:
    """What a client sees of a server's wire: health routes, the observability prefix, a refusal."""
    no_created_at = json.loads(json.dumps(request))
    del no_created_at["response"]["created_at"]
    return {
        "health": {p: _get(url + p)[0] for p in ("/", "/health", "/healthz", "/readyz", "/livez")},
        "prefixed_verify": _post(url + "/ng-rollout/9-0/verify", request)[0],
        "response_without_created_at": _post(url + "/verify", no_created_at)[0],
        "grading_mode_null": _post(url + "/verify", {**request, "grading_mode": None})[0],
        "contract": _get(url + "/contract")[0],
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    venv = Path(VENV).resolve()
    work = tmp_path_factory.mktemp("gym")
    mcqa_prep = str(venv / "bin" / "mcqa-prep")
    subprocess.run(
        [mcqa_prep, "prepare", str(REPO / "data/sample/train.jsonl"), "-o", str(work / "prepared")],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [mcqa_prep, "gym-component", str(work / "plugins"), "--prepared", str(work / "prepared"), "--license", "Apache 2.0"],
        check=True, capture_output=True,
    )  # fmt: skip
    sample = [json.loads(x) for x in (REPO / "data/sample/train.jsonl").read_text().splitlines()]
    prepared = [
        json.loads(x) for x in next((work / "prepared").glob("train-*.jsonl")).read_text().splitlines()
    ]
    tampered = json.loads(json.dumps(prepared[0]))
    tampered["metadata"]["mcqa_prep"]["contract"] = TAMPERED
    (work / "clean.jsonl").write_text("".join(json.dumps(r) + "\n" for r in sample + prepared))
    (work / "tampered.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [*prepared[:3], tampered]))
    from replay_policy import last_user_text, prompt_key

    recording = {
        prompt_key(last_user_text(r["responses_create_params"])): _texts(r) for r in sample + prepared
    }
    replay = Replay(venv / "bin" / "python", recording, work)
    request = {**prepared[0], "response": {
        "id": "r", "created_at": 1.0, "model": "m", "object": "response", "parallel_tool_calls": True,
        "tool_choice": "auto", "tools": [], "output": [{"id": "m", "type": "message", "role": "assistant",
        "status": "completed", "content": [{"type": "output_text", "text": "\\boxed{B}", "annotations": []}]}]}}  # fmt: skip
    out: dict[str, Any] = {"work": work, "venv": venv}
    plugins = work / "plugins"
    builtin = site_packages(venv) / MCQA_CONFIG
    try:
        for name, configs, root in (
            ("stock", [MCQA_CONFIG, MODEL_CONFIG], None),
            ("component", [MCQA_CONFIG, MODEL_CONFIG], plugins),
            ("user_config", [str(builtin), MODEL_CONFIG], plugins),
        ):
            with GymEnv(venv, work, name).start(configs, replay.url, extra_root=root) as g:
                run = {"start_seconds": round(g.start_seconds, 1), "command": g.command, "log": g.log}
                run["tampered"] = g.collect(work / "tampered.jsonl", work / f"{name}_tampered.jsonl", 2)
                if name != "user_config":
                    run["clean"] = g.collect(work / "clean.jsonl", work / f"{name}_clean.jsonl", REPEATS)
                run["wire"] = _wire(g.url("mcqa"), request)
                out[name] = run
    finally:
        replay.stop()
    yield out
    _write_result(out)


def _by_key(rollouts: list[dict[str, Any]]) -> dict[tuple[int, int], dict[str, Any]]:
    return {(r["_ng_task_index"], r["_ng_rollout_index"]): r for r in rollouts}


def _ours(agent_metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in agent_metrics.items() if not k.startswith("mcqa_prep/")}


def test_gym_env_start_runs_the_components_own_server(runs):
    for name in ("component", "user_config"):
        log = runs[name]["log"].read_text(errors="replace")
        assert "mcqa-prep: serving contract sha256:" in log, name  # app.py ran mcqa-prep's server
        assert runs[name]["wire"]["contract"] == 200  # GET /contract: only mcqa-prep's server has it
    assert runs["stock"]["wire"]["contract"] == 404


def test_rewards_answers_and_masks_equal_the_stock_servers(runs):
    stock, comp = _by_key(runs["stock"]["clean"]["rollouts"]), _by_key(runs["component"]["clean"]["rollouts"])
    assert stock.keys() == comp.keys() and len(stock) == 16 * REPEATS
    for k in stock:
        for field in ("reward", "extracted_answer", "expected_answer", "mask_sample", "failure_kind"):
            assert comp[k][field] == stock[k][field], (k, field)
        assert comp[k]["mcqa_prep"]["contract"]["state"] in ("match", "unstamped")
    assert {r["reward"] for r in stock.values()} == {0.0, 1.0}


def test_aggregate_metrics_equal_the_stock_servers(runs):
    (stock,), (comp,) = runs["stock"]["clean"]["aggregate"], runs["component"]["clean"]["aggregate"]
    for part in ("key_metrics", "group_level_metrics", "repeat_level_metrics"):
        assert comp[part] == stock[part], part
    assert _ours(comp["agent_metrics"]) == stock["agent_metrics"]
    assert comp["agent_metrics"]["mcqa_prep/graded"] == 16 * REPEATS


def test_a_row_edited_after_prepare_is_masked_and_counted(runs):
    for name in ("component", "user_config"):
        rollouts = runs[name]["tampered"]["rollouts"]
        masked = [r for r in rollouts if r["mask_sample"]]
        assert len(masked) == 2 and all(r["failure_kind"] == "mcqa:contract_mismatch" for r in masked)
        assert all(r["mcqa_prep"]["contract"]["row"] == TAMPERED for r in masked)
        (agg,) = runs[name]["tampered"]["aggregate"]
        assert agg["agent_metrics"]["coverage/masked_rollouts"] == 2
        assert agg["agent_metrics"]["mcqa_prep/mismatched"] == 2
        # NeMo Gym's own aggregation of the very rollouts the component produced, in the order its rollout
        # collection posts them (sorted by task, then rollout)
        ordered = sorted(rollouts, key=lambda r: (r["_ng_task_index"], r["_ng_rollout_index"]))
        expected = stock_aggregate(runs["venv"], ordered, runs["work"])
        assert expected["status"] == 200
        for part in ("key_metrics", "group_level_metrics", "repeat_level_metrics"):
            assert agg[part] == expected["answer"][part], (name, part)
        assert _ours(agg["agent_metrics"]) == expected["answer"]["agent_metrics"]
    # the stock server grades the edited row (it never reads the stamp)
    assert not any(r["mask_sample"] for r in runs["stock"]["tampered"]["rollouts"])
    same = _by_key(runs["stock"]["tampered"]["rollouts"])
    for k, r in _by_key(runs["component"]["tampered"]["rollouts"]).items():
        if not r["mask_sample"]:
            assert r["reward"] == same[k]["reward"], k


def test_the_wire_is_the_stock_servers(runs):
    stock, comp = runs["stock"]["wire"], runs["component"]["wire"]
    assert (
        stock["health"]
        == comp["health"]
        == {p: 200 for p in ("/", "/health", "/healthz", "/readyz", "/livez")}
    )
    for check in ("prefixed_verify", "response_without_created_at", "grading_mode_null"):
        assert comp[check] == stock[check], check
    assert comp["prefixed_verify"] == 200 and comp["response_without_created_at"] == 422


def _write_result(runs: dict[str, Any]) -> None:
    path = os.environ.get("MCQA_PREP_GYM_RESULT")
    if not path or not all(k in runs for k in ("stock", "component", "user_config")):
        return
    venv = runs["venv"]

    def ver(code: str) -> str:
        return subprocess.run(
            [str(venv / "bin/python"), "-c", code], capture_output=True, text=True
        ).stdout.strip()

    stock, comp = runs["stock"], runs["component"]
    stock_by = _by_key(stock["clean"]["rollouts"])

    def shown(cmd: list[str]) -> str:  # the command a user types: no temporary paths
        text = " ".join(cmd).replace(str(venv / "bin") + "/", "").replace(str(runs["work"]), "WORK")
        return re.sub(
            r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", re.sub(r"(head_server\.port=)\d+", r"\1PORT", text)
        )

    checks = {
        "rollouts_collected": len(comp["clean"]["rollouts"]) + len(comp["tampered"]["rollouts"]),
        "rewards_equal_stock": sum(
            r["reward"] == stock_by[k]["reward"] for k, r in _by_key(comp["clean"]["rollouts"]).items()
        ),
        "rollouts_compared": len(stock["clean"]["rollouts"]),
        "aggregate_equal_stock": _ours(comp["clean"]["aggregate"][0]["agent_metrics"])
        == stock["clean"]["aggregate"][0]["agent_metrics"],
        "masked_edited_rows": sum(r["mask_sample"] for r in comp["tampered"]["rollouts"]),
        "user_config_masked_edited_rows": sum(
            r["mask_sample"] for r in runs["user_config"]["tampered"]["rollouts"]
        ),
    }
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    doc = {
        "bench": "gym_check",
        "title": "NeMo Gym 0.7.0's launcher: the component and the stock mcqa server (make gym-check)",
        "figures": {},
        "checks": checks,
        "inputs": {
            "python": ver("import sys; print(sys.version.split()[0])"),
            "nemo_gym": ver("import importlib.metadata as m; print(m.version('nemo-gym'))"),
            "start_seconds": {n: runs[n]["start_seconds"] for n in ("stock", "component", "user_config")},
            "commands": {n: shown(runs[n]["command"]) for n in ("stock", "component", "user_config")},
            "component_env": "NEMO_GYM_EXTRA_ROOTS=WORK/plugins RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0",
            "collect": shown(comp["clean"]["command"]),
            "transcript": comp["clean"]["transcript"],
        },
        "meta": {
            "commit": commit, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(), "load_before": list(os.getloadavg()), "load_after": list(os.getloadavg()),
            "scale": 1, "rounds": 1, "command": "make gym-check",
        },
    }  # fmt: skip
    Path(path).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
