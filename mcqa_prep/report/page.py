"""The page's fixed parts (data, not logic): its style sheet, its one script (sortable tables) and the
content security policy that forbids every network request (the page loads nothing but itself)."""

from __future__ import annotations

# Nothing may be fetched: no default source, inline styles and the inline script only.
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"

CSS = """
:root { --fg: #1d1d1f; --muted: #5f6368; --line: #dcdfe3; --bg: #ffffff; --panel: #f6f7f9;
        --ok: #2e7d32; --warn: #b3261e; --info: #1f5fa8; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; color: var(--fg); background: var(--bg);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", "Liberation Sans", sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 20px 24px 60px; }
header.report { border-bottom: 2px solid var(--line); margin-bottom: 12px; }
h1 { font-size: 24px; margin: 6px 0 4px; }
h2 { font-size: 20px; margin: 36px 0 6px; padding-top: 8px; border-top: 3px solid var(--fg); }
h3 { font-size: 15px; margin: 22px 0 6px; }
.muted, .meta { color: var(--muted); }
.meta { font-size: 12.5px; margin: 0 0 10px; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 12.5px; }
nav.toc { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; }
nav.toc ol { margin: 4px 0; padding-left: 20px; }
nav.toc a { color: var(--info); text-decoration: none; }
nav.toc a:hover { text-decoration: underline; }
.alert { border-left: 4px solid var(--info); background: var(--panel); padding: 6px 10px; margin: 6px 0;
         overflow-wrap: anywhere; }
.alert.ok { border-color: var(--ok); }
.alert.warn { border-color: var(--warn); background: #fdf1f0; }
dl.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 6px 16px;
           margin: 10px 0; }
dl.facts div { background: var(--panel); border-radius: 6px; padding: 6px 10px; }
dl.facts dt { font-size: 12px; color: var(--muted); }
dl.facts dd { margin: 0; font-size: 17px; font-weight: 600; overflow-wrap: anywhere; }
figure.plot { margin: 18px 0; padding: 10px; border: 1px solid var(--line); border-radius: 6px; }
figure.plot svg { display: block; max-width: 100%; height: auto; margin: 0 auto; }
figcaption { font-size: 13px; color: var(--muted); margin-top: 6px; }
figcaption strong { color: var(--fg); }
.table-wrap { overflow-x: auto; max-width: 100%; border: 1px solid var(--line); border-radius: 6px; }
.table-wrap.long { max-height: 460px; overflow-y: auto; }
table { border-collapse: collapse; width: 100%; font-size: 12.5px; }
th, td { padding: 5px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
td { overflow-wrap: anywhere; min-width: 6em; max-width: 520px; white-space: pre-line; }
td:first-child { min-width: 9em; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
thead th { position: sticky; top: 0; background: #eef0f3; cursor: pointer; user-select: none; }
thead th:hover, thead th:focus { background: #e1e5ea; }
thead th[aria-sort="ascending"]::after { content: " \\25B2"; }
thead th[aria-sort="descending"]::after { content: " \\25BC"; }
tbody tr:nth-child(even) { background: #fafbfc; }
td.fail { color: var(--warn); font-weight: 600; }
td.pass { color: var(--ok); }
section.note { margin: 14px 0; }
section.note p { margin: 2px 0; color: var(--muted); }
footer { margin-top: 40px; font-size: 12px; color: var(--muted); }
@media (max-width: 700px) { main { padding: 12px; } h1 { font-size: 20px; } }
"""

SCRIPT = """
(function () {
  "use strict";
  function sortKey(cell, numeric) {
    var v = cell.getAttribute("data-sort");
    if (v === null) { v = cell.textContent; }
    if (numeric) {
      var n = parseFloat(v);
      return isNaN(n) ? -Infinity : n;
    }
    return v.toLowerCase();
  }
  function sortBy(table, heads, th, col) {
    var numeric = th.getAttribute("data-type") === "number";
    var asc = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = sortKey(a.cells[col], numeric);
      var y = sortKey(b.cells[col], numeric);
      return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var heads = table.querySelectorAll("thead th");
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener("click", function () { sortBy(table, heads, th, col); });
      th.addEventListener("keydown", function (ev) {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); sortBy(table, heads, th, col); }
      });
    });
  });
})();
"""
