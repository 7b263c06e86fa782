"""The exception family: what went wrong, as data. Library code raises these; only `cli` knows exit codes,
flags and how to fix things (cli/errors.py maps each class and `reason` to an exit code and a hint).

Messages say what is wrong and where, in terms of the library (paths, ids, fields), never of command-line
flags: a trainer calling `load_prepared()` has no `--overwrite`. `reason` is a stable code that names the
situation (the CLI's hint table is keyed on it); `details` holds the structured facts (both contract ids, the
fields that differ, the path) for machines (`--format json`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from .jsonsafe import as_text, json_safe


@dataclass(frozen=True)
class Difference:
    """One field that differs between what was recorded and what is asked for."""

    field: str
    recorded: Any
    requested: Any

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "recorded": self.recorded, "requested": self.requested}

    def render(self) -> str:
        import json

        return f"{self.field}: {json.dumps(self.recorded)} != {json.dumps(self.requested)}"


NO_FIELDS = "(none: ids differ only)"


def fields_that_differ(differences: Iterable[Difference], sides: str | None = None) -> str:
    """'fields that differ (sides): field: recorded != requested; ...': the one way a refusal names what
    differs (`sides` says which side is which, e.g. "row != server")."""
    text = "; ".join(d.render() for d in differences) or NO_FIELDS
    return f"fields that differ{f' ({sides})' if sides else ''}: {text}"


class McqaPrepError(Exception):
    """Base class: a data, contract, cache, IO or hub failure."""

    reason = "error"

    def __init__(self, message: str, *, reason: str | None = None, **details: Any) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason
        self.details = details

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""

    def __reduce__(self) -> Any:
        # whole, reason and details included, when a worker process hands the error to its parent
        return (_restore, (type(self), self.args, self.__dict__))

    def to_dict(self) -> dict[str, Any]:
        """Type, reason, message and structured details, JSON-ready."""
        out: dict[str, Any] = {"type": type(self).__name__, "reason": self.reason, "message": self.message}
        for k, v in self.details.items():
            out[k] = json_safe(v, as_text)
        return out


def _restore(cls: type[Exception], args: tuple[Any, ...], state: dict[str, Any]) -> Exception:
    err = cls.__new__(cls)
    err.args = args
    err.__dict__.update(state)
    return err


class UsageError(McqaPrepError):
    """The caller asked for something inconsistent (bad argument value, output equal to an input)."""

    reason = "usage"


class PolicyError(UsageError):
    """A grading policy is invalid (bad enum, bad type, inconsistent component)."""

    reason = "invalid_policy"


class InputError(McqaPrepError):
    """An input cannot be read at all (missing, unsupported format, unreadable Parquet, permission denied)."""

    reason = "input"


class OutputError(McqaPrepError):
    """An output cannot be written (read-only directory, full disk, permission denied); nothing was left."""

    reason = "output"


class ContractMismatch(McqaPrepError):
    """Data was made under another grading contract than the one asked for."""

    reason = "contract_mismatch"

    def __init__(
        self,
        message: str,
        *,
        expected: str | None = None,
        found: str | None = None,
        differences: Iterable[Difference] = (),
        reason: str | None = None,
        **details: Any,
    ) -> None:
        self.expected = expected
        self.found = found
        self.differences = tuple(differences)
        super().__init__(
            message, reason=reason, expected=expected, found=found, differences=self.differences, **details
        )

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(d.field for d in self.differences)


class StaleCache(McqaPrepError):
    """An output directory holds a preparation that does not match the requested one."""

    reason = "stale_cache"

    def __init__(
        self,
        message: str,
        *,
        differences: Iterable[Difference] = (),
        reason: str | None = None,
        **details: Any,
    ) -> None:
        self.differences = tuple(differences)
        super().__init__(message, reason=reason, differences=self.differences, **details)


class IncompletePreparation(StaleCache):
    """A directory has no valid manifest (interrupted, foreign or unsupported)."""

    reason = "incomplete_preparation"


class IntegrityError(McqaPrepError):
    """Bytes on disk are not the bytes recorded (hash, size, row count or stamp mismatch)."""

    reason = "integrity"


class CacheError(McqaPrepError):
    """A cache this package keeps cannot be used safely: its directory is not the user's own (another
    owner, open to others, a symbolic link) or cannot be written. A cache whose contents do not match is
    never an error: it is rebuilt."""

    reason = "cache"


class UnrepresentableValue(McqaPrepError):
    """A value that the requested form cannot hold exactly (an integer beyond what its Arrow column holds
    without rounding): refused rather than changed."""

    reason = "unrepresentable_value"


_Refused = TypeVar("_Refused", bound=McqaPrepError)


def refusal(
    error: type[_Refused],
    head: str,
    differences: Iterable[Difference],
    *,
    sides: str | None = None,
    listed: bool = True,
    **details: Any,
) -> _Refused:
    """The one builder of a refusal of something recorded against what is asked for (a contract, a
    preparation, a pass-rate table, a job to resume): `head` says what was refused and where, the differences
    travel as data (`.differences`, and in --format json), and the message ends with `fields_that_differ`
    unless `listed=False` (a head that names its one difference itself, such as two versions)."""
    diffs = tuple(differences)
    message = f"{head}; {fields_that_differ(diffs, sides)}" if listed else head
    return error(message, differences=diffs, **details)


class MissingExtra(McqaPrepError):
    """A feature needs an optional package that is not installed: `details` name the package, the feature and
    the extra that installs it (extras.py)."""

    reason = "missing_extra"


class HubError(McqaPrepError):
    """The hub could not be reached, or refused the request."""

    reason = "hub"


class LockMismatch(McqaPrepError):
    """A pulled directory's lock disagrees with what was asked (another commit, other files)."""

    reason = "lock_mismatch"


class InvalidRows(McqaPrepError):
    """Rows failed validation and the caller asked to fail on them; nothing was committed."""

    reason = "invalid_rows"

    def __init__(
        self,
        message: str,
        findings: Iterable[Any],
        counts: Mapping[str, Any],
        *,
        reason: str | None = None,
        **details: Any,
    ) -> None:
        self.findings = list(findings)
        self.counts = dict(counts)
        super().__init__(message, reason=reason, counts=self.counts, findings=self.findings, **details)


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP (its name in args[0]), raised wherever the run is, so that it ends as Ctrl-C does:
    with-blocks remove temporary files, the worker pool is shut down, exit 1. A KeyboardInterrupt, not an
    Exception, so that no `except Exception` on the way takes it for a failure of the code it interrupts."""


_DEFERRED: dict[str, Any] = {"depth": 0, "pending": None}
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")  # the signals that stop a run (those this platform has)


def stop_handlers() -> dict[Any, Any]:
    """The current handlers of STOP_SIGNALS, to put back later with set_stop_handlers."""
    import signal

    found = (getattr(signal, name, None) for name in STOP_SIGNALS)
    return {sig: signal.getsignal(sig) for sig in found if sig is not None}


def set_stop_handlers(handlers: dict[Any, Any]) -> None:
    """Install handlers (signal -> handler); outside the main thread, where Python refuses, nothing changes."""
    import signal

    for sig, handler in handlers.items():
        if handler is not None:
            with contextlib.suppress(TypeError, ValueError, OSError):
                signal.signal(sig, handler)


def stop(name: str) -> None:
    """What the CLI's signal handlers do: SIGINT raises KeyboardInterrupt, SIGTERM and SIGHUP raise Stopped;
    inside `stops_deferred()` the signal is kept and raised when the outermost such block ends."""
    if _DEFERRED["depth"]:
        _DEFERRED["pending"] = _DEFERRED["pending"] or name
        return
    raise KeyboardInterrupt() if name == "SIGINT" else Stopped(name)


@contextlib.contextmanager
def stops_deferred() -> Iterator[None]:
    """A block that a signal must not cut in two: starting, feeding and shutting down the worker pool. A
    Stopped raised inside ProcessPoolExecutor's bookkeeping left it half-started: 'internal error: cannot
    join thread before it is started', or a worker nobody told to exit, which the interpreter then waited for
    forever (found by running the SIGTERM/SIGHUP tests under load)."""
    _DEFERRED["depth"] += 1
    try:
        yield
    except BaseException:
        _DEFERRED["pending"] = None  # the block failed anyway: that failure ends the run
        raise
    finally:
        _DEFERRED["depth"] -= 1
    if not _DEFERRED["depth"] and _DEFERRED["pending"]:
        name, _DEFERRED["pending"] = _DEFERRED["pending"], None
        stop(name)
