"""Prompt templates: Jinja2 in a sandbox with StrictUndefined, each declaring how its answer is graded.

A template is the prompt text plus the grading it asks for: a row-level `grading_mode`, and optionally a
custom `output_regex` (which NeMo Gym tries first) and an `answer_prefix`. Built-in templates cover the
NeMo Gym modes; a user template is a file whose front matter declares the same fields:

    ---
    id: verdict_v1
    output_regex: Verdict:\\s*\\(?((?-i:[A-Z]))\\)?(?![^\\n]*\\w)
    narrow_letters: true
    grading_mode: strict_single_letter_boxed
    ---
    {{ question }}

    {{ options_block }}

    End with a line "Verdict: <letter>".

The front matter is YAML (PyYAML's safe_load): a plain value is taken as written, backslashes included; a
value holding `: ` or ` #`, or starting with a YAML indicator (`[`, `{`, `*`, ...), is quoted (single quotes
keep backslashes as written); `output_regex` may be a YAML list of patterns; `narrow_letters: true` narrows each
`[A-Z]` of output_regex to the row's option letters (as the built-ins do). Mixing several templates with weights assigns one per row from a hash of the row's uuid,
so a row keeps its template when other rows are added or removed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..errors import UsageError
from ..labels import LETTERS

# Render-time variables, documented in docs/design/convert.md (and listed in the undefined-variable error)
VARIABLES = (
    "question",
    "context",
    "subject",
    "options",
    "options_block",
    "letters",
    "letters_slash",
    "letters_comma",
    "first_letter",
    "last_letter",
    "n_options",
    "row",
)

FRONT_KEYS = ("id", "grading_mode", "output_regex", "answer_prefix", "description", "narrow_letters")


@dataclass
class Template:
    """One prompt template and the grading it declares."""

    id: str
    source: str
    grading_mode: str
    output_regex: str | list[str] | None = None
    answer_prefix: str | None = None
    description: str = ""
    origin: str = "builtin"  # "builtin" or the file path
    weight: float = 1.0
    letter_class: bool = False  # built-ins: each `[A-Z]` of output_regex is narrowed to the row's letters
    _compiled: Any = field(default=None, repr=False)
    _used: frozenset[str] | None = field(default=None, repr=False)
    _plan: list[Any] | None = field(default=None, repr=False)
    _fast: Any = field(default=None, repr=False)
    _fast_row: Any = field(default=None, repr=False)
    _sandbox: Any = field(default=None, repr=False)

    def template_metadata(self, n: int | None = None) -> dict[str, Any]:
        """What a row with `n` options carries: the template id, its output_regex (for a built-in, with the
        letter class narrowed to those n letters: a letter outside the options is never read) and prefix."""
        tm: dict[str, Any] = {"template_id": self.id}
        if self.output_regex is not None:
            tm["output_regex"] = self.regex_for(n)
        if self.answer_prefix is not None:
            tm["answer_prefix"] = self.answer_prefix
        return tm

    def regex_for(self, n: int | None) -> str | list[str] | None:
        if not self.letter_class or n is None or self.output_regex is None:
            return self.output_regex
        cls = f"[A-{_letters(n)[0][-1]}]" if n > 1 else "[A]"
        if isinstance(self.output_regex, str):
            return self.output_regex.replace("[A-Z]", cls)
        return [p.replace("[A-Z]", cls) for p in self.output_regex]

    def uses_row(self) -> bool:
        """Whether the template reads `row` (then every source column is read, not only the mapped ones)."""
        return "row" in self.variables_used()

    def compile(self) -> None:
        """Parse the template; a template that only prints and tests variables is compiled here (to a plain
        function), any other is compiled and rendered by a bounded sandbox process (sandbox.py): compiling
        Jinja evaluates constant expressions ("x" * 10**10), so a user's template is never compiled here."""
        if self._compiled is not None:
            return
        self._plan = _make_plan(_parse(self.source, self.id).body)
        if self._plan is not None:
            self._compiled = _compile(
                self.source, self.id
            )  # names, texts, tests: nothing runs at compile time
            self._fast = _plan_function(self._plan)
            self._fast_row = _plan_row_function(self._plan)
            return
        from .sandbox import SandboxRenderer

        self._sandbox = SandboxRenderer(self.source, self.id, self.origin, ENV_SETTINGS, VARIABLES)
        self._sandbox.start()  # its compile errors now, before any row
        self._compiled = self._sandbox

    def render(self, variables: dict[str, Any]) -> str:
        """The prompt for one row; UsageError naming the template and the undefined variable."""
        if self._compiled is None:
            self.compile()
        fast = self._fast
        if fast is not None:
            return fast(variables)
        return self._sandbox.render(variables)

    def row_renderer(self):
        """f(question, texts, context, subject, row) -> prompt: the compiled plan when there is one, else
        render(render_variables(...)). Same text either way (tests compare)."""
        self.compile()
        if self._fast_row is not None:
            return self._fast_row
        used = self.variables_used()
        render = self.render

        def slow(q: str, texts: list[str], ctx: Any, subj: Any, row: Any) -> str:
            return render(render_variables(q, texts, ctx, subj, row, used))

        return slow

    def variables_used(self) -> frozenset[str]:
        """Names the template reads (render_variables builds only those): every name loaded anywhere in it,
        read from the parse tree (jinja2.meta would run the code generator, which evaluates constant
        expressions, over a user's template)."""
        if self._used is None:
            from jinja2 import nodes

            tree = _parse(self.source, self.id)
            self._used = frozenset(n.name for n in tree.find_all(nodes.Name) if n.ctx == "load")
        return self._used

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "origin": self.origin, "weight": self.weight}
        d["grading_mode"] = self.grading_mode
        if self.output_regex is not None:
            d["output_regex"] = self.output_regex
        if self.answer_prefix is not None:
            d["answer_prefix"] = self.answer_prefix
        if self.letter_class:
            d["letter_class"] = "each [A-Z] of output_regex is narrowed to the row's option letters"
        return d


_ENV: Any = None
# the Jinja environment's settings, here and in the rendering sandbox (sandbox.py)
ENV_SETTINGS: dict[str, Any] = {
    # no constant folding: Jinja's optimiser evaluates constant expressions while compiling ("x" * 10**10,
    # 10**10**10, a filter on literals), which would run a user's template here, unbounded; unfolded, they
    # run when rendered, in the bounded sandbox. The output is the same.
    "optimized": False,
    "autoescape": False,
    "keep_trailing_newline": False,
    "trim_blocks": True,
    "lstrip_blocks": True,
}


def _env():
    global _ENV
    if _ENV is None:
        import jinja2
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        # sandboxed: a template file is data from the user, it must not reach Python internals;
        # StrictUndefined: a misspelt variable is an error naming it, never an empty string in a prompt
        _ENV = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, **ENV_SETTINGS)
    return _ENV


def _compile(source: str, tid: str):
    import jinja2

    try:
        return _env().from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise UsageError(f"template {tid!r}: syntax error at line {exc.lineno}: {exc.message}") from None


def _parse(source: str, tid: str):
    import jinja2

    try:
        return _env().parse(source)
    except jinja2.TemplateSyntaxError as exc:
        raise UsageError(f"template {tid!r}: syntax error at line {exc.lineno}: {exc.message}") from None


# --------------------------------------------------------------------------------------------- fast path
#
# Most templates only print variables and test them with {% if name %}. For those, rendering is a walk over a
# small plan of text pieces, variable names and branches, with Jinja's own semantics for exactly these
# constructs (a printed value is str(value); a test is the value's truth), compiled to one Python function
# (a single join), a fraction of Jinja's per-call cost. Any other construct (filters, loops, attributes, expressions) leaves the plan None and Jinja renders.
# Tests render every built-in both ways and compare.


class _Var(str):
    """A variable name in a plan (a str subclass, so a plan is a flat list of str and tuples)."""


def _make_plan(body: list[Any]) -> list[Any] | None:
    from jinja2 import nodes

    plan: list[Any] = []
    for node in body:
        if isinstance(node, nodes.Output):
            for x in node.nodes:
                if isinstance(x, nodes.TemplateData):
                    plan.append(x.data)
                elif isinstance(x, nodes.Name) and x.ctx == "load" and x.name in VARIABLES:
                    plan.append(_Var(x.name))
                elif (step := _literal_replace(x)) is not None:  # {{ subject | replace('_', ' ') }}
                    plan.append(step)
                else:
                    return None
        elif isinstance(node, nodes.If):
            if node.elif_ or not (isinstance(node.test, nodes.Name) and node.test.name in VARIABLES):
                return None
            yes = _make_plan(node.body)
            no = _make_plan(node.else_) if node.else_ else []
            if yes is None or no is None:
                return None
            plan.append((node.test.name, yes, no))
        else:
            return None
    return plan


class _Replace(NamedTuple):
    """`{{ name | replace('old', 'new') }}` with literal strings in a plan."""

    name: str
    old: str
    new: str


def _literal_replace(x: Any) -> _Replace | None:
    """The plan step of `{{ v | replace('a', 'b') }}` (Jinja's str(v).replace(a, b)) on a known variable with
    two literal strings; None for any other expression."""
    from jinja2 import nodes

    if not (
        isinstance(x, nodes.Filter)
        and x.name == "replace"
        and not x.kwargs
        and x.dyn_args is None
        and x.dyn_kwargs is None
    ):
        return None
    var, args = x.node, x.args
    if not (isinstance(var, nodes.Name) and var.ctx == "load" and var.name in VARIABLES and len(args) == 2):
        return None
    old, new = args
    if not (
        isinstance(old, nodes.Const)
        and isinstance(old.value, str)
        and isinstance(new, nodes.Const)
        and isinstance(new.value, str)
    ):
        return None
    return _Replace(var.name, old.value, new.value)


def _str(x: Any) -> str:
    return x if type(x) is str else str(x)


def _plan_expr(plan: list[Any], var) -> str:
    parts = []
    for op in plan:
        if type(op) is str:
            parts.append(repr(op))
        elif type(op) is _Var:
            # these are always str (the question is decoded to str): no conversion call
            parts.append(var(str(op)) if str(op) in _ALWAYS_STR else f"_str({var(str(op))})")
        elif type(op) is _Replace:
            parts.append(f"_str({var(op.name)}).replace({op.old!r}, {op.new!r})")
        else:
            name, yes, no = op
            parts.append(f"({_plan_expr(yes, var)} if {var(name)} else {_plan_expr(no, var)})")
    return '"".join((' + ", ".join(parts) + ",))" if parts else '""'


_ALWAYS_STR = frozenset(
    {"question", "options_block", "letters_slash", "letters_comma", "first_letter", "last_letter"}
)

# How the row-level renderer computes each variable from (q, texts, ctx, subj, row) and L = _letters(n)
_DIRECT = {
    "question": "q",
    "context": "ctx",
    "subject": "subj",
    "options_block": '"\\n".join(map(_add, L[1], texts))',
    "letters_slash": "L[2]",
    "letters_comma": "L[3]",
    "first_letter": "L[0][0]",
    "last_letter": "L[0][-1]",
    "n_options": "len(texts)",
    "letters": "list(L[0])",
    "options": '[{"letter": a, "text": b} for a, b in zip(L[0], texts)]',
    "row": "(row if row is not None else {})",
}
_PLAN_GLOBALS: dict[str, Any] = {
    "_str": None,  # set below
    "_add": str.__add__,
    "map": map,
    "zip": zip,
    "len": len,
    "list": list,
    "__builtins__": {},
}


def _plan_function(plan: list[Any]):
    """The plan as one Python function of the variables dict: a single join, no per-piece dispatch. Built
    from string literals (repr) and variable names checked against VARIABLES, nothing else."""
    return eval(f"lambda v: {_plan_expr(plan, lambda n: f'v[{n!r}]')}", dict(_PLAN_GLOBALS))  # noqa: S307


def _plan_row_function(plan: list[Any]):
    """The plan as one function of (question, texts, context, subject, row): the variables it reads are
    computed inline, no variables dict is built (the per-row path of convert)."""
    body = _plan_expr(plan, _DIRECT.__getitem__)
    return eval(f"lambda q, texts, ctx, subj, row: (lambda L: {body})(_LET(len(texts)))", dict(_PLAN_GLOBALS))  # noqa: S307


# --------------------------------------------------------------------------------------------- built-ins

_HEAD = "{% if context %}{{ context }}\n\n{% endif %}{{ question }}\n\n{{ options_block }}\n\n"

BUILTIN: dict[str, Template] = {
    t.id: t
    for t in (
        Template(
            id="boxed",
            description="step by step, letter in \\boxed{} (NeMo Gym's default strict_single_letter_boxed)",
            grading_mode="strict_single_letter_boxed",
            source=_HEAD + "Think step by step, then write the letter of the correct option "
            "({{ letters_slash }}) inside \\boxed{} as the last line of your response.",
        ),
        Template(
            id="answer_colon",
            description="'Answer: LETTER' as the last line (lenient_answer_colon)",
            grading_mode="lenient_answer_colon",
            source=_HEAD + "Think step by step. The last line of your response must be of the form "
            "'Answer: LETTER', where LETTER is one of {{ letters_comma }}.",
        ),
        Template(
            id="final_choice",
            description="'Final choice: LETTER' read by a custom output_regex (a case-sensitive option letter ending its line)",
            grading_mode="strict_single_letter_boxed",
            # a case-sensitive letter of the options (each [A-Z] narrowed per row) with nothing but punctuation
            # after it on its line: prose that says "the final choice: a careful reader..." reads no letter
            output_regex=r"Final choice:\s*\**\s*\(?((?-i:[A-Z]))\)?(?![^\n]*\w)",
            letter_class=True,
            source=_HEAD + "Reason about each option, then finish your response with a line "
            "'Final choice: <letter>' naming one of {{ letters_comma }}.",
        ),
        Template(
            id="answer_is",
            description="'The answer is (LETTER)' (MMLU-Pro's chain-of-thought format) read by a custom output_regex (likewise)",
            grading_mode="strict_single_letter_boxed",
            output_regex=r"answer is\s*\**\s*\(?((?-i:[A-Z]))\)?(?![^\n]*\w)",
            letter_class=True,
            source="The following is a multiple choice question{% if subject %} about {{ subject | replace('_', ' ') }}{% endif %}. "
            'Think step by step and then finish your answer with "the answer is (<letter>)", where <letter> is '
            "the correct option.\n\n" + _HEAD.rstrip("\n"),
        ),
    )
}
DEFAULT_TEMPLATE = "boxed"


class TemplateMix:
    """Weighted, deterministic choice of a template per row from 64 bits of the row's hash."""

    def __init__(self, templates: Sequence[Template]):
        self.templates = list(templates)
        total = sum(t.weight for t in self.templates)
        acc = 0.0
        self._bounds: list[int] = []
        for t in self.templates:
            acc += t.weight / total
            self._bounds.append(min(int(acc * 2**64), 2**64))
        self._bounds[-1] = 2**64

    def pick(self, h64: int) -> Template:
        return self.templates[self.pick_index(h64)]

    def pick_index(self, h64: int) -> int:
        """The index of the template for a row whose hash gives `h64` (uniform in [0, 2**64))."""
        for k, b in enumerate(self._bounds):
            if h64 < b:
                return k
        return len(self._bounds) - 1  # pragma: no cover - the last bound is 2**64


_LETTER_CACHE: dict[int, tuple[list[str], list[str], str, str]] = {}


def _letters(n: int) -> tuple[list[str], list[str], str, str]:
    """(letters, "L: " prefixes, letters_slash, letters_comma) for n options, computed once per n."""
    c = _LETTER_CACHE.get(n)
    if c is None:
        letters = list(LETTERS[:n])
        comma = ", ".join(letters[:-1]) + " or " + letters[-1] if n > 1 else letters[0]
        c = _LETTER_CACHE[n] = (letters, [f"{L}: " for L in letters], "/".join(letters), comma)
    return c


def render_variables(
    question: str,
    texts: list[str],
    context: str | None = None,
    subject: str | None = None,
    row: dict[str, Any] | None = None,
    used: frozenset[str] | None = None,
) -> dict[str, Any]:
    """The variables a template sees for one row, given the option texts in letter order (docs/design/convert.md
    lists them); with `used`, only those the template reads."""
    v: dict[str, Any] = {"question": question, "context": context, "subject": subject}
    want = VARIABLES if used is None else used
    letters, prefixes, slash, comma = _letters(len(texts))
    if "options_block" in want:
        v["options_block"] = "\n".join(map(str.__add__, prefixes, texts))
    if "letters_slash" in want:
        v["letters_slash"] = slash
    if "letters_comma" in want:
        v["letters_comma"] = comma
    if "options" in want:
        v["options"] = [{"letter": L, "text": t} for L, t in zip(letters, texts, strict=True)]
    if "letters" in want:
        v["letters"] = list(letters)
    if "first_letter" in want:
        v["first_letter"] = letters[0]
    if "last_letter" in want:
        v["last_letter"] = letters[-1]
    if "n_options" in want:
        v["n_options"] = len(letters)
    if "row" in want:
        v["row"] = row if row is not None else {}
    return v


_PLAN_GLOBALS["_str"] = _str
_PLAN_GLOBALS["_LET"] = _letters
