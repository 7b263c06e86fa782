"""Writes the embedded sample in data/sample/ (run once; the output is committed).

Questions and responses were written for this project. train.jsonl uses single-key option dicts;
validation.parquet uses the Arrow shape in which every options element carries all letter keys with
nulls for the absent ones, as the hub's Parquet export does. rollouts.jsonl holds model responses with no
options, a recorded reward and extracted_answer; the committed file is then put in the exact form NeMo Gym's
rollout collection writes (its models' full dumps, task and rollout indices, the agent) by NeMo Gym's own code:
`.venv-gym/bin/python tests/gym_golden.py --sample-rollouts` (`make gym-venv` builds that venv).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

OUT = Path(__file__).resolve().parents[1] / "data" / "sample"
NS = uuid.UUID("6f1c1d3e-3a59-4c3b-9b1e-6a7e0c1d2f00")

BOXED = "You should output your final response letter inside \\boxed{} and nothing else You can first think step-by-step. "
T_ANSWER_BOXED = {
    "template_id": "sample_answer_boxed",
    "template_prompt": "Answer the following multiple choice question. The last line of your response should be 'Answer: \\boxed{{X}}' where X is one of {letters}.\n\n{problem}",
    "output_regex": "Answer:\\s*\\\\boxed\\{\\s*([A-J])\\s*\\}",
    "prompt_type": "sample",
    "format_type": "mcqa",
}
T_CONCLUDE = {
    "template_id": "sample_conclude_caps",
    "template_prompt": '{problem}\n\nThink it through, then conclude with "ANSWER IS X" on its own line.',
    # a case-sensitive option letter with nothing but punctuation after it on its line (validate's audit)
    "output_regex": ["ANSWER IS\\s*\\(?((?-i:[A-J]))\\)?(?![^\\n]*\\w)", "\\\\boxed\\{\\s*([A-J])\\s*\\}"],
    "prompt_type": "sample",
    "format_type": "mcqa",
}

QUESTIONS = [
    (
        "Which organelle is the primary site of ATP synthesis by oxidative phosphorylation in eukaryotic cells?",
        ["Nucleus", "Mitochondrion", "Golgi apparatus", "Lysosome"],
        "B",
    ),
    ("What is the SI unit of electrical capacitance?", ["Henry", "Ohm", "Farad", "Tesla"], "C"),
    (
        "Which gas makes up the largest fraction of Earth's dry atmosphere by volume?",
        ["Oxygen", "Argon", "Carbon dioxide", "Nitrogen"],
        "D",
    ),
    (
        "Which enzyme unwinds the DNA double helix at the replication fork?",
        [
            "DNA ligase",
            "Primase",
            "Helicase",
            "Topoisomerase II",
            "DNA polymerase I",
            "Telomerase",
            "Reverse transcriptase",
            "RNase H",
            "Single-strand binding protein",
            "Exonuclease III",
        ],
        "C",
    ),
    (
        "Which quantum number determines the shape of an atomic orbital?",
        [
            "Principal quantum number n",
            "Azimuthal quantum number l",
            "Magnetic quantum number m_l",
            "Spin quantum number m_s",
            "Nuclear spin quantum number I",
            "Total angular momentum quantum number j",
            "Isospin",
            "Parity",
            "Hyperfine quantum number F",
            "Number of radial nodes",
        ],
        "B",
    ),
    ("What is the pH of a 0.001 M aqueous HCl solution at 25 °C?", ["1", "2", "3", "4"], "C"),
    (
        "Which law states that the pressure of a fixed amount of gas is inversely proportional to its volume at constant temperature?",
        ["Charles's law", "Boyle's law", "Avogadro's law", "Gay-Lussac's law"],
        "B",
    ),
    (
        "Which of the following elements is a noble gas?",
        [
            "Chlorine",
            "Sodium",
            "Nitrogen",
            "Oxygen",
            "Krypton",
            "Fluorine",
            "Hydrogen",
            "Sulfur",
            "Carbon",
            "Phosphorus",
        ],
        "E",
    ),
    (
        "In which phase of mitosis do sister chromatids separate and move to opposite poles?",
        ["Prophase", "Metaphase", "Anaphase", "Telophase"],
        "C",
    ),
    (
        "Which particle mediates the electromagnetic interaction?",
        [
            "Gluon",
            "W boson",
            "Z boson",
            "Photon",
            "Graviton",
            "Higgs boson",
            "Pion",
            "Neutrino",
            "Electron",
            "Muon",
        ],
        "D",
    ),
    (
        "What is the approximate speed of light in vacuum?",
        ["3.0 × 10^5 m/s", "3.0 × 10^8 m/s", "3.0 × 10^10 m/s", "1.5 × 10^8 m/s"],
        "B",
    ),
    (
        "Which cells are primarily responsible for secreting antibodies?",
        ["Erythrocytes", "Platelets", "Plasma cells", "Neutrophils"],
        "C",
    ),
]

LETTERS = "ABCDEFGHIJ"


def problem(q, opts):
    return q + "\n" + "\n".join(f"{LETTERS[i]}: {t}" for i, t in enumerate(opts))


def make_row(i, q, opts, gold, template=None, grading_mode="strict_single_letter_boxed"):
    letters = "/".join(LETTERS[: len(opts)])
    if template is None:
        content = BOXED + problem(q, opts)
    else:
        content = (
            template["template_prompt"].replace("{letters}", letters).replace("{problem}", problem(q, opts))
        )
        content = content.replace("{{", "{").replace("}}", "}")
    row = {
        "responses_create_params": {"input": [{"role": "user", "content": content}]},
        "options": [{LETTERS[k]: t} for k, t in enumerate(opts)],
        "expected_answer": gold,
        "uuid": str(uuid.uuid5(NS, q)),
    }
    if template is None:
        row["grading_mode"] = grading_mode
    else:
        row["template_metadata"] = template
    row["metadata"] = {"source": "mcqa-prep sample", "topic_index": i}
    return row


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, (q, opts, gold) in enumerate(QUESTIONS):
        # validation (i >= 8) goes to Parquet, where a column has one type: string output_regex only there
        template = (
            T_ANSWER_BOXED
            if i % 4 == 1
            else (T_CONCLUDE if i < 8 else T_ANSWER_BOXED)
            if i % 4 == 3
            else None
        )
        mode = "lenient_boxed" if i == 6 else "strict_single_letter_boxed"
        rows.append(make_row(i, q, opts, gold, template, mode))
    train, validation = rows[:8], rows[8:]
    with open(OUT / "train.jsonl", "w", encoding="utf-8") as fh:
        for r in train:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")

    # Arrow shape: every options element is a struct with all letter keys, nulls for absent ones.
    records = []
    keys = list(dict.fromkeys(k for r in validation for k in r))
    for r in validation:
        rec = {k: r.get(k) for k in keys}
        rec["options"] = [{L: opt.get(L) for L in LETTERS} for opt in r["options"]]
        records.append(rec)
    pq.write_table(pa.Table.from_pylist(records), OUT / "validation.parquet")

    # Rollouts: responses as a model wrote them; rewards recorded at training time.
    responses = {
        0: ("Oxidative phosphorylation happens on the inner mitochondrial membrane.\n\n\\boxed{B}", 1.0, "B"),
        1: ("Capacitance is charge per volt, measured in farads.\nAnswer: \\boxed{C}", 1.0, "C"),
        2: (
            "Nitrogen is about 78% of dry air.\n\n\\boxed{D: Nitrogen}",
            0.0,
            None,
        ),  # older grader missed label form
        3: ("Helicase breaks the hydrogen bonds between base pairs.\nANSWER IS C", 1.0, "C"),
        4: ("The azimuthal quantum number l sets the orbital shape (s, p, d, f).\n\n\\boxed{B}", 1.0, "B"),
        5: ("[H+] = 10^-3 M, so pH = 3. The answer is C.", 0.0, None),  # no box: strict gives 0
        6: ("Boyle's law: PV = const at fixed T.\n\n\\boxed{Boyle's law}", 1.0, "B"),
        7: ("Krypton is in group 18.\nANSWER IS (E)", 1.0, "E"),
        8: ("<think>Metaphase aligns; anaphase separates.</think>\n\\boxed{C}", 1.0, "C"),
        9: ("The photon is the gauge boson of electromagnetism.\n\\boxed{A}", 1.0, "A"),  # recorded wrongly
        10: ("c ≈ 3.0 × 10^8 m/s.\n\n\\boxed{B}", 1.0, "B"),
        11: ("", 0.0, None),
    }
    with open(OUT / "rollouts.jsonl", "w", encoding="utf-8") as fh:
        for i, r in enumerate(rows):
            text, reward, extracted = responses[i]
            rollout = {
                "responses_create_params": r["responses_create_params"],
                "response": {
                    "id": f"resp_sample_{i:02d}",
                    "object": "response",
                    "model": "sample-model",
                    "status": "completed",
                    "output": [
                        {
                            "id": f"msg_sample_{i:02d}",
                            "type": "message",
                            "role": "assistant",
                            "status": "completed",
                            "content": [{"type": "output_text", "text": text, "annotations": []}],
                        }
                    ],
                },
                "reward": reward,
                "expected_answer": r["expected_answer"],
                "extracted_answer": extracted,
                "uuid": r["uuid"],
            }
            fh.write(json.dumps(rollout, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
