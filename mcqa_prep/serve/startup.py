"""The contract a server will grade under, decided before it listens.

- `--prepared DIR` (any number): each preparation is accepted as `verify` accepts it (prepared.accept: manifest,
  version, this grader's versions, every file's hash and row count, every row's stamp and bound fields), its
  rows indexed on the way (prepared.index.PreparedRows: a request's row must be one of them); they must all
  carry one contract, which is served. A policy given beside them must be that contract's (else
  ContractMismatch naming every field).
- Otherwise the given policy (or the built-in one) is served.

Nothing is started when any of this fails.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..errors import ContractMismatch, refusal
from ..policy import GradingPolicy, contract_differences
from ..progress import Progress
from .contract import ServedContract


def served_contract(
    prepared: Sequence[str | os.PathLike],
    policy: GradingPolicy | None,
    *,
    require_stamp: bool = False,
    progress: Progress | None = None,
) -> ServedContract:
    """The ServedContract for these preparations and/or this policy (see the module docstring)."""
    if not prepared:
        p = policy or GradingPolicy()
        p.check()
        source = "policy" if policy is not None else "the built-in policy"
        return ServedContract(p, require_stamp=require_stamp, sources=[source])
    from ..prepared.index import PreparedRows

    rows = PreparedRows()  # the rows as prepared, indexed in the pass that accepts each preparation
    reports = [rows.accept(d, progress=progress).report for d in prepared]
    first = reports[0]
    for other in reports[1:]:
        if other.contract_id != first.contract_id:
            raise refusal(
                ContractMismatch,
                f"{other.out_dir}: prepared under contract {other.contract_id}, but {first.out_dir} under "
                f"{first.contract_id}; one server grades under one contract",
                contract_differences(first.manifest.contract, other.manifest.contract),
                expected=first.contract_id,
                found=other.contract_id,
                reason="serve_preparations_differ",
                directory=other.out_dir,
            )
    contract = first.manifest.contract
    served_policy = GradingPolicy.from_dict(
        contract["policy"], source=f"{first.out_dir}/manifest.json $.contract.policy"
    )
    if policy is not None and policy.contract_id() != first.contract_id:
        raise refusal(
            ContractMismatch,
            f"{first.out_dir}: prepared under contract {first.contract_id}, the policy given asks for "
            f"{policy.contract_id()}",
            contract_differences(contract, policy.contract()),
            sides="preparation != policy",
            expected=policy.contract_id(),
            found=first.contract_id,
            reason="serve_policy_mismatch",
            directory=first.out_dir,
        )
    served = ServedContract(
        served_policy,
        known=[r.manifest.contract for r in reports],
        require_stamp=require_stamp,
        sources=[r.out_dir for r in reports],
        rows=rows.freeze(),
    )
    if served.id != first.contract_id:  # the manifest's policy rebuilt must give back the manifest's contract
        raise refusal(
            ContractMismatch,
            f"{first.out_dir}: its contract {first.contract_id} is not what its own policy makes with this "
            f"grader ({served.id})",
            contract_differences(contract, served.contract),
            expected=served.id,
            found=first.contract_id,
            directory=first.out_dir,
        )
    return served
