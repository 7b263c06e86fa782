"""Mutated bytes of valid JSONL files, through every command that reads JSONL: bit flips, truncation,
invalid UTF-8, NUL bytes, CRLF, BOMs, giant lines, deep nesting, duplicate keys, NaN/Infinity, huge
integers, lone surrogates. Every row must come out counted, every bad line reported at its own line."""

from __future__ import annotations

import pytest

from . import build, tries
from .kit import FAILURE, OK, USAGE, check, run, strict_lines
from .mutate import JSONL_MUTATIONS, mutated, set_field

# Mutations that say something about one command's data (a rollout's reward, a rescored row's grading).
ROLLOUT_MUTATIONS = {
    **JSONL_MUTATIONS,
    "nan-reward": set_field("reward", "NaN"),
    "infinite-reward": set_field("reward", "-Infinity"),
    "1e400-reward": set_field("reward", "1e400"),
    "string-reward": set_field("reward", '"1.0"'),
    "response-is-a-list": set_field("response", "[1, 2]"),
    "response-output-null": set_field("response", '{"output": null}'),
    "response-content-number": set_field("response", '{"output": [{"type": "message", "content": 3}]}'),
    "options-huge-int": set_field("options", '[{"A": ' + "7" * 30 + "}]"),
}
SUBSET = [
    "bitflip-8",
    "truncate",
    "invalid-utf8-in-a-string",
    "nul-bytes",
    "crlf",
    "bom",
    "deep-1000",
    "deep-100k",
    "nan",
    "lone-surrogate",
    "huge-int-in-metadata",
    "non-object-lines",
    "empty",
]
# rows whose shape Arrow must unify into one Parquet schema (prepare --output-format parquet)
PARQUET_OUTPUT = [
    "giant-line",
    "deep-200",
    "deep-300-objects",
    "duplicate-keys",
    "huge-int-in-metadata",
    "infinity-in-metadata",
    "control-escapes",
    "bitflip-8",
    "non-object-lines",
    "crlf",
]
# raw-byte mutations (no JSON needed) for a response piped into `grade`
BYTE_MUTATIONS = [
    "bitflip-64",
    "truncate",
    "invalid-utf8-in-a-string",
    "invalid-utf8-anywhere",
    "nul-bytes",
    "cr-only",
    "bom",
    "utf16",
    "garbage-line",
    "empty",
]
RESCORED_MUTATIONS = {
    **{k: JSONL_MUTATIONS[k] for k in SUBSET},
    "nan-reward": ROLLOUT_MUTATIONS["nan-reward"],
    "1e400-reward": ROLLOUT_MUTATIONS["1e400-reward"],
    "grading-not-an-object": set_field("metadata", '{"grading": [1]}'),
    "contract-is-a-number": set_field("metadata", '{"grading": {"contract": 12, "status": "ok"}}'),
}

# what this module tries, per command (tests/hostile/test_hostile_coverage.py reads it)
COVERS = {
    "validate": len(JSONL_MUTATIONS),
    "prepare": len(JSONL_MUTATIONS) + len(SUBSET) + len(PARQUET_OUTPUT),
    "rescore": len(ROLLOUT_MUTATIONS) + 1,
    "summarize": len(RESCORED_MUTATIONS),
    "passrates": len(RESCORED_MUTATIONS),
    "convert": len(SUBSET) + len(BYTE_MUTATIONS),
    "grade": len(BYTE_MUTATIONS),
    "report": len(SUBSET) + len(RESCORED_MUTATIONS),
    "curriculum": 2 * len(SUBSET),
    "audit": 2 * len(SUBSET),
}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("jsonl-base")
    return {
        "train": build.TRAIN.read_bytes(),
        "rollouts": build.ROLLOUTS.read_bytes(),
        "rescored": build.rescored(tmp).read_bytes(),
        "arc": build.jsonl(build.arc_rows(80)),  # > 8 KiB: more than one buffer of a text reader
    }


@pytest.fixture(scope="module")
def table(base, tmp_path_factory):
    """A pass-rate table of the embedded rollouts (rescored): the evidence curriculum reads."""
    tmp = tmp_path_factory.mktemp("jsonl-table")
    src = build.write(tmp / "rescored.jsonl", base["rescored"])
    check(run(["passrates", src, "-o", tmp / "t.jsonl", "-q"]), 0)
    return (tmp / "t.jsonl").read_bytes()


@pytest.fixture(scope="module")
def rollout_outcomes(base, tmp_path_factory):
    """What each embedded rollout gets when rescored alone in a clean file: what it must still get beside
    a bad row."""
    tmp = tmp_path_factory.mktemp("rollout-baseline")
    out = tmp / "r.jsonl"
    check(
        run(["rescore", build.ROLLOUTS, "--rows", build.TRAIN, "--rows", build.VALIDATION, "-o", out, "-q"]),
        0,
    )
    lines = [x.strip() for x in base["rollouts"].split(b"\n") if x.strip()]
    return dict(zip(lines, map(tries.outcome, strict_lines(out)), strict=True))


@pytest.mark.parametrize("name", SUBSET)
def test_report_dataset(tmp_path, base, name):
    data = mutated(name, base["train"])
    tries.report(build.write(tmp_path / "in" / "train.jsonl", data), data, tmp_path / "out" / "r.html")


@pytest.mark.parametrize("name", sorted(RESCORED_MUTATIONS))
def test_report_rescored(tmp_path, base, name):
    data = mutated(name, base["rescored"], RESCORED_MUTATIONS)
    tries.report(build.write(tmp_path / "in" / "rescored.jsonl", data), data, tmp_path / "out" / "r.html")


@pytest.mark.parametrize("name", sorted(JSONL_MUTATIONS))
def test_validate(tmp_path, base, name):
    data = mutated(name, base["train"])
    tries.validate(build.write(tmp_path / "train.jsonl", data), data, base["train"])


@pytest.mark.parametrize("name", sorted(JSONL_MUTATIONS))
def test_prepare_rejects(tmp_path, base, name):
    data = mutated(name, base["train"])
    src = build.write(tmp_path / "in" / "train.jsonl", data)
    tries.prepare(src, data, tmp_path / "out" / "p", original=base["train"])


@pytest.mark.parametrize("name", PARQUET_OUTPUT)
def test_prepare_parquet_shards(tmp_path, base, name):
    """The embedded sample mixes string and list output_regex; mutations add giant, deep and odd rows: one
    Parquet schema per split, or a refusal naming why, never an Arrow traceback."""
    data = mutated(name, base["train"])
    src = build.write(tmp_path / "in" / "train.jsonl", data)
    tries.prepare(src, data, tmp_path / "out" / "p", "--output-format", "parquet", original=base["train"])


@pytest.mark.parametrize("name", SUBSET)
def test_prepare_fails_whole(tmp_path, base, name):
    data = mutated(name, base["train"])
    tries.prepare_fail_mode(build.write(tmp_path / "in" / "train.jsonl", data), data, tmp_path / "out" / "p")


@pytest.mark.parametrize("name", sorted(ROLLOUT_MUTATIONS))
def test_rescore(tmp_path, base, rollout_outcomes, name):
    data = mutated(name, base["rollouts"], ROLLOUT_MUTATIONS)
    src = build.write(tmp_path / "rollouts.jsonl", data)
    rows = ("--rows", build.TRAIN, "--rows", build.VALIDATION)
    doc = tries.rescore(src, data, tmp_path / "out" / "r.jsonl", *rows, baseline=rollout_outcomes)
    if name.startswith("response-"):  # a response that is not a Responses API object cannot be graded
        assert doc["invalid_rows"]["by_kind"] == {"response": 1}, doc["invalid_rows"]


def test_rescore_a_rollout_with_no_dataset_row(tmp_path):
    """--rows was given but holds no row for some rollouts: invalid rows, and no hint to pass --rows."""
    out = tmp_path / "r.jsonl"
    data = build.ROLLOUTS.read_bytes()
    tries.rescore(build.ROLLOUTS, data, out, "--rows", build.TRAIN)


@pytest.mark.parametrize("name", sorted(RESCORED_MUTATIONS))
def test_summarize(tmp_path, base, name):
    data = mutated(name, base["rescored"], RESCORED_MUTATIONS)
    tries.summarize(build.write(tmp_path / "rescored.jsonl", data), data)


@pytest.mark.parametrize("name", sorted(RESCORED_MUTATIONS))
def test_passrates(tmp_path, base, name):
    data = mutated(name, base["rescored"], RESCORED_MUTATIONS)
    tries.passrates(build.write(tmp_path / "rescored.jsonl", data), data, tmp_path / "out" / "t.jsonl")


@pytest.mark.parametrize("name", SUBSET)
def test_convert(tmp_path, base, name):
    data = mutated(name, base["arc"])
    src = build.write(tmp_path / "arc.jsonl", data)
    tries.convert(src, data, tmp_path / "out" / "rows.jsonl", original=base["arc"])


@pytest.mark.parametrize("name", BYTE_MUTATIONS)
def test_convert_csv(tmp_path, name):
    """convert's CSV reader under the same raw-byte mutations: every record written or rejected (a header
    damaged out of the preset's column names is a usage error: the preset does not fit)."""
    head = "Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2,Incorrect Answer 3\n"
    body = "".join(f'"Which is item {i}?","item {i}","x {i}","y {i}","z {i}"\n' for i in range(200))
    data = mutated(name, (head + body).encode())
    src = build.write(tmp_path / "gpqa.csv", data)
    doc = tries.convert(
        src, None, tmp_path / "out" / "rows.jsonl", "--preset", "gpqa", codes=(OK, FAILURE, USAGE)
    )
    if data.startswith(head.encode()):  # the header intact: every intact record is converted
        kept = set(data.splitlines())
        intact = sum(1 for line in body.encode().splitlines() if line in kept)
        assert doc["ok"] is bool(intact) and (not intact or doc["counts"]["written"] >= intact)


@pytest.mark.parametrize("name", BYTE_MUTATIONS)
def test_grade_from_stdin(base, name):
    """A response piped in with any bytes is graded when it is UTF-8 text, refused with its offset when not."""
    text = mutated(name, b"I think the answer is \\boxed{B}.\nFinal: B\n" * 3)
    try:
        text.decode("utf-8")
        utf8 = True
    except UnicodeDecodeError:
        utf8 = False
    res = run(
        ["grade", "--option", "A=x", "--option", "B=y", "--expected", "B", "--format", "json"], input=text
    )
    doc = check(res, OK if utf8 else FAILURE)
    if utf8:
        assert doc["reward"] in (0.0, 1.0) and doc["status"]
    else:
        assert doc["error"]["reason"] == "input_not_utf8" and "offset" in doc["error"]["message"]


@pytest.mark.parametrize("name", SUBSET)
def test_curriculum_rows(tmp_path, base, table, name):
    data = mutated(name, base["train"])
    src = build.write(tmp_path / "in" / "train.jsonl", data)
    t = build.write(tmp_path / "t.jsonl", table)
    tries.curriculum(src, data, t, tmp_path / "out" / "s.jsonl", "--by", "subject")


@pytest.mark.parametrize("name", SUBSET)
def test_curriculum_table(tmp_path, base, table, name):
    """A damaged table: refused (edited, not a table) before anything is written, never a traceback."""
    data = mutated(name, table)
    t = build.write(tmp_path / "t.jsonl", data)
    src = build.write(tmp_path / "in" / "train.jsonl", base["train"])
    doc = tries.curriculum(src, None, t, tmp_path / "out" / "s.jsonl")
    if data != table:
        assert doc["ok"] is False and doc["error"]["reason"] in (
            "table_edited",
            "table_invalid",
            "table_schema",
        )


@pytest.mark.parametrize("name", SUBSET)
def test_audit(tmp_path, base, name):
    """Mutated dataset bytes against an intact benchmark file."""
    data = mutated(name, base["train"])
    src = build.write(tmp_path / "in" / "train.jsonl", data)
    bench = build.write(tmp_path / "bench" / "arc.jsonl", base["arc"])
    tries.audit(src, data, bench, tmp_path / "out" / "audit.json")


@pytest.mark.parametrize("name", SUBSET)
def test_audit_mutated_benchmark(tmp_path, base, name):
    """Intact dataset rows against mutated benchmark bytes: every question still readable is indexed; a file
    with none is one refusal (bench_empty, bench_layout), never a traceback."""
    bench = build.write(tmp_path / "bench" / "arc.jsonl", mutated(name, base["arc"]))
    res = run(["audit", build.TRAIN, "--against", bench, "--format", "json", "-q"])
    doc = check(res, (OK, FAILURE, USAGE))
    if res.exit_code != OK:
        assert doc["error"]["reason"] in (
            "bench_empty", "bench_layout", "input_not_utf8", "unreadable_benchmark"
        ), doc["error"]  # fmt: skip
    else:
        b = doc["benchmarks"][0]
        assert b["rows_read"] == b["questions"] + sum(b["rejected_by_reason"].values())
