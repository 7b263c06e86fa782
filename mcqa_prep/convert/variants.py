"""One row -> its variants: complete rows, each with its options reordered, its expected_answer moved with the
gold text, its prompt's option block rewritten, and the link to its question.

What stays: every other field (the template's output_regex and answer format, grading_mode, uuid, metadata),
and every byte of the prompt outside the option texts. The link, `metadata.mcqa_prep.permutation`:

    {"question": "uuid:…" (or "prompt:<the row's own prompt id>" when it has no uuid),
     "order": [2, 0, 1, 3] (order[p]: the row's own index of the option now at position p),
     "variant": 1, "variants": 4}

Variants of one question share its uuid (a uuid names a question: NeMo Gym renders one under several
templates) and differ in their prompt, options and gold, so each is its own row for everything that keys on
those (rescore's join, a row's contract binding).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..evidence import question_key, uuid_of
from ..fields import permutation_link
from ..prompt import prompt_id
from .option_block import Block, find_block, labels_given, rewrite
from .orders import PermuteSpec, orders_for, rng_for

LINK = "permutation"


@dataclass(frozen=True)
class Expansion:
    """The variants of a row (None when it cannot be permuted: `problem` says why), and why it has fewer
    orders than asked (`short`: anchored, unresolved, few_orders; None when it has as many)."""

    rows: list[dict[str, Any]] | None
    problem: str | None = None
    short: str | None = None
    anchored: bool = False


def question_of(row: Mapping[str, Any]) -> str | None:
    """The id every variant of this row names: its uuid key, else its own prompt's id."""
    return question_key(uuid_of(row), prompt_id(row.get("responses_create_params")), "uuid")


def link_of(row: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A row's `metadata.mcqa_prep.permutation` (None when it is not a variant)."""
    return permutation_link(row)


def _prompt(row: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(the user prompt's text, None) when it can be rewritten, else (None, why not)."""
    rcp = row.get("responses_create_params")
    inp = rcp.get("input") if isinstance(rcp, Mapping) else None
    if isinstance(inp, str):
        return inp, None
    if not isinstance(inp, list) or len(inp) != 1 or not isinstance(inp[0], Mapping):
        return None, "the prompt is not one user message"
    content = inp[0].get("content")
    if isinstance(content, str):
        return content, None
    return None, "the prompt's content is not one text (content parts)"


def _with_prompt(row: Mapping[str, Any], text: str) -> dict[str, Any]:
    rcp = dict(row["responses_create_params"])
    if isinstance(rcp["input"], str):
        rcp["input"] = text
    else:
        rcp["input"] = [{**rcp["input"][0], "content": text}]
    return rcp


def expand(row: Mapping[str, Any], spec: PermuteSpec, salt: bytes, question: str | None = None) -> Expansion:
    """The variants of a valid row with normalised options (single-letter keys, texts) and gold; `question`
    overrides the id the variants name (convert passes the uuid key it assigned)."""
    if link_of(row) is not None:
        return Expansion(
            None, "the row is already one order of a permuted question (metadata.mcqa_prep.permutation)"
        )
    options = row["options"]
    letters = [next(iter(o)) for o in options]
    texts = [o[L] for o, L in zip(options, letters, strict=True)]
    prompt, why = _prompt(row)
    if prompt is None:
        return Expansion(None, why)
    found = find_block(prompt, letters, texts, labels_given(row.get("template_metadata")))
    if isinstance(found, str):
        return Expansion(None, f"the prompt's option block cannot be found exactly: {found}")
    qid = question or question_of(row)
    if qid is None:
        return Expansion(None, "the row names no question (no uuid, no prompt)")
    orders = orders_for(texts, spec, rng_for(qid, salt))
    gold = letters.index(row["expected_answer"])
    rows = []
    for v, order in enumerate(orders.orders):
        made = _variant(row, letters, texts, gold, prompt, found, order)
        if isinstance(made, str):
            return Expansion(None, made)
        _link(made, {"question": qid, "order": list(order), "variant": v, "variants": len(orders.orders)})
        rows.append(made)
    return Expansion(rows, None, orders.short, bool(orders.pinned))


def _variant(
    row: Mapping[str, Any],
    letters: list[str],
    texts: list[str],
    gold: int,
    prompt: str,
    block: Block,
    order: tuple[int, ...],
) -> dict[str, Any] | str:
    new_texts = [texts[j] for j in order]
    new_prompt = rewrite(prompt, block, new_texts)
    again = find_block(new_prompt, letters, new_texts, labels_given(row.get("template_metadata")))
    if isinstance(again, str):  # e.g. a text that now reads as another option's line: never guess
        return f"order {list(order)}: the rewritten prompt's option block cannot be found again: {again}"
    out = dict(row)
    out["options"] = [{L: t} for L, t in zip(letters, new_texts, strict=True)]
    out["expected_answer"] = letters[order.index(gold)]
    out["responses_create_params"] = _with_prompt(row, new_prompt)
    return out


def _link(row: dict[str, Any], link: dict[str, Any]) -> None:
    md = dict(row.get("metadata") or {})
    md["mcqa_prep"] = {**(md.get("mcqa_prep") or {}), LINK: link}
    row["metadata"] = md
