"""audit's parts and its command: what is compared (normalised words, the question cut out of a prompt),
benchmark files in convert's layouts, duplicates, wrong keys under one contract, position bias, the CLI
contract (text, one JSON document, -o, --fail-on-findings, usage errors)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
from audit_helpers import A, _rollout
from conftest import FIXTURES, SAMPLE, read_jsonl, write_jsonl

from mcqa_prep.audit import Request, audit
from mcqa_prep.audit import features as ft
from mcqa_prep.audit.contamination import Settings
from mcqa_prep.audit.text import RowText, option_words, template_instructions, words
from mcqa_prep.errors import ContractMismatch, InputError, UsageError

VOCAB = A.Vocabulary()


def _questions(n: int, seed: int = 1, topics=range(0, 8), n_options=(4,)) -> list[dict]:
    return list(A.questions(seed, n, topics, VOCAB, n_options=n_options))


def _dataset(path: Path, qs: list[dict], seed: int = 3) -> Path:
    import random

    rnd = random.Random(seed)
    return write_jsonl(path, [A.row(q, rnd) for q in qs])


# ---- what is compared ---------------------------------------------------------------------------------


def test_words_ignore_case_punctuation_whitespace_and_compatibility_forms():
    assert words("  The Cell-Wall;\tis\nTHICK?") == ["the", "cell", "wall", "is", "thick"]
    assert words("ＡＴＰ synthase") == words("ATP  synthase")  # full-width letters (NFKC)
    assert words("Ünïcode  Straße") == ["ünïcode", "strasse"]  # casefold


@pytest.mark.parametrize("label", ["A) ", "(a) ", "C. ", "[D] ", "B: ", " (E) "])
def test_an_options_own_letter_label_is_not_compared(label):
    assert option_words(label + "Golgi apparatus") == ["golgi", "apparatus"]
    assert option_words("3.5 cm") == ["3", "5", "cm"] and option_words("A cell") == ["a", "cell"]


def test_the_question_is_cut_out_of_nemo_gym_prompts():
    rows = read_jsonl(FIXTURES / "example.jsonl")
    p = RowText().parse(rows[0])
    assert " ".join(p.question).endswith("specific mutation associated with cystic fibrosis")
    assert p.options[0] == ["karyotyping"] and p.gold == "B" and p.letters[:2] == ["A", "B"]
    learned = RowText(
        [
            "you should output your final response letter inside boxed and nothing else you can first think step by step"
        ]
    )
    assert learned.parse(rows[0]).question[:4] == ["which", "of", "the", "following"]


def test_a_rows_template_prompt_sentences_are_instructions_placeholders_included():
    row = read_jsonl(SAMPLE / "train.jsonl")[1]  # template_prompt with {letters} and {{X}}
    assert " ".join(RowText().parse(row).question) == "what is the si unit of electrical capacitance"
    ins = template_instructions("Answer this. The reply ends with one of {letters}.\n\n{problem}")
    assert ins.match("answer this", 2) and ins.match("the reply ends with one of a b c d", 9)
    assert not ins.match("what is the reply", 4)  # a question sentence is not the template's


def test_signatures_start_no_thread_pool_that_would_deadlock_forked_workers():
    def threads() -> int:
        return len(os.listdir(f"/proc/{os.getpid()}/task"))

    docs = [[["alpha", "beta", str(i)], ["gamma"]] for i in range(2000)]
    before = threads()
    feats, offs = ft.kgrams(docs, 2, short=True)
    sigs = ft.signatures(feats, offs)
    assert sigs.shape == (2000, ft.NUM_PERM) and threads() == before


def test_short_segments_count_as_one_feature_and_ngrams_never_cross_segments():
    feats, offs = ft.kgrams([[["a", "b", "c"], ["d"]], [["d"], ["a", "b", "c"]]], 2, short=True)
    assert list(offs) == [0, 3, 6] and sorted(feats[:3]) == sorted(feats[3:])
    grams, goffs = ft.kgrams([[["a", "b"], ["c", "d"]]], 3, short=False)
    assert len(grams) == 0


# ---- contamination ------------------------------------------------------------------------------------


def test_benchmarks_in_three_layouts_are_read_and_hashed(tmp_path):
    qs = _questions(30)
    bench = [
        A.write_mmlu(tmp_path / "mmlu.jsonl", qs[:10]),
        A.write_mmlu_pro(tmp_path / "pro.parquet", qs[10:20]),
        A.write_gpqa(tmp_path / "gpqa.csv", qs[20:]),
    ]
    data = _dataset(
        tmp_path / "train.jsonl", [qs[2], A.shuffled(qs[15], __import__("random").Random(1)), qs[25]]
    )
    doc = audit([data], Request(against=tuple(map(str, bench))))
    assert [b["preset"] for b in doc["benchmarks"]] == ["mmlu", "mmlu_pro", "gpqa"]
    assert all(len(b["sha256"]) == 64 and b["questions"] == 10 for b in doc["benchmarks"])
    lines = {f["row"]["line"]: f["matches"][0]["benchmark"] for f in doc["contamination"]["findings"]}
    assert lines[1]["file"].endswith("mmlu.jsonl") and lines[1]["line"] == 3
    assert lines[2]["file"].endswith("pro.parquet") and lines[2]["id"] == 5
    assert lines[3]["file"].endswith("gpqa.csv") and lines[3]["id"] == "rec00005"


def test_a_benchmark_in_its_own_layout_is_read_with_a_column_map(tmp_path, cli):
    q = _questions(3)
    path = tmp_path / "own.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["q", "a", "b", "c", "d", "key"])
        for x in q:
            w.writerow([x["question"], *x["options"], "ABCD"[x["gold"]]])
    data = _dataset(tmp_path / "train.jsonl", q[:1])
    res = cli("audit", data, "--against", path, "--format", "json", "-q")
    assert res.exit_code == 2 and json.loads(res.stdout)["error"]["reason"] == "bench_layout"
    assert "--bench-preset" in json.loads(res.stdout)["error"]["hint"]
    maps = [f"--bench-map={k}" for k in ("question=q", "options=a,b,c,d", "answer=key")]
    doc = json.loads(cli("audit", data, "--against", path, *maps, "--format", "json", "-q").stdout)
    assert doc["summary"]["contaminated_rows"] == 1


def test_thresholds_are_checked():
    with pytest.raises(UsageError):
        Settings(ngram=3).check()
    with pytest.raises(UsageError):
        Settings(similarity=0).check()


def test_a_benchmark_without_questions_is_refused(tmp_path):
    empty = write_jsonl(tmp_path / "mmlu.jsonl", [{"question": "", "choices": ["a", "b"], "answer": 0}])
    with pytest.raises(InputError) as e:
        audit([SAMPLE / "train.jsonl"], Request(against=(str(empty),)))
    assert e.value.reason == "bench_empty"


# ---- duplicates, keys, bias ---------------------------------------------------------------------------


def test_duplicates_exact_permuted_and_near_within_and_across_splits(tmp_path):
    import random

    rnd = random.Random(4)
    qs = _questions(40, seed=8)
    train = write_jsonl(tmp_path / "train.jsonl", [A.row(q, rnd, 0) for q in qs])
    dup = {**qs[5], "question": qs[5]["question"].replace(" ", "  ")}
    val = write_jsonl(
        tmp_path / "validation.jsonl",
        [
            A.row(dup, rnd, 0),
            A.row(A.shuffled(qs[6], rnd), rnd, 0),
            A.row(A.edit(qs[7], "one_word", rnd, VOCAB), rnd, 0),
        ],
    )
    rows = read_jsonl(val)
    rows[0]["uuid"] = read_jsonl(train)[5][
        "uuid"
    ]  # the same question and uuid: a template variant, or a leak
    val = write_jsonl(val, rows)
    doc = audit([train, val], Request())
    assert [f["same_uuid"] for f in doc["duplicates"]["findings"]] == [True, False, False]
    assert doc["duplicates"]["same_uuid"] == 1
    got = {
        f["row"]["line"]: (f["kind"], f["first"]["line"], f["cross_split"])
        for f in doc["duplicates"]["findings"]
    }
    assert got[1] == ("exact", 6, True) and got[2] == ("permuted_options", 7, True)
    assert got[3][1:] == (8, True) and doc["duplicates"]["cross_split"] == 3


def _keys_setup(tmp_path: Path) -> tuple[Path, Path, dict]:
    import random

    rnd = random.Random(2)
    qs = _questions(6, seed=5)
    qs[0]["gold"], qs[1]["gold"] = 0, 2
    rows = [A.row(q, rnd, 0) for q in qs]
    data = write_jsonl(tmp_path / "train.jsonl", rows)
    wrong = next(L for L in "ABCD" if L != rows[0]["expected_answer"])
    lines = [_rollout(rows[0], m, wrong) for m in ("m1", "m2") for _ in range(3)]
    lines += [_rollout(rows[1], "m1", L) for L in (rows[1]["expected_answer"], wrong) * 3]
    return data, write_jsonl(tmp_path / "rollouts.jsonl", lines), {"wrong": rows[0], "split": rows[1]}


def test_wrong_keys_from_raw_rollouts_and_the_same_from_rescored_ones(tmp_path, cli):
    data, rollouts, rows = _keys_setup(tmp_path)
    doc = audit([data], Request(rollouts=(str(rollouts),)))
    k = doc["wrong_keys"]
    assert [f["row"]["line"] for f in k["wrong_keys"]] == [1] and k["flagged"] == 1
    assert k["wrong_keys"][0]["rollouts"] == 6 and set(k["wrong_keys"][0]["models"]) == {"m1", "m2"}
    res = cli("rescore", rollouts, "--rows", data, "-o", tmp_path / "rescored.jsonl", "-q")
    assert res.exit_code == 0
    again = audit([data], Request(rollouts=(str(tmp_path / "rescored.jsonl"),)))["wrong_keys"]
    assert (
        again["wrong_keys"] == k["wrong_keys"]
        and again["evidence"]["contract_id"] == k["evidence"]["contract_id"]
    )


def test_a_rollout_that_does_not_record_its_answer_is_no_evidence_of_a_letter(tmp_path, cli):
    """As passrates reads answers (passrates.cells): a graded rollout without an answer names no letter
    ('none', it counts against agreement), one whose extracted answer is not recorded is no evidence at all."""
    data, rollouts, _ = _keys_setup(tmp_path)
    cli("rescore", rollouts, "--rows", data, "-o", tmp_path / "rescored.jsonl", "-q")
    rescored = read_jsonl(tmp_path / "rescored.jsonl")
    for r in rescored[:6]:  # the wrong key's six rollouts
        del r["extracted_answer"]
    unknown = audit([data], Request(rollouts=(str(write_jsonl(tmp_path / "u.jsonl", rescored)),)))
    k = unknown["wrong_keys"]
    assert k["flagged"] == 0 and k["answers_unknown"] == 6
    for r in rescored[:6]:
        r["extracted_answer"] = None
    none = audit([data], Request(rollouts=(str(write_jsonl(tmp_path / "n.jsonl", rescored)),)))["wrong_keys"]
    assert none["flagged"] == 0 and none["answers_unknown"] == 0
    assert none["rows_with_rollouts"] == k["rows_with_rollouts"] + 1  # the row's rollouts count, naming none


def test_rollouts_under_another_contract_are_refused(tmp_path, cli):
    data, rollouts, _ = _keys_setup(tmp_path)
    cli("rescore", rollouts, "--rows", data, "-o", tmp_path / "other.jsonl", "--final-answer-only", "-q")
    raw = read_jsonl(rollouts)[:2]
    mixed = write_jsonl(tmp_path / "mixed.jsonl", read_jsonl(tmp_path / "other.jsonl") + raw)
    with pytest.raises(ContractMismatch) as e:
        audit([data], Request(rollouts=(str(mixed),)))
    assert e.value.reason == "contracts_mixed"


def test_answer_letter_bias_is_recall_per_letter_and_its_spread(tmp_path):
    data, rollouts, _ = _keys_setup(tmp_path)
    bias = audit([data], Request(rollouts=(str(rollouts),)))["position_bias"]["answer_bias"]
    m1 = next(b for b in bias if b["model"] == "m1")
    assert m1["recall"] == {"A": 0.0, "C": 0.5} and m1["rstd"] == 25.0 and m1["rollouts"] == 9
    assert m1["gold"]["A"] == 3 and m1["gold"]["C"] == 6


def test_gold_balance_per_option_count_flags_a_biased_letter(tmp_path):
    qs = [{**q, "gold": 0} for q in _questions(120, seed=12)]
    doc = audit([_dataset(tmp_path / "train.jsonl", qs)], Request(duplicates=False))
    by_n = doc["position_bias"]["gold_by_options"]["4"]
    assert by_n["flagged"] == ["A"] and by_n["gold"] == {"A": 120} and doc["duplicates"] is None


# ---- the command --------------------------------------------------------------------------------------


def test_cli_text_json_output_file_and_fail_on_findings(tmp_path, cli):
    qs = _questions(20, seed=30)
    bench = A.write_mmlu(tmp_path / "mmlu.jsonl", qs)
    data = _dataset(tmp_path / "train.jsonl", qs[:2] + _questions(5, seed=31))
    res = cli("audit", data, "--against", bench, "-q")
    assert res.exit_code == 0 and "contamination: 2 row(s)" in res.output
    res = cli("audit", data, "--against", bench, "--format", "json", "-q", "-o", tmp_path / "a.json")
    doc = json.loads(res.stdout)
    assert res.exit_code == 0 and doc["ok"] is True and doc["summary"]["contaminated_rows"] == 2
    assert json.loads((tmp_path / "a.json").read_text())["summary"] == doc["summary"]
    res = cli("audit", data, "--against", bench, "--format", "json", "-q", "--fail-on-findings")
    doc = json.loads(res.stdout)
    assert res.exit_code == 1 and doc["ok"] is False and doc["error"]["reason"] == "audit_findings"


def test_unreadable_data_lines_fail_the_audit_unless_skipped(tmp_path, cli):
    """An audit that could not read a line may have missed the contaminated row: exit 1 and no document,
    unless --on-invalid reject (then the lines are counted)."""
    qs = _questions(6, seed=40)
    bench = A.write_mmlu(tmp_path / "mmlu.jsonl", qs)
    data = _dataset(tmp_path / "train.jsonl", qs[:2] + _questions(3, seed=41))
    lines = data.read_bytes().splitlines(keepends=True)
    data.write_bytes(b"".join(lines[:2] + [b"{not json\n", b"\xff\xfe\n"] + lines[2:]))
    out = tmp_path / "a.json"
    res = cli("audit", data, "--against", bench, "-o", out, "--format", "json", "-q")
    doc = json.loads(res.stdout)
    assert res.exit_code == 1 and doc["error"]["reason"] == "unreadable_rows"
    assert "train.jsonl:3" in doc["error"]["message"] and "--on-invalid reject" in doc["error"]["message"]
    assert doc["summary"]["unreadable_rows"] == 2 and not out.exists()
    res = cli(
        "audit", data, "--against", bench, "-o", out, "--on-invalid", "reject", "--format", "json", "-q"
    )
    doc = json.loads(res.stdout)
    assert res.exit_code == 0 and doc["summary"]["unreadable_rows"] == 2 and doc["summary"]["rows"] == 7
    assert doc["summary"]["contaminated_rows"] == 2 and out.exists()


@pytest.mark.parametrize(
    "args, reason",
    [
        (["--against", "{data}"], None),  # the dataset against itself: allowed (every row found)
        (["--contamination-ngram", "3"], "usage"),
        (["-o", "{data}"], "output_is_input"),
        (["--key-by", "nope"], "usage"),
    ],
)
def test_cli_usage(tmp_path, cli, args, reason):
    data = _dataset(tmp_path / "train.jsonl", _questions(3))
    res = cli("audit", data, *[a.format(data=data) for a in args], "--format", "json", "-q")
    doc = json.loads(res.stdout)
    if reason is None:
        assert res.exit_code == 2 and doc["error"]["reason"] == "bench_layout"
    else:
        assert res.exit_code == 2 and doc["error"]["reason"] == reason
