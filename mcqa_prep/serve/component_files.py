"""The texts of the NeMo Gym component folder (component.py writes them): its app, row schema, config,
requirements, README, and the built-in example questions."""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import metadata
from typing import Any

import yaml

from .._version import __version__
from ..grader.modes import ROW_MODES
from .contract import ServedContract

APP = '''"""NeMo Gym `mcqa` resources server that grades with mcqa-prep, under the rows' grading contract.

Written by `mcqa-prep gym-component` (mcqa-prep @VERSION@). Same routes, config key and response fields as
NeMo Gym 0.7.0's built-in mcqa server, with three differences: the request model keeps every row field (so
metadata.mcqa_prep, the contract stamp, reaches grading); a row prepared under another contract is masked
(or refused with HTTP 422) with failure_kind "mcqa:contract_mismatch" naming the fields that differ; and the
config's `grading_mode` may not silently override the contract. Settings: the `mcqa_prep` block of
configs/mcqa.yaml. See mcqa-prep's docs/design/serve.md.
"""

import asyncio
from typing import Any, ClassVar, Optional

from fastapi import HTTPException
from pydantic import ConfigDict

from mcqa_prep.serve.aggregate import contract_counts
from mcqa_prep.serve.component import component_verifier
from mcqa_prep.serve.verifier import has_custom_regex
from nemo_gym.base_resources_server import (
    BaseResourcesServerConfig,
    BaseRunRequest,
    BaseVerifyRequest,
    BaseVerifyResponse,
    ReverifyMode,
    SimpleResourcesServer,
)
from nemo_gym.config_types import AggregateMetrics, AggregateMetricsRequest
from nemo_gym.reward_profile import compute_pass_majority_metrics, highest_k_metrics

_VERIFIERS: dict = {}


class MCQAResourcesServerConfig(BaseResourcesServerConfig):
    REVERIFY_MODE: ClassVar[ReverifyMode] = ReverifyMode.STATELESS
    grading_mode: Optional[str] = None  # NeMo Gym's key: null, or what the contract says
    mcqa_prep: Optional[dict[str, Any]] = None


class MCQARunRequest(BaseRunRequest):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class MCQAVerifyRequest(MCQARunRequest, BaseVerifyRequest):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class MCQAVerifyResponse(BaseVerifyResponse):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    expected_answer: str
    extracted_answer: Optional[str] = None
    status: str
    rule: Optional[str] = None


class MCQAResourcesServer(SimpleResourcesServer):
    ray_enabled = False
    config: MCQAResourcesServerConfig

    def mcqa_verifier(self):
        key = id(self)
        if key not in _VERIFIERS:
            _VERIFIERS[key] = component_verifier(self.config.mcqa_prep, grading_mode=self.config.grading_mode)
        return _VERIFIERS[key]

    def setup_webserver(self):
        self.mcqa_verifier()  # verify the preparations (or the policy) before serving anything
        return super().setup_webserver()

    def compute_metrics(self, tasks):
        return compute_pass_majority_metrics(
            tasks, score_fn=lambda r: {"accuracy": r["reward"]}, answer_key="extracted_answer"
        )[0]

    def get_key_metrics(self, agent_metrics):
        key = {k: agent_metrics[k] for k in ("mean/reward", "pass@1/accuracy") if k in agent_metrics}
        key.update(highest_k_metrics(agent_metrics, "pass@1[avg-of-{k}]", score_names=["accuracy", "no_answer"]))
        key.update(highest_k_metrics(agent_metrics, "pass@{k}", score_names=["no_answer"]))
        key.update(highest_k_metrics(agent_metrics, "majority@{k}", score_names=["accuracy"]))
        return key

    async def aggregate_metrics(self, body: AggregateMetricsRequest) -> AggregateMetrics:
        out = await super().aggregate_metrics(body)
        out.agent_metrics.update(contract_counts(body.verify_responses, self.mcqa_verifier().served))
        return out

    async def verify(self, body: MCQAVerifyRequest) -> MCQAVerifyResponse:
        doc = body.model_dump(mode="json")
        verifier = self.mcqa_verifier()
        if has_custom_regex(doc):  # a pattern from the data runs off the event loop, under its time bound
            status, out = await asyncio.to_thread(verifier.verify, doc)
        else:
            status, out = verifier.verify(doc)
        if status != 200:
            raise HTTPException(status_code=status, detail=out.get("detail"))
        return MCQAVerifyResponse.model_validate(out)


if __name__ == "__main__":
    MCQAResourcesServer.run_webserver()
'''.replace("@VERSION@", __version__)

TASK_DATA = '''"""Task-data schema of the mcqa server written by `mcqa-prep gym-component`.

The built-in mcqa schema's fields, with `grading_mode` open to every mode mcqa-prep grades and
`metadata.mcqa_prep` declared: the grading-contract stamp `mcqa-prep prepare` writes on every row, which this
server checks at verify time. Standard library and pydantic only (NeMo Gym's rule for task_data modules).
"""

from typing import Any, Dict, List, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field


class McqaPrepStamp(BaseModel):
    model_config = ConfigDict(extra="allow")

    contract: str = Field(description="The id of the grading contract the row was prepared under (sha256:...).")
    row_schema: Optional[str] = Field(default=None, description="The prepared-row schema version.")
    grading_mode: Optional[str] = Field(default=None, description="The mode that grades the row.")
    source: Optional[Dict[str, Any]] = Field(default=None, description="Where the row was read from.")


class Metadata(BaseModel):
    model_config = ConfigDict(extra="allow")

    mcqa_prep: Optional[McqaPrepStamp] = Field(
        default=None,
        description="The grading-contract stamp; checked at verify time.",
        json_schema_extra={"consumed_by": ["verify"]},
    )


class TaskData(BaseModel):
    model_config = ConfigDict(extra="allow")

    uuid: Optional[str] = Field(default=None, json_schema_extra={"consumed_by": ["provenance"]})
    options: Optional[List[Dict[str, Optional[str]]]] = Field(
        default=None, json_schema_extra={"consumed_by": ["verify"]}
    )
    expected_answer: Optional[str] = Field(default=None, json_schema_extra={"consumed_by": ["verify"]})
    metadata: Optional[Metadata] = Field(default=None, json_schema_extra={"consumed_by": ["verify", "provenance"]})
    grading_mode: Literal[@MODES@] = Field(
        default="strict_single_letter_boxed", json_schema_extra={"consumed_by": ["verify"]}
    )
    template_metadata: Optional[Dict[str, Any]] = Field(default=None, json_schema_extra={"consumed_by": ["verify", "prompt"]})
    reward_profiles: Optional[List[Dict[str, Any]]] = Field(default=None, json_schema_extra={"consumed_by": ["provenance"]})
'''.replace("@MODES@", ", ".join(json.dumps(m) for m in ROW_MODES))


def requirements() -> str:
    """nemo-gym 0.7.0 and this mcqa-prep: from the directory it was installed from when that is local."""
    spec = f"mcqa-prep[serve]=={__version__}"
    try:
        direct = metadata.distribution("mcqa-prep").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        direct = None
    if direct:
        url = json.loads(direct).get("url", "")
        if url.startswith("file://"):
            spec = f"mcqa-prep[serve] @ {url}"
    return f"nemo-gym==0.7.0\n{spec}\n"


def config(settings: Mapping[str, Any], served: ServedContract) -> str:
    """configs/mcqa.yaml: the built-in config's keys (existing configs resolve), the server's settings."""
    datasets: list[dict[str, Any]] = [
        {"name": "example", "type": "example", "jsonl_fpath": "resources_servers/mcqa/data/example.jsonl"}
    ]
    for directory in settings.get("prepared") or []:
        from ..prepared import manifest as mf

        for f in mf.read(directory).shards():
            if f.name.endswith(".jsonl"):
                kind = f.split if f.split in ("train", "validation") else "train"
                name = f.name.removesuffix(".jsonl").replace(".", "_")
                datasets.append({"name": name, "type": kind, "jsonl_fpath": f"{directory}/{f.name}"})
    doc = {
        "mcqa": {
            "resources_servers": {
                "mcqa": {
                    "entrypoint": "app.py",
                    "grading_mode": None,
                    "domain": "knowledge",
                    "verified": False,
                    "description": f"Multi-choice question answering, graded by mcqa-prep under contract {served.id}",
                    "value": "Improve benchmarks like MMLU / GPQA / HLE",
                    "mcqa_prep": dict(settings),
                }
            }
        },
        "mcqa_simple_agent": {
            "responses_api_agents": {
                "simple_agent": {
                    "entrypoint": "app.py",
                    "resources_server": {"type": "resources_servers", "name": "mcqa"},
                    "model_server": {"type": "responses_api_models", "name": "policy_model"},
                    "datasets": datasets,
                }
            }
        },
        "mcqa_environment_server": {
            "environment_servers": {
                "legacy_agent": {
                    "entrypoint": "app.py",
                    "agent_server": {"type": "responses_api_agents", "name": "mcqa_simple_agent"},
                }
            }
        },
    }
    head = f"# Written by mcqa-prep {__version__} gym-component; contract {served.id}\n"
    return head + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def readme(served: ServedContract, settings: Mapping[str, Any]) -> str:
    return (
        "# mcqa (mcqa-prep)\n\n"
        "NeMo Gym's `mcqa` resources server, grading with mcqa-prep under the grading contract\n"
        f"`{served.id}` (from {', '.join(served.sources)}).\n\n"
        "Put the folder that holds `resources_servers/` on `NEMO_GYM_EXTRA_ROOTS` and NeMo Gym uses this server\n"
        "instead of its built-in `mcqa` (same config key, routes and response fields). A row whose\n"
        "`metadata.mcqa_prep.contract` differs from the served contract is "
        + (
            "refused (HTTP 422)"
            if settings.get("on_mismatch") == "reject"
            else "masked (reward 0, mask_sample)"
        )
        + ",\nwith `failure_kind: mcqa:contract_mismatch` and the fields that differ. Written by\n"
        f"`mcqa-prep gym-component` {__version__}; see mcqa-prep's docs/design/serve.md.\n"
    )


_QUESTIONS = (
    ("Which organelle is the site of protein synthesis?", ["Mitochondrion", "Ribosome", "Golgi apparatus", "Lysosome"], "B"),
    ("What is the chemical symbol for sodium?", ["S", "So", "Na", "Sd"], "C"),
    ("Which planet is closest to the Sun?", ["Mercury", "Venus", "Earth", "Mars"], "A"),
    ("What is 7 x 8?", ["54", "56", "58", "64"], "B"),
    ("Which gas do plants take in for photosynthesis?", ["Oxygen", "Nitrogen", "Hydrogen", "Carbon dioxide"], "D"),
)  # fmt: skip


def example_row(i: int, mode: str) -> dict[str, Any]:
    question, texts, gold = _QUESTIONS[i % len(_QUESTIONS)]
    letters = "ABCD"
    listing = "\n".join(f"{letter}: {t}" for letter, t in zip(letters, texts, strict=True))
    prompt = (
        "Answer the following multiple choice question. Put the letter of your answer inside \\boxed{}.\n\n"
        f"{question}\n{listing}"
    )
    return {
        "responses_create_params": {"input": [{"role": "user", "content": prompt}]},
        "options": [{letter: t} for letter, t in zip(letters, texts, strict=True)],
        "expected_answer": gold,
        "grading_mode": mode,
        "uuid": f"mcqa-prep-example-{i}",
    }


def response_for(row: Mapping[str, Any], *, correct: bool) -> dict[str, Any]:
    """A Responses API response answering the row (its gold, or the next option) in \\boxed{}."""
    gold = str(row.get("expected_answer") or "A").strip().upper()[:1] or "A"
    letters = [k for opt in row.get("options") or [] if isinstance(opt, dict) for k in opt] or ["A", "B"]
    letter = gold if correct else next((x for x in letters if x != gold), gold)
    text = f"Working through the options, the answer is \\boxed{{{letter}}}."
    return {
        "id": "resp_example",
        "created_at": 0,
        "model": "example-model",
        "object": "response",
        "output": [
            {
                "id": "msg_example",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
