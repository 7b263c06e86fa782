"""`mcqa-prep pull`: a hub dataset at an exact commit, verified byte for byte, with a provenance lock."""

from __future__ import annotations

import click

from ..pull import hub
from ..pull import run as pull
from ..pull.lock import LOCK_NAME
from .common import FORMAT_OPTION, QUIET_OPTION, bar_factory, emit_json


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def _rows(n: int | None) -> str:
    return "" if n is None else f"{n:,} rows"


def render_text(report: pull.PullReport) -> None:
    """People's view: what is on disk, at which commit, and whether the network was used."""
    doc = report.to_json()
    lk = report.lock
    if report.status == "verified, offline":
        click.echo(
            f"verified, offline: {lk['repo']}@{lk['commit']} in {doc['dir']}: {len(lk['files'])} files match "
            f"the lock (no network)"
        )
    elif report.status == "up to date":
        click.echo(
            f"up to date: {lk['repo']}@{lk['requested_revision']} is still {lk['commit']}; "
            f"{len(lk['files'])} files in {doc['dir']} match the lock"
        )
    else:
        verb = "updated" if report.status == "updated" else "pulled"
        click.echo(f"{verb} {lk['repo']}@{lk['requested_revision']} -> commit {lk['commit']}")
        if report.previous_commit:
            click.echo(f"  previous commit {report.previous_commit}")
        click.echo(f"  into {doc['dir']} from {lk['endpoint']}")
        width = max(len(f["path"]) for f in lk["files"])
        for f in doc["files"]:
            split = f["split"] or ""
            click.echo(
                f"  {f['path']:<{width}}  {split:<10}  {_rows(f['rows']):>12}  {_size(f['size']):>9}  {f['action']}"
            )
        for path in report.removed:
            click.echo(f"  {path:<{width}}  removed (gone upstream)")
    if report.changes is not None:
        for kind in ("added", "removed", "changed"):
            for path in report.changes[kind]:
                click.echo(f"  {kind}: {path}")
    splits = report.splits()
    if splits:
        parts = []
        for name, s in splits.items():
            rows = f"{s['rows']:,} rows" if s["rows"] is not None else "rows unknown"
            parts.append(f"{name} {rows} in {s['files']} file{'s' if s['files'] != 1 else ''}")
        click.echo("splits: " + "; ".join(parts))
    click.echo(f"license: {lk['license'] or 'not declared in the dataset card'}")
    for note in report.notes:
        click.echo(f"note: {note}")
    if report.lock_written:
        click.echo(f"lock: {doc['lock_file']}")


@click.command("pull")
@click.argument("repo", required=False, metavar="[REPO]")
@click.option(
    "--revision",
    "-r",
    default=None,
    metavar="REV",
    help="Branch, tag or 40-hex commit to pull [default: the lock's commit, else main].",
)
@click.option(
    "--to",
    "to",
    type=click.Path(file_okay=False),
    default=None,
    metavar="DIR",
    help="Target directory [default: ./<repo name>].",
)
@click.option(
    "--split",
    "splits",
    multiple=True,
    metavar="NAME",
    help="Pull only this split (repeat for more); the README is always pulled.",
)
@click.option(
    "--offline", is_flag=True, help="Never touch the network: verify the pulled directory against its lock."
)
@click.option(
    "--update", is_flag=True, help="Move the lock when the revision now resolves to another commit."
)
@click.option(
    "--force-download",
    is_flag=True,
    help="Download every selected file again (repairs files that no longer match the lock).",
)
@FORMAT_OPTION
@QUIET_OPTION
def pull_command(repo, revision, to, splits, offline, update, force_download, fmt, quiet):
    """Pull hub dataset REPO at an exact commit into DIR, verify every file and write DIR/mcqa-prep.lock.json.

    REPO defaults to the lock's repo in DIR, else nvidia/Nemotron-RL-knowledge-mcqa. A re-run with a lock and
    no new --revision needs no network: it re-hashes the files against the lock ("verified, offline").
    HF_TOKEN is used for gated or private datasets; HF_ENDPOINT selects the hub.

    \b
    Examples:
      mcqa-prep pull                                       # main of nvidia/Nemotron-RL-knowledge-mcqa
      mcqa-prep pull nvidia/Nemotron-RL-knowledge-mcqa --revision main --to data/mcqa
      mcqa-prep pull --to data/mcqa --offline              # verify only, never touches the network
      mcqa-prep pull --to data/mcqa --revision main --update   # follow main to its new commit
    """
    try:
        report = pull.pull(
            repo,
            revision=revision,
            to=to,
            splits=list(splits) or None,
            offline=offline,
            update=update,
            force_download=force_download,
            progress=bar_factory(quiet),
        )
    except pull.UpstreamMoved as exc:
        what = "another commit asked for" if hub.is_commit(exc.revision) else "upstream moved"
        click.echo(f"{what}: {exc.revision!r} resolves to {exc.resolved}", err=True)
        click.echo(f"  {LOCK_NAME} has commit {exc.locked}", err=True)
        for kind in ("added", "removed", "changed"):
            for path in exc.changes[kind]:
                click.echo(f"  {kind}: {path}", err=True)
        raise
    if fmt == "json":
        emit_json(report.to_json())
    else:
        render_text(report)
