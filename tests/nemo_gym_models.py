"""NeMo Gym 0.7.0's own row models, imported from its wheel (never copied): the `mcqa` task-data model
(`resources_servers/mcqa/task_data.py`, `TaskData`, which declares `reward_profiles`) and the request model
its server reads rows with (`MCQARunRequest`, loaded by bench/nemo_gym_ref.py with the server framework
stubbed). `make bench-deps` installs the wheel into bench/.cache/site; `make test` does not, so a test that
needs them skips, saying so, when the wheel is absent."""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import nemo_gym_ref  # noqa: E402

TASK_DATA = Path("resources_servers") / "mcqa" / "task_data.py"


@dataclass
class Models:
    task_data: Any
    run_request: Any

    def profile_fields(self) -> set[str]:
        """The field names of one reward profile, as NeMo Gym's TaskData documents them ([{a, b, c}])."""
        desc = self.task_data.model_fields["reward_profiles"].description or ""
        found = re.search(r"\[\{([^}]*)\}\]", desc)
        assert found, f"NeMo Gym's reward_profiles description names no fields: {desc!r}"
        return {n.strip() for n in found.group(1).split(",")}


def load_models() -> Models:
    site = nemo_gym_ref.SITE
    if not (site / TASK_DATA).is_file():
        pytest.skip(
            f"NeMo Gym {nemo_gym_ref.VERSION}'s wheel is not installed in {site} (`make bench-deps` installs it; "
            "the test suite does not)"
        )
    assert nemo_gym_ref.version(site) == nemo_gym_ref.VERSION
    ng = nemo_gym_ref.load(site)  # puts the site on sys.path (its pydantic) and stubs the server framework
    spec = importlib.util.spec_from_file_location("nemo_gym_mcqa_task_data", site / TASK_DATA)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return Models(module.TaskData, ng.app.MCQARunRequest)
