"""Plot blocks of the report document drawn as inline SVG with matplotlib (no JavaScript, no network).

Each figure is drawn from its plot block alone. Output is deterministic: the SVG id salt is the plot's id
(so ids are unique within a page and stable between runs) and no date is written. Text stays text
(svg.fonttype "none"): smaller files, selectable labels, and the browser's fonts.
"""

from __future__ import annotations

import io
import re
from typing import Any

from ..extras import require

PLOTS_FEATURE = "the report page's plots"

DEFAULT_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")
WIDTH_IN = 8.0
LABEL_CHARS = 42
CHAR_IN = 0.075  # average width of a 9-pt sans-serif character, in inches (for the margins)
RC: dict[str, Any] = {
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica"],
    "font.size": 9,
    "axes.titlesize": 10,
    "figure.titlesize": 11,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e5e5e5",
    "axes.axisbelow": True,
    "legend.frameon": False,
    # every label is data (template ids, model names, file names): "$x^$" is text, never TeX math, so no label
    # can crash the drawing or lose its dollar signs ("costs $5 and $6")
    "text.parse_math": False,
    "text.usetex": False,
}


def draw_svg(plot: dict[str, Any]) -> str:
    """The SVG markup of one plot block (kind "bars" or "matrix")."""
    matplotlib = require("matplotlib", PLOTS_FEATURE)
    from matplotlib.figure import Figure

    # matplotlib's defaults, whatever a user's matplotlibrc says; the caller's settings are restored after
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update({**RC, "svg.hashsalt": plot["id"]})
        fig = Figure()
        if plot["kind"] == "matrix":
            height = _matrix(fig, plot)
        else:
            height = _bars(fig, plot)
        fig.suptitle(_short(plot["title"], 100), fontweight="bold", y=1 - 0.1 / height, va="top")
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return _clean(buf.getvalue(), plot)


def _short(text: str, n: int = LABEL_CHARS) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _place(fig: Any, size: tuple[float, float], margins: tuple[float, float, float, float], grid=(1, 1),
           gaps=(0.0, 0.0)) -> None:  # fmt: skip
    """Size the figure and place its axes with margins (left, right, bottom, top) and gaps in inches: a
    fixed layout, computed from label lengths, costs one draw instead of a layout engine's two."""
    width, height = size
    left, right, bottom, top = margins
    rows, cols = grid
    axis_w = max((width - left - right - (cols - 1) * gaps[0]) / cols, 0.5)
    axis_h = max((height - bottom - top - (rows - 1) * gaps[1]) / rows, 0.5)
    fig.set_size_inches(width, height)
    fig.subplots_adjust(
        left=left / width,
        right=1 - right / width,
        bottom=bottom / height,
        top=1 - top / height,
        wspace=gaps[0] / axis_w,
        hspace=gaps[1] / axis_h,
    )


def _bars(fig: Any, plot: dict[str, Any]) -> float:
    """Draw the panels of a bar plot; returns the figure height (inches)."""
    panels = plot["panels"]
    horizontal = plot["horizontal"]
    n = len(panels)
    cols = 1 if horizontal else min(n, 2)
    rows = -(-n // cols)
    most = max((len(p["categories"]) for p in panels), default=1)
    longest = max((len(_short(c)) for p in panels for c in p["categories"]), default=1)
    rotate = not horizontal and (most > 8 or longest > 8)
    titled = any(p.get("title") for p in panels)
    twin = any(s["axis"] == "right" for p in panels for s in p["series"])
    names = {s["name"] for p in panels for s in p["series"]}
    tick_h = longest * CHAR_IN * 0.6 + 0.1 if rotate else 0.2
    left = 0.45 + (longest * CHAR_IN + 0.1 if horizontal else 0.5)
    right = 0.25 + (0.6 if twin and not horizontal else 0.0)
    bottom = 0.45 + (0.0 if horizontal else tick_h) + (0.3 if len(names) > 1 else 0.0)
    top = 0.5 + (0.25 if titled else 0.0) + (0.45 if twin and horizontal else 0.0)
    width = WIDTH_IN
    if horizontal:
        plot_h = 0.26 * max(most, 2)
    else:
        plot_h = 2.3
        if n == 1:  # a few categories: a narrower figure rather than very wide bars
            width = min(WIDTH_IN, max(4.5, left + right + 0.55 * most + 0.5))
    gap_h = 0.55 + (0.25 if titled else 0.0) + (0.0 if horizontal else tick_h)
    height = bottom + top + rows * plot_h + (rows - 1) * gap_h
    _place(fig, (width, height), (left, right, bottom, top), (rows, cols), (0.8, gap_h))
    axes = fig.subplots(rows, cols, squeeze=False)
    for k, ax in enumerate(axes.flat):
        if k >= n:
            ax.set_visible(False)
            continue
        _panel(ax, plot, panels[k])
    handles, labels = _legend_entries(fig)
    if len(labels) > 1:
        fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.0),
                   ncols=min(len(labels), 4), fontsize=8)  # fmt: skip
    return height


def _legend_entries(fig: Any) -> tuple[list[Any], list[str]]:
    """One legend entry per series name, across panels and twin axes."""
    seen: dict[str, Any] = {}
    for ax in fig.axes:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, h)
    return list(seen.values()), list(seen)


def _panel(ax: Any, plot: dict[str, Any], panel: dict[str, Any]) -> None:
    cats = [_short(c) for c in panel["categories"]]
    horizontal = plot["horizontal"]
    pos = list(range(len(cats)))
    bar_series = [s for s in panel["series"] if s["draw"] == "bar"]
    width = 0.8 if plot["stacked"] or len(bar_series) <= 1 else 0.8 / len(bar_series)
    base = [0.0] * len(cats)
    handles = []
    at: list[int] | list[float]
    for i, s in enumerate(bar_series):
        color = s.get("color") or DEFAULT_COLORS[i % len(DEFAULT_COLORS)]
        vals = [v if v is not None else 0 for v in s["values"]]
        if plot["stacked"]:
            at, start = pos, list(base)
            base = [b + v for b, v in zip(base, vals, strict=True)]
        else:
            off = (i - (len(bar_series) - 1) / 2) * width
            at, start = [p + off for p in pos], [0.0] * len(cats)
        draw = ax.barh if horizontal else ax.bar
        kw = {"left" if horizontal else "bottom": start}
        bars = draw(at, vals, width, color=color, label=s["name"], **kw)
        handles.append(bars)
        if len(bar_series) == 1 and not plot["stacked"] and len(cats) <= 30:
            ax.bar_label(bars, labels=[_num(v) for v in vals], fontsize=7, padding=2, color="#444444")
    twin = None
    for s in panel["series"]:
        if s["draw"] == "bar":
            continue
        target = ax
        if s["axis"] == "right":
            twin = twin or (ax.twiny() if horizontal else ax.twinx())
            target = twin
        _overlay(target, s, pos, horizontal, width)
    _axes(ax, plot, panel, cats, pos, twin)


def _overlay(ax: Any, s: dict[str, Any], pos: list[int], horizontal: bool, width: float) -> None:
    color = s.get("color") or "#222222"
    pts = [(p, v) for p, v in zip(pos, s["values"], strict=True) if v is not None]
    xs = [p for p, _ in pts]
    ys = [v for _, v in pts]
    if horizontal:
        xs, ys = ys, xs
    if s["draw"] == "marker":
        marker = "|" if horizontal else "_"
        fig = ax.get_figure()
        box = ax.get_position()
        span = box.height * fig.get_figheight() if horizontal else box.width * fig.get_figwidth()
        size = max(4.0, min(18.0, 0.75 * width * span * 72 / max(len(pos), 1)))  # points, within one slot
        ax.plot(xs, ys, linestyle="none", marker=marker, markersize=size, markeredgewidth=2.2, color=color,
                label=s["name"])  # fmt: skip
    else:
        ax.plot(xs, ys, marker="o", markersize=3.5, linewidth=1.6, color=color, label=s["name"])
        if s["axis"] == "right":
            (ax.set_xlim if horizontal else ax.set_ylim)(0, 1.05)
            ax.grid(False)


def _axes(
    ax: Any, plot: dict[str, Any], panel: dict[str, Any], cats: list[str], pos: list[int], twin
) -> None:
    from matplotlib.ticker import MaxNLocator

    if panel.get("title"):
        ax.set_title(_short(panel["title"], 70))
    if plot["horizontal"]:
        ax.set_yticks(pos, cats)
        ax.invert_yaxis()
        ax.set_xlabel(plot["x_label"])
        ax.set_ylabel(plot["y_label"])
        ax.grid(axis="y", visible=False)
        if plot.get("y_max") is not None:
            ax.set_xlim(0, plot["y_max"])
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if twin is not None and plot.get("y2_label"):
            twin.set_xlabel(plot["y2_label"])
    else:
        rotate = len(cats) > 8 or max((len(c) for c in cats), default=0) > 8
        ax.set_xticks(pos, cats, rotation=35 if rotate else 0, ha="right" if rotate else "center")
        ax.set_xlabel(plot["x_label"])
        ax.set_ylabel(plot["y_label"])
        ax.grid(axis="x", visible=False)
        if plot.get("y_max") is not None:
            ax.set_ylim(0, plot["y_max"])
        else:
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_ylim(bottom=0)
            top = ax.get_ylim()[1]
            ax.set_ylim(0, top * 1.08 if top > 0 else 1)
        if twin is not None and plot.get("y2_label"):
            twin.set_ylabel(plot["y2_label"])
    if not cats:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)


def _matrix(fig: Any, plot: dict[str, Any]) -> float:
    """Draw a count matrix as a heatmap with its numbers; returns the figure height (inches)."""
    rows, cols, values = plot["rows"], plot["columns"], plot["values"]
    longest = max((len(r) for r in rows), default=1)
    left, right, bottom, top = 0.55 + longest * CHAR_IN, 0.3, 0.6, 0.55
    width = min(WIDTH_IN, left + right + 1.2 * max(len(cols), 1))
    height = bottom + top + 0.5 * max(len(rows), 1)
    _place(fig, (width, height), (left, right, bottom, top))
    ax = fig.subplots()
    ax.grid(False)
    top_value = max((v for r in values for v in r), default=0) or 1
    # vector cells (pcolormesh), not imshow: an image would be a data: URL, which the page's policy forbids
    ax.pcolormesh(values if values else [[0]], cmap="Blues", vmin=0, vmax=top_value, edgecolors="white")
    for i, r in enumerate(values):
        for j, v in enumerate(r):
            color = "white" if v > 0.6 * top_value else "#222222"
            ax.text(j + 0.5, i + 0.5, _num(v), ha="center", va="center", color=color)
    ax.set_xticks([j + 0.5 for j in range(len(cols))], cols)
    ax.set_yticks([i + 0.5 for i in range(len(rows))], rows)
    ax.invert_yaxis()
    ax.tick_params(length=0)
    ax.set_xlabel(plot["x_label"])
    ax.set_ylabel(plot["y_label"])
    for side in ("left", "bottom"):
        ax.spines[side].set_visible(False)
    return height


def _num(v: Any) -> str:
    if isinstance(v, float) and not v.is_integer():
        return f"{v:.2f}" if abs(v) < 10 else f"{v:,.0f}"
    return f"{int(v):,}" if isinstance(v, (int, float)) else str(v)


_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_GROUP_ID = re.compile(r'<g id="[^"]*"')


def _clean(svg: str, plot: dict[str, Any]) -> str:
    """Inline-ready SVG: no XML prolog or metadata, no group ids (only referenced ids stay, salted per
    plot), natural size, scaled down by the page on narrow screens (viewBox kept), labelled for screen readers."""
    from html import escape

    svg = _PROLOG.sub("", svg, count=1)
    svg = _METADATA.sub("", svg, count=1)
    svg = _GROUP_ID.sub("<g", svg)
    label = escape(plot["title"], quote=True)
    svg = svg.replace("<svg ", f'<svg role="img" aria-label="{label}" ', 1)
    return svg.strip()
