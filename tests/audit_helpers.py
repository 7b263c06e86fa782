"""The audit's held-back set, generated (bench/audit_data.py says how the text is made) plus real text: the
NeMo Gym example rows' and the repo sample's questions become benchmark questions too.

- benchmarks: MMLU-shaped JSONL, MMLU-Pro-shaped Parquet (4, 9 and 10 options), GPQA-shaped CSV, and a JSONL
  file of the real questions (MMLU layout);
- train.jsonl: clean rows of the same topics (they share frames, terms and function words with the benchmark
  questions) and planted benchmark questions: verbatim, options shuffled, and each light edit (punctuation,
  whitespace, one word changed, letter prefixes on the options, case);
- validation.jsonl: clean rows and copies of train rows (exact, permuted options, one word changed): leakage;
- rollouts.jsonl: raw NeMo Gym rollouts (no options: joined by prompt) by two models on some train rows: rows
  whose models agree on a wrong letter (planted wrong keys), rows whose rollouts are split between the gold and
  another letter, and rows answered correctly.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from conftest import FIXTURES, REPO, SAMPLE
from response_helpers import fake_response

sys.path.insert(0, str(REPO / "bench"))

import audit_data as A  # noqa: E402

N_CLEAN_TRAIN = 20_000
N_CLEAN_VALIDATION = 2_000
N_VERBATIM = 300
N_SHUFFLED = 300
N_PER_EDIT = 100
N_LEAK = 40  # per leak kind
N_WRONG = 25
N_SPLIT = 25
N_RIGHT = 25
MODELS = ("org/model-a", "org/model-b")


def real_questions() -> list[dict[str, Any]]:
    """The questions of the NeMo Gym example rows and of the repo's sample (instruction and options cut)."""
    out = []
    seen = set()
    paths = [
        FIXTURES / "example.jsonl",
        FIXTURES / "example_with_template_metadata.jsonl",
        SAMPLE / "train.jsonl",
    ]
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            prompt = row["responses_create_params"]["input"][0]["content"]
            opts = [next(iter(o.values())) for o in row["options"]]
            head = prompt[: prompt.rfind(opts[0])]
            head = head[: head.rfind("\n")] if "\n" in head else head
            q = head.split("\n\n")[-1].split("step-by-step. ")[-1].strip()
            if q and q not in seen:
                seen.add(q)
                gold = "ABCDEFGHIJ".index(row["expected_answer"])
                out.append({"question": q, "options": opts, "gold": gold, "subject": "real"})
    return out


def build(tmp: Path) -> dict[str, Any]:
    """Write the held-back set into tmp; return the paths and the truth (line -> what was planted)."""
    vocab = A.Vocabulary()
    mmlu = list(A.questions(1, 1500, range(0, 24), vocab))
    pro = list(A.questions(2, 1500, range(12, 36), vocab, n_options=(10, 9, 4)))
    gpqa = list(A.questions(3, 600, range(24, 48), vocab))
    real = real_questions()
    bench = {
        "mmlu": A.write_mmlu(tmp / "mmlu.jsonl", mmlu),
        "mmlu_pro": A.write_mmlu_pro(tmp / "mmlu_pro.parquet", pro),
        "gpqa": A.write_gpqa(tmp / "gpqa.csv", gpqa),
        "real": A.write_mmlu(tmp / "real.jsonl", real),
    }
    items = mmlu + pro + gpqa
    rnd = random.Random(11)
    train: list[tuple[dict[str, Any], str]] = []
    clean_q: dict[int, dict[str, Any]] = {}  # id(row) -> its question, for the leaks
    for q in A.questions(9, N_CLEAN_TRAIN, range(0, 48), vocab, n_options=(4, 10)):
        r = A.row(q, rnd)
        clean_q[id(r)] = q
        train.append((r, "clean"))
    picks = rnd.sample(range(len(items)), N_VERBATIM + N_SHUFFLED + N_PER_EDIT * len(A.EDITS))
    for j, i in enumerate(picks):
        q = items[i]
        if j < N_VERBATIM:
            kind, qq = "verbatim", q
        elif j < N_VERBATIM + N_SHUFFLED:
            kind, qq = "shuffled", A.shuffled(q, rnd)
        else:
            kind = A.EDITS[(j - N_VERBATIM - N_SHUFFLED) % len(A.EDITS)]
            qq = A.edit(q, kind, rnd, vocab)
        train.append((A.row(qq, rnd), kind))
    for q in real:
        train.append((A.row(A.shuffled(q, rnd), rnd), "real"))
    rnd.shuffle(train)
    validation: list[tuple[dict[str, Any], str]] = []
    for q in A.questions(21, N_CLEAN_VALIDATION, range(0, 48), vocab, n_options=(4, 10)):
        validation.append((A.row(q, rnd), "clean"))
    sources = rnd.sample([k for k, (_, t) in enumerate(train) if t == "clean"], 3 * N_LEAK)
    for j, k in enumerate(sources):
        leak = _leak(train[k][0], clean_q[id(train[k][0])], j // N_LEAK, rnd, vocab)
        validation.append((leak, (LEAK_KINDS[j // N_LEAK], k + 1)))
    rnd.shuffle(validation)
    paths = {
        "train": _write(tmp / "train.jsonl", train),
        "validation": _write(tmp / "validation.jsonl", validation),
    }
    keys = _rollouts(tmp / "rollouts.jsonl", train, rnd)
    return {
        "bench": bench,
        "paths": paths,
        "train": [t for _, t in train],
        "validation": [t for _, t in validation],
        "keys": keys,
        "rollouts": tmp / "rollouts.jsonl",
    }


LEAK_KINDS = ("exact", "permuted_options", "near_duplicate")


def _leak(
    row: dict[str, Any], q: dict[str, Any], kind: int, rnd: random.Random, vocab: A.Vocabulary
) -> dict[str, Any]:
    """A train row again, in validation: the same row (another uuid), its question with the options permuted
    (under any template), or with one word changed."""
    if kind == 0:
        return {**row, "uuid": f"leak-{rnd.getrandbits(64):016x}"}
    if kind == 1:
        return A.row(A.shuffled(q, rnd), rnd)
    w = q["question"].split(" ")
    i = rnd.randrange(len(w) - 1)
    w[i] = rnd.choice(vocab.topics[0])
    return A.row({**q, "question": " ".join(w)}, rnd)


def _rollouts(
    path: Path, train: list[tuple[dict[str, Any], str]], rnd: random.Random
) -> dict[str, list[int]]:
    """Raw rollouts (8 per row, 4 per model) on some clean train rows; the lines of each planted kind."""
    clean = [k for k, (_, t) in enumerate(train) if t == "clean"]
    chosen = rnd.sample(clean, N_WRONG + N_SPLIT + N_RIGHT)
    kinds = {
        "wrong": chosen[:N_WRONG],
        "split": chosen[N_WRONG : N_WRONG + N_SPLIT],
        "right": chosen[-N_RIGHT:],
    }
    with open(path, "w", encoding="utf-8") as fh:
        for kind, rows in kinds.items():
            for k in rows:
                row = train[k][0]
                gold = row["expected_answer"]
                letters = [next(iter(o)) for o in row["options"]]
                other = rnd.choice([L for L in letters if L != gold])
                answers = {"wrong": [other] * 8, "split": [gold, other] * 4, "right": [gold] * 7 + [other]}[
                    kind
                ]
                if kind == "wrong":
                    answers[rnd.randrange(8)] = gold  # one dissenting rollout
                for j, a in enumerate(answers):
                    fh.write(json.dumps(_rollout(row, MODELS[j % 2], a)) + "\n")
    return {kind: [k + 1 for k in rows] for kind, rows in kinds.items()}


def _rollout(row: dict[str, Any], model: str, letter: str) -> dict[str, Any]:
    text = f"Let me think about each option carefully.\n\n\\boxed{{{letter}}}"
    return {
        "responses_create_params": {**row["responses_create_params"], "model": model},
        "response": fake_response(text, model=model),
    }


def _write(path: Path, rows: list[tuple[dict[str, Any], Any]]) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for r, _ in rows:
            fh.write(json.dumps(r) + "\n")
    return path
