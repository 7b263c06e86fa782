"""Rules on one row's prompt, options, gold and grading mode. Each reads the row's facts (facts.RowFacts);
the row checker calls it only when its guard bits are set for the row."""

from __future__ import annotations

import functools
from collections.abc import Iterator

from ..grader import grade_text
from ..grader.modes import (
    BY_NAME,
    DEFAULT_MODE,
    MODES,
    NOT_NEMO_GYM_MODES,
    OPTION_TEXT_MODES,
    OVERRIDE_ONLY_MODES,
    ROW_MODES,
)
from ..prompt import content_text
from .answer_format import unrendered
from .facts import (
    G_CONTROL,
    G_GOLD,
    G_IN_PROMPT,
    G_MARKERS,
    G_MODE,
    G_OPTIONS,
    G_PROMPT,
    G_TEXTS,
    TEXT_CONTROL,
    RowFacts,
    normalize_texts,
)
from .registry import ERROR, WARNING, Hit, quote, rule
from .synth import describe_char, lost_hint

INPUT = ("responses_create_params", "input")
PROMPT_PATH = (*INPUT, 0, "content")

# -- prompt ---------------------------------------------------------------------------------------------


@rule(
    "prompt_messages",
    ERROR,
    "`responses_create_params.input` is not exactly one message with role `user` and non-empty content",
    "put the whole prompt in one user message",
    guard=G_PROMPT,
)
def prompt_messages(f: RowFacts) -> Iterator[Hit]:
    rcp = f.d.get("responses_create_params")
    inp = rcp.get("input") if isinstance(rcp, dict) else None
    if not isinstance(inp, list):
        return  # the schema finding says it
    if len(inp) != 1:
        roles = ", ".join(str(m.get("role")) for m in inp if isinstance(m, dict)) or "none"
        yield (
            INPUT,
            (
                f"expected exactly one user message, got {len(inp)} (roles: {roles}); put the whole prompt in one "
                "user message (NeMo Gym's mcqa rows carry no system message)"
            ),
        )
        return
    m = inp[0]
    if not isinstance(m, dict):
        return
    role = m.get("role")
    if role != "user":
        yield (*INPUT, 0, "role"), f"the message role is {role!r}, expected 'user'"
    text = content_text(m.get("content"))
    if text is None:
        if "content" not in m:
            yield (*INPUT, 0, "content"), "the message has no content; give the prompt text"
    elif not text.strip():
        yield (*INPUT, 0, "content"), "the prompt is empty; give the question and its options"


@rule(
    "template_unrendered",
    ERROR,
    "the prompt holds a template marker that was never rendered: `{{ }}` around a letter, a list of letters, a "
    "placeholder or a variable name (`\\boxed{{D}}`, `{{Question}}`), a Jinja `{% %}` statement or `{# #}` "
    "comment, or a `str.format` field of a template variable (`{problem}`, `{question}`, `{letter}`, ...); "
    "doubled braces of LaTeX (`x^{{2}}`) are not markers",
    "render the template (str.format turns `{{` into `{` and fills `{problem}`)",
    guard=G_MARKERS,
)
def template_unrendered(f: RowFacts) -> Iterator[Hit]:
    text = f.prompt or ""
    found = unrendered(text)
    if found:
        m = found[0]
        more = f" and {len(found) - 1} more" if len(found) > 1 else ""
        yield (
            PROMPT_PATH,
            (
                f"the prompt holds the unrendered template marker {m.text!r} at character {m.at}{more} "
                f"({quote(text[max(0, m.at - 25) : m.at + len(m.text) + 25], 90)}): the model sees the template's "
                "syntax instead of what it stood for (and copies it: an answer written '\\boxed{{D}}' is not the "
                "format the grader reads); render the template again"
            ),
        )


@rule(
    "text_control_character",
    WARNING,
    "a control or invisible character in the prompt or an option text (C0/C1 controls but tab, newline and "
    "carriage return; DEL; zero-width space, word joiner, BOM, bidi overrides): often a lost backslash "
    "(`\\f` of `\\frac` in a non-raw string is a form feed); the model sees garbage and text matching misses",
    "restore the backslash (a raw string in Python, `\\\\` in JSON) or remove the character",
    guard=G_CONTROL,
)
def text_control_character(f: RowFacts) -> Iterator[Hit]:
    texts: list[tuple[tuple[str | int, ...], str, str]] = [(PROMPT_PATH, "the prompt", f.prompt or "")]
    texts += [(("options", i, k), f"the text of option {L}", t) for L, (i, k, t) in f.walk().letters.items()]
    for path, what, text in texts:
        found = [m.start() for m in TEXT_CONTROL.finditer(text)]
        if found:
            at = found[0]
            more = f" and {len(found) - 1} more" if len(found) > 1 else ""
            yield (
                path,
                (
                    f"{what} holds {describe_char(text[at])} at character {at}{more} "
                    f"({quote(text[max(0, at - 20) : at + 20], 50)}){lost_hint(text, at)}: the model sees a control "
                    "character and text matching misses it; restore the escape or remove the character"
                ),
            )


# -- options --------------------------------------------------------------------------------------------


@rule(
    "option_shape",
    ERROR,
    "an option element with no non-null letter (all-null Parquet element) or with several non-null letters",
    "one letter with its text per element",
    guard=G_OPTIONS,
)
def option_shape(f: RowFacts) -> Iterator[Hit]:
    for i, present in f.walk().shapes:
        if not present:
            yield (
                ("options", i),
                "no letter with a text (every key is null); drop the element or give its text",
            )
        else:
            keys = ", ".join(repr(k) for k, _ in present)
            yield (
                ("options", i),
                (
                    f"{len(present)} letters with a text ({keys}); each element holds exactly one letter, "
                    'e.g. [{"A": "..."}, {"B": "..."}]'
                ),
            )


@rule(
    "option_letter",
    ERROR,
    "an option key that is not a single alphabetic character (`AA`, `1`)",
    "use A, B, C, ...",
    guard=G_OPTIONS,
)
def option_letter(f: RowFacts) -> Iterator[Hit]:
    for i, k in f.walk().bad_keys:
        yield (
            ("options", i),
            (f"option key {k!r} is not a single letter; use A, B, C, ... (a one-character alphabetic key)"),
        )


TYPICAL_REGEX = "Answer:\\s*([A-Z])"


@functools.lru_cache(maxsize=256)
def never_extracted(key: str) -> tuple[str, ...]:
    """The graders that give no reward to a compliant answer naming option `key` when it is the gold: each
    mode (docs/design/grading.md) and a typical output_regex with an [A-Z] class, asked through grade_text."""
    other = "Q" if key.upper() != "Q" else "R"
    options = [{key: "first option"}, {other: "second option"}]
    out = []
    for mode in MODES:  # a compliant answer per mode (grader/modes.Mode.answer)
        res = grade_text(mode.answer % key, options, key, override=mode.name)
        if res.reward != 1.0:
            out.append(mode.name)
    res = grade_text(f"Answer: {key}", options, key, None, {"output_regex": TYPICAL_REGEX})
    if res.reward != 1.0 or res.mode != "output_regex":
        out.append(f"output_regex {TYPICAL_REGEX!r}")
    return tuple(out)


@rule(
    "option_letter_unrewardable",
    ERROR,
    "an option letter that is not an ASCII letter once upper-cased (`Ä`, `ß` -> `SS`, full-width `Ａ`, the "
    "Kelvin sign): the graders that read letters never extract it, so a row whose gold it is is never "
    "rewarded; the message names them",
    "use the ASCII letters A-Z",
    guard=G_OPTIONS,
)
def option_letter_unrewardable(f: RowFacts) -> Iterator[Hit]:
    for L, (i, k, _) in f.walk().letters.items():
        if k.isascii() or not (modes := [m for m in never_extracted(k) if m not in OVERRIDE_ONLY_MODES]):
            continue
        what = f"upper-cases to {L!r}" if len(L) != 1 else "is not an ASCII letter"
        graders = ", ".join(modes)
        yield (
            ("options", i),
            (
                f"option letter {k!r} {what}: {graders} never extract it from a compliant answer (e.g. "
                f"{(BY_NAME[DEFAULT_MODE].answer % k)!r}), so a row whose gold is {k!r} is never "
                "rewarded there; use the ASCII letters A-Z"
            ),
        )


@rule(
    "option_letter_duplicate",
    ERROR,
    "the same letter twice (case-insensitive: `b` and `B`)",
    "give every option its own letter",
    guard=G_OPTIONS,
)
def option_letter_duplicate(f: RowFacts) -> Iterator[Hit]:
    for i, L, j in f.walk().duplicates:
        yield (
            ("options", i),
            f"letter {L} is already used by $.options[{j}]; give every option its own letter",
        )


@rule(
    "option_text_empty",
    ERROR,
    "an empty or whitespace-only option text",
    "give the text or drop the option",
    guard=G_TEXTS,
)
def option_text_empty(f: RowFacts) -> Iterator[Hit]:
    for L, (i, k, t) in f.walk().letters.items():
        if not t.strip():
            yield ("options", i, k), f"option {L} has an empty text; give its text or remove the option"


@rule(
    "option_text_duplicate",
    WARNING,
    "two option texts equal after lower-casing and collapsing whitespace: modes that match option text ("
    + ", ".join(f"`{m}`" for m in OPTION_TEXT_MODES)
    + ") become ambiguous",
    "make the texts distinct",
    guard=G_TEXTS,
)
def option_text_duplicate(f: RowFacts) -> Iterator[Hit]:
    seen: dict[str, str] = {}
    for L, (i, k, t) in f.walk().letters.items():
        if not t.strip():
            continue
        norm = normalize_texts([t])[0]
        first = seen.setdefault(norm, L)
        if first != L:
            yield (
                ("options", i, k),
                (
                    f"option {L} has the same text as option {first} ({quote(t)}): modes that match option "
                    f"text ({', '.join(OPTION_TEXT_MODES)}) cannot tell them apart; make the texts distinct"
                ),
            )


@rule(
    "options_count",
    ERROR,
    "fewer than two options with a letter and a non-empty text",
    "give at least two options",
    guard=G_OPTIONS | G_TEXTS,
)
def options_count(f: RowFacts) -> Iterator[Hit]:
    if not isinstance(f.d.get("options"), list):
        return  # the schema finding says it
    n = sum(1 for _, _, t in f.walk().letters.values() if t.strip())
    if n < 2:
        yield (
            ("options",),
            (f"{n} option(s) with a letter and a text; a multiple-choice row needs at least two"),
        )


@rule(
    "option_not_in_prompt",
    WARNING,
    "an option text that does not occur in the prompt (also after collapsing whitespace): the model never "
    "sees it",
    "render the option lines into the prompt",
    guard=G_IN_PROMPT,
)
def option_not_in_prompt(f: RowFacts) -> Iterator[Hit]:
    prompt = f.prompt
    if prompt is None:
        return
    flat = " ".join(prompt.split())
    for L, (i, k, t) in f.walk().letters.items():
        if t.strip() and t not in prompt and " ".join(t.split()) not in flat:
            yield (
                ("options", i, k),
                (
                    f"the text of option {L} ({quote(t)}) does not appear in the prompt: the model never sees it; "
                    "render the option lines into the prompt or fix the option text"
                ),
            )


# -- gold -----------------------------------------------------------------------------------------------


@rule(
    "expected_answer_not_option",
    ERROR,
    "`expected_answer` (stripped, upper-cased, as NeMo Gym reads it) is empty or not a letter with a "
    "non-null text",
    "set it to the correct option's letter",
    guard=G_GOLD,
)
def expected_answer_not_option(f: RowFacts) -> Iterator[Hit]:
    gold = f.d.get("expected_answer")
    opts = f.d.get("options")
    if not isinstance(gold, str) or not isinstance(opts, list):
        return  # the schema finding says it
    g = gold.strip().upper()
    letters = f.walk().letters
    if g in letters and letters[g][2].strip():
        return
    offered = ", ".join(letters) or "none"
    if not g:
        msg = f"expected_answer is empty; set it to the gold letter (one of {offered})"
    elif g in letters:
        msg = f"expected_answer {g} names an option with an empty text; fix the option or the gold"
    else:
        msg = (
            f"expected_answer {gold!r} is not one of the option letters ({offered}); set it to the letter of "
            "the correct option"
        )
        if any(isinstance(o, dict) and o.get(g, 0) is None for o in opts):
            msg += f" (option {g} is null here: the Parquet shape's absent letter)"
        odd = [c for c in g if not c.isprintable()]
        if odd:  # strip() keeps zero-width and other format characters
            msg += f" (it holds {describe_char(odd[0])}, an invisible character)"
    yield ("expected_answer",), msg


# -- grading mode ---------------------------------------------------------------------------------------


@rule(
    "grading_mode_unknown",
    ERROR,
    "`grading_mode` is not a row-level mode (" + ", ".join(f"`{m}`" for m in ROW_MODES) + ")",
    "use a row mode or leave it out (null = default)",
    guard=G_MODE,
)
def grading_mode_unknown(f: RowFacts) -> Iterator[Hit]:
    gm = f.d.get("grading_mode")
    if isinstance(gm, str) and gm not in ROW_MODES and gm not in OVERRIDE_ONLY_MODES:
        yield (
            ("grading_mode",),
            (
                f"unknown grading_mode {gm!r}; use one of {', '.join(ROW_MODES)}, or leave it out for the default"
            ),
        )


@rule(
    "grading_mode_override_only",
    ERROR,
    "a server-level override mode (" + ", ".join(f"`{m}`" for m in OVERRIDE_ONLY_MODES) + ") on a row: "
    "NeMo Gym rejects the row",
    "use a row mode ("
    + ", ".join(f"`{BY_NAME[m].row_alternative}` for `{m}`" for m in OVERRIDE_ONLY_MODES)
    + "), or the policy override",
    guard=G_MODE,
)
def grading_mode_override_only(f: RowFacts) -> Iterator[Hit]:
    gm = f.d.get("grading_mode")
    if gm in OVERRIDE_ONLY_MODES:
        yield (
            ("grading_mode",),
            (
                f"{gm} is a server-level override, not a row mode: NeMo Gym rejects the row; use "
                f"{BY_NAME[gm].row_alternative} on the row, or set the mode in the grading policy override"
            ),
        )


@rule(
    "grading_mode_not_nemo_gym",
    WARNING,
    "a row mode that is mcqa-prep's own ("
    + ", ".join(f"`{m}`" for m in NOT_NEMO_GYM_MODES if m in ROW_MODES)
    + "): NeMo Gym 0.7.0 does not know it",
    "use a NeMo Gym mode for data trained there",
    guard=G_MODE,
)
def grading_mode_not_nemo_gym(f: RowFacts) -> Iterator[Hit]:
    gm = f.d.get("grading_mode")
    if gm in NOT_NEMO_GYM_MODES and gm in ROW_MODES:
        yield (
            ("grading_mode",),
            (
                f"grading_mode {gm!r} is mcqa-prep's own mode: NeMo Gym 0.7.0 rejects this row; use a NeMo Gym "
                "mode if the data is trained there"
            ),
        )
