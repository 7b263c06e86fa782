"""grader.nfkc.nfkc is exactly unicodedata.normalize("NFKC", ...), on texts built to break a word-by-word scheme:
combining marks after spaces and newlines, Hangul jamo that compose, compatibility characters whose forms hold
spaces, astral compatibility letters, Indic and Arabic text, and arbitrary Unicode."""

from __future__ import annotations

import unicodedata

from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcqa_prep.grader.nfkc import _unstable, nfkc

PIECES = [
    " ",
    "\n",
    "  ",
    "a",
    "e",
    "\u0301",  # combining acute: composes with the letter before it
    "\u0316\u0301",  # two marks out of canonical order
    "\u00a8",  # diaeresis: its compatibility form is a space and a combining mark
    "\u1100\u1161",  # Hangul L + V jamo -> a syllable
    "\u11a8",  # trailing jamo: composes with an LV syllable before it
    "\uac00",  # an LV syllable
    "ﬁ",
    "Ａｎｓｗｅｒ：",
    "（Ｂ）",
    "，",
    "。",
    "क़",  # Devanagari with nukta
    "\u0915\u093c",
    "\u09c7\u09be",  # Bengali vowel signs that compose
    "ﻼ",  # Arabic presentation form
    "選択肢",
    "\U0001d400",  # mathematical bold A (astral, compatibility)
    "🤔",
    "\u2126",  # ohm sign: a singleton decomposition
    "İı",
    "Final Choice: C",
]


@settings(max_examples=3000, deadline=None)
@given(text=st.lists(st.sampled_from(PIECES), max_size=30).map("".join) | st.text(max_size=80))
@example(" \u0301")
@example("a\n\u0301b")
@example("\uac00 \u11a8\uac00\u11a8")
@example("x\u00a8y")
def test_nfkc_equals_unicodedata(text):
    assert nfkc(text) == unicodedata.normalize("NFKC", text)


def test_every_stable_character_is_left_alone():
    """What the scheme copies (every character outside the unstable set) is a starter NFKC keeps."""
    bmp, astral = _unstable()
    for cp in range(0x80, 0x10000):
        c = chr(cp)
        if bmp.match(c) is None:
            assert unicodedata.combining(c) == 0 and unicodedata.normalize("NFKC", c) == c, hex(cp)
    assert "\U0001d400" in astral and "🤔" not in astral
