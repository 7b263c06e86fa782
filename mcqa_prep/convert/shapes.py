"""Where a source row keeps its question, its choices and its answer, and how the answer is encoded.

A `ColumnMap` names the columns; `Extractor` binds it to one source's columns (exact name, then a unique
case-insensitive match, then a dotted path into a nested value) and turns each row into an `Item` or raises
`RowReject` with a stable reason. Nothing here knows about templates, letters in prompts or shuffling.

Choice shapes (exactly one per map):
- `choices`: one column holding a list of texts, a list of {label, text} objects, a {text: [...], label:
  [...]} object (the Hugging Face "sequence of struct" layout), or a {letter: text} object;
- `options`: one column per option, in order (MedMCQA opa..opd, MMMLU A..D);
- `correct` + `incorrect`: the right answer's column and the wrong answers' columns (GPQA, SciQ).
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, NamedTuple

from ..errors import UsageError

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
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


class _Col:
    """A resolved column: a top-level key and an optional path into nested objects."""

    __slots__ = ("name", "key", "path")

    def __init__(self, name: str, key: str, path: tuple[str, ...] = ()):
        self.name = name
        self.key = key
        self.path = path

    def get(self, row: dict[str, Any]) -> Any:
        v = row.get(self.key, _ABSENT) if type(row) is dict else _ABSENT
        for p in self.path:
            if isinstance(v, dict):
                v = v.get(p, _ABSENT)
            else:
                return _ABSENT
        return v


_ABSENT = object()


def resolve_column(name: str, columns: Sequence[str]) -> _Col | None:
    """The source column for a mapped name: exact, then one case-insensitive match, then a dotted path
    (`mc1_targets.choices`) whose head resolves the same way; None when nothing matches."""
    if name in columns:
        return _Col(name, name)
    folded = [c for c in columns if c.casefold() == name.casefold()]
    if len(folded) == 1:
        return _Col(name, folded[0])
    if "." in name:
        head, *rest = name.split(".")
        base = resolve_column(head, columns)
        if base is not None and not base.path:
            return _Col(name, base.key, tuple(rest))
    return None


# --------------------------------------------------------------------------------------------- values


def _text(v: Any) -> str | None:
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


def _norm(s: str) -> str:
    return " ".join(s.lower().split())


_STR_ONLY = {str}
_PLACEHOLDERS = frozenset(
    {"n/a", "na", "n.a.", "nan", "null", "none", "tbd", "-", "--", "?", "blank", "empty"}
)
_LABEL_START = frozenset("Aa(")
_OWN_LABEL = re.compile(r"\(?([A-Za-z])\s*[).:]\s*")


def _strip_own_labels(texts: list[Any]) -> list[Any]:
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


def _range_list(n: int) -> list[int]:
    """list(range(n)), shared per n: callers only read it (it becomes metadata.convert.option_source_index)."""
    r = _RANGES.get(n)
    if r is None:
        r = _RANGES[n] = list(range(n))
    return r


_TEXT_KEYS = ("text", "atext", "content", "option", "choice", "value", "answer")
_LABEL_KEYS = ("label", "aid", "key", "letter", "id", "name")


def _maybe_json(v: Any) -> Any:
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
    value = _maybe_json(value)
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
    raise RowReject("unparseable_choices", f"choices must be a list or an object, got {type(value).__name__}")


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
    ns = _norm(s)
    hits = [i for i, t in enumerate(texts) if t is not None and _norm(t) == ns]
    return hits[0] if len(hits) == 1 else None


def _by_label(s: str, labels: list[str]) -> int | None:
    if s in labels:
        return labels.index(s)
    ns = s.strip().casefold()
    hits = [i for i, lab in enumerate(labels) if lab.strip().casefold() == ns]
    return hits[0] if len(hits) == 1 else None


def resolve_answer(value: Any, texts: list[str | None], labels: list[str] | None, answer_type: str) -> int:
    """The gold's position among `texts` (source order), or RowReject. See docs/convert.md for `auto`."""
    n = len(texts)
    value = _maybe_json(value) if isinstance(value, str) and value.strip()[:1] == "[" else value
    if value is None or (isinstance(value, str) and not value.strip()):
        raise RowReject("no_answer", "the answer is missing or empty")
    if isinstance(value, float) and not math.isfinite(value):
        raise RowReject("no_answer", "the answer is NaN")
    t = answer_type
    if t == "flags" or (t == "auto" and isinstance(value, (list, tuple))):
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
    # auto
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


# --------------------------------------------------------------------------------------------- extractor


class Extractor:
    """A ColumnMap bound to one source's columns. `extract(row)` -> Item, or raises RowReject."""

    def __init__(self, cmap: ColumnMap, columns: Sequence[str] | None, *, where: str = "the source"):
        cmap.check()
        self.cmap = cmap
        cols = list(columns) if columns is not None else []
        missing: list[str] = []

        def col(name: str | None, required: bool = True) -> _Col | None:
            if not name:
                return None
            c = resolve_column(name, cols) if columns is not None else None
            if c is None:
                if columns is not None and required:
                    missing.append(name)
                head, _, rest = name.partition(".")
                c = (
                    _Col(name, head, tuple(rest.split(".")))
                    if rest and head not in cols
                    else _Col(name, name)
                )
            return c

        self.question = col(cmap.question)
        self.choices = col(cmap.choices)
        self.options = [col(c) for c in cmap.options]
        self.correct = col(cmap.correct)
        self.incorrect = [col(c) for c in cmap.incorrect]
        self.answer = col(cmap.answer)
        # optional columns: a row without them is fine (the value is null)
        self.context = col(cmap.context, False)
        self.id = col(cmap.id, False)
        self.subject = col(cmap.subject, False)
        self.keep = [col(c, False) for c in cmap.keep]
        if missing:
            shown = ", ".join(repr(c) for c in cols[:40])
            raise UsageError(
                f"{where}: no column {', '.join(repr(m) for m in missing)} (columns: {shown})",
                reason="map_missing_column",
            )
        self.drop = {_norm(d) for d in cmap.drop}
        self.answer_type = cmap.answer_type
        self._int_index = cmap.answer_type in ("index", "auto")
        self.shape = cmap.shape

    def _get(self, c: _Col, row: dict[str, Any]) -> Any:
        v = c.get(row)
        if v is _ABSENT:
            raise RowReject("missing_field", f"the row has no field {c.name!r}")
        return v

    def extract(self, row: Any) -> Item:
        if type(row) is not dict:
            raise RowReject("malformed_row", f"a row must be an object, got {type(row).__name__}")
        get = self._get
        qc = self.question
        q = row.get(qc.key, _ABSENT) if not qc.path else qc.get(row)  # type: ignore[union-attr]
        if q is _ABSENT:
            raise RowReject("missing_field", f"the row has no field {qc.name!r}")  # type: ignore[union-attr]
        q = q.strip() if type(q) is str else _text(q)
        if not q:
            raise RowReject("no_question", "the question is missing or empty")
        labels: list[str] | None = None
        if self.shape == "choices":
            cc = self.choices
            value = row.get(cc.key, _ABSENT) if not cc.path else cc.get(row)  # type: ignore[union-attr]
            if value is _ABSENT:
                raise RowReject("missing_field", f"the row has no field {cc.name!r}")  # type: ignore[union-attr]
            if type(value) is list and (not value or type(value[0]) is not dict):
                raw: list[Any] = value
            else:
                raw, labels = split_choices(value)
            if set(map(type, raw)) == _STR_ONLY:
                texts: list[Any] = [*map(str.strip, raw)]
            else:
                texts = [v.strip() if type(v) is str else _text(v) for v in raw]
            ac = self.answer
            a = row.get(ac.key, _ABSENT) if not ac.path else ac.get(row)  # type: ignore[union-attr]
            if a is _ABSENT:
                raise RowReject("missing_field", f"the row has no field {ac.name!r}")  # type: ignore[union-attr]
            if type(a) is int and self._int_index and 0 <= a < len(texts):
                gold = a
            else:
                gold = resolve_answer(a, texts, labels, self.answer_type)
        elif self.shape == "options":
            texts = [_text(get(c, row)) for c in self.options]  # type: ignore[arg-type]
            while texts and texts[-1] is None:  # absent trailing options (a 5-column layout with 4 used)
                texts.pop()
            gold = resolve_answer(get(self.answer, row), texts, None, self.answer_type)  # type: ignore[arg-type]
        else:
            texts = [_text(get(self.correct, row))]  # type: ignore[arg-type]
            for c in self.incorrect:
                v = _maybe_json(get(c, row))  # type: ignore[arg-type]
                if isinstance(v, (list, tuple)):
                    texts.extend(_text(x) for x in v)
                elif v is not None:
                    texts.append(_text(v))
            if texts[0] is None or texts[0] == "":
                raise RowReject("no_answer", "the correct-answer column is empty")
            gold = 0
        if texts and texts[0] is not None and texts[0][:1] in _LABEL_START:
            texts = _strip_own_labels(texts)
        if None in texts or "" in texts:
            i = next(i for i, t in enumerate(texts) if not t)
            raise RowReject("empty_choice", f"choice {i} is empty or null")
        joined = "|".join(texts)
        # _norm(t) is just t.lower() for ASCII texts (stripped) with single spaces and no other whitespace (in
        # ASCII, every whitespace character but the space is unprintable); one lower() and split() for all
        low = joined.lower().split("|")
        if not (len(low) == len(texts) and joined.isascii() and joined.isprintable() and "  " not in joined):
            low = [_norm(t) for t in texts]
        index = _range_list(len(texts))
        if self.drop and not self.drop.isdisjoint(low):
            keep = [i for i, k in enumerate(low) if i == gold or k not in self.drop]
            gold = keep.index(gold)
            texts = [texts[i] for i in keep]
            low = [low[i] for i in keep]
            index = keep
        n = len(texts)
        if n < 2:
            raise RowReject("too_few_choices", f"{n} choice(s); a multiple-choice row needs at least two")
        if n > MAX_OPTIONS:
            raise RowReject("too_many_choices", f"{n} choices; at most {MAX_OPTIONS} (letters A-Z)")
        if len(set(low)) != n:
            seen: dict[str, int] = {}
            for i, k in enumerate(low):
                if k in seen:
                    hint = ""
                    if k in _PLACEHOLDERS or not any(ch.isalnum() for ch in k):
                        hint = f"; if it is a placeholder, remove it with --drop-choice {texts[i]!r}"
                    raise RowReject(
                        "duplicate_choices",
                        f"choices {seen[k]} and {i} have the same text ({texts[i][:60]!r}){hint}",
                    )
                seen[k] = i
        context = _text(self.context.get(row)) or None if self.context else None
        ic = self.id
        ident = (row.get(ic.key) if not ic.path else ic.get(row)) if ic else None
        sc = self.subject
        if sc:
            subject = row.get(sc.key) if not sc.path else sc.get(row)
            subject = (subject.strip() or None) if type(subject) is str else (_text(subject) or None)
        else:
            subject = None
        kept = None
        if self.keep:
            kept = {}
            for c in self.keep:
                v = c.get(row)  # type: ignore[union-attr]
                kept[c.name] = None if v is _ABSENT else v  # type: ignore[union-attr]
        return Item(q, texts, gold, index, context, None if ident is _ABSENT else ident, subject, kept)
