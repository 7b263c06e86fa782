"""The `mcqa-prep` command group.

Each command lives in its own module and follows one pattern: parse options, call one library function,
render its report. Command modules are imported only when their command runs (`mcqa-prep --help` imports
none of them). Every error, whatever raised it, passes through `_Group.invoke`: one line on stderr and the
exit code of the contract (cli/errors.py); with `--format json` also exactly one JSON document on stdout,
`{"ok": false, "error": {...}}`, unless the command already printed its report.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from pathlib import Path
from typing import Any

import click

from .._perf import use_system_allocator_for_arrow
from .._version import __version__
from ..errors import OutputError, Stopped, set_stop_handlers, stop, stop_handlers
from ..io.writers import GuardedFile

use_system_allocator_for_arrow()  # before anything imports pyarrow (docs/design/performance.md, "Memory")

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

# command -> (module, attribute, one-line help). The help line is the command docstring's first line
# (a test keeps them equal); listing it here keeps `mcqa-prep --help` from importing every command.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "pull": ("pull_cmd", "pull_command", "Pull hub dataset REPO at an exact commit into DIR, verify every file and write DIR/mcqa-prep.lock.json."),
    "validate": ("validate_cmd", "validate_command", "Check MCQA rows against the row schema and the semantic rules; report every problem with its address."),
    "prepare": ("prepare_cmd", "prepare_command", "Validate INPUT rows, stamp the grading contract and write shards + manifest.json to OUTPUT."),
    "verify": ("prepare_cmd", "verify_command", "Check a prepared DIR: manifest, every file's hash and row count, every row's contract stamp."),
    "contract": ("prepare_cmd", "contract_command", "Print the effective grading contract and its id (what `prepare` stamps and `verify` compares)."),
    "grade": ("grade_cmd", "grade_command", "Grade one RESPONSE text (or stdin when omitted or '-') against the given options."),
    "rescore": ("rescore_cmd", "rescore_command", "Regrade INPUT (JSONL verify requests or rollouts) with the bundled grader."),
    "convert": ("convert_cmd", "convert_command", "Convert multiple-choice datasets into NeMo Gym mcqa rows that pass `mcqa-prep validate`."),
    "summarize": ("summarize_cmd", "summarize_command", "Aggregate rescored JSONL FILES: accuracy, statuses, per template_id and per-prompt pass rates."),
    "passrates": ("passrates_cmd", "passrates_command", "Measure per-question pass rates of graded ROLLOUTS, per model, into a table that carries its contract."),
    "curriculum": ("curriculum_cmd", "curriculum_command", "Export a curriculum: a schedule of sampling weights per difficulty bucket and domain over training steps."),
    "report": ("report_cmd", "report_command", "Write one offline HTML page with plots for datasets and rescored files; --format json gives the numbers."),
    "serve": ("serve_cmd", "serve_command", "Serve NeMo Gym's mcqa verify API, grading every row under the grading contract it was prepared with."),
    "gym-component": ("serve_cmd", "gym_component_command", "Write a NeMo Gym resources server named mcqa into DIR/resources_servers/mcqa, grading with mcqa-prep."),
    "audit": ("audit_cmd", "audit_command", "Audit DATA rows for benchmark contamination, duplicates, wrong answer keys and position bias."),
}  # fmt: skip


def _wants_json(args: list[str]) -> bool:
    for i, a in enumerate(args):
        if a == "--":
            return False
        if a == "--format=json" or (a == "--format" and i + 1 < len(args) and args[i + 1] == "json"):
            return True
    return False


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        entry = COMMANDS.get(name)
        if entry is None:
            return None
        module = importlib.import_module(f"{__name__}.{entry[0]}")
        return _text_params(getattr(module, entry[1]))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_line) for name, (_, _, help_line) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as exc:  # the group's own options: one line, as every failure
            from .errors import to_click

            raise to_click(exc) from None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["mcqa_prep.args"] = list(args)  # the command line as given, for --format json (invoke)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        json_mode = _wants_json(ctx.meta.get("mcqa_prep.args", []))
        # a file name that is not UTF-8 (Linux names are bytes) is written in its display form
        # (records.display_name, `\udcXX`), as on stderr, never refused by a strict UTF-8 stdout
        # and every output is UTF-8, also where the locale says ASCII (LC_ALL=C without Python's UTF-8 mode)
        for stream in (sys.stdout, sys.stderr):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                with contextlib.suppress(ValueError, OSError):
                    reconfigure(encoding="utf-8", errors="backslashreplace")
        ctx.meta["mcqa_prep.json_emitted"] = False
        handlers = stop_handlers()  # Ctrl-C, SIGTERM, SIGHUP through errors.stop (deferred where it must be)
        set_stop_handlers(dict.fromkeys(handlers, _stop))
        stdout = sys.stdout
        sys.stdout = GuardedFile(stdout, Path("stdout"))  # a failed write names stdout, not "(unknown path)"
        try:
            result = super().invoke(ctx)
            sys.stdout.flush()  # a reader that went away shows here, not as noise at interpreter exit
            return result
        except (click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP (Stopped): the with-blocks cleaned up
            name = exc.args[0] if isinstance(exc, Stopped) else "SIGINT"
            if json_mode and not ctx.meta.get("mcqa_prep.json_emitted"):
                from .common import dumps_document

                error = {
                    "type": "Interrupted",
                    "reason": "interrupted",
                    "message": f"stopped by {name}",
                    "hint": None,
                    "exit_code": 1,
                    "signal": name,
                }
                with contextlib.suppress(OSError, ValueError):
                    sys.stdout.write(dumps_document({"ok": False, "error": error}) + "\n")
                    sys.stdout.flush()
            if isinstance(exc, Stopped):
                click.echo(f"Error: stopped by {name}; outputs not finished were removed", err=True)
                raise click.exceptions.Exit(1) from None
            raise
        except Exception as exc:  # noqa: BLE001 - every error ends here, as one line and an exit code
            if _reader_went_away(exc):
                raise click.exceptions.Exit(1) from None
            from .common import dumps_document
            from .errors import debug, describe, to_click

            if debug() and not isinstance(exc, click.ClickException):
                raise
            if json_mode and not ctx.meta.get("mcqa_prep.json_emitted"):
                with contextlib.suppress(OSError, ValueError):
                    sys.stdout.write(dumps_document({"ok": False, "error": describe(exc)}) + "\n")
                    sys.stdout.flush()
            if isinstance(exc, OutputError) and exc.details.get("path") == "stdout":
                _quiet_stdout()  # what could not be written is dropped: the interpreter's last flush stays quiet
            raise to_click(exc) from None
        finally:
            sys.stdout = stdout
            set_stop_handlers(handlers)


class _Text(click.types.StringParamType):
    """A text argument (not a path): valid UTF-8 even when Python decoded the command line with an ASCII
    locale (LC_ALL=C without UTF-8 mode), which leaves every non-ASCII byte as a lone surrogate. Paths keep
    that form (it is the one that opens the file there): every path parameter is a click.Path."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        value = super().convert(value, param, ctx)
        if isinstance(value, str) and not value.isascii():
            try:
                return os.fsencode(value).decode("utf-8")
            except UnicodeError:  # not UTF-8 bytes (or not a surrogate form): the command says so
                return value
        return value


_TEXT = _Text()


class _NoStdinPath(click.Path):
    """An input path that must exist, where '-' (stdin) is not read: said as such, not as click's "Path '-'
    does not exist"."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if value == "-" and not os.path.exists("-"):
            self.fail(
                "'-' is stdin, which this command does not read: save the rows to a file and give its path"
            )
        return super().convert(value, param, ctx)


def _text_params(command: click.Command) -> click.Command:
    """Every plain string parameter of a command reads its text as UTF-8 (see _Text), and every input path
    that must exist says so for '-' (see _NoStdinPath); done once."""
    if not getattr(command, "_mcqa_prep_text", False):
        for p in command.params:
            if type(p.type) is click.types.StringParamType:
                p.type = _TEXT
            elif type(p.type) is click.Path and p.type.exists and not p.type.allow_dash:
                p.type.__class__ = _NoStdinPath
        command._mcqa_prep_text = True  # type: ignore[attr-defined]
    return command


def _stop(signum: int, frame: Any) -> None:
    import signal

    stop(signal.Signals(signum).name)


def _reader_went_away(exc: BaseException) -> bool:
    """True when stdout's reader closed the pipe (`mcqa-prep ... | head`): like any Unix filter the command
    stops without a message, exit 1 (its output was not all delivered). Further writes go to /dev/null so the
    interpreter's last flush is quiet too."""
    import errno

    seen: BaseException | None = exc
    while seen is not None and not (isinstance(seen, OSError) and seen.errno == errno.EPIPE):
        seen = seen.__cause__ or seen.__context__
    if seen is None:
        return False
    _quiet_stdout()
    return True


def _quiet_stdout() -> None:
    """Further writes to stdout go to /dev/null."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


@click.group(cls=_Group, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, prog_name="mcqa-prep")
def main() -> None:
    """Prepare multiple-choice QA data for RL post-training, and rescore it like the verifier does.

    \b
    The main job, on a dataset from the Hugging Face hub:
      mcqa-prep pull nvidia/Nemotron-RL-knowledge-mcqa --revision main
      mcqa-prep prepare Nemotron-RL-knowledge-mcqa -o prepared/ --repair-regexes --on-invalid reject
    then, after training, audit the recorded rewards:
      mcqa-prep rescore rollouts.jsonl --rows prepared/ -o rescored.jsonl

    (about 30% of its rows carry templates whose output_regex misgrades ordinary prose: --repair-regexes
    writes the fix; a few rows are invalid for other reasons: --on-invalid reject lists them in
    prepared/rejects.jsonl)

    Exit codes: 0 ok, 1 data/contract/cache/IO failure, 2 usage error.
    With --format json every command prints exactly one JSON document on stdout, failures included.
    Options mean the same in every command (docs/cli.md); -q hides progress bars.
    """
