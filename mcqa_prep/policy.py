"""Grading policy and contract.

The effective policy, plus the grader and selector versions, plus the schema versions it is used with,
form the *contract*. Its id is 'sha256:' + hex digest of the canonical JSON (sorted keys, compact
separators, UTF-8, NaN rejected, only JSON types accepted). Any change of grading semantics bumps
GRADER_VERSION, which changes every contract id.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import Difference, PolicyError
from .grader import DEFAULT_MODE, GRADER_VERSION
from .grader.selection import SELECTOR_VERSION
from .schema import json_path, schema_version, validator

CONTRACT_VERSION = 1
# Schemas a contract names: a preparation is only compatible with the same row/prepared/manifest versions.
CONTRACT_SCHEMAS = ("row", "prepared_row", "manifest", "grading_policy")


@dataclass(frozen=True)
class Component:
    """What the reward is about (objective), which text it reads (scope), and whether a delivered
    response is required."""

    objective: str = "answer"
    scope: str | None = None  # None = derived: "response" with final_answer_only, else "full"
    require_response: bool = True


@dataclass(frozen=True)
class GradingPolicy:
    grading_mode_default: str = DEFAULT_MODE
    grading_mode_override: str | None = None
    final_answer_only: bool = False
    reasoning_mode: str = "required"
    zero_truncated: bool = False
    prompt_thinking: str = "none"
    component: Component = field(default_factory=Component)

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, doc: Any, *, source: str = "policy") -> GradingPolicy:
        """Validate a policy document (schema, then semantic rules) and build the policy."""
        if not isinstance(doc, Mapping):
            raise PolicyError(f"{source}: a grading policy must be a JSON object")
        errors = sorted(validator("grading_policy").iter_errors(doc), key=lambda e: list(e.absolute_path))
        if errors:
            lines = [f"{source}: {json_path(e.absolute_path)}: {e.message}" for e in errors]
            raise PolicyError("invalid grading policy:\n" + "\n".join(lines))
        comp = doc.get("component") or {}
        policy = cls(
            grading_mode_default=doc.get("grading_mode_default", DEFAULT_MODE),
            grading_mode_override=doc.get("grading_mode_override"),
            final_answer_only=doc.get("final_answer_only", False),
            reasoning_mode=doc.get("reasoning_mode", "required"),
            zero_truncated=doc.get("zero_truncated", False),
            prompt_thinking=doc.get("prompt_thinking", "none"),
            component=Component(
                objective=comp.get("objective", "answer"),
                scope=comp.get("scope"),
                require_response=comp.get("require_response", True),
            ),
        )
        policy.check(source)
        return policy

    @classmethod
    def from_file(cls, path: str | Path) -> GradingPolicy:
        from .io.readers import read_document

        p = Path(path)
        try:
            doc, problem = read_document(p)
        except FileNotFoundError:
            raise PolicyError(f"{p}: policy file not found") from None
        except OSError as exc:
            raise PolicyError(f"{p}: cannot read the policy file: {exc.strerror or exc}") from None
        if problem is not None:
            raise PolicyError(f"{p}: {problem}")
        return cls.from_dict(doc, source=str(p))

    def with_overrides(self, **fields: Any) -> GradingPolicy:
        """A copy with the given fields replaced (None values are ignored: flag not given)."""
        given = {k: v for k, v in fields.items() if v is not None}
        comp_fields = {k: given.pop(k) for k in ("objective", "scope", "require_response") if k in given}
        if given.pop("clear_override", False):
            given["grading_mode_override"] = None
        new = dataclasses.replace(self, **given)
        if comp_fields:
            new = dataclasses.replace(new, component=dataclasses.replace(new.component, **comp_fields))
        new.validate_doc()
        return new

    def validate_doc(self) -> None:
        GradingPolicy.from_dict(self.to_dict(effective=False), source="policy")

    def check(self, source: str = "policy") -> None:
        """Semantic rules the schema cannot say."""
        c = self.component
        scope = self.effective_scope
        if c.objective == "answer":
            want = "response" if self.final_answer_only else "full"
            if scope != want:
                raise PolicyError(
                    f"{source}: $.component.scope: an 'answer' objective must read scope '{want}' when "
                    f"final_answer_only is {'on' if self.final_answer_only else 'off'} (got '{scope}'); "
                    f"set component.scope to '{want}' or leave it out"
                )
        if not c.require_response and c.scope not in ("thinking", "full"):
            raise PolicyError(
                f"{source}: $.component.require_response: false needs an explicit scope 'thinking' or "
                "'full' (a grader that does not require a response must say what it reads)"
            )

    # ---- views --------------------------------------------------------------------------------
    @property
    def effective_scope(self) -> str:
        if self.component.scope is not None:
            return self.component.scope
        return "response" if self.final_answer_only else "full"

    def to_dict(self, effective: bool = True) -> dict[str, Any]:
        """The policy as JSON. effective=True fills derived values (the scope), as the contract needs."""
        comp: dict[str, Any] = {
            "objective": self.component.objective,
            "require_response": self.component.require_response,
        }
        scope = self.effective_scope if effective else self.component.scope
        if scope is not None:
            comp["scope"] = scope
        return {
            "policy_version": 1,
            "grading_mode_default": self.grading_mode_default,
            "grading_mode_override": self.grading_mode_override,
            "final_answer_only": self.final_answer_only,
            "reasoning_mode": self.reasoning_mode,
            "zero_truncated": self.zero_truncated,
            "prompt_thinking": self.prompt_thinking,
            "component": comp,
        }

    def contract(self) -> dict[str, Any]:
        return {
            "contract_version": CONTRACT_VERSION,
            "grader_version": GRADER_VERSION,
            "selector_version": SELECTOR_VERSION,
            "policy": self.to_dict(effective=True),
            "schemas": {name: schema_version(name) for name in CONTRACT_SCHEMAS},
        }

    def contract_id(self) -> str:
        return contract_id(self.contract())


def _check_json(value: Any, path: str = "$") -> None:
    if value is None or isinstance(value, (bool, str, int)):
        return
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise TypeError(f"{path}: NaN/Infinity is not allowed in canonical JSON")
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{path}: object keys must be strings, got {type(k).__name__}")
            _check_json(v, f"{path}.{k}")
        return
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_json(v, f"{path}[{i}]")
        return
    raise TypeError(f"{path}: {type(value).__name__} is not a JSON type")


def canonical_json(value: Any) -> bytes:
    """Sorted keys, compact separators, UTF-8, no NaN; any non-JSON type is rejected (never str())."""
    _check_json(value)
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def contract_id(contract: Mapping[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(contract)).hexdigest()


def contract_differences(
    recorded: Mapping[str, Any], requested: Mapping[str, Any], prefix: str = ""
) -> list[Difference]:
    """Every leaf field that differs between two contracts (dotted names), for refusals and machines."""
    out: list[Difference] = []
    for key in sorted(set(recorded) | set(requested)):
        name = f"{prefix}{key}"
        va, vb = recorded.get(key, "<absent>"), requested.get(key, "<absent>")
        if isinstance(va, Mapping) and isinstance(vb, Mapping):
            out.extend(contract_differences(va, vb, name + "."))
        elif va != vb:
            out.append(Difference(name, va, vb))
    return out
