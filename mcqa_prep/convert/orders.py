"""Which option orders a question is written in: K of them, seeded by the question, anchored options in place.

An order is a tuple of source positions: `order[p]` is the index (in the row as given) of the option shown at
position p, the convention of convert's `metadata.convert.option_source_index`. Letters stay where they are
(position p keeps its letter and its label in the prompt); texts move.

- **rotation** (CircularEval's cyclic shifts): the movable options (every option but the anchored ones) are
  shifted cyclically among the movable positions, so over all shifts the gold visits every movable position
  exactly once. With K at least the number of movable options every shift is written; with fewer, K shifts
  spread evenly over them (the identity's shift first when it is asked for, else from a seeded offset).
- **random**: K distinct orders of the movable options drawn uniformly (the identity first when asked for,
  never otherwise): K drawn without replacement from every order when there are at most 7! of them, else
  by Fisher-Yates with repeats redrawn.

Anchored options ("All of the above", "以上都对", "Both A and B" and the options it names; convert's phrase
table, every language it knows: convert/balance.scan_pins) keep their positions in every order. A row whose
letter references cannot be resolved, or whose options are all anchored, has one order: the identity.

Randomness: 8,192 bits of SHAKE-256 of the seed's salt and the question's id, consumed by divmod (convert's
RowRandom; enough for 64 orders of 26 options): the same on every platform and Python version, independent of
every other row, so the same seed gives the same orders byte for byte.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import UsageError
from .balance import RowRandom, scan_pins

MODES = ("rotation", "random")
MAX_VARIANTS = 64  # more orders than this of one question is not a training set, it is a typo
_RANDOM_TRIES = 64  # redraws of a repeated order before giving up on a row (m > 7: practically never)
_TABLE_MAX = 7  # up to 7! orders: drawn by their index, without replacement
_STREAM_BYTES = 1024


@dataclass(frozen=True)
class PermuteSpec:
    """What a user asked for: `variants` orders per question (K), the mode, the seed, and whether the row's
    own order (the identity) is one of them."""

    variants: int
    mode: str = "rotation"
    seed: int = 0
    identity: bool = True

    def check(self) -> None:
        if not 1 <= self.variants <= MAX_VARIANTS:
            raise UsageError(
                f"permutations per question must be 1..{MAX_VARIANTS}, got {self.variants}",
                reason="bad_permute",
            )
        if self.mode not in MODES:
            raise UsageError(
                f"permutation mode must be one of {', '.join(MODES)}, got {self.mode!r}", reason="bad_permute"
            )
        if self.variants == 1 and self.identity:
            raise UsageError(
                "one order per question that is the row's own order permutes nothing: ask for more orders, "
                "or leave the identity out",
                reason="bad_permute",
            )

    def doc(self) -> dict[str, object]:
        """As recorded (a manifest's `settings.permute`, convert's report): another value is another output."""
        return {"variants": self.variants, "mode": self.mode, "seed": self.seed, "identity": self.identity}

    def salt(self) -> bytes:
        return hashlib.sha256(b"mcqa-prep/permute seed %d" % self.seed).digest()[:16]


def rng_for(question: str, salt: bytes) -> RowRandom:
    """The question's random stream: SHAKE-256 of the seed's salt and the question id."""
    h = hashlib.shake_256(salt + question.encode("utf-8", "surrogatepass")).digest(_STREAM_BYTES)
    return RowRandom(int.from_bytes(h, "big"))


def nth_order(m: int, j: int) -> list[int]:
    """The j-th order of range(m) in lexicographic order (0: the identity), by the factorial number system."""
    rest = list(range(m))
    out = []
    for i in range(m, 0, -1):
        q, j = divmod(j, math.factorial(i - 1))
        out.append(rest.pop(q))
    return out


@dataclass(frozen=True)
class Orders:
    """The orders of one row, and why it has fewer than asked (None when it has as many)."""

    orders: tuple[tuple[int, ...], ...]
    pinned: frozenset[int]
    short: str | None = (
        None  # "anchored" (every option, or all but one, anchored), "unresolved", "few_orders"
    )


def orders_for(
    texts: Sequence[str], spec: PermuteSpec, rng: RowRandom, user_pins: frozenset[str] = frozenset()
) -> Orders:
    """The orders of a row whose option texts are `texts` (in its own order); `user_pins`: convert's --pin
    texts, kept in place too."""
    n = len(texts)
    pinned, unresolved = scan_pins(texts, user_pins)
    movable = [p for p in range(n) if p not in pinned]
    identity = tuple(range(n))
    if unresolved is not None or len(movable) < 2:
        return Orders((identity,), pinned, "unresolved" if unresolved is not None else "anchored")
    if spec.mode == "rotation":
        found = _rotations(n, movable, spec, rng)
        available = len(movable) - (not spec.identity)
    else:
        found = _random(n, movable, spec, rng)
        available = math.factorial(len(movable)) - (not spec.identity)
    short = "few_orders" if available < spec.variants else None
    return Orders(tuple(found), pinned, short)


def _place(n: int, movable: list[int], arranged: Sequence[int]) -> tuple[int, ...]:
    """The order that shows movable option arranged[i] at movable position i (anchored ones stay)."""
    order = list(range(n))
    for pos, src in zip(movable, arranged, strict=True):
        order[pos] = src
    return tuple(order)


def _rotations(n: int, movable: list[int], spec: PermuteSpec, rng: RowRandom) -> list[tuple[int, ...]]:
    m = len(movable)
    shifts = list(range(m)) if spec.identity else list(range(1, m))
    k = min(spec.variants, len(shifts))
    offset = 0 if spec.identity or k == len(shifts) else rng.below(len(shifts))
    chosen = [shifts[(offset + (j * len(shifts)) // k) % len(shifts)] for j in range(k)]
    # shift s moves the option at movable index i to movable index (i + s) mod m
    return [_place(n, movable, [movable[(i - s) % m] for i in range(m)]) for s in chosen]


def _random(n: int, movable: list[int], spec: PermuteSpec, rng: RowRandom) -> list[tuple[int, ...]]:
    m = len(movable)
    total = math.factorial(m)
    want = min(spec.variants, total - (not spec.identity))
    out: list[tuple[int, ...]] = [tuple(range(n))] if spec.identity else []
    if m <= _TABLE_MAX:  # order 0 is the identity: draw among the others by index, without replacement
        pool = list(range(1, total))
        while len(out) < want:
            j = pool.pop(rng.below(len(pool)))
            out.append(_place(n, movable, [movable[i] for i in nth_order(m, j)]))
        return out
    seen = set(out)
    tries = 0
    while len(out) < want and tries < want * _RANDOM_TRIES:
        tries += 1
        arranged = movable[:]
        rng.shuffle(arranged)
        order = _place(n, movable, arranged)
        if order not in seen:
            seen.add(order)
            out.append(order)
    return out
