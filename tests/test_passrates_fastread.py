"""passrates' fast chunk reading (passrates/fastread.py) against reading the same chunk row by row
(Measurement.add): the same pools, cells (in the same order), variants and counts when it reads a chunk, and
None (row by row instead) for every chunk it cannot read exactly so."""

from __future__ import annotations

import json
import random

import pytest

from mcqa_prep.parallel import Chunk
from mcqa_prep.passrates.cells import PassPool
from mcqa_prep.passrates.fastread import fast_part
from mcqa_prep.passrates.measure import Measurement
from mcqa_prep.passrates.reading import read_chunk

CID = "sha256:" + "ab" * 32
GRADING = {"status": "ok", "contract": CID, "grader_version": "1.11.0"}


def _rollout(q: int, model: str, ok: bool, rng: random.Random, **extra) -> dict:
    r = {
        "responses_create_params": {"input": [{"role": "user", "content": f"Question {q}?"}], "model": model},
        "uuid": f"q{q}",
        "reward": 1.0 if ok else 0.0,
        "extracted_answer": "A" if ok else rng.choice(["B", "C", None, ""]),
        "metadata": {"grading": GRADING},
        "response": {"output": [{"type": "message", "content": [{"text": "x" * rng.randrange(5)}]}]},
    }
    r.update(extra)
    return r


def _rows(seed: int = 0) -> list[dict]:
    """Rollouts of many shapes the fast path reads: options and gold (several orders of one question),
    integer and absent uuids (keyed by the option-order link, or by prompt), unknown and empty answers,
    integer rewards, other key orders and spacing, non-ASCII prompts, list-of-parts contents."""
    rng = random.Random(seed)
    rows: list[dict] = []
    for q in range(30):
        for model in ("m-a", "m-b"):
            for _ in range(rng.randrange(1, 6)):
                r = _rollout(q, model, rng.random() < 0.5, rng)
                kind = q % 7
                if kind == 1:
                    gold = rng.choice("ABCD")
                    r["options"] = [{k: f"opt {k}"} for k in "ABCD"]
                    r["expected_answer"] = gold
                    r["responses_create_params"]["input"][0]["content"] += f" (gold {gold})"
                elif kind == 2:
                    r["uuid"] = 1000 + q
                    r["reward"] = int(r["reward"])
                elif kind == 3:
                    del r["uuid"]
                    if rng.random() < 0.5:
                        r["metadata"] = {
                            "grading": GRADING,
                            "mcqa_prep": {"permutation": {"question": f"uuid:perm{q}", "order": "x"}},
                        }
                elif kind == 4:
                    del r["extracted_answer"]
                elif kind == 5:
                    r["responses_create_params"]["input"][0]["content"] = f"Frage {q}: Größe? ✓"
                elif kind == 6:
                    r["responses_create_params"]["input"] = [
                        {"role": "system", "content": "Be brief."},
                        {"role": "user", "content": [{"type": "input_text", "text": f"Q{q}"}]},
                    ]
                rows.append(r)
    return rows


def _chunk(lines: list[bytes]) -> Chunk:
    return Chunk(0, "rollouts.jsonl", None, 1, data=b"".join(ln + b"\n" for ln in lines))


def _lines(rows: list[dict], seed: int = 0) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for r in rows:
        if rng.random() < 0.2:  # another key order and JSON's spacing: the same row
            r = dict(reversed(list(r.items())))
            out.append(json.dumps(r, ensure_ascii=False).encode())
        else:
            out.append(json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode())
    return out


def _by_rows(chunk: Chunk, template: Measurement) -> Measurement:
    part = template.fresh()
    for rec in chunk.rows():
        part.add(rec)
    return part


def _state(m: Measurement) -> dict:
    return {
        "rows": m.rows,
        "tallies": [t.to_dict() for t in (m.invalid, m.no_contract, m.no_model)],
        "pools": {
            cid: (p.grader_version, p.rows, p.unknown, list(p.cells.items()), list(p.variants.cells.items()))
            for cid, p in m.pools.items()
        },
    }


@pytest.mark.parametrize("key_by", ["uuid", "prompt"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fast_reading_is_reading_row_by_row(key_by, seed):
    template = Measurement(None, None, None, key_by)
    chunk = _chunk(_lines(_rows(seed), seed))
    fast = fast_part(chunk, template)
    assert fast is not None  # every line here is one the fast path reads
    assert _state(fast) == _state(_by_rows(chunk, template))
    assert fast.pools[CID].variants.cells  # the variants were counted too


def _edited(kind: str) -> list[bytes]:
    lines = _lines(_rows())
    row = json.loads(lines[5])
    if kind == "fractional_reward":
        row["reward"] = 0.5
    elif kind == "bad_reward":
        row["reward"] = True
    elif kind == "no_contract":
        row["metadata"] = {"grading": {"status": "ok"}}
    elif kind == "invalid_row":
        row["metadata"] = {"grading": {**GRADING, "status": "invalid_row", "message": "no options"}}
    elif kind == "model_in_response":
        del row["responses_create_params"]["model"]
        row["response"] = {"model": "m-r"}
    elif kind == "no_prompt":
        del row["uuid"]
        del row["responses_create_params"]["input"]
    elif kind == "not_an_object":
        row = [row]
    elif kind == "reward_only_nested":  # no reward of its own; a `"reward":` key inside its metadata
        del row["reward"]
        row["metadata"] = {**row["metadata"], "judge": {"reward": 1.0}}
    elif kind == "reward_only_in_options":  # the same inside its last object field
        del row["reward"]
        row["options"] = [{"A": "x"}, {"reward": 1.0}]
    lines[5] = json.dumps(row).encode()
    if kind == "bad_utf8":
        lines[5] = lines[5].replace(b"Question", b"Qu\xffestion")
    elif kind == "blank":
        lines[5] = b"  "
    elif kind == "malformed":
        lines[5] = lines[5][:-1]
    elif kind == "too_deep":
        lines[5] = lines[5][:-1] + b',"x":' + b"[" * 300 + b"]" * 300 + b"}"
    elif kind == "bom":
        lines[0] = b"\xef\xbb\xbf" + lines[0]
    return lines


@pytest.mark.parametrize(
    "kind",
    [
        "fractional_reward", "bad_reward", "no_contract", "invalid_row", "model_in_response", "no_prompt",
        "not_an_object", "bad_utf8", "blank", "malformed", "too_deep", "bom", "reward_only_nested",
        "reward_only_in_options",
    ],
)  # fmt: skip
def test_chunks_the_fast_path_cannot_read_exactly_are_read_row_by_row(kind):
    template = Measurement(None, None, None, "uuid")
    chunk = _chunk(_edited(kind))
    assert fast_part(chunk, template) is None
    assert _state(read_chunk(chunk, template)) == _state(_by_rows(chunk, template))


def test_only_plain_measurements_read_fast():
    chunk = _chunk(_lines(_rows()))
    assert fast_part(chunk, Measurement(None, None, "m-default", "uuid")) is None  # a default model
    assert fast_part(chunk, Measurement(None, None, None, "uuid", pool=lambda gv: PassPool(gv))) is None
    assert fast_part(chunk, Measurement(None, None, None, "uuid")) is not None


def test_reward_text_in_other_fields_is_read_fast_as_row_by_row():
    # a group is split where its own reward begins: `"reward":` in a key of an object field, in a prompt or
    # in an extracted answer changes nothing
    rng = random.Random(7)
    rows = _rows(3)
    for i, r in enumerate(rows[:40]):
        if i % 4 == 0:
            r["metadata"] = {**r["metadata"], "judge": {"reward": 0.25, "note": '"reward":1}'}}
        elif i % 4 == 1:
            r["responses_create_params"]["reward"] = 0
        elif i % 4 == 2:
            r["extracted_answer"] = rng.choice(['"reward":1.0', '","reward":1}', "reward"])
        else:
            r["options"] = [{"A": '"reward":'}, {"B": "b"}]
    template = Measurement(None, None, None, "uuid")
    chunk = _chunk(_lines(rows, 3))
    fast = fast_part(chunk, template)
    assert fast is not None
    assert _state(fast) == _state(_by_rows(chunk, template))
