"""Where a source row keeps its question, its choices and its answer, and how the answer is encoded.

A `ColumnMap` names the columns; `resolve_column` finds one among a source's columns (exact name, then a
unique case-insensitive match, then a dotted path into a nested value); `split_choices` and `resolve_answer`
read the value shapes. `extract.Extractor` puts them together, turning each row into an `Item` or raising
`RowReject` with a stable reason. Nothing here knows about templates, letters in prompts or shuffling.

Choice shapes (exactly one per map):
- `choices`: one column holding a list of texts, a list of {label, text} objects, a {text: [...], label:
  [...]} object (the Hugging Face "sequence of struct" layout), or a {letter: text} object;
- `options`: one column per option, in order (MedMCQA opa..opd, MMMLU A..D);
- `correct` + `incorrect`: the right answer's column and the wrong answers' columns (GPQA, SciQ).
"""

from __future__ import annotations

import ast
import functools
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, NamedTuple

from ..errors import UsageError
from ..labels import LETTERS

MAX_OPTIONS = len(LETTERS)

ANSWER_TYPES = ("auto", "index", "index1", "letter", "label", "text", "flags")

# reason -> what it means; the stable names used in the rejects file and the report
REJECT_REASONS: dict[str, str] = {
    "malformed_row": "a line or record that cannot be read as a row (not JSON, not an object)",
    "missing_field": "a mapped column is absent from this row",
    "no_question": "the question is missing or empty",
    "unparseable_choices": "the choices value is neither a list nor a {label, text} structure",
    "too_few_choices": "fewer than two choices",
    "too_many_choices": f"more than {MAX_OPTIONS} choices (one letter A-Z each)",
    "empty_choice": "a choice that is empty, whitespace or null (null is allowed only after the last choice)",
    "duplicate_choices": "two choices with the same text (case and spacing ignored)",
    "no_answer": "the answer is missing, empty, or a negative index (an unlabelled test split)",
    "answer_not_in_choices": "the answer names no choice (index out of range, letter past the last "
    "choice, label or text not among the choices)",
    "unparseable_answer": "the answer key is of a kind the answer type cannot read",
    "ambiguous_answer": "the answer key names different choices when read as a position and as a text; "
    "set answer_type",
    "several_answers": "flags mark more than one correct choice",
    "prompt_self_graded": "the rendered prompt, graded as if it were a response, yields an option letter",
}


class RowReject(Exception):
    """A source row that cannot become an MCQA row; `reason` is a key of REJECT_REASONS."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


class Item(NamedTuple):
    """One source question, decoded: choices in source order (placeholders dropped) and the gold index.
    A NamedTuple: built once per row, a frozen dataclass costs several times more to construct."""

    question: str
    choices: list[str]
    gold: int
    source_index: list[int]  # for each choice, its position in the source's own choice list
    context: str | None = None
    id: Any = None
    subject: str | None = None
    kept: dict[str, Any] | None = None


_LIST_KEYS = ("options", "incorrect", "keep", "drop")
MAP_KEYS = (
    "question",
    "choices",
    "options",
    "correct",
    "incorrect",
    "answer",
    "answer_type",
    "context",
    "id",
    "subject",
    "keep",
    "drop",
)


@dataclass(frozen=True)
class ColumnMap:
    """Column names of one layout. List-valued keys are given comma-separated on the command line."""

    question: str | None = None
    choices: str | None = None
    options: tuple[str, ...] = ()
    correct: str | None = None
    incorrect: tuple[str, ...] = ()
    answer: str | None = None
    answer_type: str = "auto"
    context: str | None = None
    id: str | None = None
    subject: str | None = None
    keep: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()  # placeholder choice texts removed before the checks ("N/A")

    @property
    def shape(self) -> str:
        if self.choices:
            return "choices"
        if self.options:
            return "options"
        return "correct_incorrect"

    def with_pairs(self, pairs: Iterable[str]) -> ColumnMap:
        """This map with KEY=VALUE pairs applied (the --map option); raises UsageError on a bad pair."""
        updates: dict[str, Any] = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            key = key.strip()
            if not sep or key not in MAP_KEYS:
                raise UsageError(
                    f"column map entry {pair!r}: expected KEY=COLUMN with KEY one of {', '.join(MAP_KEYS)}",
                    reason="bad_column_map",
                )
            value = value.strip()
            if key in _LIST_KEYS:
                updates[key] = tuple(v.strip() for v in value.split(",") if v.strip())
            else:
                updates[key] = value or None
        m = replace(self, **updates)
        # a shape given explicitly replaces the preset's shape
        if "choices" in updates:
            m = replace(m, options=(), correct=None, incorrect=())
        elif "options" in updates:
            m = replace(m, choices=None, correct=None, incorrect=())
        elif "correct" in updates or "incorrect" in updates:
            m = replace(m, choices=None, options=())
        if m.shape == "correct_incorrect" and ("correct" in updates or "incorrect" in updates):
            if "answer" not in updates:
                m = replace(m, answer=None)
        return m

    def check(self) -> None:
        """Raise UsageError when the map cannot describe a multiple-choice row."""
        shapes = [bool(self.choices), bool(self.options), bool(self.correct or self.incorrect)]
        if not self.question:
            raise UsageError("the column map names no question column", reason="map_no_question")
        if sum(shapes) != 1:
            raise UsageError(
                "the column map needs exactly one choice layout: choices=COLUMN (a list), "
                "options=COL1,COL2,... (one column per option) or correct=COLUMN incorrect=COL1,COL2,..."
            )
        if shapes[2]:
            if not (self.correct and self.incorrect):
                raise UsageError("correct=COLUMN and incorrect=COL1,COL2,... go together")
            if self.answer:
                raise UsageError("answer= has no meaning with correct=/incorrect= (the correct column is it)")
        elif not self.answer:
            raise UsageError("the column map names no answer column", reason="map_no_answer")
        if self.answer_type not in ANSWER_TYPES:
            raise UsageError(f"answer_type {self.answer_type!r}: expected one of {', '.join(ANSWER_TYPES)}")
        if len(self.options) > MAX_OPTIONS or len(self.incorrect) + 1 > MAX_OPTIONS:
            raise UsageError(f"at most {MAX_OPTIONS} option columns (letters A-Z)")

    def columns(self) -> list[str]:
        """Every column name the map refers to (for projection and for the missing-column check)."""
        cols: list[str] = []
        for name in ("question", "choices", "correct", "answer", "context", "id", "subject"):
            v = getattr(self, name)
            if v:
                cols.append(v)
        cols.extend(self.options)
        cols.extend(self.incorrect)
        cols.extend(self.keep)
        return list(dict.fromkeys(cols))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if v or (f.name == "answer_type"):
                out[f.name] = list(v) if isinstance(v, tuple) else v
        return out


# --------------------------------------------------------------------------------------------- columns


class Col:
    """A resolved column: a top-level key and an optional path into nested objects."""

    __slots__ = ("name", "key", "path")

    def __init__(self, name: str, key: str, path: tuple[str, ...] = ()):
        self.name = name
        self.key = key
        self.path = path

    def get(self, row: dict[str, Any]) -> Any:
        v = row.get(self.key, ABSENT) if type(row) is dict else ABSENT
        for p in self.path:
            if isinstance(v, dict):
                v = v.get(p, ABSENT)
            else:
                return ABSENT
        return v


ABSENT = object()


def resolve_column(name: str, columns: Sequence[str]) -> Col | None:
    """The source column for a mapped name: exact, then one case-insensitive match, then a dotted path
    (`mc1_targets.choices`) whose head resolves the same way; None when nothing matches."""
    if name in columns:
        return Col(name, name)
    folded = [c for c in columns if c.casefold() == name.casefold()]
    if len(folded) == 1:
        return Col(name, folded[0])
    if "." in name:
        head, *rest = name.split(".")
        base = resolve_column(head, columns)
        if base is not None and not base.path:
            return Col(name, base.key, tuple(rest))
    return None


# --------------------------------------------------------------------------------------------- values


def as_text(v: Any) -> str | None:
    """A choice/question value as text; None for null. Numbers are written as Python writes them."""
    if v is None:
        return None
    if isinstance(v, str):
        return v.strip()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (int, float, bool)):
        return str(v)
    return None


def context_text(v: Any) -> str | None:
    """A context value as text: a list of texts (DREAM's dialogue turns, several passages) is one line each;
    None when there is no text."""
    v = maybe_json(v) if isinstance(v, str) and v.lstrip()[:1] == "[" else v
    if isinstance(v, (list, tuple)):
        lines = [t for t in (as_text(x) for x in v) if t]
        return "\n".join(lines) or None
    return as_text(v) or None


def norm_text(s: str) -> str:
    return " ".join(s.lower().split())


STR_ONLY = {str}
PLACEHOLDERS = frozenset(
    {"n/a", "na", "n.a.", "nan", "null", "none", "tbd", "-", "--", "?", "blank", "empty"}
)
LABEL_START = frozenset("Aa(")
_OWN_LABEL = re.compile(r"\(?([A-Za-z])\s*[).:]\s*")


def strip_own_labels(texts: list[Any]) -> list[Any]:
    """['A)21', 'B)21.5', ...] -> ['21', '21.5', ...] when every choice starts with its own positional
    letter and ')' '.' or ':' (AQuA-RAT, some exports): the letters would be wrong once options are
    shuffled or relabelled. Anything less consistent is kept as it is."""
    out = []
    for i, t in enumerate(texts):
        if type(t) is not str:
            return texts
        m = _OWN_LABEL.match(t)
        if m is None or m.group(1).upper() != LETTERS[i] or m.end() == len(t):
            return texts
        if t.startswith("(") and ")" not in t[: m.end()]:
            return texts
        out.append(t[m.end() :])
    return out


_RANGES: dict[int, list[int]] = {}


def range_list(n: int) -> list[int]:
    """list(range(n)), shared per n: callers only read it (it becomes metadata.convert.option_source_index)."""
    r = _RANGES.get(n)
    if r is None:
        r = _RANGES[n] = list(range(n))
    return r


_TEXT_KEYS = ("text", "atext", "content", "option", "choice", "value", "answer")
_LABEL_KEYS = ("label", "aid", "key", "letter", "id", "name")


def maybe_json(v: Any) -> Any:
    """A list or object written into a CSV cell (JSON, or Python's repr as pandas writes it)."""
    if isinstance(v, str):
        s = v.strip()
        if s[:1] in "[{" and s[-1:] in "]}":
            try:
                return json.loads(s)
            except ValueError:
                try:
                    return ast.literal_eval(s)
                except (ValueError, SyntaxError, MemoryError, RecursionError):
                    return v
    return v


def _pick_key(d: dict[str, Any], names: Sequence[str]) -> str | None:
    for n in names:
        if n in d:
            return n
    lower = {k.lower(): k for k in d if isinstance(k, str)}
    for n in names:
        if n in lower:
            return lower[n]
    return None


def split_choices(value: Any) -> tuple[list[Any], list[str] | None]:
    """(raw choice values, labels or None) of a `choices` value in any of the supported layouts."""
    value = maybe_json(value)
    labels: list[str] | None
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(x, dict) for x in value):
            first = value[0]
            if len(first) == 1 and all(len(x) == 1 for x in value):  # [{"A": "text"}, ...]
                labels = [str(next(iter(x))) for x in value]
                return [next(iter(x.values())) for x in value], labels
            tk = _pick_key(first, _TEXT_KEYS)
            lk = _pick_key(first, _LABEL_KEYS)
            if tk is None:
                raise RowReject(
                    "unparseable_choices", f"choice objects have no text field (keys: {list(first)})"
                )
            texts = [x.get(tk) for x in value]
            labels = [str(x.get(lk)) for x in value] if lk is not None else None
            return texts, labels
        return list(value), None
    if isinstance(value, dict):
        tk = _pick_key(value, _TEXT_KEYS)
        if tk is not None and isinstance(value[tk], (list, tuple)):  # {"text": [...], "label": [...]}
            texts = list(value[tk])
            lk = _pick_key(value, _LABEL_KEYS)
            labels = None
            if lk is not None and isinstance(value[lk], (list, tuple)):
                labels = [str(x) for x in value[lk]]
                if len(labels) != len(texts):
                    raise RowReject(
                        "unparseable_choices", f"{len(texts)} choice texts but {len(labels)} labels"
                    )
            return texts, labels
        # {"A": "text", "B": "text", ...}: a letter-keyed object (nulls are absent letters)
        items = [(str(k), v) for k, v in value.items() if v is not None]
        return [v for _, v in items], [k for k, _ in items]
    if value is None:
        return [], None
    if isinstance(value, str):
        split = split_labelled(value)
        if split is not None:
            return split
    raise RowReject(
        "unparseable_choices",
        f"choices must be a list, an object or one text of labelled choices ('a ) x , b ) y'), "
        f"got {type(value).__name__}",
    )


# per letter, a label after a separator (", b)") and one after any space ("b)"): the first is preferred, so a
# label-like run inside a text ("vitamin b) deficiency, b) excess") is not taken for the next label. Compiled
# on first use (104 patterns): most sources never hold choices as one labelled text
@functools.cache
def _label_at(case: str) -> list[tuple[re.Pattern[str], re.Pattern[str]]]:
    letters = LETTERS if case == "upper" else LETTERS.lower()
    return [
        (
            re.compile(rf"[,;\n]\s*(\(?{L}\s*[).:])"),
            re.compile(rf"(?:^|(?<=\s))(\(?{L}\s*[).:])"),
        )
        for L in letters
    ]


def split_labelled(text: str) -> tuple[list[str], list[str]] | None:
    """One text holding labelled choices in order, 'a ) 38 , b ) 27.6 , c ) 40' (MathQA) or 'A. x B. y'
    -> (texts, labels); None unless the first label opens the text and at least two labels follow each
    other in order (a, b, c, ...; one letter case throughout)."""
    s = text.strip()
    first = _OWN_LABEL.match(s)
    if first is None or first.group(1) not in "Aa":
        return None
    pats = _label_at("upper" if first.group(1) == "A" else "lower")
    starts: list[tuple[int, int]] = [(0, first.end())]
    for after_separator, after_space in pats[1:]:
        m = after_separator.search(s, starts[-1][1]) or after_space.search(s, starts[-1][1])
        if m is None:
            break
        starts.append((m.start(1), m.end()))
    if len(starts) < 2:
        return None
    texts = []
    for i, (_, end) in enumerate(starts):
        stop = starts[i + 1][0] if i + 1 < len(starts) else len(s)
        texts.append(s[end:stop].strip().rstrip(",;").strip())
    return texts, [LETTERS[i] for i in range(len(starts))]


# --------------------------------------------------------------------------------------------- answers


def _as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        s = v.strip()
        if s.lstrip("-").isdigit() and s.isascii():
            return int(s)
    return None


def _as_letter(v: Any) -> str | None:
    """'B', 'b', '(B)', 'B.', 'B)' -> 'B'; anything else None."""
    if not isinstance(v, str):
        return None
    s = v.strip().strip("().:[] ")
    if len(s) == 1 and s.isascii() and s.isalpha():
        return s.upper()
    return None


def _index_checked(i: int, n: int, shown: Any) -> int:
    if i < 0:
        raise RowReject("no_answer", f"answer {shown!r} is a negative index (no gold answer)")
    if i >= n:
        raise RowReject("answer_not_in_choices", f"answer {shown!r} is past the last of {n} choices")
    return i


def _by_text(s: str, texts: list[str | None]) -> int | None:
    for i, t in enumerate(texts):
        if t is not None and t == s:
            return i
    ns = norm_text(s)
    hits = [i for i, t in enumerate(texts) if t is not None and norm_text(t) == ns]
    return hits[0] if len(hits) == 1 else None


def _by_label(s: str, labels: list[str]) -> int | None:
    if s in labels:
        return labels.index(s)
    ns = s.strip().casefold()
    hits = [i for i, lab in enumerate(labels) if lab.strip().casefold() == ns]
    return hits[0] if len(hits) == 1 else None


def resolve_answer(value: Any, texts: list[str | None], labels: list[str] | None, answer_type: str) -> int:
    """The gold's position among `texts` (source order), or RowReject. See docs/design/convert.md for `auto`."""
    n = len(texts)
    value = maybe_json(value) if isinstance(value, str) and value.strip()[:1] == "[" else value
    if value is None or (isinstance(value, str) and not value.strip()):
        raise RowReject("no_answer", "the answer is missing or empty")
    if isinstance(value, float) and not math.isfinite(value):
        raise RowReject("no_answer", "the answer is NaN")
    if answer_type == "flags":
        return _by_flags(value, n)
    if isinstance(value, (list, tuple)):
        if answer_type == "auto":
            return _by_list(value, texts, labels)
        if len(value) == 1:  # [2] (AGIEval's gold), under an explicit type: its one element
            value = value[0]
    if answer_type != "auto":
        return _by_type(value, texts, labels, answer_type)
    return _auto(value, texts, labels)


def _by_flags(value: Any, n: int) -> int:
    if not isinstance(value, (list, tuple)):
        raise RowReject("unparseable_answer", f"flags must be a list of 0/1, got {value!r}")
    marked = [i for i, f in enumerate(value) if f in (1, True, "1", "true", "True")]
    if len(value) != n:
        raise RowReject("unparseable_answer", f"{len(value)} flags for {n} choices")
    if not marked:
        raise RowReject("no_answer", "no choice is flagged correct")
    if len(marked) > 1:
        raise RowReject("several_answers", f"choices {marked} are all flagged correct")
    return marked[0]


_FLAG_VALUES = (0, 1, "0", "1", "true", "false", "True", "False")


def _by_list(value: list[Any] | tuple[Any, ...], texts: list[str | None], labels: list[str] | None) -> int:
    """A list as the answer, answer_type auto: one 0/1 flag per choice, else a list of gold answers (AGIEval's
    `gold: [2]`) of which there must be exactly one."""
    n = len(texts)
    if len(value) == n and all(type(f) in (int, bool, str) and f in _FLAG_VALUES for f in value):
        return _by_flags(value, n)
    if not value:
        raise RowReject("no_answer", "the answer is an empty list")
    if len(value) > 1:
        more = f" … and {len(value) - 10} more" if len(value) > 10 else ""
        raise RowReject("several_answers", f"the answer lists {len(value)} choices: {list(value)[:10]}{more}")
    one = value[0]
    if isinstance(one, (list, tuple, dict)):
        raise RowReject("unparseable_answer", f"answer {value!r} is a nested list")
    return resolve_answer(one, texts, labels, "auto")


def _by_type(value: Any, texts: list[str | None], labels: list[str] | None, t: str) -> int:
    """The gold under an explicit answer_type: index, index1, letter, label or text."""
    n = len(texts)
    if t in ("index", "index1"):
        i = _as_int(value)
        if i is None:
            raise RowReject("unparseable_answer", f"answer {value!r} is not an integer index")
        if t == "index1":
            if i == 0:
                raise RowReject("answer_not_in_choices", "answer 0 in a 1-based index")
            i = i - 1 if i > 0 else i
        return _index_checked(i, n, value)
    if t == "letter":
        L = _as_letter(value)
        if L is None:
            raise RowReject("unparseable_answer", f"answer {value!r} is not a letter")
        return _index_checked(LETTERS.index(L), n, value)
    if t == "label":
        if labels is None:
            raise RowReject("unparseable_answer", "answer_type label, but the choices carry no labels")
        i = _by_label(str(value), labels)
        if i is None:
            raise RowReject("answer_not_in_choices", f"answer {value!r} is not one of the labels {labels}")
        return i
    if t == "text":
        i = _by_text(str(value).strip(), texts)
        if i is None:
            raise RowReject(
                "answer_not_in_choices", f"answer {str(value)[:80]!r} is not the text of a choice"
            )
        return i
    raise UsageError(f"unknown answer_type {t!r}", reason="usage")


def _auto(value: Any, texts: list[str | None], labels: list[str] | None) -> int:
    """The gold when answer_type is auto: a number is a 0-based index; a string is a label, a choice's text,
    an index or a letter, and a string that is both one choice's text and another's index is ambiguous."""
    n = len(texts)
    if isinstance(value, bool):
        raise RowReject("unparseable_answer", f"answer {value!r} is a boolean")
    if isinstance(value, (int, float)):
        i = _as_int(value)
        if i is None:
            raise RowReject("unparseable_answer", f"answer {value!r} is not an integer index")
        return _index_checked(i, n, value)
    if not isinstance(value, str):
        raise RowReject("unparseable_answer", f"answer of type {type(value).__name__}")
    s = value.strip()
    if labels is not None:
        i = _by_label(s, labels)
        if i is not None:
            return i
    by_text = _by_text(s, texts)
    pos: int | None = None
    kind = ""
    if _as_int(s) is not None:
        pos, kind = _as_int(s), "a 0-based index"
    elif _as_letter(s) is not None and len(s) <= 3:
        pos, kind = LETTERS.index(_as_letter(s)), "a letter"  # type: ignore[arg-type]
    if pos is not None:
        if by_text is not None and by_text != pos:
            raise RowReject(
                "ambiguous_answer",
                f"answer {s!r} is choice {by_text} by text but choice {pos} as {kind}; set answer_type",
            )
        return _index_checked(pos, n, value)
    if by_text is not None:
        return by_text
    raise RowReject("answer_not_in_choices", f"answer {s[:80]!r} is not the text of any choice")
