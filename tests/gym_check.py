"""Check a component written by `mcqa-prep gym-component` with NeMo Gym 0.7.0's own code (its wheel in
bench/.cache/site, loaded as bench/nemo_gym_ref.py does), in a process of its own (NeMo Gym's package rewrites
sys.path and print when imported):

    python tests/gym_check.py COMPONENT_ROOT [ROWS.jsonl ...]

prints one JSON document: NeMo Gym's mode literals; its task_data validation (`load_task_data_schema`,
`validate_jsonl_rows`) of the component's example rows and of ROWS; its `gym env test` data check
(`_validate_data_single`); the component's verifier next to the built-in app's verify on the example rollouts'
requests; whether NeMo Gym's verify request model accepts each example rollout and each line of
data/sample/rollouts.jsonl (rollouts in the form NeMo Gym writes them); and a request stamped with another
contract through the component's verifier. (`gym env start` itself: tests/test_gym_launcher.py.)"""

from __future__ import annotations

import asyncio
import importlib.machinery
import importlib.util
import json
import sys
import types
import typing
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import nemo_gym_ref  # noqa: E402


class _MoreStubs(nemo_gym_ref._StubFinder):
    """Submodules of the stubbed NeMo Gym modules, and `devtools` (what `nemo_gym.cli.env` imports)."""

    PREFIXES = tuple(m + "." for m in nemo_gym_ref.STUB_MODULES)

    def find_spec(self, fullname, path, target=None):
        if fullname.startswith(self.PREFIXES) or fullname.split(".")[0] == "devtools":
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None


def _run(coro):
    return asyncio.new_event_loop().run_until_complete(coro)


def main() -> None:
    root = Path(sys.argv[1])
    extra_rows = [Path(p) for p in sys.argv[2:]]
    comp = root / "resources_servers" / "mcqa"
    ng = nemo_gym_ref.load()
    sys.meta_path.insert(0, _MoreStubs())
    out: dict = {}
    out["row_modes"] = list(typing.get_args(ng.app.MCQARunRequest.model_fields["grading_mode"].annotation))
    cfg = ng.app.MCQAResourcesServerConfig.__annotations__["grading_mode"]
    out["config_modes"] = list(typing.get_args(typing.get_args(cfg)[0]))

    from nemo_gym.task_data import load_task_data_schema, validate_jsonl_rows

    adapter = load_task_data_schema(comp)
    out["task_data"] = {}
    for path in [comp / "data" / "example.jsonl", *extra_rows]:
        rep = validate_jsonl_rows("mcqa", adapter, str(path), path.read_text(encoding="utf-8").splitlines())
        out["task_data"][path.name] = {"clean": rep.clean, "rows": rep.rows, "summary": rep.summary()}

    import nemo_gym.cli.env as env

    cfg_ns = types.SimpleNamespace(
        should_validate_data=True,
        dir_path=Path("resources_servers/mcqa"),
        resolved_dir_path=comp,
        _dir_path="resources_servers/mcqa",
    )
    try:
        env._validate_data_single(cfg_ns)
        out["data_check"] = "ok"
    except AssertionError as exc:
        out["data_check"] = str(exc)[:500]

    import yaml

    from mcqa_prep.serve.component import component_verifier

    settings = yaml.safe_load((comp / "configs" / "mcqa.yaml").read_text())["mcqa"]["resources_servers"][
        "mcqa"
    ]
    verifier = component_verifier(settings["mcqa_prep"], grading_mode=settings["grading_mode"])
    rollouts = [
        json.loads(line) for line in (comp / "data" / "example_rollouts.jsonl").read_text().splitlines()
    ]
    sample = [
        json.loads(x) for x in (REPO / "data/sample/rollouts.jsonl").read_text().splitlines() if x.strip()
    ]
    out["accepted"] = {}
    for name, docs in (("example_rollouts", rollouts), ("sample_rollouts", sample)):
        refused = []
        for i, doc in enumerate(docs):
            try:
                ng.app.MCQAVerifyRequest.model_validate(doc)
            except Exception as exc:  # noqa: BLE001 - pydantic's ValidationError: refused
                refused.append(f"{i}: {str(exc)[:200]}")
        out["accepted"][name] = {"lines": len(docs), "refused": refused}
    rows = {json.dumps(r["responses_create_params"]["input"]): r for r in
            (json.loads(x) for x in (comp / "data" / "example.jsonl").read_text().splitlines())}  # fmt: skip
    out["verify"], out["builtin"] = [], []
    for rollout in rollouts:
        req = {
            **rows[json.dumps(rollout["responses_create_params"]["input"])],
            "response": rollout["response"],
        }
        status, doc = verifier.verify(req)
        assert status == 200, doc
        out["verify"].append({k: doc.get(k) for k in ("reward", "mask_sample", "failure_kind", "mcqa_prep")})
        out["builtin"].append(json.loads(ng.verify_row(req))["reward"])
    other = {
        **rows[json.dumps(rollouts[0]["responses_create_params"]["input"])],
        "response": rollouts[0]["response"],
    }
    other = json.loads(json.dumps(other))
    other["metadata"]["mcqa_prep"]["contract"] = "sha256:" + "e" * 64
    status, res = verifier.verify(other)
    out["other_contract"] = {k: res[k] for k in ("reward", "mask_sample", "failure_kind", "failure_reason")}
    print("@@RESULT@@" + json.dumps(out))


if __name__ == "__main__":
    main()
