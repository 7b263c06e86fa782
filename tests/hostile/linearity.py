"""Adversarial responses for every grading mode, and a measure of how each mode's work grows with them.

Run as a script (in a child process of the test, so that nothing else shares its CPU clock): for each mode
and generator, the grade of a size-n response and of a size-4n response, each the least CPU time of two runs;
prints one JSON object per line: {"mode", "case", "small", "large", "ratio"}. Linear work gives a ratio near
4, quadratic work near 16: the test (test_hostile_bounds) allows 10, never an absolute time.

Each generator builds a response of about `n` characters from a unit repeated (or nested) n / len(unit)
times: the shapes that made an extractor quadratic before (a box opened again and again, a prefix repeated
along one line, answer words in full-width letters), the other shapes each mode looks for, and every anchor
followed by a long run of one character (RUN_ANCHORS x RUN_CHARACTERS).
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable

OPTIONS = [{"A": "alpha beta"}, {"B": "gamma delta"}, {"C": "epsilon"}, {"D": "zeta eta"}]


def _rep(unit: str) -> Callable[[int], str]:
    return lambda n: unit * max(1, n // len(unit))


def _nest(open_: str, inner: str, close: str) -> Callable[[int], str]:
    return lambda n: (
        open_ * max(1, n // (len(open_) + len(close)))
        + inner
        + close * max(1, n // (len(open_) + len(close)))
    )


def _lines(fmt: str) -> Callable[[int], str]:
    def make(n: int) -> str:
        out, size, i = [], 0, 0
        while size < n:
            line = fmt.format(i=i, L="ABCD"[i % 4])
            out.append(line)
            size += len(line)
            i += 1
        return "".join(out)

    return make


GENERATORS: dict[str, Callable[[int], str]] = {
    "box_opened_again_and_again": _rep("\\boxed{"),
    "box_of_text_opened_again": _rep("\\boxed{\\text{"),
    "fbox_opened_again": _rep("\\fbox{"),
    "answer_then_box_opened": _rep("Answer: \\boxed{"),
    "nested_boxes": _nest("\\boxed{", "A", "}"),
    "nested_braces_in_a_box": lambda n: "\\boxed{" + _nest("{", "A", "}")(n) + "}",
    "nested_text_wrappers": lambda n: "\\boxed{" + _nest("\\text{", "A", "}")(n) + "}",
    "answer_with_nested_wrappers": lambda n: "Answer: " + _nest("\\text{", "A", "}")(n),
    "unbalanced_open_braces": _rep("{"),
    "unbalanced_close_braces": _rep("}"),
    "answer_colon_repeated": _rep("Answer:"),
    "answer_colon_space_repeated": _rep("Answer: "),
    "answer_lines": _rep("Answer: A\n"),
    "bare_answer_lines": _rep("Answer:\n"),
    "markdown_answer_repeated": _rep("**Answer:** "),
    "the_answer_is_repeated": _rep("the answer is "),
    "final_answer_repeated": _rep("Final answer: "),
    "answer_then_blank_lines": lambda n: "Answer:" + "\n" * n + "A",
    "answer_then_spaces": lambda n: "Answer" + " " * n + "x",
    "option_lines": _rep("A) alpha beta\n"),
    "option_label_lines": _lines("{L}. x\n"),
    "numbered_answer_lines": _lines("{i}. A\n"),
    "sub_question_lines": _lines("Sub-question {i}: A\n"),
    "labelled_answers_on_one_line": _rep("Q-a: A | "),
    "option_words": _rep("Option A "),
    "choice_parens": _rep("(A) "),
    "letters_and_spaces": _rep("A "),
    "letter_lists": _rep("A or B or "),
    "negations": _rep("not A, "),
    "hedges": _rep("maybe A or possibly B, "),
    "commitments": _rep("The answer is A. "),
    "option_text_repeated": _rep("alpha beta gamma delta "),
    "inline_sub_items": _rep(". b) "),
    "ordinal_parts": _rep("Second part: A "),
    "answer_tags": _rep("<answer>"),
    "json_answer_fields": _rep('{"answer": '),
    "think_tags": lambda n: "<think>" * (n // 15) + "</think>" * (n // 15) + "A",
    "table_pipes": _rep("| A | B |"),
    "spaces_then_letter": lambda n: " " * n + "A",
    "newlines_then_letter": lambda n: "\n" * n + "A",
    "tabs_then_answer": lambda n: "\t" * n + "Answer: A",
    "carriage_returns": lambda n: "\r" * n + "A",
    "zero_width_spaces": lambda n: "\u200b" * n + "A",
    "one_long_word": _rep("x"),
    "stars": _rep("*"),
    "open_parens": _rep("("),
    "dollars": _rep("$"),
    "backslashes": _rep("\\"),
    "astral_characters": _rep("\U0001f600"),
    "combining_marks": _rep("A\u0301"),
    "full_width_letters": _rep("\uff21"),
    "full_width_answer": _rep("\uff41\uff4e\uff53\uff57\uff45\uff52\uff1a"),
    "mathematical_answer_letters": _rep("\U0001d41a\U0001d427\U0001d42c\U0001d430\U0001d41e\U0001d42b "),
    "localised_letters": _rep("\u0623 \u0628 "),
}

# The class "an anchor followed by a long run of one character" (`Answer:` + 80,000 spaces + `x` took robust
# 41 s: a pattern that fullmatched the rest of the line backtracked over the run): every anchor a mode
# looks for, followed by every character a scan after an anchor skips, reads as markup or stops at.
RUN_ANCHORS = (
    "Answer:",
    "Answer",
    "**Answer:**",
    "The answer is",
    "Final Answer:",
    "\\boxed{",
    "<answer>",
    "\u7b54\u6848\uff1a",
    "Choice:",
)
RUN_CHARACTERS = (
    " ",
    "\t",
    "\r",
    "\n",
    "\u3000",
    "\u00a0",
    "*",
    "_",
    ":",
    "#",
    "$",
    "`",
    "-",
    "x",
    "\\",
    "{",
)


def _run_after(anchor: str, char: str) -> Callable[[int], str]:
    return lambda n: anchor + char * n + "x"


GENERATORS.update(
    {f"anchor_run {a!r} + {c!r}": _run_after(a, c) for a in RUN_ANCHORS for c in RUN_CHARACTERS}
)

# (mode, template_metadata): every mode, and the template fields a mode reads
SETTINGS: list[tuple[str, dict | None]] = [
    ("strict_single_letter_boxed", None),
    ("lenient_boxed", None),
    ("lenient_answer_colon", None),
    ("string_equals_mcqa", None),
    ("lenient_answer_colon_md", None),
    ("lenient_answer_colon_md", {"answer_prefix": "Answer:"}),
    ("lenient_answer_colon_md", {"answer_prefix": "x"}),
    ("robust", None),
    ("robust", {"output_regex": r"Answer:\s*([A-D])"}),
]


def _cpu(text: str, mode: str, tm: dict | None) -> float:
    from mcqa_prep.grader import grade_text

    best = float("inf")
    gc.disable()  # a collection inside one run is not the grader's work
    try:
        for _ in range(2):
            t = time.process_time()
            grade_text(text, OPTIONS, "A", None, tm, override=mode)
            best = min(best, time.process_time() - t)
    finally:
        gc.enable()
    return best


def measure(n: int, only: str | None = None) -> list[dict]:
    from mcqa_prep.grader import grade_text

    for mode, tm in SETTINGS:  # warm up: imports, compiled patterns, Unicode tables
        grade_text("Answer: A \\boxed{A}", OPTIONS, "A", None, tm, override=mode)
    out = []
    for mode, tm in SETTINGS:
        label = mode + ("" if tm is None else " " + json.dumps(tm))
        for case, make in GENERATORS.items():
            if only and only not in case:
                continue
            small = _cpu(make(n), mode, tm)
            large = _cpu(make(4 * n), mode, tm) if small < 1.0 else float("inf")
            out.append(
                {
                    "mode": label,
                    "case": case,
                    "small": small,
                    "large": large,
                    "ratio": large / max(small, 1e-4),
                }
            )
    return out


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    for row in measure(size, sys.argv[2] if len(sys.argv) > 2 else None):
        print(json.dumps(row), flush=True)
