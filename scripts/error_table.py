"""docs/errors.md, generated from the code: every failure reason a command can report, its exit code, what the
message says, and the fix the command line names.

A reason is the stable code of a failure (`--format json`: `error.reason`). They are found where they are made:
every exception of the package's family (mcqa_prep/errors.py and its subclasses) raised with `reason="..."` or
carrying a class default (directly, through errors.refusal, or through a helper that is given the reason), every report of a failed run (`report_error("...", ...)` in cli/), and the CLI's own
(usage, OS errors, interrupts, internal errors). The exit code follows the class (a usage error 2, anything
else 1); the fix is cli/errors.py's hint for the reason. tests/test_error_table.py checks that docs/errors.md
is this script's output, so a new reason, a changed message or hint shows in the doc.

Usage:
  python scripts/error_table.py           # print the document
  python scripts/error_table.py --write   # write docs/errors.md
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PKG = REPO / "mcqa_prep"
DOC = REPO / "docs" / "errors.md"
MESSAGE_CHARS = 170

# the CLI's own reasons (cli/__init__.py, cli/errors.describe): not raised with a reason= keyword
CLI_REASONS = {
    "usage": (
        2,
        "an option, argument or value the command does not accept (click's own check or the command's)",
    ),
    "interrupted": (1, "stopped by SIGINT (Ctrl-C), SIGTERM or SIGHUP: outputs not finished were removed"),
    "internal": (1, "internal error: … (a bug in mcqa-prep: please report it with the command line; …)"),
    "os": (1, "an operating-system error on a path: ‹path›: ‹what the system said›"),
}


@dataclass
class Reason:
    code: str
    exits: set[int] = field(default_factory=set)
    classes: set[str] = field(default_factory=set)
    messages: list[tuple[str, str]] = field(default_factory=list)  # (where, message pattern)


def _pattern(node: ast.AST | None) -> str:
    """A message argument as text: literal parts as written, each computed part as `…`."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "…" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _pattern(node.left) + _pattern(node.right)
    return "…"


def _reasons_of(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _reasons_of(node.body) + _reasons_of(node.orelse)
    return []


def _classes() -> tuple[dict[str, int], dict[str, str]]:
    """Every exception class of the family: name -> exit code, and name -> its default reason."""
    bases: dict[str, list[str]] = {}
    defaults: dict[str, str] = {}
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases.setdefault(
                    node.name,
                    [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases],
                )
                for stmt in node.body:
                    if (
                        isinstance(stmt, ast.Assign)
                        and [getattr(t, "id", None) for t in stmt.targets] == ["reason"]
                        and isinstance(stmt.value, ast.Constant)
                    ):
                        defaults[node.name] = stmt.value.value

    def lineage(name: str, seen: tuple[str, ...] = ()) -> list[str]:
        if name in seen or name not in bases:
            return [name]
        out = [name]
        for b in bases[name]:
            out += lineage(b, (*seen, name))
        return out

    family = {}
    for name in bases:
        line = lineage(name)
        if "McqaPrepError" in line:
            family[name] = 2 if "UsageError" in line else 1
    return family, {k: v for k, v in defaults.items() if k in family}


class _Scan(ast.NodeVisitor):
    """One module: the calls that make a failure of the family, with the function and class they are in."""

    def __init__(self, rel: str) -> None:
        self.rel = rel
        self.stack: list[ast.AST] = []
        self.calls: list[tuple[ast.Call, str, ast.FunctionDef | None]] = []  # (call, class made, function)
        self.all_calls: list[tuple[ast.Call, ast.FunctionDef | None]] = []

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.stack.append(node)
        self.generic_visit(node)
        self.stack.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.stack.append(node)
        self.generic_visit(node)
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Call(self, node: ast.Call) -> None:
        func = next((n for n in reversed(self.stack) if isinstance(n, ast.FunctionDef)), None)
        self.all_calls.append((node, func))
        self.generic_visit(node)


def _constants(func: ast.FunctionDef | None, var: str) -> list[str]:
    """The string constants a function assigns to `var` (directly or in a conditional expression)."""
    out: list[str] = []
    for node in ast.walk(func) if func is not None else ():
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == var for t in node.targets):
            out += _reasons_of(node.value)
    return out


def _unpacked_from(func: ast.FunctionDef | None, var: str) -> list[str]:
    """Names of the functions whose result `func` unpacks into `var` (`message, reason, d = run.why()`)."""
    out = []
    for node in ast.walk(func) if func is not None else ():
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Tuple)
            and any(getattr(e, "id", None) == var for e in node.targets[0].elts)
            and isinstance(node.value, ast.Call)
        ):
            f = node.value.func
            out.append(f.id if isinstance(f, ast.Name) else getattr(f, "attr", ""))
    return out


@functools.cache
def collect() -> dict[str, Reason]:
    family, defaults = _classes()
    found: dict[str, Reason] = {}

    def add(code: str, exit_code: int, cls: str, where: str, message: str) -> None:
        r = found.setdefault(code, Reason(code))
        r.exits.add(exit_code)
        r.classes.add(cls)
        if message:
            r.messages.append((where, message))

    scans = []
    functions: dict[str, list[ast.FunctionDef]] = {}
    for path in sorted(PKG.rglob("*.py")):
        scan = _Scan(path.relative_to(REPO).as_posix())
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                functions.setdefault(node.name, []).append(node)
        scan.visit(tree)
        scans.append((scan, tree))
    forwarders: dict[str, tuple[int, str]] = {}  # function -> (index of its reason parameter, class made)
    unresolved: dict[str, set[str]] = {}  # module -> classes made there with a reason the scan cannot follow
    for scan, tree in scans:
        owner = {id(f): c.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body}
        for node, func in scan.all_calls:
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name == "__init__" and func is not None and owner.get(id(func)) in family:
                name = owner[id(func)]  # super().__init__(..., reason=...) in a class of the family
            where = f"{scan.rel}:{node.lineno}"
            first = node.args[0] if node.args else None
            if name not in family and isinstance(first, ast.Name) and first.id in family:
                # errors.refusal(Class, head, ...), or a helper given the class it makes
                head = node.args[1] if len(node.args) > 1 else None
                if (
                    name != "refusal"
                    and name in functions
                    and not isinstance(head, (ast.JoinedStr, ast.Constant))
                ):
                    head = _message_of(functions[name][0])
                name, first = first.id, head
            if name == "report_error" and first is not None:  # a finished run that failed: exit 1
                for code in _reasons_of(first):
                    add(code, 1, "Failure", where, _pattern(node.args[1] if len(node.args) > 1 else None))
                continue
            if name not in family:
                continue
            kw = [k.value for k in node.keywords if k.arg == "reason"]
            if not kw:
                if name in defaults:
                    add(defaults[name], family[name], name, where, _pattern(first))
                continue
            codes = _reasons_of(kw[0]) + _composed(kw[0], functions)
            if isinstance(kw[0], ast.Name):
                var = kw[0].id
                codes = _constants(func, var)
                for m in _unpacked_from(func, var):
                    codes += [c for f in functions.get(m, []) for c in _constants(f, var)]
                params = [a.arg for a in func.args.args] if func is not None else []
                if not codes and var not in params:
                    unresolved.setdefault(scan.rel, set()).add(name)
                if not codes and var in params:
                    assert func is not None
                    forwarders[func.name] = (params.index(var), name)
                    defaults_of = func.args.defaults  # the parameter's default is a reason too
                    k = params.index(var) - (len(params) - len(defaults_of))
                    codes = _reasons_of(defaults_of[k]) if 0 <= k < len(defaults_of) else []
            for code in codes:
                add(code, family[name], name, where, _pattern(first))
    for scan, _ in scans:  # calls to a function that makes the failure with the reason it is given
        for node, _func in scan.all_calls:
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name in forwarders:
                i, cls = forwarders[name]
                fn = functions[name][0]
                offset = 1 if fn.args.args and fn.args.args[0].arg == "self" else 0
                arg = node.args[i - offset] if len(node.args) > i - offset else None
                arg = next((k.value for k in node.keywords if k.arg == fn.args.args[i].arg), arg)
                said = [
                    a
                    for j, a in enumerate(node.args)
                    if j != i - offset and isinstance(a, (ast.JoinedStr, ast.Constant)) and _pattern(a) != "…"
                ]
                message = _pattern(said[0]) if said else _pattern(_message_of(fn))
                for code in _reasons_of(arg) if arg is not None else []:
                    add(code, family[cls], cls, f"{scan.rel}:{node.lineno}", message)
    _literal_reasons(scans, unresolved, family, found, add)
    for cls, code in defaults.items():  # a class default the code never raises by name still names its reason
        if code not in found:
            add(code, family[cls], cls, "", "")
    from mcqa_prep.cli.errors import _OS_REASONS

    for code in sorted(set(_OS_REASONS.values())):
        add(code, 1, "OSError", "", "‹path›: ‹what the system said›")
    for code, (exit_code, message) in CLI_REASONS.items():
        add(code, exit_code, "UsageError" if exit_code == 2 else "Failure", "", message)
    return found


def _literal_reasons(
    scans: list[Any],
    unresolved: dict[str, set[str]],
    family: dict[str, int],
    found: dict[str, Reason],
    add: Any,
) -> None:
    """A reason the CLI has a fix for, written as a literal in a module whose failure takes its reason from a
    table (`what, reason = SECTIONS[name]`): made by that module's one class of such failures."""
    from mcqa_prep.cli.errors import HINTS

    for scan, tree in scans:
        classes = unresolved.get(scan.rel, set())
        if len(classes) != 1:
            continue
        (cls,) = classes
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in HINTS and node.value not in found:
                add(node.value, family[cls], cls, f"{scan.rel}:{node.lineno}", "")


def _composed(node: ast.AST, functions: dict[str, list[ast.FunctionDef]]) -> list[str]:
    """A reason written as f"prefix_{kind(exc)}": the prefix with every string `kind` may return."""
    if not isinstance(node, ast.JoinedStr) or len(node.values) != 2:
        return []
    prefix, part = node.values
    if not (isinstance(prefix, ast.Constant) and isinstance(part, ast.FormattedValue)):
        return []
    call = part.value
    name = call.func.id if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) else None
    out = []
    for fn in functions.get(name or "", []):
        for ret in (n for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None):
            out += [
                prefix.value + c.value
                for c in ast.walk(ret)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            ]
    return sorted(set(out))


def _message_of(fn: ast.FunctionDef) -> ast.AST | None:
    """The message a helper gives the failure it makes: its first f-string (else its first call's text)."""
    for node in ast.walk(fn):
        if isinstance(node, ast.JoinedStr):
            return node
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            return node.args[0]
    return None


def _cell(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) > MESSAGE_CHARS:
        text = text[: MESSAGE_CHARS - 1] + "…"
    return text.replace("|", "\\|")


def _hint(code: str) -> str:
    from mcqa_prep.cli.errors import HINTS

    h = HINTS.get(code)
    return re.sub(r"\{(\w+)\}", r"‹\1›", h) if h else ""


def render() -> str:
    reasons = collect()
    lines = [
        "# Errors: every reason, what it means, how to fix it",
        "",
        "<!-- generated by scripts/error_table.py from the code: do not edit by hand (tests/test_error_table.py) -->",
        "",
        "A command that fails prints one line on stderr, `Error: <what is wrong, where>; <how to fix it>`, and",
        "exits 1 (the data, a contract, a cache, a file, the network or the environment) or 2 (the command line).",
        "With `--format json` the one JSON document on stdout says the same as data: `error.reason` is one of the",
        "codes below, `error.hint` the fix, `error.exit_code` the code. `MCQA_PREP_DEBUG=1` shows a traceback.",
        "",
        "The message column shows what the message says, `…` standing for what it fills in (a path, a count, a",
        "contract id); `‹name›` in a fix is filled in from the error. A reason without a fix is one whose message",
        "says all there is to say.",
        "",
        "| reason | exit | the message says | how to fix it |",
        "|---|---|---|---|",
    ]
    for code in sorted(reasons, key=lambda c: (min(reasons[c].exits), c)):
        r = reasons[code]
        message = sorted(r.messages)[0][1] if r.messages else ""
        more = len({m for _, m in r.messages}) - 1
        said = _cell(message) + (f" (and {more} other wording{'s' if more > 1 else ''})" if more > 0 else "")
        exits = "/".join(str(e) for e in sorted(r.exits))
        said = "`" + said.replace("`", "'") + "`" if said else ""  # a message quotes data: code, not prose
        lines.append(f"| `{code}` | {exits} | {said} | {_cell(_hint(code))} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if argv == ["--write"]:
        DOC.write_text(text, encoding="utf-8")
        print(f"{DOC.relative_to(REPO)}: {text.count(chr(10)) - 15} reasons")
        return 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
