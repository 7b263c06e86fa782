"""NeMo Gym's own profiling output as pass-rate evidence: a `gym eval profile` row (one per task) carries the
original input row under `sample` and one `rollout_infos` item per rollout, with its `reward` (NeMo Gym 0.7.0,
`nemo_gym/reward_profile.py`; rows also carry `mean/reward`, `num_rollouts` and more, not read here). The
rewards were given by NeMo Gym's verifier: the table records them under the contract of the policy the user
states (the built-in policy is NeMo Gym 0.7.0's mcqa grading), marked `grading: nemo_gym_profile`. A rollout's
extracted answer is not in the profile, so such rows are counted with the `fail` rule only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..evidence import reward_problem

SAMPLE = "sample"
ROLLOUTS = "rollout_infos"


def profile_rollouts(row: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, list[float], str | None]:
    """(the original row, the rewards of its rollouts, None), or (None, [], what is wrong with the row)."""
    sample = row.get(SAMPLE)
    if not isinstance(sample, Mapping):
        return None, [], f"$.{SAMPLE}: not a profile row (no original row under {SAMPLE!r})"
    infos = row.get(ROLLOUTS)
    if not isinstance(infos, list) or not infos:
        return None, [], f"$.{ROLLOUTS}: a profile row lists its rollouts (with their reward)"
    rewards = []
    for i, info in enumerate(infos):
        reward: Any = info.get("reward") if isinstance(info, Mapping) else None
        problem = reward_problem(reward)
        if problem is not None:
            return None, [], problem.replace("$.reward", f"$.{ROLLOUTS}[{i}].reward")
        rewards.append(float(reward))
    return sample, rewards, None
