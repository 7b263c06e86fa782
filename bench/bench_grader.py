"""Throughput of the NeMo Gym compatible grading modes on realistic long responses, one core.

Rows are synthetic science-style reasoning (~1,500 characters, 10 options, the options discussed by
letter, some drafts that commit to another answer first) ending with the answer in the mode's own
format. Generation is deterministic (fixed seed) and not timed; rows are generated and graded in chunks
so memory stays small. Two rates per mode: the mode's extraction function alone (what the targets are
for), and the whole `grade_text` call (gold and option parsing, result record) for context.

    python bench/bench_grader.py [--rows N] [--json]
    from bench.bench_grader import run; run(20000)
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcqa_prep.grader import grade_text, mode_function  # noqa: E402
from mcqa_prep.grader.custom_regex import extract_custom  # noqa: E402
from mcqa_prep.grader.letters import allowed_letters  # noqa: E402

SEED = 20240607
CHUNK = 5000
TARGET_CHARS = 1500
LETTERS = "ABCDEFGHIJ"

# rows/s targets from the issue
TARGETS = {
    "strict_single_letter_boxed": 180_000,
    "lenient_boxed": 75_000,
    "lenient_answer_colon": 57_000,
    "lenient_answer_colon_md": 26_000,
    "lenient_answer_colon_md+answer_prefix": 14_000,
    "custom_regex": 84_000,
}
PREFIX_TM = {"answer_prefix": "Final Choice:"}
REGEX_TM = {"output_regex": r"Final Choice:\s*([A-Za-z])"}

_TOPICS = [
    (
        "enzyme kinetics",
        ["Michaelis constant", "turnover number", "competitive inhibitor", "allosteric site"],
    ),
    ("cell biology", ["rough endoplasmic reticulum", "Golgi apparatus", "lysosome", "ribosome"]),
    ("thermodynamics", ["Gibbs free energy", "entropy change", "enthalpy", "heat capacity"]),
    ("genetics", ["polygenic risk score", "linkage disequilibrium", "penetrance", "frameshift mutation"]),
    ("electrochemistry", ["standard reduction potential", "Nernst equation", "salt bridge", "anode"]),
    ("microbiology", ["16S rRNA sequencing", "Gram stain", "plasmid transfer", "biofilm"]),
    ("optics", ["refractive index", "total internal reflection", "diffraction grating", "polarizer"]),
    ("ecology", ["trophic cascade", "carrying capacity", "keystone species", "primary productivity"]),
]
_OPENERS = [
    "Let me work through this carefully.",
    "We need to identify which statement is correct.",
    "First, recall the relevant principles of {topic}.",
    "This question tests understanding of {topic}.",
]
_SENTENCES = [
    "The {a} is directly related to the {b}, so any change in one shifts the other.",
    "In most textbook treatments of {topic}, the {a} is introduced before the {b}.",
    "Experimentally, the {a} can be measured independently of the {b}.",
    "A common misconception is that the {a} determines the {b}, but the relationship is indirect.",
    "If we consider the limiting case, the {a} dominates and the {b} becomes negligible.",
    "The answer must be consistent with what we know about the {a}.",
    "Under standard conditions the {a} remains constant while the {b} varies.",
    "This is why the {a} is often used as a diagnostic for the {b}.",
]
_OPTION_LINES = [
    "Option {L} ({text}) is incorrect because it confuses the {a} with the {b}.",
    "{L}: {text} - this overstates the role of the {a}.",
    "- {L}) {text}: plausible, but it ignores the {b}.",
    "Option {L} mentions {text}, which is unrelated to the {a}.",
]


def _options(rng: random.Random) -> list[dict[str, str]]:
    topic, terms = rng.choice(_TOPICS)
    out = []
    for L in LETTERS:
        a, b = rng.sample(terms, 2)
        verb = rng.choice(["increases", "decreases", "is unaffected by"])
        out.append({L: f"The {a} {verb} the {b} ({L.lower()}{rng.randint(1, 99)})"})
    return out


def _prose(rng: random.Random, options: list[dict[str, str]], chars: int) -> str:
    topic, terms = rng.choice(_TOPICS)
    parts = [rng.choice(_OPENERS).format(topic=topic)]
    size = len(parts[0])
    while size < chars:
        a, b = rng.sample(terms, 2)
        if rng.random() < 0.35:
            opt = rng.choice(options)
            ((L, text),) = opt.items()
            s = rng.choice(_OPTION_LINES).format(L=L, text=text[:40], a=a, b=b)
        else:
            s = rng.choice(_SENTENCES).format(a=a, b=b, topic=topic)
        parts.append(s)
        size += len(s) + 1
    return (" " if rng.random() < 0.5 else "\n").join(parts)


def _answer(mode: str, rng: random.Random, letter: str, options: list[dict[str, str]]) -> str:
    text = next(iter(options[LETTERS.index(letter)].values()))
    r = rng.random()
    if mode == "strict_single_letter_boxed":
        if r < 0.7:
            return f"\\boxed{{{letter}}}"
        if r < 0.85:
            return f"\\[\n\\boxed{{\\text{{{letter}}}}}\n\\]"
        return f"\\boxed{{{letter}: {text}}}"
    if mode == "lenient_boxed":
        return f"\\boxed{{{letter}}}" if r < 0.5 else f"\\boxed{{{text}}}"
    if mode == "lenient_answer_colon":
        return f"Answer: {letter}" if r < 0.8 else f"Answer: {text}"
    if mode == "lenient_answer_colon_md":
        return ("**Answer: %s**", "Answer: %s", "**Answer:** %s", "__Answer__: %s")[int(r * 4)] % letter
    # answer_prefix and custom regex rows
    return f"Final Choice: {letter}" if r < 0.8 else f"**Final Choice:** {letter}"


def rows_for(mode: str, n: int, seed: int = SEED) -> Iterator[tuple[str, list[dict[str, str]], str]]:
    """(text, options, gold) rows for one mode; ~20% contain a draft answer in the same format."""
    rng = random.Random(f"{seed}:{mode}")
    for _ in range(n):
        options = _options(rng)
        gold = rng.choice(LETTERS)
        final = gold if rng.random() < 0.7 else rng.choice(LETTERS)
        body = _prose(rng, options, TARGET_CHARS - 40)
        if rng.random() < 0.2:
            draft = _answer(mode, rng, rng.choice(LETTERS), options)
            cut = len(body) // 2
            body = f"{body[:cut]}\nDraft: {draft}. Wait, let me re-check that.\n{body[cut:]}"
        yield f"{body}\n\n{_answer(mode, rng, final, options)}", options, gold


def _spec(name: str) -> tuple[str, dict[str, Any] | None, Callable[..., Any]]:
    if name == "custom_regex":
        pattern = REGEX_TM["output_regex"]
        return "custom_regex", REGEX_TM, lambda text, letters, tm: extract_custom(text, pattern, letters)
    if name == "lenient_answer_colon_md+answer_prefix":
        return "lenient_answer_colon_md", PREFIX_TM, mode_function("lenient_answer_colon_md")
    return name, None, mode_function(name)


def bench_mode(name: str, rows: int, seed: int = SEED) -> dict[str, Any]:
    gen_mode, tm, fn = _spec(name)
    override = None if name == "custom_regex" else gen_mode
    it = rows_for(gen_mode, rows, seed)
    t_extract = t_grade = 0.0
    done = chars = hits = 0
    perf = time.perf_counter
    while done < rows:
        chunk = [next(it) for _ in range(min(CHUNK, rows - done))]
        prepared = [(text, allowed_letters(options)) for text, options, _gold in chunk]
        t0 = perf()
        for text, letters in prepared:
            fn(text, letters, tm)
        t_extract += perf() - t0
        t0 = perf()
        for text, options, gold in chunk:
            res = grade_text(text, options, gold, None, tm, override=override)
            hits += res.extracted_answer is not None
        t_grade += perf() - t0
        done += len(chunk)
        chars += sum(len(t) for t, _o, _g in chunk)
    return {
        "rows": rows,
        "mean_chars": round(chars / rows),
        "extracted_share": round(hits / rows, 4),
        "seconds": round(t_extract, 4),
        "rows_per_s": round(rows / t_extract) if t_extract else None,
        "grade_text_rows_per_s": round(rows / t_grade) if t_grade else None,
        "target_rows_per_s": TARGETS[name],
    }


def run(rows: int = 200_000, seed: int = SEED) -> dict[str, Any]:
    """Benchmark every mode on `rows` rows; returns {mode: {rows_per_s, target_rows_per_s, ...}}."""
    return {name: bench_mode(name, rows, seed) for name in TARGETS}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    results = run(args.rows, args.seed)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{'mode':40} {'rows/s':>10} {'target':>10} {'':4} {'grade_text/s':>13} {'chars':>6} {'found':>6}")
    for name, r in results.items():
        ok = "ok" if r["rows_per_s"] and r["rows_per_s"] >= r["target_rows_per_s"] else "SLOW"
        print(
            f"{name:40} {r['rows_per_s']:>10,} {r['target_rows_per_s']:>10,} {ok:4} "
            f"{r['grade_text_rows_per_s']:>13,} {r['mean_chars']:>6} {r['extracted_share']:>6.1%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
