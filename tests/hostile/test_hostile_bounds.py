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
    "prepare": 2,
    "rescore": 2,
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
