"""The vocabulary of the report document: blocks (plots, tables, notes) as plain JSON-ready dicts.

The HTML page is drawn from these dicts alone (render.py), so a plot shows exactly the numbers that
`--format json` prints. Two plot kinds cover every figure:

- "bars": one or more panels, each with `categories` and `series` ({name, values, draw: bar|marker|line,
  axis: left|right}); `stacked` stacks the bar series, `horizontal` lays categories out top to bottom;
- "matrix": a table of counts drawn as a heatmap with its numbers (`rows`, `columns`, `values`).

Every plot carries a title, axis labels and a caption that says how to read it.
"""

from __future__ import annotations

from typing import Any

REPORT_VERSION = "report.v1"


def series(
    name: str, values: list[Any], *, draw: str = "bar", axis: str = "left", color: str | None = None
) -> dict[str, Any]:
    s: dict[str, Any] = {"name": name, "values": values, "draw": draw, "axis": axis}
    if color is not None:
        s["color"] = color
    return s


def panel(title: str, categories: list[str], series_list: list[dict[str, Any]]) -> dict[str, Any]:
    return {"title": title, "categories": [str(c) for c in categories], "series": series_list}


def bars(
    pid: str,
    title: str,
    caption: str,
    *,
    x_label: str,
    y_label: str,
    panels: list[dict[str, Any]],
    y2_label: str | None = None,
    stacked: bool = False,
    horizontal: bool = False,
    y_max: float | None = None,
) -> dict[str, Any]:
    """A bar plot block (see the module docstring)."""
    p: dict[str, Any] = {
        "type": "plot",
        "kind": "bars",
        "id": pid,
        "title": title,
        "caption": caption,
        "x_label": x_label,
        "y_label": y_label,
        "panels": panels,
        "stacked": stacked,
        "horizontal": horizontal,
    }
    if y2_label is not None:
        p["y2_label"] = y2_label
    if y_max is not None:
        p["y_max"] = y_max
    return p


def matrix(
    pid: str,
    title: str,
    caption: str,
    *,
    x_label: str,
    y_label: str,
    rows: list[str],
    columns: list[str],
    values: list[list[int]],
) -> dict[str, Any]:
    """A count matrix drawn as a heatmap with its numbers: rows on the y axis, columns on the x axis."""
    return {
        "type": "plot",
        "kind": "matrix",
        "id": pid,
        "title": title,
        "caption": caption,
        "x_label": x_label,
        "y_label": y_label,
        "rows": rows,
        "columns": columns,
        "values": values,
    }


def table(
    tid: str, title: str, caption: str, columns: list[tuple[str, str]], rows: list[list[Any]]
) -> dict[str, Any]:
    """A table block; each column is (name, "text" | "number"), numbers sort numerically."""
    return {
        "type": "table",
        "id": tid,
        "title": title,
        "caption": caption,
        "columns": [{"name": n, "type": t} for n, t in columns],
        "rows": rows,
    }


def note(title: str, text: str) -> dict[str, Any]:
    """A block with no data: why a plot is absent (e.g. no row carries reward_profiles)."""
    return {"type": "note", "title": title, "text": text}


def alert(level: str, text: str) -> dict[str, str]:
    """A verdict shown at the top of a section: level "ok", "info" or "warn"."""
    return {"level": level, "text": text}


def plot_blocks(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every plot block of a report document, in page order."""
    return [b for s in doc.get("sections", []) for b in s.get("blocks", []) if b.get("type") == "plot"]
