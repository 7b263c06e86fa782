"""The response's context in `robust` (docs/robust.md, "Commitment"): a response its caller knows was cut off is
graded from its answer region only, and `grade_request` reads that from the verify request (`status:
"incomplete"`, `incomplete_details`, a rollout's `finish_reason`); text that repeats the rendered prompt is not
the model's answer (robust/echo.py). Only `robust` reads the context: NeMo Gym's modes grade the text alone, and
the policy's `zero_truncated` gate is unchanged. Behaviour cases: data/golden/robust_cases.jsonl (those with an
`incomplete` or a `prompt` field).
"""

from __future__ import annotations

import pytest

from mcqa_prep.grader import grade_text
from mcqa_prep.grader.modes import MODES
from mcqa_prep.grader.request import cut_off_reason, grade_request
from mcqa_prep.grader.robust.echo import blank_echo, question_headers
from mcqa_prep.policy import GradingPolicy
from mcqa_prep.records import STATUS_NO_ANSWER, STATUS_TRUNCATED

OPTIONS = [{"A": "Mercury"}, {"B": "Venus"}, {"C": "Mars"}, {"D": "Jupiter"}]
STREAM = "The orbit is the shortest, so option A.\n\nBut the question asks about the inner planets."


def _request(text: str, *, status: str = "completed", details=None, **extra) -> dict:
    response = {
        "status": status,
        "incomplete_details": details,
        "output": [{"type": "message", "content": [{"type": "output_text", "text": text}]}],
    }
    return {
        "responses_create_params": {"input": [{"role": "user", "content": "Which planet? A. Mercury ..."}]},
        "options": OPTIONS,
        "expected_answer": "A",
        "response": response,
        **extra,
    }


@pytest.mark.parametrize(
    ("request_kwargs", "reason"),
    [
        ({}, None),
        ({"status": "incomplete"}, "incomplete"),
        ({"status": "incomplete", "details": {"reason": "max_output_tokens"}}, "max_output_tokens"),
        ({"details": {"reason": "content_filter"}}, "content_filter"),
        ({"finish_reason": "length"}, "length"),
        ({"finish_reason": "stop"}, None),
    ],
)
def test_what_a_request_says_of_a_cut(request_kwargs, reason):
    kwargs = dict(request_kwargs)
    extra = {"finish_reason": kwargs.pop("finish_reason")} if "finish_reason" in kwargs else {}
    assert cut_off_reason(_request(STREAM, **kwargs, **extra)) == reason
    req = _request(STREAM)
    req["response"]["finish_reason"] = "length"  # (a chat-completions response carries its own)
    assert cut_off_reason(req) == "length"


def test_robust_reads_a_cut_stream_as_no_answer_and_says_why():
    full, _ = grade_request(_request(STREAM), GradingPolicy(grading_mode_override="robust"))
    cut, _ = grade_request(
        _request(STREAM, status="incomplete", details={"reason": "max_output_tokens"}),
        GradingPolicy(grading_mode_override="robust"),
    )
    assert full.extracted_answer == "A"  # (no signal, and the text ends its sentence: the phrase reads)
    assert (cut.extracted_answer, cut.status, cut.rule) == (None, STATUS_NO_ANSWER, "robust.incomplete")
    assert "max_output_tokens" in cut.message and any(c.rule == "robust.incomplete" for c in cut.candidates)


def test_a_stream_that_stops_mid_sentence_needs_no_signal():
    text = "The orbit is the shortest, so option A.\n\nBut the question asks about"
    got, _ = grade_request(_request(text), GradingPolicy(grading_mode_override="robust"))
    assert (got.extracted_answer, got.status, got.rule) == (None, STATUS_NO_ANSWER, "robust.scope")


def test_an_anchored_answer_before_the_cut_still_counts():
    text = "Mercury is closest.\n\nAnswer: A\n\nTo add some context on the orbit of"
    cut, _ = grade_request(_request(text, status="incomplete"), GradingPolicy(grading_mode_override="robust"))
    assert (cut.extracted_answer, cut.rule) == ("A", "robust.answer_anchor")


@pytest.mark.parametrize("mode", [m.name for m in MODES if m.nemo_gym or not m.reads_context])
def test_other_modes_never_read_the_context(mode):
    """Parity: grading is the same with and without the context (and so is grade_request for a cut response)."""
    text = "So option A.\n\nAnswer: A\n\\boxed{A}"
    plain = grade_text(text, OPTIONS, "A", None, None, override=mode)
    given = grade_text(text, OPTIONS, "A", None, None, override=mode, prompt="Q?", incomplete="length")
    assert (plain.extracted_answer, plain.status, plain.rule) == (
        given.extracted_answer,
        given.status,
        given.rule,
    )
    got, _ = grade_request(_request(text, status="incomplete"), GradingPolicy(grading_mode_override=mode))
    assert (got.extracted_answer, got.status) == (plain.extracted_answer, plain.status)


def test_the_truncation_gate_is_unchanged():
    policy = GradingPolicy(grading_mode_override="robust", zero_truncated=True)
    got, prov = grade_request(_request("Answer: A", status="incomplete"), policy)
    assert (got.status, got.reward, prov["gate"]) == (STATUS_TRUNCATED, 0.0, STATUS_TRUNCATED)


# ------------------------------------------------------------------------------------------------ the echo

PROMPT = (
    "Which planet is closest to the sun?\nA) Mercury\nB) Venus\nC) Mars\nD) Jupiter\n\n"
    "Reply as: Answer key: <A, B, C or D, one of them>\nAnswer key:"
)
LETTERS = {"A": "Mercury", "B": "Venus", "C": "Mars", "D": "Jupiter"}


def test_an_echo_is_blanked_one_character_for_one():
    text = " C, one of them>\nThe planet is Mars."
    blanked, spans = blank_echo(text, PROMPT, LETTERS)
    assert len(blanked) == len(text) and blanked.count("\n") == text.count("\n")
    assert spans and blanked[spans[0][0] : spans[0][1]].strip() == ""
    assert blanked.endswith("The planet is Mars.")  # (what the model added is kept)


def test_what_is_not_blanked():
    """No prompt, an echo without a label, the format filled with the model's letter, an option's text."""
    assert blank_echo(" C, one of them>", "", LETTERS) == (" C, one of them>", [])
    assert blank_echo("Which planet is closest to the sun? Mercury.", PROMPT, LETTERS)[1] == []
    assert blank_echo("Reply as: Answer key: C", PROMPT, LETTERS)[1] == []
    assert blank_echo("B) Venus", PROMPT, LETTERS)[1] == []


def test_the_prompts_question_header():
    few_shot = (
        "Pregunta: ¿2+2?\nA) 3\nB) 4\nRespuesta: B\n\nPregunta: ¿Planeta?\nA) Mercury\nB) Venus\nRespuesta:"
    )
    header = question_headers(few_shot, {"A": "Mercury", "B": "Venus"})
    assert header is not None and header.search("B\n\nPregunta: ¿3+3?") and header.search("x\n## PREGUNTA 2:")
    own_header = "Which planet?\n\nOptions:\nA) Mercury\nB) Venus\n\nAnswer:"
    assert (
        question_headers(own_header, {"A": "Mercury", "B": "Venus"}) is None
    )  # ("Options:" is the listing's)
    said = "Ali says: which planet?\nA) Mercury\nB) Venus"
    assert question_headers(said, {"A": "Mercury", "B": "Venus"}) is None  # (two words: the question's own)
    answer_word = "Answer this: which planet?\nA) Mercury\nB) Venus"
    assert question_headers(answer_word, {"A": "Mercury", "B": "Venus"}) is None
