"""Anchored options in every language of the phrase table (convert/anchors.py): a test per language, and
`convert --shuffle` keeping them in place end to end."""

from __future__ import annotations

import json

import pytest
from conftest import read_jsonl, write_jsonl

from mcqa_prep.convert import anchors
from mcqa_prep.convert.anchors import LANGUAGES, UNRESOLVED, is_positional, letter_refs, may_anchor
from mcqa_prep.convert.balance import pinned_positions, scan_pins

# language -> (positional options, ordinary options of that language, letter references -> letters)
CASES = {
    "en": (["All of the above", "None of these.", "Both of the above", "A combination of the above"],
           ["All cells divide", "None of the cells survive the treatment"], {"Both A and B": "AB", "Only C": "C"}),
    "zh": (["以上都对", "以上都不对", "以上说法都正确", "都不是", "全部正确"],
           ["细胞分裂", "上海"], {"A和B": "AB", "只有C": "C", "A、B都对": "AB"}),
    "ja": (["以上のすべて", "上記のいずれでもない", "すべて正しい", "どれでもない"],
           ["細胞分裂", "すべての細胞が分裂する時期"], {"AとB": "AB", "Aのみ": "A", "アとイ": "AB"}),
    "ko": (["위의 모든 것", "위의 어느 것도 아님", "모두 정답", "해당 없음"],
           ["세포 분열", "모든 세포가 분열하는 시기에 나타나는 현상"], {"A와 B": "AB", "A만": "A"}),
    "fr": (["Toutes les réponses ci-dessus", "Aucune des réponses ci-dessus", "Les deux", "Ni l'un ni l'autre"],
           ["Toutes les cellules se divisent pendant la mitose", "La division cellulaire"],
           {"A et B": "AB", "Seulement C": "C", "A et C sont correctes": "AC"}),
    "es": (["Todas las anteriores", "Ninguna de las anteriores", "Ambas", "Todas son correctas"],
           ["Todas las células se dividen durante la mitosis", "La división celular"],
           {"A y B": "AB", "Solo C": "C", "Ni A ni B": "AB"}),
    "de": (["Alle oben genannten", "Keine der oben genannten Antworten", "Beide", "Keine davon"],
           ["Alle Zellen teilen sich während der Mitose", "Die Zellteilung"],
           {"A und B": "AB", "Nur C": "C", "Sowohl A als auch B": "AB"}),
    "pt": (["Todas as anteriores", "Nenhuma das anteriores", "Ambas estão corretas", "Nenhuma delas"],
           ["Todas as células se dividem durante a mitose", "A divisão celular"],
           {"A e B": "AB", "Apenas C": "C", "A e C estão corretas": "AC"}),
    "it": (["Tutte le precedenti", "Nessuna delle precedenti", "Entrambe", "Nessuna delle risposte precedenti"],
           ["Tutte le cellule si dividono durante la mitosi", "La divisione cellulare"],
           {"A e B": "AB", "Solo C": "C", "Né A né B": "AB"}),
    "ru": (["Все вышеперечисленные", "Ни один из вышеперечисленных", "Оба варианта", "Нет правильного ответа"],
           ["Все клетки делятся во время митоза", "Деление клеток"],
           {"A и B": "AB", "Только C": "C", "А и Б": "AB", "Только Г": "D"}),
    "ar": (["جميع ما سبق", "لا شيء مما سبق", "كلاهما", "جميع ما سبق صحيح (A · B · C)"],
           ["انقسام الخلايا", "جميع الخلايا تنقسم أثناء الانقسام المتساوي"],
           {"أ و ب": "AB", "فقط ج": "C", "A و B": "AB"}),
    "hi": (["उपरोक्त सभी", "इनमें से कोई नहीं", "दोनों", "उपर्युक्त में से कोई नहीं"],
           ["कोशिका विभाजन", "सभी कोशिकाएँ समसूत्री विभाजन के दौरान विभाजित होती हैं"],
           {"A और B": "AB", "केवल C": "C", "क और ख": "AB"}),
    "bn": (["উপরের সবগুলো", "উপরের কোনোটিই নয়", "উভয়ই", "কোনোটিই নয়"],
           ["কোষ বিভাজন", "মাইটোসিসের সময় সব কোষ বিভক্ত হয়"],
           {"A এবং B": "AB", "শুধু C": "C", "ক ও খ": "AB"}),
    "sw": (["Yote yaliyo hapo juu", "Hakuna kati ya hizo", "Zote mbili", "Yote ni sahihi"],
           ["Mgawanyiko wa seli", "Seli zote hugawanyika wakati wa mitosisi"],
           {"A na B": "AB", "C tu": "C", "A pekee": "A"}),
    "id": (["Semua jawaban di atas", "Tidak ada jawaban yang benar", "Keduanya", "Semua benar"],
           ["Semua sel membelah selama mitosis", "Pembelahan sel"],
           {"A dan B": "AB", "Hanya C": "C", "A dan C benar": "AC"}),
    "tr": (["Yukarıdakilerin hepsi", "Yukarıdakilerin hiçbiri", "Hepsi", "Her ikisi de"],
           ["Hücre bölünmesi", "Bütün hücreler mitoz sırasında bölünür"],
           {"A ve B": "AB", "Yalnız C": "C", "A ve C doğrudur": "AC"}),
    "vi": (["Tất cả các đáp án trên", "Tất cả các đáp án trên đều đúng", "Không có đáp án nào đúng", "Cả hai"],
           ["Sự phân chia tế bào", "Tất cả tế bào phân chia trong nguyên phân"],
           {"A và B": "AB", "Chỉ C": "C", "Cả A và B": "AB"}),
    "uk": (["Усі вищезазначені", "Жоден з наведених", "Обидва варіанти"], ["Поділ клітин"], {"А і Б": "AB"}),
    "fa": (["همه موارد", "هیچکدام", "هر دو"], ["تقسیم سلولی"], {"A و B": "AB"}),
    "he": (["כל התשובות נכונות", "אף אחת מהתשובות", "שתיהן"], ["חלוקת תאים"], {"A ו B": "AB"}),
    "nl": (["Alle bovenstaande", "Geen van de bovenstaande", "Beide"], ["Celdeling"], {"A en B": "AB"}),
    "pl": (["Wszystkie powyższe", "Żadna z powyższych", "Obie"], ["Podział komórki"], {"A i B": "AB"}),
}  # fmt: skip


def test_every_required_language_has_a_table_and_a_test():
    required = {
        "zh",
        "ja",
        "ko",
        "fr",
        "es",
        "de",
        "pt",
        "it",
        "ru",
        "ar",
        "hi",
        "bn",
        "sw",
        "id",
        "tr",
        "vi",
        "en",
    }
    assert required <= set(LANGUAGES) and set(LANGUAGES) == set(CASES)


@pytest.mark.parametrize("lang", sorted(CASES))
def test_language(lang):
    positional, ordinary, refs = CASES[lang]
    for text in positional:
        assert is_positional(text), (lang, text)
    for text in ordinary:
        assert not is_positional(text), (lang, text)
        assert letter_refs(text, 4) is None, (lang, text)
    for text, letters in refs.items():
        assert letter_refs(text, 4) == list(letters), (lang, text)
    # kept in place with the options they name, in a row of four options
    text, letters = next(iter(refs.items()))
    choices = ["alpha", "beta", "gamma", text]
    assert pinned_positions(choices) == {3, *(ord(L) - 65 for L in letters)}
    assert pinned_positions(["alpha", "beta", "gamma", positional[0]]) == {3}


def test_the_pre_test_never_hides_an_anchor():
    """balance skips rows that anchors.may_anchor rules out: every phrase of the table, and every example
    above, must pass it (with three ordinary options beside it)."""
    texts = [t for p, o, r in CASES.values() for t in (*p, *r)]
    for lang in LANGUAGES.values():
        tail = " tail" if lang.spaced else "的"
        texts += [*lang.exact, *(p.rstrip("*") + ("ые" if p.endswith("*") else tail) for p in lang.prefixes)]
        texts += [k + " A" for k in lang.keywords]
    for text in texts:
        choices = ["plain one", "plain two", text, "plain three"]
        assert may_anchor(choices), text
    assert not may_anchor(["The cell divides", "over the lazy dog", "some option text", "yet another one"])


def _line_keys_found(choices: list[str]) -> bool:
    """The line test may_anchor's single regex replaces, written out line by line: a line, stripped of edge
    characters, whose first word, first two words or first one or two characters are a key."""
    words, chars, _ = anchors._maybe()
    for line in "\n".join(choices).lower().split("\n"):
        line = line.strip(anchors._EDGE)
        ws = line.split(None, 2)
        if ws and (ws[0] in words or (len(ws) > 1 and ws[0] + " " + ws[1] in words)):
            return True
        if ws and (line[:2] in chars or line[:1] in chars):
            return True
    return False


def test_the_pre_test_finds_every_line_the_per_line_reading_finds():
    """may_anchor scans all lines with one regex (a key at a line start past edge characters and any
    whitespace); it must be True wherever the line-by-line reading finds a key: seeded random options built
    of phrase-table words, ordinary words, edge characters and odd whitespace."""
    import random

    from mcqa_prep.convert.anchor_phrases import LANGS

    phrases = [w for lang in LANGS for w in (*lang.exact, *lang.prefixes, *lang.keywords, *lang.conj)]
    filler = ["cell", "gene", "the", "of", "x", "1", "über", "细胞", "세포", "клетка", "خلية"]
    edges = ["", " ", ".", "(", '"', "\u00a0", "\t", "«", "【", "\r", "\u3000", "-"]
    rnd = random.Random(7)
    found = 0
    for _ in range(20_000):
        choices = []
        for _ in range(rnd.randint(1, 5)):
            ws = [rnd.choice(filler) for _ in range(rnd.randint(0, 3))]
            sep = rnd.choice([" ", "  ", "\t", " \u00a0"])
            if rnd.random() < 0.3:  # a phrase, its words apart by the same whitespace
                ws.insert(rnd.randint(0, len(ws)), rnd.choice(phrases).rstrip("*").replace(" ", sep))
            choices.append(rnd.choice(edges) + rnd.choice(edges) + sep.join(ws) + rnd.choice(edges))
        if _line_keys_found(choices):
            found += 1
            assert may_anchor(choices), choices
    assert found > 2_000  # the generator does reach the keys


@pytest.mark.parametrize(
    "text",
    [
        "A and E",  # E is not one of four options
        "А и В",  # Cyrillic order says A and C, the Latin look-alikes say A and B
        "Только В",
        "X and Y",
    ],
)
def test_unknown_references_are_reported_not_guessed(text):
    assert letter_refs(text, 4) == UNRESOLVED
    pins, unresolved = scan_pins(["one", "two", "three", text])
    assert pins == {0, 1, 2, 3} and unresolved == text  # the row keeps its order


def test_roman_numerals_name_statements_not_options():
    assert letter_refs("I only", 4) is None and letter_refs("I and II", 4) is None
    assert scan_pins(["I only", "II only", "I and II", "I, II and III"]) == (frozenset(), None)


def test_convert_shuffle_keeps_multilingual_anchors_in_place(tmp_path, cli):
    rows = []
    anchors = [CASES[lang][0][0] for lang in sorted(CASES)]
    for i, anchor in enumerate(anchors * 4):
        rows.append({"question": f"Q{i}?", "choices": [f"w{i}", f"x{i}", f"y{i}", anchor], "answer": i % 4})
    refs = [next(iter(CASES[lang][2])) for lang in sorted(CASES)]
    for i, ref in enumerate(refs):
        rows.append({"question": f"R{i}?", "choices": ["r1", "r2", "r3", ref], "answer": 3})
    rows.append({"question": "U?", "choices": ["u1", "u2", "u3", "A and E"], "answer": 1})
    src = tmp_path / "m.jsonl"
    write_jsonl(src, rows)
    out = tmp_path / "o.jsonl"
    res = cli("convert", src, "-o", out, "--shuffle", "--seed", "3", "--format", "json", "-q",
              "--map", "question=question", "--map", "choices=choices", "--map", "answer=answer")  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    got = read_jsonl(out)
    by_q = {r["responses_create_params"]["input"][0]["content"].split("\n")[0]: r for r in got}
    moved = 0
    for src_row in rows:
        r = by_q[src_row["question"]]
        texts = [next(iter(o.values())) for o in r["options"]]
        assert texts[3] == src_row["choices"][3], texts  # the anchored option stays at D
        gold_text = src_row["choices"][src_row["answer"]]
        assert texts[ord(r["expected_answer"]) - 65] == gold_text  # the answer follows its text
        moved += texts != src_row["choices"]
    assert moved > len(rows) // 2  # the others are shuffled
    u = doc["shuffle"]["unresolved_references"]
    assert u["rows"] == 1 and u["shown"][0]["option"] == "A and E"
    assert any("kept their option order" in w for w in doc["warnings"])
