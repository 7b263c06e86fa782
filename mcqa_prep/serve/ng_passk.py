"""The pass@k, majority@k and across-run figures of NeMo Gym 0.7.0's mcqa server (its `compute_metrics`:
`compute_pass_majority_metrics` with score `accuracy` = reward and `no_answer` from `extracted_answer`), with
the same digits and without its quadratic loops.

NeMo Gym recomputes every figure from scratch for each k = 1..max_k (the most rollouts of one task): the
first k scores of every task, a Counter per task for majority, the first k run averages for the spread. Here
each task's state grows by one rollout per k (a running sum, a running count of the answers by how often they
occur, an exact fraction for comb(wrong, k) / comb(n, k)), and the spread of the run averages is computed for
every k at once with numpy. Every number is still made by the same floating-point operations in the same
order as NeMo Gym's (Python's compensated `sum` replayed step by step, `ng_stats.py`), so the results are
equal, not merely close. The work is O(tasks x max_k) for the per-task figures (what NeMo Gym's output is a
function of: one figure per task per k) and O(max_k^2) vectorised arithmetic for the across-run spread.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from .ng_stats import py_sum

NAMES = ("accuracy", "no_answer")  # NeMo Gym's score names for mcqa, sorted as it sorts them
STD_DEV, STD_ERR = "/std_dev_across_runs", "/std_err_across_runs"
_TINY = Fraction(1, 2**54)  # below it, 1.0 - ratio rounds to 1.0


class RunningSum:
    """CPython 3.12's sum() fed one item at a time: `.value` is what sum() of the items so far returns."""

    __slots__ = ("i", "f", "c", "floating")

    def __init__(self) -> None:
        self.i: Any = 0
        self.f = 0.0
        self.c = 0.0
        self.floating = False

    def add(self, x: Any) -> None:
        if not self.floating:
            if isinstance(x, int):
                self.i += x
                return
            self.f = self.i + x
            self.floating = True
            return
        if type(x) is float:
            t = self.f + x
            if abs(self.f) >= abs(x):
                self.c += (self.f - t) + x
            else:
                self.c += (x - t) + self.f
            self.f = t
        else:
            self.f += float(x)

    @property
    def value(self) -> Any:
        if not self.floating:
            return self.i
        c = self.c
        return self.f + c if c and math.isfinite(c) else self.f


def _scores(rollout: dict[str, Any]) -> tuple[Any, int]:
    reward = rollout["reward"]
    acc = int(reward) if isinstance(reward, bool) else reward
    return acc, 1 if rollout.get("extracted_answer") is None else 0


class _Task:
    """One task's rollouts (arrival order) and its running state for k = 1, 2, ... (index j: 0 accuracy,
    1 no_answer)."""

    def __init__(self, rollouts: list[dict[str, Any]]) -> None:
        self.scores = [_scores(r) for r in rollouts]
        self.answers = [r.get("extracted_answer") for r in rollouts]
        self.n = len(rollouts)
        self.sums = (RunningSum(), RunningSum())
        self.avg: list[Any] = [None, None]
        self.binary = [all(s[j] in (0, 1, 0.0, 1.0) for s in self.scores) for j in (0, 1)]
        self.wrong = [sum(1 for s in self.scores if not s[j]) for j in (0, 1)]
        self.ratio = [Fraction(1), Fraction(1)]  # comb(wrong, k) / comb(n, k), exact, while >= 2**-54
        self.best: list[Any] = [None, None]  # max of the first k scores (pass@k of a non-binary score)
        # majority: (answer, score) -> count in first-seen order (NeMo Gym's Counter), and per count level
        # how many pairs stand there and the sum of their scores (exact for 0/1 scores)
        self.counts: tuple[dict[Any, int], dict[Any, int]] = ({}, {})
        self.size: tuple[dict[int, int], dict[int, int]] = ({}, {})
        self.ones: tuple[dict[int, Any], dict[int, Any]] = ({}, {})
        self.top = [0, 0]
        self.majority: list[Any] = [0, 0]

    def step(self, k: int) -> None:
        """Take the k-th rollout in (k <= n)."""
        s = self.scores[k - 1]
        for j in (0, 1):
            self.sums[j].add(s[j])
            self.avg[j] = self.sums[j].value / k
            self.best[j] = s[j] if k == 1 else max(self.best[j], s[j])
            if self.binary[j] and k <= self.wrong[j] and self.ratio[j] >= _TINY:
                self.ratio[j] *= Fraction(self.wrong[j] - k + 1, self.n - k + 1)
        answer = self.answers[k - 1]
        if answer is not None:
            for j in (0, 1):
                self._count(j, (answer, s[j]))

    def _count(self, j: int, key: tuple[Any, Any]) -> None:
        counts, size, ones = self.counts[j], self.size[j], self.ones[j]
        before = counts.get(key, 0)
        counts[key] = before + 1
        if before:
            size[before] -= 1
            ones[before] -= key[1]
        size[before + 1] = size.get(before + 1, 0) + 1
        ones[before + 1] = ones.get(before + 1, 0) + key[1]
        self.top[j] = max(self.top[j], before + 1)
        top = self.top[j]
        if self.binary[j]:
            self.majority[j] = ones[top] / size[top]
        else:  # scores that are not 0/1: their sum in Counter order, as NeMo Gym adds them
            tied = [pair[1] for pair, c in counts.items() if c == top]
            self.majority[j] = py_sum(tied) / len(tied)

    def pass_at(self, j: int, k: int) -> Any:
        if self.binary[j]:
            if self.wrong[j] < k:
                return 1.0
            r = self.ratio[j]
            return 1.0 if r < _TINY else 1.0 - float(r)
        return self.best[j]


def pass_majority(tasks: Sequence[list[dict[str, Any]]]) -> dict[str, Any]:
    """NeMo Gym's compute_pass_majority_metrics(tasks, reward as accuracy, answer_key="extracted_answer")[0]."""
    if not tasks:
        return {}
    state = [_Task(t) for t in tasks]
    max_k = max(t.n for t in state)
    out: dict[str, Any] = {}
    live = list(state)
    for k in range(1, max_k + 1):
        live = [t for t in live if t.n >= k]
        for t in live:
            t.step(k)
        for j, name in enumerate(NAMES):
            passes = [t.pass_at(j, k) for t in live]
            if passes:
                out[f"pass@{k}/{name}"] = 100.0 * py_sum(passes) / len(passes)
            avgs = [t.avg[j] for t in state]
            out[f"pass@1[avg-of-{k}]/{name}"] = 100.0 * py_sum(avgs) / len(avgs)
            majority = [t.majority[j] for t in state]
            out[f"majority@{k}/{name}"] = 100.0 * py_sum(majority) / len(majority)
    per_run = _per_sample(state, max_k)
    out["per_sample_aggregate"] = per_run
    if max_k > 1:
        out.update(_spread(per_run, max_k))
    return out


def _per_sample(state: list[_Task], max_k: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {name: [] for name in NAMES}
    for i in range(max_k):
        for j, name in enumerate(NAMES):
            run = [t.scores[i][j] for t in state if i < t.n]
            if run:
                out[name].append(100.0 * py_sum(run) / len(run))
    return {k: v for k, v in out.items() if v}


def _spread(per_run: dict[str, list[float]], max_k: int) -> dict[str, float]:
    """pass@1[avg-of-k]/<name>/std_dev_across_runs and std_err_across_runs for k = 2..max_k: the sample std of
    the first k run averages, NeMo Gym's two passes of Python's compensated sum, replayed for every k at once
    (one numpy lane per k, the same float operations in the same order)."""
    cols: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name in NAMES:
        x = per_run.get(name, [])
        if len(x) < 2:
            continue
        ks = np.arange(2, min(max_k, len(x)) + 1)
        mean = _lane_sums(np.asarray(x, dtype=np.float64), ks, None) / ks
        sq = _lane_sums(np.asarray(x, dtype=np.float64), ks, mean)
        std = np.sqrt(sq / (ks - 1))
        cols[name] = (std, std / np.sqrt(ks.astype(np.float64)))
    out: dict[str, float] = {}
    for k in range(2, max_k + 1):
        for name in NAMES:
            if name in cols and k - 2 < len(cols[name][0]):
                std, err = cols[name]
                out[f"pass@1[avg-of-{k}]/{name}{STD_DEV}"] = float(std[k - 2])
                out[f"pass@1[avg-of-{k}]/{name}{STD_ERR}"] = float(err[k - 2])
    return out


def _lane_sums(x: np.ndarray, ks: np.ndarray, mean: np.ndarray | None) -> np.ndarray:
    """For each k in ks (2, 3, ...): Python's sum() of x[:k] (mean None) or of (x[i] - mean_k) ** 2 for
    i < k, all floats: Neumaier's compensated loop run lane-wise, lane k taking items 0..k-1 (item i feeds
    the lanes k > i: a suffix of the lanes, so the work is the sum of the lanes' lengths)."""
    f = np.array(x[0] if mean is None else (x[0] - mean) ** 2, dtype=np.float64)  # 0 + x: x, uncompensated
    f = np.broadcast_to(f, ks.shape).copy()
    c = np.zeros(ks.size)
    for i in range(1, int(ks[-1])):
        lo = max(0, i - 1)  # lanes k >= i + 1
        fs = f[lo:]
        item = x[i] if mean is None else (x[i] - mean[lo:]) ** 2
        t = fs + item
        c[lo:] += np.where(np.abs(fs) >= np.abs(item), (fs - t) + item, (item - t) + fs)
        f[lo:] = t
    return np.where(np.isfinite(c) & (c != 0), f + c, f)
