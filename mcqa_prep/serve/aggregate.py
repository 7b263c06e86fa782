"""`POST /aggregate_metrics`: NeMo Gym's aggregate document for a batch of verify responses, plus the
contract accounting of this server.

The body is NeMo Gym's `AggregateMetricsRequest` (`{"verify_responses": [...]}`, each a stripped verify
response with `_ng_task_index`, `reward`, ...). The answer has NeMo Gym's `AggregateMetrics` shape
(`group_level_metrics`, `agent_metrics`, `key_metrics`, `repeat_level_metrics`) and its headline names:
`mean/reward` (and max, min, median, std), `pass@{k}/accuracy` (combinatorial pass@k, percent),
`pass@1[avg-of-{k}]/accuracy` and `.../no_answer`, `num_repeats`, and `coverage/*` when samples are masked
(quality figures come from the unmasked samples only, as in NeMo Gym). It is not NeMo Gym's whole reward
profile (no majority@k, no per-field statistics of other numbers). `agent_metrics` adds `mcqa_prep/...`:
how many of the responses were graded under the served contract, unstamped, mismatched (by reason), and
by grading status, recomputed from the responses themselves (their echoed stamp and `status`).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from typing import Any

from ..fields import reward_of
from .contract import MISMATCH, MISMATCH_KIND, UNSTAMPED, ServedContract

TASK = "_ng_task_index"
ROLLOUT = "_ng_rollout_index"


class BadAggregateRequest(ValueError):
    """The body is not an AggregateMetricsRequest (the message names the field)."""


def _responses(body: Any) -> list[dict[str, Any]]:
    if type(body) is not dict or type(body.get("verify_responses")) is not list:
        raise BadAggregateRequest("verify_responses: an array of verify responses is required")
    out = body["verify_responses"]
    for i, r in enumerate(out):
        if type(r) is not dict:
            raise BadAggregateRequest(f"verify_responses[{i}]: a verify response is an object")
        if reward_of(r.get("reward")) is None:
            raise BadAggregateRequest(f"verify_responses[{i}].reward: a finite number is required")
    return out


def _pass_at(tasks: list[list[dict[str, Any]]], max_k: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in range(1, max_k + 1):
        for name, score in (("accuracy", lambda r: 1 if r["reward"] == 1 else 0), ("no_answer", _no_answer)):
            passes, avgs = [], []
            for rollouts in tasks:
                vals = [score(r) for r in rollouts]
                if k <= len(vals):
                    wrong = vals.count(0)
                    passes.append(1.0 if wrong < k else 1.0 - math.comb(wrong, k) / math.comb(len(vals), k))
                head = vals[:k]
                avgs.append(sum(head) / len(head))
            if passes:
                out[f"pass@{k}/{name}"] = 100.0 * sum(passes) / len(passes)
            out[f"pass@1[avg-of-{k}]/{name}"] = 100.0 * sum(avgs) / len(avgs)
    return out


def _no_answer(r: dict[str, Any]) -> int:
    return 1 if r.get("extracted_answer") is None else 0


def _stats(values: list[float], name: str) -> dict[str, float]:
    return {
        f"mean/{name}": statistics.fmean(values),
        f"max/{name}": max(values),
        f"min/{name}": min(values),
        f"median/{name}": statistics.median(values),
        f"std/{name}": statistics.pstdev(values),
    }


def contract_counts(responses: list[dict[str, Any]], served: ServedContract) -> dict[str, int]:
    """How the responses stand against the served contract, and their grading statuses."""
    counts: Counter[str] = Counter()
    for r in responses:
        if r.get("failure_kind") == MISMATCH_KIND:
            counts["mcqa_prep/mismatched"] += 1
            continue
        state = served.check(r)
        if state.state == MISMATCH:
            counts["mcqa_prep/mismatched"] += 1
            counts[f"mcqa_prep/mismatched/{state.reason}"] += 1
            continue
        counts["mcqa_prep/graded"] += 1
        if state.state == UNSTAMPED:
            counts["mcqa_prep/unstamped"] += 1
        status = r.get("status")
        if isinstance(status, str):
            counts[f"mcqa_prep/status/{status}"] += 1
    return dict(sorted(counts.items()))


def aggregate(body: Any, served: ServedContract) -> dict[str, Any]:
    """The AggregateMetrics document (BadAggregateRequest when the body is not a request)."""
    responses = _responses(body)
    empty: dict[str, Any] = {
        "group_level_metrics": [],
        "agent_metrics": {},
        "key_metrics": {},
        "repeat_level_metrics": [],
    }
    if not responses:
        return empty
    scored = [r for r in responses if not r.get("mask_sample")]
    masked = len(responses) - len(scored)
    coverage: dict[str, Any] = {}
    if masked:
        tasks_all = {_task(r) for r in responses}
        tasks_measured = {_task(r) for r in scored}
        coverage = {
            "coverage/measured_rollouts": len(scored),
            "coverage/masked_rollouts": masked,
            "coverage/measured_tasks": len(tasks_measured),
            "coverage/fully_masked_tasks": len(tasks_all - tasks_measured),
        }
    counts = contract_counts(responses, served)
    repeats = len({r.get(ROLLOUT, 0) for r in responses})
    if not scored:
        agent = {**coverage, **counts, "num_repeats": repeats}
        return {**empty, "agent_metrics": agent, "key_metrics": dict(coverage)}
    by_task: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for r in scored:
        by_task[_task(r)].append(r)
    order = sorted(by_task, key=_sort_key)
    groups = []
    for t in order:
        rewards = [float(r["reward"]) for r in by_task[t]]
        groups.append({TASK: t, **_stats(rewards, "reward"), "num_rollouts": len(rewards)})
    tasks = [by_task[t] for t in order]
    max_k = max(len(v) for v in tasks)
    agent = {**_stats([float(r["reward"]) for r in scored], "reward"), **_pass_at(tasks, max_k)}
    agent.update(coverage)
    agent.update(counts)
    agent["num_repeats"] = repeats
    key = {
        "mean/reward": agent["mean/reward"],
        f"pass@1[avg-of-{max_k}]/accuracy": agent[f"pass@1[avg-of-{max_k}]/accuracy"],
    }
    key[f"pass@{max_k}/accuracy"] = agent[f"pass@{max_k}/accuracy"]
    key.update(coverage)
    return {**empty, "group_level_metrics": groups, "agent_metrics": agent, "key_metrics": key}


def _task(r: dict[str, Any]) -> Any:
    t = r.get(TASK, 0)
    return t if isinstance(t, (int, str)) and not isinstance(t, bool) else repr(t)


def _sort_key(t: Any) -> tuple[int, Any]:
    return (0, t) if isinstance(t, int) else (1, str(t))
