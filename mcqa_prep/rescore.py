"""Rescore verify requests and rollouts with the bundled grader: read rows -> grade -> write -> summary.

One output row per input row, in input order. A row that cannot be graded becomes an output row with
reward 0 and status `invalid_row` plus a message; the run goes on. Memory stays flat in the number of
rows (only the optional `--rows` join index and bounded example lists are held).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._perf import streaming_gc
from .errors import InputError
from .grader.request import grade_request
from .io import AtomicFile, dumps_row, iter_file, iter_rows
from .policy import GradingPolicy
from .prompt import prompt_key
from .records import STATUS_INVALID_ROW

# Fields a rollout may lack that its dataset row supplies (NeMo Gym rollouts do not repeat them).
JOIN_FIELDS = ("options", "template_metadata", "grading_mode", "expected_answer", "uuid")


@dataclass
class RowIndex:
    """Dataset rows by prompt, holding only the fields a join needs."""

    rows: dict[bytes, dict[str, Any]] = field(default_factory=dict)
    duplicates: int = 0  # dataset rows whose prompt was already indexed (the first one is used)

    @classmethod
    def build(cls, paths: Iterable[str | Path], progress: Any = None) -> RowIndex:
        """Index the dataset rows of `paths` (files, directories, pulled or prepared directories; each
        verified as every reader verifies it)."""
        from .sources import resolve

        idx = cls()
        for src in resolve(paths, progress=progress, allow_stdin=False).sources:
            for rec in iter_file(src.path, split=src.split):
                if rec.data is None or "options" not in rec.data:
                    continue  # a row without options (e.g. another rollout) cannot complete a join
                key = prompt_key(rec.data.get("responses_create_params"))
                if key is None:
                    continue
                if key in idx.rows:
                    idx.duplicates += 1
                    continue
                idx.rows[key] = {k: rec.data[k] for k in JOIN_FIELDS if k in rec.data}
        return idx


@dataclass
class Bucket:
    count: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, example: str, limit: int) -> None:
        self.count += 1
        if len(self.examples) < limit:
            self.examples.append(example)


@dataclass
class RescoreReport:
    input: str
    output: str
    rows: int = 0
    by_status: Counter = field(default_factory=Counter)
    by_mode: Counter = field(default_factory=Counter)
    reward_sum: float = 0.0
    invalid: Bucket = field(default_factory=Bucket)
    recorded: int = 0  # rows that carried a recorded reward
    unchanged: Bucket = field(default_factory=Bucket)
    up: Bucket = field(default_factory=Bucket)  # 0 -> 1
    down: Bucket = field(default_factory=Bucket)  # 1 -> 0
    joined: int = 0
    join_missing: Bucket = field(default_factory=Bucket)
    index_rows: int | None = None  # prompts in the --rows index
    index_duplicates: int = 0
    input_contracts: Counter = field(default_factory=Counter)
    contract_id: str = ""
    compare: dict[str, Any] | None = None
    format_misses: dict[str, Any] | None = None

    @property
    def changed(self) -> int:
        return self.up.count + self.down.count

    def to_dict(self) -> dict[str, Any]:
        def b(x: Bucket) -> dict[str, Any]:
            return {"count": x.count, "examples": x.examples}

        d: dict[str, Any] = {
            "input": self.input,
            "output": self.output,
            "contract": self.contract_id,
            "rows": self.rows,
            "mean_reward": (self.reward_sum / self.rows) if self.rows else None,
            "by_status": dict(sorted(self.by_status.items())),
            "by_mode": dict(sorted(self.by_mode.items())),
            "invalid_rows": b(self.invalid),
            "join": {
                "joined": self.joined,
                "not_found": b(self.join_missing),
                "dataset_prompts": self.index_rows,
                "dataset_prompt_duplicates": self.index_duplicates,
            },
            "agreement": {
                "recorded": self.recorded,
                "unchanged": b(self.unchanged),
                "0->1": b(self.up),
                "1->0": b(self.down),
            },
            "input_contracts": dict(self.input_contracts),
        }
        if self.compare is not None:
            d["compare_policy"] = self.compare
        if self.format_misses is not None:
            d["compare_mode"] = self.format_misses
        return d


def _row_id(row: Mapping[str, Any] | None, file: str, line: int) -> str:
    if row is not None:
        for key in ("uuid", "id"):
            v = row.get(key)
            if isinstance(v, (str, int)) and not isinstance(v, bool):
                return str(v)
    return f"{Path(file).name}:{line}"


def _as_reward(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def _type_problem(row: Mapping[str, Any]) -> str | None:
    """Why a row cannot be graded at all (None when it can)."""
    if "response" not in row or row["response"] is None:
        return "row has no `response`: a verify request or rollout needs the model's Responses API response"
    if not isinstance(row["response"], Mapping):
        return f"`response` must be a Responses API object, got {type(row['response']).__name__}"
    if "options" not in row:
        return (
            "row has no `options`: NeMo Gym rollouts do not repeat them; pass --rows DATASET to join each "
            "rollout with its dataset row"
        )
    if not isinstance(row["options"], list):
        return f"`options` must be a list of {{letter: text}} objects, got {type(row['options']).__name__}"
    ea = row.get("expected_answer")
    if ea is not None and not isinstance(ea, str):  # a null gold is graded (reward 0), as NeMo Gym does
        return f"`expected_answer` must be a string letter, got {type(ea).__name__}"
    return None


def rescore(
    input_path: str | Path,
    output_path: str | Path,
    policy: GradingPolicy,
    *,
    rows_paths: Iterable[str | Path] | None = None,
    examples: int = 5,
    explain: bool = False,
    compare_policy: GradingPolicy | None = None,
    compare_mode: str | None = None,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> RescoreReport:
    """Grade every row of `input_path`, write rescored rows to `output_path` atomically, return counts."""
    index = RowIndex.build(rows_paths) if rows_paths else None
    if str(input_path) != "-" and not Path(input_path).is_file():
        raise InputError(f"{input_path}: no such file")
    report = RescoreReport(str(input_path), str(output_path), contract_id=policy.contract_id())
    if index is not None:
        report.index_rows, report.index_duplicates = len(index.rows), index.duplicates
    cmp_state = _CompareState(compare_policy, examples) if compare_policy is not None else None
    miss_state = _FormatMisses(compare_mode, policy, examples) if compare_mode else None

    records = iter_rows([input_path])
    if progress is not None:
        records = progress(records)
    with AtomicFile(output_path) as out, streaming_gc():
        for rec in records:
            report.rows += 1
            row = rec.data
            rid = _row_id(row, rec.file, rec.line)
            if row is None:
                out_row = {"reward": 0.0, "extracted_answer": None, "metadata": {}}
                _invalid(out_row, report, rid, f"{rec.file}:{rec.line}: {rec.error}", examples, line=rec.line)
                out.write(dumps_row(out_row) + "\n")
                continue

            graded = row
            if index is not None:
                graded, joined = _join(row, index)
                if joined:
                    report.joined += 1
                elif "options" not in row:
                    report.join_missing.add(rid, examples)

            prev_reward = _as_reward(row.get("reward"))
            prev_extracted = row.get("extracted_answer") if "extracted_answer" in row else None
            meta = row.get("metadata")
            if isinstance(meta, Mapping):
                old = meta.get("grading")
                if isinstance(old, Mapping) and isinstance(old.get("contract"), str):
                    report.input_contracts[old["contract"]] += 1

            out_row = dict(row)
            problem = _type_problem(graded)
            if problem is not None:
                out_row["reward"] = 0.0
                out_row["extracted_answer"] = None
                _invalid(out_row, report, rid, problem, examples, prev_reward, prev_extracted, row)
                out.write(dumps_row(out_row) + "\n")
                continue

            result, prov = grade_request(graded, policy)
            out_row["reward"] = result.reward
            out_row["extracted_answer"] = result.extracted_answer
            out_row["expected_answer"] = result.expected_answer
            grading: dict[str, Any] = {
                "status": result.status,
                "mode": result.mode,
                "rule": result.rule,
                "grader_version": result.grader_version,
            }
            if result.message:
                grading["message"] = result.message
            if result.validity:
                grading["validity"] = result.validity
            tm = graded.get("template_metadata")
            if isinstance(tm, Mapping) and isinstance(tm.get("template_id"), str):
                grading["template_id"] = tm["template_id"]
            grading.update(prov)
            if explain:
                ex = result.to_dict(explain=True)
                grading["explain"] = {"span": ex["span"], "candidates": ex["candidates"]}
            if prev_reward is not None or "extracted_answer" in row:
                grading["previous_reward"] = prev_reward
                grading["previous_extracted_answer"] = prev_extracted
                grading["changed"] = prev_reward is not None and prev_reward != result.reward
            if prev_reward is not None:
                report.recorded += 1
                if prev_reward == result.reward:
                    report.unchanged.add(rid, examples)
                elif result.reward > prev_reward:
                    report.up.add(rid, examples)
                else:
                    report.down.add(rid, examples)
            if cmp_state is not None:
                grading["compare_policy"] = cmp_state.add(graded, result, rid)
            if miss_state is not None:
                grading["compare_mode"] = miss_state.add(graded, result, rid)
            report.by_status[result.status] += 1
            report.by_mode[result.mode] += 1
            report.reward_sum += result.reward
            out_row["metadata"] = _with_grading(row.get("metadata"), grading)
            out.write(dumps_row(out_row) + "\n")

    if cmp_state is not None:
        report.compare = cmp_state.to_dict()
    if miss_state is not None:
        report.format_misses = miss_state.to_dict()
    return report


def _with_grading(meta: Any, grading: dict[str, Any]) -> dict[str, Any]:
    out = dict(meta) if isinstance(meta, Mapping) else ({} if meta is None else {"original": meta})
    out["grading"] = grading
    return out


def _invalid(
    out_row: dict[str, Any],
    report: RescoreReport,
    rid: str,
    message: str,
    examples: int,
    prev_reward: float | None = None,
    prev_extracted: Any = None,
    row: Mapping[str, Any] | None = None,
    line: int | None = None,
) -> None:
    from .grader import GRADER_VERSION

    grading: dict[str, Any] = {
        "status": STATUS_INVALID_ROW,
        "mode": None,
        "rule": None,
        "grader_version": GRADER_VERSION,
        "message": message,
        "contract": report.contract_id,
    }
    if line is not None:
        grading["line"] = line
    if row is not None and (prev_reward is not None or "extracted_answer" in row):
        grading["previous_reward"] = prev_reward
        grading["previous_extracted_answer"] = prev_extracted
        grading["changed"] = prev_reward is not None and prev_reward != 0.0
    out_row["metadata"] = _with_grading(row.get("metadata") if row is not None else None, grading)
    report.by_status[STATUS_INVALID_ROW] += 1
    report.invalid.add(rid, examples)
    if prev_reward is not None:
        report.recorded += 1
        (report.unchanged if prev_reward == 0.0 else report.down).add(rid, examples)


def _join(row: Mapping[str, Any], index: RowIndex) -> tuple[Mapping[str, Any], bool]:
    """The row completed with its dataset row's grading fields (the rollout's own fields win)."""
    key = prompt_key(row.get("responses_create_params"))
    ds = index.rows.get(key) if key else None
    if ds is None:
        return row, False
    merged = dict(row)
    for k, v in ds.items():
        if k not in merged or merged[k] is None:
            merged[k] = v
    return merged, True


class _CompareState:
    """Grades every row under a second policy and collects the rows whose reward differs."""

    def __init__(self, policy: GradingPolicy, examples: int):
        self.policy = policy
        self.examples = examples
        self.same = 0
        self.buckets: dict[str, Bucket] = {}

    def add(self, row: Mapping[str, Any], primary, rid: str) -> dict[str, Any]:
        other, prov = grade_request(row, self.policy)
        if other.reward == primary.reward:
            self.same += 1
        else:
            key = f"{primary.reward:g}->{other.reward:g}"
            self.buckets.setdefault(key, Bucket()).add(rid, self.examples)
        return {
            "contract": prov.get("contract"),
            "reward": other.reward,
            "extracted_answer": other.extracted_answer,
            "status": other.status,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "contract": self.policy.contract_id(),
            "same": self.same,
            "differ": {
                k: {"count": b.count, "examples": b.examples} for k, b in sorted(self.buckets.items())
            },
        }


class _FormatMisses:
    """Rows where the configured mode gave 0 but `mode` reads the gold letter: the model answered right
    in a format the template's grader does not accept. Counted per template_id."""

    def __init__(self, mode: str, policy: GradingPolicy, examples: int):
        self.mode = mode
        # same selection settings as the primary policy, only the mode differs
        self.policy = policy.with_overrides(grading_mode_override=mode)
        self.examples = examples
        self.total = 0
        self.per_template: dict[str, Bucket] = {}
        self.rows_per_template: Counter = Counter()

    def add(self, row: Mapping[str, Any], primary, rid: str) -> dict[str, Any]:
        tm = row.get("template_metadata")
        tid = tm.get("template_id") if isinstance(tm, Mapping) else None
        tid = tid if isinstance(tid, str) else "(none)"
        self.rows_per_template[tid] += 1
        other, _ = grade_request(row, self.policy)
        miss = primary.reward == 0.0 and other.reward == 1.0
        if miss:
            self.total += 1
            self.per_template.setdefault(tid, Bucket()).add(rid, self.examples)
        return {
            "mode": self.mode,
            "extracted_answer": other.extracted_answer,
            "status": other.status,
            "format_miss": miss,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "format_misses": self.total,
            "per_template": {
                t: {"rows": self.rows_per_template[t], "format_misses": b.count, "examples": b.examples}
                for t, b in sorted(self.per_template.items(), key=lambda kv: -kv[1].count)
            },
        }


__all__ = ["rescore", "RescoreReport", "RowIndex", "prompt_key"]
