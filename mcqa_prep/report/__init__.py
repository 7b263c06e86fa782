"""`mcqa-prep report`: one offline HTML page (and its JSON document) for datasets and rescored files.

- `build_report(paths, ...)` reads the inputs once and returns the report document: every number behind
  every plot, per section (datasets per contract, rescored rows per contract; never pooled).
- `render_html(doc)` draws the page from that document alone and embeds it (`extract_document` reads it
  back), so the page and `--format json` cannot disagree.
- `write_html(doc, path)` writes the page atomically.

Layout: collect.py (the pass), dataset.py / rescored.py (bounded tallies), dataset_view.py /
rescored_view.py (tallies -> blocks), spec.py (the block vocabulary), plots.py and svgdraw.py (the SVG plots), render.py
(the page, by the Jinja2 templates in templates/: page, blocks, style sheet, script). Design notes:
docs/design/report.md.
"""

from __future__ import annotations

import os
from typing import Any

from .collect import build_report
from .render import canonical, extract_document, render_html
from .spec import REPORT_VERSION, plot_blocks

__all__ = [
    "REPORT_VERSION",
    "build_report",
    "canonical",
    "extract_document",
    "plot_blocks",
    "render_html",
    "write_html",
]


def write_html(doc: dict[str, Any], path: str | os.PathLike) -> int:
    """Render `doc` and write the page to `path` atomically ('-' is stdout); returns its size in bytes."""
    from ..io.writers import AtomicFile

    data = render_html(doc).encode("utf-8")
    with AtomicFile(path, "wb") as fh:
        fh.write(data)
    return len(data)
