"""Letters, gold and text normalisation shared by every grading mode (grading.md, "Letters and gold")."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

from ..labels import LETTER_SET, NEMO_GYM_LOCALISED

# Localised letters that models write for A-D (Arabic abjad order, Bengali) -> Latin: NeMo Gym's mapping, a
# view of the one label table (labels.py), frozen for parity.
LOCALISED = dict(NEMO_GYM_LOCALISED)
_LOCALISED_TABLE = str.maketrans(LOCALISED)


def allowed_letters(options: Any) -> dict[str, str | None]:
    """Map each allowed letter (upper-case) to its option text, in option order.

    A letter is allowed when it is a one-character alphabetic key whose value is not null. Accepts the
    single-key dict shape and the Parquet shape where every element carries all keys with nulls.
    Anything malformed is skipped here; `validate` reports it.
    """
    if not isinstance(options, list):
        return {}
    fast = _allowed_fast(options)
    return fast if fast is not None else _allowed_general(options)


def _allowed_general(options: list[Any]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for opt in options:
        # `type(...) is dict` first: the Mapping ABC check costs ~1 µs per option on the hot path
        if type(opt) is not dict and not isinstance(opt, Mapping):
            continue
        for key, value in opt.items():
            if value is None or not isinstance(key, str) or len(key) != 1 or not key.isalpha():
                continue
            letter = key.upper()
            if letter not in out:
                out[letter] = value if isinstance(value, str) else str(value)
    return out


def _allowed_fast(options: list[Any]) -> dict[str, str | None] | None:
    """The common shape in few C-level steps: single-key dicts, upper-case one-letter ASCII keys, string
    texts, no repeated letter. None for anything else (the general loop handles it)."""
    d: dict[str, Any] = {}
    update = d.update
    try:
        for opt in options:
            if type(opt) is not dict or len(opt) != 1:
                return None
            update(opt)
    except TypeError:
        return None
    if len(d) != len(options) or not LETTER_SET.issuperset(d):  # a repeated letter, or another key
        return None
    for text in d.values():
        if type(text) is not str:
            return None
    return d


def normalize_gold(expected_answer: Any) -> str:
    """Gold letter: `expected_answer` stripped and upper-cased ('' when absent or not a string)."""
    if not isinstance(expected_answer, str):
        return "" if expected_answer is None else str(expected_answer).strip().upper()
    return expected_answer.strip().upper()


def map_localised(s: str) -> str:
    """NFKC (full-width Ａ -> A) then localised letters -> A-D."""
    return unicodedata.normalize("NFKC", s).translate(_LOCALISED_TABLE)


def normalize_option_text(s: str) -> str:
    """Lower-case and collapse whitespace, for comparing a payload with option texts."""
    return " ".join(s.lower().split())


def letter_for_text(payload: str, letters: Mapping[str, str | None]) -> str | None:
    """The first option whose normalised text equals the normalised payload, or None (null texts skipped).

    Plain equality, as NeMo Gym compares: an empty payload matches only an empty option text, which
    `validate` reports as an error anyway."""
    norm = normalize_option_text(payload)
    for letter, text in letters.items():
        if text is not None and normalize_option_text(text) == norm:
            return letter
    return None
