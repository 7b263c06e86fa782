"""One hostile try per command: run it on given bytes, then assert the contract and that every row is
accounted for, the way that command promises (README, "The CLI contract").

- validate: every row counted (`rows_read`), every unreadable line reported at its own line; stdin reads
  like the file.
- prepare: read = written + rejected (+ dropped), every unreadable line in rejects.jsonl; a success verifies;
  a failure leaves no output directory.
- rescore: one output row per input row, in order, strict JSON; unreadable lines are `invalid_row`.
- summarize: read = scored + unscored + other contracts, malformed lines counted.
- passrates: rollouts read = counted + invalid + other contracts; a failure leaves no table.
- convert: read = written + rejected, files agree with the counts; a failure leaves no file.
- curriculum: rows read = scheduled + dropped + rejected, every unreadable line rejected, the rows file holds
  the scheduled rows; a failure leaves none of its outputs.
- audit: every row read counted (unreadable ones too), each flagged row once; a failure leaves no document.
Every try: no leftover temporaries or staging directories beside the output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .kit import FAILURE, OK, assert_clean, check, count_lines, run, strict_lines
from .mutate import intact_lines, rows_of


def validate(
    path: Path, data: bytes | None, original: bytes | None = None, *, stdin: bool = True
) -> dict[str, Any]:
    res = run(["validate", path, "--format", "json", "--max-findings", "0", "-q"])
    doc = check(res, (OK, FAILURE))
    s = doc["summary"]
    if data is None:
        return doc
    rows = rows_of(data)
    assert s["rows_read"] == len(rows), (s["rows_read"], len(rows))
    error_lines = {f["line"] for f in doc["findings"] if f["severity"] == "error"}
    bad = {r.line for r in rows if r.ok is False}
    assert bad <= error_lines, f"unreadable lines {sorted(bad - error_lines)} not reported at their line"
    assert {f["line"] for f in doc["findings"]} <= {r.line for r in rows} | {None}
    if bad or not rows:  # an empty input is not a dataset
        assert res.exit_code == FAILURE
    if original is not None:
        hit = sorted(set(intact_lines(original, data)) & error_lines)
        assert not hit, f"intact rows at lines {hit} reported as errors"
    if stdin:
        piped = check(
            run(["validate", "-", "--format", "json", "--max-findings", "0", "-q"], input=data), res.exit_code
        )
        for key in ("rows_read", "rows_with_errors", "errors", "warnings", "findings_by_rule"):
            assert piped["summary"][key] == s[key], key
    return doc


def prepare(
    path: Path, data: bytes | None, out: Path, *extra: str, original: bytes | None = None
) -> dict[str, Any]:
    """`prepare --on-invalid reject`; `data` None means the row count is not known in advance (Parquet).
    Rows of `original` left intact by a mutation must all be written."""
    res = run(["prepare", path, "-o", out, "--on-invalid", "reject", "--format", "json", "-q", *extra])
    doc = check(res, (OK, FAILURE))
    rows = rows_of(data) if data is not None else None
    intact = intact_lines(original, data) if original is not None and data is not None else {}
    if intact:
        assert res.exit_code == OK, f"{len(intact)} intact row(s), but nothing was written"
    if rows is not None and not any(r.ok for r in rows):
        assert res.exit_code == FAILURE, "nothing to write, yet a success"
    if res.exit_code == OK:
        c = doc["counts"]
        assert c["read"] == c["written"] + c["rejected"] + c.get("dropped", 0)
        if rows is not None:
            assert c["read"] == len(rows)
            bad = {r.line for r in rows if r.ok is False}
            rejected_at = {x["source"]["row"] for x in strict_lines(out / "rejects.jsonl")}
            assert bad <= rejected_at, f"unreadable lines {sorted(bad - rejected_at)} not in rejects.jsonl"
            assert not set(intact) & rejected_at, f"intact rows rejected: {sorted(set(intact) & rejected_at)}"
        assert count_lines(out / "rejects.jsonl") == c["rejected"]
        verified = check(run(["verify", out, "--format", "json", "-q"]), OK)
        assert verified["rows"] == c["written"]
    else:
        assert not out.exists(), f"{out} exists after a failure"
        counts = doc["error"].get("counts")
        if counts and rows is not None:
            assert counts["read"] == len(rows)
    assert_clean(out.parent)
    return doc


def prepare_fail_mode(path: Path, data: bytes, out: Path) -> None:
    """`--on-invalid fail` (the default): any unreadable row fails the run and writes nothing."""
    res = run(["prepare", path, "-o", out, "--format", "json", "-q"])
    check(res, (OK, FAILURE))
    rows = rows_of(data)
    if any(r.ok is False for r in rows) or not rows:
        assert res.exit_code == FAILURE
    if res.exit_code != OK:
        assert not out.exists()
    assert_clean(out.parent)


def outcome(row: dict[str, Any]) -> tuple[Any, ...]:
    g = row["metadata"]["grading"]
    return row.get("reward"), row.get("extracted_answer"), g.get("status"), g.get("mode")


def rescore(
    path: Path, data: bytes, out: Path, *extra: Any, baseline: dict[bytes, tuple] | None = None
) -> dict[str, Any]:
    """One output row per input row; `baseline` (an input line -> its outcome alone) says what every intact
    row must still get."""
    res = run(["rescore", path, "-o", out, "--format", "json", "-q", *extra])
    doc = check(res, (OK, FAILURE))
    rows = rows_of(data)
    if not rows:
        assert res.exit_code == FAILURE and doc["error"]["reason"] == "no_rows"
        assert not out.exists()
    else:
        written = strict_lines(out)
        assert len(written) == len(rows) == doc["rows"], (len(written), len(rows), doc.get("rows"))
        for r, w in zip(rows, written, strict=True):
            if r.ok is False:
                assert w["metadata"]["grading"]["status"] == "invalid_row", r.line
            if baseline is not None and r.raw.strip() in baseline:
                assert outcome(w) == baseline[r.raw.strip()], f"line {r.line}: another row changed this one"
        assert doc["graded"] + doc["invalid_rows"]["count"] == doc["rows"]
        a = doc["agreement"]
        assert a["unchanged"]["count"] + a["0->1"]["count"] + a["1->0"]["count"] == a["recorded"]
        assert a["recorded"] <= doc["graded"], "an invalid row counted as a reward change"
        if "--rows" in map(str, extra) and doc.get("error"):
            assert "--rows" not in (doc["error"].get("hint") or ""), "told to pass --rows, which was given"
        assert (res.exit_code == FAILURE) == bool(doc["invalid_rows"]["count"])
    assert_clean(out.parent)
    return doc


def summarize(path: Path, data: bytes) -> dict[str, Any]:
    res = run(["summarize", path, "--format", "json"])
    doc = check(res, (OK, FAILURE))
    rows = rows_of(data)
    if not any(r.ok for r in rows):
        assert res.exit_code == FAILURE
    if res.exit_code == OK:
        assert doc["lines_read"] + doc["malformed"]["count"] == len(rows)
        assert doc["lines_read"] == doc["scored"] + doc["unscored"] + doc["excluded_other_contracts"]
        assert doc["malformed"]["count"] >= sum(r.ok is False for r in rows)
    else:
        assert doc["error"]["reason"] in ("no_rows", "no_scored_rows", "contracts_mixed")
    return doc


def passrates(path: Path, data: bytes, out: Path, *extra: Any) -> dict[str, Any]:
    res = run(["passrates", path, "-o", out, "--on-invalid", "reject", "--format", "json", "-q", *extra])
    doc = check(res, (OK, FAILURE))
    if not any(r.ok for r in rows_of(data)):
        assert res.exit_code == FAILURE
    if res.exit_code == OK:
        c = doc["counts"]
        assert c["rollouts"] == len(rows_of(data))
        assert c["rollouts"] == c["used"] + c["invalid"] + c["other_contracts"]
        assert out.exists()
    else:
        assert not out.exists()
    assert_clean(out.parent)
    return doc


def curriculum(path: Path, data: bytes | None, table: Path, out: Path, *extra: Any) -> dict[str, Any]:
    rows_out = out.with_name("rows-out.jsonl")
    res = run(
        [
            "curriculum",
            table,
            "--rows",
            path,
            "-o",
            out,
            "--rows-out",
            rows_out,
            "--format",
            "json",
            "-q",
            *extra,
        ]
    )
    doc = check(res, (OK, FAILURE))
    if res.exit_code == OK:
        r = doc["header"]["rows"]
        assert r["read"] == r["scheduled"] + sum(r["dropped"].values()) + sum(r["rejected"].values())
        assert len(strict_lines(rows_out)) == r["scheduled"]
        assert len(strict_lines(out)) == doc["header"]["ranges"] + 1
        if data is not None:
            rows = rows_of(data)
            assert r["read"] == len(rows)
            # every line that is not a JSON object is rejected (the reader refuses more: lone surrogates, depth)
            assert sum(x.ok is False for x in rows) <= r["rejected"].get("unreadable", 0)
    else:
        assert not out.exists() and not rows_out.exists()
    assert_clean(out.parent)
    return doc


def convert(
    path: Path,
    data: bytes | None,
    out: Path,
    *extra: Any,
    original: bytes | None = None,
    codes: tuple[int, ...] = (OK, FAILURE),
) -> dict[str, Any]:
    rejects = out.with_name(out.stem + ".rejects.jsonl")
    res = run(["convert", path, "-o", out, "--format", "json", "-q", *extra])
    doc = check(res, codes)
    intact = intact_lines(original, data) if original is not None and data is not None else {}
    if intact:
        assert res.exit_code == OK and doc["counts"]["written"] >= len(intact), (
            "intact rows were not converted"
        )
    if data is not None and not any(r.ok for r in rows_of(data)):
        assert res.exit_code == FAILURE
    if res.exit_code == OK:
        c = doc["counts"]
        assert c["read"] == c["written"] + c["rejected"]
        if data is not None:
            assert c["read"] == len(rows_of(data))
        assert len(strict_lines(out)) == c["written"]
        assert (count_lines(rejects) if rejects.exists() else 0) == c["rejected"]
    else:
        assert not out.exists() and not rejects.exists()
        counts = doc["error"].get("counts")
        if counts is not None:  # nothing converted: every row is still counted, in the error's details
            assert counts["read"] == counts["written"] + counts["rejected"] and counts["written"] == 0
            if data is not None:
                assert counts["read"] == len(rows_of(data)), "rows went uncounted"
    assert_clean(out.parent)
    return doc


def report(path: Path, data: bytes | None, out: Path, *extra: Any) -> dict[str, Any]:
    """The page and its JSON document: every row counted (`rows`, malformed ones included), a page only
    after a success, nothing readable at all is a failure."""
    res = run(["report", path, "-o", out, "--format", "json", "-q", *extra])
    doc = check(res, (OK, FAILURE))
    rows = rows_of(data) if data is not None else None
    if rows is not None and not any(r.ok for r in rows):
        assert res.exit_code == FAILURE, "nothing readable, yet a report"
    if res.exit_code == OK:
        assert out.exists() and out.stat().st_size > 0
        if rows is not None:
            assert sum(i["rows"] for i in doc["inputs"]) == len(rows)
            assert sum(i["malformed"] for i in doc["inputs"]) >= sum(r.ok is False for r in rows)
    else:
        assert not out.exists(), f"{out} exists after a failure"
    assert_clean(out.parent)
    return doc


def audit(path: Path, data: bytes | None, bench: Path, out: Path, *extra: Any) -> dict[str, Any]:
    """`audit DATA --against BENCH -o OUT`: every row read is counted (unreadable ones too, at their line), a
    success writes the document atomically; a failure (nothing readable) leaves no document."""
    res = run(["audit", path, "--against", bench, "-o", out, "--format", "json", "-q", *extra])
    doc = check(res, (OK, FAILURE))
    rows = rows_of(data) if data is not None else None
    if rows is not None and not rows:
        assert res.exit_code == FAILURE and doc["error"]["reason"] == "no_rows"
    if res.exit_code == OK:
        s = doc["summary"]
        if rows is not None:
            assert s["rows"] == len(rows), (s["rows"], len(rows))
            assert s["unreadable_rows"] >= sum(r.ok is False for r in rows)
        assert json.loads(out.read_text(encoding="utf-8"))["summary"] == s
        flagged = [f["row"]["line"] for f in doc["contamination"]["findings"]]
        assert len(flagged) == len(set(flagged)) == doc["contamination"]["rows"]
    else:
        assert not out.exists(), f"{out} exists after a failure"
    assert_clean(out.parent)
    return doc
