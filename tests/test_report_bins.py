"""report/bins.Histogram: counting many items at once leaves the state counting them one at a time leaves."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from mcqa_prep.report.bins import LENGTH_EDGES, Histogram, length_bin


def _state(h: Histogram) -> tuple:
    return (h.counts, h.sums, h.total, h.value_min, h.value_max, h.value_sum)


@given(st.lists(st.lists(st.integers(min_value=0, max_value=200_000), max_size=30), max_size=5))
def test_add_many_is_adding_one_at_a_time(batches: list[list[int]]) -> None:
    one, many = Histogram(len(LENGTH_EDGES)), Histogram(len(LENGTH_EDGES))
    for lens in batches:
        for n in lens:
            one.add(length_bin(n), n)
        many.add_many(Counter(map(length_bin, lens)), lens)
    assert _state(many) == _state(one)


def test_add_many_of_nothing_keeps_min_and_max_unset() -> None:
    h = Histogram(3)
    h.add_many({}, [])
    assert _state(h) == ([0, 0, 0], [0.0, 0.0, 0.0], 0, None, None, 0.0)
    h.add_many({2: 2}, [7, 3])
    assert (h.counts, h.total, h.value_min, h.value_max, h.value_sum) == ([0, 0, 2], 2, 3, 7, 10)
