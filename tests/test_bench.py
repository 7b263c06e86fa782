"""The bench's machinery, without timing anything: its generated rows are what the grader expects, a command's
process tree is measured whole, A/B legs rotate, NeMo Gym's per-mode code is its own verify()'s, result
documents are checked, and a missing NeMo Gym install says how to get it.

No thresholds on time here: performance claims come from `make bench`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from conftest import rescore_request

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import bench_grader  # noqa: E402
import bench_rescore  # noqa: E402
import harness  # noqa: E402
import nemo_gym_ref  # noqa: E402
import run as bench_run  # noqa: E402


def test_generated_verify_requests_grade_without_invalid_rows(tmp_path):
    from mcqa_prep.rescore.run import rescore

    requests, rollouts, dataset = bench_rescore.write_inputs(tmp_path, 200)
    report = rescore(rescore_request(requests, tmp_path / "out.jsonl"))
    assert report.rows == 200 and report.invalid.count == 0
    assert set(report.by_mode) <= {
        "strict_single_letter_boxed",
        "lenient_boxed",
        "lenient_answer_colon",
        "output_regex",
    }
    joined = rescore(rescore_request(rollouts, tmp_path / "out2.jsonl", rows=[dataset]))
    assert joined.joined == 200 and joined.invalid.count == 0
    first = json.loads(requests.read_text(encoding="utf-8").splitlines()[0])
    assert first["response"]["output"][0]["content"][0]["type"] == "output_text"
    inputs = bench_rescore.describe(requests, dataset, 200)
    # the real data's shape: 4-10 options, some long prompts, some responses without an answer
    assert min(map(int, inputs["options_per_row"])) >= 4 and max(map(int, inputs["options_per_row"])) == 10
    assert len(inputs["options_per_row"]) > 3
    assert 0 < inputs["long_prompt_share"] < 0.5 and 0 < inputs["no_answer_share"] < 0.5


def test_grader_rows_have_misses_and_4_to_10_options():
    rows = list(bench_grader.rows_for("lenient_answer_colon", 400, lang="multi"))
    counts = {len(o) for _t, o, _g in rows}
    assert min(counts) == 4 and max(counts) == 10
    assert all(g in "ABCDEFGHIJ"[: len(o)] for _t, o, g in rows)
    misses = sum("Answer:" not in t.rsplit("\n", 1)[-1] for t, _o, _g in rows)
    assert 0 < misses < 100


def test_measure_sums_the_process_tree(tmp_path):
    """A parent that holds ~60 MB and a child that holds ~120 MB at the same time: the tree's peak holds both,
    where the parent's own peak would show ~60 MB."""
    code = (
        "import subprocess, sys, time\n"
        "a = bytearray(60 * 2**20); a[::4096] = b'x' * len(a[::4096])\n"
        "child = 'b = bytearray(120 * 2**20); b[::4096] = b\"y\" * len(b[::4096]); import time; time.sleep(0.6)'\n"
        "subprocess.run([sys.executable, '-c', child], check=True)\n"
    )
    run = harness.measure([sys.executable, "-c", code])
    assert run.returncode == 0 and run.processes == 2
    assert run.peak_rss_mb >= 180, run
    assert run.hwm_sum_mb >= run.peak_rss_mb
    assert run.cpu_s > 0  # the child's CPU is counted too: it was waited for
    with pytest.raises(harness.CommandFailed, match="exited 3"):
        harness.measure([sys.executable, "-c", "import sys; sys.exit(3)"])
    assert harness.measure([sys.executable, "-c", "import sys; sys.exit(3)"], check=False).returncode == 3


def test_interleave_rotates_the_order_every_round():
    calls: list[str] = []
    legs = {name: (lambda name=name: calls.append(name) or len(calls)) for name in "ABC"}
    out = harness.interleave(legs, rounds=3)
    assert calls == list("ABCBCACAB")
    assert out["A"] == [1, 6, 8]  # each leg's results in round order


def test_figures_and_paired_ratios():
    f = harness.ratio_figure("a/b", [2.0, 3.0, 9.0], [1.0, 2.0, 3.0])
    assert f["samples"] == [2.0, 1.5, 3.0] and (f["min"], f["median"], f["max"]) == (1.5, 2.0, 3.0)
    r = harness.rate_figure("rows", 100, [0.5, 0.25])
    assert r["unit"] == "rows/s" and r["samples"] == [200.0, 400.0]


def test_result_documents_are_checked():
    good = {"bench": "x", "figures": {"a": harness.figure("a", "s", [1.0, 2.0, 3.0])}}
    assert bench_run.check_document(good) == []
    bad = {
        "bench": "x",
        "figures": {"a": {"what": "a", "unit": "s", "samples": [1.0], "min": 2, "max": 1, "median": 1}},
    }
    assert bench_run.check_document(bad) == ["figure a: samples and min/median/max disagree"]
    assert "no 'figures' object" in bench_run.check_document({"bench": "x"})
    # every bench module exposes run(scale, rounds=, full=)
    assert set(bench_run.modules()) >= {
        "grader",
        "rescore",
        "prepare",
        "validate",
        "report",
        "convert",
        "serve",
        "cluster",
        "passrates",
        "audit",
    }
    assert "audit" in bench_run.ORDER
    for name in bench_run.modules() + list(bench_run.ON_REQUEST):
        assert bench_run.in_result_format(BENCH / f"{bench_run.stem(name)}.py"), name


def test_a_module_in_the_earlier_shape_is_told_apart(tmp_path):
    """The runner skips (and names) a module whose run() is still run(rows): the module list grows as branches
    land, and one module not yet adapted must not stop the others."""
    old = tmp_path / "bench_old.py"
    old.write_text("def run(rows: int = 1000, *, repeat: int = 3) -> dict:\n    return {}\n")
    new = tmp_path / "bench_new.py"
    new.write_text("def run(scale=1.0, *, rounds=3, full=False, baseline_rev=None):\n    return {}\n")
    assert not bench_run.in_result_format(old)
    assert bench_run.in_result_format(new)
    assert not bench_run.in_result_format(tmp_path / "missing.py")


def test_a_v1_table_written_by_the_passrates_bench_reads_back(tmp_path):
    """bench_passrates compares reading a v2 table with the same entries as v1: the v1 copy must be a valid v1
    table with the same entries (else the comparison would time a refusal)."""
    import bench_passrates
    import orjson

    from mcqa_prep.passrates.measure import measure
    from mcqa_prep.passrates.table import read_table

    src = tmp_path / "rescored.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in bench_passrates._rows(30)))
    measure([src], tmp_path / "t.jsonl")
    v1 = bench_passrates.as_v1(tmp_path / "t.jsonl", tmp_path / "v1.jsonl")
    a, b = read_table(tmp_path / "t.jsonl"), read_table(v1)
    assert b.header["table_schema"] == "passrates.v1"
    assert {k: {m: (e.samples, e.passes) for m, e in per.items()} for k, per in a.entries.items()} == {
        k: {m: (e.samples, e.passes) for m, e in per.items()} for k, per in b.entries.items()
    }


def _nemo_gym():
    try:
        return nemo_gym_ref.load()
    except nemo_gym_ref.NeMoGymMissing:
        pytest.skip("NeMo Gym is not installed (make bench-deps)")


@pytest.mark.parametrize("name", bench_grader.MODES)
def test_nemo_gym_branch_is_its_verify_code_for_the_mode(name):
    """The per-mode code compiled from NeMo Gym's verify() decides as its whole verify() does on the bench rows."""
    ng = _nemo_gym()
    tm, _ours = bench_grader._ours(name)
    mode = bench_grader._gen_mode(name)
    branch = ng.branch("custom_regex" if name == "custom_regex" else mode)
    body = ng.body(tm)
    verify_mode = "strict_single_letter_boxed" if name == "custom_regex" else mode
    for text, options, gold in bench_grader.rows_for(mode, 150, lang="multi"):
        got = branch(text, ng.allowed(options), options, body)
        assert got == ng.grade(text, options, gold, verify_mode, tm)["extracted_answer"] or (
            name == "custom_regex" and got is None  # verify() then falls back to the mode
        )


def test_missing_nemo_gym_names_the_make_target(tmp_path, monkeypatch):
    monkeypatch.setattr(nemo_gym_ref, "_LOADED", None)
    with pytest.raises(nemo_gym_ref.NeMoGymMissing, match="make bench-deps"):
        nemo_gym_ref.load(tmp_path)


def _audit_runs(walls: dict[str, float], rss: dict[str, float]) -> dict[str, list]:
    """Two rounds of every bench_audit leg, as harness.measure would return them (no command run)."""
    return {
        leg: [
            harness.Run(argv=[leg], wall_s=w * k, cpu_s=w * k * 1.6, peak_rss_mb=rss[leg] + k,
                        hwm_sum_mb=rss[leg] + 5, processes=3, returncode=0,
                        extra={"root_cpu_s": w * 0.5, "children_cpu_s": w * k})
            for k in (1.0, 1.1)
        ]
        for leg, w in walls.items()
    }  # fmt: skip


def test_the_audit_bench_document_renders_its_table_targets_and_full_size_block():
    """bench_audit's figures from measured runs (here made up) as bench/results holds them, and the tables
    render.py writes from them: both sides, memory at two sizes, what each side found, the 60 s target."""
    import bench_audit
    import render

    kinds = {"verbatim": [0, 5], "shuffled": [9], "one_word": [12]}
    ds = {"questions": 26_522, "found": [0, 5, 7, 8], "index_s": 3.5, "loop_s": 12.0}
    doc = {"bench": "audit", "figures": {}, "checks": {}, "inputs": {"fixed_rows": bench_audit.FIXED_ROWS}}
    for rows, sfx, wall in ((100_000, "", 10.0), (685_573, "@full", 55.0)):
        legs = {"audit": wall, "datasketch": wall * 2, "audit_nodup": wall * 0.9, "audit_small": wall / 4,
                "audit_small_nodup": wall / 4} | ({"fixed": 2.5} if not sfx else {})  # fmt: skip
        rss = {"audit": 1000.0, "datasketch": 350.0, "audit_nodup": 950.0, "audit_small": 940.0,
               "audit_small_nodup": 948.0, "fixed": 300.0}  # fmt: skip
        found = {"audit": {0, 5, 9, 12}, "audit_nodup": {0, 5, 9, 12}}
        parts = bench_audit.results_at(_audit_runs(legs, rss), rows, rows // 4, sfx, ds, kinds, found, 2**20)
        for part, got in zip(("figures", "checks", "inputs"), parts, strict=True):
            doc[part].update(got)
    doc["meta"] = {"commit": "abc", "date": "2026-12-01 00:00 UTC", "cpu": "X", "cores": 2, "rounds": 2,
                   "scale": 1, "load_before": [0.1], "load_after": [0.2]}  # fmt: skip
    assert bench_run.check_document(doc) == []
    f = doc["figures"]
    assert f["datasketch_vs_audit.x"]["samples"] == [2.0, 2.0]
    assert f["audit.wall_s@full"]["target"] == {"op": "<=", "value": 60}
    assert "target" not in f["audit.wall_s"]  # the 60 s is a target at 685,573 rows only
    assert f["audit_nodup.rss_growth_mb@full"]["samples"] == [2.0, 2.0]
    assert (
        doc["checks"]["audit.found_planted"] == "4/4" and doc["checks"]["audit.flagged_clean"] == "0/99,996"
    )
    assert doc["checks"]["datasketch.found_planted.verbatim@full"] == "2/2"
    assert doc["checks"]["datasketch.flagged_clean"] == "2/99,996"

    table = "\n".join(render.t_audit({"audit": doc}))
    assert "| **100,000 rows** against 26,522 benchmark questions: wall | 10.0–11.0 s |" in table
    assert "| **685,573 rows** against 26,522 benchmark questions: wall | 55.0–60.5 s |" in table
    assert "| peak RSS of the process tree, 171,393 rows | 941 MB | 949 MB |  |" in table
    assert "| planted benchmark rows found (of 4) | 4/4 | the same rows: yes | 2/4 |" in table
    assert "| the loop's own clock: building its LSH / querying the rows |  |  | 3.50 s / 12.0 s |" in table
    assert "its fixed cost" in table and "2.50–2.75 s, 301 MB" in table
    targets = "\n".join(render.t_targets({"audit": doc}))
    assert (
        "(685,573 rows) | ≤ 60.0 s | 55.0–60.5 s | met in 1 of 2 rounds | `audit/audit.wall_s@full` |"
        in targets
    )
    commands = "\n".join(render.t_commands({"audit": doc}))
    assert (
        "datasketch LSH loop (near-duplicates only): 20.0–22.0 s | 2.00x (loop's time / ours) |" in commands
    )
    assert "685,573 rows" in "\n".join(render.t_memory({"audit": doc}))


def test_the_audit_bench_data_is_read_by_the_presets_and_its_planted_rows_are_found(tmp_path, monkeypatch):
    import bench_audit

    from mcqa_prep.audit import Request, audit

    monkeypatch.setattr(bench_audit, "CACHE", tmp_path)
    monkeypatch.setattr(bench_audit, "SIZES", {"mmlu": 300, "mmlu_pro": 200, "gpqa": 50})
    monkeypatch.setattr(bench_audit, "PLANTED", 0.2)
    data, bench = bench_audit.generate(400)
    doc = audit([data], Request(against=tuple(map(str, bench))))
    assert [b["preset"] for b in doc["benchmarks"]] == ["mmlu", "mmlu_pro", "gpqa"]
    assert doc["summary"]["rows"] == 400 and 40 <= doc["summary"]["contaminated_rows"] <= 120
    assert doc["position_bias"]["option_counts"]["dataset"].get("10", 0) > 200
    # the bench's checks: what the audit flagged of the planted rows (its findings name 1-based records)
    kinds = bench_audit.planted(data)
    (tmp_path / "audit.json").write_text(json.dumps(doc), encoding="utf-8")
    ours = bench_audit.found_checks("audit", bench_audit.flagged_rows(tmp_path / "audit.json"), kinds, 400)
    n = sum(map(len, kinds.values()))
    assert ours["audit.found_planted"] == f"{n}/{n}" and ours["audit.flagged_clean"] == f"0/{400 - n}"
    # the datasketch loop, as the bench runs it (a process), reads the same three layouts and finds rows
    subprocess.run([sys.executable, str(BENCH / "audit_datasketch.py"), str(data), *map(str, bench), "--out",
                    str(tmp_path / "ds.json")], check=True)  # fmt: skip
    ds = json.loads((tmp_path / "ds.json").read_text(encoding="utf-8"))
    assert ds["rows"] == 400 and ds["questions"] == 550
    theirs = bench_audit.found_checks("datasketch", set(ds["found"]), kinds, 400)
    got, of = map(int, theirs["datasketch.found_planted.verbatim"].split("/"))
    assert of > 0 and got >= of // 2


def _parses(argv: list[str]) -> None:
    """`mcqa-prep ARGV` parsed by the real command line (options, choices, paths), without running it."""
    from mcqa_prep.cli import main

    with main.make_context("mcqa-prep", list(argv)) as ctx:
        with warnings.catch_warnings():  # (click 8.2 keeps the tokens in args; older ones in protected_args)
            warnings.simplefilter("ignore", DeprecationWarning)
            tokens = [*ctx.protected_args, *ctx.args]
        name, cmd, rest = main.resolve_command(ctx, tokens)
        assert cmd is not None, name
        with cmd.make_context(name, rest, parent=ctx):
            pass


def test_cluster_bench_engine_legs_are_valid_command_lines(tmp_path):
    """Every command the cluster bench runs on the engine, locally and with --address, as the CLI reads it: a
    leg with an option value the command no longer takes fails here, not after minutes of a bench run."""
    import bench_cluster

    paths = {"data": tmp_path / "train.parquet", "requests": tmp_path / "requests.jsonl",
             "source": tmp_path / "mmlu_pro.parquet"}  # fmt: skip
    for p in paths.values():
        p.write_bytes(b"")
    for command, src in bench_cluster.ENGINE_COMMANDS.items():
        for ray in (False, True):
            argv = bench_cluster._engine_argv(command, paths[src], tmp_path / "out", ray)
            how = ["--address", "127.0.0.1:1"] if ray else []
            _parses([*argv, *how, "--workers", str(bench_cluster.ENGINE_WORKERS)])


def test_baseline_figures_are_the_baselines_time_over_ours_per_round():
    wall = {"w1": [2.0, 4.0], "base_w1": [3.0, 4.0], "w2": [1.0, 1.0]}
    figs = harness.baseline_figures("validate", wall, ["w1", "w2"])
    assert list(figs) == ["w1_vs_baseline.x"]  # (w2 ran without a baseline leg: no figure)
    assert figs["w1_vs_baseline.x"]["min"] == 1.0 and figs["w1_vs_baseline.x"]["max"] == 1.5


def test_a_revision_tree_holds_the_package_with_its_schemas_and_bytecode(tmp_path):
    tree = harness.revision_tree("HEAD", tmp_path)
    assert tree is not None
    assert (tree / "mcqa_prep" / "schemas" / "mcqa-row.v1.schema.json").is_file()  # (a link into schemas/)
    assert any((tree / "mcqa_prep" / "cli").rglob("*.pyc"))  # compiled, as an install is
    assert harness.revision_tree("no-such-revision-anywhere", tmp_path) is None
