"""Short witness texts for the `robust` phrase tables (tests/robust_ablation.py, --templates).

For an entry that no corpus case needs, a witness is a short text, written from a template of its table,
whose outcome (letter, status, rule) changes when the entry is removed. The generator tries the templates of
the entry's table in order and keeps the first witness that works; the text states what the entry does in
the plainest case ("Answer: B. because it fits." reads B only because "because" may follow a letter and its
period). An entry for which no template works does nothing the mode can show: it is removed from its table.

`{w}` is the entry (a word, a mark, a marker) or, for a regex fragment, a sample text it matches
(`sample()`); `{W}` the same capitalised; `{o}`/`{c}` the two halves of a pair (REASONING_MARKERS).
"""

from __future__ import annotations

import re
from typing import Any

try:
    from re import _parser as _sre  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_parse as _sre  # type: ignore[no-redef]

# The tables whose entries are regex fragments (the others hold plain text, marks included).
REGEX_TABLES = frozenset(
    """FIRST_PERSON_SUBJECTS SELF_CORRECTION_PATTERNS SELF_CORRECTION_FILLERS ORDINAL_COMMITS REVISION_MARKERS
    RETRACTIONS_AFTER RETRACTIONS_BEFORE HEDGE_BEFORE HEDGE_AFTER ALSO_VALID DISMISSALS_AFTER CLOSING_LINE_NEGATIONS
    CLOSING_LINE_DISMISSALS CLOSING_LINE_OTHERS CLOSING_LINE_VETOES REFUSALS_LATIN REFUSALS_OTHER FOLLOW_UP_MARKERS
    WALK_ANNOUNCEMENTS ANCHOR_LINK_VERBS AS_THE_ANSWER AS_THE_ANSWER_LEADS NONE_CORRECT""".split()
)
OPTIONS = {"A": "Mercury", "B": "Venus", "C": "Mars", "D": "Jupiter"}
TEN = {c: f"planet {c.lower()}" for c in "ABCDEFGHIJ"}
R = "Venus has the thickest atmosphere of the four planets; Mars is thin and Mercury has almost none."

# Per table: templates tried in order. A template is a text, or (text, options, template_metadata).
TEMPLATES: dict[str, list[Any]] = {
    "FUNCTION_WORDS_BEFORE_LETTER": ["Answer: well, {w} B.", R + "\n\nSo I settle {w} B.", "Answer: {w} B."],
    "WORDS_AFTER_LETTER_PERIOD": ["Answer: B. {w} fits.", "B. {w} is it"],
    "WORDS_AFTER_OPTION_LETTER": ["Answer: A {w} the rest.", ("Answer: I {w} the rest.", TEN, None)],
    "WORDS_AFTER_OPTION_A": ["Answer: A {w} fit here.", "Answer: A {w}"],
    "OPTION_WORD_STEMS_AFTER_LETTER": ["Cavab: A {w}ı.", "Cevap: A {w}i"],
    "PAYLOAD_FILLER_WORDS": ["Answer: {w} b", "Answer: {w} (b)", "Answer: {w}: b"],
    "PAYLOAD_FILLER_CJK": ["答案：{w}b", "答案：{w} b"],
    "CLOSING_LINE_VETOES": [R + "\n\n{W} B.", R + "\n\nB {w}.", R + "\n\nThat leaves {w} B."],
    "CLOSING_LINE_NEGATIONS": [R + "\n\n{W} B.", R + "\n\nB {w}.", R + "\n\nThat leaves {w} B."],
    "CLOSING_LINE_DISMISSALS": [R + "\n\n{W} B.", R + "\n\nB {w}.", R + "\n\nThat leaves {w} B."],
    "CLOSING_LINE_OTHERS": [R + "\n\n{W} B.", R + "\n\nB {w}.", R + "\n\nThat leaves {w} B."],
    "CLOSING_TEXT_VETOES": [
        "It has the thickest atmosphere.\n\nPeople {w} call it Venus.",
        "Dense air.\n\n{W}, it is Venus.",
    ],
    "CLOSING_REMARK_CONTRASTS": [
        R + "\n\nLeft standing: B.\nC fails, {w} D works.",
        R + "\n\nThat leaves B.\nC fails, {w} D works.",
        R + "\n\nThat leaves B.\n(C {w} fails.)",
    ],
    "CONCLUSION_WORDS": [R + "\n\n{W}, B.", R + "\n\n{W} B."],
    "CONCLUSION_LINKS": [R + "\n\nSo {w} B.", R + "\n\nThus {w} B."],
    "CONCLUSION_ARROWS": [R + "\n\nthickest {w} B"],
    "REVISION_MARKERS": ["Answer: B\n\n{W}, the numbers need another look.\n\nC", "Answer: B\n\n{w}\n\nC"],
    "RETRACTIONS_AFTER": ["Answer: B\n\nHmm, actually no. B {w}."],
    "RETRACTIONS_BEFORE": ["Answer: B\n\nHmm, wait. I'm {w} it's B."],
    "NEGATIONS_BEFORE": ["Answer: {w} B, C.", "Answer: {w} B but C", R + "\n\nNot A, {w} B, so C."],
    "NEGATIONS_BEFORE_CJK": ["答案：{w}B，是C"],
    "NEGATED_PAYLOAD": ["The answer is {w} B.", "Answer: {w} B."],
    "DISMISSALS_AFTER": ["Answer: B {w}, C.", "Answer: C. B {w}.", "Answer: B {w}"],
    "HEDGE_BEFORE": ["Answer: {w} B, or {w} C.", "Answer: {w} B or C"],
    "HEDGE_AFTER": [
        "Answer: in short, B {w} work and C {w} work.",
        "Answer: B {w}, C {w}.",
        "Answer: B {w} be, C {w} be.",
        "Answer: maybe B, or C {w}.",
        "Answer: B {w}, C {w}.",
        "Answer: B {w} or C",
    ],
    "ALSO_VALID": ["The answer is C. The answer is B {w}.", "Answer: B. C {w}.", "\\boxed{{B}}\n\nC {w}."],
    "CONDITIONAL_BEFORE": [
        "{W} the pressure were lower, the answer would be B.",
        "Answer: {w} it is dense, B",
    ],
    "CONDITIONAL_AFTER": ["The answer is B {w} the pressure is high.", "I choose B {w} it is dense."],
    "READING_VERBS": ["{W} one way, the answer is B; read the other way, it is C."],
    "READING_NOUNS": ["On one {w}, the answer is B."],
    "LETTER_NAMES": ['উত্তর: "{w}"', "उत्तर: {w}"],
    "NUMBER_LABEL_COUNTERS": [
        ("정답: 2{w}", OPTIONS, {"option_labels": "numbers"}),
        ("2{w}", OPTIONS, {"option_labels": "numbers"}),
    ],
    "FORMULA_OPERATORS": ["Answer: B {w} 2", "Answer: 2 {w} B", "B{w}C"],
    "SPECIAL_TOKENS": [
        "</think>{w}\nB\n{w}",
        "</think>\n\n{w}B{w}",
        "Answer: {w}B",
        "The answer is C.</think>{w}\n\nB",
    ],
    "REASONING_MARKERS": ["{o}\nThe answer is C.\n{c}\n\nB", "{o}\nThe answer is C."],
    "FOLLOW_UP_MARKERS": ["Answer: B\n\n{w} What is the largest planet?\nAnswer: D"],
    "FOLLOW_UP_WORDS": [
        "Answer: B\n\n{W}: What is the largest planet?\nAnswer: D",
        "Answer: B\n\n{w}：What?\nAnswer: D",
    ],
    "SUB_ITEM_PREFIXES": ["{W} (a): the answer is B.\n{W} (b): the answer is C."],
    "NUMBERED_ITEM_PREFIXES": ["{W}1: B\n{W}2: C", "{W} 1: B\n{W} 2: C"],
    "INDEX_NUMBER_WORDS": ["Part {w}: C\nPart {n}: A", "Part {p}: C\nPart {w}: A"],
    "INDEX_ORDINAL_WORDS": ["Part {w}: C\nPart {n}: A", "Part {p}: C\nPart {w}: A"],
    "PART_ORDINALS": [
        "In the {w} case, the answer is (A). In the {n} case, the answer is (C).",
        "In the {p} case, the answer is (A). In the {w} case, the answer is (C).",
    ],
    "PART_NOUNS": ["In the first {w}, the answer is (A). In the second {w}, the answer is (C)."],
    "LISTING_VERDICT_WORDS": [
        "Checks: A: {w}; B: {w}; C: {w}.\nAnswer: B",
        R + "\n\nB. {w}\nC.",
        "Checking each.\nA. {w}\nB. {w}\nC.",
    ],
    "LISTING_VERDICT_MARKS": [
        "Checks: A: {w}; B: {w}; C: {w}.\nAnswer: B",
        R + "\n\nB. {w}\nC.",
        "Checking each.\nA. {w}\nB. {w}\nC.",
    ],
    "JSON_ANSWER_KEYS": ['Reasoning done.\n{{"{w}": "b"}}', '{{"{w}": "B", "note": "x"}}'],
    "JSON_ANSWER_KEY_SUFFIXES": ['Reasoning done.\n{{"answer_{w}": "b"}}'],
    "WALK_ANNOUNCEMENTS": ["Let's {w}.\n\nA) Mercury", "We {w}.\n\nA) Mercury"],
    "DISCUSSION_WORDS": ["A: This {w} that the planet is small.", "A: it {w} it"],
    "DANGLING_WORDS": ["B is the one {w}", "B. It fits {w}"],
    "STOPWORDS": [
        (
            "Answer: hottest {w} the planets",
            {"A": "the coldest of the planets", "B": "the hottest of the planets"},
            None,
        )
    ],
    "LIST_SEPARATOR_WORDS": ["Answer: B {w} C", "B {w} C"],
    "LIST_SEPARATOR_SYMBOLS": ["Answer: B{w}C", "Answer: B {w} C", "B{w}C"],
    "LIST_JOINER_ADVERBS": ["Answer: B and {w} C", "Answer: B, or {w} C"],
    "LIST_JOINER_NOT_ADVERBS": ["Answer: B, or {w} C", "I'd pick D and {w} A"],
    "COORDINATORS": ["\\boxed{{B}} {w} \\boxed{{C}}", "Answer: B\n{w} Answer: C"],
    "COORDINATION_OPENERS": ["So, the answer could be {w} (A) Mercury or (D) Jupiter."],
    "REFUSALS_LATIN": ["Answer: {w}", "{W}."],
    "REFUSALS_OTHER": ["答案：{w}", "{w}"],
    "EXAMPLE_MARKERS": ["{W} \\boxed{{A}} is the format.", "Reply in the format [Answer]X, {w} [Answer]A"],
    "ANCHOR_DEMONSTRATIVES": ["{W} answer is B.", "{W} answer choice is B."],
    "QUALIFIERS": ["The {w} option is B.", "{W} choice: B"],
    "QUALIFIED_NOUNS": ["The correct {w} is B.", "The correct {w}: B"],
    "HEADING_NOUNS": [R + "\n\n{W}: B"],
    "QUALIFIER_DEGREE_WORDS": ["The {w} plausible option is B."],
    "NOUN_SUFFIX_CHOSEN": ["Option {w}: B"],
    "DRAFT_QUALIFIERS": ["{W} answer: B. Therefore C.", "{W} answer: B\n\nThat leaves C."],
    "ANCHOR_ADVERBS": ["The answer, {w}, is B.", "The answer {w} is B"],
    "ANCHOR_LINK_VERBS": ["The answer {w} B.", "The answer {w} B"],
    "HEDGED_LINKS": ["The answer {w} be B. The answer {w} be C.", "The answer {w} be B, or it {w} be C."],
    "CHOOSE_VERBS": ["I {w} B.", "We {w} (b)."],
    "FIRST_PERSON_SUBJECTS": ["{W} choose B.", "{W} pick (b)."],
    "IT_IS_PHRASES": ["Hmm, {w} B.", R + " {W} B."],
    "IT_IS_AFTER_LETTER": ["B {w}."],
    "MATCH_PHRASES": ["The result {w} B.", "which {w} (b)."],
    "SELF_CORRECTION_WORDS": ["Answer: B. {W}, C.", "Answer: B. {w} C"],
    "SELF_CORRECTION_PATTERNS": ["Answer: B. {W}, C.", "Answer: B. {w} C"],
    "SELF_CORRECTION_FILLERS": ["Answer: B. Wait, {w} C."],
    "OPTION_NOUNS": ["{W} b is correct.", "{W} B is correct.", "{W}s B and C are correct."],
    "VERDICT_COPULAS": ["B {w} the correct answer."],
    "VERDICT_SCOPE_WORDS": ["A and C are {w} correct.", "B is {w} the correct answer."],
    "VERDICT_ALSO_WORDS": ["Answer: B. C is {w} the correct answer.", "B is {w} correct."],
    "VERDICT_DETERMINERS": ["B is {w} answer.", "B is {w} best choice."],
    "VERDICT_RESTRICTORS": ["B is the {w} correct answer."],
    "VERDICT_NOUNS": ["B is the best {w}.", "B is the correct {w}"],
    "VERDICT_NOUNS_ALONE": ["B is the {w}.", "B is my {w}."],
    "VERDICT_ADJECTIVES": ["B is the {w} answer.", "B is {w}."],
    "VERDICT_FINAL_WORDS": ["B is my {w} answer."],
    "DISMISSING_ADJECTIVES": ["Answer: B. C is {w}."],
    "PLURAL_VERDICTS": ["A and C are {w}.", "A and C are both {w}."],
    "CJK_VERDICTS": ["选项B{w}", "B是{w}的"],
    "CJK_OPTION_WORDS": ["{w}B正确", "B{w}正确"],
    "CJK_PARTICLES": ["B{w}正确", "C{w}정답입니다"],
    "CJK_VERDICT_NEGATIONS_BEFORE": ["最终答案：A\n\nB{w}正确"],
    "CJK_VERDICT_NEGATIONS_AFTER": ["최종 정답: A\n\nB는 정답이 {w}니다"],
    "ORDINALS": ["That's the {w} option.", "I'll go with the {w} one."],
    "ORDINAL_NOUNS": ["That's the second {w}."],
    "ORDINAL_COMMITS": ["{W} the second option.", "So {w} the second option."],
    "CLOSING_COPULAS": [R + "\n\nThe planet in question {w} (B).", R + "\n\nThe planet {w} B."],
    "CLOSING_COPULAS_AFTER": ["정답은 B{w}.", "答えはB{w}。"],
    "ELIMINATION_BEFORE": ["This rules out A, {w} B.", "By {w} B."],
    "ELIMINATION_AFTER": ["Only B {w}.", "That way B {w}."],
    "AS_THE_ANSWER": ["So we get B {w}answer."],
    "AS_THE_ANSWER_LEADS": ["{W} B as the answer.", "So {w} B as the answer."],
    "FINAL_BEFORE_CJK": ["{w}答案：B"],
}
# Regex fragments whose sample() reads oddly: a plain example instead.
SAMPLES = {
    r"let\s+me\s+(?:re-?check|check|double[\s-]?check|verify|reconsider|re-?read|re-?examine|re-?evaluate|think\s+again)": "let me verify",
    r"\w+n['’]t": "don't",
    r"kein\w*": "keine",
    r"(?:では|じゃ)な": "ではな",
    r"\w+ly": "really",
}


def sample(fragment: str) -> str:
    """A short text the regex fragment matches (first alternatives, minimal repeats, a space for \\s)."""
    if fragment in SAMPLES:
        return SAMPLES[fragment]
    out = _sample(_sre.parse(fragment))
    return out if re.fullmatch(fragment, out, re.IGNORECASE) else fragment


def _sample(items: Any) -> str:
    out = []
    for op, av in items:
        if op is _sre.LITERAL:
            out.append(chr(av))
        elif op is _sre.IN:
            out.append(_class_char(av))
        elif op is _sre.BRANCH:
            out.append(_sample(av[1][0]))
        elif op is _sre.SUBPATTERN:
            out.append(_sample(av[-1]))
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT):
            out.append(_sample(av[2]) * av[0])
        elif op is _sre.ANY or op is _sre.NOT_LITERAL:
            out.append("x")
    return "".join(out)


def _class_char(av: Any) -> str:
    for op, v in av:
        if op is _sre.LITERAL:
            return chr(v)
        if op is _sre.RANGE:
            return chr(v[0])
        if op is _sre.CATEGORY:
            return {_sre.CATEGORY_SPACE: " ", _sre.CATEGORY_DIGIT: "1"}.get(v, "x")
    return "x"


def _anchor_texts(entry: Any) -> list[str]:
    """Texts for a row of ANCHORS_OTHER_LANGUAGES: its word with what it needs before and after."""
    import importlib

    P = importlib.import_module("mcqa_prep.grader.robust.phrases")
    a = P.ANCHORS_OTHER_LANGUAGES[entry.index]
    before = a.before_required[0] if a.before_required else ""
    latin = all(ch < "\u0250" for ch in a.word if ch.isalpha())
    after = (" " if latin else "") + a.after[0] if a.after else ""
    out = [f"{before}{a.word}{after}: B", f"{before}{a.word}{after}B"]
    out += [f"{before}{a.word}{after} {link} B" for link in a.links]
    out += [f"{before}{a.word}{after}{link}B" for link in a.links]
    return out


def witness_texts(entry: Any, table_entries: list[Any]) -> list[tuple[str, dict[str, str], dict | None]]:
    """Candidate witnesses (text, options, template_metadata) for an entry, from its table's templates."""
    text = entry.text
    if text.startswith("Anchor("):
        return [(t, OPTIONS, None) for t in _anchor_texts(entry)]
    if entry.table in ("INDEX_NUMBER_WORDS", "INDEX_ORDINAL_WORDS"):
        words = [e.text for e in table_entries if e.table == entry.table]
        run = words[: max(entry.index + 1, 2)]
        return [("\n".join(f"Part {w}: {'CA'[i % 2]}" for i, w in enumerate(run)), OPTIONS, None)]
    templates = TEMPLATES.get(entry.table, [])
    if entry.table == "REASONING_MARKERS":
        o, c = text.split(" ~ ")
        return [(t.format(o=o, c=c), OPTIONS, None) for t in templates]
    w = sample(text) if entry.table in REGEX_TABLES else text
    same = [e.text for e in table_entries if e.table == entry.table]
    nxt = same[entry.index + 1] if entry.index + 1 < len(same) else "{n}"
    prev = same[entry.index - 1] if entry.index > 0 else "{p}"
    out = []
    for t in templates:
        t, opts, tm = (t, OPTIONS, None) if isinstance(t, str) else t
        try:
            text_ = t.format(w=w, W=w[:1].upper() + w[1:], n=nxt, p=prev)
            if "{n}" not in text_ and "{p}" not in text_:
                out.append((text_, opts, tm))
        except (IndexError, KeyError):
            continue
    return out
