"""Balanced gold positions in one pass, pinned options, and the row-keyed random order."""

from __future__ import annotations

import hashlib
import itertools
import random
from collections import Counter

import pytest

from mcqa_prep.convert.balance import (
    PERM_TABLE_MAX,
    Balancer,
    RowRandom,
    arrange,
    is_positional,
    letter_refs,
    pinned_positions,
)

try:
    from .convert_layouts import read_jsonl, write_rows
except ImportError:
    from convert_layouts import read_jsonl, write_rows


def _rng(i: int) -> RowRandom:
    return RowRandom(int.from_bytes(hashlib.blake2b(str(i).encode(), digest_size=24).digest(), "big"))


def test_balance_within_one_for_every_option_count_at_every_moment():
    b = Balancer()
    rnd = random.Random(0)
    for i in range(6000):
        n = rnd.choice([2, 3, 4, 5, 10, 26])
        pos = b.choose("", n, None, _rng(i))
        b.commit("", n, pos)
        c = b.counts[("", n)]
        assert max(c) - min(c) <= 1
    assert set(b.spread()[""].values()) <= {0, 1}


def test_pinned_rows_are_compensated_by_free_rows():
    """Rows whose last option is pinned cannot take D; the free rows after them fill D up again."""
    b = Balancer()
    for i in range(2000):
        allowed = [0, 1, 2] if i % 10 == 0 else None
        b.commit("", 4, b.choose("", 4, allowed, _rng(i)))
    c = b.counts[("", 4)]
    assert max(c) - min(c) <= 1, c


def test_arrange_keeps_pins_and_places_gold():
    for i in range(300):
        n = 2 + i % 9
        gold = i % n
        pins = {p for p in range(n) if (i + p) % 4 == 0 and p != gold}
        free = [p for p in range(n) if p not in pins]
        target = free[i % len(free)]
        perm = arrange(n, gold, pins, target, _rng(i))
        assert sorted(perm) == list(range(n))
        assert perm[target] == gold
        assert all(perm[p] == p for p in pins)


def test_row_random_reaches_every_order():
    seen = set()
    for i in range(400):
        xs = [0, 1, 2]
        _rng(i).shuffle(xs)
        seen.add(tuple(xs))
    assert seen == set(itertools.permutations([0, 1, 2]))


@pytest.mark.parametrize(
    "text, refs",
    [
        ("Both A and B", ["A", "B"]),
        ("A and C", ["A", "C"]),
        ("A, B and C are correct", ["A", "B", "C"]),
        ("Neither A nor B", ["A", "B"]),
        ("Only B", ["B"]),
        ("C only", ["C"]),
        ("(a) and (b)", ["A", "B"]),
        ("Options A and D", ["A", "D"]),
        ("Vitamin C", None),
        ("C", None),
        ("A cell divides", None),
        ("Type A and type B", None),
    ],
)
def test_letter_refs(text, refs):
    assert letter_refs(text) == refs


@pytest.mark.parametrize(
    "text, pinned",
    [
        ("All of the above", True),
        ("None of the above.", True),
        ("none of these", True),
        ("Both of the above", True),
        ("All of the options", True),
        ("Neither", True),
        ("All are correct", True),
        ("The above are all true", True),
        ("All cells divide", False),
        ("None", True),
        ("Nonetheless it grows", False),
    ],
)
def test_positional(text, pinned):
    assert is_positional(text) is pinned


def test_pinned_positions_with_user_pins():
    choices = ["red", "green", "Cannot be determined", "Both A and B"]
    assert pinned_positions(choices) == {0, 1, 3}
    assert pinned_positions(choices, frozenset({"cannot be determined"})) == {0, 1, 2, 3}
    assert pinned_positions(["x", "y", "z"]) == frozenset()


def test_cli_pins_stay_and_answers_stay_attached(tmp_path, cli):
    rows = []
    for i in range(80):
        choices = [f"alpha {i}", f"beta {i}", f"gamma {i}", "None of the above"]
        if i % 4 == 1:
            choices = [f"alpha {i}", f"beta {i}", f"gamma {i}", "Both A and B"]
        if i % 4 == 2:
            choices = [f"alpha {i}", f"beta {i}", f"Unknowable {i}", f"delta {i}"]
        rows.append({"question": f"Q{i}?", "choices": choices, "answer": i % 4})
    src = write_rows(tmp_path / "src.jsonl", rows, "jsonl")
    out = tmp_path / "o.jsonl"
    res = cli(
        "convert", src, "-o", out, "--preset", "mmlu", "--shuffle", "--pin", f"Unknowable {2}", "--seed", "3"
    )
    assert res.exit_code == 0, res.output
    for r in read_jsonl(out):
        i = r["metadata"]["source"]["row"]
        texts = [next(iter(o.values())) for o in r["options"]]
        src_choices = rows[i]["choices"]
        gold_text = src_choices[rows[i]["answer"]]
        assert dict(r["options"][ord(r["expected_answer"]) - 65])[r["expected_answer"]] == gold_text
        if i % 4 == 0:
            assert texts[3] == "None of the above"
        if i % 4 == 1:  # "Both A and B" and the two options it names keep their places
            assert texts[0] == src_choices[0] and texts[1] == src_choices[1] and texts[3] == "Both A and B"
        if i == 2:
            assert texts[2] == "Unknowable 2"
    doc_rows = read_jsonl(out)
    hist = Counter(r["expected_answer"] for r in doc_rows)
    assert sum(hist.values()) == 80


def test_place_free_draws_as_fisher_yates_on_the_row_integer():
    """Past the table sizes, place_free shuffles the distractors with Fisher-Yates, dividing the row's integer
    by n-1, n-2, ..., 2 in turn (the documented draw, written out here); it takes the digits from the integer
    mod (n-1)! at once: the same order and the same integer left for later draws."""
    rnd = random.Random(5)
    for _ in range(3000):
        n = rnd.randint(PERM_TABLE_MAX + 2, 26)
        gold, r = rnd.randrange(n), rnd.getrandbits(192)
        b = Balancer()
        rng = RowRandom(r)
        target, order = b.place_free("k", n, gold, rng)
        r, j = divmod(r, n)  # every position is least used: the target is the first draw
        src = [p for p in range(n) if p != gold]
        for i in range(n - 2, 0, -1):
            r, k = divmod(r, i + 1)
            src[i], src[k] = src[k], src[i]
        src.insert(j, gold)
        assert (target, order, rng.r) == (j, src, r)


def test_place_free_draws_one_order_among_all_at_table_sizes():
    """Up to the table sizes, place_free takes the target, then one draw among every order of the distractors
    in itertools.permutations order (the documented draw, written out here): the same order and the same
    integer left for later draws, also when only some positions are least used."""
    rnd = random.Random(6)
    for _ in range(3000):
        n = rnd.randint(2, PERM_TABLE_MAX + 1)
        gold, r = rnd.randrange(n), rnd.getrandbits(192)
        b = Balancer()
        used = [p for p in range(n) if rnd.random() < 0.5]
        for p in used:
            b.commit("k", n, p)
        rng = RowRandom(r)
        target, order = b.place_free("k", n, gold, rng)
        least = [p for p in range(n) if p not in used] or list(range(n))
        if len(least) > 1:
            r, j = divmod(r, len(least))
        else:
            j = 0
        src = [p for p in range(n) if p != gold]
        orders = list(itertools.permutations(src))
        r, k = divmod(r, len(orders))
        want = list(orders[k])
        want.insert(least[j], gold)
        assert (target, order, rng.r) == (least[j], want, r)


def test_place_free_into_places_as_place_free_then_commit():
    """--shuffle's pass 1 places a row without pins with place_free_into: the same target, order and counts
    as place_free and commit, for every option count (table and Fisher-Yates sizes) and from uneven counts."""
    rnd = random.Random(11)
    old, new = Balancer(), Balancer()
    want, got = bytearray(), bytearray()
    for i in range(20000):
        n = rnd.randint(2, 26) if i % 2 else rnd.randint(2, PERM_TABLE_MAX + 1)
        gold, r, key = rnd.randrange(n), rnd.getrandbits(192), rnd.choice("ab")
        if i % 7 == 0:  # a pinned row's placement: counts no longer even
            pos = rnd.randrange(n)
            old.commit(key, n, pos)
            new.commit(key, n, pos)
            continue
        target, order = old.place_free(key, n, gold, RowRandom(r))
        old.commit(key, n, target)
        want.append(target)
        want += bytes(order)
        new.place_free_into(got, key, n, gold, r)
    assert got == want
    assert new.counts == old.counts
