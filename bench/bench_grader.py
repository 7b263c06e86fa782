"""Every NeMo Gym compatible grading mode next to NeMo Gym 0.7.0's own code for it: same rows, same process, the
same work on both sides.

Rows are synthetic science-style reasoning (~1,500 characters; 4-10 options, most rows 10; the options discussed
by letter; a fifth with a draft that commits to another answer first; 8% that end without an answer in the
mode's format, as truncated or off-format responses do) ending with the answer in the mode's format; once in
English and once multilingual (bench/texts.py: Chinese, Arabic, Russian, Hindi, ... mixed with English).
Generation is deterministic and not timed; rows are generated and measured in chunks so memory stays small.

Two levels per mode and language, each A against B:
- extraction: NeMo Gym's own statements for the mode, taken from its verify() at run time (`ng.branch`),
  against ours through the public mode call (`mode_function(mode)`; `extract_custom` for a template's regex,
  as `grade_text` calls it); each side gets the allowed letters in its own form, derived from the options
  before timing (`_get_allowed_letters_from_options`, `allowed_letters`): the mode's own work on both sides;
- grading decision: NeMo Gym's whole verify() with its pydantic request and response models replaced by plain
  objects, against our `grade_text` (the public grading call): options, gold and text in, reward out.

Timing: CPU time of this process with the cyclic GC off (both sides alike), after an untimed warm-up of 200 rows
per leg (tables built once per process, such as the md rule's, are not per-row costs), over `rounds` rounds; in each round
every chunk is timed on both sides, the order alternating from chunk to chunk and from round to round. A
figure's samples are the per-round rates; ratios are paired per round (NeMo Gym's time / ours).

    python bench/bench_grader.py [--scale 0.1] [--rounds 3]
"""

from __future__ import annotations

import argparse
import gc
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness as H  # noqa: E402
from texts import multilingual_prose  # noqa: E402

SEED = 20240607
CHUNK = 5000
TARGET_CHARS = 1500
LETTERS = "ABCDEFGHIJ"
MISS = 0.08
ROWS = 20_000  # per mode and language at scale 1

# Every mode is measured next to NeMo Gym 0.7.0's own function for it, in the same run (target: 1.5x).
MODES = (
    "strict_single_letter_boxed",
    "lenient_boxed",
    "lenient_answer_colon",
    "lenient_answer_colon_md",
    "lenient_answer_colon_md+answer_prefix",
    "custom_regex",
)
TARGET_RATIO = 1.5
LANGS = ("en", "multi")
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
    """4-10 options (six rows in ten have all 10, as most rows of the real dataset)."""
    topic, terms = rng.choice(_TOPICS)
    out = []
    k = 10 if rng.random() < 0.6 else rng.randint(4, 9)
    for L in LETTERS[:k]:
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


def rows_for(
    mode: str, n: int, seed: int = SEED, lang: str = "en"
) -> Iterator[tuple[str, list[dict[str, str]], str]]:
    """(text, options, gold) rows for one mode; ~20% contain a draft answer in the same format. lang "multi":
    the reasoning mixes many languages with English (bench/texts.py)."""
    rng = random.Random(f"{seed}:{mode}:{lang}")
    for _ in range(n):
        options = _options(rng)
        letters = LETTERS[: len(options)]
        gold = rng.choice(letters)
        final = gold if rng.random() < 0.7 else rng.choice(letters)
        if lang == "multi":
            body = multilingual_prose(rng, options, TARGET_CHARS - 40)
        else:
            body = _prose(rng, options, TARGET_CHARS - 40)
        if rng.random() < 0.2:
            draft = _answer(mode, rng, rng.choice(letters), options)
            cut = len(body) // 2
            body = f"{body[:cut]}\nDraft: {draft}. Wait, let me re-check that.\n{body[cut:]}"
        if rng.random() < MISS:  # truncated or off-format: no answer in the mode's format at the end
            yield (
                f"{body}\n\nSo the best option is probably the {rng.choice(('second', 'last'))} one",
                options,
                gold,
            )
            continue
        yield f"{body}\n\n{_answer(mode, rng, final, options)}", options, gold


def _ours(name: str) -> tuple[dict[str, Any] | None, Callable[..., Any]]:
    """(template_metadata, extraction(text, letters, tm)) for one measured mode: our public mode call."""
    if name == "custom_regex":
        pattern = REGEX_TM["output_regex"]
        return REGEX_TM, lambda text, letters, tm: extract_custom(text, pattern, letters)
    mode = _gen_mode(name)
    return (PREFIX_TM if mode != name else None), mode_function(mode)


def _gen_mode(name: str) -> str:
    return "lenient_answer_colon_md" if name.endswith("+answer_prefix") else name


def _timed(fn: Callable[[], Any]) -> float:
    """CPU seconds of fn() with the cyclic garbage collector off (as timeit does; both sides alike)."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.process_time()
        fn()
        return time.process_time() - t0
    finally:
        gc.enable()


def bench_mode(name: str, rows: int, lang: str, rounds: int, ng: Any, seed: int = SEED) -> dict[str, Any]:
    """The four legs of one mode and language (module docstring), per-round CPU seconds, plus parity counts."""
    tm, ours = _ours(name)
    gen_mode = _gen_mode(name)
    grade_mode = None if name == "custom_regex" else gen_mode  # a custom template row: its regex, then strict
    ng_mode = grade_mode or "strict_single_letter_boxed"
    branch = ng.branch("custom_regex" if name == "custom_regex" else gen_mode) if ng else None
    body = ng.body(tm) if ng else None
    t = {k: [0.0] * rounds for k in ("extract", "grade", "ng_extract", "ng_grade")}
    it = rows_for(gen_mode, rows, seed, lang)
    done = chars = hits = same_letter = same_reward = 0
    k = 0
    while done < rows:
        chunk = [next(it) for _ in range(min(CHUNK, rows - done))]
        mine_in = [(x, allowed_letters(o)) for x, o, _g in chunk]
        theirs_in = [(x, ng.allowed(o), o) for x, o, _g in chunk] if ng else []
        legs: dict[str, Callable[[], Any]] = {
            "extract": lambda c=mine_in: [ours(x, a, tm) for x, a in c],
            "grade": lambda c=chunk: [grade_text(x, o, g, None, tm, override=grade_mode) for x, o, g in c],
        }
        if ng is not None:
            legs["ng_extract"] = lambda c=theirs_in: [branch(x, a, o, body) for x, a, o in c]
            legs["ng_grade"] = lambda c=chunk: [ng.grade(x, o, g, ng_mode, tm) for x, o, g in c]
        if k == 0:  # warm-up, not timed: lazily built tables (ours) and first-call costs (both sides)
            for x, o, g in chunk[:200]:
                grade_text(x, o, g, None, tm, override=grade_mode)
                ours(x, allowed_letters(o), tm)
                if ng is not None:
                    ng.grade(x, o, g, ng_mode, tm)
                    branch(x, ng.allowed(o), o, body)
        for r in range(rounds):
            order = list(legs)
            if (r + k) % 2:
                order.reverse()
            for leg in order:
                t[leg][r] += _timed(legs[leg])
        k += 1
        mine = [grade_text(x, o, g, None, tm, override=grade_mode) for x, o, g in chunk]
        hits += sum(m.extracted_answer is not None for m in mine)
        if ng is not None:
            theirs = [ng.grade(x, o, g, ng_mode, tm) for x, o, g in chunk]
            same_reward += sum(a.reward == b["reward"] for a, b in zip(mine, theirs, strict=True))
            same_letter += sum(
                ours(x, a, tm).letter == branch(x, b, o, body)
                for (x, a), (_x, b, o) in zip(mine_in, theirs_in, strict=True)
            )
        done += len(chunk)
        chars += sum(len(x) for x, _o, _g in chunk)
    return {"rows": rows, "mean_chars": round(chars / rows), "extracted_share": round(hits / rows, 4),
            "same_letter": same_letter, "same_reward": same_reward, "seconds": t}  # fmt: skip


def figures_for(name: str, lang: str, m: dict[str, Any], has_ng: bool) -> dict[str, dict[str, Any]]:
    rows, t = m["rows"], m["seconds"]
    label = f"{name}, {'multilingual' if lang == 'multi' else 'English'}"
    key = f"{lang}.{name}"
    out = {
        f"{key}.extract": H.rate_figure(f"extraction {label}: ours", rows, t["extract"], unit="rows/CPU-s"),
        f"{key}.grade": H.rate_figure(f"grading decision {label}: ours", rows, t["grade"], unit="rows/CPU-s"),
    }
    if has_ng:
        out[f"{key}.ng_extract"] = H.rate_figure(
            f"extraction {label}: NeMo Gym's verify() branch", rows, t["ng_extract"], unit="rows/CPU-s"
        )
        out[f"{key}.ng_grade"] = H.rate_figure(
            f"grading decision {label}: NeMo Gym's verify(), models stubbed", rows, t["ng_grade"],
            unit="rows/CPU-s",
        )  # fmt: skip
        target = {"op": ">=", "value": TARGET_RATIO} if lang == "multi" else None
        out[f"{key}.extract_x"] = H.ratio_figure(
            f"extraction {label}: NeMo Gym's time / ours", t["ng_extract"], t["extract"], target=target
        )
        out[f"{key}.grade_x"] = H.ratio_figure(
            f"grading decision {label}: NeMo Gym's time / ours", t["ng_grade"], t["grade"], target=target
        )
    return out


def run(scale: float = 1.0, *, rounds: int = 3, full: bool = False, seed: int = SEED) -> dict[str, Any]:
    """Every mode on English and multilingual responses next to NeMo Gym 0.7.0 (the result format of
    docs/design/performance.md)."""
    rows = max(1000, int(ROWS * scale))
    ng = _nemo_gym()
    figures: dict[str, dict[str, Any]] = {}
    checks: dict[str, Any] = {}
    inputs: dict[str, Any] = {"rows_per_mode_and_language": rows}
    for lang in LANGS:
        for name in MODES:
            m = bench_mode(name, rows, lang, rounds, ng, seed)
            figures.update(figures_for(name, lang, m, ng is not None))
            key = f"{lang}.{name}"
            inputs[f"{key}.mean_chars"] = m["mean_chars"]
            inputs[f"{key}.extracted_share"] = m["extracted_share"]
            if ng is not None:
                checks[f"{key}.same_letter_as_nemo_gym"] = f"{m['same_letter']}/{rows}"
                checks[f"{key}.same_reward_as_nemo_gym"] = f"{m['same_reward']}/{rows}"
    return {
        "bench": "grader",
        "title": "grading modes against NeMo Gym 0.7.0's own code, English and multilingual responses",
        "figures": figures,
        "checks": checks,
        "inputs": inputs,
        "peers": {"nemo_gym": _nemo_gym_version()},
    }


def _nemo_gym() -> Any:
    try:
        import nemo_gym_ref

        return nemo_gym_ref.load()
    except Exception:  # not installed (make bench-deps): our rates alone, the peer figures absent
        return None


def _nemo_gym_version() -> str | None:
    try:
        import nemo_gym_ref

        return nemo_gym_ref.version() if _nemo_gym() is not None else None
    except Exception:
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    res = run(args.scale, rounds=args.rounds)
    print(f"{'mode':52} {'extract x':>14} {'grade x':>14}")
    for key, f in res["figures"].items():
        if key.endswith(".extract_x"):
            g = res["figures"][key.replace(".extract_x", ".grade_x")]
            print(f"{key[:-10]:52} {f['min']:>6.2f}-{f['max']:<6.2f}x {g['min']:>6.2f}-{g['max']:<6.2f}x")
    print(json.dumps(res["checks"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
