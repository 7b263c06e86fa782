"""One truth per figure: on rollouts that rescore cannot all grade (unjoinable rows, unreadable lines, rows
without a response, a prompt whose dataset rows disagree on the gold), rescore, summarize, report and
passrates give the same graded / invalid / recorded / changed counts and the same mean reward
(mcqa_prep/counts.py), and no row that could not be graded is ever a reward change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from . import build
from .kit import FAILURE, OK, check, run

VARIANTS = ["unjoinable", "unreadable_lines", "no_response", "two_golds"]
COVERS = {
    "rescore": len(VARIANTS) + 1,
    "summarize": len(VARIANTS),
    "report": len(VARIANTS),
    "passrates": len(VARIANTS) + 1,
}


def _inputs(tmp: Path, variant: str) -> tuple[Path, Path]:
    """(rollouts, dataset rows) for one variant: the sample's, broken the variant's way."""
    rows = [json.loads(x) for x in build.ROLLOUTS.read_text().splitlines() if x.strip()]
    dataset = build.TRAIN.read_bytes()
    lines = [json.dumps(r) for r in rows]
    if variant == "unreadable_lines":
        lines[2] = lines[2][:40]  # cut mid-object
        lines.insert(5, "not json at all")
    elif variant == "no_response":
        for k in (1, 4):
            r = json.loads(lines[k])
            del r["response"]
            lines[k] = json.dumps(r)
    elif variant == "two_golds":
        first = json.loads(dataset.splitlines()[0])
        other = {**first, "uuid": "other", "expected_answer": "A" if first["expected_answer"] != "A" else "B"}
        dataset += (json.dumps(other) + "\n").encode()
        for k, line in enumerate(lines):  # rollouts that carry no gold of their own take the dataset's
            r = json.loads(line)
            r.pop("expected_answer", None)
            lines[k] = json.dumps(r)
    ro = build.write(tmp / "rollouts.jsonl", ("\n".join(lines) + "\n").encode())
    ds = build.write(tmp / "train.jsonl", dataset)
    return ro, ds


def _figures(tmp: Path, rescored: Path, doc: dict) -> dict[str, tuple]:
    r = doc
    changed = r["agreement"]["0->1"]["count"] + r["agreement"]["1->0"]["count"]
    out = {
        "rescore": (
            r["graded"],
            r["invalid_rows"]["count"],
            r["agreement"]["recorded"],
            changed,
            r["mean_reward"],
        )
    }
    s = check(run(["summarize", rescored, "--format", "json"]), (OK, FAILURE))
    out["summarize"] = (s["graded"], s["invalid"], s["recorded"], s["changed"], s["accuracy"])
    rep = check(run(["report", rescored, "-o", tmp / "page.html", "--format", "json", "-q"]), OK)
    (m,) = [x["summary"] for x in rep["sections"] if x["kind"] == "rescored"]
    out["report"] = (m["graded"], m["invalid"], m["recorded"], m["changed"], m["mean_reward"])
    table = tmp / "t.passrates.jsonl"
    p = check(run(["passrates", rescored, "-o", table, "--on-invalid", "reject", "--format", "json"]), OK)
    entries = [json.loads(x) for x in table.read_text().splitlines()[1:]]
    n = sum(e["samples"] for e in entries)
    mean = sum(e["mean_reward"] * e["samples"] for e in entries) / n if n else None
    out["passrates"] = (p["counts"]["used"], p["counts"]["invalid"], None, None, mean)
    return out


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_commands_agree_on_rows_rescore_could_not_grade(tmp_path, variant):
    ro, ds = _inputs(tmp_path, variant)
    rescored = tmp_path / "rescored.jsonl"
    doc = check(run(["rescore", ro, "--rows", ds, "-o", rescored, "--format", "json", "-q"]), FAILURE)
    assert doc["invalid_rows"]["count"] >= 1, doc["invalid_rows"]
    figures = _figures(tmp_path, rescored, doc)
    want = figures["rescore"]
    for command, got in figures.items():
        for name, a, b in zip(("graded", "invalid", "recorded", "changed", "mean"), got, want, strict=True):
            if a is not None:
                assert a == pytest.approx(b, abs=5e-5), (variant, command, name, a, b)
    for line in rescored.read_text().splitlines():
        g = json.loads(line)["metadata"]["grading"]
        assert not (g["status"] == "invalid_row" and g.get("changed")), g


def test_a_prompt_with_two_golds_is_refused_by_rescore_and_passrates(tmp_path):
    ro, ds = _inputs(tmp_path, "two_golds")
    doc = check(
        run(["rescore", ro, "--rows", ds, "-o", tmp_path / "r.jsonl", "--format", "json", "-q"]), FAILURE
    )
    assert doc["invalid_rows"]["by_kind"].get("ambiguous_join") == 1
    assert doc["join"]["dataset_prompt_conflicts"]["count"] == 1
    p = check(
        run(["passrates", ro, "--rescore", "--rows", ds, "-o", tmp_path / "t.jsonl", "--format", "json"]),
        (OK, FAILURE),
    )
    invalid = p["error"] if not p["ok"] else p
    assert "ambiguous_join" in json.dumps(invalid)
