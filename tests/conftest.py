"""Shared test helpers: where shared/ lives, fixtures' paths, CLI runner."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample"


def shared_dir() -> Path:
    env = os.environ.get("MCQA_PREP_SHARED")
    return Path(env) if env else REPO.parent / "shared"


# The conformance suites and NeMo Gym's example data: read from the project's shared/ folder when it is
# there (a newer shared/ wins), else from the copy in this repository, so these tests run everywhere and
# never skip. tests/test_vendored_data.py fails when both exist and differ (refresh: `make vendor-shared`).
SHARED = shared_dir()
# (relative path under shared/, the repository's copy)
VENDORED = {
    "conformance": REPO / "tests" / "conformance",
    "fixtures/nemo_gym_0.7.0": REPO / "tests" / "fixtures" / "nemo_gym_0.7.0",
}


# files in the repository's copy that are its own, not shared/'s
OWN_FILES = {"fixtures/nemo_gym_0.7.0": {"README.md"}}


def _pick(rel: str, shared_root: Path | None = None) -> Path:
    shared = (SHARED if shared_root is None else shared_root) / rel
    return shared if shared.is_dir() else VENDORED[rel]


CONFORMANCE = _pick("conformance")
FIXTURES = _pick("fixtures/nemo_gym_0.7.0")


def data_sources() -> list[str]:
    """Which copy of each vendored folder this run reads, for the summary."""
    lines = []
    for rel, path in (("conformance", CONFORMANCE), ("fixtures/nemo_gym_0.7.0", FIXTURES)):
        if path == VENDORED[rel]:
            lines.append(f"{rel}: the repository's copy {path.relative_to(REPO)} ({SHARED / rel} not found)")
        else:
            lines.append(f"{rel}: {path} (shared/; the repository's copy is checked against it)")
    return lines


def rescore_request(inp, out, policy=None, **kw):
    """A RescoreRequest of one input: the run's settings (workers, progress, resume, chunk_bytes, examples)
    and rescore's (rows, explain, compare_policy, compare_mode) by keyword."""
    import dataclasses

    from mcqa_prep.policy import GradingPolicy
    from mcqa_prep.rescore.run import RescoreRequest
    from mcqa_prep.runs import RunRequest

    names = {f.name for f in dataclasses.fields(RunRequest)}
    run = RunRequest((inp,), out, **{k: v for k, v in kw.items() if k in names})
    own = {k: tuple(v) if k == "rows" else v for k, v in kw.items() if k not in names}
    return RescoreRequest(run, policy or GradingPolicy(), **own)


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def write_jsonl(path: Path, rows) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n")
    return path


@pytest.fixture(autouse=True, scope="session")
def _private_load_cache(tmp_path_factory):
    """load_prepared's default cache (a per-user directory) in a temporary directory, not the tester's home."""
    import os

    old = os.environ.get("MCQA_PREP_CACHE")
    os.environ["MCQA_PREP_CACHE"] = str(tmp_path_factory.mktemp("load-cache"))
    yield
    if old is None:
        os.environ.pop("MCQA_PREP_CACHE", None)
    else:
        os.environ["MCQA_PREP_CACHE"] = old


def repaired_templated_example(tmp_path: Path) -> Path:
    """NeMo Gym 0.7.0's templated example rows as validate asks for them (issue 24): the first prompt rendered
    ('{{' -> '{'), each output_regex's ([A-Za-z]) replaced by the rewrite its regex_audit finding names."""
    rows = read_jsonl(FIXTURES / "example_with_template_metadata.jsonl")
    first = rows[0]["responses_create_params"]["input"][0]
    first["content"] = first["content"].replace("{{", "{").replace("}}", "}")
    for r in rows:
        rx = r["template_metadata"]["output_regex"]
        r["template_metadata"]["output_regex"] = rx.replace("([A-Za-z])", "((?-i:[A-J]))(?![^\\n]*\\w)")
    return write_jsonl(tmp_path / "example_with_template_metadata.jsonl", rows)


@pytest.fixture
def cli():
    from click.testing import CliRunner

    from mcqa_prep.cli import main

    runner = CliRunner()

    def run(*args, input=None):
        return runner.invoke(main, [str(a) for a in args], input=input, catch_exceptions=False)

    return run


# Pass counts of the conformance suites, printed at the end of every run (not only with -s).
CONFORMANCE_REPORT: list[str] = []


def report(line: str) -> None:
    CONFORMANCE_REPORT.append(line)


def pytest_terminal_summary(terminalreporter):
    # always: which copy of the conformance data a run read (in CI without shared/, the repository's)
    terminalreporter.section("conformance suites")
    for line in data_sources():
        terminalreporter.write_line("read from " + line)
    for line in CONFORMANCE_REPORT:
        terminalreporter.write_line(line)


# ---- `make test-quick`: the tests listed in tests/slow_tests.txt are marked `slow` ----------------------------

SLOW_LIST = Path(__file__).resolve().parent / "slow_tests.txt"


def slow_entries(path: Path = SLOW_LIST) -> list[str]:
    """The test ids (or whole files) tests/slow_tests.txt lists, comments and blank lines left out."""
    return [
        s for s in (ln.split("#", 1)[0].strip() for ln in path.read_text(encoding="utf-8").splitlines()) if s
    ]


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config, items):
    entries = slow_entries()
    files = {e for e in entries if "::" not in e}
    tests = {e for e in entries if "::" in e}
    for item in items:
        base = item.nodeid.split("[", 1)[0]
        if base.split("::", 1)[0] in files or base in tests or base.rsplit("::", 1)[0] in tests:
            item.add_marker(pytest.mark.slow)
