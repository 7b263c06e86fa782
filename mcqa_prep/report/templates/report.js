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
