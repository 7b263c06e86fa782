"""`POST /aggregate_metrics`: the AggregateMetrics document NeMo Gym 0.7.0's `mcqa` server answers, computed as
it computes it, plus the contract accounting of this server.

The body is NeMo Gym's `AggregateMetricsRequest` (`{"verify_responses": [...]}`: each a stripped verify
response with `_ng_task_index`, `_ng_rollout_index`, `reward`, ...). The answer is NeMo Gym's, field for field
and digit for digit (data/golden/nemo_gym_aggregate_cases.jsonl holds its own answers; the tests compare):

- masked samples (`mask_sample`) leave the quality figures and are reported as `coverage/*`;
- `group_level_metrics`: per task, mean/max/min/median/std of every numeric field of the responses (reward,
  the token counts of `response.usage`, any other number), the rollouts' infos and counts;
- `agent_metrics`: the same over the run, then per-repeat statistics summarised across repeats
  (`*_across_repeats/...` with 95% t intervals), then the mcqa server's pass@k, majority@k,
  pass@1[avg-of-k] (accuracy and no_answer), the per-run averages and their spread, and `num_repeats`;
- `key_metrics`: the mcqa server's headline selection; `repeat_level_metrics` (per rollout index, when a
  task has more than one); `perf_summary` from the responses' `ng_perf`;
- a (task, rollout) pair given twice is refused as NeMo Gym refuses it: status 500, its message.

One deliberate difference: an unmasked response without a numeric `reward` is refused with 422 naming it
(NeMo Gym's aggregation fails on it with an unhandled KeyError or TypeError: a 500).

`agent_metrics` adds this server's own counts (`mcqa_prep/...`: graded, unstamped, mismatched by reason, by
grading status, masked for a changed row...), read from each response's `mcqa_prep` record; they are never in
`key_metrics`. The arithmetic is ng_stats.py (pandas' reductions, Python's sum) and ng_passk.py (linear in
place of NeMo Gym's loops over k).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from typing import Any

from ..fields import reward_of
from .ng_passk import pass_majority
from .ng_stats import describe, py_sum, quantile, series_stats, t_interval

TASK = "_ng_task_index"
ROLLOUT = "_ng_rollout_index"
MASK = "mask_sample"
RECORD = "mcqa_prep"  # this server's record in a verify response


class BadAggregateRequest(ValueError):
    """The body is not an AggregateMetricsRequest (HTTP 422; the message names the field)."""


class AggregateFailed(Exception):
    """NeMo Gym's aggregation raises on this request (HTTP 500 with `body`, the exception's repr, as its
    exception middleware answers)."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(repr(exc))
        self.body = repr(exc)


def _responses(body: Any) -> list[dict[str, Any]]:
    if type(body) is not dict or type(body.get("verify_responses")) is not list:
        raise BadAggregateRequest("verify_responses: an array of verify responses is required")
    out = body["verify_responses"]
    for i, r in enumerate(out):
        if type(r) is not dict:
            raise BadAggregateRequest(f"verify_responses[{i}]: a verify response is an object")
        reward = r.get("reward")
        if not r.get(MASK) and type(reward) is not bool and reward_of(reward) is None:
            # NeMo Gym fails on it with a 500 (KeyError, TypeError): a request error, refused as one here
            # (a boolean is one NeMo Gym reads, as 0 or 1)
            raise BadAggregateRequest(
                f"verify_responses[{i}].reward: a number is required (the sample is not masked)"
            )
    return out


def aggregate(body: Any) -> dict[str, Any]:
    """The AggregateMetrics document (BadAggregateRequest: 422; AggregateFailed: 500)."""
    responses = _responses(body)
    try:
        doc = _aggregate(responses)
    except (BadAggregateRequest, AggregateFailed):
        raise
    except Exception as exc:  # noqa: BLE001 - what NeMo Gym raises on the same request, as a 500
        raise AggregateFailed(exc) from None
    if responses:
        doc["agent_metrics"].update(record_counts(responses))
    return doc


def _aggregate(responses: list[dict[str, Any]]) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "group_level_metrics": [],
        "agent_metrics": {},
        "key_metrics": {},
        "perf_summary": None,
        "repeat_level_metrics": [],
    }
    if not responses:
        return doc
    scored = [r for r in responses if not r.get(MASK)]
    coverage = _coverage(responses, scored)
    doc["perf_summary"] = perf_summary(
        [r["ng_perf"] for r in responses if isinstance(r.get("ng_perf"), dict)], len(responses)
    )
    if not scored:
        doc["agent_metrics"], doc["key_metrics"] = dict(coverage), dict(coverage)
        return doc
    pairs = _aligned(responses, scored)
    groups, agent, repeats = _profile(pairs)
    doc["group_level_metrics"] = groups
    agent.update(coverage)
    agent.update(pass_majority(_by_task(scored)))
    agent["num_repeats"] = len({r.get(ROLLOUT, 0) for r in responses})
    key = key_metrics(agent)
    key.update(coverage)
    doc["agent_metrics"], doc["key_metrics"], doc["repeat_level_metrics"] = agent, key, repeats
    return doc


def _coverage(responses: list[dict[str, Any]], scored: list[dict[str, Any]]) -> dict[str, Any]:
    masked = len(responses) - len(scored)
    if not masked:
        return {}
    tasks_all = {r.get(TASK, 0) for r in responses}
    tasks_measured = {r.get(TASK, 0) for r in scored}
    return {
        "coverage/measured_rollouts": len(scored),
        "coverage/masked_rollouts": masked,
        "coverage/measured_tasks": len(tasks_measured),
        "coverage/fully_masked_tasks": len(tasks_all - tasks_measured),
    }


def _key(r: dict[str, Any]) -> tuple[Any, Any]:
    return r.get(TASK, 0), r.get(ROLLOUT, 0)


def _aligned(responses: list[dict[str, Any]], scored: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The measured responses in (task, rollout) order, `mask_sample` dropped, after NeMo Gym's checks: no
    (task, rollout) twice among the measured rows or results, no result without its row."""
    masked_keys = {_key(r) for r in responses if r.get(MASK)}
    rows = [k for k in map(_key, responses) if k not in masked_keys]
    seen: set[tuple[Any, Any]] = set()
    for name, keys in (("materialized input", rows), ("result", [_key(r) for r in scored])):
        seen = set()
        for k in keys:
            if k in seen:
                raise AggregateFailed(ValueError(f"Duplicate {name} row for rollout key {k}"))
            seen.add(k)
    extra = sorted(seen - set(rows))
    if extra:
        raise AggregateFailed(
            ValueError(
                "Rollout results contain rows with no matching materialized input rows. "
                f"Found {len(extra)} extra rollout rows. Extra rollout keys: {extra[:10]}"
            )
        )
    by_key = {_key(r): r for r in scored}
    return [{k: v for k, v in by_key[key].items() if k != MASK} for key in sorted(by_key)]


def _numbers(result: dict[str, Any]) -> dict[str, Any]:
    """The numeric fields NeMo Gym's profiler reads from one result (and its response's usage)."""
    usage = (result.get("response") or {}).get("usage") or {}
    out: dict[str, Any] = {}
    for k, v in (result | usage).items():
        if k.startswith("_"):
            continue
        if isinstance(v, bool):
            out[k] = int(v)
        elif isinstance(v, (int, float)):
            out[k] = v
    return out


def _info(result: dict[str, Any]) -> dict[str, Any]:
    task, rollout = result[TASK] if TASK in result else 0, result[ROLLOUT] if ROLLOUT in result else 0
    info: dict[str, Any] = {"rollout_id": f"{task}:{rollout}", TASK: task, ROLLOUT: rollout}
    if "reward" in result:
        info["reward"] = result.get("reward")
    usage = (result.get("response") or {}).get("usage") or {}
    for source, skip in ((usage, ()), (result, ("reward", "response"))):
        for k, v in source.items():
            if source is result and (k.startswith("_") or k in skip):
                continue
            if isinstance(v, bool):
                info[k] = int(v)
            elif isinstance(v, (int, float)):
                info[k] = v
    return info


def _profile(
    pairs: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    """NeMo Gym's RewardProfiler over the measured results (one agent): group, agent and repeat levels."""
    records = [_numbers(r) for r in pairs]
    keys = [_key(r) for r in pairs]
    columns: dict[str, None] = {}
    for rec in records:
        columns.update(dict.fromkeys(rec))
    names = list(columns)
    int_cols = {n for n in names if all(type(rec.get(n)) is int for rec in records)}
    by_task: dict[Any, list[int]] = defaultdict(list)
    for i, (task, _) in enumerate(keys):
        by_task[task].append(i)
    groups = []
    for task in sorted(by_task):
        idx = by_task[task]
        stats = describe({n: [records[i].get(n) for i in idx] for n in names}, int_cols)
        infos = sorted((_info(pairs[i]) for i in idx), key=lambda r: r[ROLLOUT])
        n = len(idx)
        groups.append(
            {
                TASK: task,
                **stats,
                "sample": {"agent_ref": {"name": "agent"}},
                "num_rollouts": n,
                "expected_num_rollouts": n,
                "missing_num_rollouts": 0,
                "reward_profile_completion_pct": 100.0,
                "rollout_infos": infos,
            }
        )
    agent = describe({n: [rec.get(n) for rec in records] for n in names}, int_cols)
    repeats = _repeat_level(records, keys, names, int_cols)
    agent.update(_across_repeats(repeats))
    return groups, agent, repeats


def _repeat_level(
    records: list[dict[str, Any]], keys: list[tuple[Any, Any]], names: list[str], int_cols: set[str]
) -> list[dict[str, Any]]:
    """Per rollout index (when there is more than one), every numeric column over the tasks."""
    rollouts: dict[Any, list[int]] = defaultdict(list)
    for i, (_, rollout) in enumerate(keys):
        rollouts[rollout].append(i)
    if len(rollouts) <= 1:
        return []
    total_tasks = len({task for task, _ in keys})
    out = []
    for rollout in sorted(rollouts):
        idx = rollouts[rollout]
        present = len({keys[i][0] for i in idx})
        entry: dict[str, Any] = {
            ROLLOUT: int(rollout),
            "sample_count": present,
            "missing_count": total_tasks - present,
        }
        for col in sorted(names):
            values = [v for i in idx if (v := records[i].get(col)) is not None]
            if not values:
                continue
            s = series_stats(values, col in int_cols)
            n = len(values)
            sem = s["std"] / n**0.5
            entry.update(
                {
                    f"mean/{col}": s["mean"],
                    f"median/{col}": s["median"],
                    f"std/{col}": s["std"],
                    f"sem/{col}": sem,
                    f"min/{col}": s["min"],
                    f"max/{col}": s["max"],
                    f"p25/{col}": quantile(values, 0.25),
                    f"p75/{col}": quantile(values, 0.75),
                }
            )
            ci = t_interval(s["mean"], sem, n)
            if ci is not None:
                entry[f"ci_low_95/{col}"], entry[f"ci_high_95/{col}"] = ci
        out.append(entry)
    return out


_EXCLUDED_NAMES = {
    TASK,
    ROLLOUT,
    "_ng_attempt_index",
    "sample_count",
    "missing_count",
    "num_repeats",
    "token_usage_version",
}
_EXCLUDED_PREFIXES = tuple(
    f"{s}/"
    for s in (
        "max",
        "min",
        "median",
        "std",
        "sem",
        "se",
        "p25",
        "p75",
        "ci_low_95",
        "ci_high_95",
        "histogram",
    )
)
_EXCLUDED_SUFFIXES = (
    "/max", "/min", "/median", "/p5", "/p25", "/p75", "/p95", "/ci_low_95", "/ci_high_95", "/ci_lower",
    "/ci_upper", "_ci_lower", "_ci_upper", "_ci95_lower", "_ci95_upper", "/_ng_attempt_index",
    "/std_dev_across_runs", "/std_err_across_runs", "/avg_sample_std_dev",
)  # fmt: skip


def is_primary_metric(name: str) -> bool:
    """NeMo Gym's rule for a point estimate that is summarised across repeats."""
    return (
        name not in _EXCLUDED_NAMES
        and not name.startswith(_EXCLUDED_PREFIXES)
        and not name.endswith(_EXCLUDED_SUFFIXES)
        and "_across_repeats/" not in name
    )


def _across_repeats(repeats: list[dict[str, Any]]) -> dict[str, Any]:
    if not repeats:
        return {}
    columns: dict[str, None] = {}
    for entry in repeats:
        columns.update(dict.fromkeys(entry))
    out: dict[str, Any] = {}
    for col in columns:
        if not is_primary_metric(col):
            continue
        values = [v for e in repeats if (v := e.get(col)) is not None]
        if not values:
            continue
        s = series_stats(values, all(type(v) is int for v in values) and len(values) == len(repeats))
        n = len(values)
        se = s["std"] / n**0.5
        for stat, value in (
            ("mean", s["mean"]), ("median", s["median"]), ("std", s["std"]), ("min", s["min"]),
            ("max", s["max"]), ("se", se),
        ):  # fmt: skip
            out[f"{stat}_across_repeats/{col}"] = value
        ci = t_interval(s["mean"], se, n)
        if ci is not None:
            out[f"ci_low_95_across_repeats/{col}"], out[f"ci_high_95_across_repeats/{col}"] = ci
    return out


def _by_task(scored: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    groups: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for r in scored:
        groups[r.get(TASK, 0)].append(r)
    return [groups[k] for k in sorted(groups)]


def _highest_k(agent: dict[str, Any], pattern: str, score_names: list[str]) -> dict[str, Any]:
    regex = re.compile("^" + re.escape(pattern).replace(r"\{k\}", r"(\d+)") + "/(.+)$")
    matches = []
    for key in agent:
        m = regex.match(key)
        if not m or m.group(2).endswith(
            ("/std_dev_across_runs", "/std_err_across_runs", "/avg_sample_std_dev")
        ):
            continue
        if m.group(2) in score_names:
            matches.append((int(m.group(1)), key))
    if not matches:
        return {}
    top = max(k for k, _ in matches)
    return {key: agent[key] for k, key in matches if k == top}


def key_metrics(agent: dict[str, Any]) -> dict[str, Any]:
    """The mcqa server's headline metrics (its get_key_metrics)."""
    key: dict[str, Any] = {}
    if "mean/reward" in agent:
        key["mean/reward"] = agent["mean/reward"]
    key.update(_highest_k(agent, "pass@1[avg-of-{k}]", ["accuracy", "no_answer"]))
    key.update(_highest_k(agent, "pass@{k}", ["no_answer"]))
    key.update(_highest_k(agent, "majority@{k}", ["accuracy"]))
    if "pass@1/accuracy" in agent:
        key["pass@1/accuracy"] = agent["pass@1/accuracy"]
    return key


def _stat(values: list[Any], stat: str) -> Any:
    if stat == "mean":
        return statistics.fmean(values)
    if stat == "median":
        return statistics.median(values)
    if stat == "total":
        return py_sum(values)
    if stat == "std":
        return statistics.pstdev(values)
    if stat == "min":
        return min(values)
    if stat == "max":
        return max(values)
    return quantile(values, int(stat[1:]) / 100)


def perf_summary(records: list[dict[str, Any]], total: int) -> dict[str, Any] | None:
    """NeMo Gym's perf_summary of the rollouts' `ng_perf` records (None when there are none)."""
    if total <= 0 or not records:
        return None

    def values(key: str) -> list[Any]:
        return [r[key] for r in records if isinstance(r.get(key), (int, float))]

    covered = [r for r in records if isinstance(r.get("token_observability_coverage"), (int, float))]
    out: dict[str, Any] = {
        "overall_observability_coverage": len(records) / total,
        "token_observability_coverage": sum(1 for r in covered if r["token_observability_coverage"] > 0)
        / total,
    }
    for field in ("prompt_tokens", "cached_prompt_tokens", "completion_tokens", "reasoning_tokens"):
        v = values(field)
        for stat in ("mean", "median", "total") if v else ():
            out[f"{stat}_{field}"] = _stat(v, stat)
    turns = values("num_turns")
    for stat in ("mean", "median", "std", "min", "p90", "max") if turns else ():
        out[f"{stat}_num_turns"] = _stat(turns, stat)
    per_turn = [
        r["completion_tokens"] / r["num_turns"]
        for r in records
        if isinstance(r.get("completion_tokens"), (int, float))
        and isinstance(r.get("num_turns"), (int, float))
        and r["num_turns"] > 0
    ]
    if per_turn:
        out["mean_tokens_per_turn"] = _stat(per_turn, "mean")
        out["median_tokens_per_turn"] = _stat(per_turn, "median")
    latency = values("total_latency_ms")
    for stat in ("p50", "p90", "p99", "mean") if latency else ():
        out[f"total_latency_{stat}_ms"] = _stat(latency, stat)
    return out


# ---- this server's own counts -----------------------------------------------------------------------------


def record_counts(responses: list[dict[str, Any]]) -> dict[str, int]:
    """`mcqa_prep/...` counts from the responses' records: graded (by status), unstamped, mismatched (by
    reason), masked; responses without a record (graded elsewhere) are `mcqa_prep/unrecorded`."""
    counts: Counter[str] = Counter()
    for r in responses:
        rec = r.get(RECORD)
        if type(rec) is not dict:
            counts["mcqa_prep/unrecorded"] += 1
            continue
        contract: dict[str, Any] = rec["contract"] if type(rec.get("contract")) is dict else {}
        state = contract.get("state")
        if state == "mismatch":
            counts["mcqa_prep/mismatched"] += 1
            reason = contract.get("reason")
            if isinstance(reason, str):
                counts[f"mcqa_prep/mismatched/{reason}"] += 1
            continue
        counts["mcqa_prep/graded"] += 1
        if state == "unstamped":
            counts["mcqa_prep/unstamped"] += 1
        status = rec.get("status")
        if isinstance(status, str):
            counts[f"mcqa_prep/status/{status}"] += 1
    return dict(sorted(counts.items()))
