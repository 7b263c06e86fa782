"""Prompt templates: Jinja2 in a sandbox with StrictUndefined, each declaring how its answer is graded.

A template is the prompt text plus the grading it asks for: a row-level `grading_mode`, and optionally a
custom `output_regex` (which NeMo Gym tries first) and an `answer_prefix`. Built-in templates cover the
NeMo Gym modes; a user template is a file whose front matter declares the same fields:

    ---
    id: verdict_v1
    output_regex: Verdict:\\s*\\(?([A-Z])\\)?(?![A-Za-z0-9])
    grading_mode: strict_single_letter_boxed
    ---
    {{ question }}

    {{ options_block }}

    End with a line "Verdict: <letter>".

Front-matter values are taken literally (no quoting or escaping); `output_regex` may be repeated to give a
list of patterns. Mixing several templates with weights assigns one per row from a hash of the row's uuid,
so a row keeps its template when other rows are added or removed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..grader import ROW_MODES

# Render-time variables, documented in docs/convert.md (and listed in the undefined-variable error)
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

FRONT_KEYS = ("id", "grading_mode", "output_regex", "answer_prefix", "description")


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
    _compiled: Any = field(default=None, repr=False)
    _globals: dict[str, Any] = field(default_factory=dict, repr=False)
    _used: frozenset[str] | None = field(default=None, repr=False)
    _plan: list[Any] | None = field(default=None, repr=False)
    _fast: Any = field(default=None, repr=False)
    _fast_row: Any = field(default=None, repr=False)

    def template_metadata(self) -> dict[str, Any]:
        tm: dict[str, Any] = {"template_id": self.id}
        if self.output_regex is not None:
            tm["output_regex"] = self.output_regex
        if self.answer_prefix is not None:
            tm["answer_prefix"] = self.answer_prefix
        return tm

    def uses_row(self) -> bool:
        """Whether the template reads `row` (then every source column is read, not only the mapped ones)."""
        return "row" in self.variables_used()

    def compile(self) -> None:
        if self._compiled is None:
            self._compiled = _compile(self.source, self.id)
            self._globals = dict(self._compiled.globals)
            self._plan = _make_plan(_env().parse(self.source).body)
            self._fast = _plan_function(self._plan) if self._plan is not None else None
            self._fast_row = _plan_row_function(self._plan) if self._plan is not None else None

    def render(self, variables: dict[str, Any]) -> str:
        """The prompt for one row; UsageError naming the template and the undefined variable."""
        if self._compiled is None:
            self.compile()
        import jinja2

        fast = self._fast
        if fast is not None:
            return fast(variables)
        jt = self._compiled
        try:
            # Template.render() merges the environment's globals (a ChainMap, iterated in Python) into a new
            # dict on every call; merging a plain copy made once is the same context at a third of the cost
            return "".join(jt.root_render_func(jt.new_context({**self._globals, **variables}, shared=True)))
        except jinja2.UndefinedError as exc:
            raise UsageError(
                f"template {self.id!r} ({self.origin}): {exc.message}; the variables are "
                f"{', '.join(VARIABLES)} (row.NAME for a column of the source row)"
            ) from None
        except jinja2.TemplateError as exc:
            raise UsageError(f"template {self.id!r} ({self.origin}): {exc}") from None
        except (TypeError, ValueError, ArithmeticError, AttributeError, LookupError) as exc:
            raise UsageError(f"template {self.id!r} ({self.origin}): rendering failed: {exc}") from None

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
        """Names the template reads (render_variables builds only those)."""
        if self._used is None:
            from jinja2 import meta

            self._used = frozenset(meta.find_undeclared_variables(_env().parse(self.source)))
        return self._used

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "origin": self.origin, "weight": self.weight}
        d["grading_mode"] = self.grading_mode
        if self.output_regex is not None:
            d["output_regex"] = self.output_regex
        if self.answer_prefix is not None:
            d["answer_prefix"] = self.answer_prefix
        return d


_ENV: Any = None


def _env():
    global _ENV
    if _ENV is None:
        import jinja2
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        # sandboxed: a template file is data from the user, it must not reach Python internals;
        # StrictUndefined: a misspelt variable is an error naming it, never an empty string in a prompt
        _ENV = ImmutableSandboxedEnvironment(
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            keep_trailing_newline=False,
            trim_blocks=True,
            lstrip_blocks=True,
        )
    return _ENV


def _compile(source: str, tid: str):
    import jinja2

    try:
        return _env().from_string(source)
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
            description="'Final choice: LETTER' read by a custom output_regex",
            grading_mode="strict_single_letter_boxed",
            output_regex=r"Final choice:\s*\(?([A-Z])\)?(?![A-Za-z0-9])",
            source=_HEAD + "Reason about each option, then finish your response with a line "
            "'Final choice: <letter>' naming one of {{ letters_comma }}.",
        ),
        Template(
            id="answer_is",
            description="'The answer is (LETTER)' (MMLU-Pro's chain-of-thought format) read by a custom output_regex",
            grading_mode="strict_single_letter_boxed",
            output_regex=r"answer is\s*\(?([A-Z])\)?(?![A-Za-z0-9])",
            source="The following is a multiple choice question{% if subject %} about {{ subject | replace('_', ' ') }}{% endif %}. "
            'Think step by step and then finish your answer with "the answer is (<letter>)", where <letter> is '
            "the correct option.\n\n" + _HEAD.rstrip("\n"),
        ),
    )
}
DEFAULT_TEMPLATE = "boxed"


# --------------------------------------------------------------------------------------------- files

_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?\n?", re.S | re.M)


def parse_template_file(path: str | Path) -> Template:
    """A template file: optional front matter (`---` lines) declaring id, grading_mode, output_regex,
    answer_prefix, description; the rest is the Jinja2 source. Raises UsageError on any problem."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"template {path}: cannot read the template file: {exc}", reason="template_file"
        ) from None
    header: dict[str, Any] = {}
    m = _FRONT.match(text)
    body = text
    if m:
        body = text[m.end() :]
        start_line = 2
        for k, line in enumerate(m.group(1).splitlines()):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            key, sep, value = line.partition(":")
            key = key.strip()
            if not sep or key not in FRONT_KEYS:
                raise UsageError(
                    f"{path}:{start_line + k}: front matter line {line.strip()!r}: expected 'KEY: value' with "
                    f"KEY one of {', '.join(FRONT_KEYS)}"
                )
            value = value.strip()
            if key == "output_regex":
                prev = header.get(key)
                header[key] = value if prev is None else ([prev] if isinstance(prev, str) else prev) + [value]
            elif key in header:
                raise UsageError(f"{path}:{start_line + k}: {key} given twice")
            else:
                header[key] = value
    elif text.startswith("---"):
        raise UsageError(f"{path}: front matter opened with '---' is never closed by a '---' line")
    if "grading_mode" not in header and "output_regex" not in header:
        raise UsageError(
            f"{path}: the template does not say how its answer is graded: add front matter with "
            "'grading_mode: <mode>' and/or 'output_regex: <pattern>' (see docs/convert.md)"
        )
    mode = header.get("grading_mode") or "strict_single_letter_boxed"
    if mode not in ROW_MODES or mode == "robust":
        allowed = [m for m in ROW_MODES if m != "robust"]
        raise UsageError(f"{path}: grading_mode {mode!r}: expected one of {', '.join(allowed)}")
    if not body.strip():
        raise UsageError(f"{path}: the template body is empty")
    tid = header.get("id") or p.stem
    t = Template(
        id=tid,
        source=body,
        grading_mode=mode,
        output_regex=header.get("output_regex"),
        answer_prefix=header.get("answer_prefix"),
        description=header.get("description", ""),
        origin=str(path),
    )
    t.compile()
    return t


def parse_spec(spec: str) -> tuple[str, float]:
    """'NAME_OR_PATH[:WEIGHT]' -> (name or path, weight)."""
    name, sep, w = spec.rpartition(":")
    if sep and name:
        try:
            weight = float(w)
        except ValueError:
            return spec, 1.0
        if not (weight > 0) or weight != weight or weight == float("inf"):
            raise UsageError(
                f"template {spec!r}: the weight must be a positive number", reason="template_spec"
            )
        return name, weight
    return spec, 1.0


def load_templates(specs: Sequence[str]) -> list[Template]:
    """Templates for --template specs (built-in names or files, each with an optional :WEIGHT)."""
    if not specs:
        specs = [DEFAULT_TEMPLATE]
    out: list[Template] = []
    for spec in specs:
        name, weight = parse_spec(spec)
        if name in BUILTIN:
            b = BUILTIN[name]
            t = Template(
                id=b.id,
                source=b.source,
                grading_mode=b.grading_mode,
                output_regex=b.output_regex,
                answer_prefix=b.answer_prefix,
                description=b.description,
            )
        elif Path(name).is_file():
            t = parse_template_file(name)
        else:
            raise UsageError(
                f"template {spec!r}: neither a built-in template ({', '.join(BUILTIN)}) nor a file",
                reason="template_spec",
            )
        t.weight = weight
        t.compile()
        out.append(t)
    ids = [t.id for t in out]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise UsageError(
            f"template id {', '.join(map(repr, dup))} given twice; each template needs its own id"
        )
    return out


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
        letters = list("ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:n])
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
    """The variables a template sees for one row, given the option texts in letter order (docs/convert.md
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
