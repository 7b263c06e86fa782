"""Row factories and checks shared by the prepare/verify tests."""

from __future__ import annotations

import json
from pathlib import Path

LETTERS = "ABCDEFGHIJ"


def make_row(i: int, n_options: int = 4, *, template: bool = False, extra: dict | None = None) -> dict:
    letters = LETTERS[:n_options]
    lines = "\n".join(f"{c}: option {c} of question {i}" for c in letters)
    row: dict = {
        "responses_create_params": {
            "input": [{"role": "user", "content": f"Question {i}? Put the letter in \\boxed{{}}.\n{lines}"}]
        },
        "options": [{c: f"option {c} of question {i}"} for c in letters],
        "expected_answer": letters[i % n_options],
        "uuid": f"row-{i:06d}",
    }
    if template:
        # reads the prompt's own format, letters of the options only (validate's audit finds nothing)
        row["template_metadata"] = {"template_id": "t1", "output_regex": r"\\boxed\{([A-J])\}"}
    if extra:
        row.update(extra)
    return row


def write_rows(path: Path, rows) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n")
    return path


def mtimes(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in sorted(directory.iterdir())}
