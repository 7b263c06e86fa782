"""The rescored part of a report: tallies of rows that carry `metadata.grading` (what `rescore` writes),
one tally per grading contract (numbers from different grading semantics are never pooled).

Per row: reward and status per template and per mode, the recorded-vs-rescored agreement cell with example
ids, format misses per template (`--compare-mode` data), reward per response-length bin, and the prompt's
pass count. Everything is bounded except the per-prompt pass counts, which keep one 8-byte key and one
packed int per distinct prompt (as `summarize` does, with smaller keys).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..counts import Tally, is_graded
from ..evidence import RATE_BINS, model_of, passed, rate_bin
from ..fields import NONE, recorded_reward, reward_of, template_id
from ..prompt import prompt_key
from ..records import Row, display_name
from ..rescore.rows import row_id
from .bins import LENGTH_EDGES, Examples, Histogram, length_bin

NO_MODE = "(not graded)"
TEMPLATE_CAP = 500
MODE_CAP = 64
STATUS_CAP = 64
VERSION_CAP = 16
UNCAPPED = 1 << 62  # a chunk's part keeps every group: the merge caps them in input order
OTHER_TEMPLATES = "(other templates)"
OTHER_MODES = "(other modes)"
MODEL_CAP = 50  # models with their own per-prompt pass rates; the rest pooled as OTHER_MODELS (and said so)
NO_MODEL = "(model not named)"
OTHER_MODELS = "(other models)"
RECORDED = ("0", "1", "other", "not recorded")  # agreement matrix rows: the reward recorded at training
RESCORED = ("0", "1", "other")  # columns: the reward this grader gives
_COUNT_BITS = 32


def reward_bucket(v: Any) -> str:
    r = reward_of(v)
    return "1" if r == 1 else "0" if r == 0 else "other"


class Group:
    """Rows, reward sum and statuses of one template or one mode."""

    __slots__ = ("rows", "graded", "reward_sum", "statuses")

    def __init__(self) -> None:
        self.rows = 0
        self.graded = 0
        self.reward_sum = 0.0
        self.statuses: Counter = Counter()

    def add(self, status: str, reward: float | None) -> None:
        self.rows += 1
        self.statuses[status] += 1
        if reward is not None:
            self.graded += 1
            self.reward_sum += reward

    @property
    def mean(self) -> float | None:
        return round(self.reward_sum / self.graded, 4) if self.graded else None


class Misses:
    __slots__ = ("rows", "misses")

    def __init__(self, examples: int) -> None:
        self.rows = 0
        self.misses = Examples(examples)


class RescoredTally:
    """Everything a rescored section shows, for the rows of one contract."""

    def __init__(self, *, examples: int = 5, part: bool = False) -> None:
        """`part`: one chunk's share (report/chunked.py): no group capped, so that the parts merge in input
        order (`merge.merge_rescored`) into exactly the capped tally of one pass."""
        self.examples = examples
        # caps: templates, modes, statuses, grader versions, models
        self.caps = (UNCAPPED,) * 5 if part else (TEMPLATE_CAP, MODE_CAP, STATUS_CAP, VERSION_CAP, MODEL_CAP)
        self.tally = (
            Tally()
        )  # rows, graded, invalid, mean reward, changed: counts.py, as every command counts
        self.statuses: Counter = Counter()
        self.templates: dict[str, Group] = {}
        self.modes: dict[str, Group] = {}
        self.agreement: dict[tuple[str, str], Examples] = {}
        self.compare_modes: Counter = Counter()
        self.misses: dict[str, Misses] = {}
        self.response_chars = Histogram(len(LENGTH_EDGES))
        self.prompts: dict[str, dict[int, int]] = {}  # model -> 8-byte prompt key -> (rows << 32) | passes
        self.files: Counter = Counter()
        self.grader_versions: Counter = Counter()

    def add(self, rec: Row, grading: Mapping[str, Any]) -> None:
        d = rec.data or {}
        self.files[display_name(rec.file)] += 1
        status = grading.get("status")
        status = status if isinstance(status, str) else "(unknown)"
        if len(self.statuses) < self.caps[2] or status in self.statuses:
            self.statuses[status] += 1
        gv = grading.get("grader_version")
        if isinstance(gv, str) and (gv in self.grader_versions or len(self.grader_versions) < self.caps[3]):
            self.grader_versions[gv] += 1
        reward: Any = d.get("reward")
        # invalid rows were not graded: counted in the statuses, never in a mean reward nor as a change
        r = recorded_reward(d) if is_graded(status) else None
        graded = r is not None
        if graded or not is_graded(status):
            self.tally.add(status, r or 0.0, reward_of(grading.get("previous_reward")))
        tid = template_id(d, grading) or NONE
        mode = grading.get("mode")
        mode = mode if isinstance(mode, str) and mode else NO_MODE
        group(self.templates, tid, self.caps[0], OTHER_TEMPLATES).add(status, r)
        group(self.modes, mode, self.caps[1], OTHER_MODES).add(status, r)
        rid = row_id(d, rec.file, rec.line)
        if graded:
            self._agreement(grading, reward, rid)
        self._compare(grading, tid, rid)
        if r is not None:
            chars = grading.get("response_chars")
            if isinstance(chars, int) and not isinstance(chars, bool) and chars >= 0:
                self.response_chars.add(length_bin(chars), chars, r)
            self._prompt(d, r)

    @property
    def rows(self) -> int:
        return self.tally.scored

    @property
    def graded(self) -> int:
        return self.tally.graded

    def _agreement(self, grading: Mapping[str, Any], reward: Any, rid: str) -> None:
        prev = grading.get("previous_reward")  # absent or null: the input row recorded no readable reward
        recorded = "not recorded" if prev is None else reward_bucket(prev)
        cell = (recorded, reward_bucket(reward))
        ex = self.agreement.get(cell)
        if ex is None:
            ex = self.agreement[cell] = Examples(self.examples)
        ex.add(rid)

    def misses_of(self, tid: str) -> Misses:
        """The format-miss tally of template `tid`, or of the templates past the cap once it is reached."""
        m = self.misses.get(tid)
        if m is None:
            if len(self.misses) >= self.caps[0]:
                tid = OTHER_TEMPLATES
                m = self.misses.get(tid)
            if m is None:
                m = self.misses[tid] = Misses(self.examples)
        return m

    def _compare(self, grading: Mapping[str, Any], tid: str, rid: str) -> None:
        cm = grading.get("compare_mode")
        if not isinstance(cm, Mapping) or not isinstance(cm.get("format_miss"), bool):
            return
        mode = cm.get("mode")
        self.compare_modes[str(mode)] += 1
        m = self.misses_of(tid)
        m.rows += 1
        if cm["format_miss"]:
            m.misses.add(rid)

    def _prompt(self, d: Mapping[str, Any], reward: float) -> None:
        key = prompt_key(d.get("responses_create_params"))
        if key is None:
            return
        model = model_of(d) or NO_MODEL
        per = self.prompts.get(model)
        if per is None:
            if len(self.prompts) >= self.caps[4]:
                model = OTHER_MODELS
            per = self.prompts.setdefault(model, {})
        k = int.from_bytes(key[:8], "little")
        per[k] = per.get(k, 0) + (1 << _COUNT_BITS) + (1 if passed(reward) else 0)

    def pass_rates(self) -> dict[str, Any]:
        """Per model (a pass rate is about one model: never pooled across models), per prompt: 0 / partial / 1
        counts, a histogram of pass rates, and samples per prompt."""
        by_model = {m: _prompt_rates(per) for m, per in sorted(self.prompts.items())}
        return {
            "models": len(by_model),
            "prompts": sum(r["prompts"] for r in by_model.values()),
            "by_model": by_model,
        }


def _prompt_rates(prompts: Mapping[int, int]) -> dict[str, Any]:
    hist = Histogram(len(RATE_BINS))
    samples: Counter = Counter()
    mask = (1 << _COUNT_BITS) - 1
    for packed in prompts.values():
        n, passes = packed >> _COUNT_BITS, packed & mask
        hist.add(rate_bin(passes, n), passes / n)
        samples[min(n, 17)] += 1
    zero, full = hist.counts[0], hist.counts[-1]
    return {
        "prompts": hist.total,
        "zero": zero,
        "partial": hist.total - zero - full,
        "one": full,
        "histogram": list(hist.counts),
        "mean_pass_rate": hist.stats()["mean"],
        "samples_per_prompt": {("17+" if k == 17 else str(k)): v for k, v in sorted(samples.items())},
    }


def group(groups: dict[str, Group], key: str, cap: int, other: str) -> Group:
    g = groups.get(key)
    if g is None:
        if len(groups) >= cap:
            key = other
            g = groups.get(key)
        if g is None:
            g = groups[key] = Group()
    return g
