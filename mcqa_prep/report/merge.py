"""Merging one chunk's tallies (a part: report/chunked.py) into the report's, in input order, so that the
result is the tally of one pass over the rows.

A part keeps every group uncapped, each in the order of its first row; merging the parts in input order
replays those first appearances, so every capped group (templates, patterns, modes, models, statuses) gets
its own entry exactly when one pass gives it one, and the rest is pooled as one pass pools it. Counters
add; example lists keep their first entries in input order; histograms add bin by bin. Float sums (rewards,
pass rates, expected gold rows) are added per chunk: the chunks depend on the input alone, so the figures are
the same for any number of workers and on any engine.
"""

from __future__ import annotations

from collections import Counter

from .bins import CappedCounter, Examples, Histogram
from .dataset import DatasetTally, PatternTally, TemplateTally
from .rescored import OTHER_MODELS, OTHER_MODES, OTHER_TEMPLATES, Group, RescoredTally, group

OTHER_PATTERNS = "(other patterns)"


def histogram(into: Histogram, part: Histogram) -> None:
    into.counts = [a + b for a, b in zip(into.counts, part.counts, strict=True)]
    into.sums = [a + b for a, b in zip(into.sums, part.sums, strict=True)]
    into.total += part.total
    into.value_sum += part.value_sum
    if part.value_min is not None and (into.value_min is None or part.value_min < into.value_min):
        into.value_min = part.value_min
    if part.value_max is not None and (into.value_max is None or part.value_max > into.value_max):
        into.value_max = part.value_max


def examples(into: Examples, part: Examples) -> None:
    into.count += part.count
    room = into.limit - len(into.items)
    if room > 0:
        into.items.extend(part.items[:room])


def capped(into: CappedCounter, part: CappedCounter) -> None:
    for k, n in part.counts.items():
        into.add(k, n)


def template_of(t: DatasetTally, tid: str) -> TemplateTally:
    """The tally a row of template `tid` was counted in (its own, or the pooled one)."""
    got = t.templates.get(tid)
    return got if got is not None else t.templates[OTHER_TEMPLATES]


def dataset(t: DatasetTally, part: DatasetTally) -> None:
    """A chunk's counts (its findings aside: the fold adds those row by row) into `t`."""
    t.rows += part.rows
    capped(t.splits, part.splits)
    t.option_counts = [a + b for a, b in zip(t.option_counts, part.option_counts, strict=True)]
    t.gold_by_n.update(part.gold_by_n)
    t._expected_folded.update(part._expected_folded)
    t._letter_sets.update(part._letter_sets)
    t._fold_letter_sets()
    for tid, pt in part.templates.items():
        tt = t._template(tid)
        tt.rows += pt.rows
        tt.custom += pt.custom
    capped(t.modes, part.modes)
    t.custom_rows += part.custom_rows
    histogram(t.prompt_chars, part.prompt_chars)
    for model, n in part.profile_models.counts.items():
        key = str(t.profile_models.add(model, n))
        h = t.profiles.get(key)
        if h is None:
            h = t.profiles[key] = Histogram(len(part.profiles[str(model)].counts))
        histogram(h, part.profiles[str(model)])
    for p, pp in part.patterns.items():
        pat: PatternTally | None = t.patterns.get(p)
        if pat is None:
            if len(t.patterns) >= t.caps[1]:
                p = OTHER_PATTERNS
                pat = t.patterns.get(p)
            if pat is None:
                pat = t.patterns[p] = type(pp)()
        assert pat is not None
        pat.rows += pp.rows
        for tid in pp.templates:
            if len(pat.templates) < 3 and tid not in pat.templates:
                pat.templates.append(tid)


def _groups(into: dict[str, Group], part: dict[str, Group], cap: int, other: str) -> None:
    for key, g in part.items():
        to = group(into, key, cap, other)
        to.rows += g.rows
        to.graded += g.graded
        to.reward_sum += g.reward_sum
        to.statuses.update(g.statuses)


def _bounded(into: Counter, part: Counter, cap: int) -> None:
    for k, n in part.items():
        if k in into or len(into) < cap:
            into[k] += n


def rescored(t: RescoredTally, part: RescoredTally) -> None:
    """A chunk's rescored tally into `t`."""
    t.files.update(part.files)
    _bounded(t.statuses, part.statuses, t.caps[2])
    _bounded(t.grader_versions, part.grader_versions, t.caps[3])
    t.tally.merge(part.tally)
    _groups(t.templates, part.templates, t.caps[0], OTHER_TEMPLATES)
    _groups(t.modes, part.modes, t.caps[1], OTHER_MODES)
    for cell, ex in part.agreement.items():
        got = t.agreement.get(cell)
        if got is None:
            got = t.agreement[cell] = Examples(t.examples)
        examples(got, ex)
    t.compare_modes.update(part.compare_modes)
    for tid, m in part.misses.items():
        got_m = t.misses_of(tid)
        got_m.rows += m.rows
        examples(got_m.misses, m.misses)
    histogram(t.response_chars, part.response_chars)
    for model, per in part.prompts.items():
        into = t.prompts.get(model)
        if into is None:
            if len(t.prompts) >= t.caps[4]:
                model = OTHER_MODELS
            into = t.prompts.setdefault(model, {})
        for k, packed in per.items():
            into[k] = into.get(k, 0) + packed
