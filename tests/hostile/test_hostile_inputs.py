"""Inputs read twice, and inputs given twice: one rule each, tried on every input of every command.

- A pipe (`<(cat rows.jsonl)`, here /dev/fd/N of a pipe this process filled) where a file is expected: a
  command either reads it once, with the outcome the same file gives, or refuses it up front as a usage
  error (exit 2). A second pass over a pipe finds nothing: `audit <(cat rows)` audited 3,000 rows of 5,000
  and said ok. Every input parameter of every command is tried (the parameters are read from the CLI
  itself, so a new one fails here until it is listed).
- The same file twice, or a byte-identical copy under another name, where inputs are pooled: refused as a
  usage error (`input_repeated`), never counted twice (`passrates r.jsonl r.jsonl` reported pass@2 on one
  sample per question).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest

from mcqa_prep.cli import COMMANDS, main

from . import build
from .kit import OK, USAGE, check, run, strict_lines

REPO = build.REPO
BENCH = REPO / "data" / "benchmark" / "sample.jsonl"
ARC = REPO / "data" / "examples" / "arc_sample.jsonl"

# parameters that name an output, or a directory (a pipe is neither)
OUTPUTS = {
    ("pull", "to"),
    ("prepare", "out_dir"),
    ("rescore", "output"),
    ("convert", "out"),
    ("convert", "rejects"),
    ("passrates", "output"),
    ("curriculum", "output"),
    ("curriculum", "rows_out"),
    ("curriculum", "ordered_out"),
    ("report", "output"),
    ("audit", "output"),
    ("gym-component", "directory"),
}
DIRECTORIES = {("verify", "directory"), ("serve", "prepared"), ("gym-component", "prepared")}
EXEMPT = {
    ("serve", "policy_path"): "serve runs a server; its policy is read by the reader contract's is tried with"
}


class Fixtures:
    """The inputs every try starts from, built once per test."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.rescored = build.rescored(tmp)
        self.table = tmp / "t.passrates.jsonl"
        check(run(["passrates", self.rescored, "-o", self.table, "-q"]), OK)
        self.audit = tmp / "audit.json"
        check(run(["audit", build.TRAIN, "--against", BENCH, "-o", self.audit, "-q"]), OK)
        self.policy = build.write(tmp / "policy.json", b"{}")
        self.prepared = build.prepared(tmp)
        self.template = build.write(
            tmp / "t.j2",
            b"---\nid: mine\ngrading_mode: strict_single_letter_boxed\n---\n{{ question }}\n{{ options_block }}\n"
            b"Put the letter in \\boxed{}.\n",
        )


def _o(f: Fixtures, name: str) -> Path:
    return f.tmp / "out" / name


# (command, parameter) -> (the file given there, argv with "{}" where it goes)
TRIES: dict[tuple[str, str], Callable[[Fixtures], tuple[Path, list[Any]]]] = {
    ("validate", "paths"): lambda f: (build.TRAIN, ["validate", "{}"]),
    ("prepare", "inputs"): lambda f: (build.TRAIN, ["prepare", "{}", "-o", _o(f, "p")]),
    ("prepare", "policy_path"): lambda f: (
        f.policy,
        ["prepare", build.TRAIN, "-o", _o(f, "p"), "--policy", "{}"],
    ),
    ("prepare", "pass_rates"): lambda f: (
        f.table,
        ["prepare", build.TRAIN, build.VALIDATION, "-o", _o(f, "p"), "--pass-rates", "{}", "--drop-solved"],
    ),
    ("prepare", "stamp_reward_profiles"): lambda f: (
        f.table,
        ["prepare", build.TRAIN, build.VALIDATION, "-o", _o(f, "p"), "--stamp-reward-profiles", "{}"],
    ),
    ("prepare", "decontaminate_against"): lambda f: (
        BENCH,
        ["prepare", build.TRAIN, "-o", _o(f, "p"), "--decontaminate-against", "{}"],
    ),
    ("verify", "policy_path"): lambda f: (f.policy, ["verify", f.prepared, "--policy", "{}"]),
    ("contract", "policy_path"): lambda f: (f.policy, ["contract", "--policy", "{}"]),
    ("rescore", "input_path"): lambda f: (
        build.ROLLOUTS,
        ["rescore", "{}", "--rows", build.TRAIN, "--rows", build.VALIDATION, "-o", _o(f, "r.jsonl")],
    ),
    ("rescore", "rows_paths"): lambda f: (
        build.TRAIN,
        ["rescore", build.ROLLOUTS, "--rows", "{}", "--rows", build.VALIDATION, "-o", _o(f, "r.jsonl")],
    ),
    ("rescore", "policy_path"): lambda f: (
        f.policy,
        [
            "rescore",
            build.ROLLOUTS,
            "--rows",
            build.TRAIN,
            "--rows",
            build.VALIDATION,
            "-o",
            _o(f, "r.jsonl"),
            "--policy",
            "{}",
        ],
    ),
    ("rescore", "compare_policy"): lambda f: (
        f.policy,
        [
            "rescore",
            build.ROLLOUTS,
            "--rows",
            build.TRAIN,
            "--rows",
            build.VALIDATION,
            "-o",
            _o(f, "r.jsonl"),
            "--compare-policy",
            "{}",
        ],
    ),
    ("convert", "sources"): lambda f: (ARC, ["convert", "{}", "-o", _o(f, "c.jsonl")]),
    ("convert", "templates"): lambda f: (
        f.template,
        ["convert", ARC, "-o", _o(f, "c.jsonl"), "--template", "{}"],
    ),
    ("summarize", "files"): lambda f: (f.rescored, ["summarize", "{}"]),
    ("passrates", "rollouts"): lambda f: (f.rescored, ["passrates", "{}", "-o", _o(f, "t.jsonl")]),
    ("passrates", "rows_paths"): lambda f: (
        build.TRAIN,
        [
            "passrates",
            build.ROLLOUTS,
            "--rescore",
            "--rows",
            "{}",
            "--rows",
            build.VALIDATION,
            "-o",
            _o(f, "t.jsonl"),
        ],
    ),
    ("passrates", "policy_path"): lambda f: (
        f.policy,
        [
            "passrates",
            build.ROLLOUTS,
            "--rescore",
            "--rows",
            build.TRAIN,
            "--rows",
            build.VALIDATION,
            "-o",
            _o(f, "t.jsonl"),
            "--policy",
            "{}",
        ],
    ),  # fmt: skip
    ("curriculum", "tables"): lambda f: (
        f.table,
        ["curriculum", "{}", "--rows", build.TRAIN, "--rows", build.VALIDATION, "-o", _o(f, "s.jsonl")],
    ),
    ("curriculum", "rows"): lambda f: (
        build.TRAIN,
        ["curriculum", f.table, "--rows", "{}", "--rows", build.VALIDATION, "-o", _o(f, "s.jsonl")],
    ),
    ("report", "paths"): lambda f: (f.rescored, ["report", "{}", "-o", _o(f, "r.html")]),
    ("report", "pass_rates"): lambda f: (
        f.table,
        ["report", build.TRAIN, "--pass-rates", "{}", "-o", _o(f, "r.html")],
    ),
    ("report", "audits"): lambda f: (
        f.audit,
        ["report", build.TRAIN, "--audit", "{}", "-o", _o(f, "r.html")],
    ),
    ("gym-component", "policy_path"): lambda f: (
        f.policy,
        ["gym-component", _o(f, "gym"), "--prepared", f.prepared, "--policy", "{}", "--license", "mit"],
    ),
    ("audit", "data"): lambda f: (build.TRAIN, ["audit", "{}", "--against", BENCH]),
    ("audit", "against"): lambda f: (BENCH, ["audit", build.TRAIN, "--against", "{}"]),
    ("audit", "rollouts"): lambda f: (
        f.rescored,
        ["audit", build.TRAIN, build.VALIDATION, "--rollouts", "{}"],
    ),
    ("audit", "policy_path"): lambda f: (f.policy, ["audit", build.TRAIN, "--policy", "{}"]),
    ("audit", "pass_rates"): lambda f: (f.table, ["audit", build.TRAIN, "--pass-rates", "{}"]),
    ("audit", "drift"): lambda f: (f.table, ["audit", build.TRAIN, "--drift", "{}", f.table]),
    ("report", "drift"): lambda f: (
        f.table,
        ["report", build.TRAIN, "--drift", "{}", f.table, "-o", _o(f, "r.html")],
    ),
}

# multi-input parameters where inputs are pooled: the same bytes twice must be refused
POOLED: dict[tuple[str, str], Callable[[Fixtures, Path, Path], list[Any]]] = {
    ("validate", "paths"): lambda f, a, b: ["validate", a, b],
    ("prepare", "inputs"): lambda f, a, b: ["prepare", a, b, "-o", _o(f, "p")],
    ("prepare", "decontaminate_against"): lambda f, a, b: [
        "prepare",
        build.TRAIN,
        "-o",
        _o(f, "p"),
        "--decontaminate-against",
        a,
        "--decontaminate-against",
        b,
    ],  # fmt: skip
    ("rescore", "rows_paths"): lambda f, a, b: [
        "rescore",
        build.ROLLOUTS,
        "--rows",
        a,
        "--rows",
        b,
        "-o",
        _o(f, "r"),
    ],
    ("convert", "sources"): lambda f, a, b: ["convert", a, b, "-o", _o(f, "c.jsonl")],
    ("summarize", "files"): lambda f, a, b: ["summarize", a, b],
    ("passrates", "rollouts"): lambda f, a, b: ["passrates", a, b, "-o", _o(f, "t.jsonl")],
    ("passrates", "rows_paths"): lambda f, a, b: [
        "passrates",
        build.ROLLOUTS,
        "--rescore",
        "--rows",
        a,
        "--rows",
        b,
        "-o",
        _o(f, "t.jsonl"),
    ],  # fmt: skip
    ("curriculum", "tables"): lambda f, a, b: [
        "curriculum",
        a,
        b,
        "--rows",
        build.TRAIN,
        "-o",
        _o(f, "s.jsonl"),
    ],
    ("curriculum", "rows"): lambda f, a, b: [
        "curriculum",
        f.table,
        "--rows",
        a,
        "--rows",
        b,
        "-o",
        _o(f, "s.jsonl"),
    ],
    ("report", "paths"): lambda f, a, b: ["report", a, b, "-o", _o(f, "r.html")],
    ("report", "pass_rates"): lambda f, a, b: [
        "report",
        build.TRAIN,
        "--pass-rates",
        a,
        "--pass-rates",
        b,
        "-o",
        _o(f, "r.html"),
    ],  # fmt: skip
    ("audit", "data"): lambda f, a, b: ["audit", a, b],
    ("audit", "against"): lambda f, a, b: ["audit", build.TRAIN, "--against", a, "--against", b],
    ("audit", "rollouts"): lambda f, a, b: [
        "audit",
        build.TRAIN,
        build.VALIDATION,
        "--rollouts",
        a,
        "--rollouts",
        b,
    ],
    ("audit", "pass_rates"): lambda f, a, b: ["audit", build.TRAIN, "--pass-rates", a, "--pass-rates", b],
}
POOLED_FILE = {
    "validate": "train",
    "prepare": "train",
    "convert": "arc",
    "summarize": "rescored",
    "report": "rescored",
    "curriculum": "train",
}
NOT_POOLED = {
    (
        "convert",
        "templates",
    ): "templates are mixed by weight, not pooled: a template given twice weighs twice",
    ("report", "audits"): "each audit document is its own section, never pooled",
    ("serve", "prepared"): "serve (another engineer's scope)",
    ("gym-component", "prepared"): "the component serves the preparations it names",
}

_COUNTS = {c: sum(k[0] == c for k in TRIES) + 2 * sum(k[0] == c for k in POOLED) for c in COMMANDS}
COVERS = {c: n + (c == "passrates") + (c == "rescore") for c, n in _COUNTS.items() if n}


def _input_params() -> set[tuple[str, str]]:
    ctx = click.Context(main)
    out = set()
    for name in COMMANDS:
        cmd = main.get_command(ctx, name)
        for p in cmd.params:
            if isinstance(p.type, click.Path):
                out.add((name, p.name))
    return out


def _pooled_params() -> set[tuple[str, str]]:
    ctx = click.Context(main)
    out = set()
    for name in COMMANDS:
        for p in main.get_command(ctx, name).params:
            many = getattr(p, "multiple", False) or getattr(p, "nargs", 1) == -1
            if isinstance(p.type, click.Path) and many and (name, p.name) not in OUTPUTS:
                out.add((name, p.name))
    return out


def test_every_input_of_every_command_is_tried_as_a_pipe():
    inputs = _input_params() - OUTPUTS - DIRECTORIES
    assert inputs == set(TRIES) | set(EXEMPT), (inputs - set(TRIES) - set(EXEMPT), set(TRIES) - inputs)


def test_every_pooled_input_is_tried_twice():
    assert _pooled_params() == set(POOLED) | set(NOT_POOLED)


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> Fixtures:
    return Fixtures(tmp_path_factory.mktemp("inputs"))


def _argv(argv: list[Any], path: Any) -> list[str]:
    return [str(path) if a == "{}" else str(a) for a in argv]


def _normal(text: str, *names: str) -> str:
    for n in names:
        text = text.replace(n, "<INPUT>")
    text = re.sub(r'"created_at": "[^"]*"', "", text)
    return re.sub(r"\d+ KB\)", "KB)", text)


@pytest.mark.parametrize("key", sorted(TRIES), ids=[f"{c}:{p}" for c, p in sorted(TRIES)])
def test_a_pipe_is_read_once_or_refused_up_front(fixtures, tmp_path, key):
    src, argv = TRIES[key](fixtures)
    shutil.rmtree(fixtures.tmp / "out", ignore_errors=True)
    plain = tmp_path / ("input" + Path(src).suffix)
    shutil.copyfile(src, plain)
    data = Path(src).read_bytes()
    assert len(data) < 60_000  # the pipe holds it all before the command opens it (64 KiB on Linux)
    base = run(_argv(argv, plain))
    check(base, OK)
    shutil.rmtree(fixtures.tmp / "out", ignore_errors=True)
    r, w = os.pipe()
    try:
        os.write(w, data)
        os.close(w)
        piped = f"/dev/fd/{r}"
        res = run(_argv(argv, piped))
    finally:
        os.close(r)
        shutil.rmtree(fixtures.tmp / "out", ignore_errors=True)
    check(res, (OK, USAGE))
    if res.exit_code == USAGE:
        return  # refused before anything was read or written
    # (a row without an id is named by its file's last path part and line: "16:3" for /dev/fd/16)
    piped_rows = re.sub(rf"\b{r}:(\d)", r"<INPUT>:\1", res.stdout)
    assert _normal(piped_rows, piped) == _normal(base.stdout, str(plain), plain.name), (
        f"{key}: a pipe read once must give what the file gives"
    )


@pytest.mark.parametrize("key", sorted(POOLED), ids=[f"{c}:{p}" for c, p in sorted(POOLED)])
@pytest.mark.parametrize("how", ["same path", "a copy"])
def test_an_input_given_twice_is_refused(fixtures, tmp_path, key, how):
    command, param = key
    src = {
        "train": build.TRAIN,
        "arc": ARC,
        "rescored": fixtures.rescored,
    }
    if param in ("tables", "pass_rates"):  # (audit's and report's --pass-rates too)
        a = fixtures.table
    elif param == "against" or param == "decontaminate_against":
        a = BENCH
    elif param in ("rollouts",):
        a = fixtures.rescored
    else:
        a = src[POOLED_FILE.get(command, "train")]
    first = tmp_path / ("first" + a.suffix)
    shutil.copyfile(a, first)
    second = first if how == "same path" else tmp_path / ("second" + a.suffix)
    if second != first:
        shutil.copyfile(a, second)
    shutil.rmtree(fixtures.tmp / "out", ignore_errors=True)
    res = run([*map(str, POOLED[key](fixtures, first, second)), "--format", "json"])
    doc = check(res, USAGE)
    # (convert's own rule comes first where the two sources also share a name: their uuids would collide)
    assert doc["error"]["reason"] in ("input_repeated", "same_source_identity"), doc["error"]
    assert str(second) in doc["error"]["message"]
    assert not (fixtures.tmp / "out").exists()


def test_passrates_of_one_file_twice_is_refused_not_doubled(fixtures, tmp_path):
    """The issue's try: the table held every sample twice, refitted the prior at its bound, reported pass@2."""
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(fixtures.rescored, copy)
    out = tmp_path / "t.jsonl"
    doc = check(run(["passrates", fixtures.rescored, copy, "-o", out, "--format", "json"]), USAGE)
    assert "same bytes" in doc["error"]["message"] and not out.exists()
    check(run(["passrates", fixtures.rescored, "-o", out, "-q"]), OK)
    header = strict_lines(out)[0]
    assert [list(m["pass_at_k"]) for m in header["metrics"].values()] == [["1"]]  # one sample per question


def test_rescore_on_ray_refuses_a_pipe_before_ray_starts(tmp_path):
    """The Ray engine plans chunks from the input's size and reads byte ranges: a pipe is refused up front."""
    pytest.importorskip("ray")
    r, w = os.pipe()
    try:
        os.write(w, build.ROLLOUTS.read_bytes())
        os.close(w)
        out = tmp_path / "out"
        doc = check(run(["rescore", f"/dev/fd/{r}", "--engine", "ray", "-o", out, "--format", "json"]), USAGE)
    finally:
        os.close(r)
    # (the engine's refusal of a stream on Ray, before any Ray is started or any byte is read)
    assert doc["error"]["reason"] == "ray_stdin" and not out.exists()
