"""Mode `robust`: read the answer letter a careful human would read (design: docs/robust.md).

Three tiers, scanned over the whole text (spans index the text as given):

1. Strong anchors, each parsed into a payload: `\\boxed{}` contents, `Answer:` and its translations,
   "the answer is", "the correct option is", "Option B is correct", "I'll go with B". The last
   decisive one wins; earlier ones are drafts.
2. Commitment phrases ("I think it's B", "therefore B", "wait, actually D"): only when no strong
   anchor decided, except that an explicit self-correction after the last anchor overrides it.
3. Weak formats, only when nothing above decided: a bare short response, a final label line,
   a bold letter in the last paragraph, a leading letter, the one option text mentioned, refusals.

A letter counts only as a standalone token: never inside a word (`Answer`, `I'm`), a name
(`Vitamin C`), an abbreviation (`E. coli`), a compound (`X-ray`) or a formula (`A = πr²`).
"""

from __future__ import annotations

import itertools
import operator
import re
import unicodedata
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..records import (
    STATUS_AMBIGUOUS,
    STATUS_NO_ANSWER,
    STATUS_OK,
    STATUS_OUT_OF_RANGE,
    STATUS_REFUSAL,
    Candidate,
)
from .base import Extraction
from .letters import LOCALISED, normalize_option_text

__all__ = ["extract_robust"]

# --------------------------------------------------------------------------------------------------
# Character classes and tables
# --------------------------------------------------------------------------------------------------

# Length-preserving normalisation of the whole text, so spans stay valid: full-width ASCII -> ASCII,
# ideographic space/full stop/comma -> ASCII. (Full NFKC can change lengths; it is used on payloads.)
_FW_TABLE = {cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F)}
_FW_RE = re.compile("[\uff01-\uff5e\u3000-\u3002\u3010\u3011]")


def _fullwidth_to_ascii(m: re.Match[str]) -> str:
    return chr(_FW_TABLE[ord(m.group())])


_FW_TABLE.update({0x3000: 0x20, 0x3002: ord("."), 0x3001: ord(","), 0x3010: ord("["), 0x3011: ord("]")})

# Letters written in another script that stand for a Latin option letter, accepted only as standalone
# tokens after an explicit anchor: Arabic/Bengali labels (letters.map_localised) and the Cyrillic and
# Greek capitals that look like Latin ones.
_LOCAL_LETTERS = {
    **LOCALISED,
    "А": "A", "В": "B", "С": "C", "Е": "E", "Н": "H", "К": "K", "М": "M", "О": "O", "Р": "P",
    "Т": "T", "Х": "X",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Χ": "X",
}  # fmt: skip

_ASCII_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_FORMULA_OPS = frozenset("=<>≈≤≥≠∝+×÷·^_→⇌∈⊂")
_APOSTROPHES = frozenset("'’")
# Neighbours of a letter that can make it part of a word, an abbreviation, a compound or a formula.
_NEIGHBOUR_TRIGGERS = frozenset("'’.-\\^_")
_LINE_BREAKS = "\n\r"

# Words after which a capital letter may still be an option letter in running prose. After any other
# word the letter is part of a name: "Vitamin C", "Hepatitis B", "Type A", "Plan B".
_PRE_OK = frozenset(
    """option options choice choices answer answers letter alternative item statement response selection
    is be was are were so thus therefore hence then and or nor but pick choose select picked chose chosen
    selected with say it's its as than between of to from like except either both only also namely
    vs versus correct incorrect right wrong eliminate eliminates exclude rule out favor favour prefer
    prefers means mean i.e e.g is: go went say says said choosing picking selecting then donc alors entonces
    quindi also daher portanto então jadi est es ist é è la le el die""".split()
)

# Words that may follow a standalone "A"/"I" when it is an option letter rather than the article or
# the pronoun ("A is correct" but "A polygenic score", "I think").
_AFTER_LETTER_COMMON = frozenset(
    """is because since as and or but so which seems appears fits matches best correct right wrong
    incorrect only alone here then therefore thus hence due given per remains stands describes
    explains provides gives represents corresponds option choice answer vs versus y o e et ou und oder""".split()
)
_AFTER_LETTER_A = _AFTER_LETTER_COMMON | frozenset(
    "was has would should must could might may will can cannot does did it this".split()
)
_AFTER_LETTER_I = _AFTER_LETTER_COMMON
# Words that may follow "X. " when X is an option letter; any other lower-case word makes it an
# abbreviated name ("E. coli", "S. aureus").
_AFTER_PERIOD_OK = frozenset(
    """it it's this that the these those all other others none no not both each only however also here
    there because since as so thus therefore hence we i you they option options choice answer which
    while although but and or a an in on at for to with by from is this one its""".split()
)

# --------------------------------------------------------------------------------------------------
# Patterns (module level, compiled once)
# --------------------------------------------------------------------------------------------------

_SLOT = r"[\(\[]?\**[\(\[]?(?P<L>[a-z])\**[\)\]]?"

# Connector after an English anchor word: ":", "is", "would be", ... or (group `eol`) the end of a
# heading line ("### Final Answer").
_EN_CONN = (
    r"(?:[ \t]*[*_]{0,3}[ \t]*(?:[:：]|=(?!=)|-{1,2}(?=\s)|[—–](?=\s)|\(\s*(?=[a-z]\s*\))"
    r"|(?:,?\s*(?:therefore|thus|then|here|clearly|indeed|now|probably|likely)\s*,?)?\s+(?:is|are)\b(?!\s+not\b)"
    r"|\s+(?:would|should|must|will|might)\s+be\b|\s+(?:seems|appears)\s+to\s+be\b|\s+lies\s+in\b)"
    r"|(?P<eol>(?=[ \t]*[*_#]{0,3}[ \t]*(?:\r?\n|$))))"
)
_QUAL_BEFORE_RE = re.compile(
    r"(?:\b(?P<fin>final)|\b(?:correct|best|right|proper|ultimate|only\s+correct|most\s+(?:likely|appropriate|"
    r"accurate|plausible|reasonable|suitable|correct)|my|our|selected|chosen))[ \t]+$"
)
_AFTER_NOUN_QUAL_RE = re.compile(r"[ \t]+(?:selected|chosen)\b")

# Anchor table, all matched on the lower-cased text at a literal keyword found with str.find:
# (keyword, tail regex matched at the keyword, qualifier needed before, boundary check, "final" prefix).
_A_PLAIN, _A_QUAL, _A_SELECTED, _A_CJK_SELECT = 0, 1, 2, 3
_ANCHORS_ASCII: tuple[tuple[str, re.Pattern[str], int], ...] = (
    (
        "answer",
        re.compile(
            r"answer(?:>|(?:\s+(?:choice|option|letter))?s?(?:\s+to\s+(?:this|the)\s+(?:question|problem))?"
            + _EN_CONN
            + ")"
        ),
        _A_PLAIN,
    ),
    ("ans", re.compile(r"ans\.?(?=\s*:)" + _EN_CONN), _A_PLAIN),
    *(
        (kw, re.compile(kw + r"s?" + _EN_CONN), _A_QUAL)
        for kw in (
            "option",
            "choice",
            "selection",
            "alternative",
            "statement",
            "response",
            "one",
            "letter",
            "pick",
        )
    ),
    ("selected", re.compile(r"selected" + _EN_CONN), _A_SELECTED),
    ("chosen", re.compile(r"chosen" + _EN_CONN), _A_SELECTED),
    (
        "respuesta",
        re.compile(r"respuesta(?:\s+(?:correcta|final))?\s*(?:[:：]|\bes\b|\bser[íi]a\b)"),
        _A_PLAIN,
    ),
    ("resposta", re.compile(r"resposta(?:\s+(?:correta|certa|final))?\s*(?:[:：]|é|\bseria\b)"), _A_PLAIN),
    (
        "risposta",
        re.compile(r"risposta(?:\s+(?:corretta|esatta|giusta|finale))?\s*(?:[:：]|è|\bsarebbe\b)"),
        _A_PLAIN,
    ),
    (
        "reponse",
        re.compile(r"reponse(?:\s+(?:correcte|finale|exacte|juste))?\s*(?:[:：]|\best\b|\bserait\b)"),
        _A_PLAIN,
    ),
    ("antwort", re.compile(r"antwort\s*[*_]{0,3}\s*(?:[:：]|\bist\b|\blautet\b|\bwäre\b)"), _A_PLAIN),
    ("antwoord", re.compile(r"antwoord\s*(?:[:：]|\bis\b)"), _A_PLAIN),
    (
        "jawa",
        re.compile(
            r"jawa(?:ban|pan)(?:nya)?(?:\s+(?:yang\s+)?(?:benar|tepat|akhir|betul))?\s*(?:[:：]|\badalah\b|\bialah\b)"
        ),
        _A_PLAIN,
    ),
    ("cevap", re.compile(r"cevap\s*(?:[:：]|\bbudur\b)"), _A_PLAIN),
    ("jibu", re.compile(r"jibu\s*[:：]"), _A_PLAIN),
    ("idahun", re.compile(r"idahun\s*[:：]"), _A_PLAIN),
    ("odpowied", re.compile(r"odpowied[źz]\s*[:：]"), _A_PLAIN),
    ("svar", re.compile(r"svar\s*[:：]"), _A_PLAIN),
)
_ANCHORS_UNICODE: tuple[tuple[str, re.Pattern[str], int], ...] = (
    (
        "réponse",
        re.compile(r"réponse(?:\s+(?:correcte|finale|exacte|juste))?\s*(?:[:：]|\best\b|\bserait\b)"),
        _A_PLAIN,
    ),
    ("antwort", re.compile(r"antwort\s*[*_]{0,3}\s*(?:[:：]|\bist\b|\blautet\b|\bwäre\b)"), _A_PLAIN),
    ("答案", re.compile(r"答案\s*[*_]{0,3}\s*(?:[:：]|是|为|為|应该是|應該是|应为|應為)?"), _A_PLAIN),
    ("选项", re.compile(r"选项\s*(?:[:：]|是|为)"), _A_CJK_SELECT),
    ("選項", re.compile(r"選項\s*(?:[:：]|是|為)"), _A_CJK_SELECT),
    ("选", re.compile(r"选"), _A_CJK_SELECT),
    ("選", re.compile(r"選"), _A_CJK_SELECT),
    ("答え", re.compile(r"答え\s*[*_]{0,3}\s*(?:は|[:：])?"), _A_PLAIN),
    ("解答", re.compile(r"解答\s*[*_]{0,3}\s*(?:は|[:：])?"), _A_PLAIN),
    ("正解", re.compile(r"正解\s*[*_]{0,3}\s*(?:は|[:：])?"), _A_PLAIN),
    ("回答", re.compile(r"回答\s*[*_]{0,3}\s*(?:は|[:：])"), _A_PLAIN),
    ("答", re.compile(r"答\s*[:：]"), _A_PLAIN),
    ("정답", re.compile(r"정답\s*(?:은|는|[:：])?"), _A_PLAIN),
    ("답변", re.compile(r"답변\s*(?:은|는|[:：])"), _A_PLAIN),
    ("답", re.compile(r"(?<![가-힣])답\s*(?:은|[:：])"), _A_PLAIN),
    ("إجابة", re.compile(r"إجابة(?:\s+(?:ال)?(?:صحيحة|نهائية))?\s*(?:[:：]|هي)?\s*[:：]?"), _A_PLAIN),
    ("اجابة", re.compile(r"اجابة(?:\s+(?:ال)?(?:صحيحة|نهائية))?\s*(?:[:：]|هي)?\s*[:：]?"), _A_PLAIN),
    ("جواب", re.compile(r"جواب(?:\s+(?:ال)?(?:صحيح|نهائي))?\s*(?:[:：]|هو)?\s*[:：]?"), _A_PLAIN),
    ("پاسخ", re.compile(r"پاسخ\s*[:：]"), _A_PLAIN),
    ("תשובה", re.compile(r"תשובה\s*[:：]"), _A_PLAIN),
    ("उत्तर", re.compile(r"उत्तर\s*(?:है)?\s*[:：\-]?"), _A_PLAIN),
    ("উত্তর", re.compile(r"উত্তর\s*(?:হল|হলো|হচ্ছে)?\s*[:：ঃ]?"), _A_PLAIN),
    ("ответ", re.compile(r"ответ\s*(?:[:：]|[-—–](?=\s)|\bэто\b)"), _A_PLAIN),
    ("відповідь", re.compile(r"відповідь\s*(?:[:：]|[-—–](?=\s))"), _A_PLAIN),
    ("yanıt", re.compile(r"yanıt\s*[:：]"), _A_PLAIN),
    ("đáp án", re.compile(r"đáp\s+án(?:\s+đúng)?\s*(?:[:：]|\blà\b)"), _A_PLAIN),
    ("คำตอบ", re.compile(r"คำตอบ(?:ที่ถูกต้อง)?\s*(?:[:：]|คือ)"), _A_PLAIN),
    ("ìdáhùn", re.compile(r"ìdáhùn\s*[:：]"), _A_PLAIN),
    ("odpověď", re.compile(r"odpověď\s*[:：]"), _A_PLAIN),
    ("απάντηση", re.compile(r"απάντηση\s*[:：]"), _A_PLAIN),
)
_CJK_SELECT_BEFORE_RE = re.compile(r"(?:故|应|應|所以|因此|我|正确的?|正確的?)$")
_SELECTED_BEFORE_RE = re.compile(r"\b(?:option|choice|answer)[ \t]+$")

# Commitment phrases, also keyword-led: (keywords, tail regex, regex the text before must match, kind).
_C_BEFORE_I_WE = re.compile(
    r"(?:\bi(?:'ll|’ll|\s+will|\s+would|'d|’d)?|\bwe(?:'ll|’ll|\s+will)?|\blet'?s|\blet\s+us)\s+$"
)
_COMMITS: tuple[tuple[tuple[str, ...], re.Pattern[str], re.Pattern[str] | None, str], ...] = (
    (
        (
            "wait",
            "actually",
            "oops",
            "correction",
            "rather",
            "instead",
            "second thought",
            "scratch that",
            "on reflection",
        ),
        re.compile(
            r"(?:wait|actually|oops|correction|rather|instead|second\s+thought|scratch\s+that|on\s+reflection)\b"
            r"[\s,.:;!—–-]*(?:(?:it'?s|it’s|it\s+is|it\s+should\s+be|make\s+(?:it|that)|the\s+answer\s+is|"
            r"i\s+(?:mean|choose|pick))\s+)?(?:(?:option|choice)\s+)?" + _SLOT + r"(?=\s*(?:[.!;,)\n]|$))"
        ),
        None,
        "c5",
    ),
    (
        ("choose", "select", "pick", "go with", "opt for"),
        re.compile(r"(?:choose|select|pick|go\s+with|opt\s+for)\s+(?:(?:option|choice|answer)\s+)?" + _SLOT),
        _C_BEFORE_I_WE,
        "c1",
    ),
    (
        ("option", "choice", "answer", "alternative", "letter", "statement"),
        re.compile(
            r"(?:option|choice|answer|alternative|letter|statement)\s+"
            + _SLOT
            + r"\s+(?:is|seems|appears)\s+"
            r"(?:to\s+be\s+)?(?:the\s+)?(?:(?:most\s+)?correct|right|best)\b(?!\s+(?:only\s+)?(?:if|when|for|in|under)\b)"
        ),
        None,
        "c2",
    ),
    (
        ("it's", "it’s", "it is", "must be", "has to be", "should be"),
        re.compile(
            r"(?:it'?s|it’s|it\s+is|must\s+be|has\s+to\s+be|should\s+be)\s+(?:(?:option|choice)\s+)?"
            + _SLOT
            + r"(?=\s*(?:[.!;,)\n]|$))"
        ),
        None,
        "c4",
    ),
)
# "B is the correct answer" / "B is right." : found from the word "correct"/"right"/"best" backwards.
_C3_BEFORE_RE = re.compile(r"(?<![\w'’.-])" + _SLOT + r"\s+is\s+(?:the\s+)?(?:only\s+)?$")
_C3_AFTER_RE = re.compile(r"(?:correct|right|best)\s+(?:answer|option|choice)")
_C7_AFTER_RE = re.compile(r"(?:correct|right)(?=\s*(?:[.!;]|$))")
# "Therefore, B." at the end of a line.
_C6_RE = re.compile(
    r"\b(?:therefore|thus|hence|so|consequently|accordingly)\b\s*,?\s+(?:(?:option|choice)\s+)?"
    + _SLOT
    + r"\s*[.!]?\s*$"
)
_C6_BEFORE_ENDINGS = (
    "option",
    "choice",
    ",",
    "therefore",
    "thus",
    "hence",
    "so",
    "consequently",
    "accordingly",
)
# A capital letter followed only by " \t\r.!*)]" up to the end of its line (the cheap test before _C6_RE).
_LINE_END_CAPITAL_RE = re.compile(r"[A-Z][ \t\r.!*)\]]*(?=\n|\Z)")
_LINE_END_TRAIL = frozenset(" \t\r.!*)]")
_COMMIT_LEVEL = {"c1": 2, "c2": 2, "c3": 2, "c4": 1, "c5": 1, "c6": 1, "c7": 1}
_COMMIT_RULE = {
    "c1": "robust.commit_choose",
    "c2": "robust.commit_correct",
    "c3": "robust.commit_correct",
    "c7": "robust.commit_correct",
    "c4": "robust.commit_phrase",
    "c5": "robust.self_correction",
    "c6": "robust.conclusion",
}

_BOX_RE = re.compile(r"\\(?:boxed|fbox)\s*\{")

# Markup blanked out of payloads (replaced by spaces of the same length, so offsets survive). This is the
# definition; _blank_markup computes the same substitution with the two faster pieces below.
_MARKUP_RE = re.compile(
    r"\\(?:text(?:bf|it|rm|sf|tt|normal)?|math(?:rm|bf|it|sf|tt|bb)?|boxed|fbox|emph|underline|"
    r"operatorname|bf|it|rm|displaystyle|quad|qquad|left|right)\b\s*\{?|\\[()\[\],;:! ]|\$+|\*+|_+|[{}`]"
    r"|</?[A-Za-z][\w-]*>"
)
# _MARKUP_RE split for speed (see _blank_markup): commands and tags, and single characters.
_MARKUP_CMD_RE = re.compile(
    r"\\(?:text(?:bf|it|rm|sf|tt|normal)?|math(?:rm|bf|it|sf|tt|bb)?|boxed|fbox|emph|underline|"
    r"operatorname|bf|it|rm|displaystyle|quad|qquad|left|right)\b\s*\{?|\\[()\[\],;:! ]"
    r"|</?[A-Za-z][\w-]*>"
)
_MARKUP_CHAR_TABLE = str.maketrans(dict.fromkeys("$*_{}`", " "))

_FILLER_RE = re.compile(
    r"(?:[\s\"'“”‘’«»「」『』\[\(<:：#>|.,\-–—]"
    r"|\b(?:the|final|correct|best|right|answer|option|choice|letter|alternative|is|be|would|should|must"
    r"|for\s+sure|definitely|clearly|probably|likely|most\s+likely|certainly|simply|indeed|either|both"
    r"|therefore|thus|so|hence|here|la|le|el|die|der|das|ist|est|es|opci[óo]n|op[çc][ãa]o|alternativa"
    r"|letra|lettre|buchstabe|pilihan|opsi|вариант|варианте|then|obviously|undoubtedly|actually|donc|alors"
    r"|entonces|pues|quindi|dunque|also|daher|somit|portanto|então|jadi|maka|поэтому|итак)\b"
    r"|l['’]|é(?=\s)|è(?=\s)"
    r"|選択肢|选项|選項|是|为|為|は|选|選|です)*",
    re.IGNORECASE,
)
_LIST_SEP_RE = re.compile(
    r"[\s)\]}'\"”’]*(?:,\s*(?:and|or|&)?|/|\||&|;|\+|\band\b|\bor\b|\bund\b|\boder\b|\bet\b|\bou\b|\by\b"
    r"|\bo\b|\be\b|\bи\b|\bили\b|,|和|或|及|및|또는|と|و|أو)[\s(\[{'\"“‘]*",
    re.IGNORECASE,
)
_NEGATION_RE = re.compile(r"\s*(?:not|never|isn't|isn’t|cannot be|can't be|can’t be)\b", re.IGNORECASE)
_CONDITIONAL_AFTER_RE = re.compile(
    r"[\s)\]*]*(?:if|only\s+if|when|unless|assuming|provided)\b", re.IGNORECASE
)
_CONDITIONAL_BEFORE_RE = re.compile(r"\b(?:if|unless|otherwise|suppose|supposing|were)\b[^.\n]*$")


def _conditional_before(low: str, a: int, b: int) -> bool:
    """_CONDITIONAL_BEFORE_RE.search(low, a, b), with a cheap necessary test first: the keyword and what
    follows it hold no "." or newline and reach b (or a newline at b - 1, where `$` also matches), so the
    keyword lies after the last "." / newline of low[a:b'] (b' = b, or b - 1 when low[b - 1] is a newline)."""
    e = b - 1 if b > a and low[b - 1] == "\n" else b
    c = max(a, low.rfind(".", a, e) + 1, low.rfind("\n", a, e) + 1)
    w = low[c:e]
    if "if" in w or "were" in w or "unless" in w or "otherwise" in w or "suppos" in w:
        return _CONDITIONAL_BEFORE_RE.search(low, a, b) is not None
    return False


_REFUSAL_RE = re.compile(
    r"\b(?:i\s+(?:do\s+not|don'?t|don’t|cannot|can'?t|can’t)\s+(?:know|tell|determine|answer|decide|help|"
    r"be\s+(?:sure|certain))|i['’]?m\s+(?:not\s+(?:sure|certain)|unsure|uncertain|unable)"
    r"|i\s+am\s+(?:not\s+(?:sure|certain)|unsure|uncertain|unable)|unsure|not\s+sure"
    r"|cannot\s+(?:be\s+)?(?:determin\w*|answer\w*|decid\w*|tell)|can['’]?t\s+(?:be\s+)?(?:determin\w*|answer\w*|decid\w*|tell)"
    r"|unable\s+to\s+(?:determine|answer|decide|choose)|none\s+of\s+(?:the\s+|these\s+)?(?:above|options|"
    r"choices|answers|these|them|given)|no\s+(?:correct|valid|right)\s+(?:answer|option|choice)"
    r"|not\s+enough\s+information|insufficient\s+information|unknown|no\s+answer|don['’]?t\s+know"
    r"|n/a|decline|impossible\s+to\s+(?:say|determine|tell))\b"
    r"|不知道|无法确定|無法確定|以上都不是|以上皆非|都不对|わかりません|分かりません|모르겠|알\s*수\s*없"
    r"|\bno\s+lo\s+s[ée]\b|\bje\s+ne\s+sais\s+pas\b|\baucune\b|\bweiß\s+(?:es\s+)?nicht\b|\bnão\s+sei\b"
    r"|\bnenhuma\b|\btidak\s+tahu\b|не\s+знаю|لا\s+أعرف",
    re.IGNORECASE,
)
_ALL_OF_ABOVE_RE = re.compile(
    r"\ball\s+of\s+(?:the\s+)?(?:above|options|choices|them|these)\b", re.IGNORECASE
)

_PROSE_LETTER_RE = re.compile(r"(?<![A-Za-z0-9'’\\])[A-Z](?![A-Za-z0-9])")
_LABEL_LINE_BODY = (
    r"[ \t>]*(?:[-*+•]|\d+[.)])?[ \t]*(?:\*\*|__)?[ \t]*(?P<pre>option\s+|choice\s+)?[\(\[]?(?P<L>[A-Z])"
    r"(?P<post>(?:[\)\]]|\*\*)?[ \t]*(?:[.):：\-–—]|\*\*|$))"
)
# A label line starts at the beginning of the text or at a newline. The text start is tried once with
# match(); the rest is found with a pattern that begins with a literal newline, which the regex engine
# skips to directly instead of trying `^|\n` at every position (same matches, ~4x faster).
_LABEL_LINE_RE = re.compile(r"(?:^|\n)" + _LABEL_LINE_BODY, re.IGNORECASE)
_LABEL_LINE_NL_RE = re.compile(r"\n" + _LABEL_LINE_BODY, re.IGNORECASE)
_BOLD_RE = re.compile(r"\*\*([^*\n]{1,80}?)\*\*|__([^_\n]{1,80}?)__")
_TERMINAL_CHARS = frozenset(".!?)]}*$>\"'”’`。！？」』")


class _Parsed(NamedTuple):
    kind: str  # "letter" | "ambiguous" | "refusal" | "out_of_range" | "none"
    letter: str | None
    span: tuple[int, int]
    verdict: str


class _Cand(NamedTuple):
    pos: int
    level: int  # 3 boxed/final, 2 anchor/explicit commitment, 1 commitment phrase
    rule: str
    parsed: _Parsed
    self_correction: bool


_DECISIVE = frozenset(("letter", "ambiguous", "refusal", "out_of_range"))


# --------------------------------------------------------------------------------------------------
# Token checks
# --------------------------------------------------------------------------------------------------


def _is_word_char(ch: str) -> bool:
    if ch.isascii():
        return ch.isalnum()
    return ch.isdigit() or ("\u00aa" <= ch <= "\u052f" and ch.isalpha())


# ASCII letters and digits: `ch in _WORD_ASCII or (ch > "\x7f" and _is_word_char(ch))` is _is_word_char(ch)
# for one character without a function call in the common (ASCII) case.
_WORD_ASCII = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _letter_use(s: str, j: int) -> str | None:
    """Why the letter at s[j] is not an option letter (inside a word, an abbreviation, ...), or None."""
    n = len(s)
    c = s[j]
    prev = s[j - 1] if j > 0 else " "
    nxt = s[j + 1] if j + 1 < n else " "
    if c not in _ASCII_LETTERS:  # localised letter: its neighbours must not be letters at all
        if prev.isalpha() or nxt.isalpha():
            return "inside a word"
        return None
    if (
        prev in _WORD_ASCII
        or nxt in _WORD_ASCII
        or (prev > "\x7f" and _is_word_char(prev))
        or (nxt > "\x7f" and _is_word_char(nxt))
    ):
        return "inside a word"
    # (the checks below only fire for these neighbours; most letters have none of them)
    if prev in _NEIGHBOUR_TRIGGERS or nxt in _NEIGHBOUR_TRIGGERS:
        nxt2 = s[j + 2] if j + 2 < n else " "
        prev2 = s[j - 2] if j > 1 else " "
        if nxt in _APOSTROPHES and nxt2.isalpha():
            return "inside a word"
        if prev in _APOSTROPHES and prev2.isalpha():
            return "inside a word"
        if nxt == "." and _is_word_char(nxt2):
            return "abbreviation"
        if prev == "." and _is_word_char(prev2):
            return "abbreviation"
        if nxt == "-" and _is_word_char(nxt2):
            return "compound word"
        if prev == "-" and _is_word_char(prev2):
            return "compound word"
        if prev in "\\^_":
            return "formula"
    k = j + 1
    while k < n and s[k] in " \t":
        k += 1
    if k < n and s[k] in _FORMULA_OPS:
        return "inside a formula"
    k = j - 1
    while k >= 0 and s[k] in " \t":
        k -= 1
    if k >= 0 and s[k] in _FORMULA_OPS:
        return "inside a formula"
    if nxt == " " or nxt == "\t":
        m = _NEXT_WORD_RE.match(s, j + 1)
        if m:
            word = m.group(1)
            if c in "Aa" and word not in _AFTER_LETTER_A:
                return "article, not a letter"
            if c == "I" and word not in _AFTER_LETTER_I:
                return "pronoun, not a letter"
    elif nxt == ".":
        m = _NEXT_WORD_RE.match(s, j + 2)
        if m and m.group(1) not in _AFTER_PERIOD_OK and not m.group(1).startswith("'"):
            return "abbreviation"
    return None


_NEXT_WORD_RE = re.compile(r"[ \t]+([a-z][a-z'’]*)")
_PREV_WORD_RE = re.compile(r"([A-Za-z][A-Za-z'’.]*)[ \t]+$")


def _after_name(s: str, j: int) -> bool:
    """True when the letter at s[j] directly follows a word that makes it part of a name."""
    m = _PREV_WORD_RE.search(s, max(0, j - 40), j)
    if not m:
        return False
    return m.group(1).lower().rstrip(".") not in _PRE_OK


def _token_letter(s: str, j: int, allow_lower: bool) -> str | None:
    c = s[j]
    if c in _ASCII_LETTERS:
        if c.islower() and not allow_lower:
            return None
        return c.upper()
    return _LOCAL_LETTERS.get(c)


# --------------------------------------------------------------------------------------------------
# Payload parsing
# --------------------------------------------------------------------------------------------------


def _blank_markup(raw: str) -> str:
    """_MARKUP_RE.sub(_spaces, raw), computed as: LaTeX commands and tags through the regex, then the
    single characters $ * _ { } ` by a translation table. Same result: those characters are blanked by
    _MARKUP_RE wherever they are (each starts a match unless an earlier match covers it), and they can
    neither start nor end a command or tag match, so the command and tag matches are the same."""
    if _MARKUP_PRESENT_RE.search(raw) is None:
        return raw
    if "\\" in raw or "<" in raw:
        raw = _MARKUP_CMD_RE.sub(_spaces, raw)
    return raw.translate(_MARKUP_CHAR_TABLE)


def _spaces(m: re.Match[str]) -> str:
    return " " * (m.end() - m.start())


def _norm(s: str) -> str:
    if not s.isascii():
        s = unicodedata.normalize("NFKC", s)
    return normalize_option_text(s)


class _Options:
    """Option texts normalised once per call, lazily."""

    __slots__ = ("letters", "_norms")

    def __init__(self, letters: Mapping[str, str | None]):
        self.letters = letters
        self._norms: list[tuple[str, str]] | None = None

    @property
    def norms(self) -> list[tuple[str, str]]:
        if self._norms is None:
            try:
                key = tuple(self.letters.items())
                cached = _NORMS_CACHE.get(key)
            except TypeError:  # unhashable option values
                key, cached = None, None
            if cached is not None:
                self._norms = cached
                return cached
            out = []
            for letter, text in self.letters.items():
                if isinstance(text, str):
                    if text.isascii() and _MARKUP_PRESENT_RE.search(text) is None:
                        # (what the general line below computes for plain ASCII text)
                        t = " ".join(text.lower().split()).strip(_STRIP_CHARS)
                    else:
                        t = _norm(_blank_markup(text)).strip(_STRIP_CHARS)
                    if t:
                        out.append((letter, t))
            self._norms = out
            if key is not None:
                if len(_NORMS_CACHE) >= 2048:
                    _NORMS_CACHE.clear()
                _NORMS_CACHE[key] = out
        return self._norms


# Normalised option texts of recently seen option sets (rows are often graded many times: one per rollout).
_NORMS_CACHE: dict[tuple[Any, ...], list[tuple[str, str]]] = {}


_SIMPLE_PAYLOAD_RE = re.compile(r"[\s(\[:\"'“‘]*([A-Za-z])[\s)\]\"'”’.!,;]*$")
_MARKUP_PRESENT_RE = re.compile(r"[\\$*_`{}<]")
_STRIP_CHARS = " \t\r\n.,;:!?\"'“”‘’()[]"


def _parse_payload(
    t: str,
    a: int,
    b: int,
    opts: _Options,
    *,
    anchored: bool,
    prose: bool = True,
    equality: bool = True,
    prefix: bool = True,
) -> _Parsed:
    """Read one payload t[a:b]: option text, a (list of) letter(s), a refusal, or letters in prose."""
    s = _blank_markup(t[a:b])
    m0 = _SIMPLE_PAYLOAD_RE.match(s)
    if m0 is not None:  # the common "B", "(c).", "**D**": one letter and punctuation
        j = m0.start(1)
        c = s[j]
        if anchored or c.isupper():
            letter = c.upper()
            if letter in opts.letters:
                return _Parsed("letter", letter, (a + j, a + j + 1), "leading letter")
            return _Parsed("out_of_range", None, (a + j, a + j + 1), f"{letter} is not an option")
    n = len(s)
    i = 0
    while i < n and s[i].isspace():
        i += 1
    if i >= n:
        return _Parsed("none", None, (a, b), "empty payload")
    core = s[i:].strip(_STRIP_CHARS)
    # 1. the whole payload is an option's text (before letters: "E. coli", "None of the above")
    if equality and core and len(core) <= 400 and (len(core) > 1 or core.isdigit() or not core.isascii()):
        nc = _norm(core)
        for letter, ot in opts.norms:
            if nc == ot:
                return _Parsed("letter", letter, (a + i, b), "option text")
    # 2. a leading letter, or a list of letters
    j = _FILLER_RE.match(s, i).end()
    if _NEGATION_RE.match(s, i):
        return _Parsed("none", None, (a + i, b), "negated")
    lead_reason = None
    if j < n:
        letter = _token_letter(s, j, anchored)
        if letter is not None:
            lead_reason = _letter_use(s, j)
            if lead_reason is None and s[j] == "a":
                m_art = _NEXT_UPPER_TOKEN_RE.match(s, j + 1)
                if m_art:  # "é a B", "is a B": an article before the letter
                    j = m_art.end() - 1
                    letter = s[j]
            if lead_reason is None:
                if _NOT_CHOSEN_AFTER_RE.match(s, j + 1):
                    return _Parsed("none", None, (a + j, a + j + 1), "letter dismissed, not chosen")
                if _CONDITIONAL_AFTER_RE.match(s, j + 1):
                    return _Parsed("none", None, (a + j, a + j + 1), "conditional, not a commitment")
                found = [letter]
                end = j + 1
                k = j + 1
                while True:
                    m = _LIST_SEP_RE.match(s, k)
                    if not m or m.end() >= n or m.end() == k:
                        break
                    k2 = m.end()
                    nxt = _token_letter(s, k2, anchored and s[j].islower())
                    if nxt is None or _letter_use(s, k2) is not None:
                        break
                    found.append(nxt)
                    end = k2 + 1
                    k = k2 + 1
                distinct = list(dict.fromkeys(found))
                if len(distinct) > 1:
                    return _Parsed(
                        "ambiguous", None, (a + j, a + end), "several letters: " + "/".join(distinct)
                    )
                if letter not in opts.letters:
                    return _Parsed("out_of_range", None, (a + j, a + j + 1), f"{letter} is not an option")
                return _Parsed("letter", letter, (a + j, a + j + 1), "leading letter")
    # 3. the payload starts with an option's text ("Paris, because ...")
    if core and prefix:
        nc = _norm(core)
        best = None
        for letter, ot in opts.norms:
            if nc.startswith(ot) and (len(nc) == len(ot) or not nc[len(ot)].isalnum()):
                if best is None or len(ot) > len(best[1]):
                    best = (letter, ot)
        if best is not None and all(
            letter == best[0] or ot in best[1] or not _contains_word(nc, ot) for letter, ot in opts.norms
        ):
            return _Parsed("letter", best[0], (a + i, b), "option text")
    # 4. a refusal or "none of the above" that is not an option
    if _ALL_OF_ABOVE_RE.search(core):
        return _Parsed("ambiguous", None, (a + i, b), "all of the options")
    if _REFUSAL_RE.search(core):
        return _Parsed("refusal", None, (a + i, b), "refusal")
    if not prose:
        return _Parsed("none", None, (a + i, b), lead_reason or "no letter at the start")
    # 5. standalone capital letters in a short prose payload ("Because Paris is the capital, B.")
    hits: list[tuple[int, str]] = []
    for m in _PROSE_LETTER_RE.finditer(s, i):
        j2 = m.start()
        letter = s[j2]
        if letter not in opts.letters or _letter_use(s, j2) is not None or _after_name(s, j2):
            continue
        if _NEGATED_BEFORE_RE.search(s, max(i, j2 - 20), j2):
            continue
        hits.append((j2, letter))
    if hits:
        # only a letter that closes the payload ("..., B.") or follows a conclusion word ("so B, since")
        # commits; a letter in the middle of prose is a mention ("consider option A (London) and ...")
        j2, letter = hits[-1]
        closes = _CLOSING_RE.match(s, j2 + 1) is not None
        concluded = _CONCLUSION_BEFORE_RE.search(s, max(i, j2 - 25), j2) is not None
        if len({h[1] for h in hits}) == 1 and (closes or concluded):
            return _Parsed("letter", letter, (a + j2, a + j2 + 1), "letter closing the payload")
        if concluded:
            return _Parsed("letter", letter, (a + j2, a + j2 + 1), "last letter after a conclusion")
        return _Parsed("none", None, (a + i, b), "letters mentioned in prose, none committed")
    # 6. exactly one option text inside an anchored payload ("Answer: The capital is Paris.")
    if anchored and core and opts.norms:
        nc = _norm(core)
        inside = {letter for letter, ot in opts.norms if _contains_word(nc, ot)}
        if len(inside) == 1:
            return _Parsed("letter", inside.pop(), (a + i, b), "option text in the payload")
    return _Parsed("none", None, (a + i, b), lead_reason or "no letter")


_LIST_BEFORE_RE = re.compile(r"\b(?:whether|if|or|and|nor|either|neither|unless|both)\W*$")
_CLOSING_RE = re.compile(r"[\s)\]}*_\"'”’.!。]*$")
_CONCLUSION_BEFORE_RE = re.compile(
    r"(?:\b(?:so|thus|therefore|hence|i\.e\.?|namely|is|be|only|leaves|choose|pick|select|answer)|[,:])\W*$",
    re.IGNORECASE,
)
_NOT_CHOSEN_AFTER_RE = re.compile(
    r"[\s)\]*]*(?:(?:is|are|seems|looks)\s+(?:wrong|incorrect|false|not\b|unlikely|implausible|ruled\s+out)"
    r"|(?:could|might|may)\s+(?:also\s+)?be\b)",
    re.IGNORECASE,
)
_NEGATED_BEFORE_RE = re.compile(r"\b(?:not|never|isn't|isn’t|nor|except|excluding|than)\W*$", re.IGNORECASE)
_NEXT_UPPER_TOKEN_RE = re.compile(r"[ \t]+[A-Z](?![A-Za-z0-9])")


def _contains_word(hay: str, needle: str) -> bool:
    start = 0
    while True:
        k = hay.find(needle, start)
        if k < 0:
            return False
        e = k + len(needle)
        if (k == 0 or not hay[k - 1].isalnum()) and (e == len(hay) or not hay[e].isalnum()):
            return True
        start = k + 1


def _line_end(t: str, pos: int) -> int:
    e = t.find("\n", pos)
    return len(t) if e < 0 else e


def _anchor_payload(t: str, pos: int) -> tuple[int, int]:
    """The rest of the line after an anchor, or the next non-empty line when that rest is only markup."""
    e = _line_end(t, pos)
    rest = t[pos:e]
    if rest.strip(" \t\r*_:：#$\\[]()`") and not _ONLY_MARKUP_RE.fullmatch(rest):
        return pos, min(e, pos + 400)
    n = len(t)
    k = e + 1
    for _ in range(4):
        if k >= n:
            break
        e2 = _line_end(t, k)
        line = t[k:e2]
        if line.strip(" \t\r*_:#$\\[]()`-—") and not _ONLY_MARKUP_RE.fullmatch(line):
            return k, min(e2, k + 400)
        k = e2 + 1
    return pos, e


_ONLY_MARKUP_RE = re.compile(
    r"[\s*_:：#$`]*(?:\\\[|\\\]|\\\(|\\\)|\\begin\{\w+\*?\}|\\end\{\w+\*?\})?[\s*_:：#$`]*"
)


def _box_content(t: str, open_end: int) -> tuple[int, int]:
    depth = 1
    k = open_end
    while True:  # braces in text order: the next "}" unless a "{" comes first
        close = t.find("}", k)
        if close < 0:
            return open_end, _line_end(t, open_end)  # unbalanced: read to the end of the line
        opening = t.find("{", k, close)
        if opening >= 0:
            depth += 1
            k = opening + 1
            continue
        depth -= 1
        if depth == 0:
            return open_end, close
        k = close + 1


# --------------------------------------------------------------------------------------------------
# Candidate collection
# --------------------------------------------------------------------------------------------------


def _lower_same_length(t: str) -> str:
    if t.isascii():
        return t.lower()
    low = t.lower()
    if len(low) != len(t):  # a few characters (e.g. U+0130) lower-case to two; keep those as they are
        low = "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in t)
    return low


def _build_dispatch(anchors, commits) -> tuple[re.Pattern[str], dict[str, list[tuple[Any, ...]]]]:
    """One literal-alternation regex over every keyword, and what to try at each keyword."""
    table: dict[str, list[tuple[Any, ...]]] = {}
    for kw, tail, kind in anchors:
        table.setdefault(kw, []).append(("a", tail, kind))
    for kws, tail, before, kind in commits:
        for kw in kws:
            table.setdefault(kw, []).append(("c", tail, before, kind))
    for kw in ("correct", "right", "best"):
        table.setdefault(kw, []).append(("c3",))
    return re.compile(_trie_pattern(list(table))), table


def _trie_pattern(words: list[str]) -> str:
    """A regex matching any of `words` (longest first), factored by common prefixes: a flat
    alternation of ~70 literals costs the regex engine ~70 tests per text position, a trie a few."""
    trie: dict[str, Any] = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        end = "" in node
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return "(?:" + body + ")?" if end else body

    return emit(trie)


_KW_RE_ASCII, _KW_TABLE_ASCII = _build_dispatch(_ANCHORS_ASCII, _COMMITS)
# ASCII text: every character but letters, digits and the apostrophe becomes a space before splitting.
# (bytes.translate on the ASCII-encoded text: a plain 256-byte table, several times faster than str.translate)
_TOKEN_TABLE = bytes(c if (chr(c).isalnum() or chr(c) == "'") else 32 for c in range(256))
_KW_STEMS = ("jawa", "odpowied")  # keywords that begin longer words; always searched
_KW_BY_FIRST_WORD: dict[str, list[str]] = {}
for _kw in _KW_TABLE_ASCII:
    if _kw in _KW_STEMS:
        continue
    _first = _kw.split()[0]
    for _form in (_first, _first + "s", _first + "es"):
        _KW_BY_FIRST_WORD.setdefault(_form, []).append(_kw)
# (keys as bytes; forms with non-ASCII characters, such as "it’s", can never occur in ASCII text)
_KW_BY_FIRST_WORD_B = {w.encode("ascii"): kws for w, kws in _KW_BY_FIRST_WORD.items() if w.isascii()}
_FIRST_WORDS_B = frozenset(_KW_BY_FIRST_WORD_B)
_KW_RE_ALL, _KW_TABLE_ALL = _build_dispatch(_ANCHORS_ASCII + _ANCHORS_UNICODE, _COMMITS)


def _keyword_hits(
    low: str, lo: int, hi: int, kw_re: re.Pattern[str], ascii_text: bool
) -> list[tuple[int, str]]:
    """(position, keyword) of every keyword starting in [lo, hi), in text order.

    For ASCII text the words present are collected first (translate + split run at C speed), and only
    the keywords whose first word occurs are searched: much cheaper than running one regex over every
    position. Other scripts have no spaces to split on, so they take the regex."""
    end = min(len(low), hi + _KW_MAX)
    if not ascii_text:
        return [(m.start(), m.group()) for m in kw_re.finditer(low, lo, end) if m.start() < hi]
    present = _FIRST_WORDS_B.intersection(low[lo:end].encode("ascii").translate(_TOKEN_TABLE).split())
    hits = []
    for kw in _KW_STEMS:
        k = low.find(kw, lo, end)
        while 0 <= k < hi:
            hits.append((k, kw))
            k = low.find(kw, k + 1, end)
    for w in present:
        for kw in _KW_BY_FIRST_WORD_B[w]:
            k = low.find(kw, lo, end)
            while 0 <= k < hi:
                hits.append((k, kw))
                k = low.find(kw, k + 1, end)
    hits.sort()
    return hits


def _keyword_matches(t: str, low: str, lo: int, hi: int):
    """Anchors and commitment phrases whose keyword starts in [lo, hi), as
    ("a", start, payload_start, final) or ("c", kind, start, letter_index)."""
    ascii_text = t.isascii()
    if ascii_text:
        kw_re, table = _KW_RE_ASCII, _KW_TABLE_ASCII
    else:
        kw_re, table = _KW_RE_ALL, _KW_TABLE_ALL
    seen: set[int] = set()
    for k, kw in _keyword_hits(low, lo, hi, kw_re, ascii_text):
        latin = ascii_text or kw[0] < "\u0250"  # (every keyword found in ASCII text is Latin)
        if latin and k > 0:
            ch = low[k - 1]
            if ch in _WORD_ASCII or (ch > "\x7f" and _is_word_char(ch)):
                continue
        for h in table[kw]:
            if h[0] == "a":
                r = _anchor_at(t, low, k, h[1], h[2], latin, kw)
                if r is not None:
                    yield ("a",) + r
            elif h[0] == "c":
                _, tail, before, kind = h
                m = tail.match(low, k)
                if m is None:
                    continue
                start = k
                if before is not None:
                    q = before.search(low, max(0, k - 20), k)
                    if q is None:
                        continue
                    start = q.start()
                j = m.start("L")
                if j not in seen:
                    seen.add(j)
                    yield "c", kind, start, j
            else:
                # (cheap necessary test: the regex ends with whitespace and needs "is")
                if k == 0 or not low[k - 1].isspace() or "is" not in low[max(0, k - 20) : k]:
                    continue
                q = _C3_BEFORE_RE.search(low, max(0, k - 20), k)
                if q is None:
                    continue
                j = q.start("L")
                if j in seen:
                    continue
                if _C3_AFTER_RE.match(low, k):
                    kind = "c3"
                elif _C7_AFTER_RE.match(low, k):
                    kind = "c7"
                else:
                    continue
                seen.add(j)
                yield "c", kind, q.start(), j
    # "Therefore, B." closing a line whose end is in [lo, hi) (a newline before hi, or the end of the text
    # when hi is the end): first find the lines whose last character, before trailing " \t\r.!*)]", is a
    # capital letter, then run the detailed regex there. The scan starts at the start of the line that
    # holds lo, so the first line end found is the first one at or after lo. (The lines are walked with
    # str.find: the matches of _LINE_END_CAPITAL_RE.finditer(t, ls, hi) that end before hi or at the end
    # of the text, in about half the time of the regex, which tries every capital letter.)
    n = len(t)
    ls = t.rfind("\n", 0, lo) + 1
    while ls <= hi:
        e = t.find("\n", ls, hi)
        if e < 0:
            if hi < n:
                break
            e = hi
        k = e
        while k > ls and t[k - 1] in _LINE_END_TRAIL:
            k -= 1
        k -= 1
        line_start, ls = ls, e + 1
        if k < line_start or not ("A" <= t[k] <= "Z"):
            continue
        ch = t[k - 1] if k > 0 else " "
        if not (ch in _WORD_ASCII or (ch > "\x7f" and _is_word_char(ch))):
            pos = t.rfind("\n", 0, e) + 1
            a = max(pos, k - 60)
            # (cheap necessary test: a _C6_RE match puts its letter at k, with only "([*" and then
            # whitespace between it and "option", "choice", a comma or the conclusion word)
            w = low[a:k].rstrip("([*")
            if not w or not w[-1].isspace() or not w.rstrip().endswith(_C6_BEFORE_ENDINGS):
                continue
            m = _C6_RE.search(low, a, e)
            if m is not None and m.start("L") not in seen:
                seen.add(m.start("L"))
                yield "c", "c6", m.start(), m.start("L")


def _anchor_at(t: str, low: str, k: int, tail: re.Pattern[str], kind: int, latin: bool, kw: str):
    """(start, payload_start, final) when an anchor starts with the keyword at k, else None."""
    m = tail.match(low, k)
    if m is None or m.end() == k:
        return None
    start, final = k, False
    if kind == _A_CJK_SELECT:
        if not _CJK_SELECT_BEFORE_RE.search(low, max(0, k - 3), k):
            return None
    elif kind == _A_SELECTED:
        q = _SELECTED_BEFORE_RE.search(low, max(0, k - 20), k)
        if q is None:
            return None
        start = q.start()
    else:
        q = _qualifier_before(low, k) if latin else None
        if q is not None:
            start, final = q
        elif kind == _A_QUAL and not _AFTER_NOUN_QUAL_RE.match(low, m.end()):
            return None
        if kw == "答案" and low[max(0, k - 2) : k] in ("最终", "最終"):
            start, final = k - 2, True
    if "eol" in tail.groupindex and m.group("eol") is not None and not _at_line_start(t, start):
        return None
    return start, m.end(), final


_QUALIFIERS = frozenset("final correct best right proper ultimate my our selected chosen".split())
_QUALIFIERS2 = frozenset(("only correct", "most likely", "most appropriate", "most accurate", "most plausible",
                          "most reasonable", "most suitable", "most correct"))  # fmt: skip


def _qualifier_before(low: str, k: int) -> tuple[int, bool] | None:
    """(start, is_final) when the word(s) right before k qualify an answer noun ("final", "most likely")."""
    if k == 0 or (low[k - 1] != " " and low[k - 1] != "\t"):
        return None
    j = k - 1
    while j > 0 and low[j - 1] in " \t":
        j -= 1
    i = _az_run_start(low, j)
    word = low[i:j]
    if word in _QUALIFIERS:
        return i, word == "final"
    if word in ("correct", "likely", "appropriate", "accurate", "plausible", "reasonable", "suitable"):
        h = i
        while h > 0 and low[h - 1] in " \t":
            h -= 1
        g = _az_run_start(low, h)
        if low[g:h] + " " + word in _QUALIFIERS2:
            return g, False
    return None


_AZ = "abcdefghijklmnopqrstuvwxyz"


def _az_run_start(low: str, j: int) -> int:
    """Start of the run of a-z ending at j, or some i > 0 with low[i:j] 12+ letters long when the run is
    longer than that (no qualifier word is that long)."""
    a = j - 12 if j > 12 else 0
    return a + len(low[a:j].rstrip(_AZ))


_UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_KW_MAX = 20  # longer than any keyword
_WORDISH_RE = re.compile(r"[A-Za-z0-9\u00c0-\uffff]{2}|[A-Z]")


def _stage1_start(t: str, n: int) -> int:
    """Start of the first stage: the closing lines, from the last line with some words in it (at most
    the last 200 characters)."""
    e = n
    lo1 = n
    while e > 0 and lo1 > n - 200:
        s0 = t.rfind("\n", 0, e - 1) + 1
        lo1 = s0
        if _WORDISH_RE.search(t, s0, e):
            break
        e = s0
    return max(lo1, n - 200)


def _stages(t: str) -> list[int]:
    """Start offsets of the successively longer tails scanned: the closing lines (from the last line
    with some words in it, at most 200 characters), the last 350 characters, everything."""
    n = len(t)
    if n <= 300:
        return [0]
    lo1 = _stage1_start(t, n)
    out = [lo1]
    if n - 350 < lo1 and n > 450:
        out.append(n - 350)
    out.append(0)
    return out


def _strong_candidates(t: str, low: str, opts: _Options, lo: int, hi: int) -> list[_Cand]:
    """Boxes, anchors and commitment phrases whose keyword starts in [lo, hi), in text order."""
    cands: list[_Cand] = []
    if t.find("\\", lo, hi + 6) >= 0 and (
        t.find("\\boxed", lo, hi + 6) >= 0 or t.find("\\fbox", lo, hi + 5) >= 0
    ):
        for m in _BOX_RE.finditer(t, lo, min(len(t), hi + 20)):
            if m.start() >= hi:
                break
            a, b = _box_content(t, m.end())
            p = _parse_payload(t, a, b, opts, anchored=True)
            cands.append(_Cand(m.start(), 3, "robust.boxed", p, False))
    for hit in _keyword_matches(t, low, lo, hi):
        if hit[0] == "a":
            _, start, end, final = hit
            a, b = _anchor_payload(t, end)
            p = _parse_payload(t, a, b, opts, anchored=True)
            if p.kind in _DECISIVE and _conditional_before(low, max(0, start - 80), start):
                p = p._replace(kind="none", letter=None, verdict="conditional, not a commitment")
            rule = "robust.final_answer" if final else "robust.answer_anchor"
            cands.append(_Cand(start, 3 if final else 2, rule, p, False))
            continue
        _, kind, start, j = hit
        letter = t[j]
        reason = None if letter in _UPPER else "lower-case letter without an anchor"
        if reason is None:
            reason = _letter_use(t, j)
        if reason is None and kind in ("c4", "c7"):
            if _conditional_before(low, max(0, start - 60), start):
                reason = "conditional, not a commitment"
            elif kind == "c7" and _LIST_BEFORE_RE.search(low, max(0, j - 30), j):
                reason = "one of several letters, not a commitment"
        if reason is not None:
            p = _Parsed("none", None, (j, j + 1), reason)
        elif letter not in opts.letters:
            p = _Parsed("out_of_range", None, (j, j + 1), f"{letter} is not an option")
        else:
            p = _Parsed("letter", letter, (j, j + 1), "commitment")
        cands.append(_Cand(start, _COMMIT_LEVEL[kind], _COMMIT_RULE[kind], p, kind == "c5"))
    if len(cands) > 1:
        cands.sort(key=_POS)
    return cands


_POS = operator.itemgetter(0)  # _Cand.pos


def _at_line_start(t: str, pos: int) -> bool:
    k = pos - 1
    while k >= 0 and t[k] in " \t*_#>":
        k -= 1
    return k < 0 or t[k] == "\n"


def _choose(cands: list[_Cand]) -> _Cand | None:
    """The last decisive anchor (level >= 2), unless a later self-correction overrides it; else the last
    decisive commitment phrase."""
    best: _Cand | None = None
    for c in cands:
        if c.parsed.kind in _DECISIVE and c.level >= 2:
            best = c
    if best is not None:
        for c in cands:
            if c.pos > best.pos and c.self_correction and c.parsed.kind in _DECISIVE:
                best = c
        return best
    for c in cands:
        if c.parsed.kind in _DECISIVE:
            best = c
    return best


# --------------------------------------------------------------------------------------------------
# Weak formats (only when no anchor or commitment decided)
# --------------------------------------------------------------------------------------------------


def _label_lines(t: str) -> list[tuple[int, str, str]]:
    """(line start, letter, shape) of every line that starts with an option label; the shape (prefix
    word and delimiter) tells the items of one listing from a differently written final choice."""
    out = []
    first = _LABEL_LINE_RE.match(t)
    matches = _LABEL_LINE_NL_RE.finditer(t, 0 if first is None else first.end())
    for m in matches if first is None else itertools.chain((first,), matches):
        pre, c, post = m.group("pre", "L", "post")
        if c.isupper() and _letter_use(t, m.start(2)) is None:
            shape = (pre.strip().lower() if pre else "") + "|" + post.strip()
            start = m.start()
            out.append((start + (t[start] == "\n"), c, shape))
    return out


def _weak(t: str, opts: _Options, cands_out: list[Candidate]) -> tuple[_Parsed, str] | None:
    n = len(t)
    stripped = t.strip()
    # W1: the whole (short) response is the answer: "**C**", ": B", "C and D", "alpha", "D. it can't be A"
    if len(stripped) <= 120 and stripped.count("\n") <= 1:
        a = t.find(stripped[:1]) if stripped else 0
        only = stripped.strip(_STRIP_CHARS + "*_$`")
        if len(only) == 1 and only in _ASCII_LETTERS:
            letter = only.upper()
            j = t.find(only)
            if letter in opts.letters:
                return _Parsed("letter", letter, (j, j + 1), "bare letter"), "robust.bare"
            return _Parsed("out_of_range", None, (j, j + 1), f"{letter} is not an option"), "robust.bare"
        p = _parse_payload(t, a, n, opts, anchored=False)
        cands_out.append(Candidate("robust.bare", p.span, p.letter, _verdict(p)))
        if p.kind in _DECISIVE:
            return p, "robust.bare"
    label_cache: list[list[tuple[int, str, str]]] = []

    def labels() -> list[tuple[int, str, str]]:
        if not label_cache:
            label_cache.append(_label_lines(t))
        return label_cache[0]

    def listing() -> bool:
        return len({c for _, c, _ in labels()}) >= 2

    # W2: the last line is a label: "B", "(B)", "**B) Paris**", "Option B"
    e = len(t.rstrip())
    s0 = t.rfind("\n", 0, e) + 1
    last = t[s0:e]
    if len(last) <= 160 and not last.lstrip().startswith("|"):
        p = _parse_payload(t, s0, e, opts, anchored=False, prose=False, prefix=False)
        if p.kind == "letter" and listing():
            # a label that continues an alphabetical listing (A, B, C, ...) is the next item of a
            # (truncated) walk through the options, not a choice
            mine = [shape for pos, _, shape in labels() if pos == s0]
            before = [(c, shape) for pos, c, shape in labels() if max(0, s0 - 600) <= pos < s0]
            if before and ord(before[-1][0]) == ord(p.letter) - 1 and (not mine or before[-1][1] == mine[0]):
                p = p._replace(kind="none", letter=None, verdict="label of an option listing")
        if p.kind in ("letter", "ambiguous"):
            cands_out.append(Candidate("robust.last_line", p.span, p.letter, "accepted"))
            return p, "robust.last_line"
    # W3: one distinct bold letter in the last paragraph, not used as a line label
    para = t.rfind("\n\n", 0, e)
    pstart = 0 if para < 0 else para + 2
    bold_letters: dict[str, tuple[int, int]] = {}
    for m in _BOLD_RE.finditer(t, pstart):
        g = 1 if m.group(1) is not None else 2
        a, b = m.start(g), m.end(g)
        if _at_line_start(t, m.start()):
            continue
        p = _parse_payload(t, a, b, opts, anchored=False, prose=False, equality=False)
        if p.kind == "letter":
            bold_letters[p.letter] = p.span
    if len(bold_letters) == 1:
        letter, span = next(iter(bold_letters.items()))
        cands_out.append(Candidate("robust.bold", span, letter, "accepted"))
        return _Parsed("letter", letter, span, "bold letter"), "robust.bold"
    if len(bold_letters) > 1:
        for letter, span in bold_letters.items():
            cands_out.append(
                Candidate("robust.bold", span, letter, "several bold letters in the last paragraph")
            )
    # refusal in the closing part of the response
    tail_start = max(0, n - 400)
    m = _REFUSAL_RE.search(t, tail_start)
    if m:
        return _Parsed("refusal", None, (m.start(), m.end()), "refusal"), "robust.refusal"
    # W4: the response opens with a letter ("D. it can't be A or B", "B。不是 A")
    if not listing():
        s1 = _line_end(t, 0)
        p = _parse_payload(t, 0, min(s1, 200), opts, anchored=False, prose=False, equality=False)
        if p.kind == "letter" and p.span[0] <= 6:
            cands_out.append(Candidate("robust.leading_letter", p.span, p.letter, "accepted"))
            return p, "robust.leading_letter"
    # W5: the response ends by naming the only option text it mentions ("... a lack of Vitamin C.")
    if opts.norms and t.rstrip()[-1:] in _TERMINAL_CHARS and not listing():
        whole = _norm(t)
        mentioned = [(letter, ot) for letter, ot in opts.norms if len(ot) >= 3 and _contains_word(whole, ot)]
        if len(mentioned) == 1:
            letter, ot = mentioned[0]
            ending = whole.rstrip(_STRIP_CHARS + "*_`$")
            k = ending.rfind(ot)
            if k >= 0 and len(ending) - (k + len(ot)) <= 3:
                cands_out.append(Candidate("robust.option_text", (pstart, e), letter, "accepted"))
                return _Parsed(
                    "letter", letter, (pstart, e), "ends with the only option text"
                ), "robust.option_text"
    return None


def _verdict(p: _Parsed) -> str:
    return "accepted" if p.kind == "letter" else p.verdict


_STATUS_OF = {
    "ambiguous": STATUS_AMBIGUOUS,
    "refusal": STATUS_REFUSAL,
    "out_of_range": STATUS_OUT_OF_RANGE,
}


# --------------------------------------------------------------------------------------------------
# Fast path: the most common closing lines
# --------------------------------------------------------------------------------------------------

# The first stage (the closing lines, see _stages) of most responses is one of a few shapes: `Answer: B`,
# `**Final Answer:** \boxed{B}`, `Therefore, the correct answer is (B).`, `Final answer: <option text>`,
# `Option B is correct.`, `\boxed{B}`, `答案：B`. _fast_extract recognises them and returns what the general
# path computes for them. It relies only on preconditions it checks, and returns None (the general path
# runs) when one fails:
#
# - the stage is exactly the lines matched: they start at a line start (_stage1_start) and the text is
#   longer than 300 characters (so the stage is not the whole text); it is ASCII (or, for `答案：B`, ASCII
#   before that last line);
# - the keywords of the stage are known: its words are fixed by the shape except a free payload, which
#   must hold no keyword at all (checked on its words, as _keyword_hits collects them). The fixed words
#   hold the anchor noun (answer/choice/option/antwort), whose "option B is correct" pattern needs
#   whitespace right after the noun, which no anchor shape has, and maybe the qualifier "correct"/"best",
#   a keyword of "B is the correct answer": that pattern is tried on the text before it, and a match
#   gives up;
# - the letter is preceded by ":", "is" or markup, never by a conclusion word, so the "Therefore, B."
#   scan finds nothing (a free payload must not end with a capital letter at all); boxes occur only
#   where the shape has them, written in lower case as _BOX_RE and _MARKUP_RE need;
# - what the general path reads around the stage (a conditional phrase up to 80 characters before an
#   anchor, the word before the anchor noun, the neighbours of a commitment letter) is read here with
#   the same functions, and a free payload is read by _anchor_at, _anchor_payload and _parse_payload.
#
# The shape then decides the candidates: one anchor; one box; an anchor followed by a box on its line
# (the box, later, decides; the anchor is "same answer" or "conditional"); or one "B is correct".
_FAST_LETTER = r"[(*]*(?P<L>[a-z])[)*.]*"
_FAST_BOX = r"\$?(?P<bx>\\boxed)\{(?:\\text\{(?P<BL>[a-z])\}|(?P<BL2>[a-z]))\}\$?\.?"
_FAST_ANCHOR_RE = re.compile(
    r"(?:\*\*)?(?:(?:therefore|so|thus|hence),? )?(?:the )?(?:(?P<q>final|correct|best) )?"
    r"(?P<kw>answer|choice|option|antwort)(?P<conn>(?:\*\*)?:(?:\*\*)?| is) (?:"
    + _FAST_LETTER
    + "|"
    + _FAST_BOX
    + ")"
)
# The same opening words followed by any payload (read with the general functions, see _fast_anchor).
_FAST_HEAD_RE = re.compile(
    r"(?:\*\*)?(?:(?:therefore|so|thus|hence),? )?(?:the )?(?:(?P<q>final|correct|best) )?"
    r"(?P<kw>answer|choice|option|antwort)(?:(?:\*\*)?:(?:\*\*)?| is) "
)
_FAST_COMMIT_RE = re.compile(r"(?:\*\*)?(?P<kw>option|choice|answer) (?P<L>[a-z]) is correct\.?(?:\*\*)?")
_FAST_BOX_RE = re.compile(
    r"(?:\\\[ ?|\$\$? ?)?(?P<bx>\\boxed)\{(?:\\text\{(?P<BL>[a-z])\}|(?P<BL2>[a-z]))\}(?: ?\\\]| ?\$\$?)?\.?"
    r"(?:\n(?:\\\]|\$\$))?"
)
# `答案：B` closing a text that is ASCII before that last line (matched after the full-width conversion).
_FAST_CJK_RE = re.compile(r"(?:\*\*)?(?P<kw>答案)(?:\*\*)?:(?:\*\*)? ?" + _FAST_LETTER)
_FAST_FIRST = frozenset("*tshfcbaoTSHFCBAO\\$")  # first characters of the shapes above


def _fast_letter(letter: str, letters: Mapping[str, str | None], j: int, why: str) -> _Parsed:
    if letter in letters:
        return _Parsed("letter", letter, (j, j + 1), why)
    return _Parsed("out_of_range", None, (j, j + 1), f"{letter} is not an option")


def _fast_result(rule: str, pos: int, p: _Parsed, cands: tuple[Candidate, ...]) -> Extraction:
    span = (pos, p.span[1])
    if p.kind == "letter":
        return Extraction(p.letter, STATUS_OK, rule, span, cands)
    return Extraction(None, STATUS_OUT_OF_RANGE, rule, span, cands, message=p.verdict)


def _fast_box(t: str, m: re.Match[str], w0: int) -> tuple[int, int]:
    """(letter index, box start) of the box matched on the lower-cased text, or (-1, -1) when the
    commands are not written in lower case (boxes and markup are matched case-sensitively)."""
    bx = m.start("bx") + w0
    j = m.start("BL")
    if j < 0:
        j = m.start("BL2")
        if not t.startswith("\\boxed", bx):
            return -1, -1
    elif not t.startswith("\\boxed{\\text", bx):
        return -1, -1
    return j + w0, bx


def _fast_anchor(
    t: str, letters: Mapping[str, str | None], m: re.Match[str], low: str, w0: int, lo1: int
) -> Extraction | None:
    """The first stage is the last line, an anchor (_FAST_HEAD_RE) with any payload: when nothing else
    in the line can be a candidate, the anchor is found and read with the general functions. (`low`
    is the text from w0 on, lower-cased.)"""
    if t.find("\n", lo1) >= 0 or t.find("\\", lo1) >= 0:  # (one line; no box)
        return None
    rest = low[m.end() :]
    kw, q = m.group("kw", "q")
    # no other keyword: none among the words of the payload, no second occurrence of the anchor's
    # words inside longer words, no stem; no capital letter closing the line ("Therefore, B.")
    if (
        kw in rest
        or (q is not None and q in rest)
        or "jawa" in rest
        or "odpowied" in rest
        or _FIRST_WORDS_B.intersection(rest.encode("ascii").translate(_TOKEN_TABLE).split())
        or _LINE_END_CAPITAL_RE.search(t, lo1) is not None
    ):
        return None
    if q is not None and q != "final":
        kq = m.start("q")
        if _C3_BEFORE_RE.search(low, kq - 20, kq) is not None:
            return None
    k = m.start("kw")
    entries = _KW_TABLE_ASCII[kw]
    if len(entries) > 1 and entries[1][1].match(low, k) is not None:  # (the "option B is correct" pattern)
        return None
    full = t.lower()
    k += w0
    found = _anchor_at(t, full, k, entries[0][1], entries[0][2], True, kw)
    if found is None:
        return None
    start, end, final = found
    a, b = _anchor_payload(t, end)
    p = _parse_payload(t, a, b, _Options(letters), anchored=True)
    if p.kind not in _DECISIVE or _conditional_before(full, max(0, start - 80), start):
        return None
    rule = "robust.final_answer" if final else "robust.answer_anchor"
    span = (min(start, p.span[0]), p.span[1])
    cands = (Candidate(rule, p.span, p.letter, _verdict(p)),)
    if p.kind == "letter":
        return Extraction(p.letter, STATUS_OK, rule, span, cands)
    return Extraction(None, _STATUS_OF[p.kind], rule, span, cands, message=p.verdict)


def _fast_cjk(text: str, letters: Mapping[str, str | None]) -> Extraction | None:
    """The last line is `答案：B` and everything before it is ASCII. Then the general path's text (after the
    full-width conversion, per character) and its lower-cased copy are the ASCII part followed by that
    line, which has words ("答案"), so it is the first stage; its only keyword is "答案" (the longest
    match there, not "答"), with no qualifier before it (not Latin) and no "最终" (it starts the line)."""
    n = len(text)
    s0 = text.rfind("\n") + 1
    if s0 < n - 200 or not text[:s0].isascii():
        return None
    line = _FW_RE.sub(_fullwidth_to_ascii, text[s0:])
    low_line = line.lower()
    m = _FAST_CJK_RE.fullmatch(low_line)
    if m is None:
        return None
    k = m.start("kw")
    # (the 80 characters before the anchor and the one before them, lower-cased as in the general path)
    window = text[s0 + k - 81 : s0].lower() + low_line[:k]
    if _conditional_before(window, 1, 81):
        return None
    j = m.start("L")
    p = _fast_letter(line[j].upper(), letters, s0 + j, "leading letter")
    rule = "robust.answer_anchor"
    return _fast_result(rule, s0 + k, p, (Candidate(rule, p.span, p.letter, _verdict(p)),))


def _fast_extract(t: str, letters: Mapping[str, str | None]) -> Extraction | None:
    """extract_robust(t, letters) when its first stage is one of the shapes above, else None."""
    n = len(t)
    if n <= 300:
        return None
    if not t.isascii():
        return _fast_cjk(t, letters)
    lo1 = _stage1_start(t, n)
    if t[lo1 - 1] != "\n" or t[lo1] not in _FAST_FIRST:  # (lo1 >= n - 200 > 100)
        return None
    w0 = lo1 - 100
    low = t[w0:].lower()  # (ASCII: the same characters as the whole text lower-cased)
    r = lo1 - w0
    m = _FAST_ANCHOR_RE.fullmatch(low, r)
    if m is not None:
        kw, q = m.group("kw", "q")
        k = m.start("kw")
        rule = "robust.answer_anchor"
        if q is None:
            if kw == "choice" or kw == "option":  # (no qualifier: not an anchor)
                return None
            # ("Antwort" needs a colon; words before it are left to the general path)
            if kw == "antwort" and (k - r > 2 or m.group("conn") == " is"):
                return None
            start = k
        else:
            if kw == "antwort":
                return None
            start = m.start("q")
            if q == "final":
                rule = "robust.final_answer"
            elif _C3_BEFORE_RE.search(low, start - 20, start) is not None:
                return None
        conditional = _conditional_before(low, start - 80, start)
        start += w0
        j = m.start("L")
        if j >= 0:
            if conditional:
                return None
            j += w0
            p = _fast_letter(t[j].upper(), letters, j, "leading letter")
            return _fast_result(rule, start, p, (Candidate(rule, p.span, p.letter, _verdict(p)),))
        j, bx = _fast_box(t, m, w0)
        if j < 0:
            return None
        p = _fast_letter(t[j].upper(), letters, j, "leading letter")
        if conditional:
            first = Candidate(rule, p.span, None, "conditional, not a commitment")
        else:
            first = Candidate(rule, p.span, p.letter, "same answer as the deciding candidate")
        box = Candidate("robust.boxed", p.span, p.letter, _verdict(p))
        return _fast_result("robust.boxed", bx, p, (first, box))
    m = _FAST_HEAD_RE.match(low, r)
    if m is not None:
        return _fast_anchor(t, letters, m, low, w0, lo1)
    m = _FAST_COMMIT_RE.fullmatch(low, r)
    if m is not None:
        j = m.start("L") + w0
        c = t[j]
        if c not in _UPPER or _letter_use(t, j) is not None:
            return None
        p = _fast_letter(c, letters, j, "commitment")
        rule = "robust.commit_correct"
        return _fast_result(rule, m.start("kw") + w0, p, (Candidate(rule, p.span, p.letter, _verdict(p)),))
    m = _FAST_BOX_RE.fullmatch(low, r)
    if m is not None:
        j, bx = _fast_box(t, m, w0)
        if j < 0:
            return None
        p = _fast_letter(t[j].upper(), letters, j, "leading letter")
        rule = "robust.boxed"
        return _fast_result(rule, bx, p, (Candidate(rule, p.span, p.letter, _verdict(p)),))
    return None


# --------------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------------


def extract_robust(
    text: str, letters: Mapping[str, str | None], template_metadata: Mapping[str, Any] | None = None
) -> Extraction:
    """The final committed answer letter of `text`, restricted to `letters`, with the rule and span that
    decided and every candidate considered (for --explain). Never raises on odd input."""
    if not isinstance(text, str) or not text or text.isspace():  # (same test as `not text.strip()`)
        return Extraction(None, STATUS_NO_ANSWER, "robust.none")
    if type(letters) is not dict and not isinstance(letters, Mapping):
        letters = {}
    fast = _fast_extract(text, letters)
    if fast is not None:
        return fast
    t = text if text.isascii() else _FW_RE.sub(_fullwidth_to_ascii, text)
    opts = _Options(letters)
    low = _lower_same_length(t)
    # Scan from the end: the last decisive anchor decides, so when the closing part of the text holds one,
    # nothing earlier can change the outcome (earlier drafts are then not listed as candidates).
    n = len(t)
    cands: list[_Cand] = []
    chosen = None
    hi = n
    for lo in _stages(t):
        cands = _strong_candidates(t, low, opts, lo, hi) + cands
        chosen = _choose(cands)
        if chosen is not None and (chosen.level >= 2 or chosen.self_correction):
            break
        hi = lo
    out: list[Candidate] = []
    if chosen is not None:
        for c in cands:
            if c is chosen:
                verdict = "accepted" if c.parsed.kind == "letter" else c.parsed.verdict
            elif c.parsed.kind not in _DECISIVE:
                verdict = c.parsed.verdict
            elif c.parsed.kind == chosen.parsed.kind and c.parsed.letter == chosen.parsed.letter:
                verdict = "same answer as the deciding candidate"
            elif c.pos < chosen.pos:
                verdict = "draft superseded by later answer"
            elif c.level < 2 and not c.self_correction:
                verdict = "later mention, not a commitment"
            else:
                verdict = "superseded"
            out.append(Candidate(c.rule, c.parsed.span, c.parsed.letter, verdict))
        p = chosen.parsed
        span = (min(chosen.pos, p.span[0]), p.span[1])
        if p.kind == "letter":
            return Extraction(p.letter, STATUS_OK, chosen.rule, span, tuple(out))
        return Extraction(None, _STATUS_OF[p.kind], chosen.rule, span, tuple(out), message=p.verdict)
    for c in cands:
        out.append(Candidate(c.rule, c.parsed.span, c.parsed.letter, c.parsed.verdict))
    weak = _weak(t, opts, out)
    if weak is None:
        return Extraction(None, STATUS_NO_ANSWER, "robust.none", None, tuple(out), message="no answer found")
    p, rule = weak
    if p.kind == "letter":
        return Extraction(p.letter, STATUS_OK, rule, p.span, tuple(out))
    return Extraction(None, _STATUS_OF[p.kind], rule, p.span, tuple(out), message=p.verdict)
