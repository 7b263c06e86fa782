"""Small source files in the public layouts convert has presets for, built by the tests.

Each builder turns a question bank (question, choices, gold index) into rows with the dataset's real column
names and answer encoding (GPQA: Question / Correct Answer / Incorrect Answer 1..3; MMLU: choices + index;
ARC: choices {text, label} + answerKey that may be a digit; ...). `Case.gold_text` is what the converted
row's expected_answer must point at.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
WORDS = (
    "granite",
    "osmosis",
    "enzyme",
    "photon",
    "tectonic",
    "isotope",
    "neuron",
    "catalyst",
    "glacier",
    "mitosis",
    "vector",
    "torque",
    "lattice",
    "plasma",
    "ribosome",
    "sediment",
)


@dataclass
class Case:
    question: str
    choices: list[str]
    gold: int

    @property
    def gold_text(self) -> str:
        return self.choices[self.gold]


def bank(n: int, n_choices: int | Callable[[int], int] = 4, seed: int = 0) -> list[Case]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        k = n_choices(i) if callable(n_choices) else n_choices
        words = rnd.sample(WORDS, 3)
        q = f"Question {i}: which term goes with {' and '.join(words[:2])} in setting {rnd.randint(1, 999)}?"
        choices = [f"{rnd.choice(WORDS)} {w} {i}.{j}" for j, w in enumerate(rnd.sample(WORDS * 2, k))]
        out.append(Case(q, choices, rnd.randrange(k)))
    return out


def _others(c: Case) -> list[str]:
    return [t for j, t in enumerate(c.choices) if j != c.gold]


def gpqa(cases: list[Case]) -> list[dict[str, Any]]:
    rows = []
    for i, c in enumerate(cases):
        wrong = _others(c)
        rows.append(
            {
                "Pre-Revision Question": c.question,
                "Question": c.question,
                "Correct Answer": c.gold_text,
                "Incorrect Answer 1": wrong[0],
                "Incorrect Answer 2": wrong[1],
                "Incorrect Answer 3": wrong[2],
                "Explanation": "because",
                "Record ID": f"rec{i:04d}",
                "High-level domain": "Physics",
                "Subdomain": "Quantum Mechanics",
            }
        )
    return rows


def mmlu(cases):
    return [
        {"question": c.question, "subject": "college_physics", "choices": c.choices, "answer": c.gold}
        for c in cases
    ]


def mmlu_pro(cases):
    rows = []
    for i, c in enumerate(cases):
        opts = list(c.choices)
        if i % 3 == 0 and len(opts) < 10:  # the N/A padding of MMLU-Pro's later releases
            opts = opts + ["N/A"] * (10 - len(opts))
        rows.append(
            {
                "question_id": 70 + i,
                "question": c.question,
                "options": opts,
                "answer": LETTERS[c.gold],
                "answer_index": c.gold,
                "cot_content": "",
                "category": "physics",
                "src": "ori_mmlu-college_physics",
            }
        )
    return rows


def supergpqa(cases):
    return [
        {
            "uuid": f"u{i}",
            "question": c.question,
            "options": c.choices,
            "answer": c.gold_text,
            "answer_letter": LETTERS[c.gold],
            "discipline": "Science",
            "field": "Physics",
            "subfield": "Optics",
            "difficulty": "middle",
            "is_calculation": False,
        }
        for i, c in enumerate(cases)
    ]


def medqa(cases):
    return [
        {
            "question": c.question,
            "answer": c.gold_text,
            "options": {LETTERS[j]: t for j, t in enumerate(c.choices)},
            "meta_info": "step1",
            "answer_idx": LETTERS[c.gold],
        }
        for c in cases
    ]


def race(cases):
    return [
        {
            "example_id": f"high{i}.txt",
            "article": f"Article {i}: a short passage about the {WORDS[i % len(WORDS)]}.",
            "answer": LETTERS[c.gold],
            "question": c.question,
            "options": c.choices,
        }
        for i, c in enumerate(cases)
    ]


def commonsense_qa(cases):
    return [
        {
            "id": f"cs{i}",
            "question": c.question,
            "question_concept": "term",
            "choices": {"label": list(LETTERS[: len(c.choices)]), "text": c.choices},
            "answerKey": LETTERS[c.gold],
        }
        for i, c in enumerate(cases)
    ]


def openbookqa(cases):
    return [
        {
            "id": f"7-{i}",
            "question_stem": c.question,
            "choices": {"text": c.choices, "label": list(LETTERS[: len(c.choices)])},
            "answerKey": LETTERS[c.gold],
        }
        for i, c in enumerate(cases)
    ]


def qasc(cases):
    return [
        {
            "id": f"q{i}",
            "question": c.question,
            "choices": {"text": c.choices, "label": list(LETTERS[: len(c.choices)])},
            "answerKey": LETTERS[c.gold],
            "fact1": "f1",
            "fact2": "f2",
            "combinedfact": "cf",
            "formatted_question": c.question,
        }
        for i, c in enumerate(cases)
    ]


def arc(cases):
    rows = []
    for i, c in enumerate(cases):
        digits = i % 4 == 1  # some ARC rows label their choices 1..4 and key the answer as a digit
        labels = [str(j + 1) for j in range(len(c.choices))] if digits else list(LETTERS[: len(c.choices)])
        rows.append(
            {
                "id": f"Mercury_{i}",
                "question": c.question,
                "choices": {"text": c.choices, "label": labels},
                "answerKey": labels[c.gold],
            }
        )
    return rows


def medmcqa(cases):
    return [
        {
            "id": f"m{i}",
            "question": c.question,
            "opa": c.choices[0],
            "opb": c.choices[1],
            "opc": c.choices[2],
            "opd": c.choices[3],
            "cop": c.gold,
            "choice_type": "single",
            "exp": "",
            "subject_name": "Anatomy",
            "topic_name": "Head",
        }
        for i, c in enumerate(cases)
    ]


def sciq(cases):
    rows = []
    for c in cases:
        wrong = _others(c)
        rows.append(
            {
                "question": c.question,
                "distractor3": wrong[2],
                "distractor1": wrong[0],
                "distractor2": wrong[1],
                "correct_answer": c.gold_text,
                "support": "Supporting text.",
            }
        )
    return rows


def hellaswag(cases):
    return [
        {
            "ind": 24 + i,
            "activity_label": "Roof shingle removal",
            "ctx_a": c.question,
            "ctx_b": "",
            "ctx": c.question,
            "endings": c.choices,
            "source_id": "activitynet~v_x",
            "split": "val",
            "split_type": "indomain",
            "label": str(c.gold),
        }
        for i, c in enumerate(cases)
    ]


def social_iqa(cases):
    return [
        {
            "context": f"Context {i}.",
            "question": c.question,
            "answerA": c.choices[0],
            "answerB": c.choices[1],
            "answerC": c.choices[2],
            "label": str(c.gold + 1),
        }
        for i, c in enumerate(cases)
    ]


def piqa(cases):
    return [{"goal": c.question, "sol1": c.choices[0], "sol2": c.choices[1], "label": c.gold} for c in cases]


def winogrande(cases):
    return [
        {"sentence": c.question, "option1": c.choices[0], "option2": c.choices[1], "answer": str(c.gold + 1)}
        for c in cases
    ]


def truthfulqa_mc1(cases):
    return [
        {
            "question": c.question,
            "mc1_targets": {
                "choices": c.choices,
                "labels": [int(j == c.gold) for j in range(len(c.choices))],
            },
            "mc2_targets": {
                "choices": c.choices,
                "labels": [int(j == c.gold) for j in range(len(c.choices))],
            },
        }
        for c in cases
    ]


def mmmlu(cases):
    return [
        {
            "Unnamed: 0": i,
            "Question": c.question,
            "A": c.choices[0],
            "B": c.choices[1],
            "C": c.choices[2],
            "D": c.choices[3],
            "Answer": LETTERS[c.gold],
            "Subject": "abstract_algebra",
        }
        for i, c in enumerate(cases)
    ]


def ai2_raw(cases):
    """ARC / OpenBookQA / CommonsenseQA as AI2 distributes the JSONL: the question object holds the stem."""
    return [
        {
            "id": f"Mercury_{i}",
            "question": {
                "stem": c.question,
                "choices": [{"text": t, "label": LETTERS[j]} for j, t in enumerate(c.choices)],
            },
            "answerKey": LETTERS[c.gold],
        }
        for i, c in enumerate(cases)
    ]


def logiqa(cases):
    return [
        {"context": f"Passage {i}.", "query": c.question, "options": c.choices, "correct_option": c.gold}
        for i, c in enumerate(cases)
    ]


def aqua_rat(cases):
    return [
        {
            "question": c.question,
            "options": [f"{LETTERS[j]}){t}" for j, t in enumerate(c.choices)],
            "rationale": "Work it out.",
            "correct": LETTERS[c.gold],
        }
        for c in cases
    ]


def math_qa(cases):
    return [
        {
            "Problem": c.question,
            "Rationale": "explanation",
            "options": " , ".join(f"{LETTERS[j].lower()} ) {t}" for j, t in enumerate(c.choices)),
            "correct": LETTERS[c.gold].lower(),
            "annotated_formula": "add(n0, n1)",
            "linear_formula": "add(n0,n1)|",
            "category": "gain",
        }
        for c in cases
    ]


def global_mmlu(cases):
    return [
        {
            "sample_id": f"abstract_algebra/test/{i}",
            "subject": "abstract_algebra",
            "subject_category": "STEM",
            "question": c.question,
            "option_a": c.choices[0],
            "option_b": c.choices[1],
            "option_c": c.choices[2],
            "option_d": c.choices[3],
            "answer": LETTERS[c.gold],
            "required_knowledge": "[]",
            "time_sensitive": "No",
        }
        for i, c in enumerate(cases)
    ]


def lukaemon_mmlu(cases):
    return [
        {
            "input": c.question,
            "A": c.choices[0],
            "B": c.choices[1],
            "C": c.choices[2],
            "D": c.choices[3],
            "target": LETTERS[c.gold],
        }
        for c in cases
    ]


# preset -> (row builder, option count per question, file format)
LAYOUTS: dict[str, tuple[Callable, Any, str]] = {
    "gpqa": (gpqa, 4, "csv"),
    "mmlu": (mmlu, 4, "parquet"),
    "mmlu_pro": (mmlu_pro, lambda i: 4 + i % 7, "parquet"),
    "supergpqa": (supergpqa, lambda i: 4 + i % 7, "jsonl"),
    "medqa": (medqa, lambda i: 4 + i % 2, "jsonl"),
    "race": (race, 4, "parquet"),
    "commonsense_qa": (commonsense_qa, 5, "parquet"),
    "openbookqa": (openbookqa, 4, "parquet"),
    "qasc": (qasc, 8, "jsonl"),
    "arc": (arc, lambda i: 3 + i % 3, "parquet"),
    "medmcqa": (medmcqa, 4, "csv"),
    "sciq": (sciq, 4, "jsonl"),
    "hellaswag": (hellaswag, 4, "jsonl"),
    "social_iqa": (social_iqa, 3, "csv"),
    "piqa": (piqa, 2, "jsonl"),
    "winogrande": (winogrande, 2, "csv"),
    "truthfulqa_mc1": (truthfulqa_mc1, lambda i: 2 + i % 6, "parquet"),
    "mmmlu": (mmmlu, 4, "csv"),
    "ai2_raw": (ai2_raw, lambda i: 3 + i % 3, "jsonl"),
    "logiqa": (logiqa, 4, "parquet"),
    "aqua_rat": (aqua_rat, 5, "jsonl"),
    "math_qa": (math_qa, 5, "jsonl"),
    "global_mmlu": (global_mmlu, 4, "parquet"),
    "lukaemon_mmlu": (lukaemon_mmlu, 4, "csv"),
}


def write_rows(path: Path, rows: list[dict[str, Any]], fmt: str) -> Path:
    if fmt == "jsonl":
        with open(path, "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    elif fmt == "csv":
        with open(path, "w", encoding="utf-8", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            for r in rows:
                w.writerow(r)
    else:  # pragma: no cover
        raise ValueError(fmt)
    return path


def make_layout(
    tmp: Path, preset: str, n: int = 24, seed: int = 0, split: str = "test"
) -> tuple[Path, list[Case]]:
    builder, n_choices, fmt = LAYOUTS[preset]
    cases = bank(n, n_choices, seed=seed)
    path = tmp / f"{preset}_{split}.{fmt}"
    return write_rows(path, builder(cases), fmt), cases


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def option_text(row: dict[str, Any], letter: str) -> str:
    for o in row["options"]:
        if letter in o:
            return o[letter]
    raise KeyError(letter)
