"""Check a component written by `mcqa-prep gym-component` with NeMo Gym 0.7.0's own code (its wheel in
bench/.cache/site, loaded as bench/nemo_gym_ref.py does), in a process of its own (NeMo Gym's package rewrites
sys.path and print when imported):

    python tests/gym_check.py COMPONENT_ROOT [ROWS.jsonl ...]

prints one JSON document: NeMo Gym's mode literals; its task_data validation (`load_task_data_schema`,
`validate_jsonl_rows`) of the component's example rows and of ROWS; its `gym env test` data check
(`_validate_data_single`); the component app's verify (NeMo Gym's request model -> the app's verify() -> its
response model) next to the built-in app's verify on the same requests; and a request stamped with another
contract through the component."""

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

    spec = importlib.util.spec_from_file_location("mcqa_component_app", comp / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    import yaml

    settings = yaml.safe_load((comp / "configs" / "mcqa.yaml").read_text())["mcqa"]["resources_servers"][
        "mcqa"
    ]
    server = object.__new__(app.MCQAResourcesServer)
    server.config = types.SimpleNamespace(
        grading_mode=settings["grading_mode"], mcqa_prep=settings["mcqa_prep"]
    )
    rollouts = [
        json.loads(line) for line in (comp / "data" / "example_rollouts.jsonl").read_text().splitlines()
    ]
    drop = ("reward", "extracted_answer", "mask_sample", "failure_kind", "failure_reason", "status", "rule")
    requests = [{k: v for k, v in r.items() if k not in drop} for r in rollouts]
    out["verify"], out["builtin"] = [], []
    for req in requests:
        body = app.MCQAVerifyRequest.model_validate(req)
        res = _run(server.verify(body))
        assert isinstance(res, app.MCQAVerifyResponse)
        doc = json.loads(res.model_dump_json())
        out["verify"].append(
            {k: doc.get(k) for k in ("reward", "mask_sample", "failure_kind", "status", "metadata")}
        )
        out["builtin"].append(json.loads(ng.verify_row(req))["reward"])
    other = json.loads(json.dumps(requests[0]))
    other["metadata"]["mcqa_prep"]["contract"] = "sha256:" + "e" * 64
    res = _run(server.verify(app.MCQAVerifyRequest.model_validate(other)))
    out["other_contract"] = {
        k: getattr(res, k) for k in ("reward", "mask_sample", "failure_kind", "failure_reason")
    }
    print("@@RESULT@@" + json.dumps(out))


if __name__ == "__main__":
    main()
