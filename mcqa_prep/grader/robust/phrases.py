"""The words of the `robust` mode, as plain tables (compiled into patterns by `patterns.py`, nowhere else).

Nothing here is code: to teach the mode a new language or a new phrasing, add a row. Every Latin-script
word is written in lower case and matched on the lower-cased text; `\\s+` stands between the words of a
multi-word entry. Regex fragments are allowed where a table says so (they are joined with `|`).
"""

from __future__ import annotations

from .languages import *  # noqa: F403 (the tables of other languages and scripts, as phrases.X)

# --------------------------------------------------------------------------------------------------
# Structure: the reasoning and the answer region (region.py)
# --------------------------------------------------------------------------------------------------

# How models mark their reasoning, as (opening, closing) markers, matched in any case. The answer region
# starts after the last closing marker; an opening marker after it (a reasoning block that never closes)
# leaves the response without one. A closing marker may stand without its opening one (the opening marker
# was part of the prompt).
REASONING_MARKERS = (
    ("<think>", "</think>"), ("<thinking>", "</thinking>"), ("<reasoning>", "</reasoning>"),
    ("<thought>", "</thought>"), ("◁think▷", "◁/think▷"), ("<|begin_of_thought|>", "<|end_of_thought|>"),
    ("[think]", "[/think]"), ("<|start_thinking|>", "<|end_thinking|>"), ("<seed:think>", "</seed:think>"),
    ("<|im_start|>think", "<|im_start|>answer"), ("<|channel|>analysis", "<|channel|>final"),
)  # fmt: skip
# Special tokens that carry no words: blanked (replaced by spaces) in the answer region.
SPECIAL_TOKENS = (
    "<|begin_of_solution|>", "<|end_of_solution|>", "<|message|>", "<|end|>", "<|return|>", "<|im_end|>",
    "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "</s>",
)  # fmt: skip

# Characters next to a letter that put it inside a formula ("A = πr²", "A + B").
FORMULA_OPERATORS = "=<>≈≤≥≠∝+×÷·^→⇌∈⊂"

# Words after which a capital letter may still be an option letter in running prose. After any other
# word the letter is part of a name: "Vitamin C", "Hepatitis B", "Type A", "Plan B".
FUNCTION_WORDS_BEFORE_LETTER = """
option options choice choices answer answers letter alternative item statement response selection
is be was are were so thus therefore hence then and or but pick choose select picked chose chosen
selected with say it's its as between of to from like either both only also namely
vs versus correct incorrect right wrong rule out favor favour prefer
prefers means mean i.e e.g go went says said choosing picking selecting donc alors entonces
quindi daher portanto jadi est es ist la le el die definitely leaving leaves
possibly perhaps maybe probably likely remains though although while whereas yet because since if unless
whether even just certainly surely obviously clearly that where when it
""".split()

# Words that may follow a standalone "A"/"I" when it is an option letter rather than the article or the
# pronoun ("A is correct" but "A polygenic score", "I think").
WORDS_AFTER_OPTION_LETTER = """
is because since as and or but so which seems appears fits matches best correct right
only alone here then therefore thus hence due given per remains stands describes explains provides gives
represents corresponds option choice answer vs versus y o e et ou und oder are survives
""".split()
# ... and after "A" only (the pronoun "I" is followed by these verbs all the time).
WORDS_AFTER_OPTION_A = "was has would should must could might may will can cannot does did it this".split()
# ... and the words of other languages for "option" that follow its letter, as stems ("A variantıdır", "A
# seçeneği", "A şıkkı"): after any of them "A" is the letter — unless another letter follows in the same
# sentence, which that noun names ("A opção correta é a C", "A alternativa C está correta": the article).
OPTION_WORD_STEMS_AFTER_LETTER = ("variant", "seçene", "opci", "opç", "alternativ")
# Capitals that are words of a language (prepositions, articles, conjunctions): followed by a lower-case
# word, not by a predicate about a letter ("V prírode …", "S dovolením …", "W przypadku …", "В этом случае …",
# "Ο σωστός …"), the capital is that word, not a label. ("A" and "I" are the English article and
# pronoun, above.)
ONE_LETTER_WORDS = "V S W Z K O В С К О А Ο".split()

# Words that may follow "X. " when X is an option letter; any other lower-case word makes it an
# abbreviated name ("E. coli", "S. aureus").
WORDS_AFTER_LETTER_PERIOD = """
it it's this that the these those all other others none no not both each only however also here there
because since as so thus therefore hence we i you they option options choice answer which while although
but and or a an in on at for to with by from is one its
""".split()

# --------------------------------------------------------------------------------------------------
# English answer anchors ("Answer:", "the correct option is", "Final Choice:")
# --------------------------------------------------------------------------------------------------

# Nouns that anchor an answer on their own ("Answer: B", "The answer is B").
ANSWER_NOUNS = ("answer",)
# Nouns that anchor an answer only with a qualifier before them ("the correct option is B") or
# "selected"/"chosen" after them ("Option Selected: B").
QUALIFIED_NOUNS = (
    "option", "choice", "selection", "alternative", "statement", "response", "one", "letter", "pick",
    "explanation", "description", "match", "fit", "candidate", "conclusion", "verdict", "final", "correct",
)  # fmt: skip
# Nouns that name the answer on their own when they open a line with a colon ("Choice: B").
HEADING_NOUNS = (
    "option", "choice", "selection", "pick", "response", "letter", "conclusion", "verdict", "final", "correct",
)  # fmt: skip
# Qualifiers before an answer noun. "final" makes the anchor a final answer.
QUALIFIERS = (
    "final", "correct", "best", "right", "proper", "ultimate", "my", "our", "selected", "chosen",
    "closest", "nearest", "true", "likeliest", "only", "overall", "actual",
)  # fmt: skip
# Qualifiers that make an anchored answer a draft ("Initial answer: C", "Tentative answer: B", "Initially
# I'd pick B"): any later commitment, however weakly written, replaces it.
DRAFT_QUALIFIERS = (
    "initial", "tentative", "preliminary", "provisional", "draft", "first", "working", "rough", "initially",
)  # fmt: skip
# "most"/"least" followed by any adjective also qualify ("the most consistent option", "the least
# accurate statement"), as does "only correct".
QUALIFIER_DEGREE_WORDS = ("most", "least")
# Words that keep a closing sentence ending with an option's text from committing to it: a hedge, a step
# of a sequence, another possibility ("People might also use it while singing.", "Then, we do an
# endoscopy.").
CLOSING_TEXT_VETOES = ("might", "may", "could", "possibly", "perhaps", "maybe", "then", "next", "also")
# Words right before an answer noun that make it a mention, not an anchor ("This answer choice is less
# likely", "each answer option is plausible", "which answer is correct?").
ANCHOR_DEMONSTRATIVES = (
    "this",
    "that",
    "these",
    "those",
    "each",
    "every",
    "another",
    "other",
    "which",
    "any",
)
# Words after an answer noun that make it a choice ("Option Selected: B").
NOUN_SUFFIX_CHOSEN = ("selected", "chosen")
# Adverbs allowed between the noun and "is" ("The answer, therefore, is B").
ANCHOR_ADVERBS = ("therefore", "thus", "then", "here", "clearly", "indeed", "now", "probably", "likely")
# Verb phrases that link the noun and the payload ("is", "would be"); hedged ones are marked below.
ANCHOR_LINK_VERBS = (
    r"(?:is|are)\b(?!\s+not\b)", r"(?:would|should|must|will|might|could|may)\s+be\b",
    r"(?:seems|appears)\s+to\s+be\b", r"lies\s+in\b",
)  # fmt: skip
# Link words that make the statement hedged ("the answer might be B").
HEDGED_LINKS = ("might", "could", "may")

# --------------------------------------------------------------------------------------------------
# Commitments without an answer noun
# --------------------------------------------------------------------------------------------------

# "I'll go with B", "we choose (C)": verbs that commit when a first-person subject precedes them.
CHOOSE_VERBS = (
    "choose", "select", "pick", "go with", "go for", "opt for", "answer", "say", "guess", "vote for",
    "choosing", "selecting", "picking", "going with", "going for", "opting for",
)  # fmt: skip
FIRST_PERSON_SUBJECTS = (
    r"i(?:'ll|’ll|\s+will|\s+would|'d|’d|'m|’m|\s+am)?", r"we(?:'ll|’ll|\s+will|\s+would|'re|’re|\s+are)?",
    r"let'?s", r"let\s+us",
)  # fmt: skip
# "it's B", "must be B": phrases that commit to the letter right after them (weakly).
IT_IS_PHRASES = ("it's", "it’s", "it is", "must be", "has to be", "should be", "definitely", "clearly")
# "D it is.": the same phrases after a letter that opens its line, closing the sentence.
IT_IS_AFTER_LETTER = ("it is", "it's", "it’s")
# "..., which corresponds to option B.", "this matches (C)": phrases that tie a result to the letter
# closing the clause after them.
MATCH_PHRASES = ("corresponds to", "matches", "closest to", "nearest to", "equivalent to", "consistent with")
# Self-corrections: the letter after these replaces what came before ("wait, actually D"): the keyword
# and the pattern that starts there ("no" only with punctuation after it: "No — B.", not "no B vitamin").
SELF_CORRECTION_WORDS = (
    "wait", "actually", "oops", "correction", "rather", "instead", "second thought", "scratch that",
    "on reflection", "no",
)  # fmt: skip
SELF_CORRECTION_PATTERNS = (
    "wait", "actually", "oops", "correction", "rather", "instead", r"second\s+thought", r"scratch\s+that",
    r"on\s+reflection", r"no\s*[,—–-]",
)  # fmt: skip
# Words between a self-correction word and the letter ("wait, it's D", "actually the answer is D").
SELF_CORRECTION_FILLERS = (
    r"it'?s", "it’s", r"it\s+is", r"it\s+should\s+be", r"make\s+(?:it|that)",
    r"i\s+(?:mean|choose|pick)",
)  # fmt: skip
# "Option B is correct", "Options B and D are both correct": nouns that name an option by its letter.
OPTION_NOUNS = ("option", "choice", "answer", "alternative", "letter", "statement")
# "B is the correct answer", "C is the least accurate statement": a verdict on a letter — the copulas, the
# words that may follow them ("A and C are both right", "D is also correct"; the "also" ones keep other
# answers), the determiners, the restrictor ("B is the only correct one"), then the adjective and the noun.
VERDICT_COPULAS = ("is", "are")
VERDICT_SCOPE_WORDS = ("both", "all")
VERDICT_ALSO_WORDS = ("also", "equally")
VERDICT_DETERMINERS = ("the", "my", "our")
VERDICT_RESTRICTORS = ("only",)
VERDICT_NOUNS = (
    "answer", "option", "choice", "statement", "one", "response", "explanation", "description", "match",
    "fit", "selection", "alternative", "pick", "candidate",
)  # fmt: skip
# Verdict nouns that need no adjective ("B is the answer", "C is my pick"), unless a complement follows.
VERDICT_NOUNS_ALONE = ("answer", "one", "choice", "pick")
VERDICT_ADJECTIVES = ("correct", "right", "best", "closest", "true", "valid", "accurate", "appropriate")
# Words between "the"/"my" and the noun of a verdict that name it the final one ("C is my final answer").
VERDICT_FINAL_WORDS = ("final", "ultimate")
# Verdicts on a letter in Chinese, Japanese and Korean, where the letter comes first ("选项B正确",
# "B是正确的", "Cが正解です", "C가 정답입니다"): the verdict words, the words for "option" around the
# letter, and the particles between the letter and the verdict.
CJK_VERDICTS = ("正确", "正確", "正解", "정답")
CJK_OPTION_WORDS = ("选项", "選項", "答案", "選択肢", "번")
CJK_PARTICLES = ("是", "为", "為", "が", "は", "가", "이", "는", "은")
# ... negated after it ("5번은 정답이 아닙니다", "Cは正解ではない"; "B不正确" is no verdict on B: 不 stands between).
CJK_VERDICT_NEGATIONS_AFTER = ("아니", "아닙", "ではな", "じゃな")
# "A and C are all plausible": verdicts that, said of several letters, give several answers.
PLURAL_VERDICTS = ("valid", "plausible", "possible", "acceptable", "reasonable")
# "That's the second option.", "I'll go with the third choice": an option named by its position, after a
# phrase that commits to it (regex fragments, each ending right before "the"), closing the sentence.
ORDINALS = (
    "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "last",
)  # fmt: skip
ORDINAL_NOUNS = ("option", "choice", "answer", "alternative", "one")
ORDINAL_COMMITS = (
    r"it(?:'s|’s|\s+is)", r"that(?:'s|’s|\s+is)", r"this\s+is", r"(?:must|should|has\s+to)\s+be",
    r"answer\s+(?:is|would\s+be)", r"answer\s*:",
    r"(?:i|we)(?:'ll|’ll|'d|’d|\s+will|\s+would)?\s+(?:choose|pick|select|go\s+with|go\s+for)",
    r"(?:i'm|i’m|we're|we’re)\s+going\s+with",
)  # fmt: skip
# Conclusion words that commit to a letter closing their line ("Therefore, B.").
CONCLUSION_WORDS = (
    "therefore", "thus", "hence", "so", "consequently", "accordingly", "namely", "ergo",
    "which gives", "that gives", "this gives", "which means", "that means", "this means",
    "which makes it", "that makes it", "this makes it",
    "which points to", "that points to", "this points to", "it all points to", "everything points to",
)  # fmt: skip
# Words between a conclusion word and its letter ("So that's D.", "Thus we get B.").
CONCLUSION_LINKS = ("that's", "that’s", "that is", "this is", "we get", "we have", "i get")
# ... and arrows that conclude the same way ("=> B").
CONCLUSION_ARROWS = ("=>", "⇒", "→", "->")
# Copulas that commit to a label closing the last line ("The vitamin in question is (D).").
CLOSING_COPULAS = ("is", "are", "was", "would be", "=")
# Eliminations that end on the survivor ("rules out A and B, leaving C"; "only D remains").
# (the words before the survivor; the words after it, maybe after "is" or "is the only one/option/choice")
ELIMINATION_BEFORE = ("leaving", "leaving us with", "leaves", "leaves us with", "left with", "elimination")
ELIMINATION_AFTER = ("remains", "left", "survives", "stands out")
# "So we get D as the answer.": a letter taken as the answer, closing its line — the words between the
# letter and "answer", and what may open the clause before the letter (after an optional conclusion word:
# "So, D as the answer."); any other subject ("Many pick C as the answer", "We rule out A as the answer")
# does not commit.
AS_THE_ANSWER = (r"as\s+(?:the|my|our)(?:\s+(?:final|correct|right|best))?\s+",)
AS_THE_ANSWER_LEADS = (
    r"(?:i|we)(?:'ll|’ll|'d|’d|\s+will|\s+would|\s+can)?\s+(?:get|got|have|take|pick|choose|select|go\s+with|end\s+up\s+with|settle\s+on|arrive\s+at|are\s+left\s+with)",
    r"(?:this|that|which|it)\s+(?:gives|leaves)(?:\s+us)?",
)  # fmt: skip

# --------------------------------------------------------------------------------------------------
# Revisions, hedges, conditions, negations
# --------------------------------------------------------------------------------------------------

# Phrases that start reconsidering an answer already given: an answer after them replaces the earlier
# one even when it is written more weakly ("Answer: B ... let me check again ... C").
REVISION_MARKERS = (
    r"wait", r"hmm+", r"actually", r"oops", r"on\s+second\s+thought", r"on\s+reflection",
    r"upon\s+(?:further\s+)?(?:review|reflection)", r"let\s+me\s+(?:re-?check|check|double[\s-]?check|verify|reconsider|re-?read|re-?examine|re-?evaluate|think\s+again)",
    r"check(?:ing)?\s+again", r"double[\s-]?check(?:ing)?", r"re-?check(?:ing)?", r"re-?read(?:ing)?",
    r"hold\s+on", r"hang\s+on",
    r"re-?examin(?:e|ing)", r"re-?evaluat(?:e|ing)", r"reconsider(?:ing)?", r"correction",
    r"i\s+made\s+an?\s+(?:mistake|error)", r"i\s+was\s+wrong", r"that(?:'s|’s|\s+is)\s+(?:wrong|incorrect|not\s+right)",
    r"scratch\s+that", r"i\s+misread",
    r"(?:second|another|closer|fresh)\s+look", r"look(?:ing)?\s+(?:at\s+(?:it|this|that)\s+)?again",
)  # fmt: skip
# After a revision marker, what withdraws the answer given before it when no new answer follows: the same
# letter declared wrong ("Hmm, actually no. ... C can't be right.") or doubted ("I'm no longer sure it's B").
RETRACTIONS_AFTER = (
    r"(?:can(?:not|'t|’t)|could(?:\s+not|n't|n’t))\s+be\s+(?:right|correct|it|the\s+(?:answer|one))",
    r"(?:is|was)(?:\s+not|n't|n’t)\s+(?:right|correct|it|the\s+(?:answer|one))",
    r"(?:is|was)\s+(?:wrong|incorrect)",
)  # fmt: skip
RETRACTIONS_BEFORE = (r"no\s+longer\s+(?:so\s+)?(?:sure|certain|convinced)", r"not\s+so\s+sure")
# Words that make a statement about a letter tentative ("it might be B", "possibly C").
HEDGE_BEFORE = (
    r"might\s+be", r"may\s+be", r"could\s+be", r"could\s+also\s+be", r"possibly", r"perhaps", r"maybe",
    r"probably",
)  # fmt: skip
HEDGE_AFTER = (
    r"(?:is|seems|looks)\s+(?:also\s+)?(?:possible|plausible|tempting|defensible)", r"might", r"could",
)  # fmt: skip
# "C is also valid": said after an answer, it keeps the earlier, different answer too.
ALSO_VALID = (

    r"(?:is|are|would\s+be|seems|works?)\s+(?:also|equally)\s+(?:valid|correct|right|possible|acceptable|plausible|defensible)",
    r"(?:also|equally)\s+(?:valid|correct|works|acceptable)",
    r"(?:are|were)\s+(?:both|all)\s+(?:valid|correct|right|possible|acceptable|plausible|true)",
    r"también\b",
)  # fmt: skip
# Conditions: "if it were A" is not a commitment, "A if the collision is elastic" neither.
CONDITIONAL_BEFORE = ("if", "unless", "otherwise", "suppose", "supposing", "were")
# One of several readings of the question commits to neither: "read one way it's A, read the other way
# it's D" (a verb before "one way" / "the other way"), "on one reading ..., under the other interpretation
# ..." (a noun after "on/under/with one/the other/another/the first/the second").
READING_VERBS = ("read", "interpreted", "taken", "understood")
READING_NOUNS = ("reading", "interpretation")
CONDITIONAL_AFTER = ("if", "only if", "when", "unless", "assuming", "provided")
# Negations before a letter ("not A", "except C") and verdicts after it ("A is wrong") that dismiss it.
NEGATIONS_BEFORE = (
    "not", "never", "isn't", "isn’t", "nor", "except", "excluding", "than", "neither", "rule out",
    "rules out", "ruled out", "eliminate", "eliminates", "eliminated", "exclude", "excludes", "without",
)  # fmt: skip
DISMISSALS_AFTER = (
    r"(?:is|are|seems|looks)\s+(?:wrong|incorrect|false|not\b|unlikely|implausible|ruled\s+out|out|too\b)",
    r"(?:could|might|may)\s+(?:also\s+)?be\b", r"can(?:not|'t|’t)\s+be\b", r"is\s+(?:also\s+)?possible",
    r"(?:do|does|did)(?:\s+not|n't|n’t)\s+(?:fit|work|apply|match|hold)", r"(?:fail|fails|failed)\b",
    r"(?:wrong|incorrect|excluded|eliminated)\b",
    r"(?:can|could|should|must)\s+be\s+(?:ruled\s+out|eliminated|excluded|discarded|rejected|dismissed)",
    r"(?:is|are)\s+(?:a\s+|the\s+)?(?:common\s+|usual\s+)?(?:distractors?|traps?|mistakes?)\b",
    r"(?:is|are)\s+(?:a\s+|the\s+)?(?:most\s+)?(?:common\s+|usual\s+|tempting\s+|popular\s+)?(?:wrong|incorrect)\s+(?:answers?|choices?|options?|picks?)\b",
    r"(?:가|이|는|은)?\s*아(?:니|닙)", r"(?:では|じゃ)な", r"(?:是)?(?:错|錯|不对|不對|不正确|不正確)",
)  # fmt: skip
# Negating copulas of languages that put them last, after the letter and maybe its option text ("doğru cevap
# A) I, III, II değildir": the answer is not A): a letter so followed is dismissed (matched at a word start;
# Latin and Cyrillic ones may carry a suffix: "değildir").
NEGATIONS_AFTER = ("değil", "deyil", "emas", "емес", "نیست", "नहीं")
# Negations before a letter in languages without spaces ("不是A而是B").
NEGATIONS_BEFORE_CJK = ("不是", "并非", "並非")
# Copulas that may follow a letter that closes its sentence ("D입니다.", "Dです。").
CLOSING_COPULAS_AFTER = ("입니다", "です")
# An answer shown as an example of the format ("例如[正确答案]A<eoa>", "e.g. \\boxed{A}", "for example, Answer:
# C"): an anchor, box or answer field right after one of these (on its line, within a few characters) is no
# answer (models that echo their instructions repeat the example).
EXAMPLE_MARKERS = (
    "例如",
    "比如",
    "for example",
    "e.g.",
    "for instance",
    "such as",
    "例えば",
    "예를 들어",
    "z.b.",
)
# Negation right after an anchor ("The answer is not A").
NEGATED_PAYLOAD = ("not", "cannot be")

# The closing line (closing.py): a short last sentence that names one option letter and says nothing
# against it commits to it weakly ("E wins out.", "That narrows it to A.", "Je choisis donc D."), when no
# stronger statement was made. Words that stop that reading (`CLOSING_LINE_VETOES`) — negations in several
# languages, dismissals and verdicts against, a distractor named as such, contrasts, conditions, hedges, the
# announcement of a check (each a regex fragment matched as a whole word, on the lower-cased line):
CLOSING_LINE_NEGATIONS = (
    r"not", r"no", r"never", r"none", r"neither", r"nor", r"\w+n['’]t", r"cannot", r"non", r"nicht",
    r"kein\w*", r"ne", r"pas", r"jamais", r"não", r"nem", r"nie", r"niet", r"nee", r"ikke", r"inte",
    r"không", r"bukan", r"tidak", r"değil", r"не", r"нет", r"ни",
)  # fmt: skip
CLOSING_LINE_DISMISSALS = (
    r"reject\w*", r"eliminat\w*", r"exclud\w*", r"discard\w*", r"dismiss\w*", r"drop(?:s|ped)?",
    r"cross(?:es|ed)?", r"rul(?:e|es|ed)\s+out", r"strike", r"struck", r"wrong", r"incorrect", r"false",
    r"invalid", r"fail\w*", r"slip\w*", r"mistake\w*", r"error\w*", r"trap\w*", r"distractor\w*",
    r"pitfall\w*", r"misconception\w*", r"avoid\w*",
)  # fmt: skip
# What others choose ("Many students pick C.", "People often fall for D."): a remark on a distractor.
CLOSING_LINE_OTHERS = (
    r"many", r"some", r"most", r"others?", r"people", r"students?", r"often", r"usually", r"commonly",
    r"common", r"typically", r"sometimes", r"tend\w*", r"popular", r"confus\w*",
)  # fmt: skip
CLOSING_LINE_VETOES = (
    *CLOSING_LINE_NEGATIONS,
    *CLOSING_LINE_DISMISSALS,
    # contrast, condition, alternatives
    r"but", r"however", r"though", r"although", r"yet", r"whereas", r"while", r"except", r"unless", r"if",
    r"when", r"whether", r"or", r"either", r"both", r"also", r"instead", r"rather", r"than", r"vs", r"versus",
    # hedges
    r"might", r"may", r"maybe", r"could", r"possibly", r"perhaps", r"probably", r"likely", r"unlikely",
    r"plausible", r"possible", r"tempting", r"uncertain", r"doubt\w*", r"leaning",
    # announcing a check of the option rather than choosing it
    r"consider\w*", r"check\w*", r"examin\w*", r"evaluat\w*", r"analy[sz]\w*", r"look(?:s|ing)?",
    r"review\w*", r"discuss\w*", r"start\w*", r"begin\w*", r"next", r"let['’]?s", r"let\s+us",
    r"about", r"regarding", r"then", r"finally", r"moving", r"move", r"stop\w*", r"now",
    # what others choose ("Many students pick C.")
    *CLOSING_LINE_OTHERS,
)  # fmt: skip
# A last line that only remarks on other letters ("(For the record: C and E both fail.)", "B and D: not
# supported.", "A common slip is choosing C.") dismisses them with a negation or a dismissal above and
# holds none of these contrasts (which would make it a correction).
CLOSING_REMARK_CONTRASTS = ("but", "however", "instead", "rather", "though", "although", "yet", "whereas")
# "E wins out.": after a letter that opens the closing line, at most this many words.
CLOSING_LINE_MAX_WORDS_AFTER = 4
# "That narrows it to A.": before a letter that closes the line, at most this many words.
CLOSING_LINE_MAX_WORDS_BEFORE = 8

# Joining two answers: "\\boxed{A} and \\boxed{C}", "B or D", "D as well as A" (a mark, or a word).
COORDINATORS = (",", ";", "/", "&", "+", "和", "或", "及", "and", "or", "as well as", "plus", "alternatively")
# Words right before a first answer that announce a second: "both A and C", "either B or D".
COORDINATION_OPENERS = ("both", "either")

# --------------------------------------------------------------------------------------------------
# Payload fillers, list separators, refusals
# --------------------------------------------------------------------------------------------------

# Words skipped before the letter of a payload ("the correct option is, for sure, la C").
PAYLOAD_FILLER_WORDS = (
    "the", "final", "correct", "best", "right", "answer", "option", "choice", "letter", "alternative",
    "is", "be", "would", "should", "must", "for sure", "definitely", "clearly", "probably", "likely",
    "most likely", "certainly", "simply", "indeed", "either", "both", "therefore", "thus", "so", "hence",
    "here", "la", "le", "el", "die", "der", "das", "ist", "est", "es", "opción", "opcion", "opção",
    "opcao", "alternativa", "letra", "lettre", "buchstabe", "pilihan", "opsi", "вариант", "варианте",
    "then", "obviously", "undoubtedly", "actually", "donc", "alors", "entonces", "pues", "quindi",
    "dunque", "also", "daher", "somit", "portanto", "então", "jadi", "maka", "поэтому", "итак", "number",
    "número", "η", "το", "επιλογή",
)  # fmt: skip
PAYLOAD_FILLER_CJK = ("選択肢", "选项", "選項", "是", "为", "為", "は", "选", "選", "です")
# Separators between the letters of a list ("A/B", "A or B", "A, B, and C", "A y C", "B和D", "D as well as A").
LIST_SEPARATOR_WORDS = (
    "and", "or", "und", "oder", "et", "ou", "y", "o", "e", "и", "или", "as well as", "along with", "together with",
    "plus",
)  # fmt: skip
# An adverb between a joiner and the next letter keeps the list ("D and also A", "A, or maybe C"); so does
# any adverb in -ly but these (which restrict or correct: "A, or actually C").
LIST_JOINER_ADVERBS = ("also", "too", "even", "maybe", "perhaps")
LIST_JOINER_NOT_ADVERBS = ("only", "actually", "really", "finally", "hardly", "barely")
LIST_SEPARATOR_SYMBOLS = ("/", "|", "&", ";", "和", "或", "及", "및", "또는", "と", "و", "أو")
# Refusals (each a regex fragment; Latin-script ones are matched as whole words).
REFUSALS_LATIN = (
    r"i\s+(?:do\s+not|don'?t|don’t|cannot|can'?t|can’t)\s+(?:know|tell|determine|answer|decide|help|be\s+(?:sure|certain))",
    r"i['’]?m\s+(?:not\s+(?:sure|certain)|unsure|uncertain|unable)",
    r"i\s+am\s+(?:not\s+(?:sure|certain)|unsure|uncertain|unable)", r"unsure", r"not\s+sure",
    r"cannot\s+(?:be\s+)?(?:determin\w*|answer\w*|decid\w*|tell)",
    r"can['’]?t\s+(?:be\s+)?(?:determin\w*|answer\w*|decid\w*|tell)",
    r"(?:unable|not\s+able)\s+to\s+(?:determine|answer|decide|choose|say|tell)",
    r"none\s+of\s+(?:the\s+|these\s+)?(?:above|options|choices|answers|these|them|given)",
    r"no\s+(?:correct|valid|right)\s+(?:answer|option|choice)", r"not\s+enough\s+information",
    r"insufficient\s+information", r"unknown", r"no\s+answer", r"don['’]?t\s+know", r"decline",
    r"impossible\s+to\s+(?:say|determine|tell)", r"no\s+lo\s+s[ée]", r"je\s+ne\s+sais\s+pas", r"aucune",
    r"weiß\s+(?:es\s+)?nicht", r"não\s+sei", r"nenhuma", r"tidak\s+tahu",
)  # fmt: skip
REFUSALS_OTHER = (
    "不知道", "无法确定", "無法確定", "以上都不是", "以上皆非", "都不对", "わかりません", "分かりません", "모르겠",
    r"알\s*수\s*없", r"не\s+знаю", r"لا\s+أعرف", "없음",
)  # fmt: skip
# A verdict that none of the options is correct (each a regex fragment, on the lower-cased text): said after
# an answer, it takes the answer back ("Doğru cevap A ... verilen seçeneklerin hiçbiri doğru değil").
NONE_CORRECT = (
    r"none\s+of\s+(?:the\s+|these\s+)?(?:given\s+|listed\s+|provided\s+)?(?:options|choices|answers|alternatives)\s+(?:is|are|seems|appears)\s+(?:to\s+be\s+)?(?:correct|right|valid|true)",
    r"hiçbiri\s+doğru\s+değil", r"ninguna\s+de\s+las\s+(?:opciones|alternativas|respuestas)\s+es\s+correcta",
    r"ни\s+один\s+из\s+(?:вариантов|ответов)\s+не\s+(?:является\s+)?(?:верн|правильн)", r"都不正确",
)  # fmt: skip
# "All of the above": every option at once.
ALL_OF_THE_ABOVE = r"all\s+of\s+(?:the\s+)?(?:above|options|choices|them|these)"

# --------------------------------------------------------------------------------------------------
# Scope: where the answer to the question asked ends
# --------------------------------------------------------------------------------------------------

# Line openings (after markup such as "###" or "---") that start another question or another turn: an
# answer after them answers that question, not the one asked (base models often continue with "Question: ... Answer: (C)").
FOLLOW_UP_MARKERS = (
    r"question(?:\s*\d+)?\s*[:.)]", r"q\s*\d*\s*[:.)]", r"problem(?:\s*\d+)?\s*[:.)]", r"example\s*\d+\s*[:.)]",
    r"human\s*:", r"user\s*:", r"<\|(?:im_start|user|start_header_id)\|>", r"\[inst\]",
    r"the\s+following\s+(?:are|is)\s+(?:a\s+)?multiple[\s-]+choice\s+questions?",
    r"next\s+(?:question|problem|item|exercise)", r"(?:here\s+is\s+)?another\s+(?:question|problem)",
    r"follow[\s-]*up\s+(?:question|problem)",
)  # fmt: skip
# ... and the words for "question" in other languages that open such a line ("Soru:", "Savol:", "请你回答：").
FOLLOW_UP_WORDS = ("soru", "savol", "sual", "сұрақ", "вопрос", "请你回答", "句子", "问题", "問題")
# Labels of sub-questions at line starts ("(a)", "b)", "Part (c)", "(ii)"): letters in lower case or
# Roman numerals, in order; never option letters.
SUB_ITEM_PREFIXES = ("part", "step", "item", "sub-question", "subquestion")
# Numbered labels of the response's own answers to several questions ("Q1: D" / "Q2: A"): lines that
# hold the label and a short answer, numbered from 1 in order, are sub-items, not follow-up questions.
NUMBERED_ITEM_PREFIXES = ("q", "question", "part")
# Indexes written as words in labelled answers ("Part one: C" / "Part two: A"), in counting order.
INDEX_NUMBER_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight")
INDEX_ORDINAL_WORDS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")
INDEX_WORDS = INDEX_NUMBER_WORDS + INDEX_ORDINAL_WORDS
# Words that make a labelled line a verdict on its option ("B. is wrong"), not an echo of the option listing
LISTING_VERDICT_WORDS = (
    "wrong", "right", "correct", "true", "no", "yes", "out", "holds",
)  # fmt: skip
LISTING_VERDICT_MARKS = ("✗", "✓", "✔", "❌")
# Parts named by ordinals inside a paragraph ("In the first situation, ... In the second situation, ..."):
# answers to different parts are several answers.
PART_ORDINALS = ("first", "second")
PART_NOUNS = ("case", "situation", "scenario", "part", "sub-question", "subquestion", "setting")

# --------------------------------------------------------------------------------------------------
# Structured answers
# --------------------------------------------------------------------------------------------------

# JSON keys whose value is the answer ({"answer": "C"}, {"selected_option": "b"}): a key ending in one of
# these words (after "_" or a space), or equal to it.
JSON_ANSWER_KEYS = (
    "answer", "choice", "option", "letter", "selection", "selected", "chosen", "prediction", "label", "pick",
    "final", "response", "result",
)  # fmt: skip

# ... maybe followed by one of these ({"correct_answer_key": "c"}).
JSON_ANSWER_KEY_SUFFIXES = ("key",)

# --------------------------------------------------------------------------------------------------
# Option texts
# --------------------------------------------------------------------------------------------------

# Words ignored when a restatement is compared with an option text.
STOPWORDS = frozenset(
    """a an the of to in on at by for with from and or is are was were be been being it its this that these
    those as which who whom whose than then so such there their they them usually generally typically""".split()
)
# Words about an option (not an answer) right after a leading label: "A: The first option suggests that".
# Phrases that announce a walk through the options: a label line after them starts a discussion of
# each option, not an answer (regex fragments).
WALK_ANNOUNCEMENTS = (
    r"(?:each|every|all)\s+(?:of\s+the\s+)?(?:options?|choices?|answers?|alternatives?|statements?)",
    r"option\s+by\s+option", r"choice\s+by\s+choice", r"one\s+by\s+one", r"go(?:ing)?\s+through",
    r"walk\s+through", r"in\s+turn",
    r"(?:evaluate|check|consider|examine|analy[sz]e|review|go\s+over|look\s+at)\s+(?:the\s+|each\s+|all\s+)?(?:options|choices|alternatives|answer\s+choices)",
)  # fmt: skip
DISCUSSION_WORDS = (
    "option", "statement", "choice", "suggests", "states", "claims", "says", "proposes", "describes",
    "refers", "implies", "means", "asserts", "argues", "this one", "seems", "looks", "appears",
)  # fmt: skip
# Words that end a line that was cut off ("... the most abundant element, but").
DANGLING_WORDS = frozenset(
    """that which the a an and or but because is are was were of to in for with as by on this it be its not
    their so if than when while since whether from at into although though whose whom who where we they he
    she my our your""".split()
)
