"""The preparation version names what `prepare` writes. Every golden validation case and every golden
preparation case (data/golden/validate_cases.jsonl, prepare_cases.jsonl) is prepared, in JSONL and in Parquet,
and the outcome hashed: each written row (its stamp's contract id and source path aside: the grader version
guards those), each rejected row with the rule, severity and address of each finding (not the wording of the
message), and the counts; the JSONL run is made a second time with the regex repair (`repair_regexes`). The hash is recorded with the version in data/golden/prepare_fingerprint.json. A
change of that output without a new PREPARATION_VERSION fails here: a preparation made by the old code would
otherwise be taken as up to date.

After a deliberate change: bump PREPARATION_VERSION (mcqa_prep/prepared/manifest.py), note it in
docs/design/prepare.md ("Preparation versions"), and record the new hash printed by this test."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import REPO

from mcqa_prep.prepare import prepare
from mcqa_prep.prepared import manifest as mf

FINGERPRINT = REPO / "data" / "golden" / "prepare_fingerprint.json"


def _inputs(tmp: Path, names: tuple[str, ...]) -> Path:
    rows = []
    for name in names:
        for line in (REPO / "data" / "golden" / name).read_text(encoding="utf-8").splitlines():
            c = json.loads(line)
            if isinstance(c.get("row"), dict) and "before" not in c:
                rows.append({**c["row"], "uuid": c["name"]})
    path = tmp / f"golden-{len(names)}.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _neutral(row: dict) -> dict:
    stamp = (row.get("metadata") or {}).get("mcqa_prep")
    if isinstance(stamp, dict):
        stamp = {**stamp, "contract": "<contract>", "source": {**stamp["source"], "file": "<input>"}}
        row = {**row, "metadata": {**row["metadata"], "mcqa_prep": stamp}}
    return row


def _outcome(out: Path, fmt: str) -> list:
    doc = mf.read(out).to_dict()
    rows: list = []
    for f in doc["files"]:
        path = out / f["path"]
        if f["kind"] == "rejects":
            for line in path.read_text(encoding="utf-8").splitlines():
                rec = json.loads(line)
                found = sorted((x["rule"], x["severity"], x["path"]) for x in rec["findings"])
                rows.append(["rejected", rec["source"]["row"], found, rec["row"]])
        elif fmt == "parquet":
            import pyarrow.parquet as pq

            rows += [["row", _neutral(r)] for r in pq.read_table(path).to_pylist()]
        else:
            rows += [["row", _neutral(json.loads(x))] for x in path.read_text(encoding="utf-8").splitlines()]
    counts = {k: v for k, v in doc["counts"].items()}
    return [doc["row_schema"], counts, rows]


def fingerprint(tmp: Path) -> str:
    tmp.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    # JSONL: every golden row, also with the regex repair (the regex_audit cases repaired, in their stamps);
    # Parquet (one type per column): the preparation cases, which share a shape
    for fmt, names, repair in (
        ("jsonl", ("validate_cases.jsonl", "prepare_cases.jsonl"), False),
        ("parquet", ("prepare_cases.jsonl",), False),
        ("jsonl", ("validate_cases.jsonl", "prepare_cases.jsonl"), True),
    ):
        src = _inputs(tmp, names)
        out = tmp / f"out-{fmt}-{repair}"
        prepare([src], out, on_invalid="reject", output_format=fmt, workers=1, repair_regexes=repair)
        label = [fmt, "repair_regexes"] if repair else fmt  # the first two as before the repair existed
        h.update(
            json.dumps([label, _outcome(out, fmt)], ensure_ascii=False, sort_keys=True, default=str).encode()
        )
    return h.hexdigest()


def test_prepare_output_changes_only_with_the_preparation_version(tmp_path):
    recorded = json.loads(FINGERPRINT.read_text(encoding="utf-8"))
    now = fingerprint(tmp_path)
    version = mf.PREPARATION_VERSION
    if recorded["preparation_version"] == version:
        assert now == recorded["sha256"], (
            f"what prepare writes changed under preparation version {version}: bump PREPARATION_VERSION and "
            f'record {{"preparation_version": "<new>", "sha256": "{now}"}} in {FINGERPRINT.name}'
        )
    else:
        raise AssertionError(
            f"PREPARATION_VERSION is {version} but {FINGERPRINT.name} records {recorded['preparation_version']}: "
            f'record {{"preparation_version": "{version}", "sha256": "{now}"}}'
        )


def test_the_fingerprint_sees_a_changed_rule(tmp_path, monkeypatch):
    """Not vacuous: the same inputs under one validation rule of another severity hash differently."""
    from mcqa_prep.validate import registry

    before = fingerprint(tmp_path / "a")
    rule = registry.RULES["regex_audit_edge"]
    monkeypatch.setitem(
        registry.RULES, "regex_audit_edge", rule.__class__(**{**vars(rule), "severity": "error"})
    )
    from mcqa_prep.validate import row_checker

    row_checker.rules_for.cache_clear()
    try:
        assert fingerprint(tmp_path / "b") != before
    finally:
        row_checker.rules_for.cache_clear()


# ---- staleness: a preparation made by another preparation version is refused, naming the versions ------


def _prepared(tmp: Path) -> Path:
    src = tmp / "in.jsonl"
    src.write_text(
        "".join(
            json.dumps(json.loads(x)["row"]) + "\n" for x in (REPO / "data/golden/prepare_cases.jsonl").open()
        ),
        encoding="utf-8",
    )
    out = tmp / "prepared"
    prepare([src], out, workers=1)
    return src


def _as_version(out: Path, version: str | None) -> None:
    path = out / mf.MANIFEST_NAME
    doc = json.loads(path.read_text(encoding="utf-8"))
    if version is None:
        doc.pop("preparation_version")  # written before the version was recorded
    else:
        doc["preparation_version"] = version
    path.write_text(json.dumps(doc), encoding="utf-8")


@pytest.mark.parametrize("recorded, named", [(None, "1"), ("0.9", "0.9")])
def test_an_older_preparation_is_stale_for_prepare_verify_and_load(tmp_path, cli, recorded, named):
    from mcqa_prep.errors import ContractMismatch, StaleCache
    from mcqa_prep.prepared import load_prepared, verify_prepared

    src = _prepared(tmp_path)
    out = tmp_path / "prepared"
    assert json.loads((out / mf.MANIFEST_NAME).read_text())["preparation_version"] == mf.PREPARATION_VERSION
    _as_version(out, recorded)
    with pytest.raises(StaleCache) as stale:
        prepare([src], out, workers=1)
    assert stale.value.reason == "stale_preparation"
    assert f"preparation version {named}" in str(stale.value) and mf.PREPARATION_VERSION in str(stale.value)
    for check in (verify_prepared, load_prepared):
        with pytest.raises(ContractMismatch) as refused:
            check(out)
        assert refused.value.reason == "preparation_version" and f"preparation version {named}" in str(
            refused.value
        )
    res = cli("verify", out)
    assert res.exit_code == 1 and f"prepared by preparation version {named}" in res.output
    assert res.output.count("what prepare writes") == 1  # said once: the hint does not repeat the message
    res = cli("prepare", src, "-o", out)
    assert res.exit_code == 1 and "--overwrite" in res.output
    assert cli("prepare", src, "-o", out, "--overwrite").exit_code == 0
    assert cli("verify", out).exit_code == 0


def test_a_new_preparation_version_makes_every_old_preparation_stale(tmp_path, monkeypatch):
    from mcqa_prep.errors import StaleCache

    src = _prepared(tmp_path)
    current = mf.PREPARATION_VERSION
    monkeypatch.setattr(mf, "PREPARATION_VERSION", "99")
    with pytest.raises(StaleCache) as stale:
        prepare([src], tmp_path / "prepared", workers=1)
    assert [(d.field, d.recorded, d.requested) for d in stale.value.differences] == [
        ("preparation_version", current, "99")
    ]
