"""One source of truth for the words of `robust` (docs/design/robust.md, "Measuring it"): every entry of every table
in `phrases.py` and `languages.py`, and every script of the package's label table (mcqa_prep/labels.py),
changes the outcome (letter, status or deciding rule) of at least one recorded case when it is removed, the
mode being rebuilt from the patched source (tests/robust_ablation.py).

The witnesses are recorded in data/golden/robust_phrase_witnesses.json: cases of the golden file and of the
corpora, found by `python tests/robust_ablation.py --write --templates`, which writes a short golden
witness case (`w-…`) for an entry no corpus case needs, or reports that none works (then the entry goes).
"""

from __future__ import annotations

import json

import pytest
import robust_ablation as A


@pytest.fixture(scope="module")
def recorded() -> dict[str, list[str]]:
    return json.loads(A.WITNESSES.read_text(encoding="utf-8"))


def test_entries_are_found_and_unique():
    entries = A.entries()
    assert len(entries) >= 400
    keys = [e.key for e in entries]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    assert not twice, f"entries written twice in one table (the second changes nothing): {twice}"
    tables = {e.table for e in entries}
    assert {"ANCHORS_OTHER_LANGUAGES", "REASONING_MARKERS", "SCRIPTS", "REFUSALS_LATIN"} <= tables


def test_every_entry_has_a_witness(recorded):
    missing = [e.key for e in A.entries() if not recorded.get(e.key)]
    assert not missing, f"table entries no recorded case needs (remove them, or add a witness): {missing}"
    stale = sorted(set(recorded) - {e.key for e in A.entries()})
    assert not stale, f"witnesses recorded for entries that are gone: {stale}"


def test_removing_an_entry_changes_an_outcome(recorded):
    cases = A.pool()
    full = A.build({})
    unchanged = []
    try:
        for entry in A.entries():
            ids = [i for i in recorded.get(entry.key, []) if i in cases]
            if not ids:
                unchanged.append(f"{entry.key} (its witnesses are gone)")
                continue
            ablated = A.build({entry.file: A.ablated_source(entry)})
            if all(A.outcome(ablated, cases[i]) == A.outcome(full, cases[i]) for i in ids):
                unchanged.append(entry.key)
    finally:
        A.build({})  # (leave the ablated package built from the real sources)
    assert not unchanged, f"removing these entries changes none of their witnesses: {unchanged}"


def test_the_ablated_package_is_the_mode():
    """The rebuilt package (no entry removed) grades like the real one: the ablation measures the mode."""
    from mcqa_prep.grader.robust import extract_robust

    full = A.build({})
    cases = list(A.pool().values())[:400]
    for case in cases:
        assert A.outcome(full, case) == A.outcome(extract_robust, case), case["id"]
