"""Every performance figure in README.md and docs/ comes from the committed bench results.

1. Each marked region (`<!-- bench:... -->...<!-- /bench -->`) is exactly what `python bench/render.py` writes
   from bench/results/*.json: a figure edited by hand, or results re-measured without re-rendering, fails here.
2. Outside the regions (and outside code), no text states a performance figure: a ratio (`1.5x`), a size in
   MB/MiB/GB/kB, a duration (s, ms, µs) or a rate (rows/s, req/s, per CPU second) must sit in a region, or
   be a setting or a limit listed in ALLOWED with why, or be a target (preceded by ≥, ≤, >=, <=, "target").
3. Every result file says what it was measured on (commit, date, CPU, cores, load before and after).

No time is measured here.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import render  # noqa: E402

FIGURE = re.compile(
    r"(?<![\w.\-/])~?\d[\d,]*(?:\.\d+)?(?:\s?[–-]\s?\d[\d,]*(?:\.\d+)?)?\s?"
    r"(?:x(?![\w])|×|MB\b|MiB\b|GB\b|GiB\b|kB\b|KB\b|KiB\b|ms\b|µs\b|us\b|s\b|seconds\b|"
    r"rows/s\b|req/s\b|requests/s\b|rows per (?:CPU |wall )?second|requests per (?:CPU )?second)"
)
TARGET = re.compile(
    r"(?:≥|≤|>=|<=|targets?(?: is| of)?:?|within|at least|at most|under|over)\s*$", re.IGNORECASE
)

# (file, the exact text of the match): settings, limits and facts that are not measurements of this package.
ALLOWED = {
    ("docs/design/performance.md", "20 ms"): "the harness's sampling interval, a setting",
    (
        "docs/design/performance.md",
        "50 ms",
    ): "the harness's sampling interval after the first second, a setting",
    (
        "docs/design/performance.md",
        "2–8 kB",
    ): "the size of the generated long passages, a property of the bench's input",
    ("docs/design/serve.md", "2 kB"): "the size of the generated responses, a property of the bench's input",
    ("docs/design/README.md", "0.5 s"): "the default --regex-timeout, a setting",
    ("docs/design/validate.md", "0.5 s"): "the default --regex-timeout, a setting",
    ("docs/design/validate.md", "3 s"): "the hard kill of the regex probe process, a setting",
    ("docs/design/validate.md", "2x"): "the position-bias rule's threshold, a setting",
    ("docs/design/report.md", "2x"): "the position-bias rule's threshold, drawn on the plot",
    ("docs/design/report.md", "3.5 MB"): "the size of Plotly's JavaScript bundle (a library's file size)",
    ("docs/design/report.md", "1 MB"): "the size of Vega's JavaScript bundle (a library's file size)",
    ("docs/design/report.md", "30 MB"): "the size of the vl-convert wheel (a library's file size)",
    (
        "docs/design/report.md",
        "1–2 MB",
    ): "the size bound of the page's pattern list, a consequence of its caps",
    ("docs/design/serve.md", "16 MB"): "the default --max-body-mb, a setting",
    ("docs/design/serve.md", "0.5 s"): "the grader's regex bound, a setting",
    ("docs/design/serve.md", "10 s"): "the drain deadline on SIGTERM, a setting",
    ("docs/design/prepare.md", "8 MiB"): "the hashing block size, a setting",
    ("docs/design/prepare.md", "1 MiB"): "the shard write buffer, a setting",
    ("docs/design/pull.md", "23 s"): "huggingface_hub's retry schedule (5 retries with backoff), its setting",
    (
        "docs/design/ray.md",
        "20 s",
    ): "Ray's own connection retries before it reports a refused token, its setting",
    ("docs/design/serve.md", "5 s"): "the default --grade-timeout, a setting",
    ("README.md", "5 s"): "the default --grade-timeout, a setting",
    (
        "docs/design/serve.md",
        "1.5 GB",
    ): "the size of NeMo Gym 0.7.0's installed dependencies (a library's footprint)",
    ("docs/design/engine.md", "2 MiB"): "the smallest JSONL chunk (parallel.JSONL_CHUNK_BYTES), a setting",
    ("docs/design/engine.md", "64 MiB"): "the largest JSONL chunk (parallel.MAX_CHUNK_BYTES), a setting",
    ("README.md", "0.5 s"): "the default --regex-timeout, a setting",
    ("README.md", "300 s"): "the suite's per-test timeout (pytest-timeout), a setting",
    ("docs/design/grading.md", "0.5 s"): "the default --regex-timeout, a setting",
    ("docs/design/convert.md", "10 s"): "the sandbox's time bound per rendered row, a setting",
    ("docs/design/convert.md", "1 GiB"): "the sandbox's address-space bound, a setting",
    ("docs/design/prepare.md", "16 MiB"): "the block size load_prepared reads shards in, a setting",
}


def _outside_regions(text: str) -> str:
    text = render.REGION.sub(" ", text)
    text = re.sub(r"```.*?```", " ", text, flags=re.S)  # fenced code
    return re.sub(r"`[^`\n]*`", " ", text)  # inline code


def test_regions_are_what_the_results_render():
    results = render.load()
    stale, problems = [], []
    for path in render.doc_files():
        text = path.read_text(encoding="utf-8")
        new, probs = render.rewrite(text, results)
        problems += [f"{path.name}: {p}" for p in probs]
        if new != text:
            stale.append(path.relative_to(ROOT).as_posix())
    assert not problems, "regions name figures that are not in bench/results:\n" + "\n".join(problems)
    assert not stale, f"figures differ from bench/results in {stale}: run `python bench/render.py`"


def test_regions_exist_where_the_figures_are():
    """The docs that state measured figures do so through regions (a doc without any would state none)."""
    for name in (
        "README.md",
        "docs/design/performance.md",
        "docs/design/serve.md",
        "docs/design/ray.md",
        "docs/design/report.md",
    ):
        assert render.REGION.search((ROOT / name).read_text(encoding="utf-8")), name


def test_no_performance_figure_outside_the_regions():
    found = []
    for path in render.doc_files():
        rel = path.relative_to(ROOT).as_posix()
        text = _outside_regions(path.read_text(encoding="utf-8"))
        for m in FIGURE.finditer(text):
            if (rel, m.group().lstrip("~")) in ALLOWED or TARGET.search(
                text[max(0, m.start() - 24) : m.start()]
            ):
                continue
            line = text[max(0, m.start() - 60) : m.end() + 20].replace("\n", " ")
            found.append(f"{rel}: {m.group()!r} in ...{line}...")
    assert not found, (
        "performance figures outside <!-- bench:... --> regions (put them in a region rendered from "
        "bench/results, or list a setting in ALLOWED):\n" + "\n".join(found)
    )


def test_allowed_entries_are_still_used():
    for (rel, phrase), _why in ALLOWED.items():
        assert phrase in _outside_regions((ROOT / rel).read_text(encoding="utf-8")), (rel, phrase)


@pytest.mark.parametrize("path", sorted((ROOT / "bench" / "results").glob("*.json")), ids=lambda p: p.name)
def test_results_say_what_they_were_measured_on(path):
    doc = json.loads(path.read_text(encoding="utf-8"))
    meta = doc["meta"]
    for key in ("commit", "date", "cpu", "cores", "load_before", "load_after", "scale", "rounds", "command"):
        assert key in meta, key
    assert path.stem == doc["bench"]
    for key, f in doc["figures"].items():
        assert f["samples"] and f["min"] <= f["median"] <= f["max"], key


@pytest.mark.parametrize(
    "meta, reason",
    [
        ({"cores": 2, "other_cores": 0.05, "load_before": [2.4], "load_after": [2.6]}, None),  # its own load
        ({"cores": 2, "other_cores": 0.6, "load_before": [0.1], "load_after": [0.2]}, "other work used 0.60"),
        ({"cores": 2, "load_before": [0.3], "load_after": [1.4]}, "load average up to 1.4"),  # older results
        ({"cores": 2, "load_before": [0.3], "load_after": [0.9]}, None),
    ],
)
def test_a_result_is_provisional_for_other_work_not_for_the_benchs_own(meta, reason):
    """The load average counts the bench's own workers; where the runner measured the other work the machine
    did (other_cores), that decides."""
    why = render.provisional([{"scale": 1, "rounds": 3, **meta}])
    if reason is None:
        assert why == []
    else:
        assert len(why) == 1 and why[0].startswith(reason)
