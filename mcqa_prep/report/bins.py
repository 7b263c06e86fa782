"""Bounded accumulators for the report: fixed-bin histograms, capped counters and example lists.

Everything the report keeps per plot is one of these, so memory does not grow with the number of rows: a
histogram has a fixed number of bins, a capped counter a fixed number of keys (the rest is pooled under
OTHER), an example list a fixed length. The one exception is documented where it is used (per-prompt pass
rates keep one 8-byte key and one packed int per distinct prompt).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

OTHER = "(other)"

# Character lengths (prompts, responses): powers of two, so a few bins cover 1 character to 64k.
LENGTH_EDGES: tuple[int, ...] = (0, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
# Pass rates are binned by evidence.rate_bin / RATE_BINS, the one binning passrates and summarize use too.


def length_labels(edges: Sequence[int] = LENGTH_EDGES) -> list[str]:
    """'0–64', '64–128', ..., '1k–2k', '64k+' for the bins of `edges` (each from its first bound up to, not
    including, its second)."""
    out = [f"{_short(lo)}–{_short(hi)}" for lo, hi in zip(edges, edges[1:], strict=False)]
    out.append(f"{_short(edges[-1])}+")
    return out


def _short(n: int) -> str:
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def length_bin(n: int, edges: Sequence[int] = LENGTH_EDGES) -> int:
    """Index of the bin of a length (the last bin is open-ended)."""
    return max(0, bisect_right(edges, n) - 1)


class Histogram:
    """Counts (and optionally a value sum) per fixed bin."""

    __slots__ = ("counts", "sums", "total", "value_min", "value_max", "value_sum")

    def __init__(self, bins: int) -> None:
        self.counts = [0] * bins
        self.sums = [0.0] * bins
        self.total = 0
        self.value_min: float | None = None
        self.value_max: float | None = None
        self.value_sum = 0.0

    def add(self, index: int, value: float | None = None, weight: float = 0.0) -> None:
        """Count one item in bin `index`; `value` feeds min/max/mean, `weight` the bin's sum."""
        self.counts[index] += 1
        self.sums[index] += weight
        self.total += 1
        if value is not None:
            self.value_sum += value
            if self.value_min is None or value < self.value_min:
                self.value_min = value
            if self.value_max is None or value > self.value_max:
                self.value_max = value

    def add_many(self, bins: Mapping[int, int], values: Sequence[int]) -> None:
        """Count many items at once: `bins[i]` items in bin i, `values` theirs (min/max/sum), with no weights;
        the same state as adding them one at a time."""
        counts = self.counts
        for b, c in bins.items():
            counts[b] += c
        self.total += len(values)
        if not values:
            return
        self.value_sum += sum(values)
        lo, hi = min(values), max(values)
        if self.value_min is None or lo < self.value_min:
            self.value_min = lo
        if self.value_max is None or hi > self.value_max:
            self.value_max = hi

    def means(self) -> list[float | None]:
        """Per bin: the mean of the weights added there (None for an empty bin)."""
        return [round(s / n, 4) if n else None for n, s in zip(self.counts, self.sums, strict=True)]

    def stats(self) -> dict[str, Any]:
        mean = self.value_sum / self.total if self.total and self.value_min is not None else None
        return {
            "count": self.total,
            "min": self.value_min,
            "max": self.value_max,
            "mean": None if mean is None else round(mean, 2),
        }


class CappedCounter:
    """A Counter of at most `cap` keys: once full, new keys are counted under OTHER."""

    __slots__ = ("cap", "counts")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.counts: Counter = Counter()

    def key(self, key: Hashable) -> Hashable:
        """The key an item is counted under (itself, or OTHER when the counter is full)."""
        counts = self.counts
        if key in counts or len(counts) < self.cap:
            return key
        return OTHER

    def add(self, key: Hashable, n: int = 1) -> Hashable:
        k = self.key(key)
        self.counts[k] += n
        return k

    def most_common(self, n: int | None = None) -> list[tuple[Any, int]]:
        """Largest first, ties by key (as text); OTHER always last."""
        items = sorted(
            ((k, v) for k, v in self.counts.items() if k != OTHER), key=lambda kv: (-kv[1], str(kv[0]))
        )
        if n is not None:
            rest = sum(v for _, v in items[n:])
            items = items[:n]
            rest += self.counts.get(OTHER, 0)
        else:
            rest = self.counts.get(OTHER, 0)
        if rest:
            items.append((OTHER, rest))
        return items


class Examples:
    """A count and the first `limit` examples."""

    __slots__ = ("count", "items", "limit")

    def __init__(self, limit: int) -> None:
        self.count = 0
        self.items: list[str] = []
        self.limit = limit

    def add(self, example: str) -> None:
        self.count += 1
        if len(self.items) < self.limit:
            self.items.append(example)

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "examples": list(self.items)}


def share(n: float, total: float) -> float | None:
    return round(n / total, 4) if total else None


def clip(text: str, n: int = 240) -> str:
    """A message shortened for a table cell."""
    return text if len(text) <= n else text[: n - 1] + "…"
