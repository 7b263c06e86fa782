"""Template files and --template specs: a Jinja2 file whose YAML front matter declares how its answer is
graded (parsed by PyYAML), and the list of templates a run mixes (built-in names or files, with weights)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..grader.modes import DEFAULT_MODE, TEMPLATE_MODES
from .templates import BUILTIN, DEFAULT_TEMPLATE, FRONT_KEYS, Template

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
        header = _front_matter(path, m.group(1))
    elif text.startswith("---"):
        raise UsageError(f"{path}: front matter opened with '---' is never closed by a '---' line")
    if "grading_mode" not in header and "output_regex" not in header:
        raise UsageError(
            f"{path}: the template does not say how its answer is graded: add front matter with "
            "'grading_mode: <mode>' and/or 'output_regex: <pattern>' (see docs/design/convert.md)"
        )
    mode = header.get("grading_mode") or DEFAULT_MODE
    if mode not in TEMPLATE_MODES:
        raise UsageError(f"{path}: grading_mode {mode!r}: expected one of {', '.join(TEMPLATE_MODES)}")
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
        letter_class=bool(header.get("narrow_letters", False)),
    )
    t.compile()
    return t


_FIRST_LINE = 2  # the front matter's first line in the file (after the opening '---')
_QUOTE_HINT = (
    "quote a value that holds ': ' or ' #' or starts with [ { * & ! | > % @ (single quotes keep backslashes)"
)


def _front_matter(path: str | Path, text: str) -> dict[str, Any]:
    """The front matter, parsed by PyYAML (safe_load): a mapping of FRONT_KEYS to text (`output_regex` also
    to a list of texts). Every problem is one UsageError line with the file and its line."""
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)  # where each key stands, for the messages below
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = f":{_FIRST_LINE + mark.line}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UsageError(f"{path}{line}: front matter is not valid YAML ({problem}); {_QUOTE_HINT}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict) or not isinstance(node, yaml.MappingNode):
        raise UsageError(
            f"{path}:{_FIRST_LINE}: front matter must be 'KEY: value' lines with KEY one of {', '.join(FRONT_KEYS)}"
        )
    seen: set[Any] = set()
    for key_node, _ in node.value:
        where = f"{path}:{_FIRST_LINE + key_node.start_mark.line}"
        key = key_node.value
        if key not in FRONT_KEYS:
            raise UsageError(f"{where}: front matter key {key!r}: expected one of {', '.join(FRONT_KEYS)}")
        if key in seen:
            raise UsageError(f"{where}: {key} given twice (a list of patterns is a YAML list)")
        seen.add(key)
        value = doc[key]
        if key == "narrow_letters":
            if not isinstance(value, bool):
                raise UsageError(f"{where}: narrow_letters: expected true or false, got {value!r}")
            continue
        texts = value if key == "output_regex" and isinstance(value, list) else [value]
        if not texts or not all(isinstance(v, str) for v in texts):
            what = "text or a list of texts" if key == "output_regex" else "text"
            raise UsageError(f"{where}: {key}: expected {what}, got {value!r}; {_QUOTE_HINT}")
    return doc


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
                letter_class=b.letter_class,
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
