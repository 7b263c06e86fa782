"""`gym-component`: the NeMo Gym resources-server folder, checked with NeMo Gym 0.7.0's own code from its wheel
(tests/gym_check.py, in a process of its own) where it runs on this Python: its task_data validation, its
`gym env test` data check, its request model accepting the example rollouts and data/sample/rollouts.jsonl,
the component's verifier next to the built-in verify(); the config's licenses; and the runtime facts (modes)
this project reads off NeMo Gym's code. NeMo Gym's launcher itself starts the component in
tests/test_gym_launcher.py (`make gym-check`)."""

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
sys.path.insert(0, str(REPO / "bench"))
from nemo_gym_ref import SITE  # noqa: E402

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
    report = write_component(tmp_path, component_settings([prep], None), license="Apache 2.0")
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
    # NeMo Gym's request model accepts every example rollout and every sample rollout (its written form)
    assert got["accepted"]["example_rollouts"] == {"lines": 5, "refused": []}
    assert (
        got["accepted"]["sample_rollouts"]["refused"] == []
        and got["accepted"]["sample_rollouts"]["lines"] == 12
    )
    # the stamped rows are graded under the contract; rewards equal the built-in server's
    assert [v["reward"] for v in got["verify"]] == got["builtin"]
    assert all(v["mcqa_prep"]["contract"]["state"] == "match" for v in got["verify"])
    assert not any(v["mask_sample"] for v in got["verify"])
    other = got["other_contract"]
    assert other["mask_sample"] is True and other["failure_kind"] == "mcqa:contract_mismatch"
    assert "sha256:" + "e" * 64 in other["failure_reason"]


def test_component_config_keeps_the_built_in_keys_and_the_settings(prep, tmp_path):
    write_component(tmp_path, component_settings([prep], None, on_mismatch="reject"), license="mit")
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
    assert datasets[1]["license"] == "MIT" and datasets[1]["type"] == "train"  # NeMo Gym requires a license
    assert "license" not in datasets[0]  # the example dataset needs none
    assert "\nmcqa-prep[serve]" in (comp / "requirements.txt").read_text()
    assert "mcqa_prep.cli.gym_app import main" in (comp / "app.py").read_text()  # mcqa-prep's own server
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
    assert [r["_ng_task_index"] for r in rollouts] == [0, 1, 2, 3, 4]  # as NeMo Gym's collection writes them
    assert json.loads((comp / "data" / "example_metrics.json").read_text())["Number of examples"] == 5


def test_nemo_gyms_grading_mode_key_may_not_override_the_contract(prep):
    with pytest.raises(ContractMismatch, match="grading_mode 'lenient_boxed' would override"):
        component_verifier(component_settings([prep], None), grading_mode="lenient_boxed")
    md = component_settings([], GradingPolicy(grading_mode_override="lenient_answer_colon_md"))
    assert component_verifier(md, grading_mode="lenient_answer_colon_md").served.policy.grading_mode_override


def test_cli_writes_the_component_and_names_the_extra_root(prep, tmp_path, cli):
    res = cli(
        "gym-component",
        tmp_path / "plugins",
        "--prepared",
        prep,
        "--license",
        "apache-2.0",
        "--format",
        "json",
    )
    doc = json.loads(res.output)
    assert doc["ok"] and doc["extra_root"] == str((tmp_path / "plugins").resolve())
    assert doc["license"] == "Apache 2.0"
    assert (tmp_path / "plugins" / "resources_servers" / "mcqa" / "app.py").is_file()


def test_the_license_comes_from_the_pulled_inputs_or_must_be_given(prep, tmp_path):
    from mcqa_prep.errors import UsageError
    from mcqa_prep.prepared import manifest as mf
    from mcqa_prep.serve.component import dataset_license

    with pytest.raises(
        UsageError, match=r"NeMo Gym requires a license .* \(a local file\); say which \(one of: 'Apache 2.0'"
    ):
        dataset_license([prep], None)
    with pytest.raises(UsageError, match="not a license NeMo Gym 0.7.0 accepts"):
        dataset_license([prep], "WTFPL")
    assert (
        dataset_license([prep], "cc-by-sa-4.0") == "Creative Commons Attribution-ShareAlike 4.0 International"
    )
    assert dataset_license([], None) is None  # a policy alone: only the example dataset, which needs none
    pulled = tmp_path / "pulled"
    subprocess.run(["cp", "-r", str(prep), str(pulled)], check=True)
    doc = json.loads((pulled / mf.MANIFEST_NAME).read_text())
    doc["inputs"] = [{"kind": "pulled", "path": "hub", "repo": "o/r", "commit": "0" * 40, "splits": ["train"],
                      "files": [], "license": lic} for lic in ("apache-2.0", "Apache 2.0")]  # fmt: skip
    (pulled / mf.MANIFEST_NAME).write_text(json.dumps(doc))
    assert dataset_license([pulled], None) == "Apache 2.0"
    doc["inputs"][1]["license"] = "mit"
    (pulled / mf.MANIFEST_NAME).write_text(json.dumps(doc))
    with pytest.raises(UsageError, match="different licenses: Apache 2.0, MIT"):
        dataset_license([pulled], None)
