"""SVG 1.1 primitives for the report's plots: a canvas that writes markup, axis ticks, the matrix colour scale.

Plain markup, nothing else: no ids, no images, no external references, no script, no style element
(presentation attributes only, which the page's content-security policy allows). Every text is escaped here,
in one place (`Canvas.text`): labels are data (template ids, model and file names), so "<b>&" or "$x^$"
stays text; a control character is drawn as U+FFFD and a label's own spaces are kept. Coordinates are
written with at most two decimals, so the same plot gives the same bytes.
"""

from __future__ import annotations

import math
import re
from html import escape

PX_PER_IN = 96.0  # CSS pixels per inch: the figure sizes of plots.py are in inches
PT = PX_PER_IN / 72  # one typographic point in pixels
FONT_FAMILY = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif"
FONT = 9 * PT
CHAR_EM = 0.6  # average width of a sans-serif character, in font sizes (for margins and the legend)

# the ColorBrewer "Blues" sequential scheme (9 classes), light to dark: the matrix cells' colour scale
BLUES = ("#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b")


# what XML 1.0 cannot hold (C0 controls but tab, newline and return; lone surrogates, as a file name that is not
# UTF-8 is held; U+FFFE and U+FFFF) and what draws nothing (DEL, C1 controls): shown as U+FFFD, so that the plot
# stays well-formed XML where it is saved on its own and such a label is seen, not lost
_UNDRAWABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
# spaces the SVG whitespace rule would change: leading, trailing, two or more in a row, tab, newline, return
_SPACING = re.compile(r"^ |[ \t\n\r]$|[ \t\n\r]{2}|[\t\n\r]")


def shown(text: str) -> str:
    """A label as the plot writes it (before escaping): what XML cannot hold or draws nothing as U+FFFD."""
    return _UNDRAWABLE.sub("\ufffd", text)


def num(v: float) -> str:
    """A coordinate: at most two decimals, no trailing zeros, no "-0"."""
    s = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def text_width(text: str, size: float = FONT) -> float:
    """The estimated drawn width of `text` in pixels (for margins: the browser's fonts decide the real one)."""
    return len(text) * size * CHAR_EM


class Canvas:
    """An SVG document of a fixed pixel size, drawn in order (later shapes on top)."""

    def __init__(self, width: float, height: float, label: str) -> None:
        self.width, self.height, self.label = width, height, label
        self.parts: list[str] = []

    def group(self, cls: str) -> None:
        """Open a group of shapes named by its role (a class: "panel", "bars", "overlay", "legend", "cells"),
        closed by `end`: the structure a reader (or a test) finds the plot's parts by."""
        self.parts.append(f'<g class="{cls}">')

    def end(self) -> None:
        self.parts.append("</g>")

    def rect(self, x: float, y: float, w: float, h: float, fill: str, stroke: str | None = None) -> None:
        edge = f' stroke="{stroke}" stroke-width="1"' if stroke else ""
        self.parts.append(
            f'<rect x="{num(x)}" y="{num(y)}" width="{num(max(w, 0.0))}" height="{num(max(h, 0.0))}" '
            f'fill="{fill}"{edge}/>'
        )

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str, width: float = 1.0) -> None:
        self.parts.append(
            f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" stroke="{stroke}" '
            f'stroke-width="{num(width)}"/>'
        )

    def polyline(self, points: list[tuple[float, float]], stroke: str, width: float) -> None:
        if len(points) < 2:
            return
        pts = " ".join(f"{num(x)},{num(y)}" for x, y in points)
        self.parts.append(
            f'<polyline points="{pts}" fill="none" stroke="{stroke}" stroke-width="{num(width)}" '
            'stroke-linejoin="round"/>'
        )

    def circle(self, cx: float, cy: float, r: float, fill: str) -> None:
        self.parts.append(f'<circle cx="{num(cx)}" cy="{num(cy)}" r="{num(r)}" fill="{fill}"/>')

    def text(
        self,
        x: float,
        y: float,
        text: str,
        *,
        size: float = FONT,
        anchor: str = "middle",
        color: str = "#222222",
        bold: bool = False,
        rotate: float = 0.0,
    ) -> None:
        """A text whose middle (vertically) is at y; `anchor` places x at its start, middle or end."""
        base = y + 0.35 * size
        attrs = f'x="{num(x)}" y="{num(base)}" font-size="{num(size)}"'
        if anchor != "start":
            attrs += f' text-anchor="{anchor}"'
        if color != "#222222":
            attrs += f' fill="{color}"'
        if bold:
            attrs += ' font-weight="bold"'
        if rotate:
            attrs += f' transform="rotate({num(rotate)} {num(x)} {num(y)})"'
        if _SPACING.search(text):  # (a label "  x" is not drawn as "x": its spaces are kept, each drawn)
            attrs += ' xml:space="preserve"'
        self.parts.append(f"<text {attrs}>{escape(shown(text), quote=False)}</text>")

    def markup(self) -> str:
        w, h = num(self.width), num(self.height)
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" role="img" '
            f'aria-label="{escape(shown(self.label), quote=True)}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            f'font-family="{FONT_FAMILY}" font-size="{num(FONT)}" fill="#222222">'
        )
        return "\n".join([head, *self.parts, "</svg>"])


def nice_ticks(top: float, integer: bool, target: int = 6) -> list[float]:
    """Ticks from 0 in steps of 1, 2 or 5 x 10^k, about `target` of them, the last one at or above `top`
    (integer steps only when `integer`: counts)."""
    if not top > 0 or not math.isfinite(top):
        return [0.0, 1.0]
    raw = top / max(target, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw * (1 - 1e-9))
    if integer:
        step = max(step, 1.0)
    n = math.ceil(top / step - 1e-9)
    return [round(i * step, 10) for i in range(n + 1)]


def ticks_within(limit: float, target: int = 6) -> list[float]:
    """Ticks from 0 to at most `limit` (a fixed axis, e.g. rates in 0..1), in steps of 1, 2 or 5 x 10^k."""
    ticks = nice_ticks(limit, integer=False, target=target)
    return [t for t in ticks if t <= limit * (1 + 1e-9)]


def tick_label(v: float, ticks: list[float]) -> str:
    """A tick's label: thousands separators for whole steps, else as many decimals as the step needs."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    if float(step).is_integer():
        return f"{round(v):,}"
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    return f"{v:.{decimals}f}"


def blues(share: float) -> str:
    """The colour of a matrix cell holding `share` of the largest value (0..1): darker is more."""
    share = min(max(share, 0.0), 1.0)
    pos = share * (len(BLUES) - 1)
    i = min(int(pos), len(BLUES) - 2)
    f = pos - i
    lo, hi = _rgb(BLUES[i]), _rgb(BLUES[i + 1])
    r, g, b = (round(a + (c - a) * f) for a, c in zip(lo, hi, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def _rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)
