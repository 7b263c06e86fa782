"""The arithmetic of NeMo Gym 0.7.0's aggregate metrics, reproduced operation for operation (aggregate.py).

NeMo Gym computes its per-task and per-run statistics with pandas (a DataFrame's describe: mean, max, min,
median, std) and its pass/majority figures with plain Python sums. To give the same numbers, digit for digit,
without pandas:

- `py_sum` is Python's own `sum` where it is the one NeMo Gym runs on (3.12 and later sum floats with
  Neumaier's compensation); on 3.11 the same algorithm in Python, so `serve` gives the same digits there.
- `describe` is what pandas' reductions do to one column (NaN for a missing value): the mean is numpy's sum
  of the values with the missing ones as 0, over the count; std the same two-pass formula (ddof 1); max and
  min keep the column's type (all int64 columns give ints, any float column makes every max and min a float,
  as one DataFrame row of stats shares a dtype); median is numpy's.
- `quantile` is pandas' (numpy's linear percentile of q * 100).
- `t_interval` is scipy's Student t interval (`stdtrit`), from scipy where it is installed (NeMo Gym's
  environment always has it); otherwise the same quantile computed here, equal to scipy's to ~1e-12.

Checked against NeMo Gym's own output: data/golden/nemo_gym_aggregate_cases.jsonl (tests/test_serve_wire.py).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

Number = int | float
NAN = float("nan")


def _sum_compensated(values: Iterable[Any]) -> Any:
    """CPython 3.12's sum(): exact int accumulation until the first float, then Neumaier's compensated
    float sum (ints added as floats)."""
    it = iter(values)
    total: Any = 0
    for item in it:
        if isinstance(item, int):
            total += item
            continue
        total = total + item
        break
    else:
        return total
    if type(total) is not float:
        for item in it:
            total = total + item
        return total
    f, c = total, 0.0
    for item in it:
        if type(item) is float:
            t = f + item
            if abs(f) >= abs(item):
                c += (f - t) + item
            else:
                c += (item - t) + f
            f = t
        elif isinstance(item, int) and -(2**63) <= item < 2**63:
            f += float(item)
        else:
            if c and math.isfinite(c):
                f += c
            return _finish(f + item, it)
    if c and math.isfinite(c):
        f += c
    return f


def _finish(total: Any, it: Iterable[Any]) -> Any:
    for item in it:
        total = total + item
    return total


py_sum = sum if sys.version_info >= (3, 12) else _sum_compensated


def _column(values: Sequence[Number | None], is_int: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """(float64 values with NaN for missing, the missing mask, the column's sum as pandas takes it: an int64
    column summed by numpy into float64, a float64 one with its missing values as 0)."""
    if is_int:
        ints = np.array(values, dtype=np.int64)
        return ints.astype(np.float64), np.zeros(ints.size, dtype=bool), float(ints.sum(dtype=np.float64))
    arr = np.array([NAN if v is None else v for v in values], dtype=np.float64)
    mask = np.isnan(arr)
    return arr, mask, float((np.where(mask, 0.0, arr) if mask.any() else arr).sum())


def describe(columns: dict[str, Sequence[Number | None]], int_columns: set[str]) -> dict[str, Any]:
    """pandas' reductions as NeMo Gym's RewardProfiler takes them over one group (mean, max, min, median,
    std), flattened to `stat/column`, NaN results left out; the std of a one-row group is 0 for the columns it
    has values in (NeMo Gym's rule when every std is NaN). `int_columns`: the columns pandas types int64 over
    the whole frame (every value an int, none missing); when every column is, max and min are ints."""
    stats: dict[str, dict[str, Any]] = {s: {} for s in ("mean", "max", "min", "median", "std")}
    all_int = all(name in int_columns for name in columns)
    masks = {}
    for name, values in columns.items():
        arr, mask, total = _column(values, name in int_columns)
        masks[name] = mask
        count = int(arr.size - mask.sum())
        if count == 0:
            continue
        avg = np.float64(total) / count
        stats["mean"][name] = float(avg)
        present = arr[~mask] if count != arr.size else arr
        hi, lo = present.max(), present.min()
        stats["max"][name] = int(hi) if all_int else float(hi)
        stats["min"][name] = int(lo) if all_int else float(lo)
        stats["median"][name] = float(np.median(present))
        if count > 1:
            sq = (avg - np.where(mask, 0.0, arr)) ** 2
            if count != arr.size:
                sq = np.where(mask, 0.0, sq)
            stats["std"][name] = float(np.sqrt(sq.sum() / (count - 1)))
    if not stats["std"]:
        for name, mask in masks.items():
            if not mask.any():
                stats["std"][name] = 0.0
    return {
        f"{s}/{name}": v for s, by in stats.items() for name in columns if (v := by.get(name)) is not None
    }


def series_stats(values: Sequence[Number], is_int: bool = False) -> dict[str, float]:
    """What a pandas Series gives NeMo Gym's repeat-level code for one column with its missing values
    dropped: mean, median, std (ddof 1; 0.0 for one value), min, max, as floats. `is_int`: an int64 column
    (pandas sums it into float64)."""
    arr = np.array(values, dtype=np.float64)
    n = arr.size
    total = np.array(values, dtype=np.int64).sum(dtype=np.float64) if is_int else arr.sum()
    mean = total / n
    std = float(np.sqrt(((mean - arr) ** 2).sum() / (n - 1))) if n > 1 else 0.0
    return {
        "mean": float(mean),
        "median": float(np.median(arr)),
        "std": std,
        "min": float(arr.min()),
        "max": float(arr.max()),
    }


def quantile(values: Sequence[Number], q: float) -> float:
    """pandas' Series.quantile(q) (linear): numpy's percentile at q * 100.0."""
    arr = np.array(values, dtype=np.float64)
    return float(np.percentile(arr, np.asarray([q]) * 100.0, method="linear")[0])


def t_interval(mean: float, scale: float, n: int) -> tuple[float, float] | None:
    """NeMo Gym's 95% t interval: None for n <= 1, (mean, mean) when the scale is 0, else scipy's
    t.interval(0.95, df=n - 1, loc=mean, scale=scale)."""
    if n <= 1:
        return None
    if scale == 0:
        return mean, mean
    q1, q2 = (1.0 - 0.95) / 2, (1.0 + 0.95) / 2
    return _t_ppf(q1, n - 1) * scale + mean, _t_ppf(q2, n - 1) * scale + mean


def scipy_stdtrit() -> Any:
    """scipy's t quantile, or None where scipy is not installed (or an import hook stands in for it)."""
    try:
        import scipy.special as special  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return None
    if getattr(special, "__file__", None) is None:  # not the real module
        return None
    return special.stdtrit


def _t_ppf(p: float, df: int) -> float:
    stdtrit = scipy_stdtrit()
    return t_quantile(p, df) if stdtrit is None else float(stdtrit(df, p))


def t_quantile(p: float, df: float) -> float:
    """The Student t quantile without scipy: Newton steps on the lower tail of the t distribution (the
    regularized incomplete beta by its continued fraction) from the normal quantile, bracketed; the upper
    half by symmetry. Within ~1e-11 (relative) of scipy's stdtrit."""
    if p == 0.5:
        return 0.0
    if p > 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = -1e300, 0.0
    x = min(_normal_quantile(p), -1e-3)
    for _ in range(400):
        err = _t_cdf(x, df) - p
        if err > 0:
            hi = x
        else:
            lo = x
        nxt = x - err / _t_pdf(x, df)
        if not lo < nxt < hi:
            nxt = (lo + hi) / 2 if lo > -1e300 else 2 * x
        if nxt == x or abs(nxt - x) <= 2e-16 * abs(x):
            return nxt
        x = nxt
    return x


def _t_pdf(x: float, df: float) -> float:
    lg = math.lgamma((df + 1) / 2) - math.lgamma(df / 2)
    return math.exp(lg - 0.5 * math.log(df * math.pi) - (df + 1) / 2 * math.log1p(x * x / df))


def _t_cdf(x: float, df: float) -> float:
    """P(T <= x) for x < 0: half the regularized incomplete beta I_{df/(df+x^2)}(df/2, 1/2)."""
    d = df + x * x
    return 0.5 * _betainc(df / 2, 0.5, df / d, x * x / d)


def _betainc(a: float, b: float, x: float, y: float) -> float:
    """I_x(a, b) with y = 1 - x given exactly (no cancellation near x = 1)."""
    if x <= 0:
        return 0.0
    if y <= 0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, y) / b


def _betacf(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        for num in (
            m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h


def _normal_quantile(p: float) -> float:
    """Acklam's rational approximation (a start for Newton's steps)."""
    a = (
        -39.69683028665376,
        220.9460984245205,
        -275.9285104469687,
        138.3577518672690,
        -30.66479806614716,
        2.506628277459239,
    )
    b = (-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572)
    c = (
        -0.007784894002430293,
        -0.3223964580411365,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    )
    d = (0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416)
    if p < 0.02425 or p > 1 - 0.02425:
        q = math.sqrt(-2 * math.log(p if p < 0.5 else 1 - p))
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / (
            (((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1
        )
        return x if p < 0.5 else -x
    q = p - 0.5
    r = q * q
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / (
        ((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1
    )  # fmt: skip
