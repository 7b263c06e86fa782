"""Template controls, run before the first row with a given option count is written.

For each (template, option count) a probe row is rendered exactly as real rows are and checked by the
validator that `mcqa-prep validate` uses (RowValidator): the output_regex compiles, has one group, cannot
hang, a compliant answer with each letter is graded to it (positive control), neither the prompt nor a
refusal is graded to a letter (negative controls), and every option text appears in the prompt. Templates
graded by a mode alone get the same controls through the grader: a canonical answer in the mode's format
must score each letter, a refusal and the prompt must score none. Any finding fails the run.

A built-in template, unchanged, is not probed again at run time: its controls depend only on code (the
template, the grader, the validator), so tests/test_convert_templates.py runs them for every built-in at every
option count from 2 to 26, and a run records them as passed (`template_controls` lists them as before).
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..grader import DEFAULT_REGEX_TIMEOUT, grade_text
from ..grader.custom_regex import compile_pattern, last_match
from ..grader.modes import ANSWER_LINE, BY_NAME, LAST_BOX
from ..io import iter_rows
from ..labels import LETTERS
from ..validate import RowValidator
from .shapes import RowReject
from .templates import BUILTIN, Template, render_variables

# Rules that concern the set of rows, not one row; a probe row is alone by construction.
_CROSS_ROW = {"duplicate_row", "duplicate_uuid", "duplicate_prompt", "answer_position_bias"}
_REFUSAL = "I'm sorry, but I cannot determine the answer to this question."
_WORDS = (
    "amber",
    "basalt",
    "cobalt",
    "dune",
    "ember",
    "fjord",
    "granite",
    "harbor",
    "indigo",
    "juniper",
    "kelp",
    "lichen",
    "marble",
    "nectar",
    "obsidian",
    "pumice",
    "quartz",
    "resin",
    "slate",
    "tundra",
    "umber",
    "vellum",
    "willow",
    "xylem",
    "yarrow",
    "zircon",
)


def mode_sample(mode: str, letter: str) -> str:
    """A compliant response in a grading mode's own format (grader/modes.Mode.response)."""
    return BY_NAME[mode].response(letter)


def probe_row(t: Template, n: int, source_row: dict[str, Any] | None = None) -> dict[str, Any]:
    letters = LETTERS[:n]
    opts = [(L, f"{_WORDS[k]} probe choice {k + 1}") for k, L in enumerate(letters)]
    prompt = t.render(
        render_variables(
            "Which of the following is the probe's correct choice?",
            [text for _, text in opts],
            context=None,
            subject="probing",
            row=source_row if source_row is not None else {},
        )
    )
    return {
        "responses_create_params": {"input": [{"role": "user", "content": prompt}]},
        "options": [{L: text} for L, text in opts],
        "expected_answer": letters[n // 2],
        "grading_mode": t.grading_mode,
        "template_metadata": t.template_metadata(n),
        "uuid": f"probe-{t.id}-{n}",
    }


def is_builtin(t: Template) -> bool:
    """Whether `t` is a built-in template as shipped (the fields its controls depend on unchanged)."""
    b = BUILTIN.get(t.id)
    return (
        b is not None
        and t.origin == "builtin"
        and t.source == b.source
        and t.grading_mode == b.grading_mode
        and t.output_regex == b.output_regex
        and t.answer_prefix == b.answer_prefix
        and t.letter_class == b.letter_class
    )


class TemplateChecker:
    """Runs the controls once per (template, option count) and raises UsageError on the first failure.
    `probe_builtins` runs them for the built-ins too (the test that stands for them at run time)."""

    def __init__(self, regex_timeout: float | None = None, probe_builtins: bool = False) -> None:
        self.validator = (
            RowValidator() if regex_timeout is None else RowValidator(regex_timeout=regex_timeout)
        )
        # the built-ins' controls are proven at the default regex timeout only
        self.trust_builtins = regex_timeout is None and not probe_builtins
        self.done: set[tuple[str, int]] = set()
        self._tmp = tempfile.TemporaryDirectory(prefix="mcqa-prep-convert-")
        self.checked: list[dict[str, Any]] = []

    def close(self) -> None:
        self._tmp.cleanup()

    def ensure(self, t: Template, n: int, source_row: dict[str, Any] | None = None) -> None:
        """Controls for (t, n); `source_row` is the row about to be converted (for templates reading row.X)."""
        if (t.id, n) in self.done:
            return
        if not (self.trust_builtins and 2 <= n <= len(LETTERS) and is_builtin(t)):
            self._check(t, n, source_row)
        self.done.add((t.id, n))
        self.checked.append({"template_id": t.id, "options": n})

    def _fail(self, t: Template, n: int, what: str) -> UsageError:
        return UsageError(
            f"template {t.id!r} ({t.origin}) fails its controls with {n} options: {what}; "
            "no row was written (fix the template or its output_regex)"
        )

    def _check(self, t: Template, n: int, source_row: dict[str, Any] | None) -> None:
        row = probe_row(t, n, source_row)
        path = Path(self._tmp.name) / f"probe-{len(self.done)}.jsonl"
        path.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
        for rec in iter_rows([path]):
            found = [f for f in self.validator.check(rec) if f.rule not in _CROSS_ROW]
            if found:  # every finding, not only the first: one run shows everything to fix
                raise self._fail(t, n, " | ".join(f"{f.path}: {f.message} [{f.rule}]" for f in found))
        options = row["options"]
        tm = row["template_metadata"]
        prompt = row["responses_create_params"]["input"][0]["content"]
        letters = LETTERS[:n]
        if t.output_regex is None:
            for L in letters:
                res = grade_text(mode_sample(t.grading_mode, L), options, L, t.grading_mode, tm)
                if res.extracted_answer != L:
                    raise self._fail(
                        t,
                        n,
                        f"a compliant {t.grading_mode} answer with {L} is graded as "
                        f"{res.extracted_answer or 'no letter'} ({res.status})",
                    )
        for text, what in ((_REFUSAL, "a refusal"), (prompt, "the prompt itself")):
            res = grade_text(text, options, letters[0], t.grading_mode, tm)
            if res.extracted_answer is not None:
                raise self._fail(
                    t,
                    n,
                    f"{what} is graded as option {res.extracted_answer} (rule {res.rule or res.mode}): "
                    "write the answer format with a placeholder that is not a letter, e.g. <letter>",
                )


# ------------------------------------------------------------------------------------------ self-check


_ANSWER_COLON = re.compile(r"answer\s*:", re.IGNORECASE)


class SelfCheck:
    """Grades a rendered prompt as if it were a response (it must yield no letter). grade_text decides; a
    conservative pre-test skips the call when no letter is possible: no output_regex pattern matches the
    prompt, and for a mode that reads the last box (grader/modes.Mode.reads) the last \\boxed{ is empty or
    absent, for one that reads an 'Answer:' line no 'answer:' occurs."""

    def __init__(self, t: Template):
        self.t = t
        pats = [t.output_regex] if isinstance(t.output_regex, str) else list(t.output_regex or [])
        # the patterns run as the grader runs them: on its engine, under the time bound (never plain `re`)
        self.patterns: list[str] | None = pats
        if any(compile_pattern(p)[0] is None for p in pats):
            self.patterns = None
        self.tm = t.template_metadata()  # the pre-test's patterns: a built-in's [A-Z] reads a superset
        self.reads = BY_NAME[t.grading_mode].reads
        t.compile()
        plan = t._plan
        tail = plan[-1] if plan and type(plan[-1]) is str else ""
        i = tail.rfind("\\boxed{")
        # A boxed-mode template without output_regex whose fixed closing text holds an empty \boxed{}: that
        # box is the last one of every prompt it renders, and the boxed modes read only the last box, so no
        # prompt can yield a letter (the built-in `boxed` template)
        self.never = not pats and self.reads == LAST_BOX and i >= 0 and tail.startswith("\\boxed{}", i)

    def possible(self, prompt: str) -> bool:
        if self.patterns is None:
            return True
        for p in self.patterns:
            try:
                if last_match(p, prompt, DEFAULT_REGEX_TIMEOUT) is not None:
                    return True
            except TimeoutError:
                return True  # grade_text decides (regex_timeout: the row is rejected)
        if self.reads == LAST_BOX:
            i = prompt.rfind("\\boxed{")
            return i >= 0 and not prompt.startswith("\\boxed{}", i)
        if self.reads == ANSWER_LINE:
            return _ANSWER_COLON.search(prompt) is not None
        return True

    def check(self, prompt: str, options: list[dict[str, str]], gold: str) -> None:
        """Raise RowReject when the prompt is graded to a letter (call when possible(prompt))."""
        res = grade_text(prompt, options, gold, self.t.grading_mode, self.t.template_metadata(len(options)))
        if res.extracted_answer is not None or res.status == "regex_timeout":
            got = res.extracted_answer or "a timeout"
            raise RowReject(
                "prompt_self_graded",
                f"the prompt itself is graded as {got} under template {self.t.id!r} "
                f"({res.rule or res.mode}): a response that echoes it would score",
            )
