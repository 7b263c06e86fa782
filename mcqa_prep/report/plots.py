"""Plot blocks of the report document drawn as inline SVG by the package itself (no JavaScript, no network,
no plotting library).

Each figure is drawn from its plot block alone, as plain SVG markup (svgdraw.Canvas): bars (vertical or
horizontal, single, grouped or stacked, value labels on a single series, overlay series as markers or lines,
a second axis for rates in 0..1, a shared legend, panels in a grid) and count matrices (cells with numbers).
The layout is fixed, computed from label lengths; the same block gives the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .svgdraw import (
    FONT,
    PT,
    PX_PER_IN,
    Canvas,
    blues,
    nice_ticks,
    text_width,
    tick_label,
    ticks_within,
)

DEFAULT_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")
OVERLAY_COLOR = "#222222"
AXIS_COLOR = "#333333"
GRID_COLOR = "#e5e5e5"
LABEL_COLOR = "#444444"
WIDTH_IN = 8.0
LABEL_CHARS = 42
CHAR_IN = FONT * 0.6 / PX_PER_IN  # average width of a 9-pt sans-serif character, in inches (for the margins)
RATE_LIMIT = 1.05  # the second axis: rates in 0..1, with room for a marker at 1
TICK = 3.5 * PT  # tick mark length
SMALL = 7 * PT  # value labels
LEGEND_FONT = 8 * PT
LEGEND_ROW_IN = 0.24
LEGEND_SWATCH = 20 * PT


def draw_svg(plot: dict[str, Any]) -> str:
    """The SVG markup of one plot block (kind "bars" or "matrix")."""
    canvas = _matrix(plot) if plot["kind"] == "matrix" else _bars(plot)
    canvas.text(
        canvas.width / 2, 0.1 * PX_PER_IN + 7 * PT, _short(plot["title"], 100), size=11 * PT, bold=True
    )
    return canvas.markup()


def _short(text: str, n: int = LABEL_CHARS) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


@dataclass
class _Frame:
    """One panel's axes box (pixels) and its value scale: categories at slots, values from 0 to `limit`."""

    x: float
    y: float
    w: float
    h: float
    horizontal: bool
    n: int
    limit: float

    @property
    def slot(self) -> float:
        return (self.h if self.horizontal else self.w) / max(self.n, 1)

    def center(self, pos: float) -> float:
        """The pixel coordinate of category position `pos` (slot index, fractional for grouped bars)."""
        return (self.y if self.horizontal else self.x) + (pos + 0.5) * self.slot

    def value(self, v: float, limit: float | None = None) -> float:
        """The pixel coordinate of value `v` (clipped to the axis)."""
        share = min(max(v / (limit or self.limit), 0.0), 1.0)
        return self.x + share * self.w if self.horizontal else self.y + self.h - share * self.h


def _value_ticks(plot: dict[str, Any], panel: dict[str, Any], target: int) -> list[float]:
    """The value axis' ticks: 0..y_max when the plot fixes it, else to the next nice step above the largest
    bar (stacked: the largest total) or left-axis overlay, with room for the value labels."""
    if plot.get("y_max") is not None:
        return ticks_within(float(plot["y_max"]), target)
    bars = [[v or 0 for v in s["values"]] for s in panel["series"] if s["draw"] == "bar"]
    values = [sum(col) for col in zip(*bars, strict=True)] if plot["stacked"] and bars else sum(bars, [])
    values += [v for s in panel["series"] if s["draw"] != "bar" and s["axis"] != "right" for v in s["values"]
               if v is not None]  # fmt: skip
    top = max(values, default=0)
    integer = all(float(v).is_integer() for v in values)
    return nice_ticks(top * 1.08, integer, target) if top > 0 else [0.0, 1.0]


def _limit(plot: dict[str, Any], ticks: list[float]) -> float:
    return float(plot["y_max"]) if plot.get("y_max") is not None else ticks[-1]


def _bars(plot: dict[str, Any]) -> Canvas:
    """Lay the panels of a bar plot out in a grid (two columns of vertical panels, one of horizontal ones)."""
    panels, horizontal = plot["panels"], plot["horizontal"]
    n = len(panels)
    cols = 1 if horizontal else min(n, 2)
    rows = max(-(-n // cols), 1) if cols else 1
    most = max((len(p["categories"]) for p in panels), default=1)
    longest = max((len(_short(c)) for p in panels for c in p["categories"]), default=1)
    rotate = not horizontal and (most > 8 or longest > 8)
    titled = any(p.get("title") for p in panels)
    twin = any(s["axis"] == "right" for p in panels for s in p["series"])
    entries = _legend_entries(panels)
    tick_h = longest * CHAR_IN * 0.6 + 0.15 if rotate else 0.2
    widest = 0.0 if horizontal else max((_ticks_width(plot, p) for p in panels), default=0.0)
    left = 0.45 + (longest * CHAR_IN + 0.1 if horizontal else max(0.5, widest + 0.1))
    right = 0.25 + (0.6 if twin and not horizontal else 0.0)
    top = 0.5 + (0.25 if titled else 0.0) + (0.45 if twin and horizontal else 0.0)
    width = WIDTH_IN
    if horizontal:
        plot_h = 0.26 * max(most, 2)
    else:
        plot_h = 2.3
        if n == 1:  # a few categories: a narrower figure rather than very wide bars
            width = min(WIDTH_IN, max(4.5, left + right + 0.55 * most + 0.5, _legend_width(entries) + 0.3))
    legend = _legend_grid(entries, width * PX_PER_IN)
    bottom = 0.5 + (0.0 if horizontal else tick_h) + LEGEND_ROW_IN * legend[1]
    gap_h = 0.6 + (0.25 if titled else 0.0) + (0.45 if twin and horizontal else 0.0)
    gap_h += 0.0 if horizontal else tick_h
    gap_w = (left - 0.15) + (right - 0.25)
    height = bottom + top + rows * plot_h + (rows - 1) * gap_h
    axis_w = max((width - left - right - (cols - 1) * gap_w) / max(cols, 1), 0.5)
    canvas = Canvas(width * PX_PER_IN, height * PX_PER_IN, plot["title"])
    for k, panel in enumerate(panels):
        r, c = divmod(k, cols)
        x = (left + c * (axis_w + gap_w)) * PX_PER_IN
        y = (top + r * (plot_h + gap_h)) * PX_PER_IN
        box = (x, y, axis_w * PX_PER_IN, plot_h * PX_PER_IN)
        canvas.group("panel")
        _panel(canvas, plot, panel, box, (rotate, tick_h * PX_PER_IN))
        canvas.end()
    if legend[1]:
        _legend(canvas, entries, legend)
    return canvas


def _ticks_width(plot: dict[str, Any], panel: dict[str, Any]) -> float:
    """The widest value tick label of a vertical panel, in inches."""
    ticks = _value_ticks(plot, panel, 6)
    return max(text_width(tick_label(t, ticks)) for t in ticks) / PX_PER_IN


def _color(s: dict[str, Any], i: int) -> str:
    """A series' colour: its own, else the palette's i-th for bars (by place among the panel's bar series),
    near-black for overlays."""
    if s.get("color"):
        return str(s["color"])
    return DEFAULT_COLORS[i % len(DEFAULT_COLORS)] if s["draw"] == "bar" else OVERLAY_COLOR


def _legend_entries(panels: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(name, draw, colour) once per series name, in the order the series first appear."""
    seen: dict[str, tuple[str, str, str]] = {}
    for p in panels:
        bar_i = 0
        for s in p["series"]:
            color = _color(s, bar_i)
            bar_i += s["draw"] == "bar"
            seen.setdefault(s["name"], (s["name"], s["draw"], color))
    return list(seen.values())


def _panel(canvas: Canvas, plot: dict[str, Any], panel: dict[str, Any], box: tuple[float, float, float, float],
           ticks_below: tuple[bool, float]) -> None:  # fmt: skip
    horizontal = plot["horizontal"]
    x, y, w, h = box
    cats = [_short(c) for c in panel["categories"]]
    target = max(5, min(9, int(w / 60))) if horizontal else 6
    ticks = _value_ticks(plot, panel, target)
    frame = _Frame(x, y, w, h, horizontal, len(cats), _limit(plot, ticks))
    _value_axis(canvas, frame, ticks, plot["y_label" if not horizontal else "x_label"])
    bar_series = [s for s in panel["series"] if s["draw"] == "bar"]
    width = 0.8 if plot["stacked"] or len(bar_series) <= 1 else 0.8 / len(bar_series)
    overlays = [s for s in panel["series"] if s["draw"] != "bar"]
    marks = [[s["values"][k] for s in overlays if s["axis"] != "right" and s["values"][k] is not None]
             for k in range(len(cats))]  # fmt: skip
    _bar_series(canvas, frame, plot, bar_series, width, marks)
    for s in overlays:
        _overlay(canvas, frame, s, width)
    if any(s["axis"] == "right" for s in overlays):
        _rate_axis(canvas, frame, plot.get("y2_label") or "")
    _category_axis(canvas, frame, cats, ticks_below, plot["x_label" if not horizontal else "y_label"])
    if panel.get("title"):
        above = 0.45 * PX_PER_IN if horizontal and any(s["axis"] == "right" for s in overlays) else 0.0
        canvas.text(x + w / 2, y - above - 8 * PT, _short(panel["title"], 70), size=10 * PT)
    if not cats:
        canvas.text(x + w / 2, y + h / 2, "no data")


def _value_axis(canvas: Canvas, f: _Frame, ticks: list[float], label: str) -> None:
    """Grid lines, the value spine with its ticks and labels, and the axis label (left, or below when
    horizontal)."""
    bottom = f.y + f.h
    for t in ticks:
        p = f.value(t)
        if f.horizontal:
            canvas.line(p, f.y, p, bottom, GRID_COLOR)
        else:
            canvas.line(f.x, p, f.x + f.w, p, GRID_COLOR)
    widest = 0.0
    for t in ticks:
        p, text = f.value(t), tick_label(t, ticks)
        if f.horizontal:
            canvas.line(p, bottom, p, bottom + TICK, AXIS_COLOR)
            canvas.text(p, bottom + TICK + 9 * PT, text)
        else:
            canvas.line(f.x - TICK, p, f.x, p, AXIS_COLOR)
            canvas.text(f.x - TICK - 3 * PT, p, text, anchor="end")
            widest = max(widest, text_width(text))
    if f.horizontal:
        canvas.text(f.x + f.w / 2, bottom + TICK + 23 * PT, label)
    else:
        canvas.text(f.x - TICK - 3 * PT - widest - 10 * PT, f.y + f.h / 2, label, rotate=-90)


def _category_axis(canvas: Canvas, f: _Frame, cats: list[str], below: tuple[bool, float], label: str) -> None:
    """The category spine, a tick and a label per category, and the axis label (below, or left when
    horizontal: rotated category labels when many or long)."""
    rotate, tick_area = below
    bottom = f.y + f.h
    canvas.line(f.x, f.y, f.x, bottom, AXIS_COLOR)
    canvas.line(f.x, bottom, f.x + f.w, bottom, AXIS_COLOR)
    longest = max((text_width(c) for c in cats), default=0.0)
    for i, c in enumerate(cats):
        p = f.center(i)
        if f.horizontal:
            canvas.line(f.x - TICK, p, f.x, p, AXIS_COLOR)
            canvas.text(f.x - TICK - 3 * PT, p, c, anchor="end")
        elif rotate:
            canvas.line(p, bottom, p, bottom + TICK, AXIS_COLOR)
            canvas.text(p + 3, bottom + TICK + 4 * PT, c, anchor="end", rotate=-35)
        else:
            canvas.line(p, bottom, p, bottom + TICK, AXIS_COLOR)
            canvas.text(p, bottom + TICK + 9 * PT, c)
    if f.horizontal:
        canvas.text(f.x - TICK - 3 * PT - longest - 10 * PT, f.y + f.h / 2, label, rotate=-90)
    else:
        canvas.text(f.x + f.w / 2, bottom + max(tick_area, TICK + 9 * PT) + 12 * PT, label)


def _bar_series(
    canvas: Canvas,
    f: _Frame,
    plot: dict[str, Any],
    series: list[dict[str, Any]],
    width: float,
    marks: list[list[float]],
) -> None:
    """The bars, side by side (grouped) or on top of each other (stacked); a single series gets its numbers."""
    base = [0.0] * f.n
    bw = width * f.slot
    for i, s in enumerate(series):
        color = _color(s, i)
        vals = [v if v is not None else 0 for v in s["values"]]
        canvas.group("bars")
        off = 0.0 if plot["stacked"] else (i - (len(series) - 1) / 2) * width
        for k, v in enumerate(vals):
            start = base[k] if plot["stacked"] else 0.0
            mid = f.center(k + off)
            a, b = f.value(start), f.value(start + v)
            if f.horizontal:
                canvas.rect(min(a, b), mid - bw / 2, abs(b - a), bw, color)
            else:
                canvas.rect(mid - bw / 2, min(a, b), bw, abs(b - a), color)
        canvas.end()
        if plot["stacked"]:
            base = [x + v for x, v in zip(base, vals, strict=True)]
        if len(series) == 1 and not plot["stacked"] and f.n <= 30:
            _value_labels(canvas, f, vals, marks)


def _value_labels(canvas: Canvas, f: _Frame, vals: list[float], marks: list[list[float]]) -> None:
    """Each bar's number just past its end, moved past an overlay's dash or dot that would cover it (the
    overlay values on the same axis at that category, `marks[k]`)."""
    for k, v in enumerate(vals):
        text, end, mid = _num(v), f.value(v), f.center(k)
        if f.horizontal:
            room = text_width(text, SMALL) + 4 * PT
            for p in sorted(f.value(m) for m in marks[k]):
                if end - 2 * PT <= p <= end + room:
                    end = p + 1.5 * PT
            canvas.text(end + 2 * PT, mid, text, size=SMALL, anchor="start", color=LABEL_COLOR)
        else:
            room = SMALL + 4 * PT
            for p in sorted((f.value(m) for m in marks[k]), reverse=True):
                if end - room <= p <= end + 2 * PT:
                    end = p - 1.5 * PT
            canvas.text(mid, end - 2 * PT - 0.5 * SMALL, text, size=SMALL, color=LABEL_COLOR)


def _overlay(canvas: Canvas, f: _Frame, s: dict[str, Any], width: float) -> None:
    """A series over the bars: a dash across each slot (marker) or a line with dots, on the value axis or on
    the second axis (rates in 0..1)."""
    color = _color(s, 0)
    limit = RATE_LIMIT if s["axis"] == "right" else None
    pts = []
    for k, v in enumerate(s["values"]):
        if v is not None:
            a, b = f.center(k), f.value(v, limit)
            pts.append((b, a) if f.horizontal else (a, b))
    canvas.group("overlay")
    if s["draw"] == "marker":
        half = max(4 * PT, min(18 * PT, 0.75 * width * f.slot)) / 2
        for px, py in pts:
            if f.horizontal:
                canvas.line(px, py - half, px, py + half, color, 2.2 * PT)
            else:
                canvas.line(px - half, py, px + half, py, color, 2.2 * PT)
    else:
        canvas.polyline(pts, color, 1.6 * PT)
        for px, py in pts:
            canvas.circle(px, py, 1.75 * PT, color)
    canvas.end()


def _rate_axis(canvas: Canvas, f: _Frame, label: str) -> None:
    """The second axis (right, or top when horizontal) for rates in 0..1."""
    ticks = ticks_within(1.0, 6)
    if f.horizontal:
        canvas.line(f.x, f.y, f.x + f.w, f.y, AXIS_COLOR)
        for t in ticks:
            p = f.value(t, RATE_LIMIT)
            canvas.line(p, f.y - TICK, p, f.y, AXIS_COLOR)
            canvas.text(p, f.y - TICK - 7 * PT, tick_label(t, ticks))
        canvas.text(f.x + f.w / 2, f.y - TICK - 21 * PT, label)
        return
    right = f.x + f.w
    canvas.line(right, f.y, right, f.y + f.h, AXIS_COLOR)
    for t in ticks:
        p = f.value(t, RATE_LIMIT)
        canvas.line(right, p, right + TICK, p, AXIS_COLOR)
        canvas.text(right + TICK + 3 * PT, p, tick_label(t, ticks), anchor="start")
    canvas.text(right + TICK + 3 * PT + text_width("0.0") + 10 * PT, f.y + f.h / 2, label, rotate=90)


def _legend_column(entries: list[tuple[str, str, str]]) -> float:
    """The width of a legend column (pixels): the longest name, its swatch and a gap."""
    return (
        max((text_width(name, LEGEND_FONT) for name, _, _ in entries), default=0.0) + LEGEND_SWATCH + 18 * PT
    )


def _legend_width(entries: list[tuple[str, str, str]]) -> float:
    """The width (inches) of a legend of up to four entries a row; 0 when there is no legend (one series)."""
    return min(len(entries), 4) * _legend_column(entries) / PX_PER_IN if len(entries) > 1 else 0.0


def _legend_grid(entries: list[tuple[str, str, str]], width: float) -> tuple[int, int]:
    """(columns, rows) of the legend in a figure `width` pixels wide: up to four a row, fewer when the names
    are too long for the width; (0, 0) for a single series (no legend)."""
    if len(entries) < 2:
        return 0, 0
    cols = max(1, min(len(entries), 4, int((width - 0.2 * PX_PER_IN) // _legend_column(entries))))
    return cols, -(-len(entries) // cols)


def _legend(canvas: Canvas, entries: list[tuple[str, str, str]], grid: tuple[int, int]) -> None:
    """One entry per series name at the bottom, centred, in the order the series first appear."""
    cols, rows = grid
    swatch = LEGEND_SWATCH
    col_w = _legend_column(entries)
    x0 = max((canvas.width - cols * col_w) / 2, 0.0)
    canvas.group("legend")
    y0 = canvas.height - (rows * LEGEND_ROW_IN - 0.06) * PX_PER_IN
    for k, (name, draw, color) in enumerate(entries):
        r, c = divmod(k, cols)
        x, y = x0 + c * col_w, y0 + r * LEGEND_ROW_IN * PX_PER_IN
        if draw == "bar":
            canvas.rect(x + 4 * PT, y - 4 * PT, swatch - 8 * PT, 8 * PT, color)
        elif draw == "marker":
            canvas.line(x + 3 * PT, y, x + swatch - 3 * PT, y, color, 2.2 * PT)
        else:
            canvas.line(x, y, x + swatch, y, color, 1.6 * PT)
            canvas.circle(x + swatch / 2, y, 1.75 * PT, color)
        canvas.text(x + swatch + 5 * PT, y, name, size=LEGEND_FONT, anchor="start")
    canvas.end()


def _matrix(plot: dict[str, Any]) -> Canvas:
    """A count matrix as a heatmap with its numbers, first row at the top; cells darker for larger counts."""
    rows = [_short(r) for r in plot["rows"]]
    cols = [_short(c) for c in plot["columns"]]
    values = plot["values"]
    longest = max((len(r) for r in rows), default=1)
    left, right, bottom, top = 0.55 + longest * CHAR_IN, 0.3, 0.6, 0.55
    width = min(WIDTH_IN, left + right + 1.2 * max(len(cols), 1))
    height = bottom + top + 0.5 * max(len(rows), 1)
    canvas = Canvas(width * PX_PER_IN, height * PX_PER_IN, plot["title"])
    x0, y0 = left * PX_PER_IN, top * PX_PER_IN
    cell_w = max(width - left - right, 0.5) * PX_PER_IN / max(len(cols), 1)
    cell_h = 0.5 * PX_PER_IN
    top_value = max((v for r in values for v in r), default=0) or 1
    canvas.group("cells")
    for i, r in enumerate(values):
        for j, v in enumerate(r):
            x, y = x0 + j * cell_w, y0 + i * cell_h
            canvas.rect(x, y, cell_w, cell_h, blues(v / top_value), stroke="#ffffff")
            color = "#ffffff" if v > 0.6 * top_value else "#222222"
            canvas.text(x + cell_w / 2, y + cell_h / 2, _num(v), color=color)
    canvas.end()
    for j, c in enumerate(cols):
        canvas.text(x0 + (j + 0.5) * cell_w, y0 + len(rows) * cell_h + 9 * PT, c)
    for i, r in enumerate(rows):
        canvas.text(x0 - 5 * PT, y0 + (i + 0.5) * cell_h, r, anchor="end")
    grid_w, grid_h = cell_w * max(len(cols), 1), cell_h * max(len(rows), 1)
    if not values:
        canvas.text(x0 + grid_w / 2, y0 + grid_h / 2, "no data")
    canvas.text(x0 + grid_w / 2, y0 + grid_h + 24 * PT, plot["x_label"])
    canvas.text(
        x0 - 5 * PT - longest * CHAR_IN * PX_PER_IN - 10 * PT, y0 + grid_h / 2, plot["y_label"], rotate=-90
    )
    return canvas


def _num(v: Any) -> str:
    if isinstance(v, float) and not v.is_integer():
        return f"{v:.2f}" if abs(v) < 10 else f"{v:,.0f}"
    return f"{int(v):,}" if isinstance(v, (int, float)) else str(v)
