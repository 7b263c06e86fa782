"""The fast reading of a chunk of rescored rollouts, for the common case: every line a graded rollout that
`Measurement.add` would count, with a reward of 0 or 1 (what `rescore` writes).

Such a chunk is read without a dict per line: msgspec decodes of each line only the fields passrates reads
(as raw JSON, the rest skipped), the lines are grouped by those fields encoded again as one value (rollouts
of one question, model, reward and answer are alike), and each group is counted once (`PassPool.add(..., n)`),
through the same helpers `Measurement` uses, on a row made of those fields alone; the prompt, grading and
contract of a group are worked out once per context (the fields before the reward) and the outcome once per
distinct reward and answer, each bytes-identical, in the chunk. The result is the measurement row by
row reading gives (`Measurement.add`), and `read_chunk` reads a chunk row by row whenever this path cannot say
so for certain (`fast_part` returns None):

- a line the full decoder would not read as this one does: not valid UTF-8 (decided by that decoder on every
  line that is not ASCII), nested more deeply than the reader allows, not a JSON object, blank, malformed
  (msgspec's skipping of the other fields accepts only what its full decoder accepts, for ASCII lines);
- a rollout left out or tallied (no contract, not graded, a bad reward, no model, no question key): its
  message names its line;
- a reward other than 0 or 1 (a sum of such rewards depends on the order it is added in);
- a stamped row whose digests are recorded (binding.py checks the whole row), a model only `response` names.

Groups are counted in the order of their first line, which is the order row-by-row reading creates pools,
cells and variants in; every count is an integer and every reward sum a sum of zeros and ones, exact in any
order.
"""

from __future__ import annotations

from collections import Counter
from itertools import compress, repeat
from operator import not_
from typing import Any

import msgspec
from msgspec import UNSET, Raw, UnsetType

from .. import binding
from ..counts import is_graded
from ..evidence import model_of
from ..fields import grading_contract, grading_of
from ..io.readers import MAX_DEPTH
from ..parallel import Chunk
from ..prompt import prompt_key
from .cells import UNKNOWN, PassPool
from .consistency import variant_of

_NOT_OPENERS = bytes(c for c in range(256) if c not in b"[{")  # (io.readers counts a line's openers so)
_ABSENT = Raw()  # a field the line does not have (every JSON value is at least one byte)


class _Rollout(msgspec.Struct, gc=False, omit_defaults=True):
    """The fields of a rollout passrates reads, every other field skipped: objects as raw JSON, the rest typed
    (a value of another type is a ValidationError: the chunk is read row by row). Encoded again (fields left
    out when absent), a rollout is one bytes value that names its group: equal exactly when every field is
    equal; the outcome (reward, extracted answer) comes last, after the fields that name its context."""

    responses_create_params: Raw = _ABSENT
    metadata: Raw = _ABSENT
    options: Raw = _ABSENT
    uuid: str | int | None | UnsetType = UNSET
    expected_answer: str | None | UnsetType = UNSET
    reward: float | UnsetType = UNSET
    extracted_answer: str | None | UnsetType = UNSET


class _Outcome(msgspec.Struct, gc=False):
    """The last fields of an encoded _Rollout: its outcome."""

    reward: float | UnsetType = UNSET
    extracted_answer: str | None | UnsetType = UNSET


_DECODE_FIELDS = msgspec.json.Decoder(_Rollout).decode
_DECODE_OUTCOME = msgspec.json.Decoder(_Outcome).decode
_REWARD = b'"reward":'
_ENCODE = msgspec.json.Encoder().encode
_DECODE = msgspec.json.Decoder().decode  # the reader's decoder (io.readers.read_jsonl)


class _Unsure(Exception):
    """The chunk is read row by row instead."""


def eligible(run: Any) -> bool:
    """Whether a measurement reads rollouts as graded, as they are, into pass pools (no rescoring, no join,
    no profile rows, no default model)."""
    return (
        run.rescore is None
        and run.index is None
        and run.profile_contract is None
        and run.default_model is None
        and run.pool is PassPool
    )


def fast_part(chunk: Chunk, template: Any) -> Any:
    """The chunk's rollouts read into a fresh measurement of `template`, or None when the chunk must be read
    row by row (see the module docstring)."""
    lines = chunk.jsonl_lines()
    if not lines or not eligible(template):
        return None
    # a line's depth is at most its openers, counted in one pass over it (as the reader bounds it; two
    # bytes.count passes cost half as much again, and a response makes most of a line's bytes)
    if max(map(len, map(bytes.translate, lines, repeat(None), repeat(_NOT_OPENERS)))) > MAX_DEPTH:
        return None
    try:
        for raw in compress(lines, map(not_, map(bytes.isascii, lines))):
            _DECODE(raw)  # what the reader decides of a line that is not ASCII (invalid UTF-8 is refused)
        recs = list(map(_DECODE_FIELDS, lines))
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
        return None  # (msgspec 0.19.0, the declared floor, raises UnicodeDecodeError for invalid UTF-8)
    groups = Counter(map(_ENCODE, recs))  # (one bytes value per rollout: grouped at C speed)
    part = template.fresh()
    try:
        _count_groups(part, groups)
    except _Unsure:
        return None
    part.rows = len(lines)
    return part


def _value(raw: bytes) -> Any:
    return _DECODE(raw)


def _count_groups(part: Any, groups: Counter) -> None:
    # the groups by context (prompt, metadata, options, uuid, gold), contexts in the order of their first
    # group and each context's groups in theirs: its cell and variant made, then counted, in reading order
    by_context: dict[bytes, tuple[bytes, list[tuple[float, Any, int]]]] = {}
    outcomes: dict[bytes, tuple[float, Any]] = {}  # (reward, answer) by the group's last fields' JSON
    for group, n in groups.items():
        # the reward comes next to last: its key is the last `"reward":` outside a string (only
        # "extracted_answer" and a string or null follow); the fields before it name the group's context
        at = group.rfind(_REWARD)
        if at < 0:
            raise _Unsure  # no reward
        ctx, tail = group[:at], group[at:]
        outcome = outcomes.get(tail)
        if outcome is None:
            outcome = outcomes[tail] = _outcome(tail)
        same = by_context.get(ctx)
        if same is None:
            by_context[ctx] = (group, [(*outcome, n)])
        else:
            same[1].append((*outcome, n))
    gradings: dict[bytes, tuple[str, str | None]] = {}
    values: dict[bytes, Any] = {}  # metadata by its raw JSON
    for group, found in by_context.values():
        pool, key, model, site = _context(part, _DECODE_FIELDS(group), gradings, values)
        pool.add_all(key, model, site, found)


def _outcome(tail: bytes) -> tuple[float, Any]:
    """(reward, answer as cells.answer_of gives it) of a group's `"reward":...` to its end; _Unsure unless the
    reward is 0 or 1. (Were that `"reward":` a key inside an object field, the text would close more objects
    than it opens: never one JSON object, always refused.)"""
    try:
        o = _DECODE_OUTCOME(b"{" + tail)
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise _Unsure from None
    reward, answer = o.reward, o.extracted_answer
    if reward != 0.0 and reward != 1.0:  # (UNSET too: no reward)
        raise _Unsure
    return reward, UNKNOWN if answer is UNSET else answer or None


def _grading(md_b: bytes) -> tuple[str, str | None]:
    """(contract id, grader version) of a graded rollout's metadata; _Unsure for anything `Measurement` would
    tally or check against the whole row."""
    row = {"metadata": _value(md_b)} if md_b else {}
    grading = grading_of(row)
    cid = grading_contract(grading)
    if grading is None or cid is None or binding.recorded(row) is not None:
        raise _Unsure
    if not is_graded(grading.get("status")):
        raise _Unsure
    gv = grading.get("grader_version")
    return cid, gv if isinstance(gv, str) else None


def _context(
    part: Any, rec: _Rollout, gradings: dict[bytes, tuple[str, str | None]], values: dict[bytes, Any]
) -> tuple[Any, str, str, Any]:
    """(pool, key, model, variant) of the rollouts of one prompt, metadata, options, uuid and gold, as
    Measurement._count works them out; the contract's pool made here when it is the first one met."""
    rcp_r, md_b, opts_r = rec.responses_create_params, bytes(rec.metadata), rec.options
    uuid, gold = rec.uuid, rec.expected_answer
    grading = gradings.get(md_b)
    if grading is None:
        grading = gradings[md_b] = _grading(md_b)
    row: dict[str, Any] = {"responses_create_params": _DECODE(rcp_r)} if rcp_r else {}
    if md_b:  # (only read: one value per distinct metadata, most rollouts share theirs)
        md = values.get(md_b)
        if md is None:
            md = values[md_b] = _value(md_b)
        row["metadata"] = md
    if opts_r:
        row["options"] = _DECODE(opts_r)
    if uuid is not UNSET:
        row["uuid"] = uuid
    if gold is not UNSET:
        row["expected_answer"] = gold
    model = model_of(row)
    if model is None:  # the model may be `response`'s, or the default
        raise _Unsure
    rcp = row.get("responses_create_params")
    pk = prompt_key(rcp)
    key = part._key(row, rcp, None)
    if key is None:
        raise _Unsure
    cid, gv = grading
    pool = part.pools.get(cid)
    if pool is None:
        pool = part.pools[cid] = part.pool(gv)
    return pool, key, model, variant_of(row, None, pk)
