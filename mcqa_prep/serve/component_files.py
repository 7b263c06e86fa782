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

APP = '''"""NeMo Gym `mcqa` resources server, served by mcqa-prep @VERSION@ (written by `mcqa-prep gym-component`).

NeMo Gym starts it as it starts the built-in one (`gym env start` runs `python app.py` here). It runs mcqa-prep's
own HTTP server (uvicorn with a plain ASGI app, not NeMo Gym's FastAPI stack) on the host, port and
num_workers NeMo Gym assigns, with the built-in mcqa server's routes, health and observability paths
(/ng-rollout/<id>/...), request refusals and response fields, plus `mcqa_prep`: this server's record of the
row's grading contract. A row prepared under another contract is masked (or refused with HTTP 422).
Settings: the `mcqa_prep` block of configs/mcqa.yaml, or of the server's block in your own config. See
mcqa-prep's docs/design/serve.md.
"""

import sys
from pathlib import Path

from mcqa_prep.cli.gym_app import main

if __name__ == "__main__":
    sys.exit(main(Path(__file__).resolve().parent))
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
    """This mcqa-prep with its server (from the directory it was installed from, when that is local). NeMo
    Gym's venv set-up adds nemo-gym itself (the version of the NeMo Gym that starts it)."""
    spec = f"mcqa-prep[serve]=={__version__}"
    try:
        direct = metadata.distribution("mcqa-prep").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        direct = None
    if direct:
        url = json.loads(direct).get("url", "")
        if url.startswith("file://"):
            spec = f"mcqa-prep[serve] @ {url}"
    return f"# the server mcqa-prep runs; NeMo Gym's venv set-up adds nemo-gym itself\n{spec}\n"


def dataset_type(split: str) -> str:
    """NeMo Gym's dataset type for a preparation's split: train, else validation (held-out data)."""
    return "train" if split == "train" else "validation"


def config(settings: Mapping[str, Any], served: ServedContract, license_name: str | None) -> str:
    """configs/mcqa.yaml: the built-in config's keys (existing configs resolve), the server's settings, the
    example dataset and each JSONL shard of the preparations with its license (NeMo Gym requires one on every
    train and validation dataset)."""
    datasets: list[dict[str, Any]] = [
        {"name": "example", "type": "example", "jsonl_fpath": "resources_servers/mcqa/data/example.jsonl"}
    ]
    for directory in settings.get("prepared") or []:
        from ..prepared import manifest as mf

        for f in mf.read(directory).shards():
            if f.name.endswith(".jsonl"):
                name = f.name.removesuffix(".jsonl").replace(".", "_")
                entry = {
                    "name": name,
                    "type": dataset_type(f.split or ""),
                    "jsonl_fpath": f"{directory}/{f.name}",
                }
                datasets.append({**entry, "license": license_name})
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
    on_mismatch = (
        "refused (HTTP 422)" if settings.get("on_mismatch") == "reject" else "masked (reward 0, mask_sample)"
    )
    return (
        "# mcqa (mcqa-prep)\n\n"
        "NeMo Gym's `mcqa` resources server, served by mcqa-prep under the grading contract\n"
        f"`{served.id}` (from {', '.join(served.sources)}).\n\n"
        "Put the folder that holds `resources_servers/` on `NEMO_GYM_EXTRA_ROOTS` and `gym env start` runs this\n"
        "server instead of its built-in `mcqa` (same config key, routes, refusals, response fields and aggregate\n"
        "metrics; its own HTTP server, on the host and port NeMo Gym assigns). A row whose\n"
        f"`metadata.mcqa_prep.contract` differs from the served contract is {on_mismatch},\n"
        "with `failure_kind: mcqa:contract_mismatch` and the fields that differ. Written by\n"
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
        "status": "completed",
        "usage": {
            "input_tokens": 0,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": len(text.split()),
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": len(text.split()),
        },
    }
