"""Mode `robust`: the answer letter a careful reader takes from a response (design: docs/design/robust.md).

Stages, one module each:

    phrases.py     the words (anchors and their translations, commitments, refusals, ...): plain tables
    patterns.py    the tables compiled into patterns, in one place
    text.py        1. normalise: length-preserving views of the text (full-width folded, lower case)
    tokens.py         is this character an option letter?
    options.py        the row's options: texts, numbers, content words
    payload.py        what a payload says (a letter, a list, an option text, a refusal)
    keywords.py    2. where anchors and commitments can start
    candidates.py     answers stated in words, as Evidence (rule, position, strength, reading)
    formats.py        answers given only by the shape of the response
    scope.py       3. which question each part answers (follow-up questions, sub-items)
    decide.py      4. one decision over the evidence; abstains when it conflicts
    extract.py        the general path, staged from the end of the text
    fastpath.py       the same result for the most common closings, checked by property tests
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...records import STATUS_NO_ANSWER, Candidate
from ..base import Extraction
from .echo import blank_echo, question_headers
from .extract import NO_TEXT, general_extract, read_cut_off, read_response, read_text
from .fastpath import fast_region
from .labels import DEFAULT, Labels, labels_for
from .tokens import ASCII_LETTERS

__all__ = ["extract_robust", "general_extract", "custom_capture_is_word_part", "with_labels_of"]


def extract_robust(
    text: str,
    letters: Mapping[str, str | None],
    template_metadata: Mapping[str, Any] | None = None,
    *,
    prompt: str | None = None,
    incomplete: str | None = None,
) -> Extraction:
    """The final committed answer letter of `text`, restricted to `letters`, with the rule and span that
    decided and every candidate considered (for --explain). Never raises on odd input.

    `incomplete` (why the response was cut off, when the caller knows: grade_request reads it from the
    response) restricts the reading to the response's answer region: only an anchored answer counts, and one
    after which the response went back to reasoning is no answer (docs/robust.md, "Commitment")."""
    if not isinstance(text, str) or not text or text.isspace():
        return NO_TEXT
    if type(letters) is not dict and not isinstance(letters, Mapping):
        letters = {}
    if prompt and not (template_metadata and template_metadata.get("option_labels")):
        template_metadata = with_labels_of(prompt, letters, template_metadata)
    labels = labels_for(letters, template_metadata) if template_metadata else DEFAULT
    echoed: list[tuple[int, int]] = []
    headers = None
    if prompt:
        headers = question_headers(prompt, letters)
        text, echoed = blank_echo(text, prompt, letters)
        if echoed and text.isspace():
            why = "the response only repeats the prompt"
            span = (echoed[0][0], echoed[-1][1])
            return Extraction(
                None, STATUS_NO_ANSWER, RULE_ECHO, span, (Candidate(RULE_ECHO, span, None, why),), message=why
            )
    if incomplete:
        why = str(incomplete)
        ext = read_response(text, letters, lambda t, lt, lb: read_cut_off(t, lt, lb, why, headers), labels)
    elif headers is not None and headers.search(text) is not None:
        ext = read_response(text, letters, lambda t, lt, lb: read_text(t, lt, lb, headers=headers), labels)
    else:
        ext = read_response(text, letters, _fast_or_general, labels)
    if echoed:
        notes = tuple(Candidate(RULE_ECHO, span, None, "repeats the prompt: not read") for span in echoed)
        ext = ext._replace(candidates=notes + ext.candidates)
    return ext


RULE_ECHO = "robust.echo"


def with_labels_of(
    prompt: str, letters: Mapping[str, Any], template_metadata: Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    """`template_metadata` with the option labels the rendered prompt shows (prompt_labels.py: "1." ... "4." ->
    "numbers", "الف) … ت)" -> those labels), when it shows a scheme other than A, B, C; else unchanged."""
    from .prompt_labels import prompt_option_labels

    texts = list(letters.values())
    if not all(isinstance(t, str) for t in texts):
        return template_metadata
    scheme = prompt_option_labels(prompt, texts)
    if scheme is None:
        return template_metadata
    return {**(template_metadata or {}), "option_labels": scheme}


def _fast_or_general(text: str, letters: Mapping[str, Any], labels: Labels) -> Extraction:
    fast = fast_region(text, letters) if labels is DEFAULT else None  # (the fast shapes are Latin labels)
    return fast if fast is not None else read_text(text, letters, labels)


def custom_capture_is_word_part(text: str, span: tuple[int, int] | None) -> bool:
    """True when a custom output_regex captured one ASCII letter glued to other letters (the "A" of
    "Answer" in "Answer: Answer: C"): in `robust` that is not a commitment, and the mode reads the text."""
    if span is None or span[1] - span[0] != 1:
        return False
    a = span[0]
    if text[a] not in ASCII_LETTERS:
        return False
    return (a > 0 and text[a - 1].isalpha()) or (a + 1 < len(text) and text[a + 1].isalpha())
