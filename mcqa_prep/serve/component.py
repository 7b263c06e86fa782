"""`gym-component`: a NeMo Gym resources-server folder named `mcqa` that serves with mcqa-prep.

`write_component(root, ...)` writes `root/resources_servers/mcqa/` (atomically: staging, then rename):

    app.py               the entrypoint NeMo Gym runs (`python app.py`): mcqa-prep's own server (uvicorn, the
                         plain ASGI app of `serve`) on the host and port NeMo Gym assigns (gym_entry.py)
    configs/mcqa.yaml    the built-in config's top-level keys (`mcqa`, `mcqa_simple_agent`,
                         `mcqa_environment_server`), so existing configs resolve, an `mcqa_prep` block, and the
                         preparations' JSONL shards as train/validation datasets, each with its license
    requirements.txt     mcqa-prep[serve] (NeMo Gym's venv set-up adds nemo-gym)
    task_data.py         the row schema (TaskData), declaring metadata.mcqa_prep (the stamp)
    data/example.jsonl, example_metrics.json, example_rollouts.jsonl   5 rows each, as `gym env test` requires
    README.md

With `root` on NEMO_GYM_EXTRA_ROOTS, NeMo Gym finds `resources_servers/mcqa` there before its built-in one.
The server verifies its preparations (or checks its policy) when it starts, like `mcqa-prep serve`.

NeMo Gym refuses a train or validation dataset without a `license` (one of its own names). The license is
the preparation's: every input pulled from the hub whose dataset card declares one NeMo Gym names (the
manifest records the card's license), all the same; else `license=` (the command's `--license`) gives it.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import binding
from .._version import __version__
from ..errors import ContractMismatch, Difference, UsageError, refusal
from ..grader import DEFAULT_REGEX_TIMEOUT
from ..grader.modes import ROW_MODES
from ..io.staging import commit, staging_dir
from ..io.writers import row_line, write_atomic_text
from ..policy import GradingPolicy
from ..prepared import manifest as mf
from . import component_files as files
from .contract import ServedContract
from .startup import served_contract
from .verifier import Verifier

NAME = "mcqa"
SUBDIR = Path("resources_servers") / NAME
EXAMPLES = 5


# NeMo Gym 0.7.0's dataset licenses (DatasetConfig.license), and the hub's ids for those it names
NEMO_GYM_LICENSES = (
    "Apache 2.0", "MIT", "Creative Commons Attribution 4.0 International",
    "Creative Commons Attribution-ShareAlike 4.0 International", "CC BY-SA 4.0", "CC BY-NC 3.0",
    "NVIDIA Internal Use Only, Do Not Distribute", "NVIDIA Evaluation Dataset License Agreement", "TBD",
    "GNU General Public License v3.0",
)  # fmt: skip
HUB_LICENSES = {
    "apache-2.0": "Apache 2.0",
    "mit": "MIT",
    "cc-by-4.0": "Creative Commons Attribution 4.0 International",
    "cc-by-sa-4.0": "Creative Commons Attribution-ShareAlike 4.0 International",
    "cc-by-nc-3.0": "CC BY-NC 3.0",
    "gpl-3.0": "GNU General Public License v3.0",
}


def nemo_gym_license(value: Any) -> str | None:
    """NeMo Gym's name for a license given by its name or by the hub's id; None when NeMo Gym has none."""
    if not isinstance(value, str):
        return None
    if value in NEMO_GYM_LICENSES:
        return value
    return HUB_LICENSES.get(value.strip().lower())


def dataset_license(prepared: Sequence[str | os.PathLike], given: str | None) -> str | None:
    """The license of the component's train/validation datasets (None when it has none: no preparation).
    UsageError when it cannot be known: the caller says it (`given`)."""
    if given is not None:
        found = nemo_gym_license(given)
        if found is None:
            raise UsageError(
                f"license {given!r}: not a license NeMo Gym 0.7.0 accepts; one of: "
                + ", ".join(NEMO_GYM_LICENSES),
                reason="bad_license",
            )
        return found
    if not prepared:
        return None
    names: set[str] = set()
    unknown: list[str] = []
    for directory in prepared:
        for inp in mf.read(directory).inputs:
            name = nemo_gym_license(inp.get("license")) if inp["kind"] == "pulled" else None
            if name is None:
                why = "a local file" if inp["kind"] != "pulled" else f"license {inp.get('license')!r}"
                unknown.append(f"{inp['path']} ({why})")
            else:
                names.add(name)
    if unknown or len(names) != 1:
        what = (
            f"its inputs' licenses are unknown: {', '.join(unknown[:3])}"
            if unknown
            else (f"its inputs carry different licenses: {', '.join(sorted(names))}")
        )
        raise UsageError(
            f"NeMo Gym requires a license on every train and validation dataset, and {what}; say which (one "
            "of: " + ", ".join(f"'{n}'" for n in NEMO_GYM_LICENSES) + ")",
            reason="license_required",
        )
    return names.pop()


def component_settings(
    prepared: Sequence[str | os.PathLike],
    policy: GradingPolicy | None,
    *,
    on_mismatch: str = "mask",
    require_stamp: bool = False,
    regex_timeout: float = DEFAULT_REGEX_TIMEOUT,
    lenient: bool = False,
    grade_timeout: float | None = None,
) -> dict[str, Any]:
    """The `mcqa_prep` block of the component's config: what its server serves."""
    out: dict[str, Any] = {
        "prepared": [str(Path(p).resolve()) for p in prepared] or None,
        "policy": policy.to_dict(effective=False) if policy is not None and not prepared else None,
        "on_mismatch": on_mismatch,
        "require_stamp": require_stamp,
        "regex_timeout": regex_timeout,
        "lenient": lenient,
    }
    if grade_timeout is not None:
        out["grade_timeout"] = grade_timeout
    return out


def component_verifier(settings: Mapping[str, Any] | None, grading_mode: str | None = None) -> Verifier:
    """The component server's verifier, built when it starts: its preparations verified (or its policy
    checked), and NeMo Gym's own `grading_mode` config key refused unless it says what the contract says."""
    s = dict(settings or {})
    policy = GradingPolicy.from_dict(s["policy"], source="mcqa_prep.policy") if s.get("policy") else None
    served = served_contract(s.get("prepared") or [], policy, require_stamp=bool(s.get("require_stamp")))
    want = served.policy.grading_mode_override
    if grading_mode is not None and grading_mode != want:
        raise refusal(
            ContractMismatch,
            f"the server config's grading_mode {grading_mode!r} would override every row's mode, but the "
            f"contract {served.id} says {json.dumps(want)}; set grading_mode to null (the contract decides)",
            [Difference("policy.grading_mode_override", want, grading_mode)],
            listed=False,
            expected=served.id,
            found=None,
            reason="serve_policy_mismatch",
        )
    timeout = float(s.get("regex_timeout") or DEFAULT_REGEX_TIMEOUT)
    return Verifier(
        served,
        on_mismatch=s.get("on_mismatch") or "mask",
        regex_timeout=timeout,
        lenient=bool(s.get("lenient")),
    )


# ---- the example data -----------------------------------------------------------------------------------


def _stamp(row: dict[str, Any], served: ServedContract) -> dict[str, Any]:
    md = dict(row.get("metadata") or {})
    mode = (
        served.policy.grading_mode_override or row.get("grading_mode") or served.policy.grading_mode_default
    )
    md["mcqa_prep"] = {
        "contract": served.id,
        "row_schema": mf.ROW_SCHEMA,
        "grading_mode": mode,
        "source": {"generated": "mcqa-prep gym-component example"},
        binding.STAMP_KEY: binding.digests(row),  # bound as prepare binds a row
    }
    return {**row, "metadata": md}


def example_rows(served: ServedContract) -> list[dict[str, Any]]:
    """Five rows: the first of the served preparation's first shard, or five built-in questions stamped with
    the served contract."""
    for directory in served.sources:
        rows = _rows_of_preparation(Path(directory))
        if rows:
            return rows
    mode = (
        served.policy.grading_mode_default
        if served.policy.grading_mode_default in ROW_MODES
        else ROW_MODES[0]
    )
    return [_stamp(files.example_row(i, mode), served) for i in range(EXAMPLES)]


def _rows_of_preparation(directory: Path) -> list[dict[str, Any]]:
    if not mf.is_prepared_dir(directory):
        return []
    from ..io.readers import iter_file

    manifest = mf.read(directory)
    out: list[dict[str, Any]] = []
    for f in manifest.shards():
        for row in iter_file(manifest.path(f)):
            if row.data is not None:
                out.append(row.data)
            if len(out) == EXAMPLES:
                return out
    return out


def example_rollouts(rows: list[dict[str, Any]], verifier: Verifier) -> list[dict[str, Any]]:
    """Each example row answered (the gold for the even rows, another option for the odd ones) and verified by
    the component's own verifier, in the form NeMo Gym's rollout collection writes (the verify response plus
    the task and rollout indices and the agent)."""
    out = []
    for i, row in enumerate(rows):
        status, doc = verifier.verify({**row, "response": files.response_for(row, correct=i % 2 == 0)})
        if status != 200:
            raise ValueError(f"example row {i}: the component's verifier answered {status}: {doc}")
        out.append(
            {**doc, "_ng_task_index": i, "_ng_rollout_index": 0, "agent_ref": {"name": "mcqa_simple_agent"}}
        )
    return out


def example_metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The example dataset's statistics under NeMo Gym's names (its check reads "Number of examples")."""

    def stats(values: list[float]) -> dict[str, Any]:
        if not values:
            return {
                "Total # non-null values": 0,
                "Average": 0.0,
                "Min": 0.0,
                "Max": 0.0,
                "Standard deviation": 0.0,
            }
        return {
            "Total # non-null values": len(values),
            "Average": round(statistics.fmean(values), 2),
            "Min": float(min(values)),
            "Max": float(max(values)),
            "Standard deviation": round(statistics.stdev(values), 2) if len(values) > 1 else 0.0,
        }

    words = [
        float(len(json.dumps(r["responses_create_params"]).split()))
        for r in rows
        if "responses_create_params" in r
    ]
    turns = [float(len((r.get("responses_create_params") or {}).get("input") or [])) for r in rows]
    doc: dict[str, Any] = {
        "name": "example",
        "type": "example",
        "jsonl_fpath": str(SUBDIR / "data" / "example.jsonl"),
        "num_repeats": 1,
        "gitlab_identifier": None,
        "huggingface_identifier": None,
        "license": None,
        "Number of examples": len(rows),
        "Number of tools": stats([0.0] * 0),
        "Json-dumped number of words (proxy for token count)": stats(words),
        "Number of turns": stats(turns),
        "Temperature": stats([]),
    }
    for key in ("expected_answer", "grading_mode", "uuid"):
        values = [json.dumps(r[key]) for r in rows if r.get(key) is not None]
        doc[key] = {"unique_count": len(set(values)), "total_count": len(values)}
    return doc


# ---- writing --------------------------------------------------------------------------------------------


def write_component(
    root: str | os.PathLike,
    settings: Mapping[str, Any],
    *,
    overwrite: bool = False,
    license: str | None = None,
) -> dict[str, Any]:
    """Write root/resources_servers/mcqa (see the module docstring); returns what was written. `license`:
    the datasets' license when the preparations do not record one NeMo Gym names."""
    target = Path(root) / SUBDIR
    if target.exists() and not overwrite:
        raise UsageError(
            f"{target}: exists; refusing to replace it", reason="component_exists", path=str(target)
        )
    if target.exists() and not (target / "app.py").is_file():
        raise UsageError(f"{target}: exists and is not a resources server folder", reason="foreign_directory")
    license_name = dataset_license(settings.get("prepared") or [], license)
    verifier = component_verifier(settings)
    served = verifier.served
    rows = example_rows(served)
    rollouts = example_rollouts(rows, verifier)
    texts = {
        "app.py": files.APP,
        "task_data.py": files.TASK_DATA,
        "requirements.txt": files.requirements(),
        "README.md": files.readme(served, settings),
        "configs/mcqa.yaml": files.config(settings, served, license_name),
        "data/example_metrics.json": json.dumps(example_metrics(rows), indent=4) + "\n",
    }
    with staging_dir(target) as staging:
        for rel, text in texts.items():
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            write_atomic_text(staging / rel, text)
        (staging / "data" / "example.jsonl").write_bytes(b"".join(row_line(r) for r in rows))
        (staging / "data" / "example_rollouts.jsonl").write_bytes(b"".join(row_line(r) for r in rollouts))
        commit(staging, target, replace=target.exists())
    return {
        "directory": str(target),
        "extra_root": str(Path(root).resolve()),
        "contract_id": served.id,
        "sources": served.sources,
        "license": license_name,
        "files": sorted([*texts, "data/example.jsonl", "data/example_rollouts.jsonl"]),
        "version": __version__,
    }
