"""The repository's copy of the conformance suites and NeMo Gym's example data (tests/conformance,
tests/fixtures/nemo_gym_0.7.0) is shared/'s, byte for byte, whenever both are there; the tests read
shared/ when it exists and the copy otherwise, so they never skip for want of shared/."""

from __future__ import annotations

import json

import pytest
from conftest import CONFORMANCE, FIXTURES, OWN_FILES, REPO, SHARED, VENDORED, _pick

REFRESH = "make vendor-shared"


def _files(folder):
    return {p.name: p for p in folder.iterdir() if p.is_file()}


@pytest.mark.parametrize("rel", sorted(VENDORED))
def test_the_repository_copy_is_complete_and_readable(rel):
    """What the tests read when shared/ is missing (CI on a bare clone): every JSONL line parses."""
    files = {n: p for n, p in _files(VENDORED[rel]).items() if n not in OWN_FILES.get(rel, set())}
    jsonl = [p for n, p in files.items() if n.endswith(".jsonl")]
    assert jsonl, f"{VENDORED[rel]} holds no JSONL: refresh it from shared/ with `{REFRESH}`"
    for path in jsonl:
        with path.open(encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh if line.strip()]
        assert rows and all(isinstance(r, dict) for r in rows), path


@pytest.mark.parametrize("rel", sorted(VENDORED))
def test_the_repository_copy_equals_shared_byte_for_byte(rel):
    copy, shared = VENDORED[rel], SHARED / rel
    if not shared.is_dir():
        # nothing to compare with: this run reads the copy (the summary says so)
        assert _pick(rel) == copy
        return
    mine = {n: p for n, p in _files(copy).items() if n not in OWN_FILES.get(rel, set())}
    theirs = _files(shared)
    problems = [f"{n}: not in the copy" for n in sorted(set(theirs) - set(mine))]
    problems += [f"{n}: not in {shared}" for n in sorted(set(mine) - set(theirs))]
    problems += [
        f"{n}: differs"
        for n in sorted(set(mine) & set(theirs))
        if mine[n].read_bytes() != theirs[n].read_bytes()
    ]
    assert not problems, (
        f"{copy.relative_to(REPO)} has drifted from {shared} ({'; '.join(problems)}): "
        f"refresh it with `{REFRESH}` and commit"
    )


def test_shared_is_read_when_there_and_the_copy_otherwise(tmp_path):
    for rel, copy in VENDORED.items():
        assert _pick(rel, tmp_path) == copy  # no shared/ at all
        (tmp_path / rel).mkdir(parents=True)
        assert _pick(rel, tmp_path) == tmp_path / rel  # a shared/ (maybe newer) wins
    assert CONFORMANCE == _pick("conformance") and FIXTURES == _pick("fixtures/nemo_gym_0.7.0")
