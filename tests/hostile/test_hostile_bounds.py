"""Bounded work: no row, response, pattern or template can make a command run without bound.

- Every grading mode's work grows linearly with the response, on adversarial responses for each mode
  (linearity.py: a size-4n response against a size-n one, in a child process, by CPU time; linear work is
  near 4x, quadratic near 16x; allowed 10x; never an absolute time).
- A custom output_regex that backtracks catastrophically on Python's `re` (the engine NeMo Gym uses, which the
  grader must use where the engines differ: POSIX classes, fuzzy syntax, dotted capital I) is bounded in
  every command that runs it, run as a real process with a deadline far beyond the bound: unbounded, each
  would run for hours.
- convert's templates render under bounds of time, memory and output (tightened here so the tries are quick).
- --workers above the cores available is capped, with the same note, in every command that takes it.
- The contamination check (audit, prepare --decontaminate-against) works on distinct n-grams and distinct
  benchmark questions, each document capped at features.MAX_WORDS words: its growth measured as above.
- curriculum: the ordered output's size checked before writing, rows validated as rows, tables of 10^9
  samples per question pooled in bounded work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from . import build
from .kit import FAILURE, OK, USAGE, assert_clean, check, run
from .linearity import GENERATORS, SETTINGS

HERE = Path(__file__).parent
DEADLINE = 180  # seconds before a try is declared unbounded (the bound itself is 0.5 s per row)
RATIO = 10.0  # a size-4n response may cost at most 10x a size-n one (linear ~4x, quadratic ~16x)
FLOOR = 0.005  # seconds of CPU under which a size-4n grade is not worth a ratio (timer noise)
SIZE = 4000  # characters of the size-n response

# a pattern `re` must run (a POSIX class: `regex` reads it otherwise) that backtracks on "aaa...a!"
CATASTROPHIC = r"(a+)+[[:alpha:]]"
BAIT = "a" * 40 + "!"

REGEX_COMMANDS = ["grade", "rescore", "validate", "prepare", "passrates", "report", "convert"]
LINEAR_SETTINGS = [mode + ("" if tm is None else " " + json.dumps(tm)) for mode, tm in SETTINGS]
COVERS = {
    "grade": len(LINEAR_SETTINGS) + 1,
    **{c: 1 for c in REGEX_COMMANDS if c != "grade"},
    "convert": 1 + 3,
    "validate": 2,
    "prepare": 2 + 1,
    "rescore": 2,
    "audit": 3,
    "curriculum": 3,
}


# ------------------------------------------------------------------------------------------ linear work


@pytest.fixture(scope="module")
def growth() -> dict[str, list[dict]]:
    """Every (mode, generator) pair measured once, in one child process."""
    p = subprocess.run(
        [sys.executable, str(HERE / "linearity.py"), str(SIZE)],
        capture_output=True,
        text=True,
        timeout=DEADLINE * 4,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    by_mode: dict[str, list[dict]] = {}
    for line in p.stdout.splitlines():
        row = json.loads(line)
        by_mode.setdefault(row["mode"], []).append(row)
    return by_mode


@pytest.mark.parametrize("setting", LINEAR_SETTINGS)
def test_every_mode_grades_in_linear_time(growth, setting):
    rows = growth[setting]
    assert {r["case"] for r in rows} == set(GENERATORS)
    slow = [
        f"{r['case']}: {r['small'] * 1e3:.1f} ms -> {r['large'] * 1e3:.1f} ms (x{r['ratio']:.1f})"
        for r in rows
        if r["large"] >= FLOOR and r["ratio"] > RATIO
    ]
    assert not slow, f"{setting}: work grows faster than the response: {slow}"


# ---------------------------------------------------------------------------------------- regex bound


def _proc(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcqa_prep", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        cwd=cwd,
    )


def _one_line_contract(p: subprocess.CompletedProcess, codes: tuple[int, ...]) -> None:
    where = f"exit {p.returncode}\n--- stdout\n{p.stdout[-1500:]}\n--- stderr\n{p.stderr[-1500:]}"
    assert p.returncode in codes, where
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr, where
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) <= 1, where


def _bait_rows() -> list[dict]:
    rows = []
    for i in range(4):
        row = build.mcqa_row(i)
        row["template_metadata"] = {"template_id": "bait", "output_regex": CATASTROPHIC}
        row["responses_create_params"]["input"][0]["content"] += f"\n{BAIT}"  # the prompt itself baits it
        rows.append(row)
    return rows


@pytest.mark.parametrize("command", REGEX_COMMANDS)
def test_a_catastrophic_pattern_is_bounded_in_every_command(tmp_path, command):
    rows = _bait_rows()
    train = build.write(tmp_path / "train.jsonl", build.jsonl(rows))
    rollouts = build.write(
        tmp_path / "rollouts.jsonl", build.jsonl([build.rollout(r, BAIT, 1.0) for r in rows])
    )
    out = tmp_path / "out"
    if command == "grade":
        p = _proc(
            "grade",
            BAIT,
            "--option",
            "A=x",
            "--option",
            "B=y",
            "--regex",
            CATASTROPHIC,
            "--format",
            "json",
            cwd=tmp_path,
        )
        _one_line_contract(p, (OK,))
        assert json.loads(p.stdout)["status"] == "regex_timeout"
    elif command == "rescore":
        p = _proc("rescore", rollouts, "-o", out, "--format", "json", cwd=tmp_path)
        _one_line_contract(p, (OK, FAILURE))
        assert json.loads(p.stdout)["by_status"] == {"regex_timeout": 4}
    elif command == "passrates":
        p = _proc("passrates", rollouts, "--rescore", "-o", out, "--format", "json", cwd=tmp_path)
        _one_line_contract(p, (OK, FAILURE))
    elif command == "convert":
        tpl = build.write(
            tmp_path / "bait.j2",
            f"---\nid: bait\noutput_regex: {CATASTROPHIC}\n---\n{{{{ question }}}}\n{BAIT}\n{{{{ options_block }}}}\n".encode(),
        )
        arc = build.write(tmp_path / "arc.jsonl", build.jsonl(build.arc_rows(4)))
        p = _proc("convert", arc, "-o", out / "c.jsonl", "--template", tpl, "--format", "json", cwd=tmp_path)
        _one_line_contract(p, (OK, FAILURE, USAGE))
    else:
        extra = {"prepare": ["-o", out, "--on-invalid", "reject"], "report": ["-o", out / "r.html"]}
        p = _proc(command, train, *extra.get(command, []), "--format", "json", cwd=tmp_path)
        _one_line_contract(p, (OK, FAILURE))
    assert_clean(tmp_path, out)


# ------------------------------------------------------------------------------------------- templates


@pytest.mark.parametrize(
    "name,body,bound",
    [
        ("burns_cpu", "{% for a in range(99999) %}{% for b in range(99999) %}{% endfor %}{% endfor %}", "s;"),
        ("eats_memory", '{{ "x" * 10000000000 }}', "MiB of memory"),
        ("floods_output", '{{ "x" * 5000 }}', "characters"),
    ],
)
def test_a_template_past_its_bounds_is_one_line_naming_it(tmp_path, monkeypatch, name, body, bound):
    from mcqa_prep.convert import sandbox

    monkeypatch.setattr(sandbox, "RENDER_SECONDS", 1.0)
    monkeypatch.setattr(sandbox, "RENDER_MEMORY", 256 << 20)
    monkeypatch.setattr(sandbox, "RENDER_CHARS", 4000)
    tpl = build.write(
        tmp_path / f"{name}.j2",
        f"---\nid: {name}\ngrading_mode: strict_single_letter_boxed\n---\n{{{{ question }}}}\n"
        f"{{{{ options_block }}}}\n{body}\nPut the letter in \\boxed{{}}.\n".encode(),
    )
    arc = build.write(tmp_path / "arc.jsonl", build.jsonl(build.arc_rows(3)))
    out = tmp_path / "out" / "c.jsonl"
    res = run(["convert", arc, "-o", out, "--template", tpl, "--format", "json"])
    doc = check(res, FAILURE)
    assert doc["error"]["reason"] == "template_bound" and f"template {name!r}" in doc["error"]["message"]
    assert bound in doc["error"]["message"]
    assert len(res.stderr.strip().splitlines()) == 1 and not out.exists()
    assert_clean(tmp_path / "out")


# ---------------------------------------------------------------------------------------------- workers


@pytest.mark.parametrize("command", ["validate", "prepare", "rescore"])
def test_workers_above_the_cores_are_capped_with_one_note(tmp_path, command):
    from mcqa_prep.parallel import available_cores

    out = tmp_path / "out"
    args = {
        "validate": ["validate", build.TRAIN],
        "prepare": ["prepare", build.TRAIN, "-o", out],
        "rescore": ["rescore", build.ROLLOUTS, "--rows", build.TRAIN, "-o", out],
    }[command]
    many = os.cpu_count() or 1
    res = run([*args, "--workers", str(max(999, many + 1)), "--format", "json", "-q"])
    check(res, (OK, FAILURE))
    notes = [ln for ln in res.stderr.splitlines() if ln.startswith("note: --workers")]
    assert notes == [
        f"note: --workers {max(999, many + 1)} capped at {available_cores()}, the cores available to this process"
    ]


# -------------------------------------------------------------------------------------- contamination


def _mcqa_words(n: int, word: str = "a") -> dict:
    """A dataset row whose question is `word` n times, with four one-word options."""
    row = build.mcqa_row(0)
    row["responses_create_params"]["input"][0]["content"] = " ".join([word] * n) + "\nA: x\nB: y\nC: z\nD: w"
    row["options"] = [{"A": "x"}, {"B": "y"}, {"C": "z"}, {"D": "w"}]
    row["expected_answer"] = "A"
    return row


def _bench_words(path: Path, n: int, repeat: int = 1, word: str = "a") -> Path:
    line = json.dumps({"question": " ".join([word] * n), "choices": ["x", "y", "z", "w"], "answer": 0}) + "\n"
    path.write_text(line * repeat)
    return path


def _audit_cpu(tmp: Path, n: int) -> float:
    """CPU seconds of the contamination check of one row of n words against a question of n words (the
    issue's shape: the word "a" n times on both sides), least of two runs, in this process (one worker)."""
    import time

    from mcqa_prep.audit.run import Request, audit

    rows = build.write(tmp / f"rows{n}.jsonl", build.jsonl([_mcqa_words(n)]))
    bench = _bench_words(tmp / f"bench{n}.jsonl", n)
    best = float("inf")
    for _ in range(2):
        t = time.process_time()
        doc = audit([rows], Request(against=(str(bench),), duplicates=False), workers=1)
        best = min(best, time.process_time() - t)
        assert doc["summary"]["contaminated_rows"] == 1
    return best


def test_contamination_work_grows_with_distinct_ngrams_not_their_product(tmp_path):
    """'a' x 2,500 against itself took 12-19 s and 650 MB, x 20,000 was killed at 24 GB: every repeat of the
    row's n-gram met every repeat of the question's. Linear work: a 4n-word pair costs about 4x an n-word
    pair (quadratic: 16x); allowed RATIO, never an absolute time."""
    _audit_cpu(tmp_path, 50)  # imports, tables
    small, large = _audit_cpu(tmp_path, 1500), _audit_cpu(tmp_path, 6000)
    assert large < FLOOR * 20 or large / small <= RATIO, f"{small:.3f} s -> {large:.3f} s"


def test_a_benchmark_question_repeated_is_indexed_once(tmp_path):
    """One question repeated 50,000 times (the issue's try: 1,000,000 times, 46 s and 2 GB against 8 rows):
    one item, the repeats counted, the match counted for every benchmark file that holds it."""
    from mcqa_prep.audit import benchmarks

    one = _bench_words(tmp_path / "one.jsonl", 30, repeat=50_000, word="quark")
    other = _bench_words(tmp_path / "other.jsonl", 30, word="quark")
    index = benchmarks.load([one, other])
    assert len(index) == 1
    assert [f.repeated for f in index.files] == [49_999, 1] and [f.questions for f in index.files] == [
        50_000,
        1,
    ]
    rows = build.write(tmp_path / "rows.jsonl", build.jsonl([_mcqa_words(30, "quark"), build.mcqa_row(3)]))
    doc = check(run(["audit", rows, "--against", one, "--against", other, "--format", "json"]), OK)
    c = doc["contamination"]
    assert c["rows"] == 1 and c["by_benchmark"] == {str(one): 1, str(other): 1}
    assert c["findings"][0]["matches"][0]["benchmark"]["also_in"] == [
        {"file": str(other), "benchmark": str(other)}
    ]
    assert doc["benchmarks"][0]["repeated_questions"] == 49_999


def test_a_document_is_compared_on_its_first_max_words(tmp_path):
    """The cap per document, stated in --help: no document costs more than MAX_WORDS words' n-grams."""
    from mcqa_prep.audit import features as ft

    lay = ft.layout([[["w"] * (ft.MAX_WORDS - 10), ["o"] * 50, ["p"] * 5], [["q"] * 3]])
    per_doc = [int((lay.owner == d).sum()) for d in range(2)]
    assert per_doc == [ft.MAX_WORDS, 3]
    for command in ("audit", "prepare"):
        assert f"{ft.MAX_WORDS:,} words" in " ".join(run([command, "--help"]).stdout.split())


def _decontaminate_cpu(tmp: Path, n: int) -> float:
    """CPU seconds of prepare's row filter (audit/decontaminate.py, run in its workers) on one row of n
    words against a question of n words, least of two runs."""
    import time

    from mcqa_prep.audit.decontaminate import Decontamination, DecontaminationRequest
    from mcqa_prep.records import Row

    bench = _bench_words(tmp / f"dbench{n}.jsonl", n)
    check_ = Decontamination.load(DecontaminationRequest((str(bench),)))
    assert check_ is not None
    rows = [Row("train.jsonl", 1, 0, _mcqa_words(n), None, "train")]
    best = float("inf")
    for _ in range(2):
        t = time.process_time()
        assert list(check_.check_rows(rows)) == [0]
        best = min(best, time.process_time() - t)
    return best


def test_prepare_decontamination_grows_with_distinct_ngrams(tmp_path):
    """prepare --decontaminate-against runs the same check in its workers: 'a' x 5,000 took 48 s and 2.4 GB."""
    _decontaminate_cpu(tmp_path, 50)
    small, large = _decontaminate_cpu(tmp_path, 1500), _decontaminate_cpu(tmp_path, 6000)
    assert large < FLOOR * 20 or large / small <= RATIO, f"{small:.3f} s -> {large:.3f} s"
    rows = build.write(tmp_path / "in" / "train.jsonl", build.jsonl([_mcqa_words(5000), build.mcqa_row(1)]))
    bench = _bench_words(tmp_path / "bench.jsonl", 5000)
    doc = check(
        run(["prepare", rows, "-o", tmp_path / "out", "--decontaminate-against", bench, "--format", "json"]),
        OK,
    )
    assert doc["counts"]["dropped_by_reason"] == {"contaminated": 1}


# ------------------------------------------------------------------------------------------ curriculum


def test_curriculum_refuses_an_ordered_output_past_its_limit_before_writing(tmp_path):
    """--steps 1000000 --prompts-per-step 1000000 wrote 4 GB in 15 s: the size is checked up front."""
    table = tmp_path / "t.jsonl"
    check(run(["passrates", build.rescored(tmp_path), "-o", table, "-q"]), OK)
    out = tmp_path / "out"
    res = run(
        ["curriculum", table, "--rows", build.TRAIN, "-o", out / "s.jsonl", "--ordered-out", out / "o.jsonl",
         "--steps", "1000000", "--prompts-per-step", "1000000", "--format", "json"]
    )  # fmt: skip
    doc = check(res, USAGE)
    assert doc["error"]["reason"] == "ordered_too_large" and "50,000,000" in doc["error"]["message"]
    assert not out.exists()
    assert "50,000,000" in " ".join(run(["curriculum", "--help"]).stdout.split())


def test_curriculum_schedules_rows_only(tmp_path):
    """A line that is not a row ({"x": NaN}: scheduled, its NaN written as null) is rejected by reason."""
    table = tmp_path / "t.jsonl"
    check(run(["passrates", build.rescored(tmp_path), "-o", table, "-q"]), OK)
    rows = build.TRAIN.read_bytes() + b'{"x": NaN}\n{"x": 1}\n'
    src = build.write(tmp_path / "in" / "rows.jsonl", rows)
    out = tmp_path / "out"
    doc = check(
        run(
            [
                "curriculum",
                table,
                "--rows",
                src,
                "-o",
                out / "s.jsonl",
                "--rows-out",
                out / "r.jsonl",
                "--format",
                "json",
            ]
        ),
        OK,
    )
    r = doc["header"]["rows"]
    assert r["rejected"] == {"non_json_value": 1, "not_a_row": 1} and r["scheduled"] == 8
    assert [x.split(": ")[0] for x in r["rejected_examples"]] == [f"{src}:9", f"{src}:10"]
    assert all("x" not in row for row in map(json.loads, (out / "r.jsonl").read_text().splitlines()))


def _big_table(src: Path, out: Path, scale: int, tag: str) -> Path:
    """A valid table whose every question has `scale` times the sample's samples (10^9 and more), its variants
    scaled alike, estimated and written by the table's own code."""
    from mcqa_prep.passrates.consistency import header_doc
    from mcqa_prep.passrates.entries import Variant
    from mcqa_prep.passrates.estimate import Counts, estimated
    from mcqa_prep.passrates.table import read_table, write_table

    t = read_table(src)
    cells, counted = {}, {}
    for key, per in t.entries.items():
        for model, e in per.items():
            n, c = e.samples * scale, e.passes * scale
            votes = ((c,) if c else (), (n - c,) if n - c else ())
            cells[(key, model)] = Counts(n, n, c, e.mean_reward * n, 0, votes)
            vs = tuple(
                Variant(v.prompt, v.gold, v.samples * scale, v.passes * scale) for v in e.variants or ()
            )
            counted[(key, model)] = (e.k, vs)
    est = estimated(cells, counted, t.no_answer, t.level, t.buckets)
    header = {k: v for k, v in t.header.items() if k not in ("table_schema", "tool", "created_at", "entries")}
    header.pop("content_sha256", None)
    header["inputs"] = [{"name": f"{tag}.jsonl", "sha256": tag * 64, "bytes": 1}]
    header["metrics"] = est.metrics
    header["posterior"] = {**header["posterior"], "priors": {m: p.to_dict() for m, p in est.priors.items()}}
    header["consistency"] = header_doc(est.entries, t.buckets, est.priors_by_k)
    write_table(out, header, est.entries)
    return out


def test_pooling_tables_of_a_billion_samples_per_question_is_bounded(tmp_path):
    """Two tables of 10^9 samples per question: pooling hung on binomials of a billion digits (pass@k) and
    a majority vote over a billion samples; its cost must not depend on the counts' magnitude."""
    table = tmp_path / "t.jsonl"
    check(run(["passrates", build.rescored(tmp_path), "-o", table, "-q"]), OK)
    a = _big_table(table, tmp_path / "a.jsonl", 10**9, "a")
    b = _big_table(table, tmp_path / "b.jsonl", 3 * 10**9, "b")
    p = _proc(
        "curriculum",
        a,
        b,
        "--rows",
        build.TRAIN,
        "-o",
        tmp_path / "s.jsonl",
        "--format",
        "json",
        cwd=tmp_path,
    )
    _one_line_contract(p, (OK,))
    assert json.loads(p.stdout)["header"]["rows"]["scheduled"] == 8
