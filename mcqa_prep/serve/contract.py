"""The contract a server grades under, and each row's stamp against it (`ServedContract.check`).

A prepared row carries `metadata.mcqa_prep.contract`, the id of the contract it was prepared under. At verify
time the row is one of:

- `match`: stamped with the served contract: graded;
- `unstamped`: no stamp (rows not prepared by mcqa-prep): graded and counted, or a mismatch when stamps are
  required;
- `mismatch`: stamped with another contract, or with something that is not a contract id.

A mismatch names every differing field wherever the server can know the row's contract: the contracts of the
preparations it was given, and every contract this installation can derive (any grading policy under this
grader, selector and schema versions: the index is built once, on the first unknown id). A contract it cannot
resolve (another mcqa-prep version, or an edited stamp) is reported with both ids and where to see the fields.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import Difference, fields_that_differ
from ..fields import contract_stamp
from ..grader.modes import OVERRIDE_MODES, ROW_MODES
from ..policy import Component, GradingPolicy, contract_differences, contract_id

MATCH = "match"
UNSTAMPED = "unstamped"
MISMATCH = "mismatch"
MISMATCH_KIND = "mcqa:contract_mismatch"
# why a row is a mismatch (the `/metrics` reasons)
OTHER_CONTRACT = "other_contract"  # a contract the server can resolve: the fields are named
UNKNOWN_CONTRACT = "unknown_contract"  # a contract id the server cannot resolve
BAD_STAMP = "bad_stamp"  # metadata.mcqa_prep is there but holds no contract id
STAMP_REQUIRED = "stamp_required"  # unstamped, and stamps are required
MISMATCH_REASONS = (OTHER_CONTRACT, UNKNOWN_CONTRACT, BAD_STAMP, STAMP_REQUIRED)
_ID = re.compile(r"^sha256:[0-9a-f]{64}$")
_CACHE_MAX = 1024


@dataclass(frozen=True)
class RowCheck:
    """One row's stamp against the served contract."""

    state: str
    reason: str | None = None
    row_contract: str | None = None
    failure_reason: str | None = None
    differences: tuple[Difference, ...] = ()

    def detail(self, served: str) -> dict[str, Any]:
        """The machine-readable account of a mismatch (the 422 body's `detail`, the metrics' examples)."""
        return {
            "failure_kind": MISMATCH_KIND,
            "reason": self.reason,
            "failure_reason": self.failure_reason,
            "row_contract": self.row_contract,
            "server_contract": served,
            "differences": [d.to_dict() for d in self.differences],
        }


_MATCH = RowCheck(MATCH)
_UNSTAMPED = RowCheck(UNSTAMPED)


class ServedContract:
    """The served policy and contract, the contracts the server knows, and the per-row check."""

    def __init__(
        self,
        policy: GradingPolicy,
        *,
        known: Iterable[Mapping[str, Any]] = (),
        require_stamp: bool = False,
        sources: Iterable[str] = (),
    ) -> None:
        self.policy = policy
        self.contract = policy.contract()
        self.id = contract_id(self.contract)
        self.require_stamp = require_stamp
        self.sources = list(sources)  # where the contract came from (prepared directories, a policy)
        self.known: dict[str, dict[str, Any]] = {self.id: self.contract}
        for c in known:
            self.known[contract_id(c)] = dict(c)
        self._derivable: dict[str, GradingPolicy] | None = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[Any, RowCheck] = OrderedDict()

    def check(self, row: Mapping[str, Any]) -> RowCheck:
        stamped, cid = contract_stamp(row)
        if not stamped:
            return self._required() if self.require_stamp else _UNSTAMPED
        if cid == self.id:
            return _MATCH
        key = cid if isinstance(cid, str) else repr(type(cid))
        hit = self._cache.get(key)
        if hit is None:
            hit = self._mismatch(cid)
            with self._lock:
                self._cache[key] = hit
                if len(self._cache) > _CACHE_MAX:
                    self._cache.popitem(last=False)
        return hit

    def _required(self) -> RowCheck:
        return RowCheck(
            MISMATCH,
            STAMP_REQUIRED,
            None,
            f"the row carries no metadata.mcqa_prep.contract stamp and this server requires one (it grades "
            f"under contract {self.id}); prepare the rows with mcqa-prep",
        )

    def _mismatch(self, cid: Any) -> RowCheck:
        if not isinstance(cid, str) or not _ID.match(cid):
            return RowCheck(
                MISMATCH,
                BAD_STAMP,
                None,
                f"metadata.mcqa_prep.contract is {_short(cid)}, not a contract id; this server grades under "
                f"contract {self.id}",
            )
        found = self.known.get(cid)
        if found is None:
            policy = self.derivable().get(cid)
            found = policy.contract() if policy is not None else None
        if found is None:
            return RowCheck(
                MISMATCH,
                UNKNOWN_CONTRACT,
                cid,
                f"row prepared under contract {cid}, this server grades under {self.id}; the row's contract is "
                "not one this server can resolve (prepared by another mcqa-prep version, or the stamp was "
                "edited): compare the `contract` in the manifest.json of the row's preparation with GET "
                "/contract on this server",
            )
        diff = tuple(contract_differences(found, self.contract))
        return RowCheck(
            MISMATCH,
            OTHER_CONTRACT,
            cid,
            f"row prepared under contract {cid}, this server grades under {self.id}; "
            + fields_that_differ(diff, "row != server"),
            diff,
        )

    def derivable(self) -> dict[str, GradingPolicy]:
        """Every contract this installation can make (id -> its policy), built once on first use (a server
        builds it before it starts serving: `prepare_lookup`)."""
        with self._lock:
            if self._derivable is None:
                self._derivable = derivable_contracts()
            return self._derivable

    def prepare_lookup(self) -> None:
        self.derivable()

    def describe(self) -> dict[str, Any]:
        """GET /contract: the full contract, its id and where it came from."""
        return {
            "contract_id": self.id,
            "contract": self.contract,
            "sources": self.sources,
            "require_stamp": self.require_stamp,
        }


def derivable_contracts() -> dict[str, GradingPolicy]:
    """contract id -> policy of every valid grading policy under this installation's versions (~10k, about a
    second): what lets a mismatch name the fields of a row prepared by this mcqa-prep under another policy."""
    out: dict[str, GradingPolicy] = {}
    grid = itertools.product(
        ROW_MODES,
        (None, *OVERRIDE_MODES),
        (False, True),
        ("required", "none"),
        (False, True),
        ("none", "open", "closed"),
        ("answer", "process", "format"),
        (None, "response", "thinking", "full"),
        (True, False),
    )
    for default, override, fao, reasoning, zero, thinking, objective, scope, require in grid:
        policy = GradingPolicy(
            default, override, fao, reasoning, zero, thinking, Component(objective, scope, require)
        )
        try:
            policy.check()
        except Exception:  # noqa: BLE001 - a combination the policy rules refuse is no contract
            continue
        out.setdefault(policy.contract_id(), policy)
    return out


def _short(value: Any) -> str:
    import json

    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = type(value).__name__
    return text if len(text) <= 80 else text[:77] + "..."
