"""The grader version names a grading behaviour. Every golden grading case and every robust case this
repository holds (data/golden, tests/robust_corpus; the prompt-label cases through grade_request) is graded
and the outcomes hashed; the hash is recorded with the
version in data/golden/grader_fingerprint.json. A change of grading behaviour without a new GRADER_VERSION
fails here: a contract id would otherwise name two behaviours, and a preparation or pass-rate table made
under the old one would be taken as up to date.

After a deliberate change: bump GRADER_VERSION (mcqa_prep/grader/__init__.py), note it in docs/design/grading.md
("Grader versions"), and record the new hash printed by this test in the fingerprint file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from mcqa_prep.grader import GRADER_VERSION, grade_text
from mcqa_prep.grader.request import grade_request

REPO = Path(__file__).resolve().parents[1]
FINGERPRINT = REPO / "data" / "golden" / "grader_fingerprint.json"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _outcomes():
    """(case, mode, letter, status, rule) for every case, in a fixed order."""
    for name in ("grader_cases.jsonl", "output_regex_parity_cases.jsonl"):
        for c in _jsonl(REPO / "data" / "golden" / name):
            r = grade_text(
                c["text"], c["options"], c["expected_answer"], c["mode"], c.get("template_metadata")
            )
            yield c["id"], c["mode"], r.extracted_answer, r.status, r.rule
    robust = [
        REPO / "data" / "golden" / "robust_cases.jsonl",
        *sorted((REPO / "tests" / "robust_corpus").glob("*.jsonl")),
    ]
    for path in robust:
        for c in _jsonl(path):
            opts = [{k: v} for k, v in c["options"].items()]
            r = grade_text(
                c["text"],
                opts,
                c["want"] or "A",
                "robust",
                c.get("template_metadata"),
                prompt=c.get("prompt"),
                incomplete=c.get("incomplete"),
            )
            yield f"{path.name}:{c['id']}", "robust", r.extracted_answer, r.status, r.rule
    # option labels read from the rendered prompt (grade_request only; tests/test_robust_prompt_labels.py)
    from test_robust_prompt_labels import CASES, ROBUST, _request

    for c in CASES:
        if "response" in c:
            r, _ = grade_request(_request(c, c["response"]), ROBUST)
            yield f"prompt_labels:{c['id']}", "robust", r.extracted_answer, r.status, r.rule


def fingerprint() -> str:
    h = hashlib.sha256()
    for row in _outcomes():
        h.update(json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n")
    return h.hexdigest()


def test_grading_behaviour_changes_only_with_the_grader_version():
    recorded = json.loads(FINGERPRINT.read_text(encoding="utf-8"))
    now = fingerprint()
    if recorded["grader_version"] == GRADER_VERSION:
        assert now == recorded["sha256"], (
            f"grading behaviour changed under grader {GRADER_VERSION}: bump GRADER_VERSION and record "
            f'{{"grader_version": "<new>", "sha256": "{now}"}} in {FINGERPRINT.name}'
        )
    else:
        raise AssertionError(
            f"GRADER_VERSION is {GRADER_VERSION} but {FINGERPRINT.name} records {recorded['grader_version']}: "
            f'record {{"grader_version": "{GRADER_VERSION}", "sha256": "{now}"}}'
        )
