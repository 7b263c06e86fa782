"""`gym-component`: the NeMo Gym resources-server folder, checked with NeMo Gym 0.7.0's own code from its wheel
(tests/gym_check.py, in a process of its own) where it runs on this Python: its task_data validation, its
`gym env test` data check, its request and response models around the component's verify() next to the
built-in verify(); and the runtime facts (modes) this project reads off NeMo Gym's code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from prep_helpers import make_row, write_rows

from mcqa_prep import runtimes
from mcqa_prep.errors import ContractMismatch
from mcqa_prep.policy import GradingPolicy
from mcqa_prep.prepare import prepare
from mcqa_prep.serve.component import component_settings, component_verifier, write_component

REPO = Path(__file__).resolve().parents[1]
SITE = REPO / "bench" / ".cache" / "site"
needs_gym = pytest.mark.skipif(
    not (SITE / "resources_servers" / "mcqa" / "app.py").is_file(),
    reason="NeMo Gym 0.7.0 not installed: make bench-deps",
)


def gym_check(root: Path, *rows: Path) -> dict:
    p = subprocess.run(
        [sys.executable, str(REPO / "tests" / "gym_check.py"), str(root), *map(str, rows)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("@@RESULT@@"))
    return json.loads(line.removeprefix("@@RESULT@@"))


@pytest.fixture(scope="module")
def prep(tmp_path_factory):
    d = tmp_path_factory.mktemp("gym")
    rows = [make_row(i) for i in range(7)] + [make_row(7, template=True)]
    rows[3]["metadata"] = {"topic": "x"}
    src = write_rows(d / "train.jsonl", rows)
    prepare([src], d / "prepared")
    return d / "prepared"


@needs_gym
def test_component_passes_nemo_gyms_own_checks_and_grades_like_its_built_in_server(prep, tmp_path):
    report = write_component(tmp_path, component_settings([prep], None))
    comp = Path(report["directory"])
    assert comp == tmp_path / "resources_servers" / "mcqa"
    got = gym_check(tmp_path, prep / "train-00000-of-00001.jsonl")
    # the mode facts runtimes.py states are NeMo Gym's
    assert tuple(got["row_modes"]) == runtimes.NEMO_GYM_ROW_MODES
    assert tuple(got["config_modes"]) == runtimes.NEMO_GYM_CONFIG_MODES
    # its task_data check: example rows and prepared rows are clean (the stamp is a declared field)
    assert all(v["clean"] for v in got["task_data"].values()), got["task_data"]
    assert got["task_data"]["example.jsonl"]["rows"] == 5
    assert got["data_check"] == "ok"  # 5 examples, their metrics, 5 rollouts: `gym env test`'s data check
    # the stamp reaches grading through its request model; rewards equal the built-in server's
    assert [v["reward"] for v in got["verify"]] == got["builtin"]
    assert all(v["metadata"]["mcqa_prep"]["contract"] == report["contract_id"] for v in got["verify"])
    assert not any(v["mask_sample"] for v in got["verify"])
    other = got["other_contract"]
    assert other["mask_sample"] is True and other["failure_kind"] == "mcqa:contract_mismatch"
    assert "sha256:" + "e" * 64 in other["failure_reason"]


def test_component_config_keeps_the_built_in_keys_and_the_settings(prep, tmp_path):
    write_component(tmp_path, component_settings([prep], None, on_mismatch="reject"))
    comp = tmp_path / "resources_servers" / "mcqa"
    cfg = yaml.safe_load((comp / "configs" / "mcqa.yaml").read_text())
    builtin = SITE / "resources_servers" / "mcqa" / "configs" / "mcqa.yaml"
    want = (
        list(yaml.safe_load(builtin.read_text()))
        if builtin.is_file()
        else ["mcqa", "mcqa_simple_agent", "mcqa_environment_server"]
    )
    assert list(cfg) == want
    server = cfg["mcqa"]["resources_servers"]["mcqa"]
    assert server["entrypoint"] == "app.py" and server["grading_mode"] is None
    assert (
        server["mcqa_prep"]["prepared"] == [str(prep.resolve())]
        and server["mcqa_prep"]["on_mismatch"] == "reject"
    )
    datasets = cfg["mcqa_simple_agent"]["responses_api_agents"]["simple_agent"]["datasets"]
    assert datasets[0]["jsonl_fpath"] == "resources_servers/mcqa/data/example.jsonl"
    assert datasets[1]["jsonl_fpath"] == f"{prep.resolve()}/train-00000-of-00001.jsonl"
    assert (comp / "requirements.txt").read_text().startswith("nemo-gym==0.7.0\nmcqa-prep[serve]")
    rows = [json.loads(x) for x in (comp / "data" / "example.jsonl").read_text().splitlines()]
    assert len(rows) == 5 and rows[0]["uuid"] == "row-000000"  # the preparation's first rows


def test_component_from_a_policy_alone_stamps_its_built_in_examples(tmp_path):
    policy = GradingPolicy(grading_mode_override="robust")
    report = write_component(tmp_path, component_settings([], policy))
    assert report["contract_id"] == policy.contract_id()
    comp = tmp_path / "resources_servers" / "mcqa"
    rows = [json.loads(x) for x in (comp / "data" / "example.jsonl").read_text().splitlines()]
    assert len(rows) == 5 and {r["metadata"]["mcqa_prep"]["contract"] for r in rows} == {policy.contract_id()}
    rollouts = [json.loads(x) for x in (comp / "data" / "example_rollouts.jsonl").read_text().splitlines()]
    assert [r["reward"] for r in rollouts] == [1.0, 0.0, 1.0, 0.0, 1.0]
    assert json.loads((comp / "data" / "example_metrics.json").read_text())["Number of examples"] == 5


def test_nemo_gyms_grading_mode_key_may_not_override_the_contract(prep):
    with pytest.raises(ContractMismatch, match="grading_mode 'lenient_boxed' would override"):
        component_verifier(component_settings([prep], None), grading_mode="lenient_boxed")
    md = component_settings([], GradingPolicy(grading_mode_override="lenient_answer_colon_md"))
    assert component_verifier(md, grading_mode="lenient_answer_colon_md").served.policy.grading_mode_override


def test_cli_writes_the_component_and_names_the_extra_root(prep, tmp_path, cli):
    res = cli("gym-component", tmp_path / "plugins", "--prepared", prep, "--format", "json")
    doc = json.loads(res.output)
    assert doc["ok"] and doc["extra_root"] == str((tmp_path / "plugins").resolve())
    assert (tmp_path / "plugins" / "resources_servers" / "mcqa" / "app.py").is_file()
