"""Option order: balanced gold positions in one streaming pass, pinned options, a portable PRNG.

Pins: anchored options (anchors.py, the phrase table of every language) keep their place.

Balancing (per output file and option count n): keep a count of gold answers per position; a row's gold
goes to a least-used position among those it may take (unpinned), ties broken by the row's own seeded
random stream; the other unpinned options are shuffled into the remaining unpinned positions. When every
position is free this deals each position once per round of n rows, in a random order per round, so the
counts never differ by more than one; a pinned row takes the least-used position it can, and the free
rows after it fill the gap.

Randomness comes from a seeded hash of the row's identity (see RowRandom): the same on every Python version and
platform, and independent of other rows.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from .anchors import UNRESOLVED, is_positional, letter_refs, may_anchor


class RowRandom:
    """A row's random choices, drawn from one big integer (a BLAKE2b digest of the row's identity, salted with
    the seed) by
    repeated divmod: the same on every Python version and platform (random.Random's shuffle is not promised
    to be), independent of every other row, and far cheaper than seeding a generator per row. 192 bits cover
    a tie-break and a shuffle of 25 options (about 89 bits) with a bias below 2**-100."""

    __slots__ = ("r",)

    def __init__(self, r: int):
        self.r = r

    def below(self, n: int) -> int:
        self.r, x = divmod(self.r, n)
        return x

    def shuffle(self, xs: list) -> None:
        """Fisher-Yates."""
        r = self.r
        for i in range(len(xs) - 1, 0, -1):
            r, j = divmod(r, i + 1)
            xs[i], xs[j] = xs[j], xs[i]
        self.r = r


# ------------------------------------------------------------------------------------------------ pins

_SPACE = re.compile(r"\s+")
_NONE: frozenset[int] = frozenset()


def norm_pin(text: str) -> str:
    return _SPACE.sub(" ", text.strip().lower()).rstrip(".!")


def scan_pins(
    choices: Sequence[str], user_pins: frozenset[str] = frozenset()
) -> tuple[frozenset[int], str | None]:
    """(positions that keep their place, the text of an option whose letter reference cannot be resolved).

    Pinned: positional options (anchors.is_positional, in every language of the phrase table), user --pin
    texts, and options that name other options by letter together with the options they name. When an option
    names letters that cannot be told for sure (anchors.UNRESOLVED) every position is pinned (the row keeps
    its order: nothing is guessed) and that option's text is returned for the report."""
    if not user_pins and not may_anchor(choices):
        return _NONE, None
    out: set[int] | None = None
    n = len(choices)
    for i, t in enumerate(choices):
        if (user_pins and norm_pin(t) in user_pins) or is_positional(t):
            out = out or set()
            out.add(i)
            continue
        refs = letter_refs(t, n)
        if refs == UNRESOLVED:
            return frozenset(range(n)), t
        if refs is not None:
            out = out or set()
            out.add(i)
            out.update(ord(L) - 65 for L in refs)
    return (frozenset(out) if out else _NONE), None


def pinned_positions(choices: Sequence[str], user_pins: frozenset[str] = frozenset()) -> frozenset[int]:
    """Positions that keep their place (scan_pins)."""
    return scan_pins(choices, user_pins)[0]


# ------------------------------------------------------------------------------------------------ balance

PERM_TABLE_MAX = 7  # up to 7! = 5040 orders per size are kept as a table (about 0.3 MB in all)


class _PermBytes(dict):
    """Every order of range(m) as bytes (lexicographic, as itertools.permutations yields them) by m, for
    m <= PERM_TABLE_MAX, else None: made on first use, a plain dict lookup after that (no call per row)."""

    def __missing__(self, m: int) -> list[bytes] | None:
        t = self[m] = [bytes(o) for o in itertools.permutations(range(m))] if m <= PERM_TABLE_MAX else None
        return t


_PERM_BYTES = _PermBytes()
# _SHIFT[g] maps a distractor's index among the n-1 distractors to its source position (those from g on move up)
_SHIFT = [bytes(min(255, e + (e >= g)) for e in range(256)) for g in range(26)]


class _FisherYates(dict):
    """By option count n: the distractors' source positions for each gold (a tuple per gold), the steps
    (i, i+1) of a Fisher-Yates shuffle of the n-1 distractors, and (n-1)!; made on first use, looked up after
    that (what a row would otherwise build again)."""

    def __missing__(self, n: int) -> tuple[list[tuple[int, ...]], tuple[tuple[int, int], ...], int]:
        distractors = [tuple(p for p in range(n) if p != g) for g in range(n)]
        t = self[n] = distractors, tuple((i, i + 1) for i in range(n - 2, 0, -1)), math.factorial(n - 1)
        return t


_FISHER_YATES = _FisherYates()


def _draw_free(c: list[int], n: int, gold: int, r: int, as_bytes: bool) -> tuple[int, Any, int]:
    """The draws of a row without pinned options from its integer r, given the gold counts c of its n
    positions: (target, the distractors' source positions in their new order, what is left of r). The one
    place these draws are made, so that place_free and place_free_into cannot drift apart; the order comes as
    bytes or as a new list (`as_bytes`), whichever the caller writes, so that neither converts it back.

    The target is a least-used position (a draw among them when several are); the distractors' order is one
    draw among all their orders (itertools order) up to PERM_TABLE_MAX of them, past that Fisher-Yates on the
    digits of r in the mixed radix (2, ..., n-1): the same draws as dividing r by n-1, n-2, ..., 2 in turn,
    taken from r mod (n-1)! (a machine-size integer up to 21 options) instead of dividing the 192-bit r each
    time."""
    m = min(c)
    if c.count(m) > 1:
        cands = [p for p, x in enumerate(c) if x == m]
        r, j = divmod(r, len(cands))
        target = cands[j]
    else:
        target = c.index(m)
    table = _PERM_BYTES[n - 1]
    if table is not None:
        r, j = divmod(r, len(table))
        d = table[j].translate(_SHIFT[gold])
        return target, (d if as_bytes else [*d]), r
    distractors, steps, orders = _FISHER_YATES[n]
    src = [*distractors[gold]]
    r, d = divmod(r, orders)
    for i, k in steps:
        d, j = divmod(d, k)
        src[i], src[j] = src[j], src[i]
    return target, (bytes(src) if as_bytes else src), r


class Balancer:
    """Gold counts per (output key, option count, position); see the module docstring."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, int], list[int]] = {}

    def choose(self, key: str, n: int, allowed: Sequence[int] | None, rng: RowRandom) -> int:
        """A least-used position among `allowed` (None: all n), ties broken by `rng`."""
        c = self.counts.get((key, n))
        if c is None:
            c = self.counts[(key, n)] = [0] * n
        if allowed is None:
            m = min(c)
            cands = [p for p, x in enumerate(c) if x == m]
        else:
            m = min(c[p] for p in allowed)
            cands = [p for p in allowed if c[p] == m]
        return cands[rng.below(len(cands))] if len(cands) > 1 else cands[0]

    def place_free(self, key: str, n: int, gold: int, rng: RowRandom) -> tuple[int, list[int]]:
        """The placement of a row without pinned options: (target, order), drawn from rng by _draw_free, as
        place_free_into draws it (not the draws choose() and arrange() would make from the same rng)."""
        c = self.counts.get((key, n))
        if c is None:
            c = self.counts[(key, n)] = [0] * n
        target, order, rng.r = _draw_free(c, n, gold, rng.r, False)
        order.insert(target, gold)
        return target, order

    def place_free_into(self, out: bytearray, key: str, n: int, gold: int, r: int) -> None:
        """place_free() with a RowRandom(r) used for nothing else, then commit(): appends the target and the
        order (as bytes) to `out`. The same draws, without the per-row objects (--shuffle's pass 1)."""
        c = self.counts.get((key, n))
        if c is None:
            c = self.counts[(key, n)] = [0] * n
        target, d, _ = _draw_free(c, n, gold, r, True)
        c[target] += 1
        out.append(target)
        out += d[:target]
        out.append(gold)
        out += d[target:]

    def commit(self, key: str, n: int, pos: int) -> None:
        c = self.counts.get((key, n))
        if c is None:
            c = self.counts[(key, n)] = [0] * n
        c[pos] += 1

    def spread(self) -> dict[str, dict[int, int]]:
        """max - min gold count over positions, per output key and option count."""
        out: dict[str, dict[int, int]] = {}
        for (key, n), c in sorted(self.counts.items()):
            out.setdefault(key, {})[n] = max(c) - min(c)
        return out


def arrange(n: int, gold: int, pinned: Iterable[int], target: int, rng: RowRandom) -> list[int]:
    """The new order as source positions: result[p] is the source choice shown at position p. The gold goes
    to `target`, pinned choices stay, the other choices are shuffled into the remaining positions."""
    if not pinned:
        src = [*range(n)]
        del src[gold]
        rng.shuffle(src)
        src.insert(target, gold)
        return src
    pins = set(pinned)
    perm = [-1] * n
    for p in pins:
        perm[p] = p
    perm[target] = gold
    src = [i for i in range(n) if i not in pins and i != gold]
    rng.shuffle(src)
    it = iter(src)
    for p in range(n):
        if perm[p] < 0:
            perm[p] = next(it)
    return perm
