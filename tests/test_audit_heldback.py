"""audit on a held-back set (tests/audit_helpers.py: generated questions of shared topics, the NeMo Gym examples'
and the sample's real questions): benchmark copies planted verbatim, shuffled and lightly edited are found,
clean rows of the same topics are not; train rows copied into validation are found as leakage; planted wrong
keys are found from raw rollouts, and no row whose rollouts are split is flagged."""

from __future__ import annotations

from collections import Counter

import pytest
from audit_helpers import N_CLEAN_TRAIN, N_CLEAN_VALIDATION, A, build

from mcqa_prep.audit import Request, audit

EXACT = ("verbatim", "shuffled")
EDITED = A.EDITS


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("audit-heldback")
    m = build(tmp)
    request = Request(against=tuple(str(p) for p in m["bench"].values()), rollouts=(str(m["rollouts"]),))
    m["doc"] = audit([m["paths"]["train"], m["paths"]["validation"]], request, workers=2)
    return m


def _flagged(doc, split: str) -> set[int]:
    return {f["row"]["line"] for f in doc["contamination"]["findings"] if f["row"]["split"] == split}


def _rate(made, kinds) -> tuple[int, int]:
    flagged = _flagged(made["doc"], "train")
    lines = [i for i, k in enumerate(made["train"], 1) if k in kinds]
    return sum(i in flagged for i in lines), len(lines)


def test_planted_exact_copies_are_found(made):
    found, total = _rate(made, EXACT)
    assert total == 600 and found >= 0.99 * total


@pytest.mark.parametrize("kind", EDITED)
def test_planted_edited_copies_are_found(made, kind):
    found, total = _rate(made, (kind,))
    assert total == 100 and found >= 0.95 * total, kind


def test_real_questions_planted_with_shuffled_options_are_found(made):
    found, total = _rate(made, ("real",))
    assert total >= 10 and found == total


def test_clean_rows_sharing_topics_are_not_flagged(made):
    doc = made["doc"]
    clean_train = [i for i, k in enumerate(made["train"], 1) if k == "clean"]
    clean_val = [i for i, k in enumerate(made["validation"], 1) if k == "clean"]
    assert len(clean_train) == N_CLEAN_TRAIN and len(clean_val) == N_CLEAN_VALIDATION
    wrong = len(set(clean_train) & _flagged(doc, "train")) + len(set(clean_val) & _flagged(doc, "validation"))
    assert wrong <= 0.001 * (len(clean_train) + len(clean_val))


def test_each_finding_names_the_row_and_the_benchmark_question(made):
    f = made["doc"]["contamination"]["findings"][0]
    assert set(f["row"]) == {"file", "line", "split", "uuid"} and f["row"]["uuid"]
    m = f["matches"][0]
    assert {"file", "line", "id", "benchmark"} <= set(m["benchmark"])
    assert m["methods"] and set(m["methods"]) <= {"exact", "ngram", "minhash"}
    assert 0 < m["containment"] <= 1


def test_train_rows_copied_into_validation_are_found_as_leakage(made):
    dups = {
        f["row"]["line"]: f
        for f in made["doc"]["duplicates"]["findings"]
        if f["row"]["split"] == "validation"
    }
    found = Counter()
    for line, kind in enumerate(made["validation"], 1):
        if isinstance(kind, tuple):
            f = dups.get(line)
            assert f is not None, (line, kind)
            assert f["first"]["line"] == kind[1] and f["first"]["split"] == "train" and f["cross_split"], kind
            found[f["kind"]] += 1
            if kind[0] == "exact":
                assert f["kind"] == "exact"
    assert sum(found.values()) == sum(isinstance(k, tuple) for k in made["validation"])


def test_clean_rows_are_not_reported_as_duplicates(made):
    dups = made["doc"]["duplicates"]["findings"]
    clean = {("train", i) for i, k in enumerate(made["train"], 1) if k == "clean"}
    clean |= {("validation", i) for i, k in enumerate(made["validation"], 1) if k == "clean"}
    assert not [f for f in dups if (f["row"]["split"], f["row"]["line"]) in clean]


def test_planted_wrong_keys_are_found_and_split_rows_are_not_flagged(made):
    k = made["doc"]["wrong_keys"]
    flagged = {f["row"]["line"] for f in k["wrong_keys"]}
    assert set(made["keys"]["wrong"]) <= flagged
    assert not flagged & set(made["keys"]["split"])
    assert not flagged & set(made["keys"]["right"])
    assert (
        k["evidence"]["invalid"]["count"] == 0
        and k["evidence"]["rollouts_used"] == k["evidence"]["rollouts_read"]
    )
    top = k["wrong_keys"][0]
    assert top["suspected"] != top["gold"] and top["agreement"] >= 0.8 and len(top["models"]) == 2
    confidences = [f["self_confidence"] for f in k["wrong_keys"]]
    assert confidences == sorted(confidences)
