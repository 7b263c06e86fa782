"""Every command of the CLI is tried by the hostile suite: each module declares what it tries per command
(COVERS, derived from the data its tests are parametrized with), and a command added to
mcqa_prep.cli.COMMANDS fails here until hostile tries cover it."""

from __future__ import annotations

import importlib
import pkgutil
from collections import Counter
from pathlib import Path

import pytest

from mcqa_prep.cli import COMMANDS

# the classes of hostile input every command that reads data must face (module -> class)
CLASSES = {
    "test_hostile_jsonl": "mutated JSONL bytes",
    "test_hostile_parquet": "mutated Parquet bytes and contents",
    "test_hostile_values": "generated JSON values",
    "test_hostile_truncated": "truncated documents",
    "test_hostile_faults": "filesystem faults",
    "test_hostile_tamper": "tampered directories",
    "test_hostile_usage": "usage errors",
    "test_hostile_terminal": "real processes",
    "test_hostile_workers": "workers",
    "test_hostile_http": "hostile HTTP requests to a running server",
    "test_hostile_bounds": "bounded work (linear grading, bounded regexes and templates, capped workers)",
    "test_hostile_counts": "figures that must agree across commands",
    "test_hostile_edges": "output and command-line edges",
    "test_hostile_inputs": "inputs read twice (pipes) and inputs given twice, on every input of every command",
    "test_hostile_documents": "documents a command reads, against their schema (NaN/Infinity refused)",
}
MIN_TRIES_PER_COMMAND = 5
MIN_TRIES = 100


def _covers() -> dict[str, Counter]:
    here = Path(__file__).parent
    out: dict[str, Counter] = {}
    for info in pkgutil.iter_modules([str(here)]):
        if not info.name.startswith("test_hostile_") or info.name == "test_hostile_coverage":
            continue
        module = importlib.import_module(f"{__package__}.{info.name}")
        out[info.name] = Counter(module.COVERS)
    return out


def test_every_module_declares_its_class():
    assert set(_covers()) == set(CLASSES)


def test_every_command_is_tried():
    total = sum(_covers().values(), Counter())
    missing = {c: total.get(c, 0) for c in COMMANDS if total.get(c, 0) < MIN_TRIES_PER_COMMAND}
    assert not missing, f"commands without enough hostile tries (need {MIN_TRIES_PER_COMMAND}): {missing}"
    unknown = set(total) - set(COMMANDS)
    assert not unknown, f"tries declared for commands that do not exist: {unknown}"
    assert sum(total.values()) >= MIN_TRIES


def test_every_command_faces_usage_errors():
    usage = _covers()["test_hostile_usage"]
    assert set(COMMANDS) <= set(usage), set(COMMANDS) - set(usage)


def test_report_command():
    if "report" not in COMMANDS:
        pytest.skip("`report` is not in mcqa_prep.cli.COMMANDS on this branch (not merged on main yet)")
    assert "report" in sum(_covers().values(), Counter())
