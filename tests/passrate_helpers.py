"""Rollout and table factories shared by the pass-rate tests (fixtures are generated, never checked in)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from conftest import read_jsonl
from prep_helpers import LETTERS, make_row, write_rows
from response_helpers import fake_response

from mcqa_prep.policy import canonical_json

# question index -> model -> outcomes of its rollouts (True = answered the gold letter).
# q0 never solved, q1..q3 partly, q4 and q5 always, q6 never; q7..q9 have no rollouts (no evidence).
DESIGN: dict[int, dict[str, list[bool]]] = {
    0: {"m1": [False] * 4},
    1: {"m1": [True, False, False, False]},
    2: {"m1": [True, True, False, False], "m2": [True, True, True, True]},
    3: {"m1": [True, True, True, False]},
    4: {"m1": [True] * 4, "m2": [False, False]},
    5: {"m1": [True] * 4},
    6: {"m1": [False] * 4},
}
QUESTIONS = 10
M1_RATE = {q: sum(v["m1"]) / len(v["m1"]) for q, v in DESIGN.items()}


def dataset(tmp: Path, name: str = "train.jsonl", questions: range = range(QUESTIONS)) -> Path:
    return write_rows(tmp / name, [make_row(i) for i in questions])


def rollout(i: int, correct: bool, model: str | None, *, uuid: bool = True, options: bool = True) -> dict:
    """A verify request / rollout for make_row(i): the model answers the gold letter or another one."""
    row = make_row(i)
    gold = row["expected_answer"]
    letter = gold if correct else next(c for c in LETTERS[:4] if c != gold)
    r: dict = {
        "responses_create_params": dict(row["responses_create_params"]),
        "response": fake_response(f"I pick \\boxed{{{letter}}}", id=f"resp-{i}"),
        "reward": 1.0 if correct else 0.0,
    }
    if model is not None:
        r["responses_create_params"]["model"] = model
    if options:
        r["options"] = row["options"]
        r["expected_answer"] = gold
    if uuid:
        r["uuid"] = row["uuid"]
    return r


def rollouts(tmp: Path, name: str = "rollouts.jsonl", design=None, **kw) -> Path:
    rows = [
        rollout(q, ok, model, **kw)
        for q, per_model in (design or DESIGN).items()
        for model, outcomes in per_model.items()
        for ok in outcomes
    ]
    return write_rows(tmp / name, rows)


def read_table_lines(path: Path) -> tuple[dict, list[bytes]]:
    lines = path.read_bytes().splitlines(keepends=True)
    return json.loads(lines[0]), lines[1:]


def forge_table(path: Path, header: dict, lines: list[bytes]) -> Path:
    """Write a table with a valid content hash (the documented recipe), whatever its entries: what a table
    written by another tool would look like. Used to reach the checks behind the hash."""
    hashed = {k: v for k, v in header.items() if k not in ("content_sha256", "created_at", "tool")}
    h = hashlib.sha256(canonical_json(hashed) + b"\n")
    for line in lines:
        h.update(line)
    header = {**header, "content_sha256": h.hexdigest()}
    path.write_bytes(json.dumps(header).encode() + b"\n" + b"".join(lines))
    return path


def entry(key: str, model: str, samples: int, passes: int, *, v1: bool = False, v2: bool = False) -> bytes:
    """One entry line (passrates.v3 unless v1 or v2): every rollout answered, the posterior a plausible one,
    one variant of unknown prompt and gold, k unknown."""
    doc = {
        "key": key,
        "mean_reward": passes / samples,
        "model": model,
        "pass_rate": passes / samples,
        "passes": passes,
        "samples": samples,
    }
    if not v1:
        doc |= {
            "rollouts": samples,
            "unanswered": 0,
            "votes": {
                "pass": [passes] if passes else [],
                "fail": [samples - passes] if samples > passes else [],
            },
            "posterior_mean": 0.5,
            "posterior_lower": 0.25,
            "posterior_upper": 0.75,
            "bucket": 2,
        }
    if not v1 and not v2:
        doc |= {
            "k": None,
            "variants": [{"prompt": None, "gold": None, "samples": samples, "passes": passes}],
            "consistent_rate": passes / samples,
            "consistent_mean": 0.5,
            "consistent_lower": 0.25,
            "consistent_upper": 0.75,
            "corrected_mean": None,
            "corrected_lower": None,
            "corrected_upper": None,
            "at_chance": None,
            "corrected_bucket": None,
        }
    return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode() + b"\n"


V3_HEADER = ("consistency",)
V3_ENTRY = ("k", "variants", "consistent_rate", "consistent_mean", "consistent_lower", "consistent_upper")
V3_ENTRY += ("corrected_mean", "corrected_lower", "corrected_upper", "at_chance", "corrected_bucket")
V2_HEADER = ("counting", "posterior", "metrics", *V3_HEADER)
V2_COUNTS = ("unanswered_only", "answers_unknown")
V1_ENTRY = ("key", "mean_reward", "model", "pass_rate", "passes", "samples")


def to_v1(table: Path, out: Path) -> Path:
    """The same table as passrates.v1 wrote it (what an older mcqa-prep left behind): no counting rule, no
    posterior, no metrics, entries of six fields."""
    header, lines = read_table_lines(table)
    header = {k: v for k, v in header.items() if k not in V2_HEADER}
    header["table_schema"] = "passrates.v1"
    header["counts"] = {k: v for k, v in header["counts"].items() if k not in V2_COUNTS}
    header["grading"] = "input" if header["grading"] == "nemo_gym_profile" else header["grading"]
    v1_lines = []
    for line in lines:
        d = json.loads(line)
        v1_lines.append(json.dumps({k: d[k] for k in V1_ENTRY}, separators=(",", ":")).encode() + b"\n")
    return forge_table(out, header, v1_lines)


def to_v2(table: Path, out: Path) -> Path:
    """The same table as passrates.v2 wrote it: no fields across variants."""
    header, lines = read_table_lines(table)
    header = {k: v for k, v in header.items() if k not in V3_HEADER}
    header["table_schema"] = "passrates.v2"
    v2_lines = []
    for line in lines:
        d = json.loads(line)
        keep = {k: v for k, v in d.items() if k not in V3_ENTRY}
        v2_lines.append(json.dumps(keep, separators=(",", ":"), sort_keys=True).encode() + b"\n")
    return forge_table(out, header, v2_lines)


def make_setup(cli, tmp_path: Path) -> tuple[Path, Path]:
    """A 10-question dataset and a table of DESIGN's rollouts (m1 on q0..q6, m2 on q2 and q4)."""
    ds = dataset(tmp_path)
    table = tmp_path / "t.passrates.jsonl"
    res = cli("passrates", "--key-by", "uuid", rollouts(tmp_path), "--rescore", "-o", table)
    assert res.exit_code == 0, res.output
    return ds, table


def kept(out: Path) -> set[int]:
    """Question numbers of the rows written to the train shards of a preparation."""
    rows = [r for p in sorted(out.glob("train-*.jsonl")) for r in read_jsonl(p)]
    return {int(r["uuid"].removeprefix("row-")) for r in rows}


def json_doc(res) -> dict:
    """The one JSON document a command printed on stdout."""
    assert res.stdout.count('"ok"') == 1, res.stdout
    return json.loads(res.stdout)
