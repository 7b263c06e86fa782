"""Running a command and checking the CLI contract on what it did.

The contract (README, "The CLI contract"): exit 0 ok, 1 data/contract/cache/IO failure, 2 usage; no
traceback and no internal error, on stdout or stderr; with --format json exactly one JSON document on
stdout (strict JSON: no NaN) whose `ok` matches the exit code and which carries an `error` object when not
ok; after a failure no output that looks complete and no temporary file or staging directory left behind.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from mcqa_prep.cli import main

OK, FAILURE, USAGE = 0, 1, 2

# Hidden files and directories the writers use while they work (io/writers, io/staging, io/shards).
# (a run's work directory, .NAME.mcqa-run, is kept only by a run that was stopped or killed, for --resume)
_TEMPORARY = re.compile(r"^\..+\.(\d+-[0-9a-f]+\.tmp|(staging|old)-\d+-[0-9a-f]+|mcqa-run)$|^\.part-")


def run(
    args: Iterable[Any], *, input: bytes | str | None = None, env: dict[str, str] | None = None
) -> Result:
    """One in-process run of `mcqa-prep ARGS` (exceptions caught, as a terminal would see them)."""
    argv = [str(a) for a in args]
    res = CliRunner().invoke(main, argv, input=input, env=env, catch_exceptions=True)
    res.argv = argv  # type: ignore[attr-defined]
    return res


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_json(text: str) -> Any:
    """One JSON document (json.loads refuses a second one after the first); NaN/Infinity refused."""
    return json.loads(text, parse_constant=_refuse_constant)


def strict_lines(path: Path) -> list[Any]:
    """Every line of a JSONL file our commands wrote, each strict JSON."""
    with open(path, "rb") as fh:
        return [strict_json(raw.decode("utf-8")) for raw in fh if raw.strip()]


def wants_json(argv: list[str]) -> bool:
    return any(a == "--format" and b == "json" for a, b in zip(argv, argv[1:], strict=False))


def check(res: Result, codes: int | Iterable[int]) -> dict[str, Any] | None:
    """Assert the contract on one run; returns its JSON document when --format json was given."""
    allowed = {codes} if isinstance(codes, int) else set(codes)
    argv = getattr(res, "argv", [])
    where = f"mcqa-prep {' '.join(argv)[:300]}\n--- stdout\n{res.stdout[-2000:]}\n--- stderr\n{res.stderr[-2000:]}"
    assert res.exit_code in allowed, f"exit {res.exit_code}, expected {sorted(allowed)}: {where}"
    assert res.exception is None or isinstance(res.exception, SystemExit), f"{res.exception!r}: {where}"
    for stream in (res.stdout, res.stderr):
        assert "Traceback" not in stream, where
        assert "internal error" not in stream, where
    if not wants_json(argv):
        return None
    try:
        doc = strict_json(res.stdout)
    except ValueError as exc:
        raise AssertionError(f"stdout is not exactly one strict JSON document ({exc}): {where}") from None
    assert isinstance(doc, dict) and doc.get("ok") is (res.exit_code == OK), where
    if res.exit_code != OK:
        err = doc.get("error")
        assert isinstance(err, dict), f"no error object: {where}"
        assert err.get("exit_code") == res.exit_code and isinstance(err.get("message"), str), where
        assert err.get("reason") != "internal", where
    return doc


def leftovers(*dirs: Path) -> list[str]:
    """Temporary files and staging directories in `dirs` (and one level below): what a run must not leave."""
    found = []
    for d in dirs:
        if not d.is_dir():
            continue
        for p in [*d.iterdir(), *(q for c in d.iterdir() if c.is_dir() for q in c.iterdir())]:
            if _TEMPORARY.match(p.name):
                found.append(str(p))
    return found


def assert_clean(*dirs: Path) -> None:
    left = leftovers(*dirs)
    assert not left, f"left behind: {left}"


def count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(1 for raw in fh if raw.strip())


def mounts_allowed() -> bool:
    """Root may mount a tmpfs here (CI runs as root on the same kind of machine); elsewhere tests patch the
    writer instead (MCQA_PREP_TEST_NO_MOUNT=1 forces that path, to test it)."""
    if os.environ.get("MCQA_PREP_TEST_NO_MOUNT"):
        return False
    return hasattr(os, "geteuid") and os.geteuid() == 0
