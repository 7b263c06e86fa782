"""Generated multiple-choice questions for the audit's held-back tests and its benchmark (no internet needed).

Method: questions are built from ~60 English question frames ("Which of the following best explains why {a}
affects {b}?"), filled with topic terms, and joined into one to three sentences, so lengths run from 6 to 60
words as in MMLU and GPQA. Each of 48 topics has its own 600 pseudo-words (two to four syllables, drawn by a
Zipf law, as real terms are), beside ~150 shared English words; options are one to four terms or a short
sentence. So questions of one topic share frames, function words and terms the way real questions of one
subject do, and differ in their content, as real ones do: the clean rows a detector must not flag.

Benchmark files in three real layouts (all read by `convert`'s presets): MMLU (question, subject, choices,
answer index; JSONL), MMLU-Pro (question_id, question, options up to 10, answer letter, answer_index,
category; Parquet) and GPQA (Question, Correct Answer, Incorrect Answer 1..3, Record ID, Subdomain; CSV).
Dataset rows are NeMo Gym rows rendered with several instruction templates and label styles (as the real
Nemotron-RL-knowledge-mcqa rows are). `edit(...)` makes the light edits of the held-back check.
"""

from __future__ import annotations

import csv
import itertools
import json
import random
import string
import uuid as uuidlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

LETTERS = string.ascii_uppercase
SYLLABLES = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"] + [
    "ar",
    "el",
    "on",
    "ix",
    "um",
    "ys",
    "or",
    "en",
]
COMMON = (
    "the a of in to and is are was which what how why when where that this these those with from by for on "
    "at as between under over during after before most least best likely primary main first second process "
    "effect cause result change increase decrease rate level system structure function role value number "
    "amount form type group cell layer model theory law principle method study experiment sample patient "
    "person country period state market price force energy field area region source product reaction "
    "condition response factor feature property pattern relationship difference property stage unit"
).split()
FRAMES = [
    "Which of the following best describes {a}?",
    "Which of the following best explains why {a} affects {b}?",
    "What is the primary function of {a} in {b}?",
    "What is the most likely cause of {a} in {b}?",
    "Which statement about {a} is correct?",
    "Which of the following is not a property of {a}?",
    "According to {a}, what happens to {b} when {c} increases?",
    "Which of the following is the best example of {a}?",
    "What role does {a} play in {b}?",
    "How does {a} differ from {b}?",
    "Which factor most strongly influences {a}?",
    "In {a}, which of the following would decrease {b}?",
    "What is the relationship between {a} and {b}?",
    "Which of the following results from {a}?",
    "Why is {a} considered essential for {b}?",
    "Which of the following conditions favors {a} over {b}?",
    "What would most likely happen to {a} if {b} were removed?",
    "Which process converts {a} into {b}?",
    "Which of these is characteristic of {a}?",
    "What distinguishes {a} from {b} and {c}?",
    "A {a} is observed near {b}.",
    "In a study of {a}, researchers measured {b}.",
    "Consider a {a} that contains {b} and {c}.",
    "Suppose that {a} is doubled while {b} stays constant.",
    "A patient presents with {a} after exposure to {b}.",
    "During {a}, the level of {b} rises sharply.",
    "An experiment compares {a} with {b} under {c}.",
    "The {a} of a {b} depends on {c}.",
    "After {a}, a sample of {b} was analysed.",
    "It is known that {a} inhibits {b}.",
    "A country introduces {a} to reduce {b}.",
    "Two groups were exposed to {a} and {b} respectively.",
    "The rate of {a} was recorded at several values of {b}.",
    "Historians link {a} to {b}.",
    "A firm faces rising {a} and falling {b}.",
    "Given that {a} equals {b}, find {c}.",
    "Which of the following must be true of {a}?",
    "Which observation supports the claim that {a} causes {b}?",
    "What is the expected effect of {a} on {b}?",
    "Which of the following would a {a} most likely use to measure {b}?",
]
OPTION_FRAMES = [
    "It increases {a}.",
    "It decreases {a} but not {b}.",
    "{a} is converted into {b}.",
    "Because {a} binds to {b}.",
    "Only {a} is affected.",
    "{a} and {b} remain constant.",
    "The {a} of {b} doubles.",
    "It depends on {a}.",
]
# (instruction, label style) of the dataset's templates; "{problem}" marks a template_prompt template
TEMPLATES = [
    (
        "You should output your final response letter inside \\boxed{} and nothing else You can first think step-by-step. ",
        "{L}: ",
    ),
    (
        "Answer the following multiple choice question. The last line of your response should be 'Answer: \\boxed{{X}}' where X is one of {letters}.\n\n{problem}",
        "{L}) ",
    ),
    ("", "({L}) "),
    ("Read the question and choose the single best answer.\n\n", "{L}. "),
    ("Question: ", "{L}: "),
]


class Vocabulary:
    """Topic terms (pseudo-words, Zipf-distributed) and the shared English words."""

    def __init__(self, seed: int = 7, topics: int = 48, terms: int = 600) -> None:
        rnd = random.Random(seed)
        seen: set[str] = set(COMMON)
        self.topics: list[list[str]] = []
        for _ in range(topics):
            words: list[str] = []
            while len(words) < terms:
                w = "".join(rnd.choice(SYLLABLES) for _ in range(rnd.randint(2, 4)))
                if w not in seen:
                    seen.add(w)
                    words.append(w)
            self.topics.append(words)
        self.cum = list(itertools.accumulate(1 / (k + 1) for k in range(terms)))

    def terms(self, rnd: random.Random, topic: int, n: int) -> list[str]:
        return rnd.choices(self.topics[topic], cum_weights=self.cum, k=n)


def _phrase(rnd: random.Random, vocab: Vocabulary, topic: int) -> str:
    t = vocab.terms(rnd, topic, rnd.randint(1, 3))
    if rnd.random() < 0.4:
        t = [rnd.choice(COMMON), *t]
    return " ".join(t)


def _fill(rnd: random.Random, vocab: Vocabulary, topic: int, frame: str) -> str:
    return frame.format(**{k: _phrase(rnd, vocab, topic) for k in "abc" if "{" + k + "}" in frame})


def question(rnd: random.Random, vocab: Vocabulary, topic: int, n_options: int = 4) -> dict[str, Any]:
    """One question: text (one to three sentences, a question last), options, gold index, subject."""
    lead = [
        _fill(rnd, vocab, topic, rnd.choice(FRAMES[20:36]))
        for _ in range(rnd.choices((0, 1, 2), (4, 4, 2))[0])
    ]
    ask = _fill(rnd, vocab, topic, rnd.choice(FRAMES[:20] + FRAMES[36:]))
    text = " ".join([*lead, ask])
    text = text[0].upper() + text[1:]
    long_options = rnd.random() < 0.35
    options: list[str] = []
    while len(options) < n_options:
        if long_options:
            o = _fill(rnd, vocab, topic, rnd.choice(OPTION_FRAMES))
        else:
            o = " ".join(vocab.terms(rnd, topic, rnd.randint(1, 4)))
        o = o[0].upper() + o[1:]
        if o not in options:
            options.append(o)
    return {
        "question": text,
        "options": options,
        "gold": rnd.randrange(n_options),
        "subject": f"topic_{topic}",
    }


def questions(
    seed: int, n: int, topics: range, vocab: Vocabulary, n_options=(4,)
) -> Iterator[dict[str, Any]]:
    rnd = random.Random(seed)
    for _ in range(n):
        yield question(rnd, vocab, rnd.choice(topics), rnd.choice(n_options))


# ---- benchmark files --------------------------------------------------------------------------------------


def write_mmlu(path: Path, items: list[dict[str, Any]]) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for q in items:
            fh.write(
                json.dumps(
                    {
                        "question": q["question"],
                        "subject": q["subject"],
                        "choices": q["options"],
                        "answer": q["gold"],
                    }
                )
                + "\n"
            )
    return path


def write_mmlu_pro(path: Path, items: list[dict[str, Any]]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {
            "question_id": k,
            "question": q["question"],
            "options": q["options"],
            "answer": LETTERS[q["gold"]],
            "answer_index": q["gold"],
            "cot_content": "",
            "category": q["subject"],
            "src": "generated",
        }
        for k, q in enumerate(items)
    ]
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def write_gpqa(path: Path, items: list[dict[str, Any]]) -> Path:
    cols = [
        "Question",
        "Correct Answer",
        "Incorrect Answer 1",
        "Incorrect Answer 2",
        "Incorrect Answer 3",
        "Record ID",
        "Subdomain",
    ]
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for k, q in enumerate(items):
            opts = q["options"]
            wrong = [o for i, o in enumerate(opts) if i != q["gold"]][:3]
            w.writerow([q["question"], opts[q["gold"]], *wrong, f"rec{k:05d}", q["subject"]])
    return path


# ---- dataset rows -----------------------------------------------------------------------------------------


def row(
    q: dict[str, Any], rnd: random.Random, template: int | None = None, uid: str | None = None
) -> dict[str, Any]:
    """A NeMo Gym row for question q, rendered with one of TEMPLATES (options in q's order)."""
    k = rnd.randrange(len(TEMPLATES)) if template is None else template
    instruction, label = TEMPLATES[k]
    letters = LETTERS[: len(q["options"])]
    block = "\n".join(label.format(L=L) + o for L, o in zip(letters, q["options"], strict=True))
    problem = q["question"] + "\n" + block
    r: dict[str, Any] = {"options": [{L: o} for L, o in zip(letters, q["options"], strict=True)]}
    if "{problem}" in instruction:
        tp = instruction
        prompt = (
            tp.replace("{{X}}", "{X}").replace("{letters}", "/".join(letters)).replace("{problem}", problem)
        )
        r["template_metadata"] = {
            "template_id": f"tpl_{k}",
            "template_prompt": tp,
            "output_regex": r"Answer:\s*\\boxed\{\s*([A-Za-z])\s*\}",
        }
    else:
        prompt = instruction + problem
    r["responses_create_params"] = {"input": [{"role": "user", "content": prompt}]}
    r["expected_answer"] = letters[q["gold"]]
    r["uuid"] = uid or str(uuidlib.UUID(int=rnd.getrandbits(128), version=4))
    r["grading_mode"] = "strict_single_letter_boxed"
    return r


def shuffled(q: dict[str, Any], rnd: random.Random) -> dict[str, Any]:
    order = list(range(len(q["options"])))
    while len(order) > 1 and order == sorted(order):
        rnd.shuffle(order)
    return {**q, "options": [q["options"][i] for i in order], "gold": order.index(q["gold"])}


EDITS = ("punctuation", "whitespace", "one_word", "letter_prefix", "case")


def edit(q: dict[str, Any], kind: str, rnd: random.Random, vocab: Vocabulary) -> dict[str, Any]:
    """A light edit of question q (options shuffled too)."""
    q = shuffled(q, rnd)
    text, opts = q["question"], list(q["options"])
    if kind == "punctuation":
        text = text.replace("?", "").replace(".", ";").replace(",", "") + " ?"
        opts = [o.rstrip(".") + ("." if rnd.random() < 0.5 else "") for o in opts]
    elif kind == "whitespace":
        text = "  " + text.replace(" ", "  ", 3).replace(". ", ".\n", 1) + " "
        opts = [" " + o + "\t" for o in opts]
    elif kind == "one_word":
        w = text.split()
        i = rnd.randrange(len(w))
        w[i] = rnd.choice(vocab.topics[rnd.randrange(len(vocab.topics))])
        text = " ".join(w)
    elif kind == "letter_prefix":
        opts = [f"({L}) {o}" for L, o in zip(LETTERS, opts, strict=False)]
    elif kind == "case":
        text, opts = text.upper(), [o.lower() for o in opts]
    return {**q, "question": text, "options": opts}
