"""Per-row facts shared by the rules, and the guard bits that say which rules may fire on a row.

`RowFacts.of(row, cfg)` reads a row once: its prompt text (prompt.user_prompt's definition), its offered
letters and texts (from the reader's `Row.hint` or C-level maps over the options), its gold letter, its
output_regex. Each guard bit (G_*) is set when a cheap test *cannot prove* that some rules stay silent; the
engine runs only the rules whose guard bits are set. A guard is a sufficient condition for silence, never a
second copy of a rule: a row that the cheap tests cannot vouch for runs the rule itself, and a test runs
every rule unguarded over hundreds of mutated rows to check that a skipped rule would have found nothing.
The detailed facts (`walk()`: every option element as the option rules see it) are computed only when a
rule asks for them.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from .. import schema
from ..grader.modes import NOT_NEMO_GYM_MODES, ROW_MODES
from ..prompt import content_text, user_prompt
from ..records import Row
from .answer_format import unrendered

# guard bits: set when the rules they guard may fire on the row
G_NONFINITE = 1 << 0  # non_finite_number, non_json_value
G_SCHEMA = 1 << 1  # schema
G_PROMPT = 1 << 2  # prompt_messages
G_MARKERS = 1 << 3  # template_unrendered
G_CONTROL = 1 << 4  # text_control_character
G_OPTIONS = 1 << 5  # option element shape and letters
G_TEXTS = 1 << 6  # option texts empty / duplicate, fewer than two
G_IN_PROMPT = 1 << 7  # option_not_in_prompt
G_GOLD = 1 << 8  # expected_answer_not_option
G_MODE = 1 << 9  # grading_mode_*
G_REGEX = 1 << 10  # output_regex pattern rules (shape, compile, groups, time bound, control characters)
G_REGEX_LETTERS = 1 << 11  # positive control / letter coverage
G_REGEX_PROMPT = 1 << 12  # negative control on this row's prompt
G_AUDIT = 1 << 13  # regex_audit, regex_audit_edge: the row's audit found a counterexample
G_FORMAT = 1 << 14  # prompt_answer_format: an answer-format example of the prompt is not graded to its letter

_REGEX_BITS = G_REGEX | G_REGEX_LETTERS | G_REGEX_PROMPT | G_AUDIT | G_FORMAT  # set by RowChecker.complete
_QUIET_MODES = frozenset(m for m in ROW_MODES if m not in NOT_NEMO_GYM_MODES)
_IRREGULAR_SPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"
# control characters no text should hold: C0 but tab/newline/carriage return, DEL, C1, and invisible format
# characters that are never meant (zero-width space, word joiner, invisible operators, BOM, bidi overrides)
TEXT_CONTROL = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u180e\u200b\u2060-\u2064\u202a-\u202e\u2066-\u2069\ufeff]"
)
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n\r"


@dataclass(eq=False)
class Config:
    """What the per-row rules depend on besides the row. `slow_prompts` holds the output_regex keys that
    timed out on some row's prompt: later rows skip that prompt control (it would cost a timeout each)."""

    regex_timeout: float
    slow_prompts: set[Any] = field(default_factory=set)


@dataclass
class OptionWalk:
    """Every option element as the option rules see it (the definition the guards vouch for)."""

    shapes: list[tuple[int, list[tuple[str, Any]]]] = field(default_factory=list)  # elements != 1 text
    bad_keys: list[tuple[int, str]] = field(default_factory=list)
    duplicates: list[tuple[int, str, int]] = field(default_factory=list)  # (index, letter, first index)
    letters: dict[str, tuple[int, str, str]] = field(default_factory=dict)  # letter -> (index, key, text)


def walk_options(opts: Any) -> OptionWalk:
    w = OptionWalk()
    if not isinstance(opts, list):
        return w
    for i, opt in enumerate(opts):
        if not isinstance(opt, dict) or not opt:
            continue  # the schema rule says it
        present = [(k, v) for k, v in opt.items() if v is not None]
        if len(present) != 1:
            w.shapes.append((i, present))
        for k, v in present:
            if not isinstance(k, str) or len(k) != 1 or not k.isalpha():
                w.bad_keys.append((i, k))
                continue
            L = k.upper()
            if L in w.letters:
                w.duplicates.append((i, L, w.letters[L][0]))
            elif isinstance(v, str):
                w.letters[L] = (i, k, v)
    return w


_KEPT = ("cfg", "gm", "uuid", "prompt", "keys", "letters", "texts", "gold", "_walk", "linked", "exs")


class RowFacts:
    """The shared facts of one row (see the module docstring); `may` holds the guard bits."""

    __slots__ = (
        "row",
        "_d",
        "_load",
        "cfg",
        "tm",
        "gm",
        "uuid",
        "prompt",
        "keys",
        "letters",
        "texts",
        "gold",
        "orx",
        "plan",
        "may",
        "audit",
        "quotes",
        "formats",
        "_walk",
        "_echo",
        "linked",
        "exs",
    )

    def __init__(self, row: Row, cfg: Config, load: Any = None) -> None:
        self.row = row
        self._d: dict[str, Any] | None = row.data
        self._load = load  # without row.data: gives the row's dict when a rule first reads it (batch.py)
        self.cfg = cfg
        self.tm: Any = None  # the row's template_metadata, grading_mode and uuid as its dict holds them
        self.gm: Any = None
        self.uuid: Any = None
        self.prompt: str | None = None  # the single user message's text, when non-blank
        self.keys: list[str] = []  # option keys as written, aligned with letters / texts
        self.letters: str | tuple[str, ...] = (
            ""  # the offered letters: usable (non-blank text), upper-cased, in option order
        )
        self.texts: list[str] = []
        self.gold: str | None = None  # the gold letter when it names an offered letter
        self.orx: Any = None  # regex_rules.RegexKey of a usable output_regex, else None
        self.plan: Any = None  # regex_rules.RegexPlan for (orx, letters)
        self.may = 0
        self.audit: Any = None  # regex_audit.Audit of the row's output_regex (regex_audit_rules.audit_facts)
        self.quotes: list[Any] = []  # audit.Counterexample: the prompt's own examples quoted back, misread
        self.formats: list[
            Any
        ] = []  # regex_audit_rules.FormatMiss: prompt examples not graded to their letter
        self._walk: OptionWalk | None = None
        self._echo: Any = None  # regex_rules: the custom extraction of this row's prompt, once
        self.linked = True  # the row may carry a permutation link (False: its batch has no metadata column)
        self.exs: Any = None  # regex_audit_rules: the prompt's answer-format examples (and their keys), once

    def refit(self, row: Row) -> RowFacts:
        """These facts for `row`: this row with only its output_regex replaced, by another string (this row's
        was a string too), as the regex rules have not seen it yet. What does not depend on the output_regex is
        kept (the prompt's facts and examples, the options', the gold, the mode, the guard bits they set: the
        schema allows any string there, so its bit stands too); `row.data` must be this row's dict but for
        template_metadata.output_regex."""
        g = RowFacts.__new__(RowFacts)
        for name in _KEPT:
            setattr(g, name, getattr(self, name))
        g.row, g._d, g._load = row, row.data, None
        g.tm = row.data["template_metadata"]  # type: ignore[index]
        g.orx = g.plan = g.audit = g._echo = None
        g.quotes, g.formats = [], []
        g.may = self.may & ~_REGEX_BITS
        return g

    @property
    def d(self) -> dict[str, Any]:
        """The row as read. A row checked from its batch's columns (batch.py) is built only when a rule reads it:
        its facts are the columns' and agree with the row's (tests/test_validate_batch.py)."""
        if self._d is None:
            self._d = self._load()
        return self._d

    def walk(self) -> OptionWalk:
        if self._walk is None:
            self._walk = walk_options(self.d.get("options"))
        return self._walk

    @classmethod
    def of(cls, row: Row, cfg: Config) -> RowFacts:
        f = cls(row, cfg)
        d: dict[str, Any] = row.data  # type: ignore[assignment]
        may = G_NONFINITE if row.nonfinite or row.foreign else 0
        if not schema_quiet(d):
            may |= G_SCHEMA
        opts = d.get("options")
        pair = row.hint or _single_key(opts) or _null_filled(opts)
        text = _prompt_text(d.get("responses_create_params"))
        gold, gm, tm, uuid = (
            d.get("expected_answer"),
            d.get("grading_mode"),
            d.get("template_metadata"),
            d.get("uuid"),
        )
        return f.settle(may, text, pair, gold, gm, tm, uuid)

    def settle(
        self, may: int, text: str | None, pair: Any, gold: Any, gm: Any, tm: Any, uuid: Any
    ) -> RowFacts:
        """The facts from what was read of the row (from its dict, or from its batch's columns: batch.py): the
        guard bits found so far, its prompt text (None: not one user message with text), its (keys, texts)
        when its options are in a normal shape, and its expected_answer, grading_mode, template_metadata and
        uuid as the row holds them."""
        self.gm, self.tm, self.uuid = gm, tm, uuid
        may |= self._prompt_facts(text)
        may |= self._option_facts(pair)
        if type(gold) is str:
            g = gold.strip().upper()
            if g and (len(g) == 1 or type(self.letters) is tuple) and g in self.letters:
                self.gold = g
        if self.gold is None:
            may |= G_GOLD
        if gm is not None and (type(gm) is not str or gm not in _QUIET_MODES):
            may |= G_MODE
        self.may = (
            may  # the regex bits are added by the regex rules' own cached facts (regex_rules.regex_facts)
        )
        return self

    def _prompt_facts(self, text: str | None) -> int:
        if not text or text.isspace():
            return G_PROMPT
        self.prompt = text
        return 0 if no_markers(text) else G_MARKERS

    def _option_facts(self, pair: tuple[list[str], list[str]] | None) -> int:
        """Offered letters and texts, and which option rules may fire."""
        may = 0
        up: str | tuple[str, ...]
        if pair is not None and (up := _ascii_letters("".join(pair[0]), len(pair[0]))):
            keys, texts = pair
            if len(keys) < 2 or not usable_distinct(texts):
                may |= G_TEXTS
                keys, texts, up = self._usable()
        else:
            may |= G_OPTIONS | G_TEXTS
            keys, texts, up = self._usable()
        self.keys, self.texts, self.letters = keys, texts, up
        prompt = self.prompt
        found = texts_in(prompt, texts) if prompt is not None else 0
        if found != VERBATIM:
            may |= G_IN_PROMPT if found == 0 else 0
            if not clean_text("\n".join(texts)):
                may |= G_CONTROL
        if prompt is not None and not clean_text(prompt):  # texts found verbatim in a clean prompt are clean
            may |= G_CONTROL
        return may

    def _usable(self) -> tuple[list[str], list[str], str | tuple[str, ...]]:
        """Keys, texts and letters of the options with a non-blank text, by the option walk. The letters are
        a string when each is one character, else a tuple ('ß' upper-cases to 'SS')."""
        usable = [(L, k, t) for L, (_, k, t) in self.walk().letters.items() if t.strip()]
        letters = tuple(L for L, _, _ in usable)
        joined = "".join(letters)
        return (
            [k for _, k, _ in usable],
            [t for *_, t in usable],
            joined if len(joined) == len(letters) else letters,
        )


# ----------------------------------------------------------------------------------------- cheap tests


def _prompt_text(rcp: Any) -> str | None:
    """The text of the row's single user message (prompt.user_prompt, the definition), the common shape read
    directly."""
    if type(rcp) is dict and type(inp := rcp.get("input")) is list and len(inp) == 1:
        m = inp[0]
        return content_text(m.get("content")) if type(m) is dict and m.get("role") == "user" else None
    return user_prompt(rcp)


@functools.cache
def _schema_validator() -> Any:
    import jsonschema_rs

    return jsonschema_rs.validator_for(schema.load_schema("row"))


def schema_quiet(d: Any) -> bool:
    """True when mcqa-row.v1 has no error for `d`, by jsonschema-rs (compiled from the same schema file);
    any doubt (a value it cannot read, e.g. NaN or a Parquet timestamp) is False: the schema rule runs."""
    global _IS_VALID
    try:
        if _IS_VALID is None:
            _IS_VALID = _schema_validator().is_valid
        return _IS_VALID(d)
    except Exception:  # noqa: BLE001 - a guard may only say "cannot prove"
        return False


_IS_VALID: Any = None


def no_markers(prompt: str) -> bool:
    """No unrendered template marker in the prompt (answer_format.unrendered, the rule's own definition: a
    prompt without a brace costs one memchr-fast search)."""
    return "{" not in prompt or not unrendered(prompt)


def clean_text(s: str) -> bool:
    """No TEXT_CONTROL character: one C-level pass for ASCII text, a regex search otherwise."""
    if s.isascii():
        return not s.encode().translate(None, _PRINTABLE_ASCII)
    return TEXT_CONTROL.search(s) is None


@functools.lru_cache(maxsize=4096)
def _ascii_letters(joined: str, n: int) -> str:
    """The upper-cased letters when the n keys are one ASCII letter each, distinct case-insensitively,
    else '' (then the option rules run)."""
    up = joined.upper()
    if len(joined) != n or not joined.isascii() or not joined.isalpha() or len(set(up)) != n:
        return ""
    return up


_DICT_ONLY = {dict}
_ONE_ONLY = {1}
_STR_ONLY = {str}


def _single_key(opts: Any) -> tuple[list[str], list[str]] | None:
    """(keys, texts) when every element is a single-key dict with a string key and text (C-level maps)."""
    if type(opts) is not list or set(map(type, opts)) != _DICT_ONLY or set(map(len, opts)) != _ONE_ONLY:
        return None
    keys = [*chain.from_iterable(opts)]
    texts = [*map(dict.__getitem__, opts, keys)]
    if set(map(type, keys + texts)) != _STR_ONLY:
        return None
    return keys, texts


def _null_filled(opts: Any) -> tuple[list[str], list[str]] | None:
    """(keys, texts) when `opts` has the Parquet layout (element i carries every letter key and only the i-th
    is non-null), checked with C-level maps; None for anything else."""
    if type(opts) is not list or not opts or type(o0 := opts[0]) is not dict or len(o0) < 2:
        return None
    keys = [*o0][: len(opts)]
    try:
        texts = [*map(dict.__getitem__, opts, keys)]
    except (KeyError, TypeError):
        return None
    if len(texts) != len(opts) or set(map(type, texts)) != _STR_ONLY or set(map(type, keys)) != _STR_ONLY:
        return None
    values = [*chain.from_iterable(map(dict.values, opts))]
    # every element has a non-null text at its own key; n nulls fewer than values means exactly one per element
    if values.count(None) != len(values) - len(opts):
        return None
    return keys, texts


def normalize_texts(texts: list[str]) -> list[str]:
    """Option texts lower-cased with whitespace collapsed (how lenient modes compare them), in one pass over
    the joined texts instead of one per text."""
    parts = " ".join("\x01".join(texts).lower().split()).split("\x01")
    if len(parts) != len(texts):  # a text holding the separator itself
        return [" ".join(t.lower().split()) for t in texts]
    return [p.strip() for p in parts] if len(parts) > 1 else parts


# bytes.translate table: ASCII upper -> lower case, whitespace other than ' ' -> the separator
_FOLD = bytes(c + 32 if 65 <= c <= 90 else 1 if chr(c) in _IRREGULAR_SPACE else c for c in range(256))


def usable_distinct(texts: list[str]) -> bool:
    """Every text is non-blank and no two are equal under normalize_texts. For ASCII texts whose only
    whitespace is ' ', distinct lower-cased space-free forms prove it in a few C-level passes (two texts equal
    under normalize_texts are equal in that form too); otherwise by the definition."""
    n = len(texts)
    j = "\x01".join(texts)
    if j.isascii():
        parts = j.encode().translate(_FOLD, b" ").split(b"\x01")
        if len(parts) == n:  # no text holds the separator or whitespace other than ' '
            if b"" in parts:
                return False
            if len(set(parts)) == n:
                return True
    return all(map(str.strip, texts)) and len(set(normalize_texts(texts))) == n


VERBATIM = 2  # texts_in: every text occurs verbatim in the prompt
COLLAPSED = 1  # ... some only after collapsing whitespace


def texts_in(prompt: str, texts: list[str]) -> int:
    """VERBATIM when every text occurs in the prompt as written, COLLAPSED when every text does after
    collapsing whitespace on both sides, else 0. Option lines are usually rendered in order with a constant
    separator ("\\nB: "), so after the first two searches each text is confirmed by one comparison at its
    predicted position."""
    end = 0
    gap = -1
    found = VERBATIM
    flat: str | None = None
    for t in texts:
        if gap >= 0 and prompt.startswith(t, end + gap):
            end += gap + len(t)
            continue
        at = prompt.find(t, end)
        if at < 0:
            if t not in prompt:
                if flat is None:
                    flat = " ".join(prompt.split())
                if " ".join(t.split()) not in flat:
                    return 0
                found = COLLAPSED
            gap = -1
            continue
        if end:
            gap = at - end
        end = at + len(t)
    return found


def positive_finite(x: Any) -> bool:
    """A usable time limit: a number > 0 and finite (0 would mean no bound at all to the regex engine)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0
