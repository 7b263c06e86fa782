"""One acceptance rule for a preparation (prepared/accept.accept), as a matrix: every command and library call
that reads a prepared directory x {a stale preparation version, a tampered shard, a foreign contract, a row
edited after prepare with the manifest's hashes written again} -> the same reason, the same one-line message
and the same exit code everywhere. A command that only reports (report, audit) may read a stale one with
--allow-stale, and says so; never a damaged or edited one."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO

from mcqa_prep.errors import McqaPrepError
from mcqa_prep.policy import contract_id
from mcqa_prep.prepare.run import prepare
from mcqa_prep.prepared import manifest as mf

SAMPLE = REPO / "data" / "sample"
SHARD = "train-00000-of-00001.jsonl"

# corruption -> (error type, reason)
EXPECTED = {
    "stale_version": ("ContractMismatch", "preparation_version"),
    "tampered_shard": ("IntegrityError", "integrity"),
    "foreign_contract": ("ContractMismatch", "grader_version"),
    "edited_row": ("IntegrityError", "row_changed"),
}


def _manifest(d: Path) -> dict:
    return json.loads((d / mf.MANIFEST_NAME).read_text(encoding="utf-8"))


def _write_manifest(d: Path, doc: dict) -> None:
    (d / mf.MANIFEST_NAME).write_text(json.dumps(doc), encoding="utf-8")


def _rehash(d: Path) -> None:
    """Record every file's bytes in the manifest again (a forger's move: only the rows' own stamps can tell)."""
    doc = _manifest(d)
    for f in doc["files"]:
        data = (d / f["path"]).read_bytes()
        f["sha256"], f["bytes"] = hashlib.sha256(data).hexdigest(), len(data)
    _write_manifest(d, doc)


def _edit_gold(d: Path) -> None:
    lines = (d / SHARD).read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[0])
    row["expected_answer"] = (
        "A" if row["expected_answer"] != "A" else "C"
    )  # same size: only the sha256 differs
    lines[0] = json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"
    (d / SHARD).write_text("".join(lines), encoding="utf-8")


def _corrupt(d: Path, how: str) -> None:
    if how == "stale_version":
        doc = _manifest(d)
        doc["preparation_version"] = "2"
        _write_manifest(d, doc)
    elif how == "tampered_shard":
        _edit_gold(d)
    elif how == "edited_row":
        _edit_gold(d)
        _rehash(d)
    else:  # a consistent preparation made by another grader version
        doc = _manifest(d)
        old = doc["contract_id"]
        doc["contract"]["grader_version"] = "0.9.0"
        doc["contract_id"] = new = contract_id(doc["contract"])
        _write_manifest(d, doc)
        text = (d / SHARD).read_text(encoding="utf-8").replace(old, new)
        (d / SHARD).write_text(text, encoding="utf-8")
        _rehash(d)


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("matrix")
    prepare([SAMPLE / "train.jsonl"], root / "clean", workers=1)
    return root / "clean"


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> Path:
    from click.testing import CliRunner

    from mcqa_prep.cli import main

    out = tmp_path_factory.mktemp("table") / "t.jsonl"
    args = ["passrates", SAMPLE / "rollouts.jsonl", "--rescore", "--rows", SAMPLE / "train.jsonl"]
    r = CliRunner().invoke(main, [str(a) for a in [*args, "--on-invalid", "reject", "-o", out, "-q"]])
    assert r.exit_code == 0, r.output
    return out


def _commands(d: Path, tmp: Path, table: Path) -> dict[str, list]:
    """Every command that reads a prepared directory, given `d` (each with --format json where it has one)."""
    rollouts = SAMPLE / "rollouts.jsonl"
    return {
        "verify": ["verify", d],
        "serve": ["serve", "--prepared", d, "--port", "0"],
        "gym-component": ["gym-component", tmp / "gym", "--prepared", d, "--license", "apache-2.0"],
        "rescore --rows": ["rescore", rollouts, "--rows", d, "-o", tmp / "r.jsonl"],
        "passrates --rows": [
            "passrates",
            rollouts,
            "--rescore",
            "--rows",
            d,
            "--on-invalid",
            "reject",
            "-o",
            tmp / "t.jsonl",
        ],
        "curriculum --rows": ["curriculum", table, "--rows", d, "-o", tmp / "c.jsonl"],
        "audit": ["audit", d],
        "report": ["report", d, "-o", tmp / "report.html"],
        "validate": ["validate", d],
        "prepare (a preparation as input)": ["prepare", d, "-o", tmp / "again"],
        "prepare --stamp-reward-profiles (its inputs)": [
            "prepare",
            d,
            "-o",
            tmp / "again2",
            "--stamp-reward-profiles",
            table,
        ],
    }


def _one_line(output: str) -> str:
    errors = [ln for ln in output.splitlines() if ln.startswith("Error: ")]
    assert len(errors) == 1, output
    return errors[0].removeprefix("Error: ")


@pytest.mark.parametrize("how", list(EXPECTED))
def test_every_reader_refuses_alike(clean, table, tmp_path, cli, how):
    from mcqa_prep.prepared import load_prepared, verify_prepared

    d = tmp_path / "p"
    shutil.copytree(clean, d)
    _corrupt(d, how)
    kind, reason = EXPECTED[how]
    # the library calls: the same error, reason and message
    messages = set()
    for call in (verify_prepared, lambda x: load_prepared(x, cache_dir=tmp_path / "cache")):
        with pytest.raises(McqaPrepError) as refused:
            call(d)
        assert (type(refused.value).__name__, refused.value.reason) == (kind, reason), refused.value
        messages.add(refused.value.message)
    assert len(messages) == 1, messages
    message = messages.pop()
    assert "\n" not in message
    results = {}
    for name, args in _commands(d, tmp_path, table).items():
        res = cli(*args, "--format", "json")
        doc = json.loads(res.stdout)
        results[name] = (res.exit_code, doc["error"]["type"], doc["error"]["reason"], doc["error"]["message"])
        # the text form: the same message, on one line
        text = cli(*args)
        assert text.exit_code == 1 and message in _one_line(text.output), (name, text.output)
    assert results == {name: (1, kind, reason, message) for name in results}


@pytest.mark.parametrize("how", ["stale_version", "foreign_contract"])
@pytest.mark.parametrize("command", ["report", "audit"])
def test_a_reporting_command_reads_a_stale_preparation_with_allow_stale_and_says_so(
    clean, tmp_path, cli, how, command
):
    d = tmp_path / "p"
    shutil.copytree(clean, d)
    _corrupt(d, how)
    refused = cli(command, d, "--format", "json")
    assert refused.exit_code == 1
    res = cli(command, d, "--allow-stale", "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    [stale] = doc["stale_preparations"]
    assert stale["reason"] == EXPECTED[how][1]
    assert stale["message"] == json.loads(refused.stdout)["error"]["message"]
    assert f"warning: {d}: --allow-stale: read although stale: " in res.stderr


@pytest.mark.parametrize("how", ["tampered_shard", "edited_row"])
def test_allow_stale_never_reads_a_damaged_or_edited_preparation(clean, tmp_path, cli, how):
    d = tmp_path / "p"
    shutil.copytree(clean, d)
    _corrupt(d, how)
    for command in ("report", "audit"):
        res = cli(command, d, "--allow-stale", "--format", "json")
        assert res.exit_code == 1
        assert json.loads(res.stdout)["error"]["reason"] == EXPECTED[how][1]


def test_the_clean_preparation_is_read_by_every_command(clean, table, tmp_path, cli):
    """The matrix is not vacuous: every command above accepts the preparation before it is corrupted (serve is
    left out: it would start serving; rescore reads it and then reports the sample's rollouts of another split
    as rows it could not grade)."""
    for name, args in _commands(clean, tmp_path, table).items():
        if name == "serve":
            continue
        res = cli(*args, "--format", "json")
        doc = json.loads(res.stdout)
        if name == "rescore --rows":
            assert doc["error"]["reason"] == "invalid_rows" and doc["join"]["joined"] == 8, doc["error"]
        else:
            assert res.exit_code == 0 and doc["ok"] is True, (name, res.output)
