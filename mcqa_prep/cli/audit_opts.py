"""The contamination options shared by `audit --against` and `prepare --decontaminate-against`: how benchmark
files are read (convert's presets and column maps) and the thresholds.

Usage::

    @click.command("x")
    @contamination_options
    def x(..., **kw):
        mapping, settings = contamination_from_options(**{k: kw.pop(k) for k in CONTAMINATION_KWARGS})
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

CONTAMINATION_KWARGS = (
    "bench_preset",
    "bench_map",
    "contamination_ngram",
    "contamination_min_ngrams",
    "contamination_similarity",
)


def contamination_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    decorators = [
        click.option(
            "--bench-preset",
            metavar="NAME",
            help="Read the benchmark files with this convert preset (mmlu, mmlu_pro, gpqa, ...: "
            "`mcqa-prep convert --list-presets`) [default: detected per file from its columns].",
        ),
        click.option(
            "--bench-map",
            metavar="KEY=COLUMN",
            multiple=True,
            help="A column of the benchmark files, as convert's --map (question=COL, choices=COL, answer=COL, ...).",
        ),
        click.option(
            "--contamination-ngram",
            type=click.IntRange(5, 50),
            default=13,
            show_default=True,
            metavar="N",
            help="Word n-gram length of the overlap check (13, as lm-eval). Bounds: each document (a question "
            "with its options) is compared on its first 100,000 words, each distinct n-gram and word pair once, "
            "and a benchmark question read again is indexed once.",
        ),
        click.option(
            "--contamination-min-ngrams",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            metavar="N",
            help="Shared n-grams that make a row contaminated.",
        ),
        click.option(
            "--contamination-similarity",
            type=click.FloatRange(0.05, 1.0),
            default=0.75,
            show_default=True,
            metavar="X",
            help="Near-duplicate (MinHash) threshold: share of a benchmark question's word pairs found in the row.",
        ),
    ]
    for d in reversed(decorators):
        fn = d(fn)
    return fn


def contamination_from_options(**kw: Any) -> tuple[Any, Any]:
    """(benchmarks.Mapping, contamination.Settings) from the options."""
    from ..audit.benchmarks import Mapping
    from ..audit.contamination import Settings

    mapping = Mapping(kw["bench_preset"], tuple(kw["bench_map"]))
    settings = Settings(
        kw["contamination_ngram"], kw["contamination_min_ngrams"], kw["contamination_similarity"]
    )
    return mapping, settings
