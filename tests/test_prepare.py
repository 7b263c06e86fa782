"""prepare: stamping, round trip, cache rules (reuse / refusal), rejects, atomicity under crashes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, read_jsonl, repaired_templated_example, rescore_request
from prep_helpers import make_row, mtimes, write_rows
from test_contract import FIELD_CHANGES

from mcqa_prep import binding
from mcqa_prep.errors import IncompletePreparation, InvalidRows, StaleCache, UsageError
from mcqa_prep.policy import GradingPolicy
from mcqa_prep.prepare.run import normalise_options, prepare
from mcqa_prep.prepared.manifest import read as read_manifest
from mcqa_prep.prepared.verify import verify_prepared

ADDED = ("options", "expected_answer", "grading_mode", "metadata")


@pytest.fixture
def rows_file(tmp_path):
    return write_rows(
        tmp_path / "train.jsonl", [make_row(i, 4 if i % 2 else 10, template=i % 3 == 0) for i in range(25)]
    )


def _shards(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if p.name.endswith(".jsonl") and p.name != "rejects.jsonl")


def _prepared_rows(out: Path) -> list[dict]:
    return [r for p in _shards(out) for r in read_jsonl(p)]


# ---- content --------------------------------------------------------------------------------------------


def test_nemo_gym_templated_example_is_refused_for_its_regexes(tmp_path, cli):
    """Four of its five output_regex patterns misgrade ordinary English under NeMo Gym's own matching, and one
    prompt shows unrendered braces: prepare refuses the file, naming them (issue 24)."""
    r = cli("prepare", FIXTURES / "example_with_template_metadata.jsonl", "-o", tmp_path / "out")
    assert r.exit_code == 1
    # the remedy first, then the findings by rule and template (each with one example, compiler style), then
    # one error line naming the remedy for the regexes (and for the other row), with the counts
    lines = r.output.strip().splitlines()
    assert lines[0].startswith("what to do: pass --repair-regexes to write the regex audit's fix"), lines
    assert sum(x.startswith("  error regex_audit, template 'mcqa_") for x in lines) == 4, lines
    assert "  error template_unrendered, template 'mcqa_benchmark_001': 1 row(s)" in lines
    assert sum("[regex_audit]" in x and x.startswith("    e.g. ") for x in lines) == 4
    last = lines[-1]
    assert last.startswith(
        "Error: 5 of 5 row(s) invalid (regex_audit: 4, template_unrendered: 1); the regex audit's fix repairs the "
        "output_regex of 4 of them (4 templates: mcqa_benchmark_002: 1, mcqa_generated_015: 1, "
        "mcqa_generated_019: 1, mcqa_generated_027: 1); nothing written; pass --repair-regexes "
    ), last
    assert "--on-invalid reject" in last
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["example.jsonl", "example_with_template_metadata.jsonl"])
def test_nemo_gym_fixtures_prepare_cleanly_and_round_trip(tmp_path, cli, name):
    # the two files share uuids (same questions, other templates), so each is its own preparation
    src = FIXTURES / name
    if name == "example_with_template_metadata.jsonl":
        src = repaired_templated_example(tmp_path)
    out = tmp_path / "prepared"
    r = cli("prepare", src, "-o", out)
    assert r.exit_code == 0, r.output
    cid = GradingPolicy().contract_id()
    assert f"contract {cid}" in r.output and "rejected 0" in r.output
    originals = read_jsonl(src)
    prepared = _prepared_rows(out)
    assert len(prepared) == len(originals) == 5
    for i, (orig, prep) in enumerate(zip(originals, prepared, strict=True)):
        # every field kept, in its place; only the documented additions differ
        assert [k for k in prep if k in orig] == list(orig)
        assert {k: v for k, v in prep.items() if k not in ADDED} == {
            k: v for k, v in orig.items() if k not in ADDED
        }
        assert prep["options"] == orig["options"]
        assert prep["expected_answer"] == orig["expected_answer"].strip().upper()
        assert prep["grading_mode"] == orig.get("grading_mode", "strict_single_letter_boxed")
        stamp = prep["metadata"].pop("mcqa_prep")
        assert stamp == {
            "contract": cid,
            "row_schema": "prepared-row.v1",
            "grading_mode": prep["grading_mode"],
            "source": {"file": str(src), "row": i + 1},
            "bound": binding.digests(prep),  # the row as written (binding.py)
        }
        assert prep["metadata"] == orig.get("metadata", {})
    manifest = read_manifest(out).to_dict()
    assert manifest["counts"]["read"] == 5 and manifest["counts"]["written"] == 5
    assert [i["name"] for i in manifest["inputs"]] == [name]
    assert cli("verify", out).exit_code == 0


def test_prepared_rows_validate_against_prepared_row_schema(tmp_path, rows_file):
    from mcqa_prep.schema import validator

    out = tmp_path / "out"
    prepare([rows_file], out)
    v = validator("prepared_row")
    for row in _prepared_rows(out):
        assert list(v.iter_errors(row)) == []
    mv = validator("manifest")
    assert list(mv.iter_errors(json.loads((out / "manifest.json").read_text()))) == []


def test_normalise_options_drops_nulls_keeps_order():
    parquet_shape = [
        {"A": "x", "B": None, "C": None},
        {"A": None, "B": "y", "C": None},
        {"A": None, "B": None, "C": "z"},
    ]
    assert normalise_options(parquet_shape) == [{"A": "x"}, {"B": "y"}, {"C": "z"}]
    assert normalise_options([{"D": "d"}, {"A": "a"}]) == [{"D": "d"}, {"A": "a"}]


def test_parquet_input_null_filled_options(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [make_row(i, 10 if i % 2 else 4) for i in range(8)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "train-00000-of-00001.parquet")
    out = tmp_path / "out"
    report = prepare([tmp_path / "train-00000-of-00001.parquet"], out)
    assert report.counts["written"] == 8
    for orig, prep in zip(rows, _prepared_rows(out), strict=True):
        assert prep["options"] == orig["options"]


def test_grading_mode_made_explicit_under_policy(tmp_path):
    src = write_rows(
        tmp_path / "train.jsonl", [make_row(0), make_row(1, extra={"grading_mode": "lenient_boxed"})]
    )
    out = tmp_path / "a"
    prepare([src], out, GradingPolicy(grading_mode_default="lenient_answer_colon"))
    assert [r["grading_mode"] for r in _prepared_rows(out)] == ["lenient_answer_colon", "lenient_boxed"]
    out = tmp_path / "b"
    prepare([src], out, GradingPolicy(grading_mode_override="robust"))
    assert [r["grading_mode"] for r in _prepared_rows(out)] == ["robust", "robust"]
    # an override-only mode is not a row mode: the row keeps its mode, the stamp records the effective one
    out = tmp_path / "c"
    prepare([src], out, GradingPolicy(grading_mode_override="lenient_answer_colon_md"))
    rows = _prepared_rows(out)
    assert [r["grading_mode"] for r in rows] == ["strict_single_letter_boxed", "lenient_boxed"]
    assert {r["metadata"]["mcqa_prep"]["grading_mode"] for r in rows} == {"lenient_answer_colon_md"}


def test_existing_metadata_kept(tmp_path):
    src = write_rows(
        tmp_path / "train.jsonl", [make_row(0, extra={"metadata": {"origin": "x", "n": [1, 2]}})]
    )
    out = tmp_path / "out"
    prepare([src], out)
    md = _prepared_rows(out)[0]["metadata"]
    assert md["origin"] == "x" and md["n"] == [1, 2] and "mcqa_prep" in md


def test_splits_and_shard_names(tmp_path):
    write_rows(tmp_path / "train.jsonl", [make_row(i) for i in range(7)])
    write_rows(tmp_path / "validation.jsonl", [make_row(i) for i in range(100, 103)])
    out = tmp_path / "out"
    report = prepare([tmp_path / "train.jsonl", tmp_path / "validation.jsonl"], out, shard_rows=3)
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "manifest.json",
        "rejects.jsonl",
        "train-00000-of-00003.jsonl",
        "train-00001-of-00003.jsonl",
        "train-00002-of-00003.jsonl",
        "validation-00000-of-00001.jsonl",
    ]
    assert report.splits == {"train": {"rows": 7, "shards": 3}, "validation": {"rows": 3, "shards": 1}}
    forced = tmp_path / "forced"
    report = prepare([tmp_path / "train.jsonl"], forced, split="test")
    assert report.splits == {"test": {"rows": 7, "shards": 1}}


def test_parquet_output(tmp_path, rows_file):
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    report = prepare([rows_file], out, output_format="parquet", shard_rows=10)
    assert [f["path"] for f in report.files if f["kind"] == "shard"] == [
        "train-00000-of-00003.parquet",
        "train-00001-of-00003.parquet",
        "train-00002-of-00003.parquet",
    ]
    assert sum(pq.ParquetFile(out / f).metadata.num_rows for f in ("train-00000-of-00003.parquet",)) == 10
    verify_prepared(out)


def test_parquet_output_of_objects_without_fields_is_one_clear_refusal(tmp_path):
    """`{}` in every row that holds a field has no Parquet form (Arrow: "cannot write struct type with no child
    field"): an internal error before; now InputError parquet_types naming the fields, nothing written. Where
    other rows give the object fields, it is written, null-filled, as before."""
    from mcqa_prep.errors import InputError

    rows = [make_row(i) for i in range(4)]
    rows[0]["extra"] = {}
    rows[1]["metadata"] = {"x": {}}
    rows[2]["lists"] = [{}]
    src = write_rows(tmp_path / "train.jsonl", rows)
    with pytest.raises(InputError, match=r"\$\.extra, \$\.metadata\.x, \$\.lists\[\] hold only empty") as err:
        prepare([src], tmp_path / "out", output_format="parquet")
    assert err.value.reason == "parquet_types" and not (tmp_path / "out").exists()
    rows[3]["extra"] = {"a": 1}
    rows[3]["metadata"] = {"x": {"b": 2}}
    rows[3]["lists"] = [{"c": 3}]
    src = write_rows(tmp_path / "train.jsonl", rows)
    report = prepare([src], tmp_path / "out", output_format="parquet")
    assert report.counts["written"] == 4
    verify_prepared(tmp_path / "out")


def test_stdin_refused(tmp_path):
    with pytest.raises(UsageError, match="stdin"):
        prepare(["-"], tmp_path / "out")


# ---- invalid rows ---------------------------------------------------------------------------------------


def _bad_rows(tmp_path: Path) -> Path:
    rows = [
        json.dumps(make_row(0)),
        "{not json",
        json.dumps(make_row(2)),
        json.dumps({**make_row(3), "expected_answer": "Z"}),
        json.dumps(make_row(4)),
    ]
    return write_rows(tmp_path / "train.jsonl", rows)


def test_on_invalid_fail_writes_nothing(tmp_path, cli):
    src = _bad_rows(tmp_path)
    out = tmp_path / "out"
    with pytest.raises(InvalidRows) as ei:
        prepare([src], out)
    assert ei.value.counts["read"] == 5 and ei.value.counts["rejected"] == 2
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")], "staging left behind"
    r = cli("prepare", src, "-o", out)
    assert r.exit_code == 1
    assert f"{src}:2: $" in r.output and "--on-invalid reject" in r.output
    assert not out.exists()


def test_on_invalid_reject(tmp_path):
    src = _bad_rows(tmp_path)
    out = tmp_path / "out"
    report = prepare([src], out, on_invalid="reject")
    c = report.counts
    assert (c["read"], c["written"], c["rejected"]) == (5, 3, 2)
    assert c["read"] == c["written"] + c["rejected"]
    assert sum(c["rejected_by_rule"].values()) >= 2
    rejects = read_jsonl(out / "rejects.jsonl")
    assert [r["source"]["row"] for r in rejects] == [2, 4]
    assert all(r["findings"] for r in rejects)
    assert rejects[1]["row"]["expected_answer"] == "Z"
    assert [r["uuid"] for r in _prepared_rows(out)] == ["row-000000", "row-000002", "row-000004"]
    verify_prepared(out)


# ---- cache rules ----------------------------------------------------------------------------------------


def test_same_inputs_reused_without_rewriting(tmp_path, rows_file, cli):
    out = tmp_path / "out"
    assert cli("prepare", rows_file, "-o", out).exit_code == 0
    before = mtimes(out)
    time.sleep(0.01)
    r = cli("prepare", rows_file, "-o", out)
    assert r.exit_code == 0
    assert "up to date" in r.output
    assert mtimes(out) == before
    # the same bytes reached through another path are the same input
    copy = tmp_path / "elsewhere"
    copy.mkdir()
    (copy / "train.jsonl").write_bytes(rows_file.read_bytes())
    assert prepare([copy / "train.jsonl"], out).status == "up_to_date"
    assert mtimes(out) == before


@pytest.mark.parametrize("flags,fields", FIELD_CHANGES, ids=[f[0][0] for f in FIELD_CHANGES])
def test_every_contract_field_change_is_refused(tmp_path, rows_file, cli, flags, fields):
    out = tmp_path / "out"
    assert cli("prepare", rows_file, "-o", out).exit_code == 0
    before = mtimes(out)
    old_id = GradingPolicy().contract_id()
    new_id = GradingPolicy().with_overrides(**fields).contract_id()
    r = cli("prepare", rows_file, "-o", out, *flags)
    assert r.exit_code == 1
    assert old_id in r.output and new_id in r.output
    for name in fields:
        assert f"policy.{name}:" in r.output
    assert "use a fresh output directory, or pass --overwrite" in r.output
    assert mtimes(out) == before
    with pytest.raises(StaleCache):
        prepare([rows_file], out, GradingPolicy().with_overrides(**fields))


def test_grader_version_change_is_refused(tmp_path, rows_file, monkeypatch):
    out = tmp_path / "out"
    prepare([rows_file], out)
    import mcqa_prep.policy as policy_mod

    installed = policy_mod.GRADER_VERSION  # the version that prepared the directory
    monkeypatch.setattr(policy_mod, "GRADER_VERSION", "9.9.9")
    with pytest.raises(StaleCache, match=rf"grader_version: \"{re.escape(installed)}\" != \"9\.9\.9\""):
        prepare([rows_file], out)


def test_changed_input_refused(tmp_path, rows_file, cli):
    out = tmp_path / "out"
    prepare([rows_file], out)
    before = mtimes(out)
    with open(rows_file, "a") as fh:
        fh.write(json.dumps(make_row(999)) + "\n")
    r = cli("prepare", rows_file, "-o", out)
    assert r.exit_code == 1
    assert "other inputs (changed: train.jsonl)" in r.output and "--overwrite" in r.output
    other = write_rows(tmp_path / "more.jsonl", [make_row(5)])
    r = cli("prepare", rows_file, other, "-o", out)
    assert r.exit_code == 1 and "added: more.jsonl" in r.output
    assert mtimes(out) == before


def test_changed_settings_refused(tmp_path, rows_file):
    out = tmp_path / "out"
    prepare([rows_file], out)
    with pytest.raises(StaleCache, match="shard_rows: 100000 != 7"):
        prepare([rows_file], out, shard_rows=7)


def test_directory_without_manifest_refused(tmp_path, rows_file, cli):
    out = tmp_path / "out"
    out.mkdir()
    (out / "train-00000-of-00001.jsonl").write_text("{}\n")
    with pytest.raises(IncompletePreparation, match="no manifest.json"):
        prepare([rows_file], out)
    r = cli("prepare", rows_file, "-o", out)
    assert r.exit_code == 1 and "not a complete preparation" in r.output
    # --overwrite replaces a directory holding only preparation files
    assert prepare([rows_file], out, overwrite=True).status == "overwritten"
    verify_prepared(out)


def test_unsupported_manifest_version_refused(tmp_path, rows_file):
    out = tmp_path / "out"
    prepare([rows_file], out)
    m = json.loads((out / "manifest.json").read_text())
    m["manifest_schema"] = "manifest.v99"
    (out / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(IncompletePreparation, match="manifest.v99"):
        prepare([rows_file], out)


def test_overwrite_replaces_atomically(tmp_path, rows_file):
    out = tmp_path / "out"
    prepare([rows_file], out)
    report = prepare([rows_file], out, GradingPolicy(zero_truncated=True), overwrite=True)
    assert report.status == "overwritten"
    assert read_manifest(out).contract_id == GradingPolicy(zero_truncated=True).contract_id()
    verify_prepared(out, GradingPolicy(zero_truncated=True))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_overwrite_refuses_foreign_directory(tmp_path, rows_file):
    out = tmp_path / "home"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    with pytest.raises(UsageError, match="refusing to replace"):
        prepare([rows_file], out, overwrite=True)
    assert (out / "thesis.tex").read_text() == "precious"


def test_empty_directory_is_used(tmp_path, rows_file):
    out = tmp_path / "out"
    out.mkdir()
    assert prepare([rows_file], out).status == "written"


# ---- crashes --------------------------------------------------------------------------------------------


def _cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env


def _prepare_cmd(src: Path, out: Path, *more: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mcqa_prep",
        "prepare",
        str(src),
        "-o",
        str(out),
        "--shard-rows",
        "500",
        "-q",
        *more,
    ]


def _assert_whole_or_previous(out: Path, previous: bytes | None) -> str:
    """DIR is absent, or the previous preparation untouched, or a complete new one that verifies."""
    if not out.exists():
        return "absent"
    manifest = out / "manifest.json"
    assert manifest.exists(), f"{out} exists without a manifest: {sorted(p.name for p in out.iterdir())}"
    verify_prepared(out)
    return "previous" if previous is not None and manifest.read_bytes() == previous else "new"


@pytest.fixture(scope="module")
def big_rows(tmp_path_factory):
    d = tmp_path_factory.mktemp("big")
    return write_rows(
        d / "train.jsonl", [make_row(i, 10 if i % 2 else 4, template=i % 3 == 0) for i in range(3000)]
    )


@pytest.mark.parametrize("phase", ["staging", "rows", "shards", "manifest"])
def test_crash_at_phase_fresh_dir(tmp_path, big_rows, phase):
    out = tmp_path / "out"
    p = subprocess.run(
        _prepare_cmd(big_rows, out), env=_cli_env(MCQA_PREP_TEST_CRASH_AT=phase), capture_output=True
    )
    assert p.returncode == 137, p.stderr.decode()
    assert _assert_whole_or_previous(out, None) == "absent"
    # the next run cleans the dead staging directory and succeeds
    assert prepare([big_rows], out, shard_rows=500).status == "written"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
@pytest.mark.parametrize("phase", ["manifest", "swap", "cleanup"])
def test_crash_during_overwrite(tmp_path, big_rows, phase, exchange):
    out = tmp_path / "out"
    prepare([big_rows], out, shard_rows=500)
    previous = (out / "manifest.json").read_bytes()
    env = _cli_env(MCQA_PREP_TEST_CRASH_AT=phase)
    if not exchange:
        env["MCQA_PREP_NO_RENAME_EXCHANGE"] = "1"
    p = subprocess.run(
        _prepare_cmd(big_rows, out, "--overwrite", "--zero-truncated"), env=env, capture_output=True
    )
    assert p.returncode == 137, p.stderr.decode()
    state = _assert_whole_or_previous(out, previous)
    if phase == "manifest":
        assert state == "previous"
    elif exchange:
        assert state == "new"  # the swap is one atomic step: there is no moment without DIR
    else:
        assert state in ("absent", "new")


@pytest.mark.parametrize("delay", [0.3, 0.8, 1.5, 2.5])
def test_sigkill_at_random_moments(tmp_path, big_rows, delay):
    out = tmp_path / "out"
    prepare([big_rows], out, shard_rows=500)
    previous = (out / "manifest.json").read_bytes()
    proc = subprocess.Popen(
        _prepare_cmd(big_rows, out, "--overwrite", "--zero-truncated"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    _assert_whole_or_previous(out, previous)


def test_an_integer_beyond_64_bits_is_written_exactly_by_every_command(tmp_path):
    """validate passed such a row and prepare then rejected it as unwritable (orjson holds 64-bit integers
    only; found by an audit); rescore wrote it with spaces the other writers do not use. One writer now: the
    row is valid JSON, every command writes it exactly, in the same compact form."""
    from mcqa_prep.rescore.run import rescore
    from mcqa_prep.validate import validate_paths

    big = 123456789012345678901234567890
    rows = [make_row(i, 4) for i in range(3)]
    rows[1]["metadata"] = {"i": big, "j": -(2**64)}
    src = write_rows(tmp_path / "train.jsonl", rows)
    assert validate_paths([src]).ok
    out = tmp_path / "prepared"
    prepare([src], out)
    lines = [json.loads(x) for p in sorted(out.glob("*.jsonl")) for x in p.read_text().splitlines()]
    assert [r["metadata"].get("i") for r in lines] == [None, big, None]
    assert verify_prepared(out).rows == 3
    text = "".join(p.read_text() for p in out.glob("*.jsonl"))
    assert f'"i":{big},"j":{-(2**64)}' in text
    req = tmp_path / "req.jsonl"
    req.write_text(json.dumps({**rows[1], "response": {"output_text": "\\boxed{A}"}}) + "\n")
    rescore(rescore_request(req, tmp_path / "r.jsonl"))
    assert f'"i":{big},"j":{-(2**64)}' in (tmp_path / "r.jsonl").read_text()


def test_an_integer_beyond_64_bits_is_refused_by_parquet_output_not_rounded(tmp_path):
    """Parquet output rounded it to a float and turned the field's other integers into floats, and verify
    said OK (found by an audit). Parquet holds 64-bit integers only: the row is unwritable there, with the fix
    (JSONL holds it), and the other rows keep their integers."""
    import pyarrow.parquet as pq

    rows = [make_row(i, 4) for i in range(3)]
    for i, r in enumerate(rows):
        r["metadata"] = {"i": 2**70 if i == 1 else i}
    src = write_rows(tmp_path / "train.jsonl", rows)
    out = tmp_path / "prepared"
    with pytest.raises(InvalidRows, match=r"1 of 3 row\(s\) invalid \(prepare.unwritable: 1\)") as exc:
        prepare([src], out, output_format="parquet")
    assert re.search(
        "beyond 64 bits cannot be stored in Parquet.*jsonl holds it", exc.value.findings[0].render()
    )
    report = prepare([src], out, output_format="parquet", on_invalid="reject")
    assert report.counts["rejected"] == 1 and report.counts["written"] == 2
    table = pq.read_table(next(out.glob("*.parquet")))
    assert [m["i"] for m in table.column("metadata").to_pylist()] == [0, 2]
