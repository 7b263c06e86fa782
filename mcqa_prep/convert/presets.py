"""Column maps for the common public multiple-choice layouts, and detection of a layout from its columns.

Each preset is the layout of the public dataset as published on the Hugging Face hub (column names and
answer encodings checked against the datasets' cards; see docs/design/convert.md for the table). `detect` picks
the preset whose signature columns are all present; ties go to the preset listed first, so more specific
layouts come before the general ones they resemble.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import UsageError
from .shapes import ColumnMap


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    datasets: tuple[str, ...]  # hub ids in this layout (documentation and detection by name)
    cmap: ColumnMap
    signature: tuple[str, ...]  # columns that identify the layout (case-insensitive)


_GPQA_WRONG = ("Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3")

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "gpqa",
            "GPQA: Question, Correct Answer, Incorrect Answer 1..3 (the correct answer comes first: use --shuffle)",
            ("Idavidrein/gpqa",),
            ColumnMap(
                question="Question",
                correct="Correct Answer",
                incorrect=_GPQA_WRONG,
                id="Record ID",
                subject="Subdomain",
            ),
            ("Question", "Correct Answer", "Incorrect Answer 1"),
        ),
        Preset(
            "mmlu_pro",
            "MMLU-Pro: question, options (up to 10; 'N/A' padding dropped), answer_index (0-based)",
            ("TIGER-Lab/MMLU-Pro",),
            ColumnMap(
                question="question",
                choices="options",
                answer="answer_index",
                answer_type="index",
                id="question_id",
                subject="category",
                drop=("N/A",),
            ),
            ("question", "options", "answer_index"),
        ),
        Preset(
            "supergpqa",
            "SuperGPQA: question, options (list), answer_letter",
            ("m-a-p/SuperGPQA",),
            ColumnMap(
                question="question",
                choices="options",
                answer="answer_letter",
                answer_type="letter",
                id="uuid",
                subject="field",
            ),
            ("question", "options", "answer_letter"),
        ),
        Preset(
            "medqa",
            "MedQA (4/5 options): question, options {A: text, ...}, answer_idx (a letter)",
            ("GBaker/MedQA-USMLE-4-options",),
            ColumnMap(question="question", choices="options", answer="answer_idx", answer_type="label"),
            ("question", "options", "answer_idx"),
        ),
        Preset(
            "race",
            "RACE: article (context), question, options (list), answer (a letter)",
            ("ehovy/race",),
            ColumnMap(
                question="question",
                choices="options",
                answer="answer",
                answer_type="letter",
                context="article",
                id="example_id",
            ),
            ("article", "question", "options", "answer"),
        ),
        Preset(
            "mmlu",
            "MMLU: question, choices (list of 4), answer (0-based index)",
            ("cais/mmlu", "hails/mmlu_no_train"),
            ColumnMap(
                question="question",
                choices="choices",
                answer="answer",
                answer_type="index",
                subject="subject",
            ),
            ("question", "choices", "answer"),
        ),
        Preset(
            "commonsense_qa",
            "CommonsenseQA: question, choices {label, text}, answerKey (a label, A-E)",
            ("tau/commonsense_qa",),
            ColumnMap(
                question="question",
                choices="choices",
                answer="answerKey",
                answer_type="label",
                id="id",
                subject="question_concept",
            ),
            ("question", "question_concept", "choices", "answerKey"),
        ),
        Preset(
            "openbookqa",
            "OpenBookQA: question_stem, choices {text, label}, answerKey (a label)",
            ("allenai/openbookqa",),
            ColumnMap(
                question="question_stem", choices="choices", answer="answerKey", answer_type="label", id="id"
            ),
            ("question_stem", "choices", "answerKey"),
        ),
        Preset(
            "qasc",
            "QASC: question, choices {text, label} (8), answerKey (a label)",
            ("allenai/qasc",),
            ColumnMap(
                question="question", choices="choices", answer="answerKey", answer_type="label", id="id"
            ),
            ("question", "choices", "answerKey", "combinedfact"),
        ),
        Preset(
            "arc",
            "ARC: question, choices {text, label}, answerKey (a label: a letter, or a digit for some rows)",
            ("allenai/ai2_arc",),
            ColumnMap(
                question="question", choices="choices", answer="answerKey", answer_type="label", id="id"
            ),
            ("question", "choices", "answerKey"),
        ),
        Preset(
            "ai2_raw",
            "ARC / OpenBookQA / CommonsenseQA as AI2 ships them (JSONL): question {stem, choices [{text, label}]}, "
            "answerKey",
            (
                "allenai/ai2_arc (raw JSONL)",
                "allenai/openbookqa (raw JSONL)",
                "tau/commonsense_qa (raw JSONL)",
            ),
            ColumnMap(
                question="question.stem",
                choices="question.choices",
                answer="answerKey",
                answer_type="label",
                id="id",
            ),
            ("question", "answerKey"),
        ),
        Preset(
            "logiqa",
            "LogiQA: context, query, options (list), correct_option (0-based index)",
            ("lucasmccabe/logiqa",),
            ColumnMap(
                question="query",
                choices="options",
                answer="correct_option",
                answer_type="index",
                context="context",
            ),
            ("context", "query", "options", "correct_option"),
        ),
        Preset(
            "aqua_rat",
            "AQuA-RAT: question, options ('A)21', 'B)21.5', ...: the letter prefixes are removed), correct (a letter)",
            ("deepmind/aqua_rat",),
            ColumnMap(question="question", choices="options", answer="correct", answer_type="letter"),
            ("question", "options", "rationale", "correct"),
        ),
        Preset(
            "math_qa",
            "MathQA: Problem, options (one text: 'a ) 38 , b ) 27.6 , ...'), correct (a letter), category",
            ("allenai/math_qa", "math_qa"),
            ColumnMap(
                question="Problem",
                choices="options",
                answer="correct",
                answer_type="letter",
                subject="category",
            ),
            ("Problem", "Rationale", "options", "correct"),
        ),
        Preset(
            "global_mmlu",
            "Global-MMLU: question, option_a..option_d, answer (a letter), subject",
            ("CohereForAI/Global-MMLU",),
            ColumnMap(
                question="question",
                options=("option_a", "option_b", "option_c", "option_d"),
                answer="answer",
                answer_type="letter",
                id="sample_id",
                subject="subject",
            ),
            ("question", "option_a", "option_b", "option_c", "option_d", "answer"),
        ),
        Preset(
            "lukaemon_mmlu",
            "MMLU as input, A, B, C, D, target (a letter)",
            ("lukaemon/mmlu",),
            ColumnMap(question="input", options=("A", "B", "C", "D"), answer="target", answer_type="letter"),
            ("input", "A", "B", "C", "D", "target"),
        ),
        Preset(
            "medmcqa",
            "MedMCQA: question, opa..opd, cop (0-based index; -1 on the unlabelled test split)",
            ("openlifescienceai/medmcqa",),
            ColumnMap(
                question="question",
                options=("opa", "opb", "opc", "opd"),
                answer="cop",
                answer_type="index",
                id="id",
                subject="subject_name",
            ),
            ("question", "opa", "opb", "opc", "opd", "cop"),
        ),
        Preset(
            "sciq",
            "SciQ: question, correct_answer, distractor1..3 (the correct answer comes first: use --shuffle)",
            ("allenai/sciq",),
            ColumnMap(
                question="question",
                correct="correct_answer",
                incorrect=("distractor1", "distractor2", "distractor3"),
            ),
            ("question", "correct_answer", "distractor1"),
        ),
        Preset(
            "hellaswag",
            "HellaSwag: ctx (the question), endings (list of 4), label (0-based index, a string; empty on test)",
            ("Rowan/hellaswag",),
            ColumnMap(
                question="ctx",
                choices="endings",
                answer="label",
                answer_type="index",
                id="ind",
                subject="activity_label",
            ),
            ("ctx", "endings", "label"),
        ),
        Preset(
            "social_iqa",
            "Social IQa: context, question, answerA..C, label ('1'..'3', 1-based)",
            ("allenai/social_i_qa",),
            ColumnMap(
                question="question",
                options=("answerA", "answerB", "answerC"),
                answer="label",
                answer_type="index1",
                context="context",
            ),
            ("question", "answerA", "answerB", "answerC", "label"),
        ),
        Preset(
            "piqa",
            "PIQA: goal, sol1, sol2, label (0-based index)",
            ("ybisk/piqa",),
            ColumnMap(question="goal", options=("sol1", "sol2"), answer="label", answer_type="index"),
            ("goal", "sol1", "sol2", "label"),
        ),
        Preset(
            "winogrande",
            "WinoGrande: sentence, option1, option2, answer ('1' or '2', 1-based)",
            ("allenai/winogrande",),
            ColumnMap(
                question="sentence", options=("option1", "option2"), answer="answer", answer_type="index1"
            ),
            ("sentence", "option1", "option2", "answer"),
        ),
        Preset(
            "truthfulqa_mc1",
            "TruthfulQA (multiple_choice): question, mc1_targets {choices, labels} (one label is 1)",
            ("truthfulqa/truthful_qa",),
            ColumnMap(
                question="question",
                choices="mc1_targets.choices",
                answer="mc1_targets.labels",
                answer_type="flags",
            ),
            ("question", "mc1_targets"),
        ),
        Preset(
            "mmmlu",
            "One column per letter: Question, A, B, C, D, Answer (a letter) - openai/MMMLU, C-Eval, CMMLU",
            ("openai/MMMLU", "ceval/ceval-exam", "haonan-li/cmmlu"),
            ColumnMap(
                question="Question",
                options=("A", "B", "C", "D"),
                answer="Answer",
                answer_type="letter",
                id="id",
                subject="Subject",
            ),
            ("Question", "A", "B", "C", "D", "Answer"),
        ),
    )
}


def get_preset(name: str) -> Preset:
    key = name.strip().lower().replace("-", "_")
    aliases = {"ai2_arc": "arc", "csqa": "commonsense_qa", "obqa": "openbookqa", "mmlupro": "mmlu_pro"}
    key = aliases.get(key, key)
    if key not in PRESETS:
        raise UsageError(f"unknown preset {name!r}; presets: {', '.join(PRESETS)} (or 'auto')")
    return PRESETS[key]


def detect(columns: Sequence[str]) -> Preset | None:
    """The first preset whose signature columns are all present (case-insensitive), else None."""
    have = {c.casefold() for c in columns}
    for p in PRESETS.values():
        if all(s.casefold() in have for s in p.signature):
            return p
    return None


def for_dataset(repo: str) -> Preset | None:
    """The preset of a known hub dataset id (case-insensitive), else None."""
    r = repo.casefold()
    for p in PRESETS.values():
        if any(d.casefold() == r for d in p.datasets):
            return p
    return None
