"""Every pattern of `robust`, compiled once, from the tables of `phrases.py` (the only place that turns
words into regexes). Patterns that run on the lower-cased text are written in lower case."""

from __future__ import annotations

import re

from . import phrases
from .derive import alt as _alt
from .derive import case_variants as _case_variants
from .derive import coordinators as _coordinators
from .derive import is_latin as _is_latin
from .derive import literal_prefixes

# --------------------------------------------------------------------------------------------------
# Letters and their neighbours
# --------------------------------------------------------------------------------------------------

# A letter slot of a commitment phrase: "(B)", "**b**", "[c]".
SLOT = r"[\(\[]?\**[\(\[]?(?P<L>[a-z])\**[\)\]]?"
# (a word starting in lower case, in any Latin script: "A área" is the article too)
NEXT_WORD_RE = re.compile(r"[ \t]+([a-zß-öø-ÿ][a-zß-öø-ÿ'’]*)")
WORD_AFTER_RE = re.compile(r"[ \t]+([^\W\d_]+)")  # (the next word, in any script)
PREV_WORD_RE = re.compile(r"([A-Za-z][A-Za-z'’.]*)[ \t]+$")
NEXT_CAP_WORD_RE = re.compile(r"[ \t]+([A-Z][a-z]+)\b")
NEXT_UPPER_TOKEN_RE = re.compile(r"[ \t]+[A-Z](?![A-Za-z0-9])")
PROSE_LETTER_RE = re.compile(r"(?<![A-Za-z0-9'’\\])[A-Z](?![A-Za-z0-9])")

# --------------------------------------------------------------------------------------------------
# English anchors
# --------------------------------------------------------------------------------------------------

# What links an anchor noun to its payload: ":", "=", "-", "→", "(" before a letter, "is", "would be",
# ... (group `hedge`: a tentative link), or (group `eol`) the end of a heading line ("### Final Answer").
# Written so that no two runs of whitespace stand side by side: "[ \t]*[*_]{0,3}[ \t]*" and a "\s+" after
# it split a run of spaces after the noun every possible way before failing ("answer" and 800 spaces: 5 s).
# The language and the preferred match are those of the earlier form (kept as EN_CONN_REFERENCE, which
# tests/test_robust_linear.py compares it with): marks and spaces before a punctuation link; before a word
# link, marks, then an optional adverb (after an optional comma, which may follow spaces), then spaces.
EN_CONN = (
    r"(?:[ \t]*(?:[*_]{1,3}[ \t]*)?(?:[:：]|=(?!=)|-{1,2}(?=\s)|[—–→](?=\s)|\(\s*(?=[a-z]\s*\)))"
    r"|(?:[ \t]*[*_]{1,3})?(?:(?:[ \t]*,)?\s*"
    + _alt(phrases.ANCHOR_ADVERBS)
    + r"(?:\s*,)?)?\s+(?:(?P<hedge>"
    + "|".join(phrases.HEDGED_LINKS)
    + r")\s+(?:"
    + _alt(phrases.VERDICT_ALSO_WORDS)
    + r"\s+)?be\b|"
    + "|".join(phrases.ANCHOR_LINK_VERBS)
    + r")|(?P<eol>(?=[ \t]*(?:[*_#]{1,3}[ \t]*)?(?:\r?\n|$))))"
)
EN_CONN_REFERENCE = (
    r"(?:[ \t]*[*_]{0,3}[ \t]*(?:[:：]|=(?!=)|-{1,2}(?=\s)|[—–→](?=\s)|\(\s*(?=[a-z]\s*\))"
    r"|(?:,?\s*"
    + _alt(phrases.ANCHOR_ADVERBS)
    + r"\s*,?)?\s+(?:(?P<hedge>"
    + "|".join(phrases.HEDGED_LINKS)
    + r")\s+(?:"
    + _alt(phrases.VERDICT_ALSO_WORDS)
    + r"\s+)?be\b|"
    + "|".join(phrases.ANCHOR_LINK_VERBS)
    + r"))|(?P<eol>(?=[ \t]*[*_#]{0,3}[ \t]*(?:\r?\n|$))))"
)
ANSWER_TAIL_RE = re.compile(
    r"(?<!/)"
    + _alt(phrases.ANSWER_NOUNS)
    + r"(?:>|(?:\s+(?:choice|option|letter)(?!s?[ \t]*\())?s?(?:\s+to\s+(?:this|the)\s+(?:question|problem))?"
    + EN_CONN
    + ")"
)
ANS_TAIL_RE = re.compile(r"ans\.?(?=\s*:)" + EN_CONN)
QUALIFIED_TAIL_RES = {kw: re.compile(re.escape(kw) + r"s?" + EN_CONN) for kw in phrases.QUALIFIED_NOUNS}
CHOSEN_TAIL_RES = {kw: re.compile(re.escape(kw) + EN_CONN) for kw in phrases.NOUN_SUFFIX_CHOSEN}
AFTER_NOUN_CHOSEN_RE = re.compile(r"[ \t]+" + _alt(phrases.NOUN_SUFFIX_CHOSEN) + r"\b")
CHOSEN_BEFORE_RE = re.compile(r"\b(?:option|choice|answer)[ \t]+$")
QUALIFIERS = frozenset(phrases.QUALIFIERS)
FINAL_BEFORE_CJK = frozenset(phrases.FINAL_BEFORE_CJK)
ANCHOR_DEMONSTRATIVES = frozenset(phrases.ANCHOR_DEMONSTRATIVES)
CLOSING_TEXT_VETO_RE = re.compile(r"\b" + _alt(phrases.CLOSING_TEXT_VETOES) + r"\b")
HEADING_NOUNS = frozenset(phrases.HEADING_NOUNS)
DEGREE_WORDS = frozenset(phrases.QUALIFIER_DEGREE_WORDS)

# --------------------------------------------------------------------------------------------------
# Anchors in other languages
# --------------------------------------------------------------------------------------------------


def _other_anchor(
    a: phrases.Anchor, *, reference: bool = False
) -> tuple[str, re.Pattern[str], re.Pattern[str] | None]:
    links = []
    for link in sorted(a.links, key=len, reverse=True):  # (longest first: "হলো" before "হল")
        if link in "-—–":
            links.append(re.escape(link) + r"(?=\s)")
        elif _is_latin(link):
            links.append(r"\b" + re.escape(link) + r"\b")
        else:
            links.append(re.escape(link))
    space = r"\s+" if _is_latin(a.word) else r"\s*"  # (Thai and CJK write no space before the qualifier)
    after = "(?:" + space + _alt(a.after) + ")" + ("" if a.after_required else "?") if a.after else ""
    link = r"(?:[:：ঃ]|" + "|".join(links) + ")" if links else r"[:：]"
    # word, qualifier, marks, link, colon, with the spaces between them (no two runs of spaces side by side:
    # the form "\s*[*_]{0,3}\s*LINK?\s*" split a run of blank lines after the word every possible way)
    body = (
        re.escape(a.word)
        + after
        + r"\s*(?:[*_]{1,3}\s*)?(?:"
        + link
        + r"\s*)"
        + ("" if a.link_required else "?")
        + r"[:：]?"
    )
    if reference:  # the earlier form, which tests/test_robust_linear.py compares the new one with
        body = (
            re.escape(a.word)
            + after
            + r"\s*[*_]{0,3}\s*"
            + link
            + ("" if a.link_required else "?")
            + r"\s*[:：]?"
        )
    before = None
    if a.before_required:
        before = re.compile("(?:" + "|".join(map(re.escape, a.before_required)) + ")$")
    return a.word, re.compile(body), before


OTHER_ANCHORS = tuple(_other_anchor(a) for a in phrases.ANCHORS_OTHER_LANGUAGES)
# A one-syllable Hangul answer word must start its word ("답은" but not the end of "정답은").
HANGUL_BEFORE_RE = re.compile(r"[가-힣]$")

# --------------------------------------------------------------------------------------------------
# Commitments
# --------------------------------------------------------------------------------------------------

_LETTER_END = r"(?=\s*(?:[.!;,)\n]|$))"
FIRST_PERSON_BEFORE_RE = re.compile(r"(?:\b" + "|\\b".join(phrases.FIRST_PERSON_SUBJECTS) + r")\s+$")
# (the word and the letter in one line: "wait, actually D", "No — B.")
SELF_CORRECTION_RE = re.compile(
    "(?:"
    + "|".join(phrases.SELF_CORRECTION_PATTERNS)
    + r")[ \t,.:;!—–-]*(?:(?:"
    + "|".join(phrases.SELF_CORRECTION_FILLERS)
    + r")\s+)?(?:(?:option|choice)\s+)?"
    + SLOT
    + _LETTER_END
)
CHOOSE_RE = re.compile(_alt(phrases.CHOOSE_VERBS) + r"\s+(?:(?:option|choice|answer)\s+)?" + SLOT)
MATCH_RE = re.compile(
    _alt(phrases.MATCH_PHRASES) + r"\s+(?:(?:option|choice|answer)\s+)?" + SLOT + _LETTER_END
)
IT_IS_RE = re.compile(_alt(phrases.IT_IS_PHRASES) + r"\s+(?:(?:option|choice)\s+)?" + SLOT + _LETTER_END)
# "Option B is correct", "Options B and D are both correct".
OPTION_IS_CORRECT_RE = re.compile(
    _alt(phrases.OPTION_NOUNS) + r"s?\s+" + SLOT + r"(?P<more>(?:\s*(?:,|&|/|\band\b|\bor\b)\s*"
    r"\(?[a-z]\)?(?![a-z]))*)\s+(?:is|are|seems|appears)\s+(?:to\s+be\s+)?(?:both\s+|all\s+)?(?:the\s+)?"
    r"(?:(?:most\s+)?correct|right|best|true)\b(?!\s+(?:only\s+)?(?:if|when|for|in|under)\b)"
)
# "B is the correct answer", "A and C are right", "C is the least accurate statement" (found from the
# verdict word backwards; run on the original text, so the letters are capitals).
VERDICT_BEFORE_RE = re.compile(
    r"(?<![\w'’.-])[*_]{0,2}[\(\[]?(?P<L>[A-Z])[\)\]]?[*_]{0,2}"
    r"(?P<more>(?:\s*(?:,|&|/|\band\b|\bor\b)?\s*[\(\[]?[A-Z][\)\]]?(?![\w'’.-]))*)"
    r"\s+"
    + _alt(phrases.VERDICT_COPULAS)
    + r"\s+(?:"
    + _alt(phrases.VERDICT_SCOPE_WORDS + phrases.VERDICT_ALSO_WORDS)
    + r"\s+)?"
    r"(?:" + _alt(phrases.VERDICT_DETERMINERS) + r"\s+)?(?:" + _alt(phrases.VERDICT_RESTRICTORS) + r"\s+)?"
    r"(?:" + _alt(phrases.VERDICT_FINAL_WORDS) + r"\s+)?$"
)
# The words that may stand between a verdict's copula and its adjective or noun ("is the only", "are both").
VERDICT_AFTER_COPULA = frozenset(
    phrases.VERDICT_SCOPE_WORDS + phrases.VERDICT_ALSO_WORDS + phrases.VERDICT_DETERMINERS + phrases.VERDICT_RESTRICTORS
    + phrases.VERDICT_FINAL_WORDS
)  # fmt: skip
VERDICT_COPULAS = frozenset(phrases.VERDICT_COPULAS)
VERDICT_DETERMINERS = frozenset(phrases.VERDICT_DETERMINERS)
VERDICT_NOUNS_ALONE = frozenset(phrases.VERDICT_NOUNS_ALONE)
ALSO_WORDS = frozenset(phrases.VERDICT_ALSO_WORDS)
# Verdicts that commit only when said of several letters ("A and C are both plausible" is several answers).
PLURAL_ONLY_VERDICTS = frozenset(phrases.PLURAL_VERDICTS) - frozenset(phrases.VERDICT_ADJECTIVES)
VERDICT_FINAL_WORDS = frozenset(phrases.VERDICT_FINAL_WORDS)
DRAFT_QUALIFIERS = frozenset(phrases.DRAFT_QUALIFIERS)
_NOUN = _alt(phrases.VERDICT_NOUNS)
# "B fits best.": a letter, a verb of fitting and "best" closing the sentence (found from "best" backwards).
FITS_BEST_BEFORE_RE = re.compile(
    r"(?<![\w'’.-])[\(\[]?(?P<L>[A-Z])[\)\]]?\s+(?:fits|works|matches|suits|applies)\s+(?:the\s+)?$"
)
# "D) Trajan is the answer.": a label line whose sentence ends by calling its text the answer.
LABEL_SENTENCE_BEFORE_RE = re.compile(
    r"(?:^|\n)[ \t*_>#-]*[\(\[]?(?P<L>[A-Z])[\)\].:]\s+(?P<T>[^\n]{1,120}?)\s+is\s+(?:the|my|our)\s+$"
)
PAREN_LABEL_SENTENCE_BEFORE_RE = re.compile(
    r"(?<![\w(\[])\((?P<L>[A-Z])\)\s+(?P<T>[^\n()]{1,120}?)\s+is\s+(?:the|my|our)\s+$"
)
VERDICT_WITH_NOUN_RE = re.compile(
    r"(?:" + _alt(phrases.VERDICT_ADJECTIVES) + r"|(?:most|least)\s+[a-z]+)\s+" + _NOUN + r"\b"
)
VERDICT_ALONE_RE = re.compile(_alt(phrases.VERDICT_ADJECTIVES) + r"(?=\s*(?:[.!;]|$))")
PLURAL_VERDICT_RE = re.compile(_alt(phrases.PLURAL_VERDICTS) + r"\b")
NOUN_ALONE_RE = re.compile(_alt(phrases.VERDICT_NOUNS_ALONE) + r"\b(?!\s+(?:to|of|for|that|which|who)\b)")
VERDICT_KEYWORDS = phrases.VERDICT_ADJECTIVES + phrases.QUALIFIER_DEGREE_WORDS + phrases.PLURAL_VERDICTS
# "选项B正确", "B选项是正确的": a Chinese verdict on a letter, found from the verdict word backwards (on the
# original text: the letter is a capital).
CJK_VERDICT_BEFORE_RE = re.compile(
    r"(?:" + _alt(phrases.CJK_OPTION_WORDS) + r")?\s*[(（]?(?P<L>[A-Z])[)）]?\s*(?:" + _alt(phrases.CJK_OPTION_WORDS)
    + r")?\s*(?:" + _alt(phrases.CJK_PARTICLES) + r")?\s*$"
)  # fmt: skip
CJK_VERDICT_KEYWORDS = phrases.CJK_VERDICTS
CJK_VERDICT_NEGATED_AFTER_RE = re.compile(
    r"\s*" + _alt(phrases.CJK_PARTICLES) + r"?\s*" + _alt(phrases.CJK_VERDICT_NEGATIONS_AFTER)
)
# "Therefore, B." closing a line.
CONCLUSION_RE = re.compile(
    r"(?:\b"
    + _alt(phrases.CONCLUSION_WORDS)
    + r"\b|"
    + _alt(phrases.CONCLUSION_ARROWS)
    + r")\s*[,:]?\s+(?:"
    + _alt(phrases.CONCLUSION_LINKS)
    + r"\s+)?(?:(?:option|choice)\s+)?"
    + SLOT
    + r"\s*[.!]?\s*$"
)
CONCLUSION_ENDINGS = (
    ("option", "choice", ",", ":")
    + phrases.CONCLUSION_WORDS
    + phrases.CONCLUSION_ARROWS
    + tuple(phrases.CONCLUSION_LINKS)
)
# "So we get D as the answer.": found from "answer" backwards (on the original text: the letter is a
# capital), then the line must close right after "answer".
AS_THE_ANSWER_BEFORE_RE = re.compile(
    r"(?<![\w'’.-])[\(\[]?(?P<L>[A-Z])[\)\]]?\s+(?i:" + "|".join(phrases.AS_THE_ANSWER) + r")$"
)
AS_THE_ANSWER_LEAD_RE = re.compile(
    r"\s*(?:(?:so|thus|therefore|hence|finally|overall)\s*,?\s*)?(?:(?:"
    + "|".join(phrases.AS_THE_ANSWER_LEADS)
    + r")\s+)?[(\[]?"
)
# (runs of the same characters never adjacent: "[ \t*_]*[.!]?[ \t*_]*" tries every split of a long run)
LINE_CLOSES_RE = re.compile(r"[ \t*_]*(?:[.!][ \t*_]*)?(?=\r?\n|$)")
# "D it is.": a letter opening its line, then an it-is phrase closing the sentence (found backwards).
LETTER_BEFORE_IT_IS_RE = re.compile(
    r"(?:^|\n)[ \t*_>#-]*(?:(?:option|choice)\s+)?[\(\[]?\**(?P<L>[A-Z])\**[\)\]]?,?[ \t]+$", re.IGNORECASE
)
IT_IS_AFTER_LETTER_RE = re.compile(
    _alt(phrases.IT_IS_AFTER_LETTER) + r"(?:[ \t]*then)?[ \t*_]*(?:[.!][ \t*_]*)?(?=\n|$)"
)
# A line that starts with a bullet and a capital letter ("* D -> ...", "- **B**"): as the last line, an item
# of a bulleted discussion of the options (maybe cut off), not an answer.
BULLET_LETTER_LINE_RE = re.compile(r"(?m)^[ \t>]*(?P<b>[-*+•])[ \t]+[*_]{0,2}[\(\[]?[A-Z](?![A-Za-z0-9])")
# "... it is Bach.": an it-is phrase followed by a whole option text closing its line.
IT_IS_TEXT_RE = re.compile(_alt(phrases.IT_IS_PHRASES) + r"\s+(?P<T>[^\n]{1,200}?)[\s.!*]*$")
# "That's the second option.": the commitment before "the <ordinal> <noun>" (searched backwards on the
# line) and the sentence closing after it.
ORDINAL_BEFORE_RE = re.compile(
    r"(?:^|(?<=[\s,:;—–(]))(?:" + "|".join(phrases.ORDINAL_COMMITS) + r")\s+the\s+$"
)
ORDINAL_AFTER_RE = re.compile(r"[ \t*_)]*(?:[.!;]|$|\n)")
ORDINAL_KEYWORDS = tuple(o + " " + n for o in phrases.ORDINALS for n in phrases.ORDINAL_NOUNS)
# "The vitamin in question is (D)." closing the last line.
CLOSING_COPULA_RE = re.compile(
    r"(?:^|\s)" + _alt(phrases.CLOSING_COPULAS) + r"\s+(?:(?:option|choice)\s+)?" + SLOT + r"\s*[.!]?[\s*_]*$"
)
CLOSING_PAREN_RE = re.compile(r"\s\((?P<L>[a-z])\)\s*[.!]?\s*$")
# "leaving C", "only D remains"
ELIMINATION_BEFORE_RE = re.compile(
    _alt(phrases.ELIMINATION_BEFORE)
    + r",?\s+(?:(?:only|just)\s+)?(?:"
    + _alt(phrases.OPTION_NOUNS)
    + r"\s+)?"
    + SLOT
    + _LETTER_END
)
ELIMINATION_AFTER_RE = re.compile(
    r"(?<![\w'’.-])(?:only\s+)?(?:(?:option|choice)\s+)?"
    + SLOT
    + r"\s+(?:is\s+(?:the\s+only\s+(?:one|option|choice)\s+)?)?"
    + _alt(phrases.ELIMINATION_AFTER)
    + r"\b$"
)
STATEMENT_END_RE = re.compile(r"[ \t]*(?:[.!;,)\n]|$|as\b|the\b|standing\b)")
LONE_LETTER_RE = re.compile(r"(?<![a-z])[a-z](?![a-z])")
ELIMINATION_KEYWORDS = tuple(
    dict.fromkeys([w.split()[0] for w in phrases.ELIMINATION_BEFORE] + list(phrases.ELIMINATION_AFTER))
)
ELIMINATION_AFTER_KEYWORDS = frozenset(phrases.ELIMINATION_AFTER)
# The end of a line whose last word (before " \t\r.!*)]") is a capital letter.
LINE_END_CAPITAL_RE = re.compile(r"[A-Z][ \t\r.!*)\]]*(?=\n|\Z)")
LINE_END_TRAIL = frozenset(" \t\r.!*)]")

# --------------------------------------------------------------------------------------------------
# Revisions, hedges, conditions, negations
# --------------------------------------------------------------------------------------------------

REVISION_RE = re.compile(r"\b(?:" + "|".join(phrases.REVISION_MARKERS) + r")\b", re.IGNORECASE)
RETRACTED_AFTER_RE = re.compile(
    r"[\s)\]*_]*(?:" + "|".join(phrases.RETRACTIONS_AFTER) + r")\b", re.IGNORECASE
)
RETRACTED_BEFORE_RE = re.compile(
    r"\b(?:" + "|".join(phrases.RETRACTIONS_BEFORE) + r")\b[^.!?\n]{0,24}$", re.IGNORECASE
)
HEDGE_BEFORE_RE = re.compile(
    r"\b(?:" + "|".join(phrases.HEDGE_BEFORE) + r")\s+(?:(?:option|choice)\s+)?$", re.IGNORECASE
)
HEDGE_AFTER_RE = re.compile(r"[\s)\]*]*(?:" + "|".join(phrases.HEDGE_AFTER) + r")\b", re.IGNORECASE)
HEDGE_WORDS_RE = re.compile(r"\b(?:might|may|could|possibly|perhaps|maybe)\b")
_READING_CONDITIONS = (
    _alt(phrases.READING_VERBS) + r"\s+(?:one|the\s+other|another|this|that)\s+way",
    r"(?:on|under|with)\s+(?:one|the\s+other|another|the\s+first|the\s+second)\s+"
    + _alt(phrases.READING_NOUNS),
)
CONDITIONAL_BEFORE_RE = re.compile(
    r"\b(?:" + _alt(phrases.CONDITIONAL_BEFORE) + "|" + "|".join(_READING_CONDITIONS) + r")\b[^.\n]*$"
)
# A cheap necessary test for CONDITIONAL_BEFORE_RE: a condition word, "way" or a reading noun occurs.
CONDITION_HINT_RE = re.compile(_alt(phrases.CONDITIONAL_BEFORE + ("way",) + phrases.READING_NOUNS))
# ... and for CONDITIONAL_AFTER_RE (lower-cased text).
CONDITION_AFTER_HINT_RE = re.compile(_alt(phrases.CONDITIONAL_AFTER))
CONDITIONAL_BEFORE_WORDS = phrases.CONDITIONAL_BEFORE
# A clause (since the last ".", ";" or line break) that starts with a condition word.
CONDITIONAL_CLAUSE_RE = re.compile(
    r"(?:^|[.;\n]\s*)" + _alt(phrases.CONDITIONAL_BEFORE) + r"\b[^.;\n]*$", re.IGNORECASE
)
CONDITIONAL_AFTER_RE = re.compile(r"[\s)\]*]*" + _alt(phrases.CONDITIONAL_AFTER) + r"\b", re.IGNORECASE)
NEGATED_BEFORE_RE = re.compile(
    r"(?:\b" + _alt(phrases.NEGATIONS_BEFORE) + "|" + _alt(phrases.NEGATIONS_BEFORE_CJK) + r")\W*$",
    re.IGNORECASE,
)
# (the letter may carry its option text in parentheses: "B (36 ohm) is out")
DISMISSED_AFTER_RE = re.compile(
    r"[\s)\]*]*(?:\([^)\n]{0,60}\)[\s*]*)?(?:" + "|".join(phrases.DISMISSALS_AFTER) + ")", re.IGNORECASE
)
# A negating copula that comes last ("… değildir"), found in the few words after a letter (payload.py
# checks that only the letter's own option text stands between).
NEGATED_AFTER_RE = re.compile(r"(?<![^\W\d_])" + _alt(phrases.NEGATIONS_AFTER))
# A list of letters dismissed together after a colon or a dash ("B and D: not supported.").
LIST_DISMISSED_AFTER_RE = re.compile(
    DISMISSED_AFTER_RE.pattern
    + r"|[\s)\]*]*[:—–-][\s*]*(?:not|neither|none|wrong|incorrect|invalid|ruled\s+out|excluded|eliminated|rejected)\b",
    re.IGNORECASE,
)
EXAMPLE_BEFORE_RE = re.compile(_alt(phrases.EXAMPLE_MARKERS))
NEGATED_PAYLOAD_RE = re.compile(r"\s*" + _alt(phrases.NEGATED_PAYLOAD) + r"\b", re.IGNORECASE)
LIST_BEFORE_RE = re.compile(r"\b(?:whether|if|or|and|nor|either|neither|unless|both)\W*$")
CLOSING_RE = re.compile(r"[\s)\]}*_\"'”’.!。]*(?:" + _alt(phrases.CLOSING_COPULAS_AFTER) + r")?[\s.!。]*$")
CONCLUSION_BEFORE_RE = re.compile(
    r"\b(?:so|thus|therefore|hence|i\.e\.?|namely|is|be|only|leaves|leaving|choose|pick|select|answer|definitely)\W*$",
    re.IGNORECASE,
)
# A comma or colon before a letter concludes only when the letter also closes the payload ("..., B.").
PUNCT_BEFORE_RE = re.compile(r"[,:]\W*$")
WALK_ANNOUNCEMENT_RE = re.compile(r"\b(?:" + "|".join(phrases.WALK_ANNOUNCEMENTS) + r")\b", re.IGNORECASE)
BULLET_START_RE = re.compile(r"[ \t>]*(?:[-*+•]|\d+[.)])[ \t]")


# Coordination between two answers: "\boxed{A} and \boxed{C}", "B or D".
COORDINATION_GAP_RE = re.compile(
    r"[\s*_$`)\]}.]*" + _coordinators(phrases.COORDINATORS, False) + r"[\s*_$`(\[{]*(?:\\\w+\s*\{?)?",
    re.IGNORECASE,
)
ALSO_VALID_RE = re.compile(r"[\s)\]}*_.$`]*(?:" + "|".join(phrases.ALSO_VALID) + ")", re.IGNORECASE)
COORDINATION_OPENER_RE = re.compile(
    r"\b" + _alt(phrases.COORDINATION_OPENERS) + r"\s*[*_$`(\[]*$", re.IGNORECASE
)
# Text before a stage that might join its first answer to an earlier one ("\boxed{A} or\n\boxed{B}").
COORDINATION_TAIL_RE = re.compile(
    _coordinators(phrases.COORDINATORS + phrases.COORDINATION_OPENERS, True) + r"[\s*_$`(\[{]*$",
    re.IGNORECASE,
)
# How the text before a candidate ends when it may join that candidate to an earlier answer ("A or",
# "both"): a cheap test on the lower-cased tail, marks as they are, words after a space (or alone).
COORDINATION_OPENERS = phrases.COORDINATION_OPENERS
# An opener among the filler words before a payload's letter ("either (A) sky or (D) countryside").
COORDINATION_OPENER_IN_RE = re.compile(r"\b" + _alt(phrases.COORDINATION_OPENERS) + r"\b", re.IGNORECASE)
_WORDY = tuple(
    w for w in phrases.COORDINATORS + phrases.COORDINATION_OPENERS if w[:1].isalpha() and w.isascii()
)
JOINER_ENDINGS = tuple(
    (" " + w if w in phrases.COORDINATORS else w) if w in _WORDY else w
    for w in phrases.COORDINATORS + phrases.COORDINATION_OPENERS
)
JOINER_WORDS = frozenset(_WORDY)

# The closing line (closing.py): words that stop its reading, and the shape of a lower-case label named
# by its noun ("Locking in option (c).").
CLOSING_LINE_VETO_RE = re.compile(
    r"(?<![^\W\d_])(?:" + "|".join(phrases.CLOSING_LINE_VETOES) + "|" + "|".join(phrases.DRAFT_QUALIFIERS)
    + r"|provisionally|tentatively)(?![^\W\d_])"
)  # fmt: skip
CLOSING_REMARK_DISMISSAL_RE = re.compile(
    r"(?<![^\W\d_])(?:"
    + "|".join(phrases.CLOSING_LINE_NEGATIONS + phrases.CLOSING_LINE_DISMISSALS + phrases.CLOSING_LINE_OTHERS)
    + r")(?![^\W\d_])"
)
CLOSING_DISMISSAL_RE = re.compile(
    r"(?<![^\W\d_])(?:" + "|".join(phrases.CLOSING_LINE_DISMISSALS) + r")(?![^\W\d_])"
)
CLOSING_REMARK_CONTRAST_RE = re.compile(r"\b" + _alt(phrases.CLOSING_REMARK_CONTRASTS) + r"\b")
# A clause that takes the reasoning up again ("Wait, …", "…, but it is missing 19", "\n\nBut …").
_CLAUSE = r"(?:^|[.!?。,;:]|\n)[ \t*_>#-]*"
RESUMED_REVISION_RE = re.compile(_CLAUSE + r"(?:" + "|".join(phrases.REVISION_MARKERS) + r")\b", re.I | re.M)
RESUMED_CONTRAST_RE = re.compile(_CLAUSE + _alt(phrases.CLOSING_REMARK_CONTRASTS) + r"\b", re.I | re.M)
CLOSING_LINE_LOWER_RE = re.compile(r"\b(?:option|choice|letter|answer)\s*\(([a-z])\)")
CLOSING_LINE_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")

# --------------------------------------------------------------------------------------------------
# Payloads
# --------------------------------------------------------------------------------------------------

BOX_RE = re.compile(r"\\(?:boxed|fbox)\s*\{")
# Markup blanked out of payloads (replaced by spaces of the same length, so offsets survive): LaTeX
# commands and tags by regex, the single characters $ * _ { } ` by a table.
MARKUP_CMD_RE = re.compile(
    r"\\(?:text(?:bf|it|rm|sf|tt|normal)?|math(?:rm|bf|it|sf|tt|bb)?|boxed|fbox|emph|underline|"
    r"operatorname|bf|it|rm|displaystyle|quad|qquad|left|right)\b\s*\{?|\\[()\[\],;:! ]"
    r"|</?(?:[A-Za-z][\w-]+|[biupsa])>"  # (tags; a one-letter tag other than HTML's b i u p s a is "<C>", an answer)
)
MARKUP_CHAR_TABLE = str.maketrans(dict.fromkeys("$*_{}`", " "))
MARKUP_PRESENT_RE = re.compile(r"[\\$*_`{}<]")
# A number naming an option (when the question numbers them) at the start of a payload: alone but for
# brackets, a counter word and a closing mark ("1", "(2).", "3번", "**4**"), or a label that the payload goes
# on after — a closing bracket or quote ("2) Paris", "(1): …", `"1" y …`), a stop, comma or colon and a space
# ("la número 2. La …"), a line break, or a space and a bracket, quote or dash ("1 (Paris)") — but not a
# number followed by a word ("2 m/s", "2 veces": a quantity); or a list of them ("1, 3" is several).
NUMBER_LABEL_RE = re.compile(
    r"[(\[]?(?P<n>\d{1,2}(?:[ \t]*(?:,|/|and|和)[ \t]*\d{1,2})*)(?P<close>[)\]\"'”»]?)[ \t]*"
    + _alt(phrases.NUMBER_LABEL_COUNTERS) + r"?" + _alt(phrases.CLOSING_COPULAS_AFTER)
    + r"?(?:[\s.。!*_)\]]*$|(?<=[)\]\"'”»])|[.,;:。،][ \t]|[ \t]*\n|[ \t]+[(\[\"'“«\-–—])"
)  # fmt: skip
# ... or a number followed by a word ("la opción 2 y las demás no"): a label when the options are not
# quantities (else "2 m/s" is a value).
NUMBER_WORD_RE = re.compile(r"[(\[]?(?P<n>\d{1,2})[ \t]+(?=[^\W\d_])")
# A one-digit number right before a counter word ("3번"), not inside a longer number.
# (a list of them too: "3, 4, 5번")
NUMBER_COUNTER_RE = re.compile(
    r"(?<![\d.,])(\d(?:[ \t]*[,/][ \t]*\d)*)[ \t]*" + _alt(phrases.NUMBER_LABEL_COUNTERS)
)
SIMPLE_PAYLOAD_RE = re.compile(r"[\s(\[<:\"'“‘]*([A-Za-z])[\s)\]>\"'”’.!,;]*$")
STRIP_CHARS = " \t\r\n.,;:!?\"'“”‘’()[]"
FILLER_RE = re.compile(
    r"(?:[\s\"'“”‘’«»「」『』\[\]\(<:：#>|.,–—→⇒➡👉✅✔☑️▶►•·=]|-(?![\d.])|\b"
    + _alt([w for w in phrases.PAYLOAD_FILLER_WORDS if len(w) > 1])
    + r"\b|(?:" + _alt([w for w in phrases.PAYLOAD_FILLER_WORDS if len(w) == 1]) + r")(?=[ \t])"  # (η only before a word)
    r"|l['’]|é(?=\s)|è(?=\s)|" + _alt(phrases.PAYLOAD_FILLER_CJK) + ")*",
    re.IGNORECASE,
)  # fmt: skip
LIST_SEP_RE = re.compile(
    r"[\s)\]}'\"”’]*(?:,\s*(?:" + _alt([w for w in phrases.LIST_SEPARATOR_WORDS if w in phrases.COORDINATORS]) + r"\b|&)?|" + "|".join(r"\b" + w.replace(" ", r"\s+") + r"\b" for w in phrases.LIST_SEPARATOR_WORDS)
    + "|" + "|".join(re.escape(s) for s in phrases.LIST_SEPARATOR_SYMBOLS) + r"|[ \t]+(?=[\(\[]?[A-Z][\)\]]?(?![\w'’.-])))"
    + r"(?:(?<=[a-z,])[ \t]+(?:" + "|".join(phrases.LIST_JOINER_ADVERBS)
    + r"|(?!(?:" + "|".join(phrases.LIST_JOINER_NOT_ADVERBS) + r")\b)[a-z]+ly)\b)?"
    r"[\s(\[{'\"“‘]*",
    re.IGNORECASE,
)  # fmt: skip
REFUSAL_RE = re.compile(
    r"\b(?:" + "|".join(phrases.REFUSALS_LATIN) + r")\b|" + "|".join(phrases.REFUSALS_OTHER), re.IGNORECASE
)
NONE_CORRECT_RE = re.compile("|".join(phrases.NONE_CORRECT))
ALL_OF_ABOVE_RE = re.compile(r"\b" + phrases.ALL_OF_THE_ABOVE + r"\b", re.IGNORECASE)
ONLY_MARKUP_RE = re.compile(
    r"[\s*_:：#$`]*+(?:\\\[|\\\]|\\\(|\\\)|\\begin\{\w+\*?\}|\\end\{\w+\*?\})?[\s*_:：#$`]*+"
)
LABEL_DELIMITER_RE = re.compile(r"[ \t]*(?:[\)\]]|\*\*)?[ \t]*(?:[.):：\-–—]|\*\*)[ \t]*")
DISCUSSION_RE = re.compile(r"\b" + _alt(phrases.DISCUSSION_WORDS) + r"\b", re.IGNORECASE)

# --------------------------------------------------------------------------------------------------
# Formats, scope, structure
# --------------------------------------------------------------------------------------------------

# (each optional mark takes its spaces: no two runs of spaces side by side, linear on a line of spaces)
LABEL_LINE_BODY = (
    r"[ \t>]*(?:(?:[-*+•]|\d+[.)])[ \t]*)?(?:(?:\*\*|__)[ \t]*)?(?P<pre>option\s+|choice\s+)?[\(\[]?(?P<L>[A-Z])"
    r"(?P<post>(?:[\)\]]|\*\*)?[ \t]*(?:[.):：\-–—]|\*\*|$))"
)
# A label line starts at the text start (tried with match()) or after a newline (a pattern that starts
# with a literal newline, which the engine skips to directly).
LABEL_LINE_RE = re.compile(r"(?:^|\n)" + LABEL_LINE_BODY, re.IGNORECASE)
LABEL_LINE_NL_RE = re.compile(r"\n" + LABEL_LINE_BODY, re.IGNORECASE)
LABEL_LINE_BODY_RE = re.compile(LABEL_LINE_BODY, re.IGNORECASE)
# A line that opens with an option letter, maybe after a bullet or markup ("- C is ruled out", "**B** ...").
LINE_OPENING_LETTER_RE = re.compile(r"[ \t>*•-]*(?:[Oo]ption[ \t]+)?[(\[]?([A-Z])(?![\w'’.-]|\.\w)")
# A label inside a line ("A:", "；B：", " C)"): two different ones make the line a listing of options.
INLINE_LABEL_RE = re.compile(r"(?:^|(?<=[\s;,.。、，；?？:：]))([A-Z])[ \t]*[:：)]")
# ... and on the answer's own line, where a label may follow an ideograph directly ("…是指A:被告无罪;B:…").
INLINE_LABEL_CJK_RE = re.compile(r"(?:^|(?<=[\s;,.。、，；?？:：\u3400-\u9fff]))([A-Z])[ \t]*[:：)]")
BOLD_RE = re.compile(r"\*\*([^*\n]{1,80}?)\*\*|__([^_\n]{1,80}?)__")
TERMINAL_CHARS = frozenset(".!?)]}*$>\"'”’`。！？」』")
# Follow-up boundaries and sub-items start at a line start: the text start is tried with match(), the
# rest with a pattern that begins with a literal newline (the engine skips from newline to newline).
# The follow-up patterns run on the lower-cased text.
_FOLLOW_UP = phrases.FOLLOW_UP_MARKERS + (_alt(phrases.FOLLOW_UP_WORDS) + r"\s*\d*\s*[:.)：]",)
_FOLLOW_UP_BODY = r"[ \t]*(?:[#>*_=-]+[ \t]*)*(?:" + "|".join(_FOLLOW_UP) + ")"
FOLLOW_UP_NL_RE = re.compile(r"\n" + _FOLLOW_UP_BODY)
_SUB_ITEM_BODY = (
    r"[ \t>*#_-]*(?:(?i:"
    + "|".join(phrases.SUB_ITEM_PREFIXES)
    + r")\s*(?:\d+\s*)?)?(?P<open>\()?(?P<lab>[a-h]|i{1,3}|iv|vi{0,3})\)"
    r"(?=[ \t:*_.\n]|$)"
)
SUB_ITEM_START_RE = re.compile(_SUB_ITEM_BODY)
SUB_ITEM_NL_RE = re.compile(r"\n" + _SUB_ITEM_BODY)
FOLLOW_UP_START_RE = re.compile(_FOLLOW_UP_BODY)
# Sub-item labels inside a paragraph, after the end of a sentence: "... The answer is (C). (b) The prism
# ... The answer is (F)." (base models answer each part of a multi-part question in one run of text).
INLINE_SUB_ITEM_RE = re.compile(r"(?<=[.!?:])[ \t]+(?P<open>\()?(?P<lab>[a-h])\)(?=[ \t])")
LISTING_VERDICT_RE = re.compile(
    r"\b(?:"
    + "|".join(phrases.LISTING_VERDICT_WORDS)
    + r")\b|"
    + "|".join(map(re.escape, phrases.LISTING_VERDICT_MARKS)),
    re.IGNORECASE,
)
# "In the first situation, ... The answer is (H). In the second situation, ... (B).": parts named by ordinals.
ORDINAL_PART_RE = re.compile(
    r"(?:^|(?<=[.!?:\n]))[ \t]*(?:in|for) the (?P<ord>"
    + "|".join(phrases.PART_ORDINALS)
    + r") (?:"
    + "|".join(phrases.PART_NOUNS)
    + r")\b",
    re.IGNORECASE,
)
# "Q1: D", "Question 2) A": a numbered answer line (the rest of the line is checked to be short).
NUMBERED_ITEM_RE = re.compile(
    r"(?m)^[ \t>*#_-]*(?:"
    + _alt(phrases.NUMBERED_ITEM_PREFIXES)
    + r")[ \t]*(?P<n>\d{1,2})[ \t]*[:.)][ \t]*(?P<rest>[^\n]*)",
    re.IGNORECASE,
)
# An answer to a labelled item, one segment of a line (lines may hold several, split by "|" or ";"):
# an optional label word ("Sub-question 1", "Q-a", "Part 2"), an index (a number, a number word, a
# lower-case letter, a Roman numeral; maybe in brackets), a delimiter, then one capital letter alone in its markup ("i. D",
# "Q-a: A", "(b) **C**"). A run of these numbered in order answers several items (scope.labelled_answers).
LABELLED_ANSWER_RE = re.compile(
    r"[ \t>*#_-]*(?P<pre>[A-Za-z]+(?:-[A-Za-z]+)?(?:[ \t]+|[ \t]*-[ \t]*))?"
    r"[(\[]?(?P<n>\d{1,2}|(?i:"
    + "|".join(sorted(phrases.INDEX_WORDS, key=len, reverse=True))
    + r")\b|[a-h]|i{1,3}|iv|vi{0,3})"
    r"(?:[)\]][ \t]*[:.=\-–—→]?|[ \t]*[:.)=\-–—→])[ \t]*[*_(\[]*(?P<L>[A-Z])[*_)\]]*[ \t.]*"
)


# A cheap necessary test for either (one scan of the original text): a line that starts with how a
# follow-up marker begins (its literal prefix, derived from the marker's pattern) or a sub-item label
# begins ("(", the second label "b)" / "ii)", a label word's first letters), in any of the usual cases.
# (A lookahead on the possible first characters rejects most lines before the alternation is tried.)
_HINTS = sorted(
    {v for m in _FOLLOW_UP for h in literal_prefixes(m) for v in _case_variants(h)}
    | {v for w in phrases.SUB_ITEM_PREFIXES for v in _case_variants(re.escape(w))}
    | {re.escape("("), re.escape("b)"), re.escape("ii)")},  # (sub-item labels, as written: "B)" is an option's)
    key=len, reverse=True,
)  # fmt: skip
_HINT_FIRST = sorted({re.sub(r"^\\", "", h)[0] for h in _HINTS})
STRUCTURE_HINT_RE = re.compile(
    r"\n[ \t>*#_=-]*(?=[" + "".join(re.escape(c) for c in _HINT_FIRST) + "])(?:" + "|".join(_HINTS) + ")"
)
STRUCTURE_NL_RE = re.compile(
    r"\n[ \t>*#_=-]*(?:"
    + "|".join(_FOLLOW_UP)
    + r"|(?:(?:"
    + "|".join(phrases.SUB_ITEM_PREFIXES)
    + r")\s*)?\(?(?:b|ii)\))"
)
JSON_ANSWER_RE = re.compile(
    r"[\"'](?:[a-z_ ]{0,24}[_ ])?"
    + _alt(phrases.JSON_ANSWER_KEYS)
    + r"s?(?:[_ ]"
    + _alt(phrases.JSON_ANSWER_KEY_SUFFIXES)
    + r")?[\"']\s*:\s*"
    r"(?P<v>\"[^\"\n]{0,300}\"|'[^'\n]{0,300}'|\[[^\]\n]{0,300}\]|[A-Za-z](?=\s*[,}]))",
    re.IGNORECASE,
)
NUMBER_RE = re.compile(r"[-−+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?|[-−+]?\.\d+")
WORD_RE = re.compile(r"[^\W_]+")


# --------------------------------------------------------------------------------------------------
# The answer region (region.py)
# --------------------------------------------------------------------------------------------------


_OPEN_MARKERS = tuple(o for o, _ in phrases.REASONING_MARKERS)
_CLOSE_MARKERS = tuple(c for _, c in phrases.REASONING_MARKERS)
# The first characters of the markers (in any case): a marker can start only where one stands, which
# str.find (memchr) finds at C speed.
REASONING_FIRST_CHARS = "".join(
    sorted({c for m in _OPEN_MARKERS + _CLOSE_MARKERS for c in (m[0], m[0].upper())})
)
# Every opening and closing marker, in any case: group `c` holds a closing one.
REASONING_MARKER_RE = re.compile(
    "(?P<c>" + "|".join(map(re.escape, sorted(_CLOSE_MARKERS, key=len, reverse=True))) + ")|(?:"
    + "|".join(map(re.escape, sorted(_OPEN_MARKERS, key=len, reverse=True))) + ")",
    re.IGNORECASE,
)  # fmt: skip
SPECIAL_TOKEN_RE = re.compile("|".join(map(re.escape, phrases.SPECIAL_TOKENS)))
