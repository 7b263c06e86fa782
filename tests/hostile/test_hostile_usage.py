"""Usage errors, alike in every command: a missing input path, a bad option value, an output equal to an
input or inside an input directory. Each is exit 2 with one line on stderr (and one JSON document with
--format json), refused before anything is read or written."""

from __future__ import annotations

import shutil

import pytest

from . import build
from .kit import USAGE, assert_clean, check, run

# id -> argv with {placeholders}: {missing} a path that does not exist, {dir} an input directory holding
# train.jsonl, {train} / {rollouts} / {rescored} / {arc} writable copies of the sample files, {out} a fresh path
CASES = {
    "validate-missing": "validate {missing}",
    "validate-bad-max-findings": "validate {train} --max-findings -1",
    "validate-bad-workers": "validate {train} --workers 0",
    "validate-bad-regex-timeout": "validate {train} --regex-timeout 0",
    "validate-stdin-twice": "validate - -",
    "prepare-missing": "prepare {missing} -o {out}",
    "prepare-output-inside-input": "prepare {dir} -o {dir}/prepared",
    "prepare-output-is-input-file": "prepare {train} -o {train}",
    "prepare-bad-shard-rows": "prepare {train} -o {out} --shard-rows 0",
    "prepare-bad-split-name": "prepare {train} -o {out} --split ../x",
    "prepare-bad-on-invalid": "prepare {train} -o {out} --on-invalid maybe",
    "prepare-bad-keep-pass-rate": "prepare {train} -o {out} --keep-pass-rate 2:1",
    "prepare-stdin": "prepare - -o {out}",
    "verify-missing": "verify {missing}",
    "verify-a-file": "verify {train}",
    "contract-missing-policy": "contract --policy {missing}",
    "contract-bad-mode": "contract --grading-mode-override nope",
    "grade-bad-mode": "grade x --mode nope",
    "grade-bad-option": "grade x --option nonsense",
    "grade-option-twice": "grade x --option A=1 --option A=2",
    "rescore-missing": "rescore {missing} -o {out}",
    "rescore-output-is-input": "rescore {rollouts} -o {rollouts}",
    "rescore-output-is-rows": "rescore {rollouts} --rows {train} -o {train}",
    "rescore-output-inside-rows-dir": "rescore {rollouts} --rows {dir} -o {dir}/r.jsonl",
    "rescore-missing-rows": "rescore {rollouts} --rows {missing} -o {out}",
    "rescore-bad-examples": "rescore {rollouts} -o {out} --examples -1",
    "rescore-bad-workers": "rescore {rollouts} -o {out} --workers -1",
    "summarize-missing": "summarize {missing}",
    "summarize-a-directory": "summarize {dir}",
    "convert-missing": "convert {missing} -o {out}",
    "convert-output-is-input": "convert {arc} -o {arc}",
    "convert-rejects-is-input": "convert {arc} -o {out} --rejects {arc}",
    "convert-output-is-rejects": "convert {arc} -o {out} --rejects {out}",
    "convert-output-inside-input": "convert {dir} -o {dir}/converted.jsonl",
    "convert-stdout": "convert {arc} -o -",
    "convert-bad-template": "convert {arc} -o {out} --template nope:1",
    "convert-bad-map": "convert {arc} -o {out} --map nonsense",
    "passrates-missing": "passrates {missing} -o {out}",
    "passrates-output-is-input": "passrates {rescored} -o {rescored}",
    "passrates-output-inside-input": "passrates {dir} -o {dir}/t.jsonl",
    "passrates-bad-key-by": "passrates {rescored} -o {out} --key-by nope",
    "report-missing": "report {missing} -o {out}",
    "report-output-is-input": "report {train} -o {train}",
    "report-output-inside-input": "report {dir} -o {dir}/r.html",
    "report-page-and-json-on-stdout": "report {train} -o -",
    "report-bad-examples": "report {train} -o {out} --examples -1",
    "passrates-bad-no-answer": "passrates {rescored} -o {out} --no-answer maybe",
    "passrates-profile-and-rescore": "passrates {rescored} -o {out} --nemo-gym-profile --rescore",
    "passrates-bad-credible-level": "passrates {rescored} -o {out} --credible-level 1",
    "prepare-keep-on-without-range": "prepare {train} -o {out} --pass-rates {rescored} --keep-on lower",
    "report-by-without-pass-rates": "report {train} -o {out} --by subject",
    "curriculum-missing-table": "curriculum {missing} --rows {train} -o {out}",
    "curriculum-missing-rows": "curriculum {rescored} --rows {missing} -o {out}",
    "curriculum-output-is-rows": "curriculum {rescored} --rows {train} -o {train}",
    "curriculum-output-inside-rows-dir": "curriculum {rescored} --rows {dir} -o {dir}/s.jsonl",
    "curriculum-bad-schedule": "curriculum {rescored} --rows {train} -o {out} --schedule nope",
    "curriculum-ordered-without-prompts": "curriculum {rescored} --rows {train} -o {out} --ordered-out {out}.o",
    "curriculum-bad-ratio": "curriculum {rescored} --rows {train} -o {out} --domain-ratio x",
    "curriculum-rows-out-is-output": "curriculum {rescored} --rows {train} -o {out} --rows-out {out}",
    "audit-missing": "audit {missing}",
    "audit-missing-bench": "audit {train} --against {missing}",
    "audit-output-is-input": "audit {train} -o {train}",
    "audit-output-inside-input": "audit {dir} -o {dir}/audit.json",
    "audit-bad-similarity": "audit {train} --contamination-similarity 2",
    "audit-bad-key-by": "audit {train} --key-by nope",
    "audit-stdin": "audit -",
    "pull-bad-repo": "pull 'not a repo' --to {out} --offline",
    "pull-offline-update": "pull --to {out} --offline --update",
    "pull-offline-force": "pull --to {out} --offline --force-download",
    "serve-missing-prepared": "serve --prepared {missing}",
    "serve-prepared-is-a-file": "serve --prepared {train}",
    "serve-bad-port": "serve --port 70000",
    "serve-bad-workers": "serve --workers 0",
    "serve-bad-on-mismatch": "serve --on-mismatch maybe",
    "serve-bad-max-body": "serve --max-body-mb 0",
    "serve-bad-policy": "serve --policy {missing}",
    "gym-component-missing-prepared": "gym-component {out} --prepared {missing}",
    "gym-component-bad-mode": "gym-component {out} --grading-mode-default nope",
}

COVERS = {}
for _args in CASES.values():
    COVERS[_args.split()[0]] = COVERS.get(_args.split()[0], 0) + 1


@pytest.fixture
def places(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    shutil.copyfile(build.TRAIN, d / "train.jsonl")
    files = {
        "train": build.TRAIN,
        "rollouts": build.ROLLOUTS,
        "arc": None,
        "rescored": build.ROLLOUTS,
    }
    out = {"missing": tmp_path / "nope.jsonl", "dir": d, "out": tmp_path / "out"}
    for name, src in files.items():
        dst = tmp_path / f"{name}.jsonl"
        dst.write_bytes(src.read_bytes() if src else build.jsonl(build.arc_rows(4)))
        out[name] = dst
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_usage_error(places, tmp_path, case):
    import shlex

    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    argv = [a.format(**places) for a in shlex.split(CASES[case])]
    res = run([*argv, "--format", "json"], input=b"")
    doc = check(res, USAGE)
    assert doc["error"]["exit_code"] == USAGE
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr  # one line, never click's usage block
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before, "a usage error wrote"
    assert not places["out"].exists()
    assert_clean(tmp_path, places["dir"])
