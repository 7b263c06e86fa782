"""Extractor: a ColumnMap bound to one source's columns, turning a source row into an Item (question,
choice texts, gold position, ...) or a RowReject with its reason. The value shapes it reads are in shapes.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import UsageError
from .shapes import (
    ABSENT,
    LABEL_START,
    MAX_OPTIONS,
    PLACEHOLDERS,
    STR_ONLY,
    Col,
    ColumnMap,
    Item,
    RowReject,
    as_text,
    context_text,
    maybe_json,
    norm_text,
    range_list,
    resolve_answer,
    resolve_column,
    split_choices,
    strip_own_labels,
)


class Extractor:
    """A ColumnMap bound to one source's columns. `extract(row)` -> Item, or raises RowReject."""

    def __init__(self, cmap: ColumnMap, columns: Sequence[str] | None, *, where: str = "the source"):
        cmap.check()
        self.cmap = cmap
        cols = list(columns) if columns is not None else []
        missing: list[str] = []

        def col(name: str | None, required: bool = True) -> Col | None:
            if not name:
                return None
            c = resolve_column(name, cols) if columns is not None else None
            if c is None:
                if columns is not None and required:
                    missing.append(name)
                head, _, rest = name.partition(".")
                c = Col(name, head, tuple(rest.split("."))) if rest and head not in cols else Col(name, name)
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
            shown = ", ".join(repr(c) for c in cols[:40]) + (
                f" … and {len(cols) - 40} more" if len(cols) > 40 else ""
            )
            raise UsageError(
                f"{where}: no column {', '.join(repr(m) for m in missing)} (columns: {shown})",
                reason="map_missing_column",
            )
        self.drop = {norm_text(d) for d in cmap.drop}
        self.answer_type = cmap.answer_type
        self._int_index = cmap.answer_type in ("index", "auto")
        self.shape = cmap.shape

    def _get(self, c: Col, row: dict[str, Any]) -> Any:
        """A required column's value (a plain key without a function call on the hot path)."""
        v = row.get(c.key, ABSENT) if not c.path else c.get(row)
        if v is ABSENT:
            raise RowReject("missing_field", f"the row has no field {c.name!r}")
        return v

    def extract(self, row: Any) -> Item:
        if type(row) is not dict:
            raise RowReject("malformed_row", f"a row must be an object, got {type(row).__name__}")
        q = self._get(self.question, row)  # type: ignore[arg-type]
        q = q.strip() if type(q) is str else as_text(q)
        if not q:
            raise RowReject("no_question", "the question is missing or empty")
        if self.shape == "choices":
            texts, gold = self._from_choices(row)
        elif self.shape == "options":
            get = self._get
            texts = [as_text(get(c, row)) for c in self.options]  # type: ignore[arg-type]
            while texts and texts[-1] is None:  # absent trailing options (a 5-column layout with 4 used)
                texts.pop()
            gold = resolve_answer(get(self.answer, row), texts, None, self.answer_type)  # type: ignore[arg-type]
        else:
            texts, gold = self._from_correct(row)
        texts, gold, index = self._checked(texts, gold)
        context, ident, subject, kept = self._extras(row)
        return Item(q, texts, gold, index, context, ident, subject, kept)

    def _from_choices(self, row: dict[str, Any]) -> tuple[list[Any], int]:
        """One column of choices (a list, labelled objects, a struct of lists) and the answer column."""
        value = self._get(self.choices, row)  # type: ignore[arg-type]
        labels: list[str] | None = None
        if type(value) is list and (not value or type(value[0]) is not dict):
            raw: list[Any] = value
        else:
            raw, labels = split_choices(value)
        if set(map(type, raw)) == STR_ONLY:
            texts: list[Any] = [*map(str.strip, raw)]
        else:
            texts = [v.strip() if type(v) is str else as_text(v) for v in raw]
        a = self._get(self.answer, row)  # type: ignore[arg-type]
        if type(a) is int and self._int_index and 0 <= a < len(texts):
            return texts, a
        return texts, resolve_answer(a, texts, labels, self.answer_type)

    def _from_correct(self, row: dict[str, Any]) -> tuple[list[Any], int]:
        """The right answer's column first, then the wrong answers (columns or lists)."""
        get = self._get
        texts = [as_text(get(self.correct, row))]  # type: ignore[arg-type]
        for c in self.incorrect:
            v = maybe_json(get(c, row))  # type: ignore[arg-type]
            if isinstance(v, (list, tuple)):
                texts.extend(as_text(x) for x in v)
            elif v is not None:
                texts.append(as_text(v))
        if texts[0] is None or texts[0] == "":
            raise RowReject("no_answer", "the correct-answer column is empty")
        return texts, 0

    def _checked(self, texts: list[Any], gold: int) -> tuple[list[str], int, list[int]]:
        """Own labels stripped, placeholders dropped (--drop-choice), then the count and distinctness checked:
        (texts, gold, source index of each kept text)."""
        if texts and texts[0] is not None and texts[0][:1] in LABEL_START:
            texts = strip_own_labels(texts)
        if None in texts or "" in texts:
            i = next(i for i, t in enumerate(texts) if not t)
            raise RowReject("empty_choice", f"choice {i} is empty or null")
        joined = "|".join(texts)
        # norm_text(t) is just t.lower() for ASCII texts (stripped) with single spaces and no other whitespace
        # (in ASCII, every whitespace character but the space is unprintable); one lower() and split() for all
        low = joined.lower().split("|")
        if not (len(low) == len(texts) and joined.isascii() and joined.isprintable() and "  " not in joined):
            low = [norm_text(t) for t in texts]
        index = range_list(len(texts))
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
            _raise_duplicate(texts, low)
        return texts, gold, index

    def _extras(self, row: dict[str, Any]) -> tuple[str | None, Any, str | None, dict[str, Any] | None]:
        """The optional columns: context, id, subject and the kept source fields (null when absent)."""
        context = context_text(self.context.get(row)) if self.context else None
        ic = self.id
        ident = (row.get(ic.key) if not ic.path else ic.get(row)) if ic else None
        sc = self.subject
        if sc:
            subject = row.get(sc.key) if not sc.path else sc.get(row)
            subject = (subject.strip() or None) if type(subject) is str else (as_text(subject) or None)
        else:
            subject = None
        kept = None
        if self.keep:
            kept = {}
            for c in self.keep:
                v = c.get(row)  # type: ignore[union-attr]
                kept[c.name] = None if v is ABSENT else v  # type: ignore[union-attr]
        return context, None if ident is ABSENT else ident, subject, kept


def _raise_duplicate(texts: list[str], low: list[str]) -> None:
    seen: dict[str, int] = {}
    for i, k in enumerate(low):
        if k in seen:
            hint = ""
            if k in PLACEHOLDERS or not any(ch.isalnum() for ch in k):
                hint = f"; if it is a placeholder, remove it with --drop-choice {texts[i]!r}"
            raise RowReject(
                "duplicate_choices",
                f"choices {seen[k]} and {i} have the same text ({texts[i][:60]!r}){hint}",
            )
        seen[k] = i
