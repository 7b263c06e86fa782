"""Throughput of the `robust` extractor on realistic long responses (target: >= 20,000 rows/s, one core).

Rows are synthetic science chain-of-thought of about 1,500 characters over 10 options: the text
discusses several options by letter, then commits in one of the common formats (boxed, `Answer:`,
"the answer is", bold, translations, self-corrections, bare last lines). Deterministic seed.

    python bench/bench_robust.py [--scale 0.2] [--rounds 3]

Rows per CPU second of this process (what one core delivers), every round's rate (min-max), each pass
starting with an empty option-text cache like a fresh process; NeMo Gym's md payload reader runs on the same
texts in the same rounds, the order alternating (a reference: it reads fewer formats).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness as H  # noqa: E402

from mcqa_prep.grader.robust import extract_robust  # noqa: E402
from mcqa_prep.grader.robust import options as robust_options  # noqa: E402

LETTERS = "ABCDEFGHIJ"
_TOPICS = [
    ("enzyme kinetics", "substrate concentration", "Michaelis constant", "turnover number"),
    ("stellar evolution", "core temperature", "hydrogen fusion", "main sequence lifetime"),
    ("population genetics", "allele frequency", "genetic drift", "effective population size"),
    ("electrochemistry", "electrode potential", "Nernst equation", "ion concentration"),
    ("plate tectonics", "mantle convection", "subduction zone", "seafloor spreading"),
    ("thermodynamics", "entropy change", "reversible process", "heat capacity"),
    ("immunology", "antigen presentation", "T-cell activation", "cytokine signalling"),
    ("optics", "refractive index", "total internal reflection", "critical angle"),
]
_VERBS = ["increases", "decreases", "does not affect", "doubles", "halves", "saturates", "reverses"]
_JUDGE = [
    "This contradicts the data described in the question.",
    "This is consistent with the basic model but ignores the boundary conditions.",
    "This would only hold at very low temperature, so it is unlikely here.",
    "This confuses the cause with the effect.",
    "This matches the standard textbook result.",
    "This overstates the effect by an order of magnitude.",
]
_COMMITS = [
    "\n\nTherefore, the correct answer is {L}.",
    "\n\nAnswer: {L}",
    "\n\n**Final Answer:** \\boxed{{\\text{{{L}}}}}",
    "\n\n\\[\n\\boxed{{{L}}}\n\\]",
    "\n\nThe answer is ({L}).",
    "\n\n**Answer: {L}**",
    "\n\nI think it's {l}... wait, actually {L}.",
    "\n\nSo the best choice is **{L}**.",
    "\n\nOption {L} is correct.",
    "\n\n答案：{L}",
    "\n\nAntwort: {L}",
    "\n\n{L}) {T}",
    "\n\nFinal answer: {T}",
    "\n\nANSWER: {L}",
]


def make_rows(n: int, seed: int = 1234) -> list[tuple[str, dict[str, str]]]:
    """`n` (text, letters) rows of about 1,500 characters each."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        topic, q1, q2, q3 = rng.choice(_TOPICS)
        options = {
            c: f"The {rng.choice((q1, q2, q3))} {rng.choice(_VERBS)} when {q1} rises ({c.lower()})"
            for c in LETTERS
        }
        parts = [
            f"Let's think step by step about {topic}. The question asks how the {q1} relates to the {q2}, "
            f"and we should recall that the {q3} constrains the possible behaviours. "
        ]
        discussed = rng.sample(LETTERS, 6)
        for c in discussed:
            parts.append(f"\n- Option {c}: {options[c]}. {rng.choice(_JUDGE)}")
        parts.append(
            f"\n\nComparing the remaining candidates, the {q2} and the {q3} must both be considered; "
            f"a careful estimate with typical values (about 3.2 x 10^4 units) shows which trend dominates."
        )
        text = "".join(parts)
        while len(text) < 1380:
            text += f" Note that the {rng.choice((q1, q2, q3))} {rng.choice(_VERBS)} in the limiting case."
        gold = rng.choice(LETTERS)
        other = rng.choice([c for c in LETTERS if c != gold])
        commit = rng.choice(_COMMITS).format(L=gold, l=other, T=options[gold])
        rows.append((text[:1400] + commit, options))
    return rows


ROWS = 50_000


def run(scale: float = 1.0, *, rounds: int = 3, full: bool = False) -> dict[str, Any]:
    """The result document (docs/design/performance.md, "Result format"): robust's rate and NeMo Gym's md reader's on
    the same texts, each round both (the order alternating), CPU time of this process; each robust pass
    starts with an empty option-text cache, like a fresh process."""
    rows = max(1000, int(ROWS * scale))
    data = make_rows(rows)
    ng = _nemo_gym()
    allowed = [(text, set(letters)) for text, letters in data]
    found = {"robust": 0, "nemo_gym_md": 0}

    def ours() -> float:
        robust_options.clear_cache()
        c0 = time.process_time()
        found["robust"] = sum(
            extract_robust(text, letters, None).letter is not None for text, letters in data
        )
        return time.process_time() - c0

    def theirs() -> float:
        c0 = time.process_time()
        found["nemo_gym_md"] = sum(ng.answer_colon_md(text, a) is not None for text, a in allowed)
        return time.process_time() - c0

    legs = {"robust": ours, **({"nemo_gym_md": theirs} if ng is not None else {})}
    t = H.interleave(legs, rounds)
    fig = {
        "robust.rows_per_cpu_s": H.rate_figure(
            "robust extraction (every format), ~1,500-character responses", rows, t["robust"],
            unit="rows/CPU-s", target={"op": ">=", "value": 20_000},
        ),
    }  # fmt: skip
    if ng is not None:
        fig["nemo_gym_md.rows_per_cpu_s"] = H.rate_figure(
            "NeMo Gym's md payload reader on the same texts (fewer formats: a reference)", rows,
            t["nemo_gym_md"], unit="rows/CPU-s",
        )  # fmt: skip
        fig["robust_vs_nemo_gym_md.x"] = H.ratio_figure(
            "NeMo Gym md reader's time / robust's", t["nemo_gym_md"], t["robust"]
        )
    return {
        "bench": "robust",
        "title": "the robust extractor's rate, NeMo Gym's md reader on the same texts",
        "figures": fig,
        "checks": {
            "robust_with_letter": f"{found['robust']}/{rows}",
            "nemo_gym_md_with_letter": f"{found['nemo_gym_md']}/{rows}",
        },
        "inputs": {"rows": rows, "mean_chars": round(sum(len(t) for t, _ in data) / rows)},
    }


def _nemo_gym() -> Any:
    try:
        import nemo_gym_ref

        return nemo_gym_ref.load()
    except Exception:  # not installed (make bench-deps): robust's rate alone
        return None


def _positive_int(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Throughput of the `robust` extractor on synthetic ~1,500-character responses "
        "(target: >= 20,000 rows/s on one core)."
    )
    parser.add_argument("--scale", type=float, default=0.2, help=f"rows = scale x {ROWS:,}")
    parser.add_argument("--rounds", type=_positive_int, default=3)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.scale, rounds=args.rounds), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
