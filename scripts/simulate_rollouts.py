"""Rollouts of a simulated model with a known skill and a letter prior, for demonstrations and held-back checks.

Not a model: a stand-in whose truth is known, so that what `passrates` measures can be compared with it.
Per question (its `metadata.mcqa_prep.permutation.question`, else its uuid, else its prompt) the model knows
the answer with a probability drawn once from Beta(A, B) (seeded by the question: every option order of a
question shares it). Per rollout it answers the gold when it knows; otherwise it guesses: the prior letter
(`--prior-letter`, A by default) with probability `--prior` when the row offers it, else a letter uniformly
among the row's others. Every response is a compliant answer in the row's grading mode (grader/modes.py), so
`passrates --rescore` grades it as the letter it names.

    python scripts/simulate_rollouts.py permuted/ -o rollouts.jsonl --model letter-prior --samples 4

Rows are read as every command reads them (`sources.resolve`: files, directories, prepared directories).
The output is the rows with `responses_create_params.model` and a Responses API `response`, as NeMo Gym's
rollout collection writes them; byte-identical for the same inputs and seed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from mcqa_prep.evidence import permutation_question  # noqa: E402
from mcqa_prep.grader.modes import BY_NAME, DEFAULT_MODE  # noqa: E402
from mcqa_prep.io.readers import iter_file  # noqa: E402
from mcqa_prep.prompt import prompt_id  # noqa: E402
from mcqa_prep.sources import resolve  # noqa: E402


def question_of(row: Mapping[str, Any]) -> str:
    q = permutation_question(row)
    if q is not None:
        return q
    if row.get("uuid") is not None:
        return f"uuid:{row['uuid']}"
    return prompt_id(row.get("responses_create_params")) or ""


def knowledge(question: str, seed: int, a: float, b: float) -> float:
    """The probability that the model knows `question` (the same for every order of it)."""
    h = hashlib.sha256(f"{seed}\x1f{question}".encode()).digest()
    return random.Random(h).betavariate(a, b)


def guess(letters: list[str], prior_letter: str, prior: float, rng: random.Random) -> str:
    if prior_letter in letters and rng.random() < prior:
        return prior_letter
    others = [L for L in letters if L != prior_letter] or letters
    return rng.choice(others)


def rollouts_of(
    row: Mapping[str, Any],
    model: str,
    samples: int,
    seed: int,
    a: float,
    b: float,
    prior_letter: str,
    prior: float,
) -> Iterator[dict[str, Any]]:
    question = question_of(row)
    known = knowledge(question, seed, a, b)
    letters = [k for o in row["options"] for k, v in o.items() if v is not None]
    gold = str(row["expected_answer"]).strip().upper()
    mode = BY_NAME.get(row.get("grading_mode") or DEFAULT_MODE, BY_NAME[DEFAULT_MODE])
    rcp = row["responses_create_params"]
    rng = random.Random(hashlib.sha256(f"{seed}\x1f{model}\x1f{prompt_id(rcp)}".encode()).digest())
    for i in range(samples):
        letter = gold if rng.random() < known else guess(letters, prior_letter, prior, rng)
        yield {
            **row,
            "responses_create_params": {**rcp, "model": model},
            "response": {
                "id": f"sim-{i}",
                "object": "response",
                "status": "completed",
                "model": model,
                "output": [
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": mode.response(letter)}],
                    }
                ],
            },
        }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="+", help="dataset rows: files, directories, a prepared directory")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--model", default="simulated")
    ap.add_argument("--samples", type=int, default=4, help="rollouts per row (per option order)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skill", default="1.2:1.2", metavar="A:B", help="Beta(A, B) of the chance to know")
    ap.add_argument("--prior-letter", default="A")
    ap.add_argument("--prior", type=float, default=0.7, help="chance a guess is the prior letter")
    args = ap.parse_args(argv)
    a, b = (float(x) for x in args.skill.split(":"))
    n = 0
    with open(args.output, "w", encoding="utf-8") as out:
        for src in resolve(args.rows, allow_stdin=False).sources:
            for rec in iter_file(src.path, split=src.split):
                if rec.data is None:
                    continue
                for r in rollouts_of(
                    rec.data, args.model, args.samples, args.seed, a, b, args.prior_letter, args.prior
                ):
                    out.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
                    n += 1
    print(f"wrote {n} rollout(s) of {args.model} to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
