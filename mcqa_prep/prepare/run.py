"""`prepare`: read -> validate -> stamp -> route to a shard or to the rejects -> commit, with cache rules.

Why this shape (docs/design/prepare.md has the full story):
- Inputs are hashed before any row is read, so an up-to-date or stale output directory is recognised
  without parsing data (accept.decide).
- Everything is written into a staging directory beside the output and put into place at the end
  (io.staging), so the output directory is always either the previous preparation or a complete new one;
  manifest.json is written last, and a directory without a valid one is never trusted.
- Shards are hashed while they are written (io.shards), never re-read.
- Every row read is written or rejected with its findings; nothing is committed when no row is written.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..audit.decontaminate import DROP_REASON as DROP_CONTAMINATED
from ..audit.decontaminate import Decontamination, DecontaminationRequest
from ..audit.decontaminate import Tally as DecontaminationTally
from ..convert.orders import PermuteSpec
from ..errors import InputError, UsageError
from ..findings import FindingGroups, keep_first
from ..io.hashing import Stamp, check_unchanged, sha256_file, stamp
from ..io.paths import check_output, is_data_path
from ..io.shards import HashingWriter, SplitWriter
from ..io.staging import commit, crash_point, staging_dir
from ..io.writers import row_line
from ..passrates.difficulty import Difficulty, DifficultyRequest, EvidenceTally
from ..policy import GradingPolicy
from ..prepared import manifest as mf
from ..progress import Progress
from ..records import Finding, Row, display_name
from ..runs import RunRequest
from ..runtimes import RUNTIMES, policy_blockers, runtimes_record
from ..sources import KIND_PULLED, Source, resolve
from .permute import Permuter, PermuteTally, settings_of
from .repairs import RepairTally, invalid_rows
from .report import PrepareReport
from .rows import Outcome, RowWork, Stamper, normalise_options
from .stream import rows_job, run_rows

__all__ = ["prepare", "PrepareReport", "normalise_options", "DEFAULT_SHARD_ROWS"]

DEFAULT_SHARD_ROWS = 100_000
ON_INVALID = ("fail", "reject")
# Phases at which MCQA_PREP_TEST_CRASH_AT makes the process die (os._exit) so tests can prove atomicity.
CRASH_PHASES = ("staging", "rows", "shards", "manifest", "swap", "cleanup")
FINDINGS_KEPT = 50  # findings kept in a report (counts by rule are always complete)


# ---- step 0: arguments and inputs -------------------------------------------------------------------------


def _settings(
    split: str | None,
    shard_rows: int,
    output_format: str,
    on_invalid: str,
    runtime: str | None = None,
    repair_regexes: bool = False,
    permute: dict[str, Any] | None = None,
) -> dict[str, Any]:
    if shard_rows < 1:
        raise UsageError(f"shard_rows must be at least 1, got {shard_rows}")
    if output_format not in mf.OUTPUT_FORMATS:
        raise UsageError(
            f"output_format must be one of {', '.join(mf.OUTPUT_FORMATS)}, got {output_format!r}"
        )
    if on_invalid not in ON_INVALID:
        raise UsageError(f"on_invalid must be one of {', '.join(ON_INVALID)}, got {on_invalid!r}")
    if split is not None and not mf.SPLIT_NAME.match(split):
        raise UsageError(
            f"split {split!r}: a split name is letters, digits, '_' and '.'", reason="bad_split_name"
        )
    out: dict[str, Any] = {
        "split": split,
        "shard_rows": shard_rows,
        "output_format": output_format,
        "on_invalid": on_invalid,
    }
    if runtime is not None:  # only when asked: preparations made without it keep their settings
        if runtime not in RUNTIMES:
            raise UsageError(f"runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}")
        out["runtime"] = runtime
    if repair_regexes:  # likewise: a preparation made without it keeps its settings (and stays up to date)
        out["repair_regexes"] = True
    if permute is not None:  # likewise (prepare/permute.py)
        out["permute"] = permute
    return out


def check_runtime(policy: GradingPolicy, runtime: str | None) -> None:
    """A contract the requested runtime cannot honour is refused before any row is read, naming the settings."""
    if runtime is None:
        return
    blockers = policy_blockers(policy)
    if blockers:
        raise UsageError(
            "stock NeMo Gym 0.7.0 cannot honour this grading contract: "
            + "; ".join(b.render() for b in blockers)
            + " (mcqa-prep serve grades it at verify time)",
            reason="runtime_nemo_gym",
            blockers=[b.to_dict() for b in blockers],
        )


def resolve_inputs(
    inputs: Iterable[str | os.PathLike],
    *,
    split: str | None = None,
    progress: Progress | None = None,
    verify: bool = True,
) -> tuple[list[Source], list[dict[str, Any]], dict[str, Stamp]]:
    """Data files to read, their provenance records (a verified pull lock for a pulled directory, the sha256
    of every other file: a pulled directory read without verification included, its bytes recorded as what
    they are, with no repo/commit claim) and the stamps of the hashed files, taken before they were hashed
    (compared once the rows are read: io.hashing.check_unchanged). Runs before any row is read."""
    why = "prepare hashes its inputs, then reads their rows"
    found = resolve(inputs, split=split, verify=verify, progress=progress, allow_stdin=False, reread=why)
    prov: list[dict[str, Any]] = []
    for arg, lock, verified in found.locks:
        if verified:
            prov.append(_pulled_provenance(arg, lock, split))
    plain = [s for s in found.sources if s.kind != KIND_PULLED or s.pulled is None]
    for s in plain:
        if not is_data_path(s.path):
            raise InputError(f"{s.path}: unsupported input (expected .jsonl, .parquet or a directory)")
    stamps = {str(s.path): stamp(s.path) for s in plain}
    prov.extend(_hash_files(plain, progress))
    for s in found.sources:
        if not mf.SPLIT_NAME.match(s.split):
            raise UsageError(f"{s.path}: split {s.split!r} cannot name shards", reason="bad_split_name")
    if not found.sources:
        raise InputError("no input files", reason="no_rows")
    return found.sources, prov, stamps


def _pulled_provenance(arg: str, lock: dict[str, Any], split: str | None) -> dict[str, Any]:
    keys = ("path", "split", "hash_kind", "hash", "size")
    return {
        "kind": "pulled",
        "path": display_name(arg),
        "repo": lock["repo"],
        "repo_type": lock["repo_type"],
        "commit": lock["commit"],
        "requested_revision": lock["requested_revision"],
        "license": lock.get("license"),  # the dataset card's (gym-component writes it into NeMo Gym's config)
        "splits": [split] if split else None,
        "files": [{k: f[k] for k in keys} for f in lock["files"]],
    }


def _hash_files(sources: list[Source], progress: Progress | None) -> list[dict[str, Any]]:
    if not sources:
        return []
    total = sum(Path(s.path).stat().st_size for s in sources)
    bar = progress(total=total, desc="hash inputs", unit="B") if progress is not None else None
    out = []
    try:
        for s in sources:
            digest, size, _ = sha256_file(s.path, bar.update if bar is not None else None)
            out.append(
                {
                    "kind": "file",
                    "path": display_name(s.path),
                    "name": display_name(s.name),
                    "split": s.split,
                    "sha256": digest,
                    "bytes": size,
                }
            )
    finally:
        if bar is not None:
            bar.close()
    return out


def _existing_output(out: Path, overwrite: bool) -> bool:
    """Whether out holds something; refuses a file, and a foreign directory that --overwrite would destroy."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory", reason="output_not_directory")
    existing = out.is_dir() and any(out.iterdir())
    if existing and overwrite and not mf.looks_prepared(out):
        raise UsageError(
            f"{out}: holds files that a preparation does not write; refusing to replace it",
            reason="foreign_directory",
        )
    return existing


# ---- step 4: route --------------------------------------------------------------------------------------


class Router:
    """Sends each row's outcome to its split's shards or to the rejects file, and counts everything."""

    def __init__(
        self,
        staging: Path,
        settings: dict[str, Any],
        difficulty: Difficulty | None = None,
        decontamination: Any = None,
        findings_kept: int = FINDINGS_KEPT,  # findings listed (0: all); the groups count every one
    ):
        self.staging = staging
        self.findings_kept = findings_kept  # 0: every finding
        self.groups = FindingGroups()  # every finding, by severity, rule and template
        self.settings = settings
        self.difficulty = difficulty
        self.decontamination = decontamination
        self.decontaminated = DecontaminationTally()
        self.evidence = EvidenceTally()
        self.dropped: Counter[str] = Counter()
        self.fail_on_invalid = settings["on_invalid"] == "fail"
        self.writers: dict[str, SplitWriter] = {}
        self.rejects = HashingWriter(staging / mf.REJECTS_NAME)
        self.read = self.written = self.rejected = self.warned = 0
        self.rej_rules: Counter[str] = Counter()
        self.warn_rules: Counter[str] = Counter()
        self.warnings: list[Finding] = []
        self.errors: list[Finding] = []
        self._first_shard = False
        self.gym_refused = 0  # written rows stock NeMo Gym 0.7.0 would refuse
        self.gym_first: str | None = None
        self.repairs = RepairTally(bool(settings.get("repair_regexes")))
        self.permutation = PermuteTally(settings.get("permute"))

    def _shard_closed(self) -> None:
        if not self._first_shard:
            self._first_shard = True
            crash_point("rows")

    def route(self, rec: Row, src: Source, outcome: Outcome, in_run: bool = False) -> None:
        """Count the row, and write it to its shard or the rejects. `in_run`: a written row whose line the
        caller writes with the lines around it (write_run)."""
        self.read += 1
        self.groups.add([*outcome.errors, *outcome.warnings])
        if outcome.warnings:
            self.warned += 1
            self.warn_rules.update({f.rule for f in outcome.warnings})
            keep_first(self.warnings, outcome.warnings, self.findings_kept)
        if outcome.contaminated is not None:  # neither written nor rejected: dropped, with its reason
            self.dropped[DROP_CONTAMINATED] += 1
            self.decontaminated.add(f"{display_name(rec.file)}:{rec.line}", outcome.contaminated)
            return
        if outcome.verdict is not None:
            self.evidence.add(outcome.verdict)
            if outcome.verdict.dropped is not None:  # neither written nor rejected: counted by reason
                self.dropped[outcome.verdict.dropped] += 1
                return
        if outcome.line is None:
            self.rejected += 1
            self.repairs.rejected(outcome)
            self.rej_rules.update({f.rule for f in outcome.errors})
            keep_first(self.errors, outcome.errors, self.findings_kept)
            if not self.fail_on_invalid:
                self.rejects.write_line(_reject_line(rec, src, outcome.errors))
            return
        if self.fail_on_invalid and self.rejected:
            return  # nothing will be committed: stop writing, keep counting
        if outcome.variants is not None:  # the row's option orders, one line each
            self._writer(src.split).write_run(memoryview(outcome.line), outcome.variants.sizes)
            self.written += len(outcome.variants.sizes)
            self.permutation.add(outcome.variants)
        else:
            if not in_run:
                self._writer(src.split).write(outcome.line)
            self.written += 1
        self.repairs.written(outcome)

    def gym(self, problems: dict[int, str]) -> None:
        """Count written rows stock NeMo Gym would refuse (position in the chunk -> why), in input order."""
        for i in sorted(problems):
            self.gym_refused += 1
            if self.gym_first is None:
                self.gym_first = problems[i]

    def count_clean(self, rows: int) -> None:
        """route() for rows with no finding, no verdict and no repair: counted; their lines are written, with
        those of the rows routed `in_run` around them, by write_run."""
        self.read += rows
        if not (self.fail_on_invalid and self.rejected):
            self.written += rows

    def write_run(self, src: Source, data: memoryview, sizes: list[int]) -> None:
        """The lines of a run of rows written as they are (count_clean, route(in_run=True)), in order."""
        if sizes and not (self.fail_on_invalid and self.rejected):
            self._writer(src.split).write_run(data, sizes)

    def _writer(self, split: str) -> SplitWriter:
        w = self.writers.get(split)
        if w is None:
            fmt, rows = self.settings["output_format"], self.settings["shard_rows"]
            w = self.writers[split] = SplitWriter(self.staging, split, rows, fmt, self._shard_closed)
        return w

    def add_warnings(self, findings: list[Finding]) -> None:
        """Whole-input warnings (answer position bias)."""
        for f in findings:
            self.warn_rules[f.rule] += 1
        self.groups.add(findings)
        keep_first(self.warnings, findings, self.findings_kept)

    def counts(self) -> dict[str, Any]:
        out = {
            "read": self.read,
            "written": self.written,
            "rejected": self.rejected,
            "rows_with_warnings": self.warned,
            "rejected_by_rule": dict(sorted(self.rej_rules.items())),
            "warnings_by_rule": dict(sorted(self.warn_rules.items())),
        }
        if (
            self.difficulty is not None and self.difficulty.filter is not None
        ) or self.decontamination is not None:
            out["dropped"] = sum(self.dropped.values())
            out["dropped_by_reason"] = dict(sorted(self.dropped.items()))
        out.update(self.repairs.counts())
        out.update(self.permutation.counts())
        return out


def _source_of(src: Source) -> dict[str, Any]:
    return dict(src.pulled) if src.pulled else {"file": display_name(src.path)}


def _reject_line(rec: Row, src: Source, errs: list[Finding]) -> bytes:
    doc: dict[str, Any] = {
        "source": {**_source_of(src), "row": rec.line},
        "findings": [f.to_dict() for f in errs],
        "row": rec.data,
    }
    if rec.error:
        doc["error"] = rec.error
    try:
        return row_line(doc)
    except (TypeError, ValueError):
        doc["row"] = None  # the row itself is not JSON (NaN, ...): keep its address and findings
        return row_line(doc)


# ---- step 5: commit -------------------------------------------------------------------------------------


def _finish(router: Router, policy: GradingPolicy, prov: list[dict[str, Any]]) -> dict[str, Any]:
    """Close every file, build the manifest (files, splits, counts) and write it last."""
    counts = router.counts()
    if router.fail_on_invalid and router.rejected:
        raise invalid_rows(router.errors, counts, router.repairs, router.groups.to_list())
    extra: dict[str, Any] = {"runtimes": runtimes_record(policy, router.gym_refused, router.gym_first)}
    if router.repairs.applied:
        extra["repairs"] = router.repairs.listed()
    if router.difficulty is not None:
        extra["difficulty"] = router.difficulty.section(router.evidence)
    if router.decontamination is not None:
        extra["decontamination"] = router.decontamination.section(router.decontaminated)
    if router.written == 0:
        by_rate = sum(n for r, n in router.dropped.items() if r != DROP_CONTAMINATED)
        dropped = f", {by_rate} dropped by pass rate" if by_rate else ""
        if router.dropped.get(DROP_CONTAMINATED):
            dropped += f", {router.dropped[DROP_CONTAMINATED]} dropped as contaminated"
        raise InputError(
            f"no row was written ({router.read} read, {router.rejected} rejected{dropped}): an empty "
            "preparation is not a dataset",
            reason="nothing_written" if router.read else "no_rows",
            counts=counts,
            finding_groups=router.groups.to_list(),
        )
    files: list[dict[str, Any]] = []
    splits: dict[str, dict[str, int]] = {}
    for sp, w in router.writers.items():
        shards = w.finish()
        splits[sp] = {"rows": sum(s.rows for s in shards), "shards": len(shards)}
        files.extend(s.entry() for s in shards)
    router.rejects.close()
    files.append(
        {
            "path": mf.REJECTS_NAME,
            "kind": "rejects",
            "split": None,
            "format": "jsonl",
            "sha256": router.rejects.sha256,
            "rows": router.rejects.rows,
            "bytes": router.rejects.bytes,
        }
    )
    crash_point("shards")
    doc = mf.build(
        policy=policy,
        settings=router.settings,
        inputs=prov,
        files=files,
        splits=splits,
        counts=counts,
        extra=extra,
    )
    mf.write(router.staging, doc)
    crash_point("manifest")
    return doc


# ---- the workflow ---------------------------------------------------------------------------------------


def prepare(
    inputs: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    policy: GradingPolicy | None = None,
    *,
    split: str | None = None,
    shard_rows: int = DEFAULT_SHARD_ROWS,
    output_format: str = "jsonl",
    on_invalid: str = "fail",
    overwrite: bool = False,
    regex_timeout: float | None = None,
    progress: Progress | None = None,
    verify: bool = True,
    difficulty: DifficultyRequest | None = None,
    workers: int | None = 1,
    runtime: str | None = None,
    repair_regexes: bool = False,
    decontaminate: DecontaminationRequest | None = None,
    permute: PermuteSpec | None = None,
    findings_kept: int = FINDINGS_KEPT,
    run: RunRequest | None = None,
) -> PrepareReport:
    """Prepare INPUTS into out_dir (see module docstring); raises StaleCache, InvalidRows, InputError, ...

    `difficulty` filters rows by measured pass rate and/or stamps measured reward_profiles (difficulty.py);
    its table is checked (version, hash, contract = this preparation's) before any row is read.
    `decontaminate` drops the rows that hold a question of its benchmark files (audit/decontaminate.py),
    read and indexed before any row is read. `workers` processes validate and serialise chunks of the input
    (None: every core); the output is the same for any number. `runtime` ("nemo-gym"): refuse a contract stock NeMo Gym 0.7.0 cannot honour (UsageError,
    before any row is read) and reject each row its request model would refuse; without it, the manifest's
    `runtimes` record says whether NeMo Gym can honour the preparation. `repair_regexes`: a row whose
    output_regex the regex audit errs on (rule regex_audit) and can fix is written with the fix in its place
    and the original in its stamp (prepare/repairs.py); without it such a row is invalid, and the failure
    counts the rows the repair would fix. `permute`: each valid row is written as its option orders, each a
    complete row checked by every row rule (prepare/permute.py); recorded as `settings.permute`. `run`
    (runs.RunRequest), when given, says how the rows are run instead of `workers` (workers, engine, resume)."""
    t0 = time.monotonic()
    policy = policy or GradingPolicy()
    policy.check()
    if not inputs:
        raise UsageError("prepare needs at least one input")
    settings = _settings(
        split, shard_rows, output_format, on_invalid, runtime, repair_regexes, settings_of(permute)
    )
    check_runtime(policy, runtime)
    out = Path(out_dir)
    existing = _existing_output(out, overwrite)
    sources, prov, stamps = resolve_inputs(inputs, split=split, progress=progress, verify=verify)
    check_output(out, inputs)
    judge = Difficulty.load(difficulty, policy, inputs, progress)
    deco = Decontamination.load(decontaminate, inputs, progress)

    if existing and not overwrite:
        return _up_to_date(out, policy, prov, settings, judge, deco, progress, t0)

    from ..validate import RowValidator

    validator = RowValidator(regex_timeout=regex_timeout) if regex_timeout is not None else RowValidator()
    permuter = Permuter(permute, validator.checker) if permute is not None else None
    stamper = Stamper(policy, output_format, runtime, permuter)
    work = RowWork(validator.checker, stamper, judge, repair_regexes, deco)
    job = rows_job(sources, work, [_source_of(s) for s in sources], out, policy, settings, prov)
    run = run or RunRequest(tuple(str(s.path) for s in sources), out, workers)
    with staging_dir(out) as staging:
        crash_point("staging")
        router = Router(staging, settings, judge, deco, findings_kept)
        run_rows(sources, validator, job, router, progress, run)
        check_unchanged(stamps)
        router.add_warnings(validator.finish())
        doc = _finish(router, policy, prov)
        commit(staging, out, replace=existing)
    return PrepareReport(
        str(out),
        "overwritten" if existing else "written",
        doc["contract_id"],
        doc["counts"],
        doc["splits"],
        doc["files"],
        router.warnings,
        router.errors,
        time.monotonic() - t0,
        router.groups.to_list(),
        doc.get("difficulty"),
        doc.get("runtimes"),
        doc.get("repairs"),
        router.repairs.repairable(),
        doc.get("decontamination"),
    )


def _up_to_date(
    out: Path,
    policy: GradingPolicy,
    prov: list[dict[str, Any]],
    settings: dict[str, Any],
    judge: Difficulty | None,
    deco: Decontamination | None,
    progress: Progress | None,
    t0: float,
) -> PrepareReport:
    """An output directory that holds this very preparation (accept.decide refuses any other, naming what
    differs): its files verified, nothing rewritten."""
    from ..prepared.accept import check_contract, decide
    from ..prepared.files import verify_files

    manifest = decide(
        out,
        policy,
        prov,
        settings,
        judge.settings() if judge is not None else None,
        decontamination=deco.settings() if deco is not None else None,
    )
    check_contract(manifest, policy)
    verify_files(manifest, progress=progress)
    return PrepareReport(
        str(out),
        "up_to_date",
        manifest.contract_id,
        manifest.counts,
        manifest.splits,
        [f.to_dict() for f in manifest.files],
        seconds=time.monotonic() - t0,
        difficulty=manifest.section("difficulty"),
        runtimes=manifest.section("runtimes"),
        repairs=manifest.section("repairs"),
        decontamination=manifest.section("decontamination"),
    )
