"""The contract a server grades under, and each row's stamp against it (`ServedContract.check`).

A prepared row carries `metadata.mcqa_prep.contract`, the id of the contract it was prepared under, and
`metadata.mcqa_prep.bound`, the digests of the fields that grade it (binding.py). At verify time the row is
one of:

- `match`: stamped with the served contract and as prepared: graded;
- `unstamped`: no stamp (rows not prepared by mcqa-prep): graded and counted, or a mismatch when stamps are
  required;
- `mismatch`: stamped with another contract, or with something that is not a contract id; or stamped with
  the served contract but not as prepared (`row_changed`: a bound field differs from its stamp's digests, or
  the stamp's mode from the mode the served policy makes effective; `failure_kind: "mcqa:row_changed"`); or,
  with the preparations given (`rows`), none of their rows (`not_prepared`); or with a stamp that records no
  digests (`stale_stamp`: an older preparation, refused by every reader as stale).

Without the preparations, a changed row is told by its stamp alone and its fields named without values (the
digests do not hold them). With them (`serve --prepared`: prepared.index.PreparedRows), a row must be one of
their rows, and a changed one is named field by field with both values: the prepared row is found by the
digests its stamp records (the row as it was before the edit), else by its stamp's `source`.

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

from .. import binding
from ..errors import Difference, fields_that_differ
from ..fields import contract_stamp, stamp_of
from ..grader.modes import OVERRIDE_MODES, ROW_MODES
from ..policy import Component, GradingPolicy, contract_differences, contract_id

MATCH = "match"
UNSTAMPED = "unstamped"
MISMATCH = "mismatch"
MISMATCH_KIND = "mcqa:contract_mismatch"
ROW_CHANGED_KIND = "mcqa:row_changed"
STATUS_CONTRACT_MISMATCH = "contract_mismatch"
# why a row is a mismatch (the `/metrics` reasons)
OTHER_CONTRACT = "other_contract"  # a contract the server can resolve: the fields are named
UNKNOWN_CONTRACT = "unknown_contract"  # a contract id the server cannot resolve
BAD_STAMP = "bad_stamp"  # metadata.mcqa_prep is there but holds no contract id
STAMP_REQUIRED = "stamp_required"  # unstamped, and stamps are required
ROW_CHANGED = "row_changed"  # the served contract, but a field that grades the row differs from its stamp
NOT_PREPARED = (
    "not_prepared"  # the served contract, as its stamp says, but none of the served preparations' rows
)
STALE_STAMP = "stale_stamp"  # the served contract, but a stamp that binds no field (an older preparation)
MISMATCH_REASONS = (
    OTHER_CONTRACT,
    UNKNOWN_CONTRACT,
    BAD_STAMP,
    STAMP_REQUIRED,
    ROW_CHANGED,
    NOT_PREPARED,
    STALE_STAMP,
)
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

    @property
    def kind(self) -> str:
        """The mask's `failure_kind`: a row edited after prepare, or a contract other than the served one."""
        return ROW_CHANGED_KIND if self.reason == ROW_CHANGED else MISMATCH_KIND

    @property
    def status(self) -> str:
        """The masked row's status: the reason for a row edited after prepare, else contract_mismatch."""
        return ROW_CHANGED if self.reason == ROW_CHANGED else STATUS_CONTRACT_MISMATCH

    def detail(self, served: str) -> dict[str, Any]:
        """The machine-readable account of a mismatch (the 422 body's `detail`, the metrics' examples)."""
        return {
            "failure_kind": self.kind,
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
        rows: Any = None,
    ) -> None:
        self.policy = policy
        self.rows = rows  # prepared.index.PreparedRows of the served preparations, or None
        self.modes = (policy.grading_mode_override, policy.grading_mode_default)
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
            return self._as_prepared(row)
        key = cid if isinstance(cid, str) else repr(type(cid))
        hit = self._cache.get(key)
        if hit is None:
            hit = self._mismatch(cid)
            with self._lock:
                self._cache[key] = hit
                if len(self._cache) > _CACHE_MAX:
                    self._cache.popitem(last=False)
        return hit

    def _as_prepared(self, row: Mapping[str, Any]) -> RowCheck:
        """A row stamped with the served contract: is it the row as prepared (module docstring)?"""
        c = binding.check(row, self.modes)
        if c.state == binding.UNBOUND:
            return RowCheck(
                MISMATCH,
                STALE_STAMP,
                self.id,
                f"the row's stamp names the served contract {self.id} but records no digests of the fields that "
                f"grade it (metadata.mcqa_prep.{binding.STAMP_KEY}): prepared by an older mcqa-prep, whose "
                "preparations every reader refuses as stale, or the stamp was edited; prepare the rows again",
            )
        if self.rows is None:
            if c.state == binding.OK:
                return _MATCH
            return RowCheck(MISMATCH, ROW_CHANGED, self.id, _edited(binding.describe(c)))
        assert c.mine is not None
        if c.state == binding.OK and self.rows.holds(binding.identity(c.mine)):
            return _MATCH
        recorded = binding.recorded(row) or {}
        stamp = stamp_of(row) or {}
        prepared = self.rows.by_identity(binding.identity(recorded)) or self.rows.by_source(
            stamp.get("source")
        )
        diff = binding.differences(row, prepared) if prepared is not None else []
        said, was = stamp.get("grading_mode"), (stamp_of(prepared) or {}).get("grading_mode")
        if prepared is not None and said != was:  # the stamp's own mode, edited
            diff.append(Difference(binding.MODE_FIELD, said, was))
        if diff:
            return RowCheck(
                MISMATCH,
                ROW_CHANGED,
                self.id,
                _edited(binding.edited(diff)),
                tuple(diff),
            )
        if c.state == binding.CHANGED:  # and no prepared row to name the values: the stamp alone
            return RowCheck(MISMATCH, ROW_CHANGED, self.id, _edited(binding.describe(c)))
        return RowCheck(
            MISMATCH,
            NOT_PREPARED,
            self.id,
            f"the row is stamped with the served contract {self.id} and agrees with its stamp, but it is none of "
            f"the rows of the preparation(s) this server serves ({', '.join(self.sources)}): a row of another "
            "preparation under this contract (serve that one too), or a row edited after prepare whose stamp's "
            "digests were written again",
        )

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


def _edited(what: str) -> str:
    return f"{what}; this server grades rows as prepared: prepare the edited rows again (mcqa-prep prepare)"


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
