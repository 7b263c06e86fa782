"""The only place that knows exit codes, flags and fixes: library errors in, one line (or one JSON document)
and an exit code out.

Exit codes: 0 ok; 1 data, contract, cache or IO failure; 2 usage (bad option value, missing input path,
output equal to an input). A library error's `reason` picks the hint that names the fix; the library's own
message says what is wrong and where. An OS error that escaped the library (it should not) still becomes
one line naming the path; any other exception is reported as an internal error in one line, never as a
traceback (MCQA_PREP_DEBUG=1 shows it).
"""

from __future__ import annotations

import errno
import os
import re
from typing import Any

import click

from ..errors import McqaPrepError, UsageError

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
DEBUG_ENV = "MCQA_PREP_DEBUG"

_FRESH = "use a fresh output directory, or pass --overwrite to replace it"
_PREPARE_AGAIN = "prepare again into a fresh output directory (or with --overwrite)"
_OUTPUT_ELSEWHERE = "choose an output path you can write to (-o)"

# reason -> how to fix it, in terms of this CLI's flags. {name} fields come from the error's details.
HINTS: dict[str, str] = {
    "stale_contract": _FRESH,
    "stale_inputs": _FRESH,
    "stale_settings": _FRESH,
    "stale_cache": _FRESH,
    "stale_preparation": _FRESH,
    "concurrent_preparation": "run one preparation per output directory at a time, then run again",
    "foreign_directory": "choose another output directory (--overwrite only replaces a preparation)",
    "incomplete_preparation": _PREPARE_AGAIN,
    "contract_mismatch": _PREPARE_AGAIN + " under the grader or policy you train with",
    "grader_version": _PREPARE_AGAIN + ": grading semantics changed since it was prepared",
    "preparation_version": _PREPARE_AGAIN,  # the message says what changed
    "integrity": _PREPARE_AGAIN,
    "locked_file_mismatch": "fetch the locked bytes again with `mcqa-prep pull --to {directory} --force-download`",
    "lock_invalid": "delete the lock and pull again into this directory",
    "download_corrupted": "run the same pull again; if the same file fails again, the hub's listing and its "
    "bytes disagree (tell the dataset's owners)",
    "unvouched_file": "move {path} out of the way (or delete it) and pull again",
    "invalid_rows": (
        "fix the rows, or pass --on-invalid reject to write the valid rows and list the others in "
        "rejects.jsonl"
    ),
    "invalid_rows_repairable": "pass --repair-regexes to write the regex audit's fix in place of their output_regex "
    "and keep them (docs/design/prepare.md, 'Repairing template regexes')",
    "invalid_rows_some_repairable": "pass --repair-regexes to write the regex audit's fix in place of the "
    "output_regex of those {repairable_rows}, and fix the other rows or pass --on-invalid reject to write the valid "
    "rows and list the others in rejects.jsonl",
    "no_rows": "check the input paths (an empty input is not a dataset)",
    "nothing_written": "fix the rows the findings name, or loosen the filters that dropped them",
    "no_dataset_rows": (
        "give --rows the dataset rows the rollouts were sampled from (JSONL/Parquet rows with "
        "responses_create_params.input and options)"
    ),
    "input_not_utf8": "convert the text to UTF-8 first (e.g. iconv -t UTF-8)",
    "input_changed": "run again once nothing writes to the input",
    "no_scored_rows": "rescore the rows first (mcqa-prep rescore), then summarize the rescored file",
    "contracts_mixed": "choose one with --contract ID (or rescore the files under one policy)",
    "contract_not_found": "pass one of the contract ids listed",
    "parquet_types": "use --output-format jsonl",
    "bad_split_name": "pass --split NAME",
    "output_is_input": "write the output to another path",
    "output_inside_input": "write the output outside the input directory",
    "output_read_only": _OUTPUT_ELSEWHERE,
    "output_permission": _OUTPUT_ELSEWHERE,
    "output_disk_full": "free disk space, or write to another filesystem (-o)",
    "output_missing_directory": _OUTPUT_ELSEWHERE,
    "hub_offline_env": "unset HF_HUB_OFFLINE, or use --offline with a pulled directory",
    "hub_unreachable": "check the network and HF_ENDPOINT, or use --offline with a pulled directory",
    "offline_no_lock": "pull once without --offline",
    "offline_other_commit": "drop --offline (and pass --update) to move the lock",
    "offline_other_revision": "drop --offline to resolve it",
    "offline_split": "drop --offline to fetch it",
    "offline_update": "drop --offline: --update needs the network",
    "offline_force_download": "drop --offline: --force-download needs the network",
    "other_repo": "pull into another directory with --to",
    "upstream_moved": "pass --update to move the lock, or --revision {locked} to keep the locked commit",
    "unknown_split": "pass one of the splits listed with --split NAME",
    "output_is_rejects": "give -o and --rejects different paths",
    "same_source_identity": "give the input once, or convert them separately with --dataset NAME",
    "no_preset": "pass --preset NAME or a column map such as --map question=COL --map choices=COL --map answer=COL "
    "(see --list-presets)",
    "nothing_converted": "check the preset or --map",
    "nothing_readable": "check that each SOURCE holds what its name says (JSON lines, CSV with a header, Parquet)",
    "bad_column_map": "write --map KEY=COLUMN",
    "map_no_question": "pass --map question=COLUMN",
    "map_no_answer": "pass --map answer=COLUMN",
    "map_missing_column": "fix --map or choose another --preset",
    "template_file": "give --template a readable template file, or a built-in name (--list-templates)",
    "template_spec": "write --template NAME[:WEIGHT] with a built-in name (--list-templates) or a file, and a "
    "positive weight",
    "missing_extra": "install it with pip install '{install}'",
    "worker_died": "free memory or use fewer --workers, then run the same command with --resume to continue from "
    "the complete chunks",
    "ray_failed": "check the Ray cluster (RAY_ADDRESS) and its logs, or use --engine local",
    "ray_failed_resumable": "check the Ray cluster and its logs, then run the same command with --resume to "
    "continue from the complete chunks (or use --engine local)",
    "ray_auth": "set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN to the cluster's token (`ray get-auth-token` on the "
    "head node prints it), or use --engine local",
    "ray_unreachable": "check RAY_ADDRESS and that the cluster is up (ray status), or unset RAY_ADDRESS to start "
    "a local Ray instance, or use --engine local",
    "resume_mismatch": "run without --resume to start over (the interrupted run's chunks are discarded), or "
    "resume with the policy, options and inputs of the interrupted run",
    "output_busy": "wait for the other run to finish, or write to another output directory (-o)",
    "output_not_directory": "give -o a directory (a new or empty one, or an earlier output of the same command "
    "to replace)",
    "output_foreign_dir": "choose a new or empty output directory",
    "table_contract": "measure the pass rates under this preparation's policy (passrates --rescore), or prepare "
    "under the table's policy",
    "stale_difficulty": _FRESH,
    "stale_decontamination": _FRESH,
    "bench_is_input": "keep the benchmark files outside the inputs (a dataset is not decontaminated against itself)",
    "table_edited": "measure the table again with `mcqa-prep passrates` (a table is never edited by hand)",
    "table_schema": "measure the table again with `mcqa-prep passrates`",
    "table_invalid": "measure the table again with `mcqa-prep passrates`",
    "table_version": "measure the table again with `mcqa-prep passrates` (passrates.v3 records the option orders)",
    "drift_models": "measure each checkpoint's rollouts into a table of its own",
    "table_is_input": "keep the table outside the input files and directories",
    "table_required": "pass --pass-rates TABLE (or --stamp-reward-profiles TABLE)",
    "table_matches_no_rows": "measure the table on rollouts of these rows (a --key-by prompt table matches only "
    "the same rendered prompts; rollouts without uuid need passrates --rows DATASET)",
    "model_not_in_table": "pass --model with one of the models listed",
    "model_ambiguous": "pass --model NAME",
    "model_required": "pass --model NAME",
    "model_not_in_rows": "pass --model with one of the models listed",
    "bad_range": "give --keep-pass-rate LO:HI with 0 <= LO <= HI <= 1",
    "invalid_rollouts": "pass --rows DATASET when rollouts lack their options, or --on-invalid reject to leave "
    "them out (counted in the table)",
    "rollouts_without_contract": "grade them first with `mcqa-prep rescore`, or pass --rescore to grade them here",
    "rollout_model_unknown": "pass --model NAME for the rollouts that name no model",
    "rollouts_contract": "pass the policy the rollouts were graded under (--policy FILE or policy flags), or "
    "--rescore to grade them under this one",
    "contract_with_rescore": "drop --contract: with --rescore every rollout is graded under the given policy",
    "serve_policy_mismatch": "drop the policy options to serve the preparation's own contract, or prepare the "
    "rows again under this policy",
    "serve_preparations_differ": "serve each contract from its own server (another --port), or prepare the rows "
    "again under one policy",
    "address_in_use": "choose another --port (--port 0 takes a free one), or stop the server that holds it",
    "bad_address": "give --host an address of this machine (127.0.0.1, 0.0.0.0, ::1)",
    "component_exists": "pass --overwrite to replace it, or choose another DIR",
    "license_required": "give it with --license NAME",
    "bad_license": "give --license one of NeMo Gym's names, or a hub id that maps to one (apache-2.0, mit, "
    "cc-by-4.0, cc-by-sa-4.0, cc-by-nc-3.0, gpl-3.0)",
    "runtime_nemo_gym": "serve the preparation with `mcqa-prep serve` (or `mcqa-prep gym-component`), which "
    "honours every contract, or drop --runtime nemo-gym",
    "profile_with_rescore": "drop --rescore and --contract with --nemo-gym-profile (give the policy options NeMo Gym "
    "graded with)",
    "profile_no_answer": "use --no-answer fail with --nemo-gym-profile (or measure rescored rollouts)",
    "answers_unknown": "rescore the rollouts first (mcqa-prep rescore writes extracted_answer), or pass --no-answer fail",
    "no_answered_rollouts": "pass --no-answer fail to count unanswered rollouts as failed samples",
    "bad_level": "give --credible-level a number in [0.5, 1)",
    "bad_buckets": "give --buckets a number 2..20",
    "counting_mixed": "measure the tables again with the same --no-answer rule (passrates --no-answer fail|exclude)",
    "tables_contract": "give tables measured under one grading policy",
    "key_by_mixed": "measure the tables again with the same --key-by",
    "tables_overlap": "give each rollout file to one table only (or measure one table from all files)",
    "keep_on_upstream": "use --pass-rates TABLE with --keep-on mean/lower/upper",
    "blend_alone": "add --stamp-reward-profiles TABLE",
    "bad_schedule": "check --steps, --bootstrap-steps, --ranges, --window, --start-rate, --end-rate and --sigma",
    "ordered_needs_prompts": "give --ordered-out FILE together with --prompts-per-step N",
    "domain_not_in_rows": "name domains that occur in the --by column (or check --by)",
    "domain_ratio_missing": "give a ratio for every domain, or '--domain-ratio *=W' for the rest",
    "nothing_scheduled": "check --model, --no-evidence, --drop-solved/--drop-unsolved and the --rows",
    "bench_missing": "give a local benchmark file or directory (a hub dataset: `mcqa-prep pull` it, then give its "
    "directory)",
    "bench_layout": "pass --bench-preset NAME (`mcqa-prep convert --list-presets`) or --bench-map KEY=COLUMN "
    "(question=COL, choices=COL, answer=COL, ...)",
    "unreadable_benchmark": "fix or remove the line (a question that cannot be read cannot be found in the rows); "
    "`mcqa-prep audit --on-invalid reject` audits against the readable questions and counts the others",
    "bench_empty": "check the benchmark file's layout (--bench-preset NAME or --bench-map KEY=COLUMN): no row "
    "became a question",
    "bad_audit_setting": "check the audit thresholds (see --help)",
    "audit_findings": "see the rows listed (the audit document, -o FILE or --format json, has them all); drop "
    "contaminated rows with `prepare --decontaminate-against BENCH`",
    "no_stdin": "save the rows to a file and give its path",
    "audit_document": "give --audit the file written by `mcqa-prep audit DATA -o FILE`",
}

_OS_REASONS = {
    errno.ENOSPC: "output_disk_full",
    errno.EROFS: "output_read_only",
    errno.EACCES: "output_permission",
    errno.EPERM: "output_permission",
}


def exit_code(exc: BaseException) -> int:
    if isinstance(exc, (UsageError, click.UsageError)):
        return EXIT_USAGE
    if isinstance(exc, click.ClickException):
        return exc.exit_code
    return EXIT_FAILURE


def hint(exc: McqaPrepError) -> str | None:
    template = HINTS.get(exc.reason)
    if template is None:
        return None
    try:
        return template.format(**exc.details)
    except (KeyError, IndexError):
        return template.split("{", 1)[0].rstrip(" `") or None


def describe(exc: BaseException) -> dict[str, Any]:
    """The error as the JSON failure document carries it: type, reason, message, hint, exit code, details."""
    if isinstance(exc, McqaPrepError):
        doc = exc.to_dict()
        doc["hint"] = hint(exc)
    elif isinstance(exc, click.ClickException):
        doc = {"type": "UsageError" if isinstance(exc, click.UsageError) else "Failure", "reason": "usage"}
        doc["message"] = exc.format_message()
        doc["hint"] = None
    elif isinstance(exc, OSError):
        doc = {"type": "OSError", "reason": _OS_REASONS.get(exc.errno or 0, "os"), "message": os_message(exc)}
        doc["hint"] = HINTS.get(doc["reason"])
    else:
        doc = {"type": "InternalError", "reason": "internal", "message": internal_message(exc), "hint": None}
    doc["message"] = one_line(str(doc["message"]))
    doc["exit_code"] = exit_code(exc)
    return doc


_BREAKS = re.compile(r"[ \t]*[\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]+[ \t]*")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")


def one_line(text: str) -> str:
    """A message as the one line the contract promises: line breaks become "; " (a space after a colon),
    other control characters are written as \\xNN (a message may quote data: no terminal escapes)."""
    parts = [p for p in _BREAKS.split(text) if p]
    out = parts[0] if parts else ""
    for p in parts[1:]:
        out += (" " if out.endswith(":") else "; ") + p
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", out)


def os_message(exc: OSError) -> str:
    where = exc.filename if exc.filename is not None else "(unknown path)"
    return f"{where}: {exc.strerror or exc}"


def internal_message(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "internal error: a value is nested too deeply to process"
    return (
        f"internal error: {type(exc).__name__}: {exc} (a bug in mcqa-prep: please report it with the command "
        f"line; {DEBUG_ENV}=1 shows the traceback)"
    )


def debug() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


class Failure(click.ClickException):
    """A data/contract/cache/IO failure: its message on stderr, in one line, exit code 1."""

    exit_code = EXIT_FAILURE

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


class OneLineUsage(click.UsageError):
    """A usage error shown as one line (click's own shows the usage line, a help hint and a blank line)."""

    def __init__(self, message: str, ctx: click.Context | None = None) -> None:
        super().__init__(one_line(message), ctx)

    def show(self, file: Any = None) -> None:
        click.echo(f"Error: {self.format_message()}", file=file, err=file is None)


def to_click(exc: BaseException) -> click.ClickException:
    """Any error as the click exception that prints one line and exits with the contract's code."""
    if isinstance(exc, OneLineUsage | Failure):
        return exc
    if isinstance(exc, click.UsageError):  # click's parser, or a command's own check: say where help is
        where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        return OneLineUsage(exc.format_message() + where, exc.ctx)
    if isinstance(exc, click.ClickException):
        failure = Failure(exc.format_message())
        # click declares exit_code a ClassVar; an instance attribute keeps this exception's own code
        failure.exit_code = exc.exit_code  # type: ignore[misc]
        return failure
    doc = describe(exc)
    message = doc["message"] + (f"; {doc['hint']}" if doc.get("hint") else "")
    if doc["exit_code"] == EXIT_USAGE:
        return OneLineUsage(message)
    return Failure(message)
