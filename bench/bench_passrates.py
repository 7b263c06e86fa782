"""Benchmark pass-rate tables since passrates.v2 (posterior, counting rule): measuring and reading, each next to a
baseline measured in the same run.

- measure: `passrates` on synthetic rescored rollouts (2 models, 8 rollouts per question) vs the floor of
  parsing every rollout line with the same JSON library (orjson);
- read: `read_table` of the v2 table vs the same entries written as passrates.v1 (the format before issue 27:
  read today, its posterior computed on reading; and read without the posterior, as before issue 27) vs the
  floor of parsing every entry line;
- the prior fit alone (marginal maximum likelihood over the distinct (n, c) pairs).

    python bench/bench_passrates.py --questions 20000     # prints one JSON document
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def _rows(questions: int, seed: int = 0):
    from mcqa_prep.policy import GradingPolicy

    rng = random.Random(seed)
    c = GradingPolicy().contract()
    cid = GradingPolicy().contract_id()
    for model, (a, b) in {"m-a": (2.0, 3.0), "m-b": (4.0, 1.5)}.items():
        for q in range(questions):
            p = rng.betavariate(a, b)
            for _ in range(8):
                ok = rng.random() < p
                ans = "A" if ok else rng.choice(("B", "C", None))
                yield {
                    "responses_create_params": {
                        "input": [{"role": "user", "content": f"Question {q}?"}],
                        "model": model,
                    },
                    "uuid": f"q{q:07d}",
                    "reward": 1.0 if ok else 0.0,
                    "extracted_answer": ans,
                    "metadata": {
                        "grading": {"status": "ok", "contract": cid, "grader_version": c["grader_version"]}
                    },
                }


def _v1(table: Path, out: Path) -> Path:
    """The same table as passrates.v1 wrote it (the documented hash recipe)."""
    from mcqa_prep.policy import canonical_json

    lines = table.read_bytes().splitlines(keepends=True)
    header = json.loads(lines[0])
    for k in ("counting", "posterior", "metrics"):
        header.pop(k)
    header["table_schema"] = "passrates.v1"
    for k in ("unanswered_only", "answers_unknown"):
        header["counts"].pop(k)
    keep = ("key", "mean_reward", "model", "pass_rate", "passes", "samples")
    body = [
        json.dumps({k: json.loads(ln)[k] for k in keep}, separators=(",", ":")).encode() + b"\n"
        for ln in lines[1:]
    ]
    hashed = {k: v for k, v in header.items() if k not in ("content_sha256", "created_at", "tool")}
    h = hashlib.sha256(canonical_json(hashed) + b"\n")
    for ln in body:
        h.update(ln)
    header["content_sha256"] = h.hexdigest()
    out.write_bytes(json.dumps(header).encode() + b"\n" + b"".join(body))
    return out


def _best(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def run(questions: int = 20_000) -> dict:
    import orjson

    from mcqa_prep.passrates.measure import measure
    from mcqa_prep.passrates.posterior import fit_prior
    from mcqa_prep.passrates.table import read_table

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        src = tmp / "rescored.jsonl"
        with open(src, "wb") as fh:
            for r in _rows(questions):
                fh.write(orjson.dumps(r) + b"\n")
        rollouts = 2 * 8 * questions
        floor_measure = _best(lambda: [orjson.loads(ln) for ln in src.read_bytes().splitlines()], 1)
        t0 = time.process_time()
        measure([src], tmp / "t.jsonl")
        measure_s = time.process_time() - t0
        v1 = _v1(tmp / "t.jsonl", tmp / "v1.jsonl")
        entries = 2 * questions
        read_v2 = _best(lambda: read_table(tmp / "t.jsonl"))
        read_v1 = _best(lambda: read_table(v1))  # today: the posterior computed on reading
        import mcqa_prep.passrates.estimate as est

        saved = est.with_posterior
        est.with_posterior = lambda entries, *a: (entries, {})  # the pre-issue-27 reader: no posterior
        try:
            read_v1_bare = _best(lambda: read_table(v1))
        finally:
            est.with_posterior = saved
        floor_read = _best(lambda: [orjson.loads(ln) for ln in (tmp / "t.jsonl").read_bytes().splitlines()])
        pairs = [
            (e.samples, e.passes)
            for per in read_table(tmp / "t.jsonl").entries.values()
            for e in per.values()
        ]
        fit = _best(lambda: fit_prior(pairs))
    return {
        "questions": questions,
        "rollouts": rollouts,
        "entries": entries,
        "measure_cpu_s": round(measure_s, 3),
        "measure_rollouts_per_cpu_s": round(rollouts / measure_s),
        "floor_parse_rollouts_cpu_s": round(floor_measure, 3),
        "measure_vs_floor": round(measure_s / floor_measure, 2),
        "read_v2_cpu_s": round(read_v2, 3),
        "read_v1_same_entries_cpu_s": round(read_v1, 3),
        "read_v2_vs_v1": round(read_v2 / read_v1, 2),
        "read_v1_without_posterior_cpu_s": round(read_v1_bare, 3),
        "read_v2_vs_v1_without_posterior": round(read_v2 / read_v1_bare, 2),
        "floor_parse_entries_cpu_s": round(floor_read, 3),
        "read_v2_vs_floor": round(read_v2 / floor_read, 2),
        "fit_prior_cpu_s": round(fit, 4),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=20_000)
    args = ap.parse_args()
    print(json.dumps(run(args.questions), indent=1))


if __name__ == "__main__":
    main()
