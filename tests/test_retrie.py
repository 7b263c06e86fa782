"""The trie alternation matches what the flat alternation of the same keys matches (longest key, or any key
as a prefix), on seeded random keys and texts."""

import random
import re

import pytest

from mcqa_prep.retrie import trie_alternation

ALPHABET = "abcé. "


def _keys(rng: random.Random) -> list[str]:
    return sorted({"".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 5))) for _ in range(30)})


@pytest.mark.parametrize("seed", range(20))
def test_longest_key_matches_as_the_flat_alternation(seed):
    rng = random.Random(seed)
    keys = _keys(rng)
    flat = re.compile("|".join(map(re.escape, sorted(keys, key=len, reverse=True))))
    trie = re.compile(trie_alternation(keys, escape=re.escape))
    for _ in range(200):
        text = "".join(rng.choice(ALPHABET + "xyz") for _ in range(rng.randint(0, 12)))
        for start in range(len(text) + 1):
            a, b = flat.match(text, start), trie.match(text, start)
            assert (a and a.group()) == (b and b.group()), (keys, text, start)


@pytest.mark.parametrize("seed", range(20))
def test_prefix_only_tests_whether_any_key_starts_here(seed):
    rng = random.Random(seed)
    keys = [[re.escape(ch) if ch != " " else r"\s+" for ch in k] for k in _keys(rng)]
    flat = re.compile("|".join("".join(k) for k in keys))
    trie = re.compile(trie_alternation(keys, prefix_only=True))
    for _ in range(200):
        text = "".join(rng.choice(ALPHABET + "xyz\t") for _ in range(rng.randint(0, 12)))
        for start in range(len(text) + 1):
            assert (flat.match(text, start) is None) == (trie.match(text, start) is None), (text, start)


def test_a_key_that_ends_cuts_the_branch_only_for_a_prefix_test():
    assert trie_alternation(["ab", "abc"], escape=re.escape) == "ab(?:c)?"
    assert trie_alternation(["ab", "abc"], prefix_only=True) == "ab"
