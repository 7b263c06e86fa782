"""Every custom pattern runs under the time bound, on both engines and from any thread (grader/bounded.py).

The patterns below must run on Python's `re` (the engines differ on them: POSIX class syntax, fuzzy syntax,
a pattern naming U+0130 on a text with an i), and backtrack catastrophically there: without a bound each
grade takes seconds to minutes. With it, each is `regex_timeout`."""

from __future__ import annotations

import re
import signal
import threading

import pytest

from mcqa_prep.grader import bounded, grade_text
from mcqa_prep.grader.custom_regex import _entry, extract_custom, last_match

OPTIONS = {"A": "x", "B": "y"}
# (pattern, text): catastrophic on re, and re is the engine that must answer
ON_RE = {
    "posix_class": (r"(a+)+[[:alpha:]]", "a" * 40 + "!"),
    "fuzzy_syntax": (r"(a+)+{e<=1}x", "a" * 40 + "!"),
    "dotted_capital_i": ("(a+)+\u0130", "a" * 40 + "!i"),
}


def _grade(pattern: str, text: str, timeout: float = 0.2):
    return grade_text(text, OPTIONS, "A", None, {"output_regex": pattern}, regex_timeout=timeout)


# pytest-timeout's signal method owns SIGALRM during a test; this test checks the bound's own use of it
@pytest.mark.timeout(300, method="thread")
@pytest.mark.parametrize("case", sorted(ON_RE))
def test_a_pattern_re_must_run_is_bounded_on_the_main_thread(case):
    pattern, text = ON_RE[case]
    assert _entry(pattern).engine_for(text)[0] is _entry(pattern).re  # the case tests the re path
    r = _grade(pattern, text)
    assert r.status == "regex_timeout" and r.reward == 0.0
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@pytest.mark.parametrize("case", sorted(ON_RE))
def test_a_pattern_re_must_run_is_bounded_on_another_thread(case):
    pattern, text = ON_RE[case]
    out = []
    t = threading.Thread(target=lambda: out.append(_grade(pattern, text)))
    t.start()
    t.join(60)
    assert not t.is_alive() and out[0].status == "regex_timeout"


def test_a_caller_owning_sigalrm_keeps_its_handler_and_timer():
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 120)
        pattern, text = ON_RE["posix_class"]
        assert _grade(pattern, text).status == "regex_timeout"  # through the helper process
        assert signal.getitimer(signal.ITIMER_REAL)[0] > 60  # the caller's timer still runs
        assert not fired
        # re reads [[:x:]] as the class [[:x] and a "]"
        assert _grade(r"answer[[:x:]]\s*([A-D])", "answer:] B").extracted_answer == "B"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


PARITY = [
    (r"answer[[:x:]]\s*([A-D])", "so answer:] C, then answerx] B"),
    ("cevab\u0131n\u0131z:\\s*([A-D])", "Cevabiniz: D"),
    (r"(\w+)\s*=\s*([A-D])?", "x = "),
    (r"final\s*(?:answer)?\s*[:=]\s*([a-d])", "final answer: b and final: a"),
]


@pytest.mark.parametrize("pattern,text", PARITY)
def test_the_bounded_re_path_answers_as_re_does(pattern, text):
    """The last match, as re.finditer gives it, from the main thread (interval timer) and from another
    thread (helper process)."""
    ref = None
    for ref in re.compile(pattern, re.IGNORECASE).finditer(text):  # noqa: B007
        pass
    groups = re.compile(pattern, re.IGNORECASE).groups
    want = None if ref is None else (ref.span(1 if groups == 1 else 0), ref.span(0))
    if groups <= 1:
        assert last_match(pattern, text, 5.0) == want
    compiled = re.compile(pattern, re.IGNORECASE)
    for group in range(groups + 1):
        want_g = None if ref is None else (ref.span(group), ref.span(0))
        assert bounded.last_match_re(compiled, text, group, 5.0) == want_g
        got: list = []
        t = threading.Thread(
            target=lambda g=group, o=got: o.append(bounded.last_match_re(compiled, text, g, 5.0))
        )
        t.start()
        t.join(60)
        assert got == [want_g]


def test_the_helper_is_started_again_after_a_timeout():
    pattern, text = ON_RE["fuzzy_syntax"]
    compiled = _entry(pattern).re
    for _ in range(2):
        with pytest.raises(TimeoutError):
            bounded._HELPER.run(compiled.pattern, compiled.flags, text, 0, 0.2)
        assert bounded._HELPER.proc is None
    spans = bounded._HELPER.run(r"b+", re.IGNORECASE, "abba", 0, 5.0)
    assert spans == ((1, 3), (1, 3))


def test_one_bound_per_row_over_all_its_patterns(monkeypatch):
    """A list of patterns shares one budget: each pattern gets what the ones before it left."""
    given = []

    def fake(self, text, seconds):
        given.append(seconds)
        return None

    monkeypatch.setattr(type(_entry("x")), "last_match", fake)
    times = iter([100.0, 100.3, 100.6, 100.9])
    monkeypatch.setattr("mcqa_prep.grader.custom_regex.time.monotonic", lambda: next(times))
    r = extract_custom("text", ["p1", "p2", "p3"], OPTIONS, timeout=1.0)
    assert r.status == "no_answer"
    assert given == pytest.approx([0.7, 0.4, 0.1])
