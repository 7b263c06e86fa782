"""The `options` column of a Parquet record batch, read column-wise (io/readers.py's Parquet rows, and
validate's batch facts): Arrow stores options as list<struct<A, B, ..., J>>, every element carrying every
letter with nulls for the absent ones."""

from __future__ import annotations

from typing import Any


def arrow_options(batch: Any) -> tuple[list[Any], list[Any]] | None:
    """The `options` column of a record batch in the canonical shape, built column-wise, with option hints.

    Arrow stores options as list<struct<A, B, ..., J>>: every element carries every letter, nulls for the
    absent ones. Converting that to Python makes ten ten-key dicts per row, the dominant cost of reading.
    Here each element whose struct has exactly one non-null field becomes {letter: text} directly; any other
    element (no or several non-null fields) is kept exactly as stored, so validation still sees and reports
    it at the same $.options[i]. Returns (options per row, hints per row: the (letters, texts) lists a row's
    elements were built from, None for a row holding an element kept as stored), or None when the column is
    absent or not list<struct<string...>>."""
    try:
        col = batch.column("options")
    except KeyError:
        return None
    lists = option_lists(col)
    if lists is None:
        return None
    letters, texts, hints, bad = lists
    elems: list[Any] = [{letter: text} for letter, text in zip(letters, texts, strict=True)]
    flat = col.flatten()
    for j in bad:
        elems[j] = flat[j].as_py()  # exactly as stored, nulls included: validation explains it
    offsets = _offsets(col)
    out: list[Any] = [*map(elems.__getitem__, map(slice, offsets[:-1], offsets[1:]))]
    if col.null_count:
        for r, ok in enumerate(col.is_valid().to_pylist()):
            if not ok:
                out[r] = None
    return out, hints


def _offsets(col: Any) -> list[int]:
    offsets = col.offsets.to_pylist()
    base = offsets[0] if offsets else 0
    return [o - base for o in offsets] if base else offsets


def option_lists(col: Any) -> tuple[list[str], list[Any], list[Any], list[int]] | None:
    """The elements of an Arrow `options` column in the list<struct<string...>> layout, column-wise: each
    element's letter (its one non-null field) and text, each row's hint (the (letters, texts) lists of its
    elements; None for a null row or one holding an element without exactly one non-null field), and the
    positions of those elements among all. None for any other layout, or a null element."""
    import pyarrow as pa

    t = col.type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)) or not pa.types.is_struct(t.value_type):
        return None
    st = t.value_type
    kinds = [st.field(i).type for i in range(st.num_fields)]
    if not kinds or not all(pa.types.is_string(k) or pa.types.is_null(k) for k in kinds):
        return None
    # only now: pyarrow.compute costs a noticeable import, and a source whose options are a plain list of
    # strings (convert's MMLU-Pro layout) never needs it
    import numpy as np
    import pyarrow.compute as pc

    names = [st.field(i).name for i in range(st.num_fields)]
    flat = col.flatten()  # StructArray of all elements (null list entries contribute nothing)
    if flat.null_count:  # a null element (not a struct): keep the row's exact Python value instead
        return None
    # a letter that no row of the file offers is stored with the null type: cast it so coalesce can run
    fields = [
        f if pa.types.is_string(f.type) else f.cast(pa.string()) for f in map(flat.field, range(len(names)))
    ]
    n = len(flat)
    texts = pc.coalesce(*fields).to_pylist() if n else []
    valid = np.stack([validity(f, n) for f in fields]) if n else np.zeros((len(names), 0), bool)
    count = valid.sum(axis=0)
    letters = np.array(names, dtype=object)[valid.argmax(axis=0)].tolist() if n else []
    bad = np.nonzero(count != 1)[0]
    offsets = _offsets(col)
    slices = [*map(slice, offsets[:-1], offsets[1:])]
    hints: list[Any] = [*zip(map(letters.__getitem__, slices), map(texts.__getitem__, slices), strict=True)]
    if len(bad):  # rows holding an element kept as stored get no hint
        for r in set((np.searchsorted(offsets, bad, side="right") - 1).tolist()):
            hints[r] = None
    if col.null_count:
        for r, ok in enumerate(col.is_valid().to_pylist()):
            if not ok:
                hints[r] = None
    return letters, texts, hints, bad.tolist()


def validity(arr: Any, n: int) -> Any:
    """The validity of an Arrow array of length n as a numpy bool array, unpacked from its bitmap."""
    import numpy as np

    if arr.null_count == 0:
        return np.ones(n, bool)
    if arr.null_count == n:
        return np.zeros(n, bool)
    bitmap = arr.buffers()[0]
    bits = np.unpackbits(np.frombuffer(bitmap, np.uint8), bitorder="little")
    return bits[arr.offset : arr.offset + n].astype(bool)
