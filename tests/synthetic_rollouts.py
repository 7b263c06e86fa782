"""Seeded synthetic rollouts with known pass probabilities per question and model (the held-back checks of
issue 27 are built on them; nothing is checked in)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from mcqa_prep.policy import GradingPolicy

GOLD = "A"
WRONG = ("B", "C", "D")


@dataclass
class Design:
    """True pass probability per (question, model), the outcomes drawn from it, and the rows."""

    truth: dict[tuple[int, str], float] = field(default_factory=dict)
    outcomes: dict[tuple[int, str], list[tuple[float, str | None]]] = field(default_factory=dict)
    rows: list[dict] = field(default_factory=list)


def rescored_row(q: int, model: str, reward: float, answer: str | None, contract: str, gv: str) -> dict:
    """A row as `rescore` writes it, for question q: model, uuid, prompt, reward, extracted answer, grading."""
    return {
        "responses_create_params": {"input": [{"role": "user", "content": f"Question {q}?"}], "model": model},
        "uuid": f"q{q:05d}",
        "reward": reward,
        "extracted_answer": answer,
        "metadata": {
            "grading": {"status": "ok" if answer else "no_answer", "contract": contract, "grader_version": gv}
        },
    }


def generate(
    seed: int,
    questions: int,
    models: dict[str, tuple[float, float]],
    samples: int = 8,
    unanswered: float = 0.1,
    policy: GradingPolicy | None = None,
) -> Design:
    """Per model, p ~ Beta(a, b) per question; each rollout passes with probability p (answer A); a failing
    rollout gives no answer with probability `unanswered`, else a wrong letter."""
    rng = random.Random(seed)
    c = (policy or GradingPolicy()).contract()
    cid = (policy or GradingPolicy()).contract_id()
    d = Design()
    for model, (a, b) in models.items():
        for q in range(questions):
            p = rng.betavariate(a, b)
            d.truth[(q, model)] = p
            outs = []
            for _ in range(samples):
                if rng.random() < p:
                    outs.append((1.0, GOLD))
                elif rng.random() < unanswered:
                    outs.append((0.0, None))
                else:
                    outs.append((0.0, rng.choice(WRONG)))
            d.outcomes[(q, model)] = outs
            d.rows += [rescored_row(q, model, r, ans, cid, c["grader_version"]) for r, ans in outs]
    return d


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def dataset_rows(questions: int, sources: list[str], subjects: list[str]) -> list[dict]:
    """The dataset rows of the questions: the same prompt and uuid, with a source and a subject as `convert`
    writes them."""
    return [
        {
            "responses_create_params": {"input": [{"role": "user", "content": f"Question {q}?"}]},
            "uuid": f"q{q:05d}",
            "options": [{"A": "yes"}, {"B": "no"}, {"C": "maybe"}, {"D": "never"}],
            "expected_answer": GOLD,
            "grading_mode": "strict_single_letter_boxed",
            "metadata": {
                "source": {"dataset": sources[q % len(sources)], "split": "train", "row": q},
                "subject": subjects[q % len(subjects)],
            },
        }
        for q in range(questions)
    ]
