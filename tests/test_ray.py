"""rescore --engine ray: the same rows, in the same order, and the same summary as the one-process run.

One local Ray instance for the whole module (2 CPUs, no dashboard, its files in a temporary directory).
Small chunk sizes force many chunks, so line-aligned byte ranges, line numbering across chunks, shard order
and the fold of outcomes in input order are all exercised on small inputs.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import tempfile

import pytest
import ray  # the dev extra includes the ray extra: a missing Ray is an install error, never a skip
from conftest import SAMPLE, read_jsonl, rescore_request
from response_helpers import fake_response

from mcqa_prep import parallel
from mcqa_prep.engine import ray_run
from mcqa_prep.engine import ray_session as session_mod
from mcqa_prep.policy import GradingPolicy
from mcqa_prep.rescore import batch, shards
from mcqa_prep.rescore.rows import rescore_row
from mcqa_prep.rescore.run import rescore, setup

SAMPLE_ROWS = [SAMPLE / "train.jsonl", SAMPLE / "validation.parquet"]


@pytest.fixture(scope="module")
def ray_session():
    temp = tempfile.mkdtemp(prefix="mcqa-ray-test-")  # short: Ray's socket paths must stay under 108 bytes
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR", _temp_dir=temp)
    yield
    ray.shutdown()
    shutil.rmtree(temp, ignore_errors=True)


def _shards(out_dir):
    names = sorted(p.name for p in out_dir.iterdir() if p.name != shards.SUMMARY)
    return b"".join((out_dir / n).read_bytes() for n in names), names


def _both(tmp_path, inp, *, chunk_bytes, **kw):
    """(one-process output bytes, its report dict, Ray output bytes, Ray report dict, shard names)."""
    policy = kw.pop("policy", GradingPolicy())
    local = rescore(rescore_request(inp, tmp_path / "local.jsonl", policy, **kw))
    report, run = shards.rescore_shards(
        rescore_request(inp, tmp_path / "ray", policy, workers=2, chunk_bytes=chunk_bytes, engine="ray", **kw)
    )
    data, names = _shards(tmp_path / "ray")
    assert [s["file"] for s in run.shards] == names
    assert sum(s["rows"] for s in run.shards) == report.rows
    a, b = local.to_dict(), report.to_dict()
    a.pop("output"), b.pop("output")
    return (tmp_path / "local.jsonl").read_bytes(), a, data, b, names


def _rollouts(n, seed=7):
    """JSONL lines of verify requests and rollouts: every mode, custom regexes, rows to join, and the rows
    that must become invalid_row (bad JSON, not an object, no response) at known lines."""
    rng = random.Random(seed)
    lines = ["\ufeff" + json.dumps(_row(rng, 0))]  # a byte-order mark on line 1
    for i in range(1, n):
        r = rng.random()
        if r < 0.03:
            lines.append('{"not json": ')
        elif r < 0.05:
            lines.append("")  # blank lines are not rows, but they count as lines
        elif r < 0.06:
            lines.append("[1, 2]")
        elif r < 0.07:
            lines.append(f'{{"uuid": "nan-{i}", "reward": NaN, "response": null}}')
        elif r < 0.08:
            lines.append(f'{{"uuid": {i}, "big": 123456789012345678901234567890}}')
        else:
            lines.append(json.dumps(_row(rng, i), ensure_ascii=rng.random() < 0.5))
    return lines


def _row(rng, i):
    letters = "ABCDEFGHIJ"[: rng.randint(2, 10)]
    gold = rng.choice(letters)
    opts = [{c: f"option {c} {rng.randint(0, 99)} ünïcödé 文字"} for c in letters]
    said = rng.choice(letters + "xZ")
    text = rng.choice(
        [
            f"Reasoning… {rng.random()}\n\\boxed{{{said}}}",
            f"\\boxed{{\\text{{{said}}}}} then Answer: {said}",
            f"Final Choice: {said}",
            f"**Answer:** {said}",
            "",
        ]
    )
    row = {
        "responses_create_params": {"input": [{"role": "user", "content": f"Q{i % 50}?"}]},
        "response": fake_response(text),
        "options": opts,
        "expected_answer": gold,
        "uuid": f"u-{i}",
        "reward": rng.choice([0.0, 1.0]),
    }
    if rng.random() < 0.3:
        row["grading_mode"] = rng.choice(["lenient_boxed", "lenient_answer_colon", "string_equals_mcqa"])
    if rng.random() < 0.2:
        row["template_metadata"] = {"output_regex": r"Final Choice:\s*([A-Za-z])", "template_id": "t1"}
    if rng.random() < 0.2:
        del row["options"]  # a rollout: joined with its dataset row by prompt
    return row


def _dataset(path, n=50):
    rows = [
        {
            "responses_create_params": {"input": [{"role": "user", "content": f"Q{i}?"}]},
            "options": [{"A": "alpha"}, {"B": "beta"}, {"C": "gamma"}],
            "expected_answer": "ABC"[i % 3],
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_sample_rollouts_same_rows_and_summary(ray_session, tmp_path):
    local, lrep, data, rrep, names = _both(
        tmp_path, SAMPLE / "rollouts.jsonl", chunk_bytes=4096, rows=SAMPLE_ROWS
    )
    assert len(names) > 1  # several chunks, several shards
    assert data == local
    assert rrep == lrep
    assert rrep["rows"] == len(read_jsonl(SAMPLE / "rollouts.jsonl"))
    summary = json.loads((tmp_path / "ray" / shards.SUMMARY).read_text())
    assert summary["engine"]["name"] == "ray" and summary["rows"] == lrep["rows"]


def test_join_index_account_is_the_local_one(ray_session, tmp_path):
    """Dataset rows left out of the join index (malformed lines, no options) are counted alike on Ray."""
    rows = tmp_path / "rows.jsonl"
    good = (SAMPLE / "train.jsonl").read_text().splitlines()
    rows.write_text(
        "\n".join(["garbage", *good, "[1]", '{"responses_create_params": {"input": "Q"}}']) + "\n"
    )
    local, lrep, data, rrep, _ = _both(
        tmp_path,
        SAMPLE / "rollouts.jsonl",
        chunk_bytes=4096,
        rows=[rows, SAMPLE / "validation.parquet", SAMPLE / "rollouts.jsonl"],
    )
    assert data == local and rrep == lrep
    left = rrep["join"]["dataset_rows_left_out"]
    assert left["by_reason"]["malformed"]["count"] == 2
    assert left["by_reason"]["no_options"]["count"] == len(read_jsonl(SAMPLE / "rollouts.jsonl")) + 1
    assert left["by_reason"]["malformed"]["examples"][0].endswith(
        "rows.jsonl:1: not valid JSON: Expecting value (column 1)"
    )
    summary = json.loads((tmp_path / "ray" / shards.SUMMARY).read_text())
    assert summary["join"] == rrep["join"]


@pytest.mark.parametrize("chunk_bytes,final_newline", [(997, True), (64, False)])
def test_generated_rollouts_row_for_row_in_input_order(ray_session, tmp_path, chunk_bytes, final_newline):
    inp = tmp_path / "rollouts.jsonl"
    text = "\n".join(_rollouts(400)) + ("\n" if final_newline else "")
    inp.write_text(text, encoding="utf-8")
    ds = _dataset(tmp_path / "train.jsonl")
    policy = GradingPolicy().with_overrides(final_answer_only=True, reasoning_mode="none")
    local, lrep, data, rrep, _ = _both(
        tmp_path,
        inp,
        chunk_bytes=chunk_bytes,
        rows=[ds],
        compare_mode="robust",
        compare_policy=GradingPolicy(),
        explain=True,
        examples=3,
        policy=policy,
    )
    assert data.splitlines() == local.splitlines()  # row for row, in input order
    assert data == local
    assert rrep == lrep
    assert lrep["invalid_rows"]["count"] > 0 and lrep["join"]["joined"] > 0


def test_parquet_row_groups_same_rows(ray_session, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    rows = [
        json.loads(line) for line in _rollouts(120, seed=3) if line.startswith("{") and "response" in line
    ]
    rows = [r for r in rows if isinstance(r.get("response"), dict) and "options" in r]
    for r in rows:
        r.pop("template_metadata", None), r.pop("grading_mode", None)
    inp = tmp_path / "requests.parquet"
    pq.write_table(pa.Table.from_pylist(rows), inp, row_group_size=16)
    local, lrep, data, rrep, names = _both(tmp_path, inp, chunk_bytes=None)
    assert len(names) == pq.ParquetFile(inp).metadata.num_row_groups > 1
    assert data == local and rrep == lrep


def test_rescore_batch_is_rescore_row_on_a_table(tmp_path):
    """The batch function without Ray: the same lines and outcomes as rescore_row, one per input row."""
    lines = [ln for ln in _rollouts(60, seed=11) if ln.strip()]
    settings, _ = setup(rescore_request(tmp_path / "in.jsonl", tmp_path / "out.jsonl"))
    raws = [(ln + "\n").encode() for ln in lines]
    table = batch.rows_table(["in.jsonl"] * len(raws), list(range(1, len(raws) + 1)), raws)
    out = batch.rescore_batch(table, settings)
    from mcqa_prep.io.readers import read_jsonl as read

    expected = [rescore_row(rec, settings) for rec in read(raws, "in.jsonl", None)]
    assert out.column("line").to_pylist() == [line for line, _ in expected]
    assert list(batch.outcomes(out)) == [o for _, o in expected]


def test_chunks_cover_every_line_once_with_its_number(tmp_path):
    """Planned byte ranges (the lines that start in each range, newlines counted by the driver) give every
    non-blank line exactly once, with its 1-based line number in the file; the number of chunks follows from
    the size alone."""
    p = tmp_path / "x.jsonl"
    body = b"".join(b"%d%s\n" % (i, b"x" * (i % 37)) for i in range(300)) + b"\n\r\nlast"
    p.write_bytes(body)
    want = [(n, ln) for n, ln in enumerate(body.split(b"\n"), 1) if ln.strip()]
    for step in (1, 7, 64, 1000, len(body)):
        got = []
        cs = list(parallel.chunks(p, None, 0, step))
        assert len(cs) == parallel.count_chunks(p, step) == -(-len(body) // step)
        for c in cs:
            t = batch.lines_table(c.span.read(str(p)), c.file, c.first_line)
            got += [
                (n, ln.rstrip(b"\n"))
                for n, ln in zip(t["line"].to_pylist(), t["json"].to_pylist(), strict=True)
            ]
        assert [(n, ln) for n, ln in got if ln.strip()] == want, step
        assert b"".join(ln + b"\n" for _, ln in got)[: len(body)] == body  # every byte, once, in order


def test_cli_ray_engine_json_and_output_layout(ray_session, cli, tmp_path):
    out = tmp_path / "rescored"
    res = cli(
        "rescore",
        SAMPLE / "rollouts.jsonl",
        "--rows",
        SAMPLE_ROWS[0],
        "--rows",
        SAMPLE_ROWS[1],
        "--engine",
        "ray",
        "-o",
        out,
        "--format",
        "json",
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["ok"] is True and doc["rows"] == 12
    assert sorted(p.name for p in out.iterdir()) == ["rescored-00000-of-00001.jsonl", "summary.json"]
    again = cli(
        "rescore",
        SAMPLE / "rollouts.jsonl",
        *sum((["--rows", p] for p in SAMPLE_ROWS), []),
        "--engine",
        "ray",
        "-o",
        out,
        "-q",
    )
    assert again.exit_code == 0, again.output  # a previous rescore output is replaced


def test_cli_refuses_a_foreign_output_directory(ray_session, cli, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    res = cli("rescore", SAMPLE / "rollouts.jsonl", "--engine", "ray", "-o", out)
    assert res.exit_code == 1
    assert "not a rescore output" in res.stderr and (out / "notes.txt").read_text() == "keep me"
    shutil.copy(SAMPLE / "rollouts.jsonl", out / "rollouts.jsonl")
    res = cli("rescore", out, "--engine", "ray", "-o", out / "rescored")
    assert res.exit_code == 2 and "lies inside the input" in res.stderr


def test_cli_without_ray_is_one_failure_naming_the_extra(cli, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    res = cli("rescore", SAMPLE / "rollouts.jsonl", "--engine", "ray", "-o", tmp_path / "o")
    assert res.exit_code == 1  # a missing optional package, as for serve and report (missing_extra)
    assert "pip install 'mcqa-prep[ray]'" in res.stderr
    assert "Traceback" not in res.output


def test_cli_ray_failure_is_one_line_exit_1(ray_session, cli, tmp_path, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("worker died\nlong Ray details")

    monkeypatch.setattr(ray_run, "_tasks", boom)
    res = cli("rescore", SAMPLE / "rollouts.jsonl", "--engine", "ray", "-o", tmp_path / "o")
    assert res.exit_code == 1
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("Error: the Ray job failed: RuntimeError: worker died; Ray's logs: ")
    assert line.endswith("; check the Ray cluster (RAY_ADDRESS) and its logs, or use --engine local")
    assert not (tmp_path / "o").exists()


def test_local_engine_rejects_directories(cli, tmp_path):
    res = cli("rescore", SAMPLE / "rollouts.jsonl", "-o", tmp_path, "-q")
    assert res.exit_code == 2 and "directory" in res.stderr


def test_packed_join_index_roundtrips_exactly_through_the_object_store(ray_session):
    """The --rows index as it travels to the workers: every key finds its own row's fields, exactly (NaN and
    big integers included), also for keys that share their first 8 bytes, and nothing else is found."""
    import math
    import pickle

    from mcqa_prep.rescore.index import PackedRows

    rng = random.Random(5)
    keys = [rng.randbytes(16) for _ in range(500)]
    keys += [b"\x00" * 16, b"\x00" * 8 + b"\x01" * 8, b"\x00" * 15 + b"\x02", b"\xff" * 16]
    slots, starts, blob = {}, [], bytearray()
    for i, k in enumerate(keys):
        slots[k] = len(starts)
        starts.append(len(blob))
        blob += pickle.dumps({"i": i, "nan": float("nan"), "big": 10**30, "options": [{"A": f"x{i}"}]})
    packed = ray.get(ray.put(PackedRows.pack(slots, starts, blob)))
    assert len(packed) == len(keys)
    for i, k in enumerate(keys):
        row = packed.get(k)
        assert (
            row["i"] == i
            and row["big"] == 10**30
            and math.isnan(row["nan"])
            and row["options"] == [{"A": f"x{i}"}]
        )
    assert packed.get(rng.randbytes(16)) is None and packed.get(None) is None and packed.get(b"short") is None


def test_starting_ray_keeps_the_command_s_signal_handlers(tmp_path):
    """ray.init replaced the CLI's SIGTERM/SIGHUP/SIGINT handlers: a SIGTERM then printed Ray's native stack
    dump and killed the process by the signal (exit -15), outputs and exit status disagreeing (found by an
    audit). A fresh process, as the CLI is: Ray started by the engine, the handlers must be the same objects."""
    import subprocess
    import sys

    code = """
import shutil, signal, sys
import ray
mine = lambda *a: None
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, mine)
from mcqa_prep.engine import ray_session
session = ray_session.connect(ray, 1)
try:
    assert session.started
    kept = [signal.getsignal(s) is mine for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]
    print(kept)
finally:
    ray_session.disconnect(ray, session, keep_logs=False)
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip().splitlines()[-1] == "[True, True, True]"


# ---- resuming an interrupted job ---------------------------------------------------------------------


class _Interrupted(KeyboardInterrupt):
    pass


def _run_then(monkeypatch, failure):
    """Ray's tasks run to the end, then `failure` is raised (as a stop or a lost cluster there would)."""
    real = ray_run._tasks

    def run_then_fail(*a, **k):
        yield from real(*a, **k)
        raise failure

    monkeypatch.setattr(ray_run, "_tasks", run_then_fail)
    return real


def _interrupted_run(tmp_path, monkeypatch, inp, out, policy):
    """A job whose every chunk completed, stopped before its output was put in place (as Ctrl-C there
    would): the work directory keeps the chunks."""
    real = _run_then(monkeypatch, _Interrupted())
    with pytest.raises(_Interrupted):
        rescore_on_ray(rescore_request(inp, out, policy, workers=2, chunk_bytes=1500))
    monkeypatch.setattr(ray_run, "_tasks", real)
    work = out.parent / f".{out.name}.mcqa-run"
    assert work.is_dir() and not out.exists()
    return work


def rescore_on_ray(req):
    import dataclasses

    return shards.rescore_shards(dataclasses.replace(req, run=dataclasses.replace(req.run, engine="ray")))


def test_resume_reuses_complete_chunks_and_redoes_a_damaged_one(ray_session, tmp_path, monkeypatch):
    inp = tmp_path / "rollouts.jsonl"
    inp.write_text("\n".join(_rollouts(300, seed=5)) + "\n", encoding="utf-8")
    policy = GradingPolicy()
    local = rescore(rescore_request(inp, tmp_path / "local.jsonl", policy))
    out = tmp_path / "ray"
    work = _interrupted_run(tmp_path, monkeypatch, inp, out, policy)
    parts = sorted(work.glob("rescored-*.jsonl"))
    assert len(parts) > 3
    damaged = bytearray(parts[1].read_bytes())
    damaged[0:1] = b"X"
    parts[1].write_bytes(bytes(damaged))  # same size, other bytes: the chunk is rescored again
    report, run = rescore_on_ray(rescore_request(inp, out, policy, workers=2, resume=True))
    assert run.resumed == len(parts) - 1
    assert _shards(out)[0] == (tmp_path / "local.jsonl").read_bytes()
    a, b = local.to_dict(), report.to_dict()
    a.pop("output"), b.pop("output")
    assert a == b
    summary = json.loads((out / shards.SUMMARY).read_text())
    assert summary["rows"] == a["rows"] and not work.exists()
    assert sorted(p.name for p in out.iterdir()) == sorted([*(s.name for s in parts), "summary.json"])


def test_resume_refuses_another_job_and_keeps_its_chunks(ray_session, tmp_path, monkeypatch):
    from mcqa_prep.errors import StaleCache

    inp = tmp_path / "rollouts.jsonl"
    inp.write_text("\n".join(_rollouts(200, seed=6)) + "\n", encoding="utf-8")
    out = tmp_path / "ray"
    work = _interrupted_run(tmp_path, monkeypatch, inp, out, GradingPolicy())
    before = sorted(p.name for p in work.iterdir())
    other = GradingPolicy().with_overrides(final_answer_only=True)
    with pytest.raises(StaleCache) as err:
        rescore_on_ray(rescore_request(inp, out, other, workers=2, resume=True))
    assert err.value.reason == "resume_mismatch" and "settings.contract" in [
        d.field for d in err.value.differences
    ]
    with pytest.raises(StaleCache) as err:
        rescore_on_ray(rescore_request(inp, out, workers=2, resume=True, explain=True))
    assert [d.field for d in err.value.differences] == ["settings.explain"]
    os.utime(inp, ns=(1, 1))  # the input changed (its identity) since the interrupted run
    with pytest.raises(StaleCache) as err:
        rescore_on_ray(rescore_request(inp, out, workers=2, resume=True))
    assert "inputs" in [d.field for d in err.value.differences]
    assert sorted(p.name for p in work.iterdir()) == before  # refused: nothing of the job was touched
    report, run = rescore_on_ray(rescore_request(inp, out, workers=2))  # no resume: start over
    assert run.resumed == 0 and report.rows > 0 and not work.exists()


def test_report_state_round_trips_exactly(tmp_path):
    """A chunk's report, kept in its record for resuming, reads back as the same report."""
    from mcqa_prep.rescore.run import RescoreReport

    inp = tmp_path / "rollouts.jsonl"
    inp.write_text("\n".join(_rollouts(200, seed=8)) + "\n", encoding="utf-8")
    ds = _dataset(tmp_path / "train.jsonl")
    rep = rescore(rescore_request(inp, tmp_path / "o.jsonl", rows=[ds], compare_mode="robust",
                  compare_policy=GradingPolicy().with_overrides(final_answer_only=True), examples=3))  # fmt: skip
    state = json.loads(json.dumps(rep.to_state()))
    back = RescoreReport.from_state(state)
    assert back.to_dict() == rep.to_dict() and back.to_state() == rep.to_state()
    assert rep.invalid.count and rep.by_mode and rep.compare_differ is not None


def test_progress_counts_rows_as_chunks_complete(ray_session, tmp_path):
    inp = tmp_path / "rollouts.jsonl"
    inp.write_text("\n".join(_rollouts(200, seed=9)) + "\n", encoding="utf-8")
    updates = []
    opened = {}

    class Bar:
        def update(self, n):
            updates.append(n)

        def close(self):
            updates.append("closed")

    def progress(**k):
        opened.update(k)
        return Bar()

    report, run = rescore_on_ray(
        rescore_request(inp, tmp_path / "ray", workers=2, chunk_bytes=4000, progress=progress)
    )
    # a JSONL file: the bar counts its bytes (parallel.InputMeter), so that it can show the time left
    assert opened["unit"] == "B" and opened["total"] == inp.stat().st_size and report.rows > 0
    assert updates[-1] == "closed" and sum(updates[:-1]) == inp.stat().st_size
    assert len(updates) - 1 == len(run.shards) > 2  # one update per chunk


def test_unreachable_cluster_is_one_line_at_once(ray_session, cli, tmp_path, monkeypatch):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nobody listens there
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    monkeypatch.setattr(
        ray, "is_initialized", lambda: False
    )  # as in a fresh command, beside this module's Ray
    res = cli("rescore", SAMPLE / "rollouts.jsonl", "--engine", "ray", "-o", tmp_path / "o")
    assert res.exit_code == 1
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith(f"Error: cannot reach the Ray cluster at 127.0.0.1:{port} (RAY_ADDRESS)")
    assert "check RAY_ADDRESS" in line
    assert not any(tmp_path.iterdir())  # neither output nor work directory
    assert ray._private.worker.global_worker.connected  # nothing of the Ray session was touched


def test_token_refusal_names_the_auth_settings():
    """What Ray's client logs when a token cluster refuses it becomes one line naming RAY_AUTH_MODE."""
    from mcqa_prep.errors import McqaPrepError

    class FakeRay:
        def shutdown(self):
            pass

    said = (
        "gcs_client.cc:210: Failed to get cluster ID: Unauthenticated: RPC error: InvalidAuthToken: missing"
    )
    session = session_mod.Session(True, "10.0.0.1:6379", None)
    with pytest.raises(McqaPrepError) as err:
        session_mod._failed_start(FakeRay(), session, ConnectionError("Failed to connect"), {}, said)
    assert err.value.reason == "ray_auth"
    assert "RAY_AUTH_MODE=token" in err.value.message and "10.0.0.1:6379" in err.value.message


def test_a_ray_failure_after_complete_chunks_keeps_them_and_says_how_to_resume(ray_session, cli, tmp_path,
                                                                                monkeypatch):  # fmt: skip
    inp = tmp_path / "rollouts.jsonl"
    lines = _rollouts(150, seed=12)
    inp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    real = _run_then(
        monkeypatch, RuntimeError("The node with id 7 has been marked dead\n(36 lines of Ray's traceback)")
    )
    monkeypatch.setattr(parallel, "chunk_bytes_for", lambda total: 20000)
    out = tmp_path / "o"
    res = cli("rescore", inp, "--engine", "ray", "-o", out)
    assert res.exit_code == 1 and res.stdout == ""
    (line,) = res.stderr.strip().splitlines()
    work = tmp_path / ".o.mcqa-run"
    assert "RuntimeError: The node with id 7 has been marked dead; " in line
    assert f"complete chunk(s) kept in {work}" in line and "run the same command with --resume" in line
    assert work.is_dir() and not out.exists()
    monkeypatch.setattr(ray_run, "_tasks", real)
    res = cli("rescore", inp, "--engine", "ray", "-o", out, "--resume", "--format", "json")
    assert json.loads(res.stdout)["rows"] == sum(1 for ln in lines if ln.strip()) and not work.exists()


def test_resume_with_nothing_to_resume_runs_the_whole_job(cli, tmp_path):
    res = cli("rescore", SAMPLE / "rollouts.jsonl", "-o", tmp_path / "o.jsonl", "--resume", "-q")
    assert res.exit_code == 1 and (tmp_path / "o.jsonl").is_file()  # (the sample has invalid rows: exit 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.jsonl"]


def test_one_run_per_output_directory(tmp_path):
    from mcqa_prep.engine.workdir import WorkDir, work_path
    from mcqa_prep.errors import OutputError

    first = WorkDir(work_path(tmp_path / "o"), "o")
    with pytest.raises(OutputError) as err:
        WorkDir(work_path(tmp_path / "o"), "o")
    assert err.value.reason == "output_busy" and "another run is working on this now" in err.value.message
    first.close(keep=False)
    assert not (tmp_path / ".o.mcqa-run").exists()
    WorkDir(work_path(tmp_path / "o"), "o").close(keep=False)
