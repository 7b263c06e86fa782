"""The dataset part of a report: one pass over the rows feeds the validator and a few bounded tallies.

`DatasetTally.add(rec)` checks the row with `validate.RowValidator.check` (the same rules, counts, position
bias and duplicate detection as `mcqa-prep validate`) and counts what the plots need: options per row, gold
letter per option count, template and grading-mode mix, prompt lengths, reward_profiles pass rates, and the
findings per rule, per template and per custom regex pattern. Nothing is kept per row except what the
validator keeps (its duplicate index of fixed-size hashes).

Regex controls per pattern are read off the validator's findings: a regex rule's finding on a row is
attributed to the pattern its JSON path names (`$.template_metadata.output_regex[k]`, or the row's only
pattern), so no control runs twice.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable
from itertools import chain, repeat
from typing import Any

from ..evidence import RATE_BINS, rate_bin_of
from ..fields import NONE, template_id_of
from ..grader import DEFAULT_REGEX_TIMEOUT
from ..prompt import user_prompt
from ..records import Finding, Row
from ..validate import RowValidator
from .bins import LENGTH_EDGES, CappedCounter, Examples, Histogram, clip, length_bin

REGEX_RULES = (
    "regex_compile",
    "regex_groups",
    "regex_time_bound",
    "regex_positive_control",
    "regex_letter_coverage",
    "regex_negative_control",
)
# A pattern failing one of these is not run by the later controls (the validator skips unusable patterns).
REGEX_BLOCKING = ("regex_compile", "regex_groups", "regex_time_bound")
DUPLICATE_RULES = ("duplicate_row", "duplicate_uuid", "duplicate_prompt")
UNSET_MODE = "(unset: policy default)"
CUSTOM_MODE = "output_regex (custom)"
MODE_CAP = 32
UNCAPPED = 1 << 62  # a chunk's part keeps every group: the merge caps them in input order
MAX_OPTIONS_BIN = 26  # options-per-row histogram: 0..26, then "27+"
TEMPLATE_CAP = 500
PATTERN_CAP = 500
MODEL_CAP = 50
SPLIT_CAP = 64
LETTER_SET_FLUSH = 512  # distinct (n, letter set) pairs kept before folding them into per-letter floats
_INDEXED = re.compile(r"output_regex\[(\d+)\]$")
_DICT_ONLY = {dict}
_ONE_ONLY = {1}


class TemplateTally:
    __slots__ = ("rows", "custom", "error_rows", "warning_rows", "rules")

    def __init__(self) -> None:
        self.rows = 0
        self.custom = 0
        self.error_rows = 0
        self.warning_rows = 0
        self.rules: Counter = Counter()


class PatternTally:
    __slots__ = ("rows", "templates", "fails", "messages")

    def __init__(self) -> None:
        self.rows = 0
        self.templates: list[str] = []
        self.fails: Counter = Counter()
        self.messages: dict[str, str] = {}


class DatasetTally:
    """Everything a dataset section shows, accumulated one row at a time."""

    def __init__(
        self, *, examples: int = 3, regex_timeout: float = DEFAULT_REGEX_TIMEOUT, part: bool = False
    ) -> None:
        """`part`: one chunk's share (report/chunked.py): no validator, and no cap on any group, so that the
        parts merge (`merge`) in input order into exactly the capped tally of one pass."""
        # a part has no validator: its rows are checked in the chunk, their cross-row half in the fold
        self._validator = None if part else RowValidator(regex_timeout=regex_timeout)
        self.examples = examples
        self.caps = (UNCAPPED,) * 3 if part else (TEMPLATE_CAP, PATTERN_CAP, MODEL_CAP)
        self.last_tid: str | None = None  # the template id of the row counted last (a part's column)
        self.rows = 0
        self.splits = CappedCounter(UNCAPPED if part else SPLIT_CAP)
        self.option_counts = [0] * (MAX_OPTIONS_BIN + 2)
        self.gold_by_n: Counter = Counter()  # (n options, gold letter) -> rows
        self._letter_sets: Counter = Counter()  # (n options, offered letters) -> rows, folded when large
        self._expected_folded: Counter = Counter()  # (n options, letter) -> expected rows (floats)
        self.templates: dict[str, TemplateTally] = {}
        self.modes = CappedCounter(UNCAPPED if part else MODE_CAP)
        self.custom_rows = 0
        self.prompt_chars = Histogram(len(LENGTH_EDGES))
        self.profiles: dict[str, Histogram] = {}
        self.profile_models = CappedCounter(self.caps[2])
        self.rules: dict[str, Examples] = {}
        self.severity: dict[str, str] = {}
        self.patterns: dict[str, PatternTally] = {}
        self.finished: list[Finding] = []

    @property
    def validator(self) -> RowValidator:
        """The section's validator (a whole section's tally only: a part's rows are checked in its chunk)."""
        if self._validator is None:
            raise TypeError("a part of a report section has no validator: its rows were checked in the chunk")
        return self._validator

    # -- per row ------------------------------------------------------------------------------------

    def add(self, rec: Row, facts: Any = None) -> None:
        """One row; `facts` as RowValidator.check takes them (its batch's column facts), or None."""
        findings = self.validator.check(rec, facts)
        template = self.count(rec)
        if findings:
            d = rec.data
            self.findings(findings, output_regex(d) if d is not None else None, template)

    def count(self, rec: Row) -> TemplateTally | None:
        """One row's tallies, its findings aside; its template's (None for an unreadable line)."""
        self._count_split(rec.split)
        d = rec.data
        return self._row(d, rec.hint) if d is not None else None

    def _count_split(self, split: str | None) -> None:
        self.rows += 1
        split = split or NONE
        counts = self.splits.counts
        if split in counts:
            counts[split] += 1
        else:
            self.splits.add(split)

    def _row(self, d: dict[str, Any], hint: Any) -> TemplateTally:
        opts = d.get("options")
        letters = (hint[0] if hint is not None else _letters(opts)) if type(opts) is list else None
        rcp = d.get("responses_create_params")
        text = None
        if type(rcp) is dict:
            inp = rcp.get("input")
            if type(inp) is list and len(inp) == 1 and type(inp[0]) is dict:
                c = inp[0].get("content")
                if type(c) is str:
                    text = c
            if text is None:
                text = user_prompt(rcp)
        gold, tm, gm = d.get("expected_answer"), d.get("template_metadata"), d.get("grading_mode")
        return self.tally(letters, gold, tm, gm, text, d.get("reward_profiles"))

    def count_columns(
        self, split: str | None, letters: list[str], gold: Any, tm: Any, gm: Any, text: str, rp: Any
    ) -> TemplateTally:
        """`count` of a row read from its batch's columns (validate/batch.BatchView: its options in the
        normal layout, `letters` their keys; its prompt one user message, `text`), not from its dict."""
        self._count_split(split)
        return self.tally(letters, gold, tm, gm, text, rp)

    def tally(
        self, letters: list[str] | None, gold: Any, tm: Any, gm: Any, text: str | None, rp: Any
    ) -> TemplateTally:
        """A readable row's tallies from what they read of it: its option letters (None: its options are not
        a list), expected_answer, template_metadata, grading_mode, prompt text and reward_profiles."""
        if letters is not None:
            n = len(letters)
            self.option_counts[n if n <= MAX_OPTIONS_BIN else MAX_OPTIONS_BIN + 1] += 1
            if type(gold) is str:
                g = gold.strip().upper()
                offered = "".join(letters).upper()
                if len(g) == 1 and g in offered:
                    self.gold_by_n[(n, g)] += 1
                    self._letter_sets[(n, offered)] += 1
                    if len(self._letter_sets) > LETTER_SET_FLUSH:
                        self._fold_letter_sets()
        tid = self.last_tid = template_id_of(tm) or NONE
        orx = tm.get("output_regex") if type(tm) is dict else None
        t = self.templates.get(tid) or self._template(tid)
        t.rows += 1
        modes = self.modes.counts
        if orx is not None and orx != "" and orx != []:
            self.custom_rows += 1
            t.custom += 1
            mode = CUSTOM_MODE
            for p in [orx] if type(orx) is str else _patterns(orx):
                self._pattern_row(p, tid)
        else:
            mode = gm if type(gm) is str and gm else UNSET_MODE
        if mode in modes:
            modes[mode] += 1
        else:
            self.modes.add(mode)
        if text is not None:
            n = len(text)
            self.prompt_chars.add(length_bin(n), n)
        if type(rp) is list and rp:
            self._profiles(rp)
        return t

    def count_batch(
        self, split: str | None, letters: list[list[str]], golds: list[str], tms: list[Any], gms: list[Any],
        texts: list[str], rps: list[Any],
    ) -> list[str]:  # fmt: skip
        """`count_columns` of a batch's rows at once (in row order; each list holds one value per row), counted
        per distinct value: each group first meets a key where the rows one at a time first meet it, so every
        count and every key order is the one row-by-row counting gives. Returns each row's template id."""
        tids: list[str] = [template_id_of(tm) or NONE for tm in tms]
        if not tids:
            return tids
        orxs = [tm.get("output_regex") if type(tm) is dict else None for tm in tms]
        pairs: Counter | None = None
        groups: Counter | None = None
        try:
            pairs = Counter(zip(map(tuple, letters), golds, strict=True))
            groups = Counter(zip(tids, orxs, gms, strict=True))
        except TypeError:  # a grading_mode that is not hashable (a list)
            pass
        if (
            pairs is None
            or groups is None
            or len(self._letter_sets) + len(pairs) > LETTER_SET_FLUSH
            or not all(o is None or type(o) is str for o in orxs)
        ):  # a flush mid-batch, a list of patterns, an unhashable value: one row at a time
            for row in zip(letters, golds, tms, gms, texts, rps, strict=True):
                self.count_columns(split, *row)
            return tids
        lens = list(map(len, texts))
        # length_bin is bisect_right - 1 (every length is at least LENGTH_EDGES[0], 0)
        bins = {b - 1: c for b, c in Counter(map(bisect_right, repeat(LENGTH_EDGES), lens)).items()}
        self.rows += len(tids)
        self.splits.add(split or NONE, len(tids))
        for (keys, gold), c in pairs.items():
            n = len(keys)
            self.option_counts[n if n <= MAX_OPTIONS_BIN else MAX_OPTIONS_BIN + 1] += c
            g = gold.strip().upper()
            offered = "".join(keys).upper()
            if len(g) == 1 and g in offered:
                self.gold_by_n[(n, g)] += c
                self._letter_sets[(n, offered)] += c
        for (tid, orx, gm), c in groups.items():
            t = self.templates.get(tid) or self._template(tid)
            t.rows += c
            if orx is not None and orx != "":
                self.custom_rows += c
                t.custom += c
                mode = CUSTOM_MODE
                self._pattern_row(orx, tid, c)
            else:
                mode = gm if type(gm) is str and gm else UNSET_MODE
            self.modes.add(mode, c)
        self.prompt_chars.add_many(bins, lens)
        for rp in rps:
            if type(rp) is list and rp:
                self._profiles(rp)
        return tids

    def _template(self, tid: str) -> TemplateTally:
        t = self.templates.get(tid)
        if t is None:
            if len(self.templates) >= self.caps[0]:
                tid = "(other templates)"
                t = self.templates.get(tid)
            if t is None:
                t = self.templates[tid] = TemplateTally()
        return t

    def _pattern_row(self, p: str, tid: str, rows: int = 1) -> None:
        pt = self.patterns.get(p)
        if pt is None:
            if len(self.patterns) >= self.caps[1]:  # bounded: the rest is pooled
                p = "(other patterns)"
                pt = self.patterns.get(p)
            if pt is None:
                pt = self.patterns[p] = PatternTally()
        pt.rows += rows
        if len(pt.templates) < 3 and tid not in pt.templates:
            pt.templates.append(tid)

    def _profiles(self, rp: list) -> None:
        for p in rp:
            if type(p) is not dict:
                continue
            rate = p.get("pass_rate")
            if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate):
                continue
            model = p.get("model_hf_path")
            key = str(self.profile_models.add(str(model) if model else "(no model_hf_path)"))
            h = self.profiles.get(key)
            if h is None:
                h = self.profiles[key] = Histogram(len(RATE_BINS))
            h.add(rate_bin_of(float(rate)), float(rate))

    def findings(self, findings: list[Finding], orx: Any, t: TemplateTally | None) -> None:
        """One row's findings, cross-row ones included; `orx` its template_metadata.output_regex, `t` its
        template's tally (None for an unreadable line)."""
        if t is not None:
            if any(f.severity == "error" for f in findings):
                t.error_rows += 1
            else:
                t.warning_rows += 1
        for f in findings:
            self._finding(f)
            if t is not None:
                t.rules[f.rule] += 1
            if orx is not None and f.rule in REGEX_RULES:
                self._pattern_finding(f, orx)

    def _finding(self, f: Finding) -> None:
        ex = self.rules.get(f.rule)
        if ex is None:
            ex = self.rules[f.rule] = Examples(self.examples)
            self.severity[f.rule] = f.severity
        if len(ex.items) < ex.limit:
            ex.add(clip(f.render(), 400))
        else:
            ex.count += 1  # (an example past the first few is counted, not rendered)

    def _pattern_finding(self, f: Finding, orx: Any) -> None:
        pats = _patterns(orx)
        m = _INDEXED.search(f.path)
        if m is not None and int(m.group(1)) < len(pats):
            pats = [pats[int(m.group(1))]]
        for p in pats:
            pt = self.patterns.get(p) or self.patterns.get("(other patterns)")
            if pt is None:
                continue
            pt.fails[f.rule] += 1
            pt.messages.setdefault(f.rule, clip(f.message, 300))

    # -- end of input -------------------------------------------------------------------------------

    def unreadable(self, f: Finding) -> None:
        """An input of this section that could not be read at all (counted as validate counts it)."""
        self.validator.add([f])
        self._finding(f)

    def finish(self) -> None:
        """Whole-input findings (position bias), once every row was added."""
        self.finished = self.validator.finish()
        for f in self.finished:
            self._finding(f)
        self._fold_letter_sets()

    def _fold_letter_sets(self) -> None:
        for (n, offered), rows in self._letter_sets.items():
            for L in offered:
                self._expected_folded[(n, L)] += rows / len(offered)  # type: ignore[assignment]  # (floats)
        self._letter_sets.clear()

    def expected_by_n(self) -> dict[tuple[int, str], float]:
        """Gold rows expected per (option count, letter) if each row's gold were uniform over its letters."""
        self._fold_letter_sets()
        return dict(self._expected_folded)


def output_regex(d: dict[str, Any]) -> Any:
    tm = d.get("template_metadata")
    return tm.get("output_regex") if type(tm) is dict else None


def _letters(opts: list) -> list[str]:
    """The option letters of a row: the keys with a non-null value (C-level maps for single-key dicts)."""
    if set(map(type, opts)) == _DICT_ONLY and set(map(len, opts)) == _ONE_ONLY:
        if None not in [*chain.from_iterable(map(dict.values, opts))]:
            return [*chain.from_iterable(opts)]
    return [str(k) for o in opts if type(o) is dict for k, v in o.items() if v is not None]


def _patterns(orx: Any) -> list[str]:
    if isinstance(orx, str):
        return [orx]
    if isinstance(orx, list):
        return [p for p in orx if isinstance(p, str)]
    return []


def pattern_controls(pt: PatternTally) -> dict[str, str]:
    """Per regex rule: "pass", "fail" or "not run" (an earlier blocking rule failed) for one pattern."""
    out: dict[str, str] = {}
    blocked = any(pt.fails.get(r) for r in REGEX_BLOCKING)
    for rule in REGEX_RULES:
        n = pt.fails.get(rule, 0)
        if n:
            out[rule] = "fail"
        elif blocked and rule not in REGEX_BLOCKING:
            out[rule] = "not run"
        else:
            out[rule] = "pass"
    return out


def iter_patterns(tally: DatasetTally) -> Iterable[tuple[str, PatternTally]]:
    """Patterns by rows, largest first."""
    return sorted(tally.patterns.items(), key=lambda kv: (-kv[1].rows, kv[0]))
