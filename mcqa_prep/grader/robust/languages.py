"""The words of the `robust` mode in other languages and scripts, as plain tables: answer anchors, the
names of letters. Part of `phrases.py` (which re-exports every table here; the mode reads them as
`phrases.X`), kept apart so that neither file grows past the size rule. The labels of other scripts are the
package's one label table (mcqa_prep/labels.py), read by labels.py.
"""

from __future__ import annotations

from typing import NamedTuple

# --------------------------------------------------------------------------------------------------
# Letters
# --------------------------------------------------------------------------------------------------

# The names of Latin letters written in another script (`উত্তর: "এ"`): a payload that is nothing else.
LETTER_NAMES: dict[str, str] = {
    "এ": "A", "সি": "C", "ডি": "D", "ই": "E",
    "ए": "A", "बी": "B", "सी": "C", "डी": "D", "ई": "E",
}  # fmt: skip
# A number naming an option ("최종 답변: 1", when the prompt numbers its options) may carry a counter word.
NUMBER_LABEL_COUNTERS = ("번",)

# --------------------------------------------------------------------------------------------------
# Answer anchors in other languages
# --------------------------------------------------------------------------------------------------


class Anchor(NamedTuple):
    """One answer word of a language: the word, the qualifiers that may follow it, and what may link it
    to the letter (a colon is always allowed; `link_required` False lets the letter follow directly)."""

    word: str
    after: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    link_required: bool = True
    before_required: tuple[str, ...] = ()  # the word anchors only after one of these ("故选B")
    after_required: bool = False  # the word anchors only with one of `after` ("opción correcta")


ANCHORS_OTHER_LANGUAGES: tuple[Anchor, ...] = (
    Anchor("respuesta", ("correcta", "final"), ("es", "sería")),
    Anchor("resposta", ("correta", "certa", "final"), ("é", "seria")),
    Anchor("alternativa", ("correta", "certa", "correcta", "corretta"), ("é", "es", "è")),
    Anchor("opción", ("correcta", "final"), ("es", "sería"), after_required=True),
    Anchor("opcion", ("correcta", "final"), ("es", "seria"), after_required=True),
    Anchor("opção", ("correta", "certa", "final"), ("é", "seria"), after_required=True),
    Anchor("opzione", ("corretta", "giusta", "esatta"), ("è", "sarebbe"), after_required=True),
    Anchor("risposta", ("corretta", "esatta", "giusta", "finale"), ("è", "sarebbe")),
    Anchor("réponse", ("correcte", "finale", "exacte", "juste"), ("est", "serait")),
    Anchor("reponse", ("correcte", "finale", "exacte", "juste"), ("est", "serait")),
    Anchor("antwort", (), ("ist", "lautet", "wäre")),
    Anchor("antwort", (), (), link_required=False, before_required=("ist die ",)),
    Anchor("antwoord", (), ("is",)),
    Anchor("lösung", (), ("ist", "lautet")),
    Anchor("jawaban", ("yang benar", "yang tepat", "benar", "tepat", "akhir", "betul"), ("adalah", "ialah")),
    Anchor("jawabannya", ("yang benar", "yang tepat", "benar", "tepat"), ("adalah", "ialah"), link_required=False),
    Anchor("jawapannya", ("yang betul", "betul"), ("adalah", "ialah")),
    Anchor("jawapan", ("yang betul", "betul", "akhir"), ("adalah", "ialah")),
    Anchor("cevap", (), ("budur",), link_required=False),
    Anchor("cevabı", (), (), link_required=False),
    Anchor("cavab", (), (), link_required=False),
    Anchor("cavabı", (), (), link_required=False),
    Anchor("javob", (), (), link_required=False),
    Anchor("javobi", (), (), link_required=False),
    Anchor("javobingiz", (), (), link_required=False),
    Anchor("jawap", (), (), link_required=False),
    Anchor("jawab", (), (), link_required=False),
    Anchor("жауап", (), ("—", "–", "-"), link_required=False),
    Anchor("жауабы", (), ("—", "–", "-"), link_required=False),
    Anchor("жавоб", (), (), link_required=False),
    Anchor("җавап", (), (), link_required=False),
    Anchor("джевап", (), (), link_required=False),
    Anchor("jibu", ("sahihi",), ("ni",)),
    Anchor("idahun", (), ()),
    Anchor("ìdáhùn", (), ()),
    Anchor("odpowiedź", (), ("to",)),
    Anchor("odpowiedz", (), ()),
    Anchor("odpověď", (), ()),
    Anchor("svar", (), ("är", "er")),
    Anchor("απάντηση", (), ("είναι",)),
    Anchor("ответ", (), ("это", "—", "–", "-")),
    Anchor("вариант", (), ("—", "–", "-")),
    Anchor("الخيار", ("الصحيح",), ("هو",), after_required=True),
    Anchor("विकल्प", (), ("है", "-"), link_required=False, before_required=("सही ",)),
    Anchor("відповідь", (), ("—", "–", "-")),
    Anchor("yanıt", (), (), link_required=False),
    Anchor("seçenek", (), ()),
    Anchor("option", (), ("est", "serait"), before_required=("bonne ",)),
    Anchor("đáp án", ("đúng",), ("là",)),
    Anchor("đáp án", (), (), link_required=False, before_required=("chọn ",)),
    Anchor("คำตอบ", ("ที่ถูกต้อง",), ("คือ",)),
    Anchor("答案", (), ("是", "为", "為", "应该是", "應該是", "应为", "應為"), link_required=False),
    Anchor("选项", (), ("是", "为")),
    Anchor("选择", (), ("是", "为"), before_required=("最终", "我的", "正确")),
    Anchor("選擇", (), ("是", "為"), before_required=("最終", "我的", "正確")),
    Anchor("選項", (), ("是", "為")),
    Anchor("选", (), (), link_required=False, before_required=("故", "应", "應", "所以", "因此", "我", "正确的", "正確的", "正确", "正確", "本题")),
    Anchor("選", (), (), link_required=False, before_required=("故", "应", "應", "所以", "因此", "我", "正确的", "正確的", "正确", "正確", "本題")),
    Anchor("答え", (), ("は",), link_required=False),
    Anchor("解答", (), ("は",), link_required=False),
    Anchor("正解", (), ("は",), link_required=False),
    Anchor("回答", (), ("は",)),
    Anchor("答", (), ()),
    Anchor("정답", (), ("은", "는"), link_required=False),
    Anchor("답변", (), ("은", "는")),
    Anchor("답", (), ("은",)),
    Anchor("إجابة", ("الصحيحة", "صحيحة", "النهائية", "نهائية"), ("هي",), link_required=False),
    Anchor("اجابة", ("الصحيحة", "صحيحة", "النهائية", "نهائية"), ("هي",), link_required=False),
    Anchor("جواب", ("الصحيح", "صحيح", "النهائي", "نهائي"), ("هو",), link_required=False),
    Anchor("پاسخ", ("صحیح", "درست"), ("است",)),
    Anchor("תשובה", (), ()),
    Anchor("उत्तर", (), ("है", "-"), link_required=False),
    Anchor("উত্তর", (), ("হল", "হলো", "হচ্ছে", "ঃ"), link_required=False),
)  # fmt: skip
# Words before a CJK answer word that make it a final answer ("最终答案").
FINAL_BEFORE_CJK = ("最终", "最終")
