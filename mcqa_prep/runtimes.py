"""Which runtimes can honour a grading contract: stock NeMo Gym 0.7.0's `mcqa` server, or `mcqa-prep serve`.

A preparation promises how its rows will be graded. `mcqa-prep serve` runs this grader under the contract, so
it honours every contract. Stock NeMo Gym 0.7.0 honours one only when every row would be graded identically
by it, which is decided in two halves:

- the contract (`policy_blockers`): NeMo Gym grades the whole output text (no final-answer selection, no
  truncation gate, no other component), knows the modes of its request model's `grading_mode` literal for
  rows and, as its server config's `grading_mode`, one more (`lenient_answer_colon_md`: a requirement on the
  server config, not a blocker);
- each written row (`row_problem`): a value NeMo Gym's request model refuses (HTTP 422 at verify time), such
  as a row mode of this project's own or an integer `uuid`. The fields it types and what it takes in each
  are one list, `REQUEST_FIELDS` (`request_field_problem`), which `serve` answers by too.

The mode sets come from the table of modes (grader/modes.py, its `nemo_gym` flag), which tests/test_serve_gym.py
checks against NeMo Gym 0.7.0's own code (`resources_servers/mcqa/app.py`: `MCQARunRequest.grading_mode` and
`MCQAResourcesServerConfig.grading_mode`) from its wheel (`make bench-deps`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any

from .grader.modes import MODES
from .policy import GradingPolicy

NEMO_GYM = "nemo-gym"  # the runtime name `prepare --runtime` takes
NEMO_GYM_RELEASE = "nemo_gym==0.7.0"
SERVE = "mcqa-prep-serve"
RUNTIMES = (NEMO_GYM,)

# From the one table of modes (grader/modes.py): NeMo Gym 0.7.0's `MCQARunRequest.grading_mode`, the modes a
# row may carry (anything else: HTTP 422), and `MCQAResourcesServerConfig.grading_mode`, its server override.
NEMO_GYM_ROW_MODES = tuple(m.name for m in MODES if m.nemo_gym and m.row)
NEMO_GYM_CONFIG_MODES = tuple(m.name for m in MODES if m.nemo_gym)

# NeMo Gym 0.7.0's request model (resources_servers/mcqa/app.py: MCQARunRequest and the BaseRunRequest it
# extends): the row fields it types, in the order they are checked here, and what it takes in each. Null or
# absent passes this check (responses_create_params is required at verify time: serve asks for it itself).
STRING = "a string"
OBJECT = "an object"
OPTIONS = "a list of {letter: text} objects"
OPTION = "an object of letter -> text (or null)"  # one element of `options`
REQUEST_FIELDS: tuple[tuple[str, str], ...] = (
    ("options", OPTIONS),
    ("uuid", STRING),
    ("expected_answer", STRING),
    ("grading_mode", STRING),
    ("template_metadata", OBJECT),
    ("metadata", OBJECT),
    ("responses_create_params", OBJECT),
)


@dataclass(frozen=True)
class Blocker:
    """A policy setting stock NeMo Gym cannot honour: the setting (a contract field), its value, why."""

    setting: str
    value: Any
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"setting": self.setting, "value": self.value, "why": self.why}

    def render(self) -> str:
        import json

        return f"{self.setting}={json.dumps(self.value)} ({self.why})"


def policy_blockers(policy: GradingPolicy) -> list[Blocker]:
    """The settings of `policy` that stock NeMo Gym 0.7.0 cannot honour (empty: it can)."""
    out: list[Blocker] = []
    if policy.final_answer_only:
        out.append(Blocker("policy.final_answer_only", True, "NeMo Gym grades the whole output text"))
    if policy.zero_truncated:
        out.append(Blocker("policy.zero_truncated", True, "NeMo Gym grades truncated responses too"))
    if policy.component.objective != "answer" or not policy.component.require_response:
        out.append(
            Blocker(
                "policy.component",
                {
                    "objective": policy.component.objective,
                    "require_response": policy.component.require_response,
                },
                "NeMo Gym grades the answer of a delivered response only",
            )
        )
    override = policy.grading_mode_override
    if override is not None and override not in NEMO_GYM_CONFIG_MODES:
        out.append(Blocker("policy.grading_mode_override", override, "not a NeMo Gym 0.7.0 grading mode"))
    if override is None and policy.grading_mode_default not in NEMO_GYM_ROW_MODES:
        out.append(
            Blocker(
                "policy.grading_mode_default",
                policy.grading_mode_default,
                "rows without a mode would carry it, and NeMo Gym 0.7.0 refuses it",
            )
        )
    return out


def nemo_gym_config(policy: GradingPolicy) -> dict[str, Any]:
    """What NeMo Gym's server config must say to honour `policy` (its `grading_mode`: the override that
    rows cannot carry, else null: the rows carry their mode)."""
    override = policy.grading_mode_override
    return {"grading_mode": override if override not in NEMO_GYM_ROW_MODES else None}


def request_field_problem(row: Mapping[str, Any], options_plain: bool = False) -> tuple[str, str, Any] | None:
    """(where, what NeMo Gym 0.7.0's request model takes there, the value found) for the first field of
    REQUEST_FIELDS it refuses by type, or None. `options_plain`: the caller knows the row's options are a
    list of objects of strings (a reader built them so: records.Row.hint)."""
    get = row.get
    opts = get("options")
    if (options_plain or opts is None or (type(opts) is list and _plain_options(opts))) and all(
        [type(get(name)) in ok for name, ok in _TYPED]
    ):
        return None  # the usual row, in one pass
    for name, takes in REQUEST_FIELDS:
        v = row.get(name)
        if v is None:
            continue
        if takes is OPTIONS:
            if type(v) is not list:
                return name, takes, v
            if _plain_options(v):  # the usual case, in a few C-level passes
                continue
            for i, opt in enumerate(v):
                if type(opt) is not dict or not all(x is None or type(x) is str for x in opt.values()):
                    return f"{name}[{i}]", OPTION, opt
        elif type(v) is not (str if takes is STRING else dict):
            return name, takes, v
    return None


_TYPED = tuple(  # the fields other than options, with the types that pass (null passes)
    (name, frozenset((str if takes is STRING else dict, type(None))))
    for name, takes in REQUEST_FIELDS
    if takes is not OPTIONS
)
_DICTS = frozenset((dict,))
_OPTION_VALUES = frozenset((str, type(None)))


def _plain_options(v: list[Any]) -> bool:
    """Every element an object whose values are strings or null (what request_field_problem checks)."""
    return (
        set(map(type, v)) <= _DICTS
        and set(map(type, chain.from_iterable(map(dict.values, v)))) <= _OPTION_VALUES
    )


def row_problem(row: Mapping[str, Any], options_plain: bool = False) -> str | None:
    """Why NeMo Gym 0.7.0's request model would refuse this (prepared) row at verify time, or None.
    `options_plain`: as request_field_problem's."""
    mode = row.get("grading_mode", NEMO_GYM_ROW_MODES[0])
    if mode not in NEMO_GYM_ROW_MODES:
        return f"grading_mode {mode!r} is not one NeMo Gym 0.7.0 accepts ({', '.join(NEMO_GYM_ROW_MODES)})"
    bad = request_field_problem(row, options_plain)
    if bad is not None:
        where, takes, value = bad
        return f"{where} is {type(value).__name__}: NeMo Gym 0.7.0 accepts {takes} only"
    return None


def runtimes_record(policy: GradingPolicy, refused_rows: int, first_problem: str | None) -> dict[str, Any]:
    """The manifest's `runtimes` record: which runtimes honour this preparation's contract, and why not."""
    blockers = policy_blockers(policy)
    why = [b.render() for b in blockers]
    if refused_rows:
        why.append(f"{refused_rows} row(s) NeMo Gym 0.7.0 refuses (first: {first_problem})")
    gym: dict[str, Any] = {"runtime": NEMO_GYM_RELEASE, "honours": not why}
    if why:
        gym["why_not"] = why
    else:
        gym["server_config"] = nemo_gym_config(policy)
    return {NEMO_GYM: gym, SERVE: {"runtime": SERVE, "honours": True}}
