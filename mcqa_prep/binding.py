"""A prepared row bound to its contract: what grades the row, as `prepare` wrote it, recorded in its stamp.

The contract id (`metadata.mcqa_prep.contract`) says *how* a row is graded, not *what* is graded: edit a
prepared row's gold, an option's text or its output_regex and the stamp still names the contract. So `prepare`
also records in the stamp, as `bound`, one short digest of each field that grades the row (BOUND), and a
reader recomputes them from the row in hand (`check`): a field whose digest differs was edited after prepare.
A reader that holds the preparation itself names the values on both sides too (`differences`).

Bound, each in one canonical form, so that one row hashes alike as JSONL, as Parquet's null-filled structs,
from `load_prepared`'s Arrow columns and as NeMo Gym echoes it to a verifier:

- `options`: the list in its order, null-valued keys and elements left empty dropped (`normalise_options`);
- `expected_answer`: stripped and upper-cased (" b" and "B" are one gold to the grader);
- `grading_mode`: the row's own; the stamp's `grading_mode` (the mode that grades the row) must agree with it
  (`check`);
- `template_metadata`: the keys the grader reads (TEMPLATE_KEYS), a null one as an absent one; output_regex
  as the list of patterns the grader tries (a string is one pattern, an object its keys);
- `prompt`: the text of the first user message of `responses_create_params.input` (a string input is one).

Not bound: what a runtime adds to a row on its way to a verifier (a system or developer message before the
prompt, the turns after it, `instructions`, sampling parameters, tools, any other key of
responses_create_params) and what does not grade (uuid, other metadata, reward_profiles, template_id and the
template's other descriptive keys). A digest is 64 bits of BLAKE2b over the canonical form: it tells an edit
from the row as prepared, and anyone can compute it again: it is not a signature (docs/design/serve.md).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, TypeGuard

import orjson

from .errors import Difference, fields_that_differ
from .fields import stamp_of
from .grader import effective_mode
from .grader.letters import normalize_gold
from .grader.modes import DEFAULT_MODE, ROW_MODES
from .prompt import content_text, messages

BOUND = ("options", "expected_answer", "grading_mode", "template_metadata", "prompt")
TEMPLATE_KEYS = ("output_regex", "answer_prefix", "option_labels")  # what the grader reads of a template
STAMP_KEY = "bound"  # metadata.mcqa_prep.bound: field -> digest
MODE_FIELD = "metadata.mcqa_prep.grading_mode"  # the stamp's own mode, checked against the row's
DIGEST_BYTES = 8
CLIP = 120  # characters of a value shown in a difference

OK = "ok"  # every bound field as prepared
CHANGED = "changed"  # a bound field (or the stamp's mode) differs from what the stamp records
UNBOUND = "unbound"  # the stamp records no digests (an older preparation, or not mcqa-prep's stamp)

_DICT_ONLY = {dict}
_SORT = orjson.OPT_SORT_KEYS


def normalise_options(options: Any) -> Any:
    """Drop null-valued keys (the Parquet all-letters shape), keep letter order, drop elements left empty;
    other shapes pass through unchanged (validate reports them)."""
    if not isinstance(options, list):
        return options
    # the usual case, already normal (JSONL rows, and Parquet rows as the reader builds them): a few
    # C-level passes instead of a dict comprehension per option
    if set(map(type, options)) == _DICT_ONLY and None not in itertools.chain.from_iterable(
        map(dict.values, options)
    ):
        if all(options):
            return options
    out = []
    for opt in options:
        if isinstance(opt, dict):
            kept = {k: v for k, v in opt.items() if v is not None}
            if kept:
                out.append(kept)
        else:
            out.append(opt)
    return out


def _is_map(x: Any) -> TypeGuard[Mapping[str, Any]]:
    return type(x) is dict or (x is not None and isinstance(x, Mapping))


def _template(tm: Any) -> Any:
    if not _is_map(tm):
        return None
    out = {}
    for k in TEMPLATE_KEYS:
        v = tm.get(k)
        if v is None:
            continue
        if k == "output_regex":
            v = [v] if type(v) is str else list(v) if isinstance(v, (Mapping, list, tuple)) else v
        out[k] = v
    return out or None


def _prompt(rcp: Any) -> str | None:
    inp = rcp.get("input") if type(rcp) is dict else None
    if type(inp) is list:  # the usual shape, read without building every message's (role, text)
        for m in inp:
            if type(m) is dict and m.get("role") == "user":
                c = m.get("content")
                return c if type(c) is str else content_text(c)
            if type(m) is not dict:
                break
        else:
            return None
    for role, text in messages(rcp) or ():
        if role == "user":
            return text
    return None


def bound_values(row: Mapping[str, Any]) -> dict[str, Any]:
    """The bound fields of a row, each in its canonical form (the module docstring)."""
    return {
        "options": normalise_options(row.get("options")),
        "expected_answer": normalize_gold(row.get("expected_answer")),
        "grading_mode": row.get("grading_mode"),
        "template_metadata": _template(row.get("template_metadata")),
        "prompt": _prompt(row.get("responses_create_params")),
    }


def _canonical(value: Any) -> bytes:
    if type(value) is str:
        return b"s" + value.encode("utf-8", "surrogatepass")
    try:
        return orjson.dumps(value, option=_SORT)
    except (TypeError, orjson.JSONEncodeError):  # a lone surrogate, an integer beyond 64 bits, ...
        try:
            return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode(
                "utf-8", "surrogatepass"
            )
        except (TypeError, ValueError):
            return repr(value).encode("utf-8", "surrogatepass")


def _digest(value: Any) -> str:
    return hashlib.blake2b(_canonical(value), digest_size=DIGEST_BYTES).hexdigest()


def digests(row: Mapping[str, Any], *, options_normal: bool = False) -> dict[str, str]:
    """field -> digest of its canonical value: what `prepare` records as the stamp's `bound`.
    `options_normal`: the row's options are known to be in normal form already (`normalise_options`, as a
    stamped row's are). The few values that repeat across rows (gold, mode, template) are digested once each
    (`bound_values` is the definition; this is the same, with those cached)."""
    opts = row.get("options")
    gm = row.get("grading_mode")
    return {
        "options": _digest(opts if options_normal else normalise_options(opts)),
        "expected_answer": _gold_digest(row.get("expected_answer")),
        "grading_mode": _small_digest(gm) if type(gm) is str and len(gm) <= _SMALL else _digest(gm),
        "template_metadata": _template_digest(row.get("template_metadata")),
        "prompt": _digest(_prompt(row.get("responses_create_params"))),
    }


_SMALL = 64  # characters: a string this short is a letter, a mode or a regex, and likely to repeat
_CACHED = 4096


@functools.lru_cache(maxsize=_CACHED)
def _small_digest(value: str) -> str:
    return _digest(value)


def _gold_digest(gold: Any) -> str:
    if gold is None or (type(gold) is str and len(gold) <= _SMALL):
        return _small_gold(gold)
    return _digest(normalize_gold(gold))


@functools.lru_cache(maxsize=_CACHED)
def _small_gold(gold: str | None) -> str:
    return _digest(normalize_gold(gold))


def _template_digest(tm: Any) -> str:
    """_digest(_template(tm)), cached by the template keys' values when they are strings (or absent)."""
    if tm is None:
        return _small_template((None, None, None))
    if type(tm) is dict:
        key = (tm.get("output_regex"), tm.get("answer_prefix"), tm.get("option_labels"))
        if all(v is None or (type(v) is str and len(v) <= 4 * _SMALL) for v in key):
            return _small_template(key)
    return _digest(_template(tm))


@functools.lru_cache(maxsize=_CACHED)
def _small_template(key: tuple[str | None, str | None, str | None]) -> str:
    return _digest(_template(dict(zip(TEMPLATE_KEYS, key, strict=True))))


def identity(bound: Mapping[str, Any]) -> bytes:
    """A row's identity in a preparation: 16 bytes over its digests in BOUND order."""
    blob = "\x00".join(str(bound.get(k)) for k in BOUND).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(blob, digest_size=16).digest()


_BOUND_KEYS = frozenset(BOUND)


def recorded(row: Mapping[str, Any] | None) -> dict[str, str] | None:
    """The digests the row's stamp records (exactly the BOUND fields, each a string), else None."""
    s = stamp_of(row)
    b = s.get(STAMP_KEY) if s is not None else None
    if not _is_map(b) or b.keys() != _BOUND_KEYS or not all(type(v) is str for v in b.values()):
        return None
    return dict(b)


class Check(NamedTuple):
    """A row against its stamp: OK, CHANGED (`fields`: the bound fields whose digests differ, and MODE_FIELD
    when the stamp's mode is not the row's), or UNBOUND. `mine`: the row's own digests (None when UNBOUND)."""

    state: str
    fields: tuple[str, ...] = ()
    mine: dict[str, str] | None = None
    mode: tuple[Any, Any] | None = None  # (the stamp's mode, the mode the row grades under) when they differ


def mode_problem(
    row: Mapping[str, Any], modes: tuple[str | None, str] | None = None
) -> tuple[Any, Any] | None:
    """(the stamp's grading_mode, what it should be) when they disagree, else None. `modes` = (override,
    default) of the policy the reader grades under, when that policy is the stamp's contract: the stamp's mode
    must be the one it makes effective for the row. Without it (another or unknown contract) a stamp that names
    a row mode must name the row's own (an override-only mode can only be checked against its policy)."""
    s = stamp_of(row)
    said = s.get("grading_mode") if s is not None else None
    own = row.get("grading_mode")
    if modes is not None:
        want = effective_mode(own, modes[0], modes[1] or DEFAULT_MODE)
        return None if said == want else (said, want)
    if said in ROW_MODES and said != own:
        return said, own
    return None


def check(row: Mapping[str, Any], modes: tuple[str | None, str] | None = None) -> Check:
    """The row against the digests its stamp records, and the stamp's mode against the row's (mode_problem)."""
    rec = recorded(row)
    if rec is None:
        return Check(UNBOUND)
    mine = digests(row)
    changed = tuple(k for k in BOUND if mine[k] != rec[k])
    mode = mode_problem(row, modes)
    if mode is not None:
        changed += (MODE_FIELD,)
    return Check(CHANGED if changed else OK, changed, mine, mode)


def describe(c: Check) -> str:
    """What changed, said from the stamp alone (the values as prepared are not known without the preparation)."""
    fields = [f for f in c.fields if f != MODE_FIELD]
    parts = []
    if fields:
        parts.append(
            f"its {', '.join(fields)} no longer match{'es' if len(fields) == 1 else ''} the digest"
            f"{'' if len(fields) == 1 else 's'} its stamp records (metadata.mcqa_prep.bound)"
        )
    if c.mode is not None:
        parts.append(
            f"its stamp's {MODE_FIELD} is {json.dumps(c.mode[0])}, but the row grades under {json.dumps(c.mode[1])}"
        )
    return "row edited after prepare: " + "; ".join(parts)


def differences(row: Mapping[str, Any], prepared: Mapping[str, Any]) -> list[Difference]:
    """Each bound field of `row` that differs from the row as prepared, with both values (row, prepared):
    options and template keys one by one, a prompt around its first difference."""
    mine, theirs = bound_values(row), bound_values(prepared)
    out: list[Difference] = []
    for k in BOUND:
        a, b = mine[k], theirs[k]
        if _digest(a) == _digest(b):
            continue
        if k == "options" and isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            out += [
                Difference(f"options[{i}]", x, y) for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y
            ]
        elif k == "template_metadata" and isinstance(a, Mapping) and isinstance(b, Mapping):
            out += [
                Difference(f"template_metadata.{t}", a.get(t), b.get(t))
                for t in TEMPLATE_KEYS
                if a.get(t) != b.get(t)
            ]
        elif k == "prompt" and isinstance(a, str) and isinstance(b, str):
            out.append(Difference("prompt", *_around_first_difference(a, b)))
        else:
            out.append(Difference(k, _clip(a), _clip(b)))
    return out


def edited(differences: Sequence[Difference]) -> str:
    """The account of a row edited after prepare, named against the row as prepared (both values)."""
    return "row edited after prepare; " + fields_that_differ(differences, "row != prepared")


def _clip(value: Any) -> Any:
    if isinstance(value, str) and len(value) > CLIP:
        return value[: CLIP - 3] + "..."
    return value


def _around_first_difference(a: str, b: str, context: int = 40) -> tuple[str, str]:
    """The two texts from a little before their first difference, each clipped ("..." where cut)."""
    i = next((j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, i - context)

    def cut(s: str) -> str:
        part = s[start : start + 2 * context]
        return ("..." if start else "") + part + ("..." if start + 2 * context < len(s) else "")

    return cut(a), cut(b)


def changed_names(diffs: Sequence[Difference]) -> list[str]:
    """The bound fields a list of differences touches (options[2] -> options), in BOUND order."""
    heads = {d.field.split("[", 1)[0].split(".", 1)[0] for d in diffs}
    return [k for k in BOUND if k in heads]
