"""Cross-row state and its rules: duplicates, the gold-letter histogram and position bias.

The per-row work (engine.RowChecker) hands each row's small facts here as `RowKeys`, in input order. A
worker process can compute RowKeys: the prompt travels as 64 bits of its stable digest (prompt.key_of_text /
prompt_key), never Python's salted hash(); the uuid travels as itself and is hashed only here, in the one
process that owns the index. Per row the duplicate index keeps two entries (uuid -> first location and prompt;
prompt -> first location) packed in numpy columns, 24 bytes each (packed.PackedIndex), never the row.
"""

from __future__ import annotations

import functools
import hashlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import compress
from typing import Any, NamedTuple

from ..fields import permutation_link, permutation_question
from ..prompt import key_of_text, messages, prompt_key
from ..records import Row
from .facts import RowFacts
from .packed import MASK64, PackedIndex
from .registry import CROSS, ERROR, INPUT, WARNING, Hit, rule

# Position bias: a letter is flagged when its gold count is more than BIAS_RATIO times its expected count
# under a uniform choice among the letters each row actually offers, and that expectation is at least
# BIAS_MIN_EXPECTED rows (then the excess is >= 20 rows and >= ~4.5 binomial standard deviations).
BIAS_RATIO = 2.0
BIAS_MIN_EXPECTED = 20.0
BIAS_RULE = (
    f"observed > {BIAS_RATIO:g}x expected, expected = sum over rows of 1/(number of offered letters) for "
    f"rows offering the letter, flagged only when expected >= {BIAS_MIN_EXPECTED:g}"
)
PROMPT_PATH = ("responses_create_params", "input", 0, "content")
_LOC_BITS = 64
_NO_PROMPT = 1 << 63  # in a uuid entry: the row had no prompt
_LOC_MASK = _NO_PROMPT - 1


class RowKeys(NamedTuple):
    """What the cross-row rules need of one row (picklable, a few dozen bytes)."""

    prompt: int | None  # 64 bits of prompt.prompt_key; None without a prompt text
    uuid: str | None
    gold: str | None  # the gold letter when it names an offered letter
    letters: str | tuple[str, ...]  # the offered letters
    patterns: tuple[str, ...] = ()  # the output_regex patterns (counted as patterns_checked)


NO_KEYS = RowKeys(None, None, None, "")


class KeyColumns(NamedTuple):
    """The RowKeys of a chunk's rows as columns (plain lists pickle several times faster than one NamedTuple
    per row); `missing` are the positions of rows without keys (unreadable rows)."""

    prompts: list[int | None]
    uuids: list[str | None]
    golds: list[str | None]
    letters: list[str | tuple[str, ...]]
    patterns: list[tuple[str, ...]]
    missing: list[int]

    @classmethod
    def of(cls, keys: list[RowKeys | None]) -> KeyColumns:
        missing = [i for i, k in enumerate(keys) if k is None]
        if missing:
            keys = [NO_KEYS if k is None else k for k in keys]
        if not keys:
            return cls([], [], [], [], [], missing)
        cols = [*map(list, zip(*keys, strict=True))]
        return cls(*cols, missing)  # type: ignore[call-arg]

    def row(self, i: int) -> RowKeys:
        return RowKeys(self.prompts[i], self.uuids[i], self.golds[i], self.letters[i], self.patterns[i])


def _int64(digest: bytes) -> int:
    return int.from_bytes(digest[:8], "little")


def row_keys(f: RowFacts) -> RowKeys:
    if f.prompt is not None:
        pk: int | None = _int64(key_of_text(f.prompt))
    else:  # other shapes (several messages, ...): the same definition, when some message has text
        rcp = f.d.get("responses_create_params")
        msgs = messages(rcp) or []
        has_text = any(isinstance(t, str) and t.strip() for _, t in msgs)
        pk = _int64(prompt_key(rcp)) if has_text else None  # type: ignore[arg-type]
    u = f.uuid
    patterns = f.orx.patterns if f.orx is not None else ()
    if u is None:
        return RowKeys(pk, None, f.gold, f.letters, patterns)
    return RowKeys(pk, _uuid_key(str(u), f.d) if f.linked else str(u), f.gold, f.letters, patterns)


ORDER_MARK = "\x1f"  # uuid ORDER_MARK n: option order n of a permuted question (shown without it)


def _uuid_key(u: str, d: dict[str, Any]) -> str:
    """The uuid as the duplicate index keys it: an option order of a permuted question (prepare --permute: its
    link names its own uuid's question) is keyed with its order, so the question's other orders, which share
    its uuid by design, are not reported as reusing it; the same order twice still is (and so is another
    question under that uuid)."""
    q = permutation_question(d)
    if q is None or q != "uuid:" + u:
        return u
    link = permutation_link(d) or {}
    return f"{u}{ORDER_MARK}{link.get('variant')}"


def _shown(uuid: str | None) -> str | None:
    return uuid.split(ORDER_MARK, 1)[0] if uuid is not None else None


def _stable64(s: str) -> int:
    """64 bits of blake2b of a string: stable across processes, unlike hash() (for the patterns count)."""
    return _int64(hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=8).digest())


_pattern64 = functools.lru_cache(maxsize=4096)(_stable64)  # a handful of distinct patterns, seen on every row


@dataclass
class Seen:
    """What the duplicate index knew about a row before the row was added (the duplicate rules' facts)."""

    row: Row
    uuid: str | None
    uuid_first: str | None  # file:line of the first row with this uuid
    same_prompt: bool  # ... and that row had the same prompt
    prompt_first: str | None  # file:line of the first row with this prompt
    split_first: str | None  # its split


class CrossRow:
    """Duplicate index, gold histogram, offered letter sets and distinct patterns, fed in input order."""

    def __init__(self) -> None:
        # uuid hash -> prompt << 64 | packed location (| _NO_PROMPT); prompt -> packed location
        self._uuids = PackedIndex()
        self._prompts = PackedIndex()
        self._files: list[tuple[str, str | None]] = []
        self._file_ids: dict[tuple[str, str | None], int] = {}
        self._patterns: set[int] = set()
        self.gold_hist: Counter[str] = Counter()
        self.letter_sets: Counter[str | tuple[str, ...]] = Counter()  # offered letters of rows with a gold

    def observe(self, row: Row, keys: RowKeys) -> Seen | None:
        """Adds the row to the state; what the index already knew of its uuid and prompt, None if nothing."""
        if keys.gold is not None:
            self.count_gold(keys.gold, keys.letters)
        for p in keys.patterns:
            self._patterns.add(_pattern64(p))
        seen = None
        pk = keys.prompt
        loc = -1
        if keys.uuid is not None:
            # hashed here, in the process that owns the index (the uuid itself is what crosses processes)
            u = hash(keys.uuid) & MASK64
            first = self._uuids.get(u)
            if first is None:
                loc = self._where(row)
                self._uuids[u] = (pk << _LOC_BITS) | loc if pk is not None else loc | _NO_PROMPT
            else:
                same = pk is not None and not first & _NO_PROMPT and (first >> _LOC_BITS) == pk
                where = self._describe(first & _LOC_MASK)[0]
                seen = Seen(row, keys.uuid, where, same, None, None)
        if pk is not None:
            first_p = self._prompts.get(pk)
            if first_p is None:
                self._prompts[pk] = loc if loc >= 0 else self._where(row)
            else:
                seen = seen or Seen(row, keys.uuid, None, False, None, None)
                seen.prompt_first, seen.split_first = self._describe(first_p)
        return seen

    def observe_many(
        self, file: str, split: str | None, lines: list[int], first_index: int, cols: KeyColumns
    ) -> dict[int, Seen]:
        """observe() for the rows of one chunk in order (row i at `lines[i]`, index first_index + i); the
        Seen of the rows the index already knew something of, by position. When every row has a prompt
        and a uuid (or none has a uuid) and none repeats an earlier one or another of the chunk, the index
        is updated with a few C-level passes; otherwise row by row, through observe() itself."""
        n = len(lines)
        prompts, uuids = cols.prompts, cols.uuids
        hashes = None if None in uuids else [hash(u) & MASK64 for u in uuids]
        no_uuids = hashes is None and not any(u is not None for u in uuids)
        if (
            not cols.missing
            and (hashes is not None or no_uuids)
            and None not in prompts
            and len(set(prompts)) == n
            and self._prompts.isdisjoint(prompts)  # type: ignore[arg-type]  # (None not in prompts)
            and (hashes is None or (len(set(hashes)) == n and self._uuids.isdisjoint(hashes)))
        ):
            fid = self._file_id(file, split) << 32
            locs = [fid | line for line in lines]
            self._prompts.update(zip(prompts, locs, strict=True))  # type: ignore[arg-type]  # (None not in prompts)
            if hashes is not None:
                packed = [(p << _LOC_BITS) | loc for p, loc in zip(prompts, locs, strict=True)]  # type: ignore[operator]
                self._uuids.update(zip(hashes, packed, strict=True))
            golds = cols.golds
            self.gold_hist.update(filter(None, golds))
            self.letter_sets.update(compress(cols.letters, golds))
            for ps in set(cols.patterns):
                self._patterns.update(map(_pattern64, ps))
            return {}
        out: dict[int, Seen] = {}
        missing = set(cols.missing)
        self._uuids.prefetch(
            hashes if hashes is not None else [hash(u) & MASK64 for u in uuids if u is not None]
        )
        self._prompts.prefetch([p for p in prompts if p is not None])
        try:
            for i, line in enumerate(lines):
                if i in missing:
                    continue
                seen = self.observe(Row(file, line, first_index + i, None, None, split), cols.row(i))
                if seen is not None:
                    out[i] = seen
        finally:
            self._uuids.prefetch(None)
            self._prompts.prefetch(None)
        return out

    def count_gold(self, gold: str, letters: str | tuple[str, ...], n: int = 1) -> None:
        """`n` rows with this gold among these offered letters (the position-bias state; audit counts a
        chunk's rows per option count at once)."""
        self.gold_hist[gold] += n
        self.letter_sets[letters] += n

    @property
    def patterns_checked(self) -> int:
        return len(self._patterns)

    def _where(self, row: Row) -> int:
        return (self._file_id(row.file, row.split) << 32) | row.line

    def _file_id(self, file: str, split: str | None) -> int:
        key = (file, split)
        fid = self._file_ids.get(key)
        if fid is None:
            fid = self._file_ids[key] = len(self._files)
            self._files.append(key)
        return fid

    def _describe(self, packed: int) -> tuple[str, str | None]:
        file, split = self._files[packed >> 32]
        return f"{file}:{packed & 0xFFFFFFFF}", split

    def position_bias(self) -> dict[str, Any]:
        """Expected gold count per letter under a uniform choice among each row's offered letters."""
        expected: dict[str, float] = {}
        for letters, n in self.letter_sets.items():
            share = n / len(letters)
            for L in letters:
                expected[L] = expected.get(L, 0.0) + share
        flagged = [
            L
            for L in sorted(expected)
            if expected[L] >= BIAS_MIN_EXPECTED and self.gold_hist[L] > BIAS_RATIO * expected[L]
        ]
        return {
            "rule": BIAS_RULE,
            "expected": {L: round(v, 3) for L, v in sorted(expected.items())},
            "flagged": flagged,
        }


# -- rules --------------------------------------------------------------------------------------------------


@rule(
    "duplicate_row",
    ERROR,
    "the same row twice: a uuid and a prompt both identical to an earlier row's (reported on the later row, "
    "naming the first's file:line)",
    "drop the copy",
    scope=CROSS,
)
def duplicate_row(s: Seen) -> Iterator[Hit]:
    if s.uuid_first is not None and s.same_prompt:
        yield (
            ("uuid",),
            (
                f"this row repeats the row at {s.uuid_first} (same uuid {_shown(s.uuid)!r}, same prompt); drop the copy, "
                "or it is trained on twice as often"
            ),
        )


@rule(
    "duplicate_uuid",
    WARNING,
    "a uuid already used by an earlier row with another prompt. A uuid names a question, not a row: NeMo "
    "Gym's own example data renders one question under several templates with the same uuid, so this is "
    "not an error",
    "give each row its own uuid if anything keys on it",
    scope=CROSS,
)
def duplicate_uuid(s: Seen) -> Iterator[Hit]:
    if s.uuid_first is not None and not s.same_prompt:
        yield (
            ("uuid",),
            (
                f"uuid {_shown(s.uuid)!r} is already used by the row at {s.uuid_first} with another prompt; fine for "
                "template variants of one question, but the uuid no longer identifies a row (give each row its "
                "own uuid if anything keys on it)"
            ),
        )


@rule(
    "duplicate_prompt",
    WARNING,
    "a prompt identical to an earlier row's (the same `prompt.prompt_key` as rescore and summarize use; "
    "naming it; the message flags train/validation leakage when the splits differ)",
    "drop one unless intended",
    scope=CROSS,
)
def duplicate_prompt(s: Seen) -> Iterator[Hit]:
    if s.prompt_first is None or (s.uuid_first is not None and s.same_prompt):
        return
    leak = ""
    if s.split_first and s.row.split and s.split_first != s.row.split:
        leak = f" (split {s.split_first} vs {s.row.split}: evaluation leaks into training)"
    yield (
        PROMPT_PATH,
        (
            f"the same prompt as the row at {s.prompt_first}{leak}; drop one of them unless the repeat is intended"
        ),
    )


@rule(
    "answer_position_bias",
    WARNING,
    "one gold letter far over its uniform share, over the whole input (see below)",
    "shuffle the option order per row",
    scope=INPUT,
)
def answer_position_bias(state: CrossRow) -> Iterator[Hit]:
    bias = state.position_bias()
    total = sum(state.gold_hist.values())
    for letter in bias["flagged"]:
        obs = state.gold_hist[letter]
        exp = bias["expected"][letter]
        yield (
            ("expected_answer",),
            (
                f"expected_answer is {letter} in {obs} of {total} rows ({100 * obs / total:.1f}%), "
                f"{obs / exp:.1f}x its uniform share ({exp:.0f} rows expected): a model that always answers "
                f"{letter} is rewarded far above chance; shuffle the option order per row"
            ),
        )
