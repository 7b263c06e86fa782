"""Data builders for the hostile suite: small valid inputs for every command, built from the embedded sample
(the data the project ships) or written here, so that every hostile try starts from bytes that pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .kit import check, run

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"
TRAIN = SAMPLE / "train.jsonl"
VALIDATION = SAMPLE / "validation.parquet"
ROLLOUTS = SAMPLE / "rollouts.jsonl"
LETTERS = "ABCDEFGHIJ"


def jsonl(rows: list[Any]) -> bytes:
    return b"".join(json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n" for r in rows)


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def mcqa_row(i: int, n_options: int = 4) -> dict[str, Any]:
    letters = LETTERS[:n_options]
    lines = "\n".join(f"{c}: option {c} of question {i}" for c in letters)
    return {
        "responses_create_params": {
            "input": [{"role": "user", "content": f"Question {i}? Put the letter in \\boxed{{}}.\n{lines}"}]
        },
        "options": [{c: f"option {c} of question {i}"} for c in letters],
        "expected_answer": letters[i % n_options],
        "uuid": f"row-{i:06d}",
    }


def rollout(row: dict[str, Any], text: str, reward: float | None = None) -> dict[str, Any]:
    out = dict(row)
    out["response"] = {
        "output": [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
        ]
    }
    if reward is not None:
        out["reward"] = reward
    return out


def arc_rows(n: int) -> list[dict[str, Any]]:
    """ARC's layout (choices {text, label}, answerKey), the shape `convert` detects by itself."""
    return [
        {
            "id": f"q{i}",
            "question": f"Which one is item {i}?",
            "choices": {
                "text": [f"item {i}", f"thing {i}", f"other {i}", f"none {i}"],
                "label": list("ABCD"),
            },
            "answerKey": "ABCD"[i % 4],
        }
        for i in range(n)
    ]


def parquet_bytes(rows: list[dict[str, Any]], path: Path) -> bytes:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path.read_bytes()


def sample_rows() -> list[dict[str, Any]]:
    return [json.loads(x) for x in TRAIN.read_text(encoding="utf-8").splitlines() if x.strip()]


def rescored(tmp: Path) -> Path:
    """The embedded rollouts rescored against their dataset rows: input for summarize and passrates."""
    out = tmp / "rescored.jsonl"
    check(run(["rescore", ROLLOUTS, "--rows", TRAIN, "--rows", VALIDATION, "-o", out, "-q"]), 0)
    return out


def prepared(tmp: Path, *extra: str) -> Path:
    """The embedded sample prepared (train from JSONL, validation from Parquet)."""
    out = tmp / "prepared"
    check(run(["prepare", TRAIN, VALIDATION, "-o", out, "-q", *extra]), 0)
    return out


def pulled(tmp: Path, files: dict[str, bytes] | None = None) -> Path:
    """A pulled directory written by hand (what `pull` leaves): the sample's files (or `files`) and a lock."""
    from pull_helpers import write_pulled

    if files is None:
        files = {
            "data/train-00000-of-00001.jsonl": TRAIN.read_bytes(),
            "data/validation-00000-of-00001.parquet": VALIDATION.read_bytes(),
        }
    return write_pulled(tmp / "pulled", files)
