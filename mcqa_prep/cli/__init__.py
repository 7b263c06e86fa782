"""The `mcqa-prep` command group. Each command lives in its own module of this package and follows one
pattern: parse options, call one library function, render its report, map library errors to exit codes
(0 ok, 1 data/contract/cache failure, 2 usage)."""

from __future__ import annotations

import click

from .. import __version__

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, prog_name="mcqa-prep")
def main() -> None:
    """Prepare multiple-choice QA data for RL post-training, and rescore it like the verifier does.

    \b
    The main job, on a dataset from the Hugging Face hub:
      mcqa-prep pull nvidia/Nemotron-RL-knowledge-mcqa --revision main
      mcqa-prep prepare Nemotron-RL-knowledge-mcqa -o prepared/
    then, after training, audit the recorded rewards:
      mcqa-prep rescore rollouts.jsonl --rows prepared/ -o rescored.jsonl

    Exit codes: 0 ok, 1 data/contract/cache failure, 2 usage error.
    """


def _register() -> None:
    from . import commands  # noqa: F401  (each command module adds itself to `main`)


_register()
