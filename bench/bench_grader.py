"""The NeMo Gym compatible grading modes next to NeMo Gym 0.7.0's own functions, same rows, same process.

Rows are synthetic science-style reasoning (~1,500 characters, 10 options, the options discussed by letter, some
drafts that commit to another answer first) ending with the answer in the mode's own format; once in English and
once multilingual (bench/texts.py: Chinese, Arabic, Russian, Hindi, ... mixed with English). Generation is
deterministic and not timed; rows are generated and graded in chunks so memory stays small.

Per mode: our extraction function vs NeMo Gym's function for the mode (bench/nemo_gym_ref.py loads it from the
installed wheel; `make bench-deps`), and our whole `grade_text` call vs NeMo Gym's whole grading decision
(verify() with its pydantic models replaced by plain objects). Rates are rows per CPU second of this process,
the best of --repeat passes over each chunk, measured the same way for both; the share of rows where both
extract the same letter is a parity check on the generated texts.

    python bench/bench_grader.py [--rows N] [--json]
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
from texts import multilingual_prose  # noqa: E402

SEED = 20240607
CHUNK = 5000
TARGET_CHARS = 1500
LETTERS = "ABCDEFGHIJ"

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


def rows_for(
    mode: str, n: int, seed: int = SEED, lang: str = "en"
) -> Iterator[tuple[str, list[dict[str, str]], str]]:
    """(text, options, gold) rows for one mode; ~20% contain a draft answer in the same format. lang "multi":
    the reasoning mixes many languages with English (bench/texts.py)."""
    rng = random.Random(f"{seed}:{mode}:{lang}")
    for _ in range(n):
        options = _options(rng)
        gold = rng.choice(LETTERS)
        final = gold if rng.random() < 0.7 else rng.choice(LETTERS)
        if lang == "multi":
            body = multilingual_prose(rng, options, TARGET_CHARS - 40)
        else:
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


def _ng_spec(ng: Any, name: str) -> tuple[str, Callable[..., Any]]:
    """(what is measured, NeMo Gym's function for the mode): fn(text, allowed, options, gold, tm) -> letter."""
    if name == "strict_single_letter_boxed":
        return "_parse_answer_letter_strict_boxed", lambda t, a, o, g, tm: ng.strict(t, a)
    if name == "lenient_boxed":
        return "strict, then _match_option_text", lambda t, a, o, g, tm: ng.lenient_boxed(t, a, o)
    if name == "lenient_answer_colon":  # inline in verify(): its grading core is the function
        return "verify() core (inline code)", lambda t, a, o, g, tm: ng.grade(t, o, g, name)[
            "extracted_answer"
        ]
    if name == "custom_regex":
        return "_parse_answer_with_custom_regexes", lambda t, a, o, g, tm: ng.custom_regex(t, a, o, tm)
    return "_extract_from_answer_payloads", lambda t, a, o, g, tm: ng.answer_colon_md(t, a, o, tm)


def _best(fn: Callable[[], Any], repeat: int) -> float:
    """The least CPU time of `repeat` runs (CPU time of this process: other load on the machine barely moves it),
    with the cyclic garbage collector off while timing, as timeit does (both sides alike)."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            t0 = time.process_time()
            fn()
            best = min(best, time.process_time() - t0)
        finally:
            gc.enable()
    return best


def bench_mode(name: str, rows: int, seed: int = SEED, lang: str = "en", repeat: int = 3) -> dict[str, Any]:
    """Our extraction and whole grade_text call next to NeMo Gym's, on the same rows, in the same process."""
    gen_mode, tm, fn = _spec(name)
    override = None if name == "custom_regex" else gen_mode
    ng = _nemo_gym()
    ng_what, ng_fn = _ng_spec(ng, name) if ng is not None else (None, None)
    ng_mode = gen_mode if name != "custom_regex" else "strict_single_letter_boxed"
    it = rows_for(gen_mode, rows, seed, lang)
    t = {"extract": 0.0, "grade": 0.0, "ng_extract": 0.0, "ng_grade": 0.0}
    done = chars = hits = agree = 0
    while done < rows:
        chunk = [next(it) for _ in range(min(CHUNK, rows - done))]
        mine = [(text, allowed_letters(options)) for text, options, _gold in chunk]
        t["extract"] += _best(lambda mine=mine: [fn(text, letters, tm) for text, letters in mine], repeat)
        t["grade"] += _best(
            lambda chunk=chunk: [grade_text(x, o, g, None, tm, override=override) for x, o, g in chunk],
            repeat,
        )
        letters = [grade_text(x, o, g, None, tm, override=override).extracted_answer for x, o, g in chunk]
        hits += sum(v is not None for v in letters)
        if ng is not None:
            theirs = [(x, ng.allowed(o), o, g) for x, o, g in chunk]
            t["ng_extract"] += _best(lambda th=theirs: [ng_fn(x, a, o, g, tm) for x, a, o, g in th], repeat)
            t["ng_grade"] += _best(lambda c=chunk: [ng.grade(x, o, g, ng_mode, tm) for x, o, g in c], repeat)
            ng_letters = [ng.grade(x, o, g, ng_mode, tm)["extracted_answer"] for x, o, g in chunk]
            agree += sum(a == b for a, b in zip(letters, ng_letters, strict=True))
        done += len(chunk)
        chars += sum(len(x) for x, _o, _g in chunk)
    rate = lambda k: round(rows / t[k]) if t[k] else None  # noqa: E731
    out: dict[str, Any] = {
        "rows": rows,
        "lang": lang,
        "mean_chars": round(chars / rows),
        "extracted_share": round(hits / rows, 4),
        "rows_per_cpu_s": rate("extract"),
        "grade_text_rows_per_cpu_s": rate("grade"),
    }
    if ng is not None:
        out.update(
            nemo_gym_function=ng_what,
            nemo_gym_rows_per_cpu_s=rate("ng_extract"),
            nemo_gym_grade_rows_per_cpu_s=rate("ng_grade"),
            ratio=round(t["ng_extract"] / t["extract"], 2),
            grade_ratio=round(t["ng_grade"] / t["grade"], 2),
            same_letter_as_nemo_gym=round(agree / rows, 4),
        )
    return out


def _nemo_gym() -> Any:
    try:
        import nemo_gym_ref

        return nemo_gym_ref.load()
    except Exception:  # not installed (make bench-deps): our rates alone, marked as such
        return None


def run(
    rows: int = 100_000, seed: int = SEED, repeat: int = 3, baseline_rev: str | None = None
) -> dict[str, Any]:
    """Every mode on `rows` English and `rows` multilingual responses, next to NeMo Gym 0.7.0's functions (and,
    with baseline_rev, strict extraction on that revision's package: before/after in the same run)."""
    out: dict[str, Any] = {
        f"{lang}:{name}": bench_mode(name, rows, seed, lang, repeat) for lang in LANGS for name in MODES
    }
    out["_nemo_gym"] = _nemo_gym_version()
    if baseline_rev:
        out["_baseline"] = {"rev": baseline_rev, **baseline_rates(baseline_rev, rows, seed, repeat)}
    return out


BASELINE_MODES = ("strict_single_letter_boxed",)
BASELINE_CHILD = """
import json, sys
sys.path.insert(0, {tree!r})
sys.path.insert(1, {here!r})
import mcqa_prep  # the revision's package, imported first: bench_grader's own path setup must not shadow it
assert mcqa_prep.__file__.startswith({tree!r}), mcqa_prep.__file__
import bench_grader as bg
from mcqa_prep.grader.letters import allowed_letters
out = {{}}
for lang in bg.LANGS:
    for name in {modes!r}:
        _, tm, fn = bg._spec(name)
        it = bg.rows_for(name, {rows}, {seed}, lang)
        t = done = 0
        while done < {rows}:
            chunk = [next(it) for _ in range(min(bg.CHUNK, {rows} - done))]
            mine = [(x, allowed_letters(o)) for x, o, _g in chunk]
            t += bg._best(lambda mine=mine: [fn(x, a, tm) for x, a in mine], {repeat})
            done += len(chunk)
        out[f"{{lang}}:{{name}}"] = round({rows} / t)
print(json.dumps(out))
"""


def baseline_rates(rev: str, rows: int, seed: int, repeat: int) -> dict[str, Any]:
    """Extraction rates of BASELINE_MODES on `rev`'s package (git archive, child process), same rows."""
    import subprocess
    import tempfile

    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="bench-grader-rev-") as tree:
        archive = subprocess.run(["git", "-C", str(repo), "archive", rev, "mcqa_prep"], capture_output=True)
        if archive.returncode != 0:
            return {"error": archive.stderr.decode(errors="replace").strip()[:200]}
        subprocess.run(["tar", "-x", "-C", tree], input=archive.stdout, check=True)
        code = BASELINE_CHILD.format(
            tree=tree, here=str(Path(__file__).resolve().parent), modes=BASELINE_MODES, rows=rows, seed=seed,
            repeat=repeat,
        )  # fmt: skip
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tree)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def _nemo_gym_version() -> str | None:
    try:
        import nemo_gym_ref

        return nemo_gym_ref.version() if _nemo_gym() is not None else None
    except Exception:
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    results = run(args.rows, args.seed, args.repeat)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{'mode':48} {'ours/s':>9} {'NeMo Gym/s':>10} {'ratio':>6} {'grade ratio':>11} {'same':>6}")
    for name, r in results.items():
        if name.startswith("_"):
            continue
        print(
            f"{name:48} {r['rows_per_cpu_s']:>9,} {r.get('nemo_gym_rows_per_cpu_s') or 0:>10,} "
            f"{r.get('ratio') or 0:>5.2f}x {r.get('grade_ratio') or 0:>10.2f}x {r.get('same_letter_as_nemo_gym', 0):>6.1%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
