"""Whether a preparation is accepted, with one refusal for each reason (errors.refusal):

- `accept`: **the one rule of every reader** (verify, load_prepared, serve and gym-component, and every command
  given a prepared directory through sources.resolve: rescore/passrates/curriculum --rows, audit, report,
  validate, prepare's inputs). In this order: the manifest is one (manifest.read: IncompletePreparation,
  IntegrityError); it was made by this preparation version and under a contract of this grader, or the given
  policy's (`check_contract`: ContractMismatch, reasons preparation_version, grader_version,
  contract_mismatch); its files are the listed ones with their bytes, rows and stamps, and every row of a bound
  preparation is as prepared (verify.verify_files: IntegrityError, reasons integrity, row_changed). The same
  directory is refused with the same error, reason and message by every reader. A reader that only reports
  may pass `allow_stale`: a preparation refused by `check_contract` without a policy (another preparation or
  grader version) is then read anyway, and the refusal handed back (`Accepted.stale`) for the report to say
  so; damage and edits are never allowed.
- `accept_manifest`: the manifest half of it, for a reader with its own pass over the files (load_prepared).
- `check_contract`: is it valid for this grader (or for this policy), and was it made by this preparation
  version (`PREPARATION_VERSION`)? ContractMismatch otherwise.
- `decide`: by prepare, for its output directory: is it up to date for this preparation (preparation version,
  contract, inputs, settings, pass-rate and decontamination settings)? StaleCache naming what differs otherwise.

Errors carry the facts (both contract ids, the fields that differ) and never a command-line flag.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..errors import ContractMismatch, Difference, StaleCache, refusal
from ..policy import GradingPolicy, contract_differences, contract_id
from ..progress import Progress
from . import manifest as mf
from .files import OnRow, VerifyReport, verify_files
from .manifest import Manifest, read

_E = TypeVar("_E", ContractMismatch, StaleCache)


@dataclass(frozen=True)
class Accepted:
    """A preparation a reader may use: its verified files (`report`), and, when it was read under
    `allow_stale`, why it would have been refused (`stale`, the ContractMismatch; None when it is current)."""

    report: VerifyReport
    stale: ContractMismatch | None = None

    @property
    def manifest(self) -> Manifest:
        return self.report.manifest


def accept_manifest(
    directory: str | os.PathLike, policy: GradingPolicy | None = None, *, allow_stale: bool = False
) -> tuple[Manifest, ContractMismatch | None]:
    """The manifest half of `accept`: (the manifest, the staleness allowed or None)."""
    manifest = read(directory)
    try:
        check_contract(manifest, policy)
    except ContractMismatch as exc:
        if not allow_stale or policy is not None:
            raise
        return manifest, exc
    return manifest, None


def accept(
    directory: str | os.PathLike,
    policy: GradingPolicy | None = None,
    *,
    allow_stale: bool = False,
    progress: Progress | None = None,
    on_row: OnRow | None = None,
) -> Accepted:
    """The one acceptance rule of a reader of a preparation (the module docstring); raises what is wrong.
    `on_row(row, file, location)` sees every shard row on the way (serve indexes the rows as prepared)."""
    manifest, stale = accept_manifest(directory, policy, allow_stale=allow_stale)
    return Accepted(verify_files(manifest, progress=progress, on_row=on_row), stale)


def verify_prepared(
    directory: str | os.PathLike, policy: GradingPolicy | None = None, *, progress: Progress | None = None
) -> VerifyReport:
    """`accept` for a caller that wants the verified files' report (the `verify` command's): raises
    IncompletePreparation, ContractMismatch or IntegrityError naming the file, the line and what differs."""
    return accept(directory, policy, progress=progress).report


def check_contract(manifest: Manifest, policy: GradingPolicy | None) -> None:
    """Is the recorded contract the one this grader (policy None) or the given policy means?

    Without a policy only the installation's part is compared (grader, selector, contract and schema
    versions): a preparation made under any policy is valid for this grader. With a policy, everything."""
    where = str(manifest.directory)
    found = manifest.contract
    mine = (policy or GradingPolicy()).contract()
    recorded_id = manifest.contract_id
    if found.get("grader_version") != mine["grader_version"]:
        raise refusal(
            ContractMismatch,
            f"{where}: prepared by grader version {found.get('grader_version')} (contract {recorded_id}); this "
            f"is grader version {mine['grader_version']} (contract {contract_id(mine)})",
            [Difference("grader_version", found.get("grader_version"), mine["grader_version"])],
            listed=False,
            expected=contract_id(mine),
            found=recorded_id,
            reason="grader_version",
            directory=where,
        )
    check_preparation_version(manifest, where)
    if policy is None:
        mine = {k: v for k, v in mine.items() if k != "policy"}
        found = {k: v for k, v in found.items() if k != "policy"}
    diff = contract_differences(found, mine)
    if diff:
        want = policy.contract_id() if policy is not None else "this installation's contract"
        raise refusal(
            ContractMismatch,
            f"{where}: prepared under contract {recorded_id}, expected {want}",
            diff,
            expected=policy.contract_id() if policy is not None else None,
            found=recorded_id,
            directory=where,
        )


def check_preparation_version(manifest: Manifest, where: str) -> None:
    """A preparation made by another preparation version is not this installation's data: refused, naming the
    versions, as a grader change is (ContractMismatch, reason preparation_version)."""
    found = manifest.preparation_version
    if found != mf.PREPARATION_VERSION:
        raise _other_version(
            ContractMismatch,
            where,
            found,
            expected=mf.PREPARATION_VERSION,
            found=found,
            reason="preparation_version",
            directory=where,
        )


def _other_version(error: type[_E], where: str, version: str, **details: Any) -> _E:
    """The refusal of a preparation made by another preparation version (a reader's ContractMismatch, or
    prepare's StaleCache for its output directory): one message."""
    return refusal(
        error,
        f"{where}: prepared by preparation version {version}; this is preparation version {mf.PREPARATION_VERSION} "
        "(what prepare writes changed: validation rules, normalisation, stamping or the row schema)",
        [Difference("preparation_version", version, mf.PREPARATION_VERSION)],
        listed=False,
        **details,
    )


def input_identity(prov: Iterable[Mapping[str, Any]]) -> list[Any]:
    """What makes two input lists 'the same inputs': content hashes, names relative to the argument, splits;
    not the absolute paths (the same data reached through another path is the same input)."""
    out: list[Any] = []
    for p in prov:
        if p["kind"] == "file":
            out.append(("file", p["name"], p["split"], p["sha256"], p["bytes"]))
        else:
            files = tuple((f["path"], f.get("split"), f["hash"], f["size"]) for f in p["files"])
            out.append(("pulled", p["repo"], p["commit"], tuple(p["splits"] or ()), files))
    return out


def _input_changes(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[Difference]:
    def key(p: Mapping[str, Any]) -> str:
        return p["name"] if p["kind"] == "file" else f"{p['repo']}@{p['commit'][:12]}"

    a = {key(p): i for i, p in zip(input_identity(old), old, strict=True)}
    b = {key(p): i for i, p in zip(input_identity(new), new, strict=True)}
    out = [Difference(f"inputs.{k}", "present", "absent") for k in a if k not in b]
    out += [Difference(f"inputs.{k}", "absent", "present") for k in b if k not in a]
    out += [Difference(f"inputs.{k}", "content", "other content") for k in a if k in b and a[k] != b[k]]
    if not out:
        out.append(Difference("inputs.order", [key(p) for p in old], [key(p) for p in new]))
    return out


def decide(
    out_dir: Path,
    policy: GradingPolicy,
    inputs: list[dict[str, Any]],
    settings: Mapping[str, Any],
    difficulty: Mapping[str, Any] | None = None,
    *,
    decontamination: Mapping[str, Any] | None = None,
) -> Manifest:
    """The manifest of `out_dir` when it is an up-to-date preparation of these inputs under this policy,
    settings, difficulty settings (pass-rate table identity, filter, stamping; None: none asked) and
    decontamination settings (benchmark identities, thresholds; None: none asked); otherwise StaleCache (or
    IncompletePreparation) naming every difference."""
    manifest = read(out_dir)
    found = manifest.preparation_version
    if found != mf.PREPARATION_VERSION:
        raise _other_version(
            StaleCache,
            str(out_dir),
            found,
            reason="stale_preparation",
            recorded=found,
            requested=mf.PREPARATION_VERSION,
            directory=str(out_dir),
        )
    new_id = policy.contract_id()
    if manifest.contract_id != new_id:
        raise refusal(
            StaleCache,
            f"{out_dir}: prepared under contract {manifest.contract_id}, but this run asks for {new_id}",
            contract_differences(manifest.contract, policy.contract()),
            reason="stale_contract",
            recorded=manifest.contract_id,
            requested=new_id,
            directory=str(out_dir),
        )
    if input_identity(manifest.inputs) != input_identity(inputs):
        diff = _input_changes(manifest.inputs, inputs)
        raise refusal(
            StaleCache,
            f"{out_dir}: prepared from other inputs ({'; '.join(_describe_input(d) for d in diff)})",
            diff,
            listed=False,
            reason="stale_inputs",
            directory=str(out_dir),
        )
    recorded = manifest.settings
    if recorded != dict(settings):
        keys = sorted(set(recorded) | set(settings))
        was, asked = ({k: s.get(k, mf.UNSET_SETTINGS.get(k)) for k in keys} for s in (recorded, settings))
        diff = [Difference(f"settings.{k}", was[k], asked[k]) for k in keys if was[k] != asked[k]]
        raise refusal(
            StaleCache,
            f"{out_dir}: prepared with other settings",
            diff,
            reason="stale_settings",
            directory=str(out_dir),
        )
    _decide_section(out_dir, manifest, "difficulty", difficulty)
    _decide_section(out_dir, manifest, "decontamination", decontamination)
    return manifest


# a manifest section whose `settings` make part of a preparation: what the refusal calls it, its reason
_SECTIONS = {
    # another pass-rate table (content hash), another model, other thresholds or stamping
    "difficulty": ("pass-rate settings", "stale_difficulty"),
    # another benchmark set (by content: sha256), another way of reading it or other thresholds
    "decontamination": ("decontamination settings", "stale_decontamination"),
}


def _decide_section(
    out_dir: Path, manifest: Manifest, name: str, requested: Mapping[str, Any] | None
) -> None:
    """A section's settings other than the run asks for make another preparation; a directory prepared
    without the section is stale for a run that asks for it, and vice versa."""
    recorded = (manifest.section(name) or {}).get("settings")
    if recorded == (dict(requested) if requested is not None else None):
        return
    what, reason = _SECTIONS[name]
    raise refusal(
        StaleCache,
        f"{out_dir}: prepared with other {what}",
        contract_differences(recorded or {}, requested or {}, prefix=f"{name}."),
        reason=reason,
        directory=str(out_dir),
    )


def _describe_input(d: Difference) -> str:
    name = d.field.removeprefix("inputs.")
    if d.recorded == "present":
        return f"removed: {name}"
    if d.recorded == "absent":
        return f"added: {name}"
    if d.recorded == "content":
        return f"changed: {name}"
    return "same files in another order"
