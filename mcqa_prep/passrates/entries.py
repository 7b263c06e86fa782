"""One (question, model) entry of a pass-rate table: what it holds, how it is written, and how a line is checked.

passrates.v1 entries: key, model, samples, passes, pass_rate (= passes / samples), mean_reward.
passrates.v2 adds how the rollouts were counted and the posterior:

- rollouts: graded rollouts of the question by the model; unanswered: those without an extracted answer
  (null when the answers were not known, e.g. NeMo Gym profile rows); samples and passes as the table's
  no_answer rule counts them (`fail`: samples = rollouts, an unanswered rollout fails; `exclude`:
  samples = rollouts - unanswered);
- votes: the sizes of the answer groups among the samples, {"pass": [...], "fail": [...]} sorted largest
  first (majority@k needs nothing else), or null when answers were not known;
- posterior_mean / posterior_lower / posterior_upper: the Beta posterior of the pass probability under the
  model's prior (header `posterior.priors`), at the header's credible level; bucket: its difficulty bucket
  (0 the easiest).

passrates.v3 adds the question across its variants (passrates/consistency.py): k (the option count, null when
unknown), variants (per distinct prompt: its id, gold position, samples, passes), the consistent rate
(observed and its posterior: mean, lower, upper), the chance-corrected posterior (mean, lower, upper; null
without k), at_chance and corrected_bucket (the bucket count when at chance).
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any, NamedTuple

import orjson

from ..io.readers import is_blank, nonfinite_paths, parse_fallback
from ..schema import json_path, load_schema
from .kmetrics import Votes

V1_FIELDS = frozenset(("key", "model", "samples", "passes", "pass_rate", "mean_reward"))
V2_FIELDS = V1_FIELDS | frozenset(
    ("rollouts", "unanswered", "votes", "posterior_mean", "posterior_lower", "posterior_upper", "bucket")
)
V3_FIELDS = V2_FIELDS | frozenset(
    ("k", "variants", "consistent_rate", "consistent_mean", "consistent_lower", "consistent_upper")
    + ("corrected_mean", "corrected_lower", "corrected_upper", "at_chance", "corrected_bucket")
)
KEY_PATTERN = re.compile(r"^(uuid:.+|prompt:[0-9a-f]{32})$", re.S)
_PROMPT_ID = re.compile(r"^[0-9a-f]{32}$")


class Variant(NamedTuple):
    """One variant of a question (passrates/consistency.py): its prompt id (32 hex digits; '' unknown), gold
    position (0-based; None unknown), samples and passes."""

    prompt: str
    gold: int | None
    samples: int
    passes: int


class Entry(NamedTuple):
    """The evidence for one question and one model (a NamedTuple: a million of them are built per read).
    Fields past mean_reward are None in a v1 table until its posterior is computed on reading."""

    samples: int
    passes: int
    mean_reward: float
    rollouts: int | None = None
    unanswered: int | None = None
    votes: Votes | None = None
    posterior_mean: float | None = None
    posterior_lower: float | None = None
    posterior_upper: float | None = None
    bucket: int | None = None
    k: int | None = None  # v3 on: the question across its variants (passrates/consistency.py)
    variants: tuple[Variant, ...] | None = None
    consistent_rate: float | None = None
    consistent_mean: float | None = None
    consistent_lower: float | None = None
    consistent_upper: float | None = None
    corrected_mean: float | None = None
    corrected_lower: float | None = None
    corrected_upper: float | None = None
    at_chance: bool | None = None
    corrected_bucket: int | None = None

    @property
    def pass_rate(self) -> float:
        return self.passes / self.samples

    def estimate(self, on: str) -> float | None:
        """The pass probability a filter reads: 'observed' (passes / samples), the posterior's 'mean', 'lower'
        or 'upper' bound, or (a v3 table) the same of the chance-corrected ('corrected-mean', ...) or consistent
        ('consistent-mean', ...) posterior; None when the table does not hold it."""
        if on == "observed":
            return self.pass_rate
        return {
            "mean": self.posterior_mean,
            "lower": self.posterior_lower,
            "upper": self.posterior_upper,
            "corrected-mean": self.corrected_mean,
            "corrected-lower": self.corrected_lower,
            "corrected-upper": self.corrected_upper,
            "consistent-mean": self.consistent_mean,
            "consistent-lower": self.consistent_lower,
            "consistent-upper": self.consistent_upper,
        }[on]


def entry_line_v2(key: str, model: str, e: Entry) -> bytes:
    return orjson.dumps(_v2_doc(key, model, e), option=orjson.OPT_SORT_KEYS) + b"\n"


def entry_lines_v3(entries: list[tuple[str, str, Entry]]) -> bytes:
    """The table lines of `entries` (key, model, Entry), each its keys sorted and a newline after it: one
    orjson call for the lot, its list split into lines where an entry begins (`},{"at_chance":`, which no
    JSON string can hold unescaped and no nested object of an entry begins with)."""
    if not entries:
        return b""
    body = orjson.dumps([_v3_doc(*e) for e in entries])
    return body[1:-1].replace(_BETWEEN, _BETWEEN_LINES) + b"\n"


_BETWEEN, _BETWEEN_LINES = b'},{"at_chance":', b'}\n{"at_chance":'


def entry_lines_shaped(entries: list[tuple[str, str, Entry]], shapes: list[Any]) -> bytes:
    """The same bytes as entry_lines_v3(entries), faster when entries share a shape: `shapes` holds per entry
    an object (or None) that entries share only when every field of theirs but the key, mean_reward, rollouts,
    unanswered, votes and their one variant's prompt and gold is equal (estimate.estimated's promise). A shape's
    line is serialised once with those fields as holes, and each of its entries fills them in; an entry
    without a shape (or of several variants, or whose shape cannot be cut into holes) is serialised whole."""
    out = []
    cut: dict[int, list[bytes] | None] = {}  # id(shape) -> its line's fragments around the holes
    for (key, model, e), shape in zip(entries, shapes, strict=True):
        f = cut.get(id(shape), _UNCUT) if shape is not None and len(e.variants or ()) == 1 else None
        if f is _UNCUT:
            f = cut[id(shape)] = _holes(key, model, e)
        if f is None:
            out.append(orjson.dumps(_v3_doc(key, model, e)) + b"\n")
            continue
        out.append(_filled(f, key, e))
    return b"".join(out)


_UNCUT: Any = []
_HOLE = [f"\x00\x01{i}" for i in range(7)]  # (serialised as escapes: no number, bool or null holds them)


def _holes(key: str, model: str, e: Entry) -> list[bytes] | None:
    """The line of `e` cut around its holes (entry_lines_shaped), or None when it cannot be cut exactly."""
    doc = _v3_doc(key, model, e)
    doc["key"], doc["mean_reward"], doc["rollouts"], doc["unanswered"] = _HOLE[:4]
    variant = doc["variants"][0]
    variant["gold"], variant["prompt"], doc["votes"] = _HOLE[4:]
    parts = orjson.dumps(doc)
    for hole in _HOLE:
        parts = parts.replace(orjson.dumps(hole), b"\x00")
    f = [*parts.split(b"\x00")]
    if len(f) != 8:  # (a model name holding a hole's characters)
        return None
    f[7] += b"\n"
    return f if _filled(f, key, e) == orjson.dumps(_v3_doc(key, model, e)) + b"\n" else None


def _filled(f: list[bytes], key: str, e: Entry) -> bytes:
    """The line of `e`: its shape's fragments `f` around its own key, mean_reward, rollouts, unanswered, the
    gold and prompt of its one variant and its votes."""
    dumps, votes, (prompt, gold, _, _) = orjson.dumps, e.votes, e.variants[0]  # type: ignore[index]
    return b"".join((
        f[0], dumps(key), f[1], dumps(e.mean_reward), f[2], dumps(e.rollouts), f[3], dumps(e.unanswered), f[4],
        dumps(gold), f[5], dumps(prompt or None), f[6],
        dumps(None if votes is None else {"fail": votes[1], "pass": votes[0]}), f[7],
    ))  # fmt: skip


def _v3_doc(key: str, model: str, e: Entry) -> dict[str, Any]:
    (samples, passes, mean_reward, rollouts, unanswered, votes, p_mean, p_lower, p_upper, bucket, k, variants,
     c_rate, c_mean, c_lower, c_upper, x_mean, x_lower, x_upper, at_chance, x_bucket) = e  # fmt: skip
    if variants is not None and len(variants) == 1:  # (most questions: no comprehension)
        prompt, gold, n, c = variants[0]
        vs = [{"gold": gold, "passes": c, "prompt": prompt or None, "samples": n}]
    else:
        vs = [
            {"gold": gold, "passes": c, "prompt": prompt or None, "samples": n}
            for prompt, gold, n, c in variants or ()
        ]
    return {  # _v2_doc's fields and the v3 ones, in one dict, its keys inserted sorted (as the line has them)
        "at_chance": at_chance,
        "bucket": bucket,
        "consistent_lower": c_lower,
        "consistent_mean": c_mean,
        "consistent_rate": c_rate,
        "consistent_upper": c_upper,
        "corrected_bucket": x_bucket,
        "corrected_lower": x_lower,
        "corrected_mean": x_mean,
        "corrected_upper": x_upper,
        "k": k,
        "key": key,
        "mean_reward": mean_reward,
        "model": model,
        "pass_rate": passes / samples,
        "passes": passes,
        "posterior_lower": p_lower,
        "posterior_mean": p_mean,
        "posterior_upper": p_upper,
        "rollouts": rollouts,
        "samples": samples,
        "unanswered": unanswered,
        "variants": vs,
        "votes": None if votes is None else {"fail": votes[1], "pass": votes[0]},  # (a tuple: a JSON array)
    }


def _v2_doc(key: str, model: str, e: Entry) -> dict[str, Any]:
    return {
        "key": key,
        "model": model,
        "rollouts": e.rollouts,
        "samples": e.samples,
        "passes": e.passes,
        "pass_rate": e.passes / e.samples,
        "mean_reward": e.mean_reward,
        "unanswered": e.unanswered,
        "votes": None if e.votes is None else {"pass": list(e.votes[0]), "fail": list(e.votes[1])},
        "posterior_mean": e.posterior_mean,
        "posterior_lower": e.posterior_lower,
        "posterior_upper": e.posterior_upper,
        "bucket": e.bucket,
    }


@functools.cache
def _entry_validator(schema: str) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load_schema(schema)["$defs"]["entry"])


_INT = frozenset((int,))
_NUMBER = (int, float)


def _sizes(v: Any) -> bool:
    """A list of positive integers, largest first (map/sorted: C speed on a million entries)."""
    return type(v) is list and (
        not v or ({*map(type, v)} <= _INT and v[-1] > 0 and v == sorted(v, reverse=True))
    )


def _unit(x: Any) -> bool:
    return type(x) in _NUMBER and 0 <= x <= 1


def v2_problem(d: dict[str, Any], rule: str, buckets: int) -> str | None:
    """What is inconsistent in a v2 entry whose fields have the right types, under the table's rule."""
    s, p, r, u, votes = d["samples"], d["passes"], d["rollouts"], d["unanswered"], d["votes"]
    if not math.isclose(d["pass_rate"], p / s, rel_tol=0, abs_tol=1e-12):
        return f"$.pass_rate: {d['pass_rate']} is not passes / samples ({p}/{s})"
    if u is not None and (rule == "fail" and (r != s or u > s) or rule == "exclude" and r != s + u):
        return f"$.rollouts: {r} rollouts, {s} samples and {u} unanswered disagree under no_answer={rule}"
    if u is None and r != s:
        return f"$.rollouts: {r} rollouts but {s} samples, and no count of unanswered rollouts"
    if votes is not None:
        if (
            u is None
            or sum(votes["pass"]) != p
            or sum(votes["pass"]) + sum(votes["fail"]) + (u if rule == "fail" else 0) != s
        ):
            return "$.votes: the answer groups do not add up to the samples and passes"
    lo, mean, hi = d["posterior_lower"], d["posterior_mean"], d["posterior_upper"]
    if not lo <= mean <= hi:
        return f"$.posterior_mean: {mean} is not within [{lo}, {hi}]"
    if not 0 <= d["bucket"] < buckets:
        return f"$.bucket: {d['bucket']} is not one of the table's {buckets} buckets"
    return None


def v2_fields_ok(d: Any) -> bool:
    """The fast check of a v2 entry's shape and types (the common case); anything else gets a precise message
    from `entry_problem`."""
    return type(d) is dict and len(d) == 13 and _v2_core_ok(d)


def _v2_core_ok(d: dict[str, Any]) -> bool:
    return (
        type(d["key"]) is str
        and type(d["model"]) is str
        and d["model"] != ""
        and type(d["samples"]) is int
        and type(d["passes"]) is int
        and type(d["rollouts"]) is int
        and 0 <= d["passes"] <= d["samples"] <= d["rollouts"]
        and d["samples"] >= 1
        and (d["unanswered"] is None or type(d["unanswered"]) is int and d["unanswered"] >= 0)
        and (
            d["votes"] is None
            or type(d["votes"]) is dict
            and d["votes"].keys() == {"pass", "fail"}
            and _sizes(d["votes"]["pass"])
            and _sizes(d["votes"]["fail"])
        )  # fmt: skip
        and type(d["pass_rate"]) in (int, float)
        and _unit(d["mean_reward"])
        and _unit(d["posterior_mean"])
        and _unit(d["posterior_lower"])
        and _unit(d["posterior_upper"])
        and type(d["bucket"]) is int
        and KEY_PATTERN.match(d["key"]) is not None
    )


def v3_fields_ok(d: Any) -> bool:
    """The fast check of a v3 entry's shape and types (v2's, and the fields across variants)."""
    if type(d) is not dict or len(d) != 24 or not _v2_core_ok(d):
        return False
    k, vs = d["k"], d["variants"]
    corr = (d["corrected_mean"], d["corrected_lower"], d["corrected_upper"])
    return (
        (k is None or type(k) is int and k >= 2)
        and type(vs) is list
        and len(vs) >= 1
        and all(_variant_ok(v, k) for v in vs)
        and _unit(d["consistent_rate"])
        and _unit(d["consistent_mean"])
        and _unit(d["consistent_lower"])
        and _unit(d["consistent_upper"])
        and (
            k is None
            and corr == (None, None, None)
            and d["at_chance"] is None
            and d["corrected_bucket"] is None
            or k is not None
            and all(type(x) in _NUMBER and -1 <= x <= 1 for x in corr)
            and type(d["at_chance"]) is bool
            and type(d["corrected_bucket"]) is int
        )  # fmt: skip
    )


def _variant_ok(v: Any, k: int | None) -> bool:
    return (
        type(v) is dict
        and v.keys() == {"prompt", "gold", "samples", "passes"}
        and (v["prompt"] is None or type(v["prompt"]) is str and _PROMPT_ID.match(v["prompt"]) is not None)
        and (v["gold"] is None or type(v["gold"]) is int and 0 <= v["gold"] and (k is None or v["gold"] < k))
        and type(v["samples"]) is int
        and type(v["passes"]) is int
        and 0 <= v["passes"] <= v["samples"]
        and v["samples"] >= 1
    )


def v3_problem(d: dict[str, Any], rule: str, buckets: int) -> str | None:
    """What is inconsistent in a v3 entry whose fields have the right types: v2's checks, then the variants
    adding up to the entry, the intervals holding their means, and the bucket of a question at chance."""
    found = v2_problem(d, rule, buckets)
    if found is not None:
        return found
    vs = d["variants"]
    if sum(v["samples"] for v in vs) != d["samples"] or sum(v["passes"] for v in vs) != d["passes"]:
        return "$.variants: the variants' samples and passes do not add up to the entry's"
    if not d["consistent_lower"] <= d["consistent_mean"] <= d["consistent_upper"]:
        return f"$.consistent_mean: {d['consistent_mean']} is not within its bounds"
    if d["k"] is not None:
        if not d["corrected_lower"] <= d["corrected_mean"] <= d["corrected_upper"]:
            return f"$.corrected_mean: {d['corrected_mean']} is not within its bounds"
        if d["at_chance"] != (d["corrected_bucket"] == buckets) or not 0 <= d["corrected_bucket"] <= buckets:
            return (
                f"$.corrected_bucket: {d['corrected_bucket']} does not agree with at_chance {d['at_chance']}"
            )
    return None


def entry_from_v3(d: dict[str, Any], variants: bool = True) -> Entry:
    """A v3 entry; without `variants` its per-variant counts are not kept (None: a reader that needs none of
    them saves their memory, about 200 bytes an entry)."""
    return entry_from_v2(d)._replace(
        k=d["k"],
        variants=tuple(
            Variant(v["prompt"] or "", v["gold"], v["samples"], v["passes"]) for v in d["variants"]
        )
        if variants
        else None,
        consistent_rate=float(d["consistent_rate"]),
        consistent_mean=float(d["consistent_mean"]),
        consistent_lower=float(d["consistent_lower"]),
        consistent_upper=float(d["consistent_upper"]),
        corrected_mean=None if d["corrected_mean"] is None else float(d["corrected_mean"]),
        corrected_lower=None if d["corrected_lower"] is None else float(d["corrected_lower"]),
        corrected_upper=None if d["corrected_upper"] is None else float(d["corrected_upper"]),
        at_chance=d["at_chance"],
        corrected_bucket=d["corrected_bucket"],
    )


def entry_from_v2(d: dict[str, Any]) -> Entry:
    votes = d["votes"]
    return Entry(
        d["samples"],
        d["passes"],
        float(d["mean_reward"]),
        d["rollouts"],
        d["unanswered"],
        None if votes is None else (tuple(votes["pass"]), tuple(votes["fail"])),
        float(d["posterior_mean"]),
        float(d["posterior_lower"]),
        float(d["posterior_upper"]),
        d["bucket"],
    )


def entry_problem(
    raw: bytes, schema: str, fields: frozenset[str]
) -> tuple[dict[str, Any] | None, str | None]:
    """(entry, None) when the line parses and follows the entry schema (its consistency is checked by the
    caller), else (None, what is wrong with this line)."""
    if is_blank(raw):
        return None, "blank line"
    try:
        d = orjson.loads(raw)
    except orjson.JSONDecodeError:
        d, why = parse_fallback(raw)
        if why is not None:
            return None, why
        bad = list(nonfinite_paths(d))
        if bad:
            return None, f"{bad[0]}: NaN/Infinity is not a number (not a pass rate)"
    errors = sorted(_entry_validator(schema).iter_errors(d), key=lambda e: list(e.absolute_path))
    if errors:
        return None, f"{json_path(errors[0].absolute_path)}: {errors[0].message}"
    if d.keys() != fields:
        return None, f"fields {sorted(d)} are not the {schema} entry's"
    if d["passes"] > d["samples"]:
        return None, f"$.passes: {d['passes']} passes out of {d['samples']} samples"
    return d, None
