"""The report document -> one self-contained HTML page.

`render_html(doc)` reads nothing but `doc`, after a JSON round trip (so only what `--format json` prints
can reach the page), and embeds that same document in the page (`<script type="application/json"
id="report-data">`). The page is a pure function of the document: rendering the embedded document again
gives the same bytes, which is how the tests check that every plot shows the JSON's numbers.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from ..records import displayed
from .page import CSP, CSS, SCRIPT
from .plots import draw_svg

DATA_ID = "report-data"
LONG_TABLE = 15


def canonical(doc: dict[str, Any]) -> dict[str, Any]:
    """The document as JSON sees it (tuples become lists, NaN is refused), every name in its display form."""
    return json.loads(json.dumps(displayed(doc), ensure_ascii=False, allow_nan=False))


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
    title = doc.get("title") or "mcqa-prep report"
    body = [_header(doc), _toc(doc)]
    body += [_section(s) for s in doc.get("sections", [])]
    body.append(
        f"<footer>Made by mcqa-prep {escape(str(doc.get('tool_version')))} ({escape(str(doc.get('report_version')))}). "
        "This page loads nothing from the network: plots are inline SVG, the numbers behind them are "
        f"embedded as JSON (<code>#{DATA_ID}</code>) and printed by <code>mcqa-prep report --format json</code>."
        "</footer>"
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
        + "\n".join(body)
        + f'\n</main>\n<script type="application/json" id="{DATA_ID}">{embedded_json(doc)}</script>\n'
        f"<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )


def _header(doc: dict[str, Any]) -> str:
    sections = doc.get("sections", [])
    n = doc.get("distinct_contracts", 0)
    parts = [
        '<header class="report">',
        f"<h1>{escape(doc.get('title') or 'mcqa-prep report')}</h1>",
        f'<p class="meta">{len(sections)} section(s) from {len(doc.get("inputs", []))} input file(s); '
        f"{n} distinct grading contract(s).</p>",
        "</header>",
    ]
    if n > 1:
        parts.append(
            _alert(
                "warn",
                f"These inputs were graded or prepared under {n} different grading contracts. "
                + str(doc.get("pooling", "")),
            )
        )
    else:
        parts.append(_alert("info", str(doc.get("pooling", ""))))
    parts.append(_alert("info", str(doc.get("detection", ""))))
    parts.append(_inputs_table(doc.get("inputs", [])))
    return "\n".join(parts)


def _inputs_table(inputs: list[dict[str, Any]]) -> str:
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
    return _table(
        {
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
    )


def _toc(doc: dict[str, Any]) -> str:
    items = "".join(
        f'<li><a href="#{escape(s["id"])}">{escape(s["title"])}</a></li>' for s in doc.get("sections", [])
    )
    return f'<nav class="toc" aria-label="Sections"><strong>Sections</strong><ol>{items}</ol></nav>'


def _section(s: dict[str, Any]) -> str:
    parts = [f'<section class="report-section" id="{escape(s["id"])}" data-kind="{escape(s["kind"])}">']
    parts.append(f"<h2>{escape(s['title'])}</h2>")
    ins = s.get("inputs") or []
    if ins:
        parts.append(
            '<p class="meta">from ' + ", ".join(f"<code>{escape(str(i))}</code>" for i in ins) + "</p>"
        )
    parts.append(_facts(s))
    parts += [_alert(a["level"], a["text"]) for a in s.get("alerts", [])]
    for b in s.get("blocks", []):
        kind = b.get("type")
        if kind == "plot":
            parts.append(_figure(b))
        elif kind == "table":
            parts.append(_table(b))
        else:
            parts.append(
                f'<section class="note"><h3>{escape(b["title"])}</h3><p>{escape(b["text"])}</p></section>'
            )
    parts.append("</section>")
    return "\n".join(parts)


def _facts(s: dict[str, Any]) -> str:
    m = s.get("summary", {})
    if s["kind"] == "dataset":
        facts = [
            ("rows", m.get("rows")),
            ("splits", ", ".join(f"{k} {v:,}" for k, v in m.get("splits", {}).items())),
            ("errors / warnings", f"{m.get('errors', 0):,} / {m.get('warnings', 0):,}"),
            ("rows with errors", m.get("rows_with_errors")),
            ("templates", m.get("templates")),
            ("custom regex share", _pct(m.get("custom_regex_share"))),
            ("position bias", ", ".join(m.get("position_bias", {}).get("flagged", [])) or "none"),
        ]
    else:
        mean = m.get("mean_reward")
        facts = [
            ("rows", m.get("rows")),
            ("graded", m.get("graded")),
            ("mean reward", "n/a" if mean is None else f"{mean:.4f}"),
            ("changed rewards", m.get("changed")),
            ("format misses", m.get("format_misses")),
            ("prompts", m.get("pass_rates", {}).get("prompts")),
        ]
    cells = "".join(
        f"<div><dt>{escape(k)}</dt><dd>{escape(_fmt(v))}</dd></div>" for k, v in facts if v is not None
    )
    return f'<dl class="facts">{cells}</dl>'


def _alert(level: str, text: str) -> str:
    return f'<div class="alert {escape(level)}" role="note">{escape(text)}</div>'


def _figure(b: dict[str, Any]) -> str:
    svg = draw_svg(b)
    return (
        f'<figure class="plot" id="{escape(b["id"])}" data-plot="{escape(b["id"])}">{svg}'
        f"<figcaption><strong>{escape(b['title'])}.</strong> {escape(b['caption'])}</figcaption></figure>"
    )


def _table(b: dict[str, Any]) -> str:
    cols = b["columns"]
    head = "".join(
        f'<th scope="col" tabindex="0" data-type="{escape(c["type"])}"'
        + (' class="num"' if c["type"] == "number" else "")
        + f">{escape(c['name'])}</th>"
        for c in cols
    )
    body = []
    for row in b["rows"]:
        cells = []
        for c, v in zip(cols, row, strict=False):
            cells.append(_cell(c["type"], v))
        body.append("<tr>" + "".join(cells) + "</tr>")
    wrap = "table-wrap long" if len(b["rows"]) > LONG_TABLE else "table-wrap"
    return (
        f'<h3 id="{escape(b["id"])}">{escape(b["title"])}</h3><p class="meta">{escape(b["caption"])}</p>'
        f'<div class="{wrap}"><table class="sortable" data-table="{escape(b["id"])}"><thead><tr>{head}'
        f"</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _cell(kind: str, v: Any) -> str:
    if kind == "number":
        sort = "" if v is None else f' data-sort="{escape(str(v))}"'
        return f'<td class="num"{sort}>{escape(_fmt(v))}</td>'
    text = "" if v is None else str(v)
    cls = ""
    if text == "pass":
        cls = ' class="pass"'
    elif text.startswith("fail"):
        cls = ' class="fail"'
    return f"<td{cls}>{escape(text)}</td>"


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
