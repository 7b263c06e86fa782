"""Every command that takes data files reads the same files of a directory with the same splits (issue 22).

The tricky paths of data/golden/split_paths.jsonl (hidden files, nested split directories, sharded names,
case, dev/val/eval/valid/testing, keywords inside words) are laid out in one directory and fed to validate,
report, prepare, convert, rescore --rows, passrates (rollouts and --rows) and curriculum --rows. Each command's own output says
which files it read and, where it records one, the split of each; every answer must be the golden one
(null: not data, never read). JSONL and Parquet are every command's; CSV and .json only convert's.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from prep_helpers import make_row
from test_split_rule import CASES

from mcqa_prep.cli import main
from mcqa_prep.io.paths import CONVERT_KINDS, data_kind

ROW_COMMANDS = (
    "validate",
    "report",
    "prepare",
    "rescore --rows",
    "passrates",
    "passrates --rows",
    "curriculum --rows",
)


def _row(i: int, path: str) -> dict:
    row = make_row(i)
    row["uuid"] = path
    return row


def _source(i: int) -> dict:  # the mmlu preset's shape, for convert
    return {"question": f"Question {i}?", "choices": ["w", "x", "y", "z"], "answer": i % 4}


def _rollout(i: int, path: str) -> dict:
    row = _row(i, path)
    text = f"\\boxed{{{row['expected_answer']}}}"
    return {
        "responses_create_params": row["responses_create_params"],
        "response": {
            "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
            ]
        },
        "uuid": path,
    }


def lay_out(root: Path, content) -> Path:
    """Every golden path under `root` (the ones that are not data too), holding one row made by content."""
    for i, case in enumerate(CASES):
        p = root / case["path"]
        p.parent.mkdir(parents=True, exist_ok=True)
        row = content(i, case["path"])
        kind = data_kind(p.name, CONVERT_KINDS)
        if kind == "parquet":
            pq.write_table(pa.Table.from_pylist([row]), p)
        elif kind == "csv":
            with open(p, "w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh)
                w.writerow(list(row))
                w.writerow([json.dumps(v) if isinstance(v, list) else v for v in row.values()])
        elif p.suffix.lower() == ".json":
            p.write_text(json.dumps([row]), encoding="utf-8")
        else:
            p.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return root


def _run(*args, exit_code: int = 0) -> dict:
    res = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    doc = json.loads(res.stdout)
    assert res.exit_code == exit_code and doc["ok"] == (exit_code == 0), res.stdout
    return doc


def _rel(path: str, root: Path) -> str:
    return Path(path).resolve().relative_to(root.resolve()).as_posix()


@pytest.fixture(scope="module")
def answers(tmp_path_factory) -> dict[str, dict[str, str | None]]:
    """command -> {path read: its split, or None where the command reads the file but records no split}."""
    tmp = tmp_path_factory.mktemp("agree")
    rows = lay_out(tmp / "rows", _row)
    got: dict[str, dict[str, str | None]] = {}

    doc = _run("validate", rows, "--format", "json")
    got["validate"] = {_rel(i["path"], rows): i["split"] for i in doc["summary"]["inputs"]}

    doc = _run("report", rows, "-o", tmp / "report.html", "--format", "json")
    got["report"] = {_rel(i["path"], rows): i["split"] for i in doc["inputs"]}

    _run("prepare", rows, "-o", tmp / "prepared", "--format", "json")
    manifest = json.loads((tmp / "prepared" / "manifest.json").read_text())
    got["prepare"] = {}
    for f in manifest["files"]:
        if f["kind"] == "shard":
            for line in (tmp / "prepared" / f["path"]).read_text().splitlines():
                got["prepare"][json.loads(line)["uuid"]] = f["split"]

    sources = lay_out(tmp / "sources", lambda i, _: _source(i))
    _run("convert", sources, "-o", tmp / "converted", "--preset", "mmlu", "--format", "json")
    got["convert"] = {}
    for out in sorted((tmp / "converted").glob("*.jsonl")):
        for line in out.read_text().splitlines():
            src = json.loads(line)["metadata"]["source"]
            got["convert"][src["file"]] = src["split"]

    rollouts = lay_out(tmp / "rollouts", _rollout)  # no options: each needs its dataset row
    one_file = (
        tmp / "rollouts.jsonl"
    )  # a rollout for every path: the ones of files that are not data find no row
    one_file.write_text("".join(json.dumps(_rollout(i, c["path"])) + "\n" for i, c in enumerate(CASES)))
    out = tmp / "rescored.jsonl"
    doc = _run("rescore", one_file, "--rows", rows, "-o", out, "--format", "json", exit_code=1)
    assert doc["error"]["reason"] == "invalid_rows"
    rescored = [json.loads(line) for line in out.read_text().splitlines()]
    joined = {r["uuid"] for r in rescored if r["metadata"]["grading"]["status"] != "invalid_row"}
    got["rescore --rows"] = dict.fromkeys(joined)
    assert doc["join"]["dataset_rows_read"] == len(joined)

    doc = _run(
        "passrates",
        rollouts,
        "--rows",
        rows,
        "--rescore",
        "--model",
        "m",
        "-o",
        tmp / "rates.jsonl",
        "--format",
        "json",
    )
    header = json.loads((tmp / "rates.jsonl").read_text().splitlines()[0])
    got["passrates"] = {i["name"]: None for i in header["inputs"]}
    got["passrates --rows"] = {i["name"]: None for i in header["join_inputs"]}
    doc = _run("curriculum", tmp / "rates.jsonl", "--rows", rows, "-o", tmp / "s.jsonl", "--format", "json")
    got["curriculum --rows"] = {i["name"]: None for i in doc["header"]["rows"]["inputs"]}
    return got


@pytest.mark.parametrize("case", CASES, ids=[c["path"] for c in CASES])
def test_every_command_reads_the_path_as_the_golden_split_says(case, answers):
    path, split = case["path"], case["split"]
    row_data = split is not None and data_kind(path) is not None
    convert_data = split is not None and data_kind(path, CONVERT_KINDS) is not None
    for command in ("validate", "report", "prepare"):
        assert answers[command].get(path, "not read") == (split if row_data else "not read"), command
    for command in ("rescore --rows", "passrates", "passrates --rows", "curriculum --rows"):
        assert (path in answers[command]) == row_data, command
    assert answers["convert"].get(path, "not read") == (split if convert_data else "not read")


def test_every_command_reads_the_same_file_set(answers):
    row_files = {c["path"] for c in CASES if c["split"] is not None and data_kind(c["path"]) is not None}
    for command in ROW_COMMANDS:
        assert set(answers[command]) == row_files, command
    convert_files = {
        c["path"] for c in CASES if c["split"] is not None and data_kind(c["path"], CONVERT_KINDS)
    }
    assert set(answers["convert"]) == convert_files
    assert convert_files - row_files == {"mmlu_dev.csv"}
