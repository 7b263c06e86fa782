"""Generate the synthetic part of the robust corpus: realistic responses composed from parts, with the
truth known by construction.

    python tests/robust_corpus/generate.py          # rewrites every generated_<part>.jsonl
    python tests/robust_corpus/generate.py --check  # exit 1 when the files are not what this script writes

A response is a reasoning part (0 to ~1,400 characters that discuss the options and mention other
letters the way explanations do) plus an ending of one kind: a committed answer in some wrapper and
language, a draft then a revision, an answer followed by remarks on the other options, an answer
followed by an invented next question, an answer by option text, JSON, a lower-case label, a
commitment without an anchor; or one where a careful reader takes no letter: truncation, several
answers, hedging between letters, a refusal, a letter outside the options, answers to sub-items.

Every vocabulary (topics and options, reasoning sentences, answer wrappers, revision markers,
follow-up questions, refusals, ...) exists twice, in disjoint halves: the `tuned` part is built only
from the first half, the `heldout` part only from the second, with another seed. The grader is
developed against the tuned part; the held-out part measures whether what it learned generalises.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
PARTS = {
    "tuned": (20240611, 800),
    "heldout": (97531, 520),
    "heldout2": (31337, 400),
    "heldout3": (271828, 400),
    "heldout4": (161803, 400),
    "heldout5": (141421, 400),
    "heldout6": (173205, 400),
    "heldout7": (223606, 400),
    "heldout8": (244948, 400),
    "heldout9": (264575, 400),
    "heldout10": (316227, 400),
    "heldout11": (331662, 400),
}


class Topic(NamedTuple):
    name: str
    options: tuple[str, ...]
    why_not: tuple[str, ...]  # one short reason per option (why it might be rejected)


class Vocab(NamedTuple):
    topics: tuple[Topic, ...]
    openers: tuple[str, ...]
    discuss: tuple[str, ...]  # {X} letter, {T} its text, {W} its why-not
    fillers: tuple[str, ...]
    answers: tuple[str, ...]  # {L} letter, {l} lower-case letter, {T} text
    answers_intl: tuple[str, ...]  # {L} letter, {AR} Arabic letter (A-D only)
    revisions: tuple[str, ...]  # a marker and a sentence that reconsiders
    drafts: tuple[str, ...]  # {D} draft letter
    tails: tuple[str, ...]  # {X}, {Y}: other letters, remarks after the answer
    followups: tuple[str, ...]  # a line that starts an invented next question
    several: tuple[str, ...]  # {X}, {Y}, {Z}: different letters given together
    hedged: tuple[str, ...]  # {X}, {Y}
    refusals: tuple[str, ...]
    no_anchor: tuple[str, ...]  # {L}, {X}, {Y}: commitments without an answer noun
    text_answers: tuple[str, ...]  # {T} the option's text (or a variant of it)
    json_answers: tuple[str, ...]  # {L}, {l}
    bare: tuple[str, ...]  # {L}, {l}, {T}
    walks: tuple[str, ...]  # opening of a walk through the options, cut off
    subitems: tuple[str, ...]  # {X}, {Y}


def _topic(name: str, *pairs: tuple[str, str]) -> Topic:
    return Topic(name, tuple(p[0] for p in pairs), tuple(p[1] for p in pairs))


TOPICS_A = (
    _topic("the organelle that synthesises proteins", ("Ribosome", "it reads mRNA"), ("Lysosome", "it only digests waste"),
           ("Golgi apparatus", "it packages proteins rather than making them"), ("Peroxisome", "it breaks down fatty acids")),
    _topic("the capital of Australia", ("Sydney", "it is the largest city but not the capital"), ("Canberra", "it was purpose-built as the seat of government"),
           ("Melbourne", "it was only the temporary capital"), ("Perth", "it is on the wrong coast entirely")),
    _topic("the speed after 2 s of free fall", ("9.8 m/s", "that is the speed after one second"), ("19.6 m/s", "v = g t gives this"),
           ("39.2 m/s", "that doubles the time"), ("4.9 m/s", "that is the distance after one second, not a speed")),
    _topic("the vitamin whose deficiency causes scurvy", ("Vitamin A", "its deficiency affects vision"), ("Vitamin C", "collagen synthesis needs it"),
           ("Vitamin D", "its deficiency causes rickets"), ("Vitamin K", "it is needed for clotting")),
    _topic("the noble gas in the list", ("Nitrogen", "it forms a triple bond"), ("Oxygen", "it is highly reactive"),
           ("Argon", "it has a full outer shell"), ("None of the above", "one of the listed gases does qualify")),
    _topic("the author of Pride and Prejudice", ("Charlotte Bronte", "she wrote Jane Eyre"), ("Jane Austen", "the novel appeared in 1813 under her name"),
           ("George Eliot", "she wrote Middlemarch"), ("Mary Shelley", "she wrote Frankenstein")),
    _topic("the effect of a rise in interest rates", ("Borrowing becomes cheaper", "the opposite happens"), ("Saving becomes more attractive", "returns on deposits rise"),
           ("Inflation accelerates", "tighter policy usually slows it"), ("The currency weakens", "higher yields attract capital instead")),
    _topic("the value of x in 3x + 6 = 0", ("-2", "substituting gives zero"), ("2", "the sign is wrong"), ("0", "that leaves 6 = 0"), ("3", "that gives 15")),
    _topic("the cause of most urinary tract infections", ("Staphylococcus aureus", "it mostly causes skin infections"), ("Escherichia coli", "gut flora reach the urethra"),
           ("Listeria monocytogenes", "it is food-borne and invasive"), ("Candida albicans", "it is a fungus, rarely the cause"), ("Streptococcus pyogenes", "it causes pharyngitis")),
    _topic("the hepatitis virus spread mainly by blood", ("Hepatitis A", "it spreads by the faecal-oral route"), ("Hepatitis E", "it is water-borne"),
           ("Hepatitis C", "it spreads through blood"), ("Hepatitis F", "it is not a recognised virus")),
    _topic("the statement about enzymes that is false", ("Enzymes lower the activation energy of a reaction.", "this is true"),
           ("Enzymes are consumed during the reaction.", "they are regenerated, so this is false"),
           ("Most enzymes are proteins.", "this is true"), ("Enzyme activity depends on temperature.", "this is true")),
    _topic("the planet with the shortest year", ("Venus", "it takes 225 days"), ("Mars", "it takes 687 days"), ("Mercury", "it orbits in 88 days"), ("Earth", "it takes a year, by definition")),
)  # fmt: skip
TOPICS_B = (
    _topic("the gas plants absorb for photosynthesis", ("Oxygen", "plants release it"), ("Carbon dioxide", "it is fixed in the Calvin cycle"),
           ("Methane", "plants do not use it"), ("Helium", "it is inert")),
    _topic("the largest ocean", ("Atlantic Ocean", "it is second"), ("Indian Ocean", "it is third"), ("Pacific Ocean", "it covers a third of the surface"), ("Arctic Ocean", "it is the smallest")),
    _topic("the resistance of a 12 V circuit drawing 3 A", ("4 ohm", "R = V / I"), ("36 ohm", "that multiplies instead of dividing"), ("0.25 ohm", "that inverts the ratio"), ("9 ohm", "that subtracts")),
    _topic("the element with symbol Fe", ("Fluorine", "its symbol is F"), ("Iron", "Fe comes from ferrum"), ("Lead", "its symbol is Pb"), ("Francium", "its symbol is Fr")),
    _topic("the painter of the Night Watch", ("Vermeer", "he painted Girl with a Pearl Earring"), ("Rembrandt", "he painted it in 1642"),
           ("Van Gogh", "he lived two centuries later"), ("Rubens", "he worked in Antwerp"), ("Hals", "he painted portraits in Haarlem")),
    _topic("the blood type that is the universal donor", ("Type A", "it carries A antigens"), ("Type B", "it carries B antigens"), ("Type AB", "it is the universal recipient"), ("Type O negative", "it carries no A, B or RhD antigens")),
    _topic("the probability of two heads in two fair tosses", ("0.25", "one outcome of four"), ("0.5", "that is one head"), ("0.75", "that is at least one head"), ("1.0", "that is certainty")),
    _topic("the bond in table salt", ("Covalent", "no electrons are shared"), ("Ionic", "Na gives an electron to Cl"), ("Metallic", "there is no electron sea"), ("Hydrogen", "there is no hydrogen in NaCl")),
    _topic("the best description of inflation", ("A fall in the general price level", "that is deflation"), ("A rise in the general price level", "that is the definition"),
           ("A rise in unemployment", "that is a different indicator"), ("A fall in interest rates", "that is a policy tool"), ("None of the above", "one of the options is the definition")),
    _topic("the structure that stores genetic information", ("Nucleus", "it holds the chromosomes"), ("Cell wall", "it gives shape"), ("Vacuole", "it stores water"), ("Cytoplasm", "it is the fluid")),
    _topic("the false statement about photosynthesis", ("It produces oxygen.", "this is true"), ("It occurs in chloroplasts.", "this is true"),
           ("It requires light.", "this is true"), ("It releases carbon dioxide.", "it consumes carbon dioxide, so this is false")),
    _topic("the year the Berlin Wall fell", ("1961", "that is when it was built"), ("1989", "it fell in November of that year"), ("1991", "that is when the Soviet Union dissolved"), ("1975", "nothing happened to the wall then")),
)  # fmt: skip

VOCAB = {
    "tuned": Vocab(
        topics=TOPICS_A,
        openers=(
            "Let's think step by step.",
            "We need to identify {Q}.",
            "Let me work through this carefully.",
            "To answer this, recall the relevant facts about {Q}.",
            "Okay, so the question asks for {Q}.",
        ),
        discuss=(
            "Option {X} ({T}) can be ruled out because {W}.",
            "{X} is tempting, but {W}.",
            "Consider {X}: {T}. However, {W}.",
            "- {X}) {T}: {W}.",
            "Looking at {X}, {W}.",
            "If we picked {X}, we would be ignoring that {W}.",
        ),
        fillers=(
            "It helps to check each claim against what we know.",
            "The wording of the question matters here.",
            "A quick sanity check confirms the reasoning.",
            "We should be careful with the units.",
            "This is a common exam trap.",
        ),
        answers=(
            "Answer: {L}",
            "**Answer:** {L}",
            "The answer is ({L}).",
            "Therefore, the correct answer is {L}.",
            "Final answer: \\boxed{{{L}}}",
            "\\boxed{{{L}}}",
            "**Final Answer**\n\n\\boxed{{{L}}}",
            "The correct option is **{L}**.",
            "So the answer is {L}) {T}.",
            "ANSWER: {L}",
            "I'll go with {L}.",
            "Option {L} is correct.",
            "{L} is the correct answer.",
            "My final answer is {L}.",
            "Answer: ({l})",
            "The best choice is {L}.",
            "$\\boxed{{\\text{{{L}}}}}$",
        ),
        answers_intl=(
            "答案：{L}",
            "正确答案是{L}。",
            "정답: {L}",
            "الإجابة: {AR}",
            "Ответ: {L}",
            "Antwort: {L}",
            "Réponse : {L}",
            "Respuesta: {L}",
            "Resposta: {L}",
            "Jawaban: {L}",
            "Đáp án: {L}",
            "उत्तर: {L}",
            "Cevap: {L}",
            "答え：{L}",
        ),
        revisions=(
            "Wait, let me re-check that.",
            "Actually, on second thought, that ignores the key detail.",
            "Let me double-check the second step.",
            "Hmm, I made a mistake above.",
        ),
        drafts=(
            "Answer: {D}",
            "At first glance the answer seems to be {D}.",
            "My first instinct is {D}.",
            "The answer is {D}.",
        ),
        tails=(
            "Why not the others? {X} ignores the main effect, and {Y} overstates it.",
            "Note that {X} would only be right under different assumptions.",
            "({X} and {Y} are common distractors.)",
            "Explanation: {X} is too small and {Y} has the wrong sign.",
        ),
        followups=("Question: {NQ}", "Q: {NQ}", "Human: {NQ}"),
        several=(
            "Both {X} and {Y} are correct.",
            "Answer: {X} and {Y}",
            "\\boxed{{{X}}} and \\boxed{{{Y}}}",
            "I choose {X} and {Y}.",
            "{X}, {Y} and {Z} are all plausible.",
        ),
        hedged=("It might be {X}, or perhaps {Y}.", "It could be {X}, but it could also be {Y}."),
        refusals=(
            "I'm not sure which option is correct.",
            "I cannot determine the answer from the information given.",
            "I don't know.",
            "I'm sorry, but I can't answer this.",
        ),
        no_anchor=(
            "So {Q} is ({L}).",
            "Of the four, the closest option is {L}.",
            "This rules out {X} and {Y}, leaving {L}.",
            "Therefore, {L}.",
            "{L} is the best fit here.",
        ),
        text_answers=("Answer: {T}", "The answer is {T}.", "Final answer: {T}"),
        json_answers=(
            '```json\n{{"answer": "{L}"}}\n```',
            '{{"answer": "{l}"}}',
            '{{"reasoning": "see above", "answer": "{L}"}}',
        ),
        bare=(" {L}", "({L})", "{L}.", "{l}) {T}", "{L}) {T}"),
        walks=(
            "Let's analyze each option.\n\nA) {TA} - this option",
            "Let's go through the choices.\n\nA: The first option suggests that",
        ),
        subitems=("(a) Answer: {X}\n(b) Answer: {Y}", "Part (a): {X}\nPart (b): {Y}"),
    ),
    "heldout": Vocab(
        topics=TOPICS_B,
        openers=(
            "First, let's recall what the question is asking.",
            "Here's my reasoning.",
            "We are asked about {Q}.",
            "Let's break this down.",
            "Alright, thinking it through:",
        ),
        discuss=(
            "{X} doesn't work since {W}.",
            "Choice {X} ({T}) is out: {W}.",
            "What about {X}? Not quite, because {W}.",
            "* **{X}. {T}** - {W}.",
            "Regarding {X}, {W}.",
            "One might argue for {X}, yet {W}.",
        ),
        fillers=(
            "Let me be systematic about this.",
            "There is a subtle point worth noting.",
            "Double-checking the definitions helps.",
            "Many students get this wrong.",
            "The numbers need care.",
        ),
        answers=(
            "The final answer is $\\boxed{{{L}}}$.",
            "Answer - {L}",
            "**Correct answer: {L}**",
            "Thus, the answer is **({L})**.",
            "Hence the right option is {L}.",
            "Final choice: {L}",
            "The answer should be {L}.",
            "I would choose {L}.",
            "{L} is right.",
            "Correct option → {L}",
            "So I pick {L}.",
            "<answer>{L}</answer>",
            "Answer: **{L}) {T}**",
            "The most likely answer is {L}.",
            "\\[\n\\boxed{{\\textbf{{{L}}}}}\n\\]",
            "ANSWER IS {L}",
        ),
        answers_intl=(
            "最终答案：{L}",
            "所以选{L}。",
            "正解は{L}です。",
            "정답은 {L}입니다.",
            "الإجابة الصحيحة هي {AR}",
            "Правильный ответ — {L}.",
            "Die richtige Antwort ist {L}.",
            "La bonne réponse est {L}.",
            "La respuesta correcta es la {L}.",
            "A resposta correta é a {L}.",
            "La risposta corretta è {L}.",
            "Jadi, jawabannya adalah {L}.",
            "Đáp án đúng là {L}.",
            "Doğru cevap: {L}",
        ),
        revisions=(
            "Hmm, re-examining the units, that cannot be right.",
            "On reflection, I misread the question.",
            "Checking again, the first step was wrong.",
            "Oops, scratch that.",
        ),
        drafts=(
            "My initial guess is {D}.",
            "Tentatively: {D}.",
            "Answer: {D}",
            "I first thought it was {D}.",
        ),
        tails=(
            "For completeness: {X} fails on the definition and {Y} on the numbers.",
            "(Choices {X} and {Y} can be excluded because they contradict the premise.)",
            "Remark: {X} is a classic distractor.",
            "Other options: {X} is incomplete; {Y} is irrelevant.",
        ),
        followups=(
            "Problem: {NQ}",
            "Question 2: {NQ}",
            "The following are multiple choice questions (with answers).\n\n{NQ}",
            "User: {NQ}",
            "{NQ}",
        ),
        several=(
            "Answer: {X}/{Y}",
            "The answer could be {X} or {Y}.",
            "Either {X} or {Y} works.",
            "\\boxed{{{X}, {Y}}}",
            "Options {X} and {Y} are both right.",
        ),
        hedged=("Possibly {X}. Possibly {Y}.", "Maybe {X}, maybe {Y}."),
        refusals=(
            "I'm unable to answer this question.",
            "There is not enough information to decide.",
            "I am uncertain and cannot choose.",
            "No answer can be determined here.",
        ),
        no_anchor=(
            "By elimination, {L}.",
            "Only {L} remains.",
            "Hence {L}.",
            "{Q} is therefore ({L}).",
            "That leaves {L}.",
        ),
        text_answers=("The correct answer is {T}.", "**Answer:** {T}", "So the answer is {T}."),
        json_answers=(
            '{{"choice": "{L}", "reason": "as argued"}}',
            "{{'final_answer': '{L}'}}",
            '```\n{{"answer": "{l}"}}\n```',
        ),
        bare=("**{L}**", "{L}\n\nExplanation: see above.", "[{L}]", "{l}. {T}", "({L}) {T}"),
        walks=(
            "Going option by option:\n\n**A.** {TA} - at first this looks",
            "We examine each choice.\n\n(A) The first one claims that",
        ),
        subitems=("(i) {X}\n(ii) {Y}", "Step (a): the answer is {X}.\nStep (b): the answer is {Y}."),
    ),
}

TOPICS_C = (
    _topic("the organ that filters blood", ("Liver", "it detoxifies but does not filter urine"), ("Kidney", "nephrons filter the plasma"),
           ("Spleen", "it recycles red cells"), ("Pancreas", "it makes enzymes and hormones")),
    _topic("the SI unit of force", ("Joule", "that is energy"), ("Watt", "that is power"), ("Newton", "kg m/s^2"), ("Pascal", "that is pressure")),
    _topic("the mean of 2, 4 and 9", ("4", "that is the median"), ("5", "15 / 3"), ("6", "that divides by the wrong count"), ("7", "that is the range")),
    _topic("the composer of the Four Seasons", ("Bach", "he wrote the Brandenburg concertos"), ("Handel", "he wrote Messiah"),
           ("Vivaldi", "he published it in 1725"), ("Haydn", "he wrote the Creation")),
    _topic("the layer of the atmosphere with the ozone layer", ("Troposphere", "weather happens there"), ("Stratosphere", "ozone absorbs UV there"),
           ("Mesosphere", "meteors burn up there"), ("Thermosphere", "auroras occur there"), ("None of these", "one of the layers holds it")),
    _topic("the false claim about mitosis", ("It produces two identical cells.", "this is true"), ("It halves the chromosome number.", "that is meiosis, so this is false"),
           ("It includes anaphase.", "this is true"), ("It occurs in somatic cells.", "this is true")),
)  # fmt: skip
VOCAB["heldout2"] = Vocab(
    topics=TOPICS_C,
    openers=("Reasoning:", "We want {Q}.", "Step 1: understand what is asked, namely {Q}.", "Let me see."),
    discuss=(
        "Eliminate {X}: {W}.",
        "Not {X} ({T}), since {W}.",
        "{X} fails because {W}.",
        "1. {X} - {T}: no, {W}.",
        "Checking {X}: {W}, so it is out.",
    ),
    fillers=(
        "Keep the definitions in mind.",
        "This needs a moment of care.",
        "A classic question.",
        "Units matter.",
    ),
    answers=(
        "**Final answer: {L}**",
        "Thus: {L}",
        "The correct choice is {L}.",
        "My answer is ({L}).",
        "Answer → {L}",
        "So, the answer: **{L}**",
        "The right answer would be {L}.",
        "\\(\\boxed{{{L}}}\\)",
        "Best answer: {L}) {T}",
        "Selected answer: {L}",
        "Correct option: ({L})",
    ),
    answers_intl=(
        "答案为{L}。",
        "故选{L}",
        "정답: ({L})",
        "答え: {L}",
        "الإجابة هي {AR}",
        "Ответ: ({L})",
        "Richtige Antwort: {L}",
        "Réponse correcte : {L}",
        "Respuesta correcta: {L}",
        "Resposta certa: {L}",
        "Jawaban yang tepat: {L}",
    ),
    revisions=("Wait, I need to redo this.", "Hmm, that was too hasty.", "Let me recheck.", "Correction:"),
    drafts=("Preliminary answer: {D}", "Maybe {D}?", "Answer: {D}"),
    tails=(
        "Note: {X} and {Y} are traps.",
        "({X} fails the definition; {Y} fails the numbers.)",
        "Also, {X} is wrong.",
    ),
    followups=("### Question 2\n{NQ}", "Next question: {NQ}", "Q2. {NQ}"),
    several=(
        "{X} and {Y}",
        "Answer: {X} or {Y}",
        "Both {X} and {Y} are right.",
        "\\boxed{{{X}}} \\boxed{{{Y}}} are both valid.",
    ),
    hedged=("Perhaps {X}, perhaps {Y}.", "It may be {X} or it may be {Y}."),
    refusals=("I can't decide between the options.", "Not sure.", "I cannot tell from the question."),
    no_anchor=("It must be {L}.", "So it's {L}.", "{L} is the only one left.", "Which leaves {L}."),
    text_answers=("Answer: {T}", "It is {T}.", "My final answer: {T}"),
    json_answers=('{{"selected": "{L}"}}', '```json\n{{"final_answer": "{l}"}}\n```'),
    bare=("{L}", "Answer {L}", "({l})", "{L}:"),
    walks=("I'll go through the options.\n\n1. A - {TA}, which", "Option A: {TA}. This one seems"),
    subitems=("(a) {X}\n(b) {Y}\n(c) {Z}",),
)
TOPICS_D = (
    _topic("the gas giant with the most moons", ("Saturn", "it has over 140 known moons"), ("Jupiter", "it has fewer confirmed moons"),
           ("Uranus", "it has 28"), ("Neptune", "it has 16")),
    _topic("the monomer of proteins", ("Nucleotide", "that builds nucleic acids"), ("Amino acid", "peptide bonds join them"),
           ("Glucose", "that builds starch"), ("Fatty acid", "that builds lipids")),
    _topic("the area of a 3 by 4 rectangle", ("7", "that is the half-perimeter"), ("12", "3 times 4"), ("14", "that is the perimeter"), ("24", "that doubles the area")),
    _topic("the first Roman emperor", ("Julius Caesar", "he was dictator, not emperor"), ("Augustus", "he took the title in 27 BC"),
           ("Nero", "he came much later"), ("Trajan", "he ruled in the second century")),
    _topic("the device that converts AC to DC", ("Transformer", "it changes voltage only"), ("Rectifier", "diodes let current flow one way"),
           ("Inductor", "it stores energy in a field"), ("Capacitor", "it stores charge"), ("None of these", "one device does exactly this")),
    _topic("the correct claim about diffusion", ("It needs ATP.", "that is active transport"), ("It moves molecules down a concentration gradient.", "this is the definition"),
           ("It only happens in liquids.", "gases diffuse too"), ("It requires a membrane.", "it does not")),
)  # fmt: skip
VOCAB["heldout3"] = Vocab(
    topics=TOPICS_D,
    openers=("Consider the question: {Q}.", "OK.", "Key idea first.", "We need {Q}; let's work it out."),
    discuss=(
        "Rule out {X}; {W}.",
        "{X} ({T}) is wrong because {W}.",
        "As for {X}: {W}.",
        "- **{X}**: {W}",
        "The option {X} does not fit, as {W}.",
    ),
    fillers=("Recall the basics.", "Be careful here.", "Nothing tricky so far.", "Now compare."),
    answers=(
        "Final answer: **{L}**",
        "Answer: {L}.",
        "So my answer is {L}.",
        "=> {L}",
        "Correct answer - {L}",
        "The answer must be ({L}).",
        "\\boxed{{\\mathbf{{{L}}}}}",
        "{L}) {T} is the answer.",
        "Choice: {L}",
        "I'm going with {L}.",
    ),
    answers_intl=(
        "答案应为{L}",
        "所以答案是（{L}）",
        "답은 {L}",
        "回答: {L}",
        "Відповідь: {L}",
        "Ответ: {L}.",
        "Antwort: ({L})",
        "Respuesta final: {L}",
        "Risposta: {L}",
        "Cevap: ({L})",
        "คำตอบ: {L}",
    ),
    revisions=(
        "No wait.",
        "Hmm, let me reconsider.",
        "Actually, let me redo this.",
        "Re-reading the question:",
    ),
    drafts=("First thought: {D}.", "Answer: {D}", "It looks like {D} at first."),
    tails=(
        "({X} is a distractor.)",
        "Options {X} and {Y} were ruled out above.",
        "Why not {X}? Because it is off.",
    ),
    followups=("Question 3: {NQ}", "Q: {NQ}", "Here is another question: {NQ}"),
    several=("Answer: {X}, {Y}", "{X} or {Y}.", "Both {X} and {Y}.", "The answers are {X} and {Y}."),
    hedged=("Could be {X}; might be {Y}.", "Probably {X}, possibly {Y}."),
    refusals=("I don't have enough information.", "Cannot be answered.", "I'm not certain of the answer."),
    no_anchor=("Hence ({L}).", "That leaves option {L}.", "{Q} is therefore {L}.", "{L} fits best."),
    text_answers=("Final answer: {T}", "Answer: {T}.", "The answer is: {T}"),
    json_answers=('{{"answer": "{L}", "explanation": "see above"}}', '{{"option": "{l}"}}'),
    bare=("{L}.", "**({L})**", "Option {L}", "{l}"),
    walks=("Checking each option:\n\n- A. {TA}: this", "(A) {TA} - first, note that"),
    subitems=("a) {X}\nb) {Y}", "Part 1 (a): {X}\nPart 1 (b): {Y}"),
)
TOPICS_E = (
    _topic("the closest star to Earth", ("Proxima Centauri", "it is the nearest after the Sun"), ("The Sun", "it is a star at 1 AU"),
           ("Sirius", "it is 8.6 light years away"), ("Vega", "it is 25 light years away")),
    _topic("the bond angle of water", ("90 degrees", "that ignores lone pairs"), ("104.5 degrees", "lone pairs squeeze it"),
           ("109.5 degrees", "that is methane"), ("120 degrees", "that is trigonal planar")),
    _topic("the median of 3, 8, 1, 9, 5", ("3", "that is the second value"), ("5", "sorted, it is the middle"), ("8", "that is the fourth"), ("5.2", "that is the mean")),
    _topic("the treaty that ended World War I", ("Treaty of Paris", "that ended other wars"), ("Treaty of Versailles", "signed in 1919"),
           ("Treaty of Utrecht", "that was 1713"), ("Treaty of Rome", "that founded the EEC"), ("None", "one treaty did end it")),
    _topic("the organelle of aerobic respiration", ("Ribosome", "it makes proteins"), ("Mitochondrion", "the Krebs cycle runs there"),
           ("Nucleus", "it holds DNA"), ("Vacuole", "it stores water")),
    _topic("the statement about inertia that is wrong", ("Mass measures inertia.", "this is right"), ("Inertia needs motion.", "objects at rest have it too, so this is wrong"),
           ("Heavier objects have more inertia.", "this is right"), ("Newton's first law describes inertia.", "this is right")),
)  # fmt: skip
VOCAB["heldout4"] = Vocab(
    topics=TOPICS_E,
    openers=("Let's reason it out.", "The question: {Q}.", "Quick analysis:", "First principles."),
    discuss=(
        "{X} can't be right: {W}.",
        "What about {X} ({T})? No - {W}.",
        "Discard {X}, because {W}.",
        "+ {X}: {W}",
        "{X} is tempting; however {W}.",
    ),
    fillers=(
        "Let me double-check the setup.",
        "Good.",
        "This is straightforward.",
        "Careful with the wording.",
    ),
    answers=(
        "Final response: {L}",
        "My pick: {L}",
        "The correct one is ({L}).",
        "Answer = {L}",
        "**{L}** is my final answer.",
        "I select {L}.",
        "Best option: {L}",
        "Therefore {L} is correct.",
        "The solution is {L}.",
        "Answer: [{L}]",
        "So the answer should be option {L}.",
    ),
    answers_intl=(
        "最终选择：{L}",
        "正确选项：{L}",
        "정답은 ({L})",
        "答えは（{L}）",
        "الجواب: {AR}",
        "Ответ: вариант {L}",
        "Lösung: {L}",
        "La réponse est ({L}).",
        "La respuesta es {L}.",
        "Resposta: ({L})",
        "Jawaban akhir: {L}",
    ),
    revisions=("Hold on.", "Wait, that's not right.", "Let me double check that.", "On reflection:"),
    drafts=("Initial answer: {D}", "I'd first say {D}.", "Tentative answer: {D}"),
    tails=(
        "Side note: {X} is a common mistake.",
        "({X} and {Y} do not fit.)",
        "Others: {X} wrong, {Y} wrong.",
    ),
    followups=("Question 4: {NQ}", "Q3: {NQ}", "User: {NQ}"),
    several=("Answer: {X} & {Y}", "{X}, {Y}", "I'd accept {X} or {Y}.", "Both options {X} and {Y} work."),
    hedged=("Maybe {X}? Or {Y}?", "{X} seems possible, and so does {Y}."),
    refusals=("I can't determine this.", "Unclear - I don't know.", "There's no way to tell."),
    no_anchor=("So {L}.", "Hence option {L}.", "{L} remains.", "{Q} is ({L})."),
    text_answers=("Answer: {T}", "Final answer - {T}", "The answer is {T}."),
    json_answers=('{{"final": "{L}"}}', '{{"answer_choice": "{L}"}}'),
    bare=("{L}", "({L})", "{L}.", "Option {L}."),
    walks=("Reviewing the options:\n\nA) {TA} -", "Option A ({TA}) would mean that"),
    subitems=("(i) {X}\n(ii) {Y}", "(a) {X}; (b) {Y}"),
)
TOPICS_F = (
    _topic("the hardest natural mineral", ("Quartz", "it scores 7 on the Mohs scale"), ("Diamond", "it scores 10"),
           ("Topaz", "it scores 8"), ("Corundum", "it scores 9")),
    _topic("the author of Pride and Prejudice", ("Charlotte Bronte", "she wrote Jane Eyre"), ("Jane Austen", "it appeared in 1813"),
           ("George Eliot", "she wrote Middlemarch"), ("Mary Shelley", "she wrote Frankenstein")),
    _topic("the value of 15% of 80", ("10", "that is 12.5%"), ("12", "0.15 times 80"), ("15", "that confuses the rate with the result"), ("20", "that is 25%")),
    _topic("the hormone that lowers blood sugar", ("Glucagon", "it raises blood sugar"), ("Insulin", "it moves glucose into cells"),
           ("Adrenaline", "it raises blood sugar too"), ("Cortisol", "it raises it over time"), ("None of the above", "one hormone does exactly this")),
    _topic("the longest river in South America", ("Orinoco", "it is about 2,140 km"), ("Parana", "it is about 4,880 km"),
           ("Amazon", "it is about 6,400 km"), ("Magdalena", "it is about 1,500 km")),
    _topic("the incorrect statement about sound", ("Sound needs a medium.", "this is correct"), ("Sound travels faster in water than in air.", "this is correct"),
           ("Sound travels in a vacuum.", "it cannot, so this is the incorrect one"), ("Pitch depends on frequency.", "this is correct")),
)  # fmt: skip
VOCAB["heldout5"] = Vocab(
    topics=TOPICS_F,
    openers=(
        "Let me think about {Q}.",
        "Alright.",
        "Here is my reasoning.",
        "To find {Q}, compare the options.",
    ),
    discuss=(
        "{X} is out since {W}.",
        "Looking at {X} ({T}): {W}.",
        "{X} doesn't work - {W}.",
        "* {X} -> {W}",
        "I can drop {X}: {W}.",
    ),
    fillers=("That narrows it down.", "Fine so far.", "One more check.", "Simple enough."),
    answers=(
        "Final Answer: {L}",
        "**The answer is {L}.**",
        "Answer - ({L})",
        "The best answer is {L}.",
        "So I choose {L}.",
        "Hence, option ({L}) is correct.",
        "$\\boxed{{({L})}}$",
        "Correct answer: **{L}. {T}**",
        "My answer: {L}",
        "It's {L}.",
        "Conclusion: {L}",
    ),
    answers_intl=(
        "答案是：{L}",
        "因此选{L}。",
        "답: {L}",
        "正解：{L}",
        "إذن الإجابة {AR}",
        "Ответ — {L}.",
        "Die Antwort ist {L}.",
        "Réponse : ({L})",
        "Respuesta: {L}.",
        "A resposta é {L}.",
        "Chọn đáp án {L}.",
    ),
    revisions=("Wait.", "Hmm, no.", "Let me reconsider that.", "Actually, I misread the question."),
    drafts=("My first guess is {D}.", "Provisional answer: ({D})", "Draft answer: {D}"),
    tails=(
        "{X} is the usual trap.",
        "(Not {X}, not {Y}.)",
        "Note that {X} and {Y} were eliminated earlier.",
    ),
    followups=("Question 5: {NQ}", "Next: {NQ}", "Problem 2. {NQ}"),
    several=(
        "{X} and {Y} are both correct.",
        "Correct answers: {X} and {Y}",
        "Answers: {X}, {Y}",
        "Either {X} or {Y}.",
    ),
    hedged=("I lean towards {X}, though {Y} is possible.", "Possibly {X}, maybe {Y}."),
    refusals=(
        "I'm unable to answer this.",
        "None of the options seem right to me, so I won't guess.",
        "I don't know the answer.",
    ),
    no_anchor=("{L} it is.", "Thus, {L}.", "Only {L} survives.", "{Q} is {L}."),
    text_answers=("So the answer: {T}", "The right option is {T}.", "Final: {T}"),
    json_answers=('{{"choice": "{L}"}}', '{{"Answer": "{l}"}}'),
    bare=("{L})", "__{L}__", "{l}.", "Option: {L}"),
    walks=("Let's go option by option.\n\nA. {TA}: this", "First, A ({TA}). Here we"),
    subitems=("1) {X}\n2) {Y}", "(a) {X}\n(b) {Y}"),
)
TOPICS_G = (
    _topic("the chemical symbol for sodium", ("So", "that is not a symbol"), ("Na", "from natrium"),
           ("Sd", "that does not exist"), ("S", "that is sulfur")),
    _topic("the painter of the Mona Lisa", ("Michelangelo", "he painted the Sistine ceiling"), ("Raphael", "he painted the School of Athens"),
           ("Leonardo da Vinci", "he painted it around 1503"), ("Titian", "he worked in Venice")),
    _topic("the speed of a car covering 150 km in 2 hours", ("50 km/h", "that divides by 3"), ("75 km/h", "150 divided by 2"),
           ("100 km/h", "that ignores the time"), ("300 km/h", "that multiplies instead")),
    _topic("the blood vessel that carries blood away from the heart", ("Vein", "veins return blood"), ("Capillary", "exchange happens there"),
           ("Artery", "arteries carry blood away"), ("Venule", "it drains capillaries"), ("None of these", "one vessel type does this")),
    _topic("the largest desert in the world", ("Sahara", "it is the largest hot desert only"), ("Gobi", "it is much smaller"),
           ("Antarctic Desert", "it covers about 14 million square km"), ("Arabian Desert", "it is about 2.3 million square km")),
    _topic("the true statement about enzymes", ("They are consumed in reactions.", "they are not consumed"), ("They raise activation energy.", "they lower it"),
           ("They are specific to their substrates.", "the active site fits the substrate"), ("They work at any temperature.", "they denature when hot")),
)  # fmt: skip
VOCAB["heldout6"] = Vocab(
    topics=TOPICS_G,
    openers=(
        "Okay, so the question is about {Q}.",
        "Thinking it through:",
        "Let me work this out.",
        "Goal: identify {Q}.",
    ),
    discuss=(
        "{X} won't do, since {W}.",
        "Regarding {X} ({T}), {W}.",
        "{X} is incorrect as {W}.",
        "> {X}: {W}",
        "Scratch {X}; {W}.",
    ),
    fillers=("Let's keep going.", "So far so good.", "That is the key fact.", "Important point."),
    answers=(
        "**Answer**: {L}",
        "The final answer is ({L}).",
        "Therefore, the answer is **{L}**.",
        "My final answer would be {L}.",
        "Correct option: {L} - {T}",
        "The right choice is {L}.",
        "$\\boxed{{\\textbf{{{L}}}}}$",
        "Final choice: **{L}**",
        "Final: ({L})",
        "I'd go with {L}.",
        "The most accurate answer is {L}.",
    ),
    answers_intl=(
        "正确答案应该是{L}。",
        "故答案为{L}。",
        "따라서 정답은 {L}이다.",
        "よって答えは{L}です。",
        "الإجابة الصحيحة: {AR}",
        "Правильный ответ: {L}.",
        "Die korrekte Antwort lautet {L}.",
        "Bonne réponse : {L}",
        "La opción correcta es la {L}.",
        "A alternativa correta é a {L}.",
        "Jadi jawabannya adalah {L}.",
    ),
    revisions=("Wait a moment.", "Hmm, actually no.", "Let me double-check.", "Oops, I made an error."),
    drafts=("At first glance: {D}.", "Answer: ({D})", "I was going to say {D}."),
    tails=(
        "The remaining options ({X}, {Y}) are incorrect.",
        "Why not {X}? See above.",
        "{X} would be a typical wrong pick.",
    ),
    followups=("Question #2: {NQ}", "Now another one: {NQ}", "### Q3\n{NQ}"),
    several=(
        "{X} and {Y} both work.",
        "Final answer: {X} and {Y}",
        "Either {X} or {Y} is acceptable.",
        "{X}; {Y}",
    ),
    hedged=("Most likely {X}, but {Y} is also plausible.", "I'm torn between {X} and {Y}."),
    refusals=(
        "I cannot determine the answer.",
        "This question has no correct option.",
        "Sorry, I'm not sure.",
    ),
    no_anchor=("That makes it {L}.", "Which gives {L}.", "{L} is the one.", "The answer to this is {L}."),
    text_answers=("Answer: **{T}**", "Final answer: {T}.", "The answer would be {T}."),
    json_answers=(
        '{{"answer_letter": "{L}"}}',
        '```json\n{{"selected_answer": "{L}", "reason": "see above"}}\n```',
    ),
    bare=("({L}).", "*{L}*", "{L}!", "{l})"),
    walks=("Let me evaluate every option.\n\nA) {TA} -", "Starting with A: {TA}, which"),
    subitems=("a. {X}\nb. {Y}", "(1) {X} (2) {Y}"),
)
TOPICS_H = (
    _topic("the planet closest to the Sun", ("Venus", "it is second"), ("Mercury", "it orbits at 0.39 AU"),
           ("Earth", "it is third"), ("Mars", "it is fourth")),
    _topic("the unit of electrical resistance", ("Volt", "that measures potential"), ("Ampere", "that measures current"),
           ("Ohm", "named after Georg Ohm"), ("Farad", "that measures capacitance")),
    _topic("the perimeter of a square with side 5", ("10", "that uses two sides"), ("20", "four sides of 5"),
           ("25", "that is the area"), ("15", "that uses three sides")),
    _topic("the language with the most native speakers", ("English", "it has fewer native speakers"), ("Spanish", "it is second"),
           ("Mandarin Chinese", "it has over 900 million"), ("Hindi", "it is third or fourth"), ("None of them", "one of them leads")),
    _topic("the element with atomic number 1", ("Helium", "that is 2"), ("Hydrogen", "it has one proton"),
           ("Lithium", "that is 3"), ("Oxygen", "that is 8")),
    _topic("the false statement about DNA", ("It is a double helix.", "that is true"), ("It contains thymine.", "that is true"),
           ("It contains uracil.", "uracil is in RNA, so this one is false"), ("It carries genetic information.", "that is true")),
)  # fmt: skip
VOCAB["heldout7"] = Vocab(
    topics=TOPICS_H,
    openers=("Step by step.", "The question asks for {Q}.", "Let me recall the facts.", "Sure! We need {Q}."),
    discuss=(
        "{X} is not it: {W}.",
        "Checking option {X} ({T}) - {W}.",
        "We can exclude {X} because {W}.",
        "- ({X}) {W}",
        "{X}? No, {W}.",
    ),
    fillers=("That is well established.", "No tricks here.", "Moving on.", "Now the remaining options."),
    answers=(
        "Answer: **({L})**",
        "So, the correct answer is: {L}",
        "The answer: {L}.",
        "Therefore, I choose {L}.",
        "The right answer is option {L}.",
        "Final answer: {L}) {T}",
        "\\[\\boxed{{\\text{{({L})}}}}\\]",
        "**Final Answer**\n{L}",
        "Correct: {L}",
        "My answer is option {L}.",
        "That means the answer is {L}.",
    ),
    answers_intl=(
        "所以正确答案为{L}。",
        "答案选{L}",
        "정답은 {L}번입니다.",
        "答えは {L} です。",
        "الجواب الصحيح هو {AR}",
        "Ответ: {L})",
        "Also ist die Antwort {L}.",
        "Réponse finale : {L}",
        "Respuesta final: ({L})",
        "Resposta correta: {L}",
        "Jawabannya: {L}",
    ),
    revisions=("Hmm, wait.", "Let me re-check.", "Actually, scratch that.", "On second thought,"),
    drafts=("My initial guess: {D}", "Answer: **{D}**", "I think it's {D}."),
    tails=(
        "{X} and {Y} can be ruled out as shown.",
        "(Option {X} is a distractor.)",
        "Others are wrong: {X} and {Y}.",
    ),
    followups=("Question 2) {NQ}", "Another question: {NQ}", "Problem 3: {NQ}"),
    several=(
        "{X} and {Y} are both right.",
        "Answer: ({X}) and ({Y})",
        "{X} or {Y}, depending on interpretation.",
        "$\\boxed{{{X}}}$ and $\\boxed{{{Y}}}$",
    ),
    hedged=("It's probably {X}, but it could also be {Y}.", "Not sure: {X} or maybe {Y}."),
    refusals=(
        "I do not know.",
        "I'm not able to determine the answer.",
        "The question can't be answered with the given options.",
    ),
    no_anchor=("Which means {L}.", "So, it's ({L}).", "Clearly {L}.", "That leaves us with {L}."),
    text_answers=("Answer: {T}!", "Final answer: **{T}**", "The answer is simply {T}."),
    json_answers=('{{"answer": "({L})"}}', '{{"result": "{l}"}}'),
    bare=("Option ({L})", "**{L}.**", "( {L} )", "{L}) "),
    walks=("Going through each option:\n\nA. {TA} —", "A) {TA}: This option"),
    subitems=("(a) {X}, (b) {Y}", "i) {X}\nii) {Y}"),
)
TOPICS_I = (
    _topic("the longest bone in the human body", ("Humerus", "it is in the upper arm and shorter"), ("Tibia", "it is only the second longest"),
           ("Femur", "it runs from the hip to the knee"), ("Fibula", "it is thin and shorter")),
    _topic("the author of One Hundred Years of Solitude", ("Jorge Luis Borges", "he wrote short fictions, not novels"), ("Gabriel Garcia Marquez", "he published it in 1967"),
           ("Pablo Neruda", "he was a poet"), ("Isabel Allende", "she wrote The House of the Spirits")),
    _topic("the value of 2 to the power 10", ("512", "that is 2 to the 9"), ("1000", "that is 10 cubed"),
           ("1024", "ten doublings of 1 give it"), ("2048", "that is 2 to the 11")),
    _topic("the currency of Japan", ("Won", "it is used in Korea"), ("Yuan", "it is used in China"), ("Yen", "the Bank of Japan issues it"),
           ("Ringgit", "it is used in Malaysia"), ("Baht", "it is used in Thailand")),
    _topic("the process by which water vapour turns into liquid", ("Evaporation", "that goes the other way"), ("Condensation", "cooling vapour forms droplets"),
           ("Sublimation", "that skips the liquid phase"), ("Melting", "that turns a solid into a liquid")),
    _topic("the false statement about the Moon", ("It orbits the Earth.", "that is true"), ("It gives off no light of its own.", "that is true"),
           ("It is larger than Mercury.", "Mercury is larger, so this one is false"), ("It drives the ocean tides.", "that is true")),
)  # fmt: skip
VOCAB["heldout8"] = Vocab(
    topics=TOPICS_I,
    openers=(
        "Let's figure out {Q}.",
        "Reasoning step by step:",
        "The task: find {Q}.",
        "Right, let me think.",
    ),
    discuss=(
        "{X} ({T}) is off the table: {W}.",
        "Not {X} - {W}.",
        "{X} falls short because {W}.",
        "~ {X}: {W}",
        "Dismiss {X}: {W}.",
    ),
    fillers=("Next point.", "That checks out.", "Worth noting.", "Onwards."),
    answers=(
        "Final verdict: {L}",
        "The answer is therefore {L}.",
        "**Final answer:** ({L})",
        "Answer ⇒ {L}",
        "I'm confident the answer is {L}.",
        "Correct response: {L}",
        "$\\boxed{{\\mathrm{{{L}}}}}$",
        "**Option {L}** is the correct one.",
        "Answer: option {L} ({T})",
        "The choice that fits is {L}.",
        "So we get {L} as the answer.",
    ),
    answers_intl=(
        "答案：选{L}",
        "综上，答案是{L}。",
        "그러므로 답은 {L}.",
        "したがって、正解は{L}。",
        "الإجابة النهائية: {AR}",
        "Итак, ответ: {L}",
        "Die Lösung ist {L}.",
        "Donc la réponse est {L}.",
        "Por lo tanto, la respuesta es {L}.",
        "Portanto, a resposta é {L}.",
        "Quindi la risposta è {L}.",
        "Odpowiedź: {L}",
        "Dolayısıyla cevap {L}.",
    ),
    revisions=("Hmm, hold on a second.", "No, that's wrong.", "Let me look at that again.", "Second look:"),
    drafts=("Gut feeling: {D}.", "Answer (draft): {D}", "Initially I'd pick {D}."),
    tails=(
        "The other choices ({X}, {Y}) don't hold up.",
        "{X} is the most common wrong answer.",
        "(Neither {X} nor {Y} fits.)",
    ),
    followups=("Question 6: {NQ}", "Follow-up question: {NQ}", "--- Next problem ---\n{NQ}"),
    several=(
        "Both {X} and {Y} are valid answers.",
        "Answer: {X}, {Y} (both)",
        "I'd say {X} as well as {Y}.",
        "{X} + {Y}",
    ),
    hedged=(
        "Leaning {X}, but {Y} is not out of the question.",
        "Somewhere between {X} and {Y}; hard to say.",
    ),
    refusals=(
        "I can't give a definite answer to this.",
        "None of the choices can be justified.",
        "I have no idea, honestly.",
    ),
    no_anchor=("So that's {L}.", "Which points to {L}.", "{L} stands out.", "That settles it: {L}."),
    text_answers=("Answer: *{T}*", "The final answer is {T}.", "It has to be {T}."),
    json_answers=('{{"final_answer_letter": "{L}"}}', '```json\n{{"pick": "{l}"}}\n```'),
    bare=("-> {L}", "{L} ✓", "`{L}`", "{l}: {T}"),
    walks=("Walking through the options:\n\nA) {TA} could", "Option A, {TA}: to evaluate this"),
    subitems=("Q1: {X}\nQ2: {Y}", "(a) -> {X}; (b) -> {Y}"),
)
TOPICS_J = (
    _topic("the gland that secretes melatonin", ("Pineal gland", "it releases the hormone in darkness"), ("Thyroid gland", "it makes thyroxine instead"),
           ("Adrenal gland", "it produces adrenaline and cortisol"), ("Pituitary gland", "it steers the other glands")),
    _topic("the number of teeth in a full adult set", ("20 teeth", "that is a child's set"), ("28 teeth", "that leaves out the wisdom teeth"),
           ("32 teeth", "eight in each quadrant, wisdom teeth included"), ("34 teeth", "that adds two that do not exist")),
    _topic("the composer of The Magic Flute", ("Beethoven", "his only opera was Fidelio"), ("Mozart", "it premiered in Vienna in 1791"),
           ("Wagner", "he wrote the Ring cycle"), ("Verdi", "he wrote Aida"), ("Puccini", "he wrote Tosca")),
    _topic("the SI base unit of amount of substance", ("Kilogram", "it measures mass"), ("Mole", "it counts 6.022 x 10^23 entities"),
           ("Candela", "it measures luminous intensity"), ("Kelvin", "it measures temperature")),
    _topic("the country that gave the Statue of Liberty to the United States", ("England", "relations were cool at the time"), ("France", "its people funded the gift dedicated in 1886"),
           ("Spain", "it had no part in the project"), ("Italy", "it was not involved"), ("None of these countries", "one of the listed countries did give it")),
    _topic("the incorrect statement about the human heart", ("It has four chambers.", "that is accurate"), ("The left ventricle has the thickest wall.", "that is accurate"),
           ("The right atrium pumps blood to the lungs.", "the right ventricle does that, so this is the incorrect one"), ("Its valves prevent backflow.", "that is accurate")),
)  # fmt: skip
VOCAB["heldout9"] = Vocab(
    topics=TOPICS_J,
    openers=(
        "Let's unpack {Q}.",
        "Thinking aloud here.",
        "What we need: {Q}.",
        "Plan: compare each option against the facts.",
    ),
    discuss=(
        "{X} ({T}) gets crossed out, since {W}.",
        "Option {X} is a no: {W}.",
        "{X} looks plausible at first, but {W}.",
        "- {X} — {W}.",
        "Reject {X}; {W}.",
    ),
    fillers=("Fair enough.", "Keep that in mind.", "Let's continue.", "That part is settled."),
    answers=(
        "Final pick: {L}",
        "The answer, then, is {L}.",
        "**Verdict:** {L}",
        "I'd settle on {L}.",
        "Correct letter: {L}",
        "$$\\boxed{{\\textsf{{{L}}}}}$$",
        "The option that works is {L} ({T}).",
        "Outcome: **{L}**",
        "{L} is what I'd answer.",
        "Locking in option ({l}).",
        "All told, {L}.",
        "Putting it together, the right letter is {L}: {T}.",
    ),
    answers_intl=(
        "选项{L}正确。",
        "本题答案为{L}。",
        "그래서 {L}가 정답입니다.",
        "答えは{L}になります。",
        "الخيار الصحيح هو {AR}",
        "Верный вариант: {L}",
        "Somit lautet die Antwort {L}.",
        "Je choisis donc {L}.",
        "Así que me quedo con la {L}.",
        "Logo, marco a {L}.",
        "Pertanto scelgo la {L}.",
        "Het antwoord is {L}.",
        "Więc odpowiedź to {L}.",
        "Vậy chọn {L}.",
        "इसलिए सही उत्तर {L} है।",
    ),
    revisions=(
        "Wait — that doesn't add up.",
        "Let me rethink this.",
        "Scratch that, I was too quick.",
        "Hmm, looking again:",
    ),
    drafts=("Quick guess: {D}.", "Provisionally {D}.", "First pass: {D}."),
    tails=(
        "(For the record: {X} and {Y} both fail.)",
        "A common slip is choosing {X}.",
        "{X} and {Y}: not supported.",
    ),
    followups=("Practice question: {NQ}", "Bonus question: {NQ}", "**Exercise 7.** {NQ}"),
    several=(
        "{X} and {Y} are equally correct.",
        "Answer: {X} plus {Y}",
        "I'd mark both {X} and {Y}.",
        "Valid picks: {X}, {Y}, {Z}",
    ),
    hedged=(
        "Could go either way between {X} and {Y}.",
        "{X}, unless it's {Y} — I can't tell.",
    ),
    refusals=(
        "I'd rather not guess on this one.",
        "The options don't let me decide.",
        "I can't answer this with any confidence.",
    ),
    no_anchor=(
        "Everything points to {L}.",
        "That narrows it to {L}.",
        "Left standing: {L}.",
        "{L} wins out.",
    ),
    text_answers=("Best match: {T}.", "{T}, definitely.", "I'd say {T}."),
    json_answers=('{{"chosen": "{L}"}}', '```json\n{{"letter": "{l}", "why": "see reasoning"}}\n```'),
    bare=("{L} — {T}", "[{l}]", "**{L})**", "⟶ {L}"),
    walks=("Taking the options in order:\n\n(A) {TA}: at first sight", "Start with A, {TA}. It"),
    subitems=("Item 1 → {X}\nItem 2 → {Y}", "1. {X}  2. {Y}"),
)
TOPICS_K = (
    _topic("the instrument that measures air pressure", ("Hygrometer", "it measures humidity"), ("Barometer", "Torricelli's mercury column reads air pressure"),
           ("Anemometer", "it measures wind speed"), ("Seismograph", "it records ground motion")),
    _topic("the author of Crime and Punishment", ("Leo Tolstoy", "he wrote War and Peace"), ("Anton Chekhov", "he wrote plays and short stories"),
           ("Ivan Turgenev", "he wrote Fathers and Sons"), ("Fyodor Dostoevsky", "he published it in 1866"), ("Nikolai Gogol", "he wrote Dead Souls")),
    _topic("the sum of the whole numbers from 1 to 10", ("45", "that stops at 9"), ("50", "that is ten fives"),
           ("55", "ten times eleven over two"), ("100", "that is ten tens")),
    _topic("the largest organ of the human body", ("Lungs", "together they weigh little more than a kilogram"), ("Brain", "it weighs about 1.4 kg"),
           ("Skin", "it covers close to two square metres"), ("Small intestine", "it is long but light"), ("None of the listed organs", "one of them is the largest")),
    _topic("the capital of Canada", ("Toronto", "it is the biggest city, not the capital"), ("Ottawa", "Queen Victoria chose it in 1857"),
           ("Montreal", "it lost the role after the 1849 riots"), ("Vancouver", "it is on the Pacific coast, far from the seat of government")),
    _topic("the wrong statement about bar magnets", ("Like poles repel each other.", "that is right"), ("Every magnet has a north and a south pole.", "that is right"),
           ("Cutting a magnet in half gives a lone north pole.", "each half gets both poles again, so this is the wrong one"), ("Iron filings line up along the field.", "that is right")),
)  # fmt: skip
VOCAB["heldout10"] = Vocab(
    topics=TOPICS_K,
    openers=(
        "Let me work out {Q} from scratch.",
        "Breaking it down:",
        "Need to determine {Q}.",
        "Okay, let's see what we actually know.",
    ),
    discuss=(
        "{X} ({T}) misses the mark — {W}.",
        "Strike {X}: {W}.",
        "{X} sounds reasonable, except {W}.",
        "- {X} is ruled out ({W}).",
        "Option {X} drops out because {W}.",
    ),
    fillers=("Noted.", "Good, on to the next one.", "That much is clear.", "Now for the rest."),
    answers=(
        "Final selection: {L}",
        "Hence the answer is {L}.",
        "**Answer — {L}**",
        "I'll commit to {L}.",
        "The letter to pick is {L}.",
        "$\\boxed{{\\mathsf{{{L}}}}}$",
        "The correct choice here: {L} ({T}).",
        "Result: *{L}*",
        "{L} gets my vote.",
        "Going with option ({l}).",
        "In short: {L}.",
        "Overall, the best letter is {L} — {T}.",
    ),
    answers_intl=(
        "正确的选项是{L}。",
        "答案选择{L}。",
        "정답은 {L}번이에요.",
        "正しい選択肢は{L}です。",
        "الاختيار الصحيح: {AR}",
        "Ответ — вариант {L}.",
        "Richtig ist also {L}.",
        "La réponse correcte est donc {L}.",
        "Entonces la respuesta correcta es {L}.",
        "Então a resposta certa é {L}.",
        "Dunque la risposta giusta è {L}.",
        "Dus het juiste antwoord is {L}.",
        "Prawidłowa odpowiedź: {L}",
        "Đáp án chính xác là {L}.",
        "अतः उत्तर {L} है।",
        "Bu yüzden doğru seçenek {L}.",
        "ดังนั้นคำตอบคือ {L}",
    ),
    revisions=(
        "Hmm, let me verify that.",
        "Wait, I think I slipped.",
        "No — reconsidering.",
        "Going over it once more:",
    ),
    drafts=("Tentative pick: {D}.", "My hunch is {D}.", "Leaning towards {D} for now."),
    tails=(
        "Why the rest fail: {X} and {Y} contradict the facts.",
        "People often fall for {X}.",
        "Neither {X} nor {Y} survives scrutiny.",
    ),
    followups=("Quiz item 4: {NQ}", "Now try this: {NQ}", "Test yourself: {NQ}"),
    several=(
        "{X} and {Y} are both defensible answers.",
        "Answer: {X} together with {Y}",
        "I'd pick {X} and also {Y}.",
        "Correct ones: {X}, {Y}, {Z}",
    ),
    hedged=(
        "Torn between {X} and {Y}; can't decide.",
        "Perhaps {X}... or is it {Y}? Not certain.",
    ),
    refusals=(
        "I'm not comfortable picking one here.",
        "None of these answers look right, so I'll pass.",
        "Honestly, I can't work this out.",
    ),
    no_anchor=(
        "Which brings us to {L}.",
        "{L} is what's left.",
        "And so, {L}.",
        "Only {L} holds up.",
    ),
    text_answers=("Correct pick: {T}.", "So: {T}.", "That would be {T}."),
    json_answers=('{{"response": "{L}"}}', '```json\n{{"best_option": "{l}", "confidence": 0.9}}\n```'),
    bare=("Ans: {L}", "{L} (final)", "{L}, {T}", "- {L}"),
    walks=("Let me check each choice in turn.\n\nA. {TA} seems", "Option A is {TA}; to judge it we"),
    subitems=("Sub-question 1: {X}\nSub-question 2: {Y}", "Q-a: {X} | Q-b: {Y}"),
)
TOPICS_L = (
    _topic("the painter of Guernica", ("Salvador Dalí", "his best-known canvas is The Persistence of Memory"), ("Pablo Picasso", "he painted it in 1937 after the bombing of the Basque town"),
           ("Joan Miró", "his work is abstract and playful"), ("Francisco Goya", "he died more than a century before 1937")),
    _topic("the metal used in most household electrical wiring", ("Copper", "it conducts well and is cheap enough to run through walls"), ("Tungsten", "it is used for lamp filaments"),
           ("Zinc", "it is used to galvanise steel"), ("Platinum", "it is far too expensive"), ("Chromium", "it is mostly used for plating")),
    _topic("the number of sides of a dodecagon", ("10 sides", "that is a decagon"), ("11 sides", "that is a hendecagon"),
           ("12 sides", "dodeca- means twelve"), ("20 sides", "that is an icosagon")),
    _topic("the poet who wrote The Raven", ("Walt Whitman", "he wrote Leaves of Grass"), ("Edgar Allan Poe", "it appeared in 1845 with its refrain 'Nevermore'"),
           ("Emily Dickinson", "her poems were mostly published after her death"), ("Robert Frost", "he was born in 1874, after the poem appeared"), ("None of these poets", "one of the listed poets did write it")),
    _topic("the currency of the United Kingdom", ("Euro", "Britain never adopted it"), ("Pound sterling", "it has been in use for over a thousand years"),
           ("Swiss franc", "it belongs to Switzerland"), ("Danish krone", "it is used in Denmark")),
    _topic("the false statement about volcanoes", ("Lava is magma that has reached the surface.", "that is true"), ("Most volcanoes lie along plate boundaries.", "that is true"),
           ("Volcanic ash is made of burnt wood.", "ash is pulverised rock and glass, so this is the false one"), ("Some volcanoes form over hot spots.", "that is true, Hawaii is one")),
)  # fmt: skip
VOCAB["heldout11"] = Vocab(
    topics=TOPICS_L,
    openers=(
        "First, what exactly is being asked: {Q}.",
        "Let me reason through it.",
        "The task is to identify {Q}.",
        "Alright, recalling the relevant facts.",
    ),
    discuss=(
        "{X} ({T}) can be set aside: {W}.",
        "{X} doesn't fit, given that {W}.",
        "It's tempting to say {X}, yet {W}.",
        "- {X} fails here; {W}.",
        "As for {X}, {W}, so it's out.",
    ),
    fillers=("Right.", "Consistent with the facts.", "On to the next candidate.", "Keep going."),
    answers=(
        "Settled answer: {L}",
        "Accordingly, the answer is {L}.",
        "**Selected option: {L}**",
        "I'm going to answer {L}.",
        "The letter I choose is {L}.",
        "\\[\\boxed{{\\texttt{{{L}}}}}\\]",
        "The option that holds is {L} ({T}).",
        "Response letter: {L}",
        "{L} is my answer.",
        "Marking option ({l}).",
        "To conclude: {L}.",
        "Taken together, the answer must be {L} — {T}.",
    ),
    answers_intl=(
        "最终答案是{L}。",
        "故本题选{L}。",
        "최종 답은 {L}입니다.",
        "以上より、正答は{L}。",
        "فالجواب هو {AR}",
        "Итак, правильный ответ {L}.",
        "Meine Antwort lautet {L}.",
        "Ma réponse finale est {L}.",
        "Mi respuesta final es la {L}.",
        "A resposta final é {L}.",
        "La mia risposta è {L}.",
        "Mijn antwoord is {L}.",
        "Odpowiedź brzmi {L}.",
        "Câu trả lời là {L}.",
        "मेरा उत्तर {L} है।",
        "Cevabım {L}.",
        "คำตอบที่ถูกต้องคือข้อ {L}",
        "Maka pilihan yang tepat adalah {L}.",
    ),
    revisions=(
        "Hold on, that can't be right.",
        "Actually, let me re-examine that.",
        "Hmm, I misread something.",
        "Let me retrace that step.",
    ),
    drafts=("Initial thought: {D}.", "Gut reaction: {D}.", "I'd have said {D} at first."),
    tails=(
        "The distractors: {X} and {Y} are both mistaken.",
        "Students frequently pick {X} here.",
        "Options {X} and {Y} don't hold.",
    ),
    followups=("Another one for you: {NQ}", "Problem 9 — {NQ}", "Question 12: {NQ}"),
    several=(
        "{X} and {Y} both work here.",
        "Answer: {X} as well as {Y}",
        "I'd choose {X} and {Y}.",
        "Right answers: {X}, {Y}, {Z}",
    ),
    hedged=(
        "It's {X} or maybe {Y}; I genuinely can't choose.",
        "I'm split between {X} and {Y}.",
    ),
    refusals=(
        "I'll have to skip this one.",
        "I don't have enough to go on to pick an option.",
        "This one is beyond me, sorry.",
    ),
    no_anchor=(
        "Which makes it {L}.",
        "So we end at {L}.",
        "Leaving {L} as the only survivor.",
        "{L} stands.",
    ),
    text_answers=("The right pick is {T}.", "That has to be {T}.", "Without doubt: {T}."),
    json_answers=(
        '{{"selected_letter": "{L}"}}',
        '```json\n{{"pick": "{l}", "reason": "explained above"}}\n```',
    ),
    bare=("{L} ◀ committed", "{l} · {T}", "Letter = {L}", ">> {L}"),
    walks=("Going option by option:\n\nA — {TA}. This", "First up, A ({TA}), which would"),
    subitems=("Part one: {X}\nPart two: {Y}", "Subpart 1 = {X}; subpart 2 = {Y}"),
)
NEXT_QUESTIONS = {
    "tuned": (
        ("Which planet is known as the Red Planet?", ("Venus", "Mars", "Jupiter", "Saturn")),
        ("What is the boiling point of water at sea level?", ("90 °C", "100 °C", "110 °C", "120 °C")),
    ),
    "heldout": (
        ("Which metal is liquid at room temperature?", ("Mercury", "Sodium", "Tin", "Zinc")),
        ("How many sides does a hexagon have?", ("Five", "Six", "Seven", "Eight")),
    ),
    "heldout2": (
        ("Which gas makes up most of the air?", ("Oxygen", "Nitrogen", "Argon", "Carbon dioxide")),
        ("What is 7 x 8?", ("54", "56", "58", "64")),
    ),
    "heldout3": (
        ("Which organ pumps blood?", ("Lung", "Heart", "Liver", "Kidney")),
        ("What is the chemical symbol of gold?", ("Ag", "Au", "Gd", "Go")),
    ),
    "heldout4": (
        ("Which planet has rings?", ("Mars", "Saturn", "Venus", "Mercury")),
        ("What is 12 / 4?", ("2", "3", "4", "6")),
    ),
    "heldout5": (
        ("Which animal is a mammal?", ("Shark", "Dolphin", "Trout", "Frog")),
        ("What is the square root of 49?", ("6", "7", "8", "9")),
    ),
    "heldout6": (
        ("Which continent is Kenya in?", ("Asia", "Africa", "Europe", "Oceania")),
        ("What is 9 squared?", ("18", "72", "81", "99")),
    ),
    "heldout7": (
        ("Which ocean is the largest?", ("Atlantic", "Indian", "Pacific", "Arctic")),
        ("How many minutes are in an hour?", ("30", "60", "90", "100")),
    ),
    "heldout8": (
        ("Which planet is the hottest?", ("Mercury", "Venus", "Mars", "Jupiter")),
        ("What is 6 x 7?", ("36", "42", "48", "54")),
    ),
    "heldout9": (
        ("Which bird cannot fly?", ("Sparrow", "Penguin", "Eagle", "Pigeon")),
        ("Which month has the fewest days?", ("January", "February", "April", "June")),
    ),
    "heldout10": (
        ("Which instrument has 88 keys?", ("Violin", "Piano", "Flute", "Harp")),
        ("How many legs does a spider have?", ("Six", "Eight", "Ten", "Twelve")),
    ),
    "heldout11": (
        ("Which shape has exactly three sides?", ("Square", "Triangle", "Pentagon", "Circle")),
        ("What colour do blue and yellow make when mixed?", ("Green", "Purple", "Orange", "Brown")),
    ),
}
ARABIC = {"A": "أ", "B": "ب", "C": "ج", "D": "د"}
LETTERS = "ABCDEFGHIJ"

# What kinds of cases to make, with their weights.
KINDS = (
    ("final", 26), ("final_intl", 8), ("draft_revised", 7), ("tail", 7), ("option_text", 5), ("json", 4),
    ("bare", 4), ("no_anchor", 5), ("followup", 5), ("truncated", 5), ("walk", 3), ("several", 6),
    ("hedged", 3), ("refusal", 4), ("out_of_range", 3), ("subitems", 2), ("revised_bare", 3),
)  # fmt: skip


def _reasoning(rng: random.Random, v: Vocab, topic: Topic, letters: str, gold: str, size: str) -> str:
    q = topic.name
    parts = [rng.choice(v.openers).format(Q=q)]
    target = {"none": 0, "short": 150, "medium": 600, "long": 1300}[size]
    if size == "none":
        return ""
    others = [c for c in letters if c != gold]
    rng.shuffle(others)
    while len(" ".join(parts)) < target:
        if others and rng.random() < 0.7:
            x = others.pop()
            i = letters.index(x)
            parts.append(rng.choice(v.discuss).format(X=x, T=topic.options[i], W=topic.why_not[i]))
        else:
            parts.append(rng.choice(v.fillers))
        if not others and rng.random() < 0.3:
            break
    sep = "\n" if any(p.startswith(("-", "*")) for p in parts) else " "
    return sep.join(parts)


def _with(reasoning: str, ending: str) -> str:
    return ending if not reasoning else reasoning + "\n\n" + ending


def _case(rng: random.Random, part: str, kind: str) -> dict[str, Any]:
    v = VOCAB[part]
    topic = rng.choice(v.topics)
    letters = LETTERS[: len(topic.options)]
    options = dict(zip(letters, topic.options, strict=True))
    gold = rng.choice(letters)
    x, y, z = (
        rng.sample([c for c in letters if c != gold], 3)
        if len(letters) > 3
        else (*[c for c in letters if c != gold], gold)
    )
    size = rng.choice(("none", "short", "medium", "medium", "long", "long"))
    reasoning = _reasoning(rng, v, topic, letters, gold, size)
    t = options[gold]
    want: str | None = gold
    fmt = {
        "L": gold,
        "l": gold.lower(),
        "T": t,
        "X": x,
        "Y": y,
        "Z": z,
        "Q": topic.name,
        "AR": ARABIC.get(gold, gold),
    }
    if kind == "final":
        text = _with(reasoning, rng.choice(v.answers).format(**fmt))
    elif kind == "final_intl":
        text = _with(reasoning, rng.choice(v.answers_intl).format(**fmt))
    elif kind == "draft_revised":
        draft = rng.choice(v.drafts).format(D=x)
        final = rng.choice(v.answers).format(**fmt)
        text = _with(
            reasoning,
            draft
            + "\n\n"
            + rng.choice(v.revisions)
            + " "
            + rng.choice(v.discuss).format(X=x, T=options[x], W=topic.why_not[letters.index(x)])
            + "\n\n"
            + final,
        )
    elif kind == "revised_bare":
        draft = rng.choice(v.drafts).format(D=x)
        text = _with(
            reasoning,
            draft
            + "\n\n"
            + rng.choice(v.revisions)
            + " "
            + topic.why_not[letters.index(gold)].capitalize()
            + ".\n\n"
            + gold,
        )
    elif kind == "tail":
        text = _with(
            reasoning, rng.choice(v.answers).format(**fmt) + "\n\n" + rng.choice(v.tails).format(X=x, Y=y)
        )
    elif kind == "option_text":
        text = _with(reasoning, rng.choice(v.text_answers).format(T=t))
    elif kind == "json":
        text = _with(reasoning if rng.random() < 0.4 else "", rng.choice(v.json_answers).format(**fmt))
    elif kind == "bare":
        text = rng.choice(v.bare).format(**fmt)
    elif kind == "no_anchor":
        line = rng.choice(v.no_anchor).format(**fmt)
        text = _with(reasoning, line[0].upper() + line[1:])
    elif kind == "followup":
        nq, nopts = rng.choice(NEXT_QUESTIONS[part])
        listing = "\n".join(f"{c}. {o}" for c, o in zip("ABCD", nopts, strict=True))
        marker = rng.choice(v.followups).format(NQ=nq)
        first = rng.choice((gold, rng.choice(v.answers).format(**fmt)))
        text = (
            first
            + "\n\n"
            + marker
            + "\n"
            + listing
            + "\nAnswer: "
            + rng.choice([c for c in "ABCD" if c != gold])
        )
    elif kind == "truncated":
        full = reasoning or _reasoning(rng, v, topic, letters, gold, "long")
        cut = rng.randint(len(full) // 3, max(len(full) // 3 + 1, len(full) - 20))
        text, want = full[:cut].rstrip(), None
    elif kind == "walk":
        text, want = rng.choice(v.walks).format(TA=options["A"]), None
    elif kind == "several":
        text, want = _with(reasoning, rng.choice(v.several).format(**fmt)), None
    elif kind == "hedged":
        text, want = _with(reasoning, rng.choice(v.hedged).format(**fmt)), None
    elif kind == "refusal":
        text, want = _with(reasoning if rng.random() < 0.5 else "", rng.choice(v.refusals)), None
    elif kind == "out_of_range":
        out = LETTERS[len(letters) + rng.randint(0, 2)] if len(letters) < 8 else "K"
        template = rng.choice([a for a in v.answers if "{T}" not in a])  # (a text would name an option)
        text, want = _with(reasoning, template.format(**{**fmt, "L": out, "l": out.lower()})), None
    elif kind == "subitems":
        text, want = rng.choice(v.subitems).format(**fmt), None
    else:
        raise ValueError(kind)
    return {"text": text, "options": options, "want": want, "kind": kind, "style": size}


def generate(part: str) -> list[dict[str, Any]]:
    seed, count = PARTS[part]
    rng = random.Random(seed)
    kinds = [k for k, w in KINDS for _ in range(w)]
    out = []
    for i in range(count):
        kind = rng.choice(kinds)
        case = _case(rng, part, kind)
        out.append({"id": f"gen-{part}-{i:04d}", **case, "note": ""})
    return out


def _serialise(cases: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases)


def main(argv: list[str]) -> int:
    stale = []
    for part in PARTS:
        path = HERE / f"generated_{part}.jsonl"
        data = _serialise(generate(part))
        if "--check" in argv:
            if not path.exists() or path.read_text(encoding="utf-8") != data:
                stale.append(path.name)
        else:
            path.write_text(data, encoding="utf-8")
    if stale:
        print("stale: " + ", ".join(stale) + " (run python tests/robust_corpus/generate.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
