"""`mcqa-prep serve` and `gym-component`: NeMo Gym's mcqa server that keeps the grading contract."""

from __future__ import annotations

import sys

import click

from ..grader import DEFAULT_REGEX_TIMEOUT
from .common import FORMAT_OPTION, QUIET_OPTION, bar_factory, emit_json, regex_timeout_option
from .policy_opts import policy_from_options, policy_options

PREPARED_OPTION = click.option(
    "--prepared",
    "prepared",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    metavar="DIR",
    help="A preparation to serve (repeatable; all must carry one contract): verified as `verify` does, "
    "its contract served.",
)
ON_MISMATCH_OPTION = click.option(
    "--on-mismatch",
    type=click.Choice(["mask", "reject"]),
    default="mask",
    show_default=True,
    help="A row stamped with another contract: mask (reward 0, mask_sample, the fields in failure_reason) "
    "or reject (HTTP 422 with the same detail).",
)
REQUIRE_STAMP_OPTION = click.option(
    "--require-stamp",
    is_flag=True,
    help="A row without a contract stamp is a mismatch too (default: graded).",
)
LENIENT_OPTION = click.option(
    "--lenient",
    is_flag=True,
    help="Accept verify requests NeMo Gym 0.7.0's request model refuses (422 by default) where they can "
    "still be graded: a response without its bookkeeping fields (created_at, tools, ...), unknown create "
    "parameters, a null or unknown grading_mode (docs/design/serve.md).",
)
GRADE_TIMEOUT_OPTION = click.option(
    "--grade-timeout",
    type=click.FloatRange(min=0.01),
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    help="Per-request bound on grading (a body over 8 KiB or with a data pattern is graded off the event "
    "loop): past it the sample is answered masked, failure_kind mcqa:grading_timeout.",
)


def _need_web_stack() -> None:
    from ..extras import require

    require("uvicorn", "serve")


@click.command("serve")
@PREPARED_OPTION
@policy_options
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="Port to listen on (0: a free one, printed at start-up).",
)
@click.option(
    "--workers",
    "-j",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Worker processes sharing the port (one event loop each).",
)
@ON_MISMATCH_OPTION
@REQUIRE_STAMP_OPTION
@LENIENT_OPTION
@regex_timeout_option(DEFAULT_REGEX_TIMEOUT)
@GRADE_TIMEOUT_OPTION
@click.option(
    "--max-body-mb",
    type=click.FloatRange(min=0.001),
    default=16.0,
    show_default=True,
    metavar="MB",
    help="Largest verify body accepted (a larger one: HTTP 413).",
)
@FORMAT_OPTION
@QUIET_OPTION
def serve_command(
    prepared,
    host,
    port,
    workers,
    on_mismatch,
    require_stamp,
    lenient,
    regex_timeout,
    grade_timeout,
    max_body_mb,
    fmt,
    quiet,
    **policy_kw,
):
    """Serve NeMo Gym's mcqa verify API, grading every row under the grading contract it was prepared with.

    A drop-in for NeMo Gym 0.7.0's `mcqa` resources server (POST /verify, /seed_session, /close_session,
    /aggregate_metrics, GET /reverify_mode, its health routes and its /ng-rollout/<id>/ prefix: the same
    refusals, response fields and aggregate metrics) plus GET /contract and /metrics. Each row's
    metadata.mcqa_prep.contract stamp is checked against the served contract: a row prepared under another
    contract gets reward 0, mask_sample true, failure_kind "mcqa:contract_mismatch" and a failure_reason that
    names every field that differs (--on-mismatch reject: HTTP 422 with the same detail). Unstamped rows are
    graded and counted (--require-stamp: a mismatch).

    The contract: that of --prepared DIR (verified first; a policy given beside it must agree), else the
    policy options, else the built-in policy. Nothing listens when any of this fails (exit 1, one line).
    SIGTERM drains the requests in flight and exits 0. Needs the `serve` extra: pip install 'mcqa-prep[serve]'.

    \b
    Examples:
      mcqa-prep serve --prepared prepared/ --port 8000
      mcqa-prep serve --prepared prepared/ --workers 4 --on-mismatch reject --require-stamp
      mcqa-prep serve --policy policy.json --port 0 --format json
      curl -s localhost:8000/verify -d @request.json
    """
    _need_web_stack()
    from ..serve.server import ServeSettings, bind, serve, url_of
    from ..serve.startup import served_contract

    policy = policy_from_options(none_if_unset=True, **policy_kw)
    served = served_contract(prepared, policy, require_stamp=require_stamp, progress=bar_factory(quiet))
    sock = bind(host, port)
    url = url_of(sock)
    settings = ServeSettings(
        host,
        port,
        workers,
        on_mismatch,
        regex_timeout or DEFAULT_REGEX_TIMEOUT,
        int(max_body_mb * 1024 * 1024),
        lenient,
        grade_timeout,
    )

    def ready() -> None:
        if fmt == "json":
            emit_json(
                {
                    "url": url,
                    "contract_id": served.id,
                    "sources": served.sources,
                    "workers": workers,
                    "on_mismatch": on_mismatch,
                    "require_stamp": require_stamp,
                }
            )
        else:
            click.echo(f"serving contract {served.id} ({', '.join(served.sources)})")
            click.echo(
                f"listening on {url} with {workers} worker(s); on mismatch: {on_mismatch}"
                + ("; stamps required" if require_stamp else "")
            )
        sys.stdout.flush()

    code = serve(
        served, settings, sock, on_ready=ready, on_event=lambda line: click.echo(f"warning: {line}", err=True)
    )
    if code != 0:
        raise click.exceptions.Exit(code)


@click.command("gym-component")
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False))
@click.option(
    "--prepared",
    "prepared",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    metavar="DIR",
    help="A preparation the component serves (verified now and when the server starts).",
)
@policy_options
@ON_MISMATCH_OPTION
@REQUIRE_STAMP_OPTION
@LENIENT_OPTION
@regex_timeout_option(DEFAULT_REGEX_TIMEOUT)
@click.option(
    "--license",
    "license_name",
    metavar="NAME",
    help="The license NeMo Gym's config gives the preparations' datasets (NeMo Gym requires one on every "
    "train and validation dataset), as NeMo Gym names it ('Apache 2.0', 'MIT', 'CC BY-SA 4.0', ...) or by "
    "the hub's id (apache-2.0, mit, ...). Default: the license the pulled inputs' dataset cards declare; "
    "refused when they do not all declare the same one NeMo Gym names.",
)
@click.option("--overwrite", is_flag=True, help="Replace a component written before.")
@FORMAT_OPTION
@QUIET_OPTION
def gym_component_command(
    directory,
    prepared,
    on_mismatch,
    require_stamp,
    lenient,
    regex_timeout,
    license_name,
    overwrite,
    fmt,
    quiet,
    **policy_kw,
):
    """Write a NeMo Gym resources server named mcqa into DIR/resources_servers/mcqa, grading with mcqa-prep.

    With DIR on NEMO_GYM_EXTRA_ROOTS, NeMo Gym 0.7.0 starts it instead of its built-in mcqa server (`gym env
    start`, the same config key configs/mcqa.yaml): its app.py runs mcqa-prep's own server (what `serve` runs)
    on the host and port NeMo Gym assigns, with the built-in server's routes, refusals and response fields;
    each row's metadata.mcqa_prep stamp is checked against the contract as `serve` does. The config lists the
    preparations' JSONL shards as train/validation datasets with their license (--license when the inputs do
    not record one). Writes app.py, task_data.py, requirements.txt, configs/mcqa.yaml and 5 example rows,
    metrics and rollouts (what `gym env test` checks).

    \b
    Examples:
      mcqa-prep gym-component gym-plugins/ --prepared prepared/ --license 'Apache 2.0'
      NEMO_GYM_EXTRA_ROOTS=$PWD/gym-plugins gym env start --config resources_servers/mcqa/configs/mcqa.yaml \\
          --config responses_api_models/openai_model/configs/openai_model.yaml
    """
    from ..serve.component import component_settings, write_component

    policy = policy_from_options(none_if_unset=True, **policy_kw)
    settings = component_settings(
        prepared,
        policy,
        on_mismatch=on_mismatch,
        require_stamp=require_stamp,
        regex_timeout=regex_timeout or DEFAULT_REGEX_TIMEOUT,
        lenient=lenient,
    )
    report = write_component(directory, settings, overwrite=overwrite, license=license_name)
    if fmt == "json":
        emit_json(report)
        return
    click.echo(f"{report['directory']}: written (contract {report['contract_id']})")
    click.echo(f"use it with: NEMO_GYM_EXTRA_ROOTS={report['extra_root']}")
