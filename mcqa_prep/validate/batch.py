"""A Parquet record batch checked from its columns: what the row rules read of a row, column-wise.

Reading a Parquet row into Python (a dict per row, a dict per option, the prompt's message list) costs about
as much as checking it, and most rows need none of it: their facts (the prompt text, the offered letters and
texts, the gold, the grading mode, the template, the uuid, and that the row satisfies the row schema) are
columns. `BatchView` reads those columns once per batch with Arrow and gives each row's facts
(`facts.RowFacts.settle`, the same definition as for a row read as a dict); the row's dict is built only when a
rule that may fire reads it (`RowFacts.d`), and then for the whole batch, by the reader itself
(`io.readers.batch_records`), so a finding is made from the row as read.

A row is checked from the columns only when its columns say exactly what its dict would: the batch's layout
is the common one (`_layout`: types each fact can be read from, no value batch_marks would list), and the row
has a single user message with text, options in the normal layout (a hint), a gold, and every value the row
schema constrains of the types it allows (`_schema_rows`: a sufficient condition for the schema's silence, so
the schema's own check is skipped only where it could find nothing). Any other row is read and checked as
before. tests/test_validate_batch.py checks that both ways give the same findings and keys, row by row.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from ..io.options import option_lists, validity
from ..io.paths import STDIN, is_parquet, split_of
from ..io.readers import batch_records, drop_nulls, iter_file, marked_columns, parquet_batches
from ..records import Row
from .facts import Config, RowFacts

# template_metadata fields the row schema types: a string (null means absent: the reader drops nulls)
_TEMPLATE_STRINGS = ("output_regex", "answer_prefix", "template_id", "template_prompt")


def _pa() -> Any:
    import pyarrow as pa

    return pa


def _is_string(t: Any) -> bool:
    return bool(_pa().types.is_string(t))


def _layout(batch: Any) -> bool:
    """Whether each fact of this batch's rows can be read from its columns exactly as from the row's dict."""
    pa = _pa()
    types = dict(zip(batch.schema.names, batch.schema.types, strict=True))
    if len(types) != batch.num_columns or marked_columns(batch):
        return False  # a repeated column name (the last wins in the dict), or NaN / bytes to list
    rcp = types.get("responses_create_params")
    if rcp is None or not pa.types.is_struct(rcp) or rcp.get_field_index("input") < 0:
        return False
    inp = rcp.field("input").type
    if not pa.types.is_list(inp) or not pa.types.is_struct(inp.value_type):
        return False
    msg = inp.value_type
    if any(msg.get_field_index(k) < 0 or not _is_string(msg.field(k).type) for k in ("role", "content")):
        return False
    if "options" not in types or not _is_string(types.get("expected_answer")):
        return False
    gm = types.get("grading_mode")
    if gm is not None and not (_is_string(gm) or pa.types.is_null(gm)):
        return False
    u = types.get("uuid")
    if u is not None and not (_is_string(u) or pa.types.is_integer(u) or pa.types.is_null(u)):
        return False
    tm = types.get("template_metadata")
    if tm is not None and not pa.types.is_null(tm):
        if not pa.types.is_struct(tm):
            return False
        for k in _TEMPLATE_STRINGS:
            i = tm.get_field_index(k)
            if i >= 0 and not (_is_string(tm.field(i).type) or pa.types.is_null(tm.field(i).type)):
                return False
    rp = types.get("reward_profiles")
    if rp is not None and not pa.types.is_null(rp):
        if not pa.types.is_list(rp) or not pa.types.is_struct(rp.value_type):
            return False
    return True


# Only Arrow's buffers, numpy over them, and to_pylist below: Array.to_numpy, pa.array and Python scalars in
# compute calls import pandas on first use (a fixed cost of every command, paid by nothing else here).


def _valid(arr: Any) -> Any:
    """The validity of an Arrow array as a numpy bool array."""
    import numpy as np

    if arr.null_count == 0:
        return np.ones(len(arr), bool)
    return validity(arr, len(arr))


def _offsets(col: Any) -> Any:
    """A list array's n + 1 offsets (absolute, into its values buffer) as numpy int32, from its buffer."""
    import numpy as np

    return np.frombuffer(col.buffers()[1], np.int32)[col.offset : col.offset + len(col) + 1]


def _each_valid(col: Any) -> Any:
    """Per row of a list column: every element of its list is non-null (a null list passes: see _valid)."""
    import numpy as np

    flat = col.flatten()  # the elements of rows 0..n-1, from offsets[0] on
    if flat.null_count == 0:
        return np.ones(len(col), bool)
    offsets = _offsets(col)
    bad = np.flatnonzero(~validity(flat, len(flat))) + offsets[0]
    ok = np.ones(len(col), bool)
    ok[np.searchsorted(offsets, bad, side="right") - 1] = False
    return ok


def _schema_rows(batch: Any) -> Any:
    """Per row: the row satisfies mcqa-row.v1 for certain (given _layout): its prompt object and message list,
    options and expected_answer are present and not null, and so is every element of its lists."""
    pa = _pa()
    rcp = batch.column("responses_create_params")
    inp = rcp.field("input")
    ok = _valid(rcp) & _valid(inp) & _each_valid(inp)
    ok &= _valid(batch.column("options")) & _valid(batch.column("expected_answer"))
    if "reward_profiles" in batch.schema.names:
        rp = batch.column("reward_profiles")
        if not pa.types.is_null(rp.type):
            ok &= _each_valid(rp)
    return ok


def _user_prompts(batch: Any) -> list[str | None]:
    """Per row: the text of its one user message, or None when it has not exactly one message, the message
    is not a user's, or it has no text (the row's dict then decides)."""
    import numpy as np

    inp = batch.column("responses_create_params").field("input")
    n = len(inp)
    flat = inp.flatten()
    if len(flat) == 0:
        return [None] * n
    offsets = _offsets(inp)
    one = (np.diff(offsets) == 1) & _valid(inp)
    first = (offsets[:-1] - offsets[0]).tolist()
    roles = flat.field("role").to_pylist()
    texts = flat.field("content").to_pylist()
    present = _valid(flat).tolist()  # (a struct's fields do not carry its own nulls)
    return [
        texts[k] if o and present[k] and roles[k] == "user" else None
        for o, k in zip(one.tolist(), first, strict=True)
    ]


class BatchView:
    """One record batch of a Parquet chunk: each row's facts from the columns where they can be read there
    (`facts`), its Row as the reader gives it otherwise (`row`). `first_line` and `first_index` number its
    first row as batch_records does."""

    def __init__(self, batch: Any, file: str, split: str | None, first_line: int, first_index: int) -> None:
        self.batch, self.file, self.split = batch, file, split
        self.first_line, self.first_index = first_line, first_index
        self.n = batch.num_rows
        self._rows: list[Row] | None = None
        self.fast = [False] * self.n
        self.linked = "metadata" in batch.schema.names  # else no row carries a permutation link
        lists = option_lists(batch.column("options")) if _layout(batch) else None
        if lists is None:
            return
        self.hints = lists[2]
        self.prompts = _user_prompts(batch)
        self.golds = batch.column("expected_answer").to_pylist()
        self.modes = self._column("grading_mode")
        self.uuids = self._column("uuid")
        tms = self._column("template_metadata")
        self.tms = [tm if tm is None else drop_nulls(tm) for tm in tms]
        schema_ok = _schema_rows(batch).tolist()
        self.fast = [
            ok and p is not None and h is not None and g is not None
            for ok, p, h, g in zip(schema_ok, self.prompts, self.hints, self.golds, strict=True)
        ]

    def _column(self, name: str) -> list[Any]:
        if name not in self.batch.schema.names:
            return [None] * self.n
        return list(self.batch.column(name).to_pylist())

    def rows(self) -> list[Row]:
        """Every row of the batch, read as the reader reads it (once)."""
        if self._rows is None:
            self._rows = list(
                batch_records(self.batch, self.file, self.split, self.first_line, self.first_index)
            )
        return self._rows

    def row(self, j: int) -> Row:
        return self.rows()[j]

    def facts(self, j: int, cfg: Config, whole: bool = False) -> RowFacts | None:
        """Row j's facts read from the columns (its dict built when a rule reads it; `whole`: its Row as read
        already), or None when they cannot be read there (then `row(j)` is checked)."""
        if not self.fast[j]:
            return None
        if whole:
            f = RowFacts(self.row(j), cfg)
        else:
            address = Row(self.file, self.first_line + j, self.first_index + j, None, None, self.split)
            f = RowFacts(address, cfg, lambda: self.row(j).data)
            f.linked = self.linked
        return f.settle(
            0, self.prompts[j], self.hints[j], self.golds[j], self.modes[j], self.tms[j], self.uuids[j]
        )


def chunk_facts(chunk: Any, cfg: Config, whole: bool = False) -> Iterator[tuple[Row, RowFacts | None]]:
    """Every row of a chunk (parallel.Chunk) with its facts when its batch's columns give them (None: check
    the Row itself), in order; a row's index counts from the chunk's start, as Chunk.rows() does. `whole`:
    every Row as read (for a caller that writes the rows), else only its address where the facts suffice."""
    if not chunk.is_parquet():
        for row in chunk.rows():
            yield row, None
        return
    i = 0
    for batch in chunk.batches():
        view = BatchView(batch, chunk.file, chunk.split, chunk.first_line + i, i)
        for j in range(view.n):
            f = view.facts(j, cfg, whole)
            yield (view.row(j), None) if f is None else (f.row, f)
        i += view.n


def file_facts(path: Any, split: str | None) -> Iterator[tuple[Row, Any]]:
    """io.readers.iter_file's rows of one data file (as read: for a caller that tallies the rows as well as
    checking them), each with a function of a Config giving its facts from its Parquet batch's columns (None
    where they cannot be read there), or None for a JSONL row."""
    if str(path) == STDIN or not is_parquet(path):
        for row in iter_file(path, split=split):
            yield row, None
        return
    from pathlib import Path

    sp = split or split_of(Path(path).name)
    index = 0
    for batch in parquet_batches(Path(path), None):
        view = BatchView(batch, str(path), sp, index + 1, index)
        for j in range(view.n):
            yield view.row(j), functools.partial(view.facts, j, whole=True)
        index += view.n
