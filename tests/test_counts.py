"""One truth per figure: rescore, summarize, report and passrates give the same scored / graded / invalid /
recorded / changed counts and the same mean reward for the same rows (mcqa_prep/counts.py defines them).

The file: the sample rollouts rescored with only the train split as --rows, so the four validation rollouts
cannot be joined (invalid_row, with a recorded reward of 1 among them), plus one recorded reward this
grader changes. Before counts.py, summarize said accuracy 0.583 over 12 rows where rescore said mean reward
0.875 over 8 graded, and an unjoinable row carried metadata.grading.changed = true."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcqa_prep.cli import main
from mcqa_prep.counts import Tally, is_change, is_graded

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"


def _json(args: list) -> dict:
    res = CliRunner().invoke(main, [str(a) for a in (*args, "--format", "json")])
    assert res.exit_code in (0, 1), res.output
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def rescored(tmp_path_factory) -> tuple[Path, dict]:
    d = tmp_path_factory.mktemp("counts")
    rows = [json.loads(x) for x in (SAMPLE / "rollouts.jsonl").read_text().splitlines() if x.strip()]
    rows[0]["reward"] = 1.0 - float(rows[0].get("reward") or 0.0)  # a recorded reward this grader changes
    src = d / "rollouts.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = d / "rescored.jsonl"
    doc = _json(["rescore", src, "--rows", SAMPLE / "train.jsonl", "-o", out, "-q"])
    return out, doc


def test_the_four_commands_give_the_same_figures(rescored, tmp_path):
    out, r = rescored
    invalid = r["invalid_rows"]["count"]
    changed = r["agreement"]["0->1"]["count"] + r["agreement"]["1->0"]["count"]
    figures = {
        "rescore": (r["rows"], r["graded"], invalid, r["agreement"]["recorded"], changed, r["mean_reward"]),
    }
    s = _json(["summarize", out])
    figures["summarize"] = (
        s["scored"],
        s["graded"],
        s["invalid"],
        s["recorded"],
        s["changed"],
        s["accuracy"],
    )
    rep = _json(["report", out, "-o", tmp_path / "page.html", "-q"])
    (sec,) = [x for x in rep["sections"] if x["kind"] == "rescored"]
    m = sec["summary"]
    figures["report"] = (m["rows"], m["graded"], m["invalid"], m["recorded"], m["changed"], m["mean_reward"])
    p = _json(["passrates", out, "-o", tmp_path / "t.passrates.jsonl", "--on-invalid", "reject"])
    entries = [json.loads(x) for x in (tmp_path / "t.passrates.jsonl").read_text().splitlines()[1:]]
    samples = sum(e["samples"] for e in entries)
    mean = sum(e["mean_reward"] * e["samples"] for e in entries) / samples
    c = p["counts"]
    figures["passrates"] = (c["rollouts"], c["used"], c["invalid"], None, None, mean)

    assert invalid == 4 and changed >= 1 and r["graded"] == 8  # the case the issue reported
    want = figures["rescore"]
    for command, got in figures.items():
        for name, a, b in zip(
            ("rows", "graded", "invalid", "recorded", "changed", "mean"), got, want, strict=True
        ):
            if a is None:
                continue
            assert a == pytest.approx(b, abs=5e-5), (command, name, a, b)


def test_an_invalid_row_is_never_a_reward_change(rescored):
    out, _ = rescored
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    invalid = [x["metadata"]["grading"] for x in rows if x["metadata"]["grading"]["status"] == "invalid_row"]
    assert len(invalid) == 4
    assert any(g.get("previous_reward") == 1.0 for g in invalid)  # recorded 1, now reward 0: not a change
    assert not any(g.get("changed") for g in invalid)


def test_the_definitions():
    t = Tally()
    for status, reward, previous in [
        ("ok", 1.0, 1.0),
        ("ok", 0.0, 1.0),
        ("no_answer", 0.0, None),
        ("invalid_row", 0.0, 1.0),
        ("invalid_row", 0.0, None),
    ]:
        t.add(status, reward, previous)
    assert (t.scored, t.graded, t.invalid, t.recorded, t.changed) == (5, 3, 2, 2, 1)
    assert t.mean_reward == pytest.approx(1 / 3)
    assert not is_graded("invalid_row") and is_graded("regex_timeout")
    assert (
        not is_change("invalid_row", 1.0, 0.0)
        and is_change("ok", 1.0, 0.0)
        and not is_change("ok", None, 0.0)
    )
