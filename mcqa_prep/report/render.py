"""The report document -> one self-contained HTML page, drawn by Jinja2 templates (templates/, package data).

`render_html(doc)` reads nothing but `doc`, after a JSON round trip (so only what `--format json` prints
can reach the page), and embeds that same document in the page (`<script type="application/json"
id="report-data">`). The page is a pure function of the document: rendering the embedded document again
gives the same bytes, which is how the tests check that every plot shows the JSON's numbers.

The templates are autoescaped: every value of the document is text on the page. Five things are marked
`| safe` in the templates, each made safe here: the content security policy (a constant), the style sheet
and the script (fixed files beside the templates), the SVG plots (drawn by plots.py, which escapes its
labels) and the embedded JSON (every '<' escaped). A string the templates write shows a control character
as U+FFFD, as the plots do (`_text`).
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from ..records import displayed
from .plots import draw_svg
from .svgdraw import shown

DATA_ID = "report-data"
LONG_TABLE = 15
# Nothing may be fetched: no default source, inline styles and the inline script only.
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def canonical(doc: dict[str, Any]) -> dict[str, Any]:
    """The document as JSON sees it (tuples become lists, NaN is refused), as `--format json` prints it
    (cli.common.dumps_document): as it is when it is valid UTF-8, else every string in its display form
    (records.display_name). Strings are not put in display form otherwise: that form escapes control
    characters too, and a finding table's cell of several examples is one string with line breaks."""
    try:
        text = json.dumps(doc, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (a name that is not UTF-8)
        text = json.dumps(displayed(doc), ensure_ascii=False, allow_nan=False)
    return json.loads(text)


def embedded_json(doc: dict[str, Any]) -> str:
    """The document as the page embeds it: JSON with every '<' escaped, so no '</script>' can end the tag."""
    return json.dumps(doc, ensure_ascii=False, allow_nan=False).replace("<", "\\u003c")


def extract_document(html: str) -> dict[str, Any]:
    """The report document embedded in a page written by render_html."""
    start_tag = f'<script type="application/json" id="{DATA_ID}">'
    start = html.index(start_tag) + len(start_tag)
    end = html.index("</script>", start)
    return json.loads(html[start:end])


def render_html(doc: dict[str, Any]) -> str:
    doc = canonical(doc)
    inputs = doc.get("inputs", [])
    page = _environment().get_template("page.html.j2")
    return page.render(
        title=doc.get("title") or "mcqa-prep report",
        sections=doc.get("sections", []),
        inputs=inputs,
        inputs_table=_inputs_table(inputs),
        distinct=doc.get("distinct_contracts", 0),
        pooling=str(doc.get("pooling", "")),
        detection=str(doc.get("detection", "")),
        facts=_facts,
        tool_version=str(doc.get("tool_version")),
        report_version=str(doc.get("report_version")),
        data_id=DATA_ID,
        data=embedded_json(doc),
        csp=CSP,
        css=_static("report.css"),
        script=_static("report.js"),
    )


@functools.cache
def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("mcqa_prep.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        keep_trailing_newline=True,
        finalize=_text,
    )
    env.filters["fmt"] = _fmt
    env.globals.update(zip=zip, long_table=LONG_TABLE, svg=draw_svg)
    return env


def _text(value: Any) -> Any:
    """Every value the templates write: a plain string as the plots show it (svgdraw.shown: a control
    character or a lone surrogate as U+FFFD, where the HTML parser would drop a NUL and draw an ESC as nothing,
    so that "a<NUL>b" showed as "ab"); what a template marked safe, and numbers, as they are. The embedded
    JSON keeps the document's strings exactly."""
    return shown(value) if type(value) is str else value


@functools.cache
def _static(name: str) -> str:
    return resources.files(__package__).joinpath("templates", name).read_text(encoding="utf-8")


def _inputs_table(inputs: list[dict[str, Any]]) -> dict[str, Any]:
    """The inputs as a table block (spec.py's shape), drawn like every other table."""
    rows = [
        [
            i.get("path"),
            i.get("kind"),
            i.get("detected"),
            i.get("split"),
            i.get("rows"),
            i.get("malformed"),
            i.get("unscored"),
            i.get("error") or "",
        ]
        for i in inputs
    ]
    return {
        "id": "inputs",
        "title": "Inputs",
        "caption": "Every data file read: its kind, what it was detected as, rows (malformed lines "
        "included), unreadable lines, and rows of a rescored file without metadata.grading (not pooled).",
        "columns": [
            {"name": n, "type": t}
            for n, t in (
                ("file", "text"),
                ("kind", "text"),
                ("detected as", "text"),
                ("split", "text"),
                ("rows", "number"),
                ("malformed lines", "number"),
                ("rows without grading", "number"),
                ("error", "text"),
            )
        ],
        "rows": rows,
    }


def _facts(s: dict[str, Any]) -> list[tuple[str, Any]]:
    """The headline facts of a section, (label, value), as its box shows them (None: not shown)."""
    m = s.get("summary", {})
    if "facts" in s:  # a section that lists its own facts
        return [(k, v) for k, v in s["facts"]]
    if s["kind"] == "dataset":
        return [
            ("rows", m.get("rows")),
            ("splits", ", ".join(f"{k} {v:,}" for k, v in m.get("splits", {}).items())),
            ("errors / warnings", f"{m.get('errors', 0):,} / {m.get('warnings', 0):,}"),
            ("rows with errors", m.get("rows_with_errors")),
            ("templates", m.get("templates")),
            ("custom regex share", _pct(m.get("custom_regex_share"))),
            ("position bias", ", ".join(m.get("position_bias", {}).get("flagged", [])) or "none"),
        ]
    if s["kind"] == "audit":
        return [
            ("rows", m.get("rows")),
            ("contaminated rows", _checked(m.get("contaminated_rows"))),
            ("duplicate rows", _checked(m.get("duplicate_rows"))),
            ("across splits", _checked(m.get("cross_split_duplicates"))),
            ("wrong keys", _checked(m.get("wrong_keys"))),
        ]
    mean = m.get("mean_reward")
    return [
        ("rows", m.get("rows")),
        ("graded", m.get("graded")),
        ("mean reward", "n/a" if mean is None else f"{mean:.4f}"),
        ("changed rewards", m.get("changed")),
        ("format misses", m.get("format_misses")),
        ("prompts", m.get("pass_rates", {}).get("prompts")),
    ]


def _checked(v: Any) -> Any:
    return "not checked" if v is None else v


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def _pct(v: Any) -> str | None:
    return None if v is None else f"{100 * v:.1f}%"
