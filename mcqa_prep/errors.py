"""The exception family. Library code raises these; only the CLI turns them into exit codes.

Exit code convention (applied by cli): McqaPrepError subclasses -> 1, UsageError -> 2.
"""

from __future__ import annotations


class McqaPrepError(Exception):
    """Base class: a data, contract, cache or hub failure (exit code 1)."""

    exit_code = 1


class UsageError(McqaPrepError):
    """The user asked for something inconsistent (exit code 2)."""

    exit_code = 2


class PolicyError(UsageError):
    """A grading policy is invalid (bad enum, bad type, inconsistent component)."""


class InputError(McqaPrepError):
    """An input file cannot be read at all (missing, unsupported format, unreadable Parquet)."""


class ContractMismatch(McqaPrepError):
    """Prepared data was made under another grading contract than the one asked for."""

    def __init__(self, message: str, *, expected: str | None = None, found: str | None = None, fields=()):
        super().__init__(message)
        self.expected = expected
        self.found = found
        self.fields = tuple(fields)


class StaleCache(McqaPrepError):
    """An output directory holds a preparation that does not match the requested one."""


class IncompletePreparation(StaleCache):
    """An output directory has no valid manifest (interrupted, foreign or unsupported)."""


class IntegrityError(McqaPrepError):
    """Bytes on disk are not the bytes recorded (hash or size mismatch)."""


class HubError(McqaPrepError):
    """The hub could not be reached, or refused the request."""


class LockMismatch(McqaPrepError):
    """A pulled directory's lock disagrees with what was asked (another commit, other files)."""
