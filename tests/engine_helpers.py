"""Inputs and commands for the row engine's checks (tests/test_engine*.py): every row-parallel command on the
same generated data, its output read back as bytes that must be equal across worker counts, engines and a
resumed kill."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from prep_helpers import make_row

MODEL = "org/model-a"


def write_inputs(tmp: Path, n: int = 600) -> dict[str, Path]:
    """A dataset (JSONL with duplicates far apart, invalid rows and a malformed line; a Parquet split), and
    rollouts of its questions (graded, ungraded, unreadable lines, rollouts to join by prompt)."""
    rows = [make_row(i, 4 + i % 7, template=i % 3 == 0) for i in range(n)]
    rows += [rows[5], rows[n // 2]]  # repeated rows, far from their first occurrence
    rows[17]["expected_answer"] = "Z"  # not an option
    rows[40]["options"] = "nope"
    lines = [json.dumps(r, ensure_ascii=i % 2 == 0) for i, r in enumerate(rows)]
    lines.insert(n // 3, "{broken")
    ds = tmp / "train.jsonl"
    ds.write_text("\n".join(lines) + "\n", encoding="utf-8")
    val = tmp / "validation.parquet"
    pq.write_table(pa.Table.from_pylist([make_row(i, 10) for i in range(5000, 5200)]), val, row_group_size=64)
    rng = random.Random(3)
    out = []
    for i in range(3 * n):
        q = rows[i % n]
        if i % 97 == 13:
            out.append('{"not json": ')
            continue
        said = rng.choice(["A", "B", "C", "D", "x"])
        r = {
            "responses_create_params": {**q["responses_create_params"], "model": MODEL if i % 5 else "org/b"},
            "response": {"output": [{"type": "message", "content": [{"type": "output_text",
                                                                      "text": f"… \\boxed{{{said}}}"}]}]},
            "uuid": q["uuid"],
            "reward": float(rng.random() < 0.5),
        }  # fmt: skip
        if i % 4:  # the others lack their options: joined with the dataset by prompt
            r["options"], r["expected_answer"] = q["options"], q["expected_answer"]
        out.append(json.dumps(r))
    rollouts = tmp / "rollouts.jsonl"
    rollouts.write_text("\n".join(out) + "\n", encoding="utf-8")
    return {"dataset": ds, "validation": val, "rollouts": rollouts, **_sources(tmp, n)}


def _sources(tmp: Path, n: int) -> dict[str, Path]:
    """Source rows for `convert` (question, choices, answer index): JSONL with blank, whitespace-only and
    malformed lines and rows without a gold answer; a Parquet split in small row groups."""
    rng = random.Random(5)
    lines = []
    for i in range(n):
        k = 3 + i % 4
        row = {"question": f"Question {i}: which one? " + "pad " * rng.randrange(40),
               "choices": [f"choice {j} of {i}" for j in range(k)], "answer": i % k if i % 89 else 9}  # fmt: skip
        lines.append(json.dumps(row))
        if i % 61 == 7:
            lines.append(" \t ")
        if i % 83 == 11:
            lines += ["", "{not json"]
    src = tmp / "src" / "train.jsonl"
    src.parent.mkdir()
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    pq_rows = [{"question": f"Validation {i}?", "choices": ["yes", "no", "maybe", "None of the above"],
                "answer": i % 4} for i in range(300)]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(pq_rows), tmp / "src" / "validation.parquet", row_group_size=40)
    return {"sources": tmp / "src"}


@dataclass(frozen=True)
class Command:
    """A command on the inputs: its arguments (the output under `out`), its output read back as bytes, and
    where its run keeps its work directory (beside its output, else in the cache)."""

    name: str
    args: Callable[[dict[str, Path], Path], list[str]]
    output: Callable[[Path, str], bytes]
    beside: str | None  # the output its work directory is beside; None: the user's cache


def _dir_bytes(out: Path, _stdout: str) -> bytes:
    """A prepared directory's files, the manifest without its creation time."""
    parts = []
    for p in sorted(out.iterdir()):
        data = p.read_bytes()
        if p.name == "manifest.json":
            doc = json.loads(data)
            doc.pop("created_at", None)
            data = json.dumps(doc, sort_keys=True).encode()
        parts.append(p.name.encode() + b"\0" + data)
    return b"\0\0".join(parts)


def _table_bytes(out: Path, _stdout: str) -> bytes:
    header, *rest = out.read_bytes().split(b"\n", 1)
    doc = json.loads(header)
    doc.pop("created_at", None)
    return json.dumps(doc, sort_keys=True).encode() + b"\n" + b"".join(rest)


def _stdout(_out: Path, stdout: str) -> bytes:
    return stdout.encode()


def _converted_bytes(out: Path, stdout: str) -> bytes:
    """convert's output directory and its rejects file, the run's output path made neutral."""
    data = _dir_bytes(out / "converted", stdout) + (out / "converted.rejects.jsonl").read_bytes()
    return data.replace(str(out).encode(), b"<out>")


COMMANDS = [
    Command(
        "validate",
        lambda i, o: ["validate", i["dataset"], i["validation"], "--max-findings", "0", "--format", "json"],
        _stdout,
        None,
    ),  # fmt: skip
    Command(
        "prepare",
        lambda i, o: [
            "prepare",
            i["dataset"],
            i["validation"],
            "-o",
            o / "prepared",
            "--on-invalid",
            "reject",
            "--repair-regexes",
        ],
        lambda o, s: _dir_bytes(o / "prepared", s),
        "prepared",
    ),  # fmt: skip
    Command(
        "rescore",
        lambda i, o: ["rescore", i["rollouts"], "--rows", i["dataset"], "-o", o / "r.jsonl"],
        lambda o, s: (o / "r.jsonl").read_bytes(),
        "r.jsonl",
    ),  # fmt: skip
    Command(
        "passrates",
        lambda i, o: [
            "passrates",
            i["rollouts"],
            "--rescore",
            "--rows",
            i["dataset"],
            "--on-invalid",
            "reject",
            "-o",
            o / "t.jsonl",
        ],
        lambda o, s: _table_bytes(o / "t.jsonl", s),
        "t.jsonl",
    ),  # fmt: skip
    Command(
        "audit",
        lambda i, o: [
            "audit",
            i["dataset"],
            i["validation"],
            "--rollouts",
            i["rollouts"],
            "--on-invalid",
            "reject",
            "--format",
            "json",
        ],
        _stdout,
        None,
    ),  # fmt: skip
    Command(
        "convert",
        lambda i, o: [
            "convert",
            i["sources"],
            "-o",
            o / "converted",
            "--permute",
            "2",
            "--template",
            "boxed:2",
            "--template",
            "answer_colon:1",
        ],  # fmt: skip
        _converted_bytes,
        "converted",
    ),
    Command(
        "convert-shuffle",
        lambda i, o: [
            "convert",
            i["sources"],
            "-o",
            o / "converted",
            "--shuffle",
            "--seed",
            "4",
            "--pin",
            "maybe",
        ],  # fmt: skip
        _converted_bytes,
        "converted",
    ),
    Command(
        "report",
        lambda i, o: [
            "report",
            i["dataset"],
            i["validation"],
            i["rollouts"],
            "-o",
            o / "page.html",
            "--format",
            "json",
        ],
        lambda o, s: s.encode() + b"\0" + (o / "page.html").read_bytes(),
        None,
    ),  # fmt: skip
]
