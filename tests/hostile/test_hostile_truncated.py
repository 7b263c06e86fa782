"""Truncated and damaged documents the commands trust: prepared manifests, pull locks, pass-rate tables,
grading policies, Parquet footers. Each is cut at seeded points (and given invalid UTF-8 or a value nested
100k deep); every command that reads it must refuse it in one line with the contract's exit code, and
never take a damaged document for a good one."""

from __future__ import annotations

import random
import shutil

import pytest

from . import build
from .kit import FAILURE, OK, USAGE, assert_clean, check, run


def _cuts(data: bytes) -> dict[str, bytes]:
    """The document cut after its first byte, in its middle, before its last byte, and at a seeded point."""
    n = max(len(data), 3)
    rng = random.Random(f"hostile:cut:{data[:64]!r}")
    return {
        "cut-first-byte": data[:1],
        "cut-middle": data[: n // 2],
        "cut-last-byte": data.rstrip()[:-1],
        "cut-seeded": data[: rng.randrange(1, n - 1)],
    }


def damages(data: bytes) -> dict[str, bytes]:
    """Ways a trusted document arrives damaged: cut short, emptied, bytes that are not UTF-8, too deep."""
    return {
        **_cuts(data),
        "empty": b"",
        "invalid-utf8": data[:10] + b"\xff\xfe" + data[10:],
        "deep": b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "not-an-object": b"[1, 2, 3]\n",
    }


DAMAGES = list(damages(b"x" * 100))

# commands run per damage: manifest (verify, prepare, validate, rescore), lock (pull, validate, prepare,
# convert), table (prepare twice), policy (contract, rescore, prepare, passrates), rescored (passrates, summarize)
PER_DAMAGE = {"verify": 1, "prepare": 5, "validate": 2, "rescore": 2, "pull": 1, "convert": 1, "contract": 1}
COVERS = {k: n * len(DAMAGES) for k, n in {**PER_DAMAGE, "passrates": 2, "summarize": 1}.items()}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("truncated-base")
    rescored = build.rescored(tmp)
    table = tmp / "t.passrates.jsonl"
    check(run(["passrates", rescored, "-o", table, "-q"]), OK)
    return {
        "prepared": build.prepared(tmp),
        "pulled": build.pulled(tmp),
        "table": table,
        "rescored": rescored,
    }


def _damaged(made, tmp_path, kind: str, name: str):
    """A copy of the prepared or pulled directory whose manifest or lock is damaged in the named way."""
    src = made[kind]
    d = shutil.copytree(src, tmp_path / kind)
    doc = d / ("manifest.json" if kind == "prepared" else "mcqa-prep.lock.json")
    doc.write_bytes(damages(doc.read_bytes())[name])
    return d


@pytest.mark.parametrize("name", DAMAGES)
def test_manifest(made, tmp_path, name):
    d = _damaged(made, tmp_path, "prepared", name)
    check(run(["verify", d, "--format", "json"]), FAILURE)
    before = sorted(p.name for p in d.iterdir())
    again = check(run(["prepare", build.TRAIN, build.VALIDATION, "-o", d, "--format", "json", "-q"]), FAILURE)
    assert again["error"]["reason"] == "incomplete_preparation"
    assert sorted(p.name for p in d.iterdir()) == before
    check(run(["validate", d, "--format", "json"]), FAILURE)
    check(
        run(["rescore", build.ROLLOUTS, "--rows", d, "-o", tmp_path / "r.jsonl", "--format", "json"]), FAILURE
    )
    assert not (tmp_path / "r.jsonl").exists()
    assert_clean(tmp_path)


@pytest.mark.parametrize("name", DAMAGES)
def test_lock(made, tmp_path, name):
    d = _damaged(made, tmp_path, "pulled", name)
    check(run(["pull", "--to", d, "--offline", "--format", "json"]), FAILURE)
    check(run(["validate", d, "--format", "json"]), FAILURE)
    check(run(["prepare", d, "-o", tmp_path / "p", "--format", "json"]), FAILURE)
    check(run(["convert", d, "-o", tmp_path / "c.jsonl", "--format", "json"]), FAILURE)
    assert not (tmp_path / "p").exists() and not (tmp_path / "c.jsonl").exists()
    assert_clean(tmp_path)


@pytest.mark.parametrize("name", DAMAGES)
def test_pass_rate_table(made, tmp_path, name):
    table = build.write(tmp_path / "t.jsonl", damages(made["table"].read_bytes())[name])
    for flag in ("--pass-rates", "--stamp-reward-profiles"):
        extra = [flag, table] + (["--drop-solved"] if flag == "--pass-rates" else [])
        res = run(
            ["prepare", build.TRAIN, build.VALIDATION, "-o", tmp_path / "p", "--format", "json", *extra]
        )
        check(res, FAILURE)
        assert not (tmp_path / "p").exists()
    assert_clean(tmp_path)


@pytest.mark.parametrize("name", DAMAGES)
def test_policy(tmp_path, name):
    policy = build.write(tmp_path / "policy.json", damages(b'{"final_answer_only": true}\n')[name])
    check(run(["contract", "--policy", policy, "--format", "json"]), USAGE)
    out = tmp_path / "r.jsonl"
    check(run(["rescore", build.ROLLOUTS, "--policy", policy, "-o", out, "--format", "json"]), USAGE)
    check(run(["prepare", build.TRAIN, "--policy", policy, "-o", tmp_path / "p", "--format", "json"]), USAGE)
    check(
        run(["passrates", build.ROLLOUTS, "--rescore", "--policy", policy, "-o", tmp_path / "t.jsonl"]), USAGE
    )
    assert not out.exists() and not (tmp_path / "p").exists() and not (tmp_path / "t.jsonl").exists()


@pytest.mark.parametrize("name", DAMAGES)
def test_rescored_input_of_passrates(made, tmp_path, name):
    """A damaged rescored file is still every row accounted for, or a refusal with no table."""
    src = build.write(tmp_path / "rescored.jsonl", damages(made["rescored"].read_bytes())[name])
    out = tmp_path / "t.jsonl"
    doc = check(
        run(["passrates", src, "-o", out, "--format", "json", "--on-invalid", "reject"]), (OK, FAILURE)
    )
    assert out.exists() is doc["ok"]
    check(run(["summarize", src, "--format", "json"]), (OK, FAILURE))
