"""One pass-rate binning (evidence.RATE_BINS / rate_bin): the same rates land in the same bins in
summarize, passrates and report (its per-prompt histogram of rescored rows and its reward_profiles
histogram), at every edge: 1/5 is in (.1, .2] for all of them (issue 22)."""

from __future__ import annotations

from passrate_helpers import rollout, write_rows

from mcqa_prep.evidence import HISTOGRAM_BINS, RATE_BINS, rate_bin, rate_bin_of
from mcqa_prep.passrates.measure import measure
from mcqa_prep.records import Row
from mcqa_prep.report import build_report
from mcqa_prep.report.dataset import DatasetTally
from mcqa_prep.rescore.summarize import summarize

# (samples, passes) per question: edges of tenths, just past them, and exactly 0 and 1
RATES = [
    (5, 1),
    (10, 1),
    (10, 3),
    (3, 1),
    (2, 1),
    (3, 2),
    (10, 7),
    (10, 9),
    (100, 99),
    (4, 0),
    (4, 4),
    (7, 0),
    (1, 1),
]
WANT = [2, 1, 1, 1, 1, 1, 0, 2, 0, 1, 1, 2]  # 0 | (0,.1] (.1,.2] ... (.8,.9] | (.9,1) | 1


def test_the_bins_by_hand():
    assert len(RATE_BINS) == HISTOGRAM_BINS == len(WANT) == 12
    hist = [0] * HISTOGRAM_BINS
    for s, p in RATES:
        hist[rate_bin(p, s)] += 1
    assert hist == WANT
    assert RATE_BINS[rate_bin(1, 5)] == "≤.2"


def test_a_rate_given_as_a_number_lands_where_its_counts_do():
    for s in range(1, 201):
        for p in range(s + 1):
            assert rate_bin_of(p / s) == rate_bin(p, s), (p, s)


def test_summarize_passrates_and_report_bin_the_same_rates_alike(cli, tmp_path):
    rows = [rollout(q, k < p, "m") for q, (s, p) in enumerate(RATES) for k in range(s)]
    rescored = tmp_path / "rescored.jsonl"
    assert cli("rescore", write_rows(tmp_path / "rollouts.jsonl", rows), "-o", rescored).exit_code == 0

    from_summarize = summarize([rescored])["pass_rates"]["by_model"]["m"]["histogram"]
    from_passrates = measure([rescored], tmp_path / "t.jsonl", key_by="prompt").models["m"]["histogram"]
    doc = build_report([rescored])
    (section,) = [s for s in doc["sections"] if s["id"].startswith("rescored-")]
    from_report = section["summary"]["pass_rates"]["by_model"]["m"]["histogram"]  # per model since issue 27
    assert from_summarize == from_passrates == from_report == WANT

    profiles = DatasetTally(examples=1)
    for i, (s, p) in enumerate(RATES):
        profiles.add(
            Row("d.jsonl", i + 1, i, {"reward_profiles": [{"model_hf_path": "m", "pass_rate": p / s}]})
        )
    assert profiles.profiles["m"].counts == WANT
