"""`mcqa-prep grade`: grade one response, optionally explaining the decision."""

from __future__ import annotations

import sys

import click

from ..errors import InputError
from ..grader import DEFAULT_MODE, OVERRIDE_MODES, grade_text
from ..grader.letters import normalize_gold
from ..records import STATUS_INVALID_REGEX
from .common import FORMAT_OPTION, QUIET_OPTION, emit_json, report_error
from .errors import OneLineUsage


def _parse_option(ctx, param, values):
    options = []
    seen = set()
    for v in values:
        letter, sep, text = v.partition("=")
        if not sep or not letter.strip():
            raise click.BadParameter(
                f"{v!r}: expected LETTER=TEXT, e.g. --option 'B=Polymerase chain reaction'"
            )
        letter = letter.strip()
        if letter in seen:
            raise click.BadParameter(f"option {letter!r} given twice")
        seen.add(letter)
        options.append({letter: text})
    return options


def _read_stdin() -> str:
    """The response piped on stdin, as UTF-8 text: a model's response is text, so bytes that are not UTF-8
    are refused with their offset instead of being guessed at."""
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"stdin: not valid UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start}",
            reason="input_not_utf8",
        ) from None


def _check_text(what: str, value: str) -> None:
    """An argument that is not UTF-8 arrives with surrogate escapes: refuse it as a bad value."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise click.BadParameter(
            f"not valid UTF-8 text (byte 0x{ord(value[exc.start]) & 0xFF:02x} at character {exc.start})",
            param_hint=what,
        ) from None


@click.command("grade")
@click.argument("response", required=False)
@click.option(
    "--option",
    "options",
    multiple=True,
    callback=_parse_option,
    metavar="LETTER=TEXT",
    help="An answer option; repeat for each (order matters for text matching).",
)
@click.option("--expected", "-e", default="", help="The gold letter (reward is 1 when it is extracted).")
@click.option(
    "--mode",
    "-m",
    type=click.Choice(OVERRIDE_MODES),
    default=DEFAULT_MODE,
    show_default=True,
    help="Grading mode (as a policy override, so lenient_answer_colon_md is allowed).",
)
@click.option(
    "--regex",
    "regexes",
    multiple=True,
    metavar="PATTERN",
    help="A template output_regex; repeat to give a list (tried in order, before the mode).",
)
@click.option(
    "--answer-prefix", default=None, help="template_metadata.answer_prefix (lenient_answer_colon_md)."
)
@click.option(
    "--option-labels",
    default=None,
    metavar="LABELS",
    help="template_metadata.option_labels (robust): how the question labels its options — 'numbers', "
    "'lower', or the labels in order, e.g. 'АБВГ'.",
)
@click.option(
    "--prompt",
    default=None,
    metavar="TEXT",
    help="The rendered prompt the response answers (robust: what repeats it is not the model's answer).",
)
@click.option(
    "--incomplete",
    default=None,
    metavar="REASON",
    help="The response was cut off, e.g. 'max_output_tokens' (robust: only an anchored answer counts).",
)
@click.option(
    "--explain", is_flag=True, help="Show the rule, the character span that decided and rejected candidates."
)
@FORMAT_OPTION
@QUIET_OPTION
def grade_command(
    response,
    options,
    expected,
    mode,
    regexes,
    answer_prefix,
    option_labels,
    prompt,
    incomplete,
    explain,
    fmt,
    quiet,
):
    """Grade one RESPONSE text (or stdin when omitted or '-') against the given options.

    \b
    Examples:
      mcqa-prep grade 'The answer is \\boxed{B}' --option A=DNA --option B=RNA --expected B
      echo 'Answer: B' | mcqa-prep grade --option A=DNA --option B=RNA -m lenient_answer_colon --explain
      mcqa-prep grade 'Final: b' --option A=x --option B=y --regex 'final:\\s*([a-d])' --format json
      mcqa-prep grade '<think>C?</think> 정답: 2번' -m robust --option A=x --option B=y --option C=z \\
        --option-labels numbers
      mcqa-prep grade 'So it is B. But wait' -m robust --option A=x --option B=y --incomplete length --explain
    """
    if response is None or response == "-":
        if sys.stdin.isatty():
            raise click.UsageError("give the response as an argument, or pipe it on stdin")
        response = _read_stdin()
    tm = _checked_inputs(
        response, options, expected, regexes, answer_prefix, option_labels, prompt, incomplete
    )
    text = response.strip()
    result = grade_text(
        text, options, expected, None, tm or None, override=mode, prompt=prompt, incomplete=incomplete
    )
    # A pattern given here that cannot be used is a bad option value: a usage error (exit 2), with the grade
    # (status invalid_regex) still printed.
    unusable = result.status == STATUS_INVALID_REGEX
    problem = f"--regex: {result.message}; fix the pattern (Python re syntax, at most one capture group)"
    if fmt == "json":
        doc = result.to_dict(explain=explain)
        if not expected:
            doc["reward"] = None  # nothing to compare with: no reward, rather than a 0 that means "wrong"
        if explain and result.span:
            doc["span_text"] = text[result.span[0] : result.span[1]]
        error = (
            {**report_error("invalid_regex", problem), "type": "UsageError", "exit_code": 2}
            if unusable
            else None
        )
        emit_json(doc, error=error)
        if unusable:
            raise OneLineUsage(problem)
        return
    click.echo(f"letter: {result.extracted_answer or '-'}")
    click.echo(
        f"reward: {result.reward:g}" if expected else "reward: - (no --expected: nothing to compare with)"
    )
    click.echo(f"status: {result.status}")
    if result.message:
        click.echo(f"message: {result.message}")
    if explain:
        click.echo(f"mode: {result.mode}")
        click.echo(f"rule: {result.rule or '-'}")
        if result.span:
            a, b = result.span
            click.echo(f"span: {a}-{b} {text[a:b]!r}")
        for c in result.candidates:
            snippet = text[c.span[0] : c.span[1]]
            click.echo(
                f"  candidate {c.rule} {c.span[0]}-{c.span[1]} {snippet!r} -> {c.letter or '-'}: {c.verdict}"
            )
    if unusable:
        raise OneLineUsage(problem)


def _checked_inputs(response, options, expected, regexes, answer_prefix, option_labels, prompt, incomplete):
    """The arguments checked (text only, options given, the gold among them: usage errors otherwise), and the
    template_metadata they make."""
    for what, value in [
        ("RESPONSE", response),
        ("--expected", expected),
        ("--answer-prefix", answer_prefix or ""),
        ("--option-labels", option_labels or ""),
        ("--prompt", prompt or ""),
        ("--incomplete", incomplete or ""),
        *(("--regex", r) for r in regexes),
        *(("--option", t) for o in options for t in (*o, *o.values())),
    ]:
        _check_text(what, value)
    if not options:
        raise click.UsageError("give the answer options: --option A=TEXT --option B=TEXT ...")
    letters = [letter for o in options for letter in o]
    gold = normalize_gold(expected)
    if expected and gold not in letters:
        raise click.BadParameter(
            f"{expected!r} is not one of the options' letters ({', '.join(letters)})", param_hint="--expected"
        )
    tm = {}
    if regexes:
        tm["output_regex"] = regexes[0] if len(regexes) == 1 else list(regexes)
    if answer_prefix is not None:
        tm["answer_prefix"] = answer_prefix
    if option_labels:
        tm["option_labels"] = option_labels
    return tm
