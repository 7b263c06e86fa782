"""`mcqa-prep convert`: other multiple-choice datasets into validated NeMo Gym mcqa rows."""

from __future__ import annotations

import click

from ..convert import BUILTIN_TEMPLATES, PRESETS, REJECT_REASONS, ConvertError, ConvertReport, convert
from ..convert.shapes import MAP_KEYS
from ..errors import UsageError
from ..runs import RunRequest
from .common import (
    FORMAT_OPTION,
    NO_VERIFY_OPTION,
    QUIET_OPTION,
    bar_factory,
    emit_json,
    engine_options,
    engine_settings,
)
from .permute_opts import permute_from_options, permute_options


def _list_presets(ctx: click.Context, _param, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    for p in PRESETS.values():
        click.echo(f"{p.name:15} {p.description}")
        click.echo(f"{'':15} hub: {', '.join(p.datasets)}; columns: {', '.join(p.signature)}")
    ctx.exit(0)


def _list_templates(ctx: click.Context, _param, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    for t in BUILTIN_TEMPLATES.values():
        grading = t.grading_mode + (f", output_regex {t.output_regex}" if t.output_regex else "")
        click.echo(f"{t.id:13} {t.description}\n{'':13} grading: {grading}")
    ctx.exit(0)


def _split_args(sources: tuple[str, ...], maps: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """`--map question=q choices=c answer=a`: words after the first --map that read KEY=COLUMN (KEY a map
    key, and no such file) are mapping pairs too, so the issue's spelling works as written."""
    srcs: list[str] = []
    pairs = list(maps)
    for s in sources:
        key, sep, _ = s.partition("=")
        if sep and key in MAP_KEYS and maps and not _exists(s):
            pairs.append(s)
        else:
            srcs.append(s)
    return srcs, pairs


def _exists(p: str) -> bool:
    from pathlib import Path

    return Path(p).exists()


def reject_lines(shown: list[dict]) -> list[str]:
    """The first rejects, compiler style: `file:line: rejected: message [reason]`."""
    return [
        f"{r['source']['path']}:{r['source']['line']}: rejected: {r['message']} [{r['reason']}]"
        for r in shown
    ]


def render_text(report: ConvertReport) -> list[str]:
    d = report.doc
    c = d["counts"]
    lines = reject_lines(report.rejects_shown)
    if c["rejected"] > len(report.rejects_shown):
        lines.append(f"… and {c['rejected'] - len(report.rejects_shown)} more rejects in {d['rejects']}")
    for f in d["output_files"]:
        lines.append(f"wrote {f['rows']} rows to {f['path']}")
    lines.append(
        f"{c['read']} rows read: {c['written']} written, {c['rejected']} rejected"
        + (
            f" ({', '.join(f'{k} {v}' for k, v in c['rejected_by_reason'].items())}) -> {d['rejects']}"
            if c["rejected"]
            else ""
        )
    )
    for s in d["sources"]:
        commit = f"@{s['commit'][:12]}" if s.get("commit") else ""
        where = f"{s['dataset']}{commit}" + (f" config {s['config']}" if s.get("config") else "")
        if s.get("file") and s["file"] != s["dataset"]:
            where += f" file {s['file']}"
        layout = f"preset {s.get('preset') or '(--map)'}" if "map" in s else "no readable row"
        lines.append(
            f"source {where}, split {s['split']}: {layout}, "
            f"{s['read']} read, {s['written']} written, {s['rejected']} rejected"
        )
    mix = ", ".join(f"{t['id']} {t['rows']}" for t in d["templates"])
    lines.append(f"templates: {mix}")
    sh = d["shuffle"]
    if sh["enabled"]:
        lines.append(
            f"shuffle: seed {sh['seed']}, {sh['rows_with_pins']} rows with pinned options "
            f"({sh['gold_pinned']} with a pinned gold)"
        )
    p = d.get("permutation")
    if p:
        by = ", ".join(f"{n} with {k}" for k, n in p["by_variants"].items())
        lines.append(
            f"option orders ({p['mode']}, seed {p['seed']}): {p['rows']} rows for {p['questions']} question(s) "
            f"({by or 'none'}); anchored options kept in place in {p['anchored_questions']}"
        )
    for key, by_n in d["gold_histogram"].items():
        for n, hist in by_n.items():
            spread = d["gold_spread"].get(key, {}).get(n)
            cells = " ".join(f"{L}:{k}" for L, k in hist.items())
            where = "" if key == "all" else f" [{key}]"
            lines.append(f"gold letters, {n} options{where}: {cells} (max-min {spread})")
    for w in d["warnings"]:
        lines.append(f"warning: {w}")
    return lines


@click.command("convert")
@click.argument("sources", metavar="SOURCE...", nargs=-1, required=True, type=click.Path())
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    type=click.Path(),
    help="A .jsonl file, or a directory of <split>.jsonl files.",
)
@click.option(
    "--preset", default="auto", show_default=True, help="Column layout (see --list-presets), or auto."
)
@click.option(
    "--map",
    "maps",
    multiple=True,
    metavar="KEY=COLUMN",
    help="Column map entry (repeatable): question, choices, options, correct, incorrect, answer, "
    "answer_type (auto, index, index1, letter, label, text, flags), context, id, subject, keep, drop; "
    "list values comma-separated.",
)
@click.option(
    "--template",
    "templates",
    multiple=True,
    type=click.Path(),
    metavar="NAME|FILE[:WEIGHT]",
    help="Prompt template (repeatable, mixed by weight); built-ins: " + ", ".join(BUILTIN_TEMPLATES) + ".",
)
@click.option("--shuffle/--no-shuffle", default=False, help="Shuffle options with balanced gold positions.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of every random choice.")
@click.option(
    "--pin", "pins", multiple=True, metavar="TEXT", help="An option text that keeps its place (repeatable)."
)
@click.option(
    "--drop-choice",
    "drop",
    multiple=True,
    metavar="TEXT",
    help="A placeholder choice text to remove (repeatable).",
)
@click.option(
    "--revision", "-r", metavar="REV", help="Hub revision (branch, tag or commit) of a hub dataset SOURCE."
)
@click.option("--config", help="Hub dataset config (subset), or the config directory of a pulled dataset.")
@click.option(
    "--split",
    help="Only this split (hub, pulled and local directories); for a single file: its split to record.",
)
@click.option("--dataset", help="Name recorded for local sources (default: the file or directory name).")
@click.option(
    "--rejects", type=click.Path(), help="Rejects file (default: OUT.rejects.jsonl beside the output)."
)
@NO_VERIFY_OPTION
@click.option(
    "--list-presets",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_list_presets,
    help="List presets and exit.",
)
@click.option(
    "--list-templates",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_list_templates,
    help="List built-in templates and exit.",
)
@permute_options
@engine_options
@FORMAT_OPTION
@QUIET_OPTION
def convert_command(
    sources,
    out,
    preset,
    maps,
    templates,
    shuffle,
    seed,
    pins,
    drop,
    revision,
    config,
    split,
    dataset,
    rejects,
    no_verify,
    workers,
    engine,
    address,
    resume,
    fmt,
    quiet,
    **permute_kw,
):
    """Convert multiple-choice datasets into NeMo Gym mcqa rows that pass `mcqa-prep validate`.

    SOURCE is a JSONL, Parquet or CSV file, a directory of them, a directory written by `mcqa-prep pull`,
    or a hub dataset id (owner/name, read with the datasets library; HF_ENDPOINT and HF_TOKEN apply).
    The layout is detected from the columns (--preset auto) or given by --preset / --map. Rows that cannot
    be converted go to the rejects file with a reason; read = written + rejected.

    \b
    Examples:
      mcqa-prep convert gpqa_diamond.csv -o gpqa.jsonl --shuffle --seed 0
      mcqa-prep convert mmlu/ -o mmlu-rows/ --preset mmlu --template boxed:0.7 --template answer_colon:0.3
      mcqa-prep convert cais/mmlu --config all --split test --revision main -o mmlu-test.jsonl
      mcqa-prep convert my.parquet -o out.jsonl --map question=stem --map choices=opts --map answer=key
      mcqa-prep convert my.jsonl -o out.jsonl --map question=q correct=right incorrect=w1,w2,w3 --shuffle
      mcqa-prep convert med.parquet -o out.jsonl --template my_template.j2 --pin "None of these"

    \b
    Templates: built-in (--list-templates) or a Jinja2 file whose front matter declares its grading:
      ---
      id: verdict_v1
      output_regex: Verdict:\\s*([A-Z])\\b
      ---
      {{ question }}
      {{ options_block }}
      End with "Verdict: <letter>".
    Every template passes validate's regex controls for each option count before rows are written.

    \b
    --shuffle: the gold letter is balanced (per option count and output file, counts within 1 of each
    other); options such as "None of the above" or "Both A and B" (and --pin texts) keep their place; the
    original order is in metadata.convert.option_source_index. --permute K writes each row as K option
    orders (after --shuffle), each rendered by its template and linked to its question in
    metadata.mcqa_prep.permutation (docs/design/prepare.md, Option permutations). Exit codes: 0 ok, 1 data/IO
    failure, 2 usage error.
    """
    permute = permute_from_options(**permute_kw)
    srcs, pairs = _split_args(sources, maps)
    if not srcs:
        raise UsageError("no SOURCE given (KEY=COLUMN words are read as --map entries)")
    if no_verify:
        from ..pull.lock import LOCK_NAME, is_pulled_dir

        for src in srcs:
            if is_pulled_dir(src):
                click.echo(
                    f"warning: {src}: --no-verify: the files were not checked against {LOCK_NAME}; the rows "
                    "record its repo and commit for whatever bytes are on disk",
                    err=True,
                )
    try:
        report = convert(
            srcs,
            out,
            preset=preset,
            mapping=pairs,
            templates=templates,
            shuffle=shuffle,
            seed=seed,
            pins=pins,
            drop=drop,
            revision=revision,
            config=config,
            split=split,
            dataset=dataset,
            rejects=rejects,
            verify=not no_verify,
            progress=bar_factory(quiet),
            permute=permute,
            request=RunRequest(tuple(srcs), out, **engine_settings(workers, engine, address, resume)),
        )
    except ConvertError as exc:  # no rejects file is left: its first lines are shown before the error
        if fmt != "json":
            for line in reject_lines(exc.details.get("rejects_shown", [])):
                click.echo(line)
        raise
    if fmt == "json":
        emit_json(report.to_dict())
    else:
        for line in render_text(report):
            click.echo(line)


__all__ = ["convert_command", "REJECT_REASONS"]
