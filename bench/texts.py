"""Realistic multilingual reasoning for the benchmarks: what multilingual models write before their answer.

Sentences in Chinese, Japanese, Korean, Arabic, Hebrew, Russian, Ukrainian, Hindi, Bengali, Thai, Greek, Turkish,
Vietnamese, Spanish, French and German, mixed with English ones and with lines that discuss options by letter,
some with LaTeX, full-width punctuation and an emoji now and then (which makes CPython store the text 4 bytes per
character). Deterministic for a given random.Random.
"""

from __future__ import annotations

import random

SENTENCES = {
    "zh": [
        "首先，我们需要理解题目中描述的反应机理。",
        "根据热力学第二定律，孤立系统的熵不会减少。",
        "选项中提到的酶活性与温度密切相关，但并非线性关系。",
        "因此，我们可以排除与实验数据相矛盾的选项。",
        "让我再仔细检查一下计算过程，确保没有遗漏。",
    ],
    "ja": [
        "まず、問題文の条件を整理してみましょう。",
        "この反応は発熱反応なので、温度を上げると平衡は左に移動します。",
        "選択肢の説明は部分的には正しいですが、重要な点を見落としています。",
    ],
    "ko": [
        "먼저 문제에서 주어진 조건을 정리해 보겠습니다.",
        "이 현상은 굴절률의 차이 때문에 발생합니다.",
        "따라서 나머지 선택지는 실험 결과와 맞지 않습니다.",
    ],
    "ar": [
        "أولاً، يجب أن نفهم الآلية الموصوفة في السؤال.",
        "وفقاً للقانون الثاني للديناميكا الحرارية، لا تتناقص الإنتروبيا في نظام معزول.",
        "هذا الخيار يخلط بين السبب والنتيجة، لذلك فهو غير صحيح.",
        "دعونا نتحقق من الحسابات مرة أخرى قبل الإجابة.",
    ],
    "he": ["ראשית, נבחן את הנתונים המופיעים בשאלה.", "האפשרות הזו אינה מתיישבת עם תוצאות הניסוי."],
    "ru": [
        "Сначала разберёмся, о каком процессе идёт речь в условии задачи.",
        "Согласно уравнению Нернста, потенциал электрода зависит от концентрации ионов.",
        "Этот вариант ответа противоречит экспериментальным данным.",
        "Проверим ещё раз вычисления, чтобы не допустить ошибки.",
    ],
    "uk": ["Спершу з'ясуємо, що саме вимагає умова задачі.", "Цей варіант не враховує граничних умов."],
    "hi": [
        "सबसे पहले, हमें प्रश्न में दी गई प्रक्रिया को समझना होगा।",
        "ऊष्मागतिकी के दूसरे नियम के अनुसार, एक पृथक तंत्र की एन्ट्रॉपी कम नहीं होती।",
        "यह विकल्प कारण और प्रभाव को भ्रमित करता है, इसलिए यह सही नहीं है।",
        "आइए उत्तर देने से पहले गणना को फिर से जाँच लें।",
    ],
    "bn": ["প্রথমে প্রশ্নে দেওয়া শর্তগুলো বিশ্লেষণ করা যাক।", "এই বিকল্পটি পরীক্ষার ফলাফলের সাথে মেলে না।"],
    "th": ["ก่อนอื่น เราต้องเข้าใจกลไกที่อธิบายไว้ในโจทย์", "ตัวเลือกนี้ขัดแย้งกับข้อมูลการทดลอง"],
    "el": [
        "Αρχικά, ας εξετάσουμε τα δεδομένα της ερώτησης.",
        "Αυτή η επιλογή συγχέει την αιτία με το αποτέλεσμα.",
    ],
    "tr": ["Öncelikle sorudaki koşulları inceleyelim.", "Bu seçenek deney sonuçlarıyla çelişiyor."],
    "vi": [
        "Trước hết, chúng ta cần hiểu cơ chế được mô tả trong câu hỏi.",
        "Phương án này mâu thuẫn với dữ liệu.",
    ],
    "es": [
        "Primero, analicemos las condiciones del enunciado.",
        "Esta opción confunde la causa con el efecto, así que no es correcta.",
    ],
    "fr": [
        "Tout d'abord, examinons les données de l'énoncé.",
        "Cette réponse ne tient pas compte des conditions aux limites.",
    ],
    "de": [
        "Zunächst betrachten wir die Bedingungen der Aufgabe.",
        "Diese Option verwechselt Ursache und Wirkung.",
    ],
    "en": [
        "The standard reduction potential is directly related to the Gibbs free energy change.",
        "In most textbook treatments, the Michaelis constant is introduced before the turnover number.",
        "A common misconception is that the enthalpy alone determines spontaneity.",
        "If we consider the limiting case, the first term dominates and the second becomes negligible.",
        "Let me double-check the units: $\\Delta G = -nFE$ gives joules per mole.",
    ],
}
OPTION_LINES = [
    "选项 {L}（{text}）是错误的，因为它忽略了边界条件。",
    "الخيار {L}: {text} — غير صحيح.",
    "Вариант {L}) {text}: правдоподобно, но неверно.",
    "विकल्प {L} ({text}) गलत है।",
    "Option {L} ({text}) is incorrect because it confuses the cause with the effect.",
    "- {L}: {text} → ❌",
    "**{L}.** {text}：不正确。",
]
LANGS = list(SENTENCES)


def multilingual_prose(rng: random.Random, options: list[dict[str, str]], chars: int) -> str:
    """About `chars` characters of mixed-language reasoning that discusses some options by letter."""
    lead = rng.choice(LANGS)
    parts: list[str] = []
    size = 0
    while size < chars:
        r = rng.random()
        if r < 0.3:
            ((letter, text),) = rng.choice(options).items()
            s = rng.choice(OPTION_LINES).format(L=letter, text=text[:40])
        elif r < 0.7:
            s = rng.choice(SENTENCES[lead])
        else:
            s = rng.choice(SENTENCES[rng.choice(LANGS)])
        if rng.random() < 0.02:
            s += " 🤔"
        parts.append(s)
        size += len(s) + 1
    return (" " if rng.random() < 0.5 else "\n").join(parts)
