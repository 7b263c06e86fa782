"""Row validation: every defect of every row, with its address, a stable rule name and a fix.

`RowValidator.check(rec)` checks one row (including duplicates against the rows seen so far) and is what
`prepare` calls row by row; `validate_paths` drives it over files, directories, stdin and pulled snapshots
for the `validate` command. The rules are listed in RULES and documented in docs/validate.md.

Speed: the row schema is checked by a hand-written fast test of the common shape; jsonschema's iter_errors
runs only when that test fails (to address every violation). The two agree by construction and by test.
Regex controls are cached per distinct pattern / letter set, so they cost nothing per row.
"""

from __future__ import annotations

import operator
import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import regex

from . import __version__, controls, schema
from ._perf import streaming_gc
from .errors import InputError
from .grader import DEFAULT_REGEX_TIMEOUT, ROW_MODES
from .grader.custom_regex import extract_custom
from .io.readers import iter_file, parquet_num_rows
from .records import STATUS_REGEX_TIMEOUT, Finding, Row

ERROR = "error"
WARNING = "warning"
REPORT_VERSION = schema.schema_version("validate_report")

# rule -> (severity, what it checks). The fix is in each message and in docs/validate.md.
RULES: dict[str, tuple[str, str]] = {
    "malformed_row": (ERROR, "a line that is not valid JSON / UTF-8, or not a JSON object"),
    "unreadable_file": (ERROR, "an input file that cannot be read at all (e.g. a broken Parquet file)"),
    "schema": (ERROR, "a violation of mcqa-row.v1 (missing field, wrong type)"),
    "options_count": (ERROR, "fewer than two options with a letter and a text"),
    "option_shape": (ERROR, "an option element with no letter/text or with several non-null letters"),
    "option_letter": (ERROR, "an option key that is not a single alphabetic character"),
    "option_letter_duplicate": (ERROR, "the same letter on two options (case-insensitive)"),
    "option_text_empty": (ERROR, "an empty or whitespace-only option text"),
    "option_text_duplicate": (WARNING, "two options with the same text (lenient modes become ambiguous)"),
    "option_not_in_prompt": (WARNING, "an option text that does not appear in the prompt"),
    "expected_answer_not_option": (ERROR, "expected_answer is not one of the letters with a text"),
    "grading_mode_unknown": (ERROR, "grading_mode is not a row-level mode"),
    "grading_mode_override_only": (
        ERROR,
        "grading_mode lenient_answer_colon_md on a row (NeMo Gym rejects it)",
    ),
    "grading_mode_not_nemo_gym": (WARNING, "grading_mode robust: this project's mode, unknown to NeMo Gym"),
    "prompt_messages": (ERROR, "the prompt is not exactly one user message with non-empty content"),
    "template_unrendered": (WARNING, "an unrendered template escape ({{, }}, {problem}) in the prompt"),
    "regex_compile": (
        ERROR,
        "an output_regex pattern that does not compile (under Python's re, as NeMo Gym)",
    ),
    "regex_groups": (ERROR, "an output_regex pattern with two or more capture groups (NeMo Gym crashes)"),
    "regex_time_bound": (ERROR, "an output_regex pattern that backtracks catastrophically on long input"),
    "regex_positive_control": (ERROR, "a compliant answer with the gold letter is not graded to it"),
    "regex_letter_coverage": (WARNING, "compliant answers with some other option letters yield no letter"),
    "regex_negative_control": (WARNING, "the prompt itself or a refusal is graded to an option letter"),
    "duplicate_row": (ERROR, "a row repeated: same uuid and same prompt as an earlier row"),
    "duplicate_uuid": (WARNING, "a uuid already used by an earlier row with another prompt"),
    "duplicate_prompt": (WARNING, "a prompt identical to an earlier row's"),
    "answer_position_bias": (WARNING, "one gold letter far over its uniform share (whole input)"),
}

# Position bias: a letter is flagged when its gold count is more than BIAS_RATIO times its expected count
# under a uniform choice among the letters each row actually offers, and that expectation is at least
# BIAS_MIN_EXPECTED rows (then the excess is >= 20 rows and >= ~4.5 binomial standard deviations).
BIAS_RATIO = 2.0
BIAS_MIN_EXPECTED = 20.0
BIAS_RULE = (
    f"observed > {BIAS_RATIO:g}x expected, expected = sum over rows of 1/(number of offered letters) for "
    f"rows offering the letter, flagged only when expected >= {BIAS_MIN_EXPECTED:g}"
)

UNRENDERED_MARKERS = ("{{", "}}", "{problem}", "{question}", "{options}", "{choices}")
UNRENDERED_MARKERS_OPEN = tuple(m for m in UNRENDERED_MARKERS if m.startswith("{"))
PROMPT_PATH = "$.responses_create_params.input[0].content"
SUMMARY_FILE = "<inputs>"
CACHE_MAX = 4096  # distinct patterns / (output_regex, letter set) pairs whose control results are kept

_MISSING = object()
_NO_ITEM = (None, None)
_second = operator.itemgetter(1)
# Row modes that need no finding (robust gets a NeMo Gym compatibility warning).
_FAST_MODES = frozenset(m for m in ROW_MODES if m != "robust")

# Fix hints for schema violations, by the address of the offending value (indices written [*]).
_SCHEMA_HINTS = {
    "$": "each row must be a JSON object",
    "$.responses_create_params": 'give the prompt as {"input": [{"role": "user", "content": "..."}]}',
    "$.responses_create_params.input": 'give the prompt as "input": [{"role": "user", "content": "..."}]',
    "$.responses_create_params.input[*]": 'each input message is an object {"role": "user", "content": "..."}',
    "$.responses_create_params.input[*].role": 'the role is a string, "user"',
    "$.responses_create_params.input[*].content": "the content is the prompt text (a string) or a list of parts",
    "$.options": 'give the options as a list of single-key objects, e.g. [{"A": "text"}, {"B": "text"}]',
    "$.options[*]": 'each option is an object holding one letter and its text, e.g. {"A": "text"}',
    "$.options[*].*": "option texts are strings (null only for the absent letters of the Parquet shape)",
    "$.expected_answer": 'set it to the gold option letter, e.g. "B"',
    "$.grading_mode": "use one of " + ", ".join(ROW_MODES) + ", or leave it out",
    "$.template_metadata": "template_metadata is an object (or null / absent)",
    "$.template_metadata.output_regex": (
        "NeMo Gym 0.7.0 crashes on it: give a pattern string or a non-empty list of pattern strings, "
        "or remove the key"
    ),
    "$.template_metadata.answer_prefix": "answer_prefix is a string (or null)",
    "$.template_metadata.template_id": "template_id is a string (or null)",
    "$.template_metadata.template_prompt": "template_prompt is a string (or null)",
    "$.uuid": "use a string id",
    "$.reward_profiles": "reward_profiles is a list of objects (or null)",
    "$.reward_profiles[*]": "each reward profile is an object",
}
_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    return _JSON_TYPES.get(type(v), type(v).__name__)


# ------------------------------------------------------------------------------------------- schema


def normalize_texts(texts: list[str]) -> list[str]:
    """Option texts lower-cased with whitespace collapsed (how lenient modes compare them), in one pass over
    the joined texts instead of one per text."""
    parts = " ".join("\x01".join(texts).lower().split()).split("\x01")
    if len(parts) != len(texts):  # a text holding the separator itself
        return [" ".join(t.lower().split()) for t in texts]
    return [p.strip() for p in parts] if len(parts) > 1 else parts


_IRREGULAR_SPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"


def _distinct_texts(texts: list[str]) -> bool:
    """No two texts equal under normalize_texts. Cheap when the texts are ASCII with single inner spaces:
    then normalising is just lower-casing."""
    n = len(texts)
    if len(set(map(str.lower, texts))) != n:
        return False
    j = "\x01".join(texts)
    regular = j.isascii() and j[:1] != " " and j[-1:] != " " and "  " not in j and "\x01 " not in j
    if regular and " \x01" not in j:
        for c in _IRREGULAR_SPACE:  # single-character searches are memchr-fast
            if c in j:
                break
        else:
            return True
    return len(set(normalize_texts(texts))) == n


# bytes.translate table for _usable_distinct: ASCII upper -> lower case, the whitespace other than ' ' -> the
# separator (so the split count exposes it)
_FOLD = bytes(c + 32 if 65 <= c <= 90 else 1 if chr(c) in _IRREGULAR_SPACE else c for c in range(256))


def _usable_distinct(texts: list[str]) -> bool:
    """Every text is non-blank and no two are equal under normalize_texts: `all(map(str.strip, texts)) and
    _distinct_texts(texts)`, in a few C-level passes over the joined texts when they are ASCII whose only
    whitespace is ' '. Then a text is blank exactly when it is all spaces, and two texts equal under
    normalize_texts are also equal lower-cased with every space removed, so distinct space-free forms prove
    distinct texts (equal ones are decided by the definition)."""
    n = len(texts)
    j = "\x01".join(texts)
    if j.isascii():
        parts = j.encode().translate(_FOLD, b" ").split(b"\x01")
        if len(parts) == n:  # no text holds the separator or whitespace other than ' '
            if b"" in parts:
                return False
            if len(set(parts)) == n:
                return True
    return all(map(str.strip, texts)) and _distinct_texts(texts)


def _texts_in(prompt: str, texts: list[str]) -> bool:
    """Every text occurs in the prompt. Option lines are usually rendered in order with a constant separator
    ("\nB: "), so after the first two searches each text is confirmed by one comparison at its predicted
    position; anything else falls back to a search."""
    end = 0
    gap = -1
    for t in texts:
        if gap >= 0 and prompt.startswith(t, end + gap):
            end += gap + len(t)
            continue
        at = prompt.find(t, end)
        if at < 0:
            if t not in prompt:
                return False
            gap = -1
            continue
        if end:
            gap = at - end
        end = at + len(t)
    return True


# joined option keys (one character each) -> upper-cased when they are distinct letters, else None
_KEY_SETS: dict[str, str | None] = {}
_DICT_ONLY = {dict}
_ONE_ONLY = {1}
_STR_ONLY = {str}


def _null_filled(opts: list) -> tuple[list[str], list[str]] | None:
    """(keys, texts) when `opts` has the usual Parquet layout (element i carries every letter key and only
    the i-th is non-null), checked with C-level maps; None for anything else (the caller loops)."""
    o0 = opts[0]
    if type(o0) is not dict or len(o0) < 2:
        return None
    keys = [*o0][: len(opts)]
    try:
        texts = [*map(dict.__getitem__, opts, keys)]
    except (KeyError, TypeError):
        return None
    if len(texts) != len(opts) or set(map(type, texts)) != {str} or set(map(type, keys)) != {str}:
        return None
    values = [*chain.from_iterable(map(dict.values, opts))]
    # every element has a non-null text at its own key; n nulls fewer than values means exactly one per element
    if values.count(None) != len(values) - len(opts):
        return None
    return keys, texts


def _is_int(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())


def fast_schema_ok(d: Any) -> bool:
    """True exactly when mcqa-row.v1 has no error for `d`: a hand-written mirror of the schema for speed."""
    if not isinstance(d, dict):
        return False
    rcp = d.get("responses_create_params", _MISSING)
    if not isinstance(rcp, dict):
        return False
    inp = rcp.get("input", _MISSING)
    if not isinstance(inp, list):
        return False
    for m in inp:
        if not isinstance(m, dict):
            return False
        role = m.get("role", "")
        if not isinstance(role, str):
            return False
        content = m.get("content", "")
        if not isinstance(content, (str, list)):
            return False
    opts = d.get("options", _MISSING)
    if not isinstance(opts, list):
        return False
    for o in opts:
        if not isinstance(o, dict) or not o:
            return False
        for v in o.values():
            if v is not None and not isinstance(v, str):
                return False
    if not isinstance(d.get("expected_answer", _MISSING), str):
        return False
    gm = d.get("grading_mode")
    if gm is not None and not isinstance(gm, str):
        return False
    tm = d.get("template_metadata")
    if tm is not None:
        if not isinstance(tm, dict):
            return False
        if "output_regex" in tm:
            orx = tm["output_regex"]
            if not isinstance(orx, str):
                if not isinstance(orx, list) or not orx:
                    return False
                for p in orx:
                    if not isinstance(p, str):
                        return False
        for key in ("answer_prefix", "template_id", "template_prompt"):
            v = tm.get(key)
            if v is not None and not isinstance(v, str):
                return False
    u = d.get("uuid")
    if u is not None and not isinstance(u, str) and not _is_int(u):
        return False
    rp = d.get("reward_profiles")
    if rp is not None:
        if not isinstance(rp, list):
            return False
        for p in rp:
            if not isinstance(p, dict):
                return False
    return True


def _hint_key(path: list) -> str:
    """'$.options[*].*' for ['options', 2, 'A']: the address with indices (and option letters) generalised."""
    if len(path) >= 3 and path[0] == "options":
        return "$.options[*].*"
    return "$" + "".join("[*]" if isinstance(p, int) else f".{p}" for p in path)


def schema_findings(d: Any) -> list[tuple[str, str]]:
    """(JSON path, message) for every mcqa-row.v1 violation of `d`, in document order."""
    out: list[tuple[str, str]] = []
    errors = sorted(schema.validator("row").iter_errors(d), key=lambda e: [str(p) for p in e.absolute_path])
    for err in errors:
        path = list(err.absolute_path)
        kw = err.validator
        if kw == "required":
            # one error per missing property; jsonschema names it only in the message ("'x' is a required ...")
            absent = [
                k for k in err.validator_value if isinstance(err.instance, dict) and k not in err.instance
            ]
            missing = next(
                (k for k in absent if err.message.startswith(repr(k))), absent[0] if absent else "?"
            )
            path.append(missing)
            msg = f"missing required field '{missing}'"
        elif kw == "type":
            want = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
            msg = f"must be {' or '.join(want)}, got {_json_type(err.instance)}"
        elif kw == "minProperties":
            msg = "an empty option object"
        elif kw == "minItems":
            msg = f"must not be empty (at least {err.validator_value} item)"
        elif kw == "anyOf" and path[-2:] == ["template_metadata", "output_regex"]:
            inst = err.instance
            hint = _SCHEMA_HINTS["$.template_metadata.output_regex"]
            if isinstance(inst, list) and inst:
                for k, item in enumerate(inst):  # address each pattern that is not a string
                    if not isinstance(item, str):
                        out.append(
                            (
                                schema.json_path([*path, k]),
                                f"a pattern must be a string, got {_json_type(item)}; {hint}",
                            )
                        )
                continue
            got = "an empty list" if inst == [] else _json_type(inst)
            msg = f"must be a string or a non-empty list of strings, got {got}"
        else:
            msg = err.message
        hint = _SCHEMA_HINTS.get(_hint_key(path))
        out.append((schema.json_path(path), f"{msg}; {hint}" if hint else msg))
    return out


# ------------------------------------------------------------------------------------------- regex info


@dataclass
class _PatternInfo:
    """Per distinct pattern: compile result, capture groups, time bound (computed once)."""

    compiled: Any
    error: str | None
    groups: int
    time: controls.TimeBound | None

    @property
    def usable(self) -> bool:
        return self.compiled is not None and self.groups <= 1 and (self.time is None or self.time.ok)


@dataclass
class _RegexPlan:
    """What one output_regex gives for one letter set: findings independent of the row (pattern rules,
    refusal control) and, per gold letter, the positive-control findings. Cached: no control runs per row."""

    paths: list[str]
    whole: str
    static: list[tuple[str, str, str]]
    positive: list[controls.PatternControls | None]
    all_usable: bool
    per_gold: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)

    def gold_findings(self, g: str) -> list[tuple[str, str, str]]:
        out: list[tuple[str, str, str]] = []
        for pc, path in zip(self.positive, self.paths, strict=True):
            if pc is None:
                continue
            bad = pc.failing()
            if g in bad:
                lc = pc.letters[g]
                got = f"as {lc.got}" if lc.got else f"to no letter ({lc.status})"
                msg = (
                    f"a compliant answer {_quote(lc.response or '')} (this pattern's own format, with the gold "
                    f"{g}) is graded {got}: training can never reward this row; make the capture group hold "
                    "the option letter"
                )
                out.append((path, "regex_positive_control", msg))
            others = [L for L in bad if L != g]
            if others:
                lc = pc.letters[others[0]]
                msg = (
                    f"compliant answers with letter(s) {', '.join(others)} (e.g. {_quote(lc.response or '')}) "
                    "yield no such letter; widen the pattern's letter class to every option letter"
                )
                out.append((path, "regex_letter_coverage", msg))
        self.per_gold[g] = out
        return out


def _prompt_text(content: Any) -> str | None:
    """The text of a message content: a string, or the text of its input_text/text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p.get("text")
            for p in content
            if isinstance(p, Mapping)
            and p.get("type") in ("input_text", "text")
            and isinstance(p.get("text"), str)
        ]
        return "".join(parts)
    return None


def _quote(s: str, n: int = 60) -> str:
    return repr(s if len(s) <= n else s[: n - 1] + "…")


# ------------------------------------------------------------------------------------------- validator


class RowValidator:
    """Checks rows one at a time and remembers only what cross-row rules need (hashes, counts)."""

    def __init__(self, *, regex_timeout: float = DEFAULT_REGEX_TIMEOUT) -> None:
        self.regex_timeout = regex_timeout
        self._uuids: dict[int, int] = {}  # uuid hash -> packed file/line
        # uuid hash -> prompt hash: int-only dicts are not tracked by the cyclic GC, so they cost nothing
        # per collection however large they grow
        self._uuid_prompts: dict[int, int] = {}
        self._prompts: dict[int, int] = {}
        self._files: list[tuple[str, str | None]] = []
        self._file_ids: dict[tuple[str, str | None], int] = {}
        self._patterns: dict[str, _PatternInfo] = {}
        self._plans: dict[tuple[Any, str], _RegexPlan] = {}
        self._slow_prompts: set[Any] = set()  # output_regex keys that timed out on some prompt
        self.rows = 0
        self.patterns_checked = 0
        self.rows_with_errors = 0
        self.rows_with_warnings = 0
        self.by_rule: Counter[str] = Counter()
        self.by_severity: Counter[str] = Counter()
        self.gold_hist: Counter[str] = Counter()
        self._letter_sets: Counter[str] = Counter()  # offered letters of rows with a valid gold

    # -- public API -------------------------------------------------------------------------------

    def check(self, rec: Row) -> list[Finding]:
        """Every finding of one row, including duplicates of rows checked before by this validator."""
        return self._check(rec, None)

    def _check(self, rec: Row, hint: tuple[list[str], list[str]] | None) -> list[Finding]:
        """check(), given the reader's (keys, texts) of `rec`'s options (see iter_file_hinted) or None."""
        self.rows += 1
        if rec.error is not None or not isinstance(rec.data, dict):
            f = Finding(
                rec.file,
                rec.line,
                rec.index,
                "$",
                "malformed_row",
                ERROR,
                f"{rec.error or 'no data'}; fix or remove this line (the other lines are still checked)",
            )
            self._count([f])
            return [f]
        out = _RowCheck(self, rec, hint).run()
        if out:
            self._count(out)
        return out

    def add(self, findings: Iterable[Finding]) -> None:
        """Count findings made outside check() (an unreadable file) in the summary."""
        fs = list(findings)
        for f in fs:
            self.by_rule[f.rule] += 1
            self.by_severity[f.severity] += 1

    def finish(self) -> list[Finding]:
        """Whole-input findings, due once every row was checked (position bias)."""
        out = []
        bias = self.position_bias()
        total = sum(self.gold_hist.values())
        for letter in bias["flagged"]:
            obs = self.gold_hist[letter]
            exp = bias["expected"][letter]
            out.append(
                Finding(
                    SUMMARY_FILE,
                    None,
                    None,
                    "$.expected_answer",
                    "answer_position_bias",
                    WARNING,
                    f"expected_answer is {letter} in {obs} of {total} rows ({100 * obs / total:.1f}%), "
                    f"{obs / exp:.1f}x its uniform share ({exp:.0f} rows expected): a model that always "
                    f"answers {letter} is rewarded far above chance; shuffle the option order per row",
                )
            )
        self.add(out)
        return out

    def position_bias(self) -> dict[str, Any]:
        """Expected gold count per letter under a uniform choice among each row's offered letters."""
        expected: dict[str, float] = {}
        for letters, n in self._letter_sets.items():
            share = n / len(letters)
            for L in letters:
                expected[L] = expected.get(L, 0.0) + share
        flagged = [
            L
            for L in sorted(expected)
            if expected[L] >= BIAS_MIN_EXPECTED and self.gold_hist[L] > BIAS_RATIO * expected[L]
        ]
        return {
            "rule": BIAS_RULE,
            "expected": {L: round(v, 3) for L, v in sorted(expected.items())},
            "flagged": flagged,
        }

    def summary(self) -> dict[str, Any]:
        return {
            "rows_read": self.rows,
            "rows_with_errors": self.rows_with_errors,
            "rows_with_warnings": self.rows_with_warnings,
            "errors": self.by_severity[ERROR],
            "warnings": self.by_severity[WARNING],
            "findings_by_rule": dict(sorted(self.by_rule.items())),
            "expected_answer_histogram": dict(sorted(self.gold_hist.items())),
            "position_bias": self.position_bias(),
            "patterns_checked": self.patterns_checked,
        }

    # -- internals ----------------------------------------------------------------------------------

    def _count(self, findings: list[Finding]) -> None:
        if not findings:
            return
        err = False
        for f in findings:
            self.by_rule[f.rule] += 1
            self.by_severity[f.severity] += 1
            err = err or f.severity == ERROR
        if err:
            self.rows_with_errors += 1
        else:
            self.rows_with_warnings += 1

    def _where(self, rec: Row) -> int:
        key = (rec.file, rec.split)
        fid = self._file_ids.get(key)
        if fid is None:
            fid = self._file_ids[key] = len(self._files)
            self._files.append(key)
        return (fid << 32) | rec.line

    def _describe(self, packed: int) -> tuple[str, str | None]:
        file, split = self._files[packed >> 32]
        return f"{file}:{packed & 0xFFFFFFFF}", split

    def pattern(self, p: str) -> _PatternInfo:
        info = self._patterns.get(p)
        if info is None:
            from .grader.custom_regex import compile_pattern

            compiled, error, groups = compile_pattern(p)
            time = None
            if compiled is not None and groups <= 1:
                time = controls.check_time_bound(p, compiled, timeout=self.regex_timeout)
            if len(self._patterns) >= CACHE_MAX:  # bounded memory when every row brings its own pattern
                self._patterns.clear()
            info = self._patterns[p] = _PatternInfo(compiled, error, groups, time)
            self.patterns_checked += 1
        return info

    def regex_plan(self, ck: tuple[Any, str], orx: Any) -> _RegexPlan:
        """The findings an output_regex gives for a letter set (pattern rules, controls), computed once."""
        _key, letters = ck
        if isinstance(orx, str):
            patterns, paths = [orx], ["$.template_metadata.output_regex"]
        else:
            patterns = list(orx)
            paths = [f"$.template_metadata.output_regex[{k}]" for k in range(len(patterns))]
        whole = paths[0] if len(paths) == 1 else "$.template_metadata.output_regex"
        static: list[tuple[str, str, str]] = []
        usable = []
        for p, path in zip(patterns, paths, strict=True):
            info = self.pattern(p)
            usable.append(info.usable)
            if info.compiled is None:
                msg = f"{info.error}; NeMo Gym (Python re) skips it, so it never extracts a letter: fix the pattern"
                static.append((path, "regex_compile", msg))
            elif info.groups > 1:
                msg = (
                    f"{info.groups} capture groups; NeMo Gym crashes on this: keep one group around the letter "
                    "and make the others non-capturing (?:...)"
                )
                static.append((path, "regex_groups", msg))
            elif info.time is not None and not info.time.ok:
                engine = (
                    "Python's re (NeMo Gym, no timeout)"
                    if info.time.engine == "re"
                    else f"the regex module within {self.regex_timeout}s"
                )
                msg = (
                    f"catastrophic backtracking: {engine} does not finish on {info.time.detail}; a long "
                    "response stalls training; remove nested quantifiers such as (a+)+ or (\\w+\\s?)*"
                )
                static.append((path, "regex_time_bound", msg))
        positive: list[controls.PatternControls | None] = [None] * len(patterns)
        if letters:
            t = self.regex_timeout
            letter_list = list(letters)
            positive = controls.positive_controls(orx, patterns, usable, letter_list, timeout=t)
            refusal = controls.refusal_letter(orx, letter_list, timeout=t) if all(usable) else None
            if refusal is not None:
                text, letter = refusal
                msg = (
                    f"a refusal ({text!r}) is graded as option {letter}: the pattern reads letters out of "
                    "ordinary words; anchor it to the answer format (e.g. 'Answer:\\s*([A-J])')"
                )
                static.append((whole, "regex_negative_control", msg))
        if len(self._plans) >= CACHE_MAX:  # bounded memory when every row brings its own pattern
            self._plans.clear()
        plan = self._plans[ck] = _RegexPlan(paths, whole, static, positive, all(usable))
        return plan


class _RowCheck:
    """The checks of one row; a class only to share the row's state between the rule methods."""

    __slots__ = ("v", "rec", "hint", "d", "out", "uuid", "letters", "prompt", "texts", "lset", "gold")

    def __init__(self, v: RowValidator, rec: Row, hint: tuple[list[str], list[str]] | None = None) -> None:
        self.v = v
        self.rec = rec
        self.hint = hint  # (keys, texts) of the row's options when the reader vouches for their shape
        self.d: dict[str, Any] = rec.data  # type: ignore[assignment]
        self.out: list[Finding] = []
        u = self.d.get("uuid")
        self.uuid = None if u is None else str(u)
        self.letters: dict[str, tuple[int, str, str]] = {}  # letter -> (index, key, text); detailed path
        self.prompt: str | None = None
        self.texts: dict[str, str] = {}  # usable letter -> option text (both paths)
        self.lset = ""  # "".join(self.texts): the offered letters
        self.gold: str | None = None  # the gold letter when it names a usable option

    def add(self, path: str, rule: str, message: str, severity: str | None = None) -> None:
        r = self.rec
        self.out.append(
            Finding(r.file, r.line, r.index, path, rule, severity or RULES[rule][0], message, self.uuid)
        )

    def run(self) -> list[Finding]:
        if not self.fast():
            self.detailed()
        if self.gold is not None:
            v = self.v
            v.gold_hist[self.gold] += 1
            v._letter_sets[self.lset] += 1
        self.check_regex()
        self.check_duplicates()
        return self.out

    def detailed(self) -> None:
        """The per-row rules, each with its address and message (the definition; fast() mirrors it)."""
        if not fast_schema_ok(self.d):
            for path, msg in schema_findings(self.d):
                self.add(path, "schema", msg)
        self.check_prompt()
        self.check_options()
        self.texts = {L: t for L, (_, _, t) in self.letters.items() if t.strip()}
        self.lset = "".join(self.texts)
        self.check_gold()
        self.check_mode()

    def fast(self) -> bool:
        """True only when detailed() would find nothing; then sets prompt, texts and gold. A fixed sequence of
        C-level checks for the common shape (single-key or null-filled options), 5-10x cheaper per row."""
        d = self.d
        rcp = d.get("responses_create_params")
        if type(rcp) is not dict:
            return False
        inp = rcp.get("input")
        if type(inp) is not list or len(inp) != 1:
            return False
        m = inp[0]
        if type(m) is not dict or m.get("role") != "user":
            return False
        prompt = m.get("content")
        if type(prompt) is not str or not prompt or prompt.isspace():
            return False
        # a prompt has few braces: find each (memchr-fast; `"}}" in s` is a slow 2-character search) and test
        # the markers only there
        at = prompt.find("{")
        while at >= 0:
            if prompt.startswith(UNRENDERED_MARKERS_OPEN, at):
                return False
            at = prompt.find("{", at + 1)
        at = prompt.find("}")
        while at >= 0:
            if prompt.startswith("}}", at):
                return False
            at = prompt.find("}", at + 1)
        opts = d.get("options")
        if type(opts) is not list or len(opts) < 2:
            return False
        hint = self.hint
        if hint is not None:
            # the reader built these single-key {key: text} elements from these lists (str keys and texts)
            keys, texts = hint
        elif set(map(type, opts)) == _DICT_ONLY and set(map(len, opts)) == _ONE_ONLY:
            # single-key dicts (JSONL, and Parquet after the reader's column-wise normalisation): C-level maps
            keys = [*chain.from_iterable(opts)]
            texts = [*map(dict.__getitem__, opts, keys)]
            if set(map(type, keys + texts)) != _STR_ONLY:
                return False
        elif (pair := _null_filled(opts)) is not None:
            keys, texts = pair
        else:
            keys = []
            texts = []
            for o in opts:
                if type(o) is not dict:
                    return False
                n = len(o)
                if n == 1:
                    ((k, t),) = o.items()
                else:
                    if [*o.values()].count(None) != n - 1:
                        return False
                    k, t = next(filter(_second, o.items()), _NO_ITEM)
                if type(t) is not str or type(k) is not str:
                    return False
                keys.append(k)
                texts.append(t)
        joined = "".join(keys)
        if len(joined) != len(keys):
            return False
        up = _KEY_SETS.get(joined, _MISSING)
        if up is _MISSING:
            up = joined.upper()
            # one upper-case letter per key ('ŉ'.upper() is two characters: left to detailed()), all distinct
            if not joined.isalpha() or len(up) != len(joined) or len(set(up)) != len(up):
                up = None
            if len(_KEY_SETS) >= CACHE_MAX:
                _KEY_SETS.clear()
            _KEY_SETS[joined] = up
        if up is None or not _usable_distinct(texts) or not _texts_in(prompt, texts):
            return False
        gold = d.get("expected_answer")
        if type(gold) is not str:
            return False
        g = gold.strip().upper()
        if len(g) != 1 or g not in up:
            return False
        gm = d.get("grading_mode")
        if gm is not None and (type(gm) is not str or gm not in _FAST_MODES):
            return False
        tm = d.get("template_metadata")
        if tm is not None:
            if type(tm) is not dict:
                return False
            if "output_regex" in tm:
                orx = tm["output_regex"]
                if type(orx) is not str and (
                    type(orx) is not list or not orx or not all(type(p) is str for p in orx)
                ):
                    return False
            for key in ("answer_prefix", "template_id", "template_prompt"):
                x = tm.get(key)
                if x is not None and type(x) is not str:
                    return False
        u = d.get("uuid")
        if u is not None and type(u) is not str and type(u) is not int:
            return False
        rp = d.get("reward_profiles")
        if rp is not None and (type(rp) is not list or not all(type(x) is dict for x in rp)):
            return False
        self.prompt = prompt
        self.texts = dict(zip(up, texts, strict=False))  # equal lengths: one letter per key
        self.lset = up
        self.gold = g
        return True

    # -- prompt -------------------------------------------------------------------------------------

    def check_prompt(self) -> None:
        rcp = self.d.get("responses_create_params")
        inp = rcp.get("input") if isinstance(rcp, dict) else None
        if not isinstance(inp, list):
            return  # the schema finding says it
        base = "$.responses_create_params.input"
        if len(inp) != 1:
            roles = ", ".join(str(m.get("role")) for m in inp if isinstance(m, dict)) or "none"
            self.add(
                base,
                "prompt_messages",
                f"expected exactly one user message, got {len(inp)} (roles: {roles}); put the whole prompt "
                "in one user message (NeMo Gym's mcqa rows carry no system message)",
            )
            return
        m = inp[0]
        if not isinstance(m, dict):
            return
        role = m.get("role")
        if role != "user":
            self.add(f"{base}[0].role", "prompt_messages", f"the message role is {role!r}, expected 'user'")
        text = _prompt_text(m.get("content"))
        if text is None:
            if "content" not in m:
                self.add(
                    f"{base}[0].content",
                    "prompt_messages",
                    "the message has no content; give the prompt text",
                )
            return
        if not text.strip():
            self.add(
                f"{base}[0].content",
                "prompt_messages",
                "the prompt is empty; give the question and its options",
            )
            return
        self.prompt = text
        for marker in UNRENDERED_MARKERS:
            at = text.find(marker)
            if at >= 0:
                self.add(
                    PROMPT_PATH,
                    "template_unrendered",
                    f"the prompt contains {marker!r} at character {at} "
                    f"({_quote(text[max(0, at - 25) : at + 25], 70)}): the template was not rendered as "
                    "intended (str.format turns '{{' into '{' and fills '{problem}'); render it again",
                )
                break

    # -- options ------------------------------------------------------------------------------------

    def check_options(self) -> None:
        opts = self.d.get("options")
        if not isinstance(opts, list):
            return
        letters = self.letters
        texts: dict[str, str] = {}
        for i, opt in enumerate(opts):
            if not isinstance(opt, dict) or not opt:
                continue  # schema
            present = [(k, v) for k, v in opt.items() if v is not None]
            if len(present) != 1:
                if not present:
                    self.add(
                        f"$.options[{i}]",
                        "option_shape",
                        "no letter with a text (every key is null); drop the element or give its text",
                    )
                    continue
                keys = ", ".join(repr(k) for k, _ in present)
                self.add(
                    f"$.options[{i}]",
                    "option_shape",
                    f"{len(present)} letters with a text ({keys}); each element holds exactly one letter, "
                    'e.g. [{"A": "..."}, {"B": "..."}]',
                )
            for k, v in present:
                if len(k) != 1 or not k.isalpha():
                    self.add(
                        f"$.options[{i}]",
                        "option_letter",
                        f"option key {k!r} is not a single letter; use A, B, C, ... (a one-character "
                        "alphabetic key)",
                    )
                    continue
                L = k.upper()
                if L in letters:
                    j = letters[L][0]
                    self.add(
                        f"$.options[{i}]",
                        "option_letter_duplicate",
                        f"letter {L} is already used by $.options[{j}]; give every option its own letter",
                    )
                    continue
                if not isinstance(v, str):
                    continue  # schema
                letters[L] = (i, k, v)
                if not v.strip():
                    self.add(
                        f"$.options[{i}].{k}",
                        "option_text_empty",
                        f"option {L} has an empty text; give its text or remove the option",
                    )
                    continue
                norm = normalize_texts([v])[0]
                first = texts.get(norm)
                if first is not None:
                    self.add(
                        f"$.options[{i}].{k}",
                        "option_text_duplicate",
                        f"option {L} has the same text as option {first} ({_quote(v)}): lenient modes that "
                        "match option text cannot tell them apart; make the texts distinct",
                    )
                else:
                    texts[norm] = L
        usable = [L for L, (_, _, t) in letters.items() if t.strip()]
        if len(usable) < 2:
            self.add(
                "$.options",
                "options_count",
                f"{len(usable)} option(s) with a letter and a text; a multiple-choice row needs at least two",
            )
        prompt = self.prompt
        if prompt is not None:
            flat: str | None = None
            for L, (i, k, t) in letters.items():
                if not t.strip() or t in prompt:
                    continue
                if flat is None:
                    flat = " ".join(prompt.split())
                if " ".join(t.split()) in flat:
                    continue
                self.add(
                    f"$.options[{i}].{k}",
                    "option_not_in_prompt",
                    f"the text of option {L} ({_quote(t)}) does not appear in the prompt: the model never "
                    "sees it; render the option lines into the prompt or fix the option text",
                )

    # -- gold -----------------------------------------------------------------------------------------

    def check_gold(self) -> None:
        gold = self.d.get("expected_answer")
        if not isinstance(gold, str) or not isinstance(self.d.get("options"), list):
            return  # the schema finding says it
        g = gold.strip().upper()
        letters = self.letters
        if g in self.texts:
            self.gold = g
            return
        offered = ", ".join(letters) or "none"
        if not g:
            msg = f"expected_answer is empty; set it to the gold letter (one of {offered})"
        elif g in letters:
            msg = f"expected_answer {g} names an option with an empty text; fix the option or the gold"
        else:
            msg = (
                f"expected_answer {gold!r} is not one of the option letters ({offered}); set it to the letter of "
                "the correct option"
            )
            if self._null_letter(g):
                msg += f" (option {g} is null here: the Parquet shape's absent letter)"
        self.add("$.expected_answer", "expected_answer_not_option", msg)

    def _null_letter(self, g: str) -> bool:
        opts = self.d.get("options")
        return isinstance(opts, list) and any(isinstance(o, dict) and o.get(g, 0) is None for o in opts)

    # -- mode -------------------------------------------------------------------------------------------

    def check_mode(self) -> None:
        gm = self.d.get("grading_mode")
        if not isinstance(gm, str) or gm in ROW_MODES:
            if gm == "robust":
                self.add(
                    "$.grading_mode",
                    "grading_mode_not_nemo_gym",
                    "grading_mode 'robust' is mcqa-prep's own mode: NeMo Gym 0.7.0 rejects this row; use a "
                    "NeMo Gym mode if the data is trained there",
                )
            return
        if gm == "lenient_answer_colon_md":
            self.add(
                "$.grading_mode",
                "grading_mode_override_only",
                "lenient_answer_colon_md is a server-level override, not a row mode: NeMo Gym rejects the row; "
                "use lenient_answer_colon on the row, or set the mode in the grading policy override",
            )
            return
        self.add(
            "$.grading_mode",
            "grading_mode_unknown",
            f"unknown grading_mode {gm!r}; use one of {', '.join(ROW_MODES)}, or leave it out for the default",
        )

    # -- regex --------------------------------------------------------------------------------------------

    def check_regex(self) -> None:
        tm = self.d.get("template_metadata")
        if type(tm) is not dict or "output_regex" not in tm:
            return
        orx = tm["output_regex"]
        if type(orx) is str:
            key: Any = orx
        elif isinstance(orx, list) and orx and all(isinstance(p, str) for p in orx):
            key = tuple(orx)
        else:
            return  # the schema finding says it
        v = self.v
        ck = (key, self.lset)
        plan = v._plans.get(ck)
        if plan is None:
            plan = v.regex_plan(ck, orx)
        add = self.add
        for path, rule, msg in plan.static:
            add(path, rule, msg)
        if self.gold is not None:
            per_gold = plan.per_gold.get(self.gold)
            if per_gold is None:
                per_gold = plan.gold_findings(self.gold)
            for path, rule, msg in per_gold:
                add(path, rule, msg)
        if plan.all_usable and self.prompt is not None and key not in v._slow_prompts:
            self._prompt_control(orx, key, plan.paths)

    def _prompt_control(self, orx: Any, key: Any, paths: list[str]) -> None:
        ext = extract_custom(self.prompt, orx, self.texts, timeout=self.v.regex_timeout)
        if ext.status == STATUS_REGEX_TIMEOUT:
            self.v._slow_prompts.add(key)
            self.add(
                paths[0],
                "regex_time_bound",
                f"the pattern did not finish within {self.v.regex_timeout}s on this row's prompt (later rows "
                "with this output_regex skip the prompt control); simplify the pattern",
            )
            return
        if ext.letter is None:
            return
        where = self._last_match(orx)
        self.add(
            paths[0] if len(paths) == 1 else "$.template_metadata.output_regex",
            "regex_negative_control",
            f"the prompt itself is graded as option {ext.letter}{where}: a response that echoes the prompt "
            f"(e.g. a truncated one) scores whenever the gold is {ext.letter}; write the format with a "
            "placeholder that is not an option letter (e.g. 'Answer: X') or anchor the pattern to the "
            "response's end",
        )

    def _last_match(self, orx: Any) -> str:
        """' (match 'Answer: A' at character 123)' for the first pattern that matches the prompt, for the message."""
        prompt = self.prompt or ""
        for p in [orx] if isinstance(orx, str) else orx:
            compiled = self.v.pattern(p).compiled
            try:
                kw = {"timeout": self.v.regex_timeout} if isinstance(compiled, regex.Pattern) else {}
                last = None
                for m in compiled.finditer(prompt, **kw):
                    last = m
            except Exception:  # noqa: BLE001 - only decorates a message
                continue
            if last is not None:
                return f" (match {_quote(last.group(0), 40)} at character {last.start()})"
        return ""

    # -- duplicates ---------------------------------------------------------------------------------------

    def check_duplicates(self) -> None:
        """A uuid names a question, not a row: NeMo Gym's own data renders one question under several
        templates with the same uuid. So a reused uuid is a warning, and only a repeated row (same uuid,
        same prompt) is an error. Only 64-bit hashes are kept, never rows."""
        v = self.v
        here = None
        ph = hash(self.prompt) if self.prompt is not None else None
        repeated_row = False
        if self.uuid is not None:
            h = hash(self.uuid)
            first_where = v._uuids.get(h)
            if first_where is None:
                here = v._where(self.rec)
                v._uuids[h] = here
                if ph is not None:
                    v._uuid_prompts[h] = ph
            else:
                first_ph = v._uuid_prompts.get(h)
                where, _ = v._describe(first_where)
                if ph is not None and ph == first_ph:
                    repeated_row = True
                    self.add(
                        "$.uuid",
                        "duplicate_row",
                        f"this row repeats the row at {where} (same uuid {self.uuid!r}, same prompt); drop "
                        "the copy, or it is trained on twice as often",
                    )
                else:
                    self.add(
                        "$.uuid",
                        "duplicate_uuid",
                        f"uuid {self.uuid!r} is already used by the row at {where} with another prompt; fine "
                        "for template variants of one question, but the uuid no longer identifies a row "
                        "(give each row its own uuid if anything keys on it)",
                    )
        if ph is not None:
            first = v._prompts.get(ph)
            if first is None:
                v._prompts[ph] = here if here is not None else v._where(self.rec)
            elif not repeated_row:
                where, split = v._describe(first)
                leak = ""
                if split and self.rec.split and split != self.rec.split:
                    leak = f" (split {split} vs {self.rec.split}: evaluation leaks into training)"
                self.add(
                    PROMPT_PATH,
                    "duplicate_prompt",
                    f"the same prompt as the row at {where}{leak}; drop one of them unless the repeat is "
                    "intended",
                )


# ------------------------------------------------------------------------------------------- driver

Progress = Callable[..., Any]


@dataclass
class ValidateReport:
    """The result of validate_paths: the shown findings (capped) and the summary."""

    summary: dict[str, Any]
    findings: list[Finding]

    @property
    def ok(self) -> bool:
        return bool(self.summary["ok"])

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    @property
    def more(self) -> int:
        return self.summary["findings_total"] - self.summary["findings_shown"]

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.summary, "findings": [f.to_dict() for f in self.findings]}


@dataclass
class _Source:
    file: Path | str
    split: str | None
    entry: dict[str, Any]


def _plan(paths: Iterable[str | os.PathLike], verify: bool, progress: Progress | None) -> list[_Source]:
    """The files to read (sources.resolve) with the summary entry each one's rows are counted in."""
    from .sources import KIND_PREPARED, KIND_PULLED, KIND_STDIN, resolve

    found = resolve(paths, verify=verify, progress=progress)
    locks = {arg: (lock, verified) for arg, lock, verified in found.locks}
    entries: dict[str, dict[str, Any]] = {}
    out: list[_Source] = []
    for src in found.sources:
        key = src.arg if src.kind in (KIND_PULLED, KIND_PREPARED) else str(src.path)
        entry = entries.get(key)
        if entry is None:
            if src.kind == KIND_PULLED:
                lock, verified = locks[src.arg]
                entry = {
                    "path": src.arg,
                    "kind": "pulled",
                    "rows": 0,
                    "repo": lock["repo"],
                    "repo_type": lock["repo_type"],
                    "commit": lock["commit"],
                    "verified": verified,
                }
            elif src.kind == KIND_PREPARED:
                entry = {"path": src.arg, "kind": "prepared", "rows": 0}
            elif src.kind == KIND_STDIN:
                entry = {"path": "-", "kind": "stdin", "rows": 0, "split": None}
            else:
                kind = "parquet" if Path(src.path).suffix == ".parquet" else "jsonl"
                entry = {"path": str(src.path), "kind": kind, "rows": 0}
            entries[key] = entry
        out.append(_Source(src.path, src.split, entry))
    return out


def validate_paths(
    paths: Iterable[str | os.PathLike],
    *,
    max_findings: int = 50,
    strict: bool = False,
    verify: bool = True,
    progress: Progress | None = None,
    regex_timeout: float = DEFAULT_REGEX_TIMEOUT,
) -> ValidateReport:
    """Validate every row of every input. `max_findings` caps the findings kept (0 keeps all; the summary
    counts all); `strict` turns warnings into errors; `verify=False` skips the pulled-directory hash check;
    `progress` is a bar factory like cli.common.progress (progress(total=, desc=, unit=) -> bar.update)."""
    sources = _plan(paths, verify, progress)
    v = RowValidator(regex_timeout=regex_timeout)
    kept: list[Finding] = []
    total_findings = 0

    def keep(fs: list[Finding]) -> None:
        nonlocal total_findings
        for f in fs:
            total_findings += 1
            if strict and f.severity == WARNING:
                f = Finding(f.file, f.line, f.row, f.path, f.rule, ERROR, f.message, f.uuid)
            if max_findings <= 0 or len(kept) < max_findings:
                kept.append(f)

    total = None
    if sources and all(isinstance(s.file, Path) and s.file.suffix == ".parquet" for s in sources):
        try:
            total = sum(parquet_num_rows(s.file) for s in sources)
        except Exception:  # noqa: BLE001 - a broken footer is reported when the file is read
            total = None
    bar = progress(total=total, desc="validate", unit="row") if progress is not None else None
    try:
        pending = 0
        check = v._check
        with streaming_gc():
            for src in sources:
                try:
                    for rec in iter_file(src.file, split=src.split):
                        src.entry["rows"] += 1
                        fs = check(rec, rec.hint)
                        if fs:
                            keep(fs)
                        pending += 1
                        if pending == 1024 and bar is not None:
                            bar.update(pending)
                            pending = 0
                except InputError as exc:
                    f = Finding(
                        str(src.file),
                        None,
                        None,
                        "$",
                        "unreadable_file",
                        ERROR,
                        f"{exc}; the file was skipped",
                    )
                    v.add([f])
                    keep([f])
        if bar is not None and pending:
            bar.update(pending)
    finally:
        if bar is not None and hasattr(bar, "close"):
            bar.close()
    keep(v.finish())

    summ = v.summary()
    if strict:
        summ["errors"] += summ["warnings"]
        summ["warnings"] = 0
        summ["rows_with_errors"] += summ["rows_with_warnings"]
        summ["rows_with_warnings"] = 0
    inputs: list[dict[str, Any]] = []
    for src in sources:
        if not any(e is src.entry for e in inputs):
            inputs.append(src.entry)
    summary = {
        "report_version": REPORT_VERSION,
        "tool_version": __version__,
        "ok": summ["errors"] == 0,
        "strict": strict,
        **summ,
        "findings_total": total_findings,
        "findings_shown": len(kept),
        "inputs": inputs,
    }
    return ValidateReport(summary, kept)
