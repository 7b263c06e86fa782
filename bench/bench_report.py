"""`mcqa-prep report` as a command next to `mcqa-prep validate` on the same data, interleaved.

The data is bench_validate's synthetic dataset (shaped like nvidia/Nemotron-RL-knowledge-mcqa: 4-10 options in the
Parquet null-filled shape, long passages in one question in ten, 30% custom templates). The report runs the
validator in its own single pass, adds bounded tallies and writes the page, so its time should be about a
one-process validate's.

Legs (bench/harness.py: wall, CPU of the process tree, peak RSS of the tree), `rounds` times, the order rotated
each round:
- validate_w1: `mcqa-prep validate DIR --workers 1 -q` (one process, as report is);
- validate: `mcqa-prep validate DIR -q` (its default: every core);
- report_w1: `mcqa-prep report DIR -o page.html --workers 1 -q` (one process, compared with validate_w1);
- report: `mcqa-prep report DIR -o page.html -q` (its default: every core, compared with validate's default).

Target: report --workers 1 within 1.3x of validate --workers 1's time at 685,573 rows (full=True; at the scaled size too).

    python bench/bench_report.py [--scale 0.1] [--rounds 3] [--full]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness as H  # noqa: E402
from bench_validate import generate  # noqa: E402

ROWS = 100_000
FULL_ROWS = 685_573
TARGET = 1.3

WHAT = {
    "validate_w1": "mcqa-prep validate --workers 1",
    "validate": "mcqa-prep validate (default workers: every core)",
    "report_w1": "mcqa-prep report -o page.html --workers 1",
    "report": "mcqa-prep report -o page.html (default workers: every core)",
}


def legs_for(data: Path, work: Path) -> dict[str, Any]:
    cli = H.cli()
    page = work / "page.html"
    return {
        "validate_w1": lambda: H.measure(
            [*cli, "validate", str(data), "--workers", "1", "-q"], cwd=work, check=False
        ),
        "validate": lambda: H.measure([*cli, "validate", str(data), "-q"], cwd=work, check=False),
        "report_w1": lambda: H.measure(
            [*cli, "report", str(data), "-o", str(page), "--workers", "1", "-q"], cwd=work
        ),
        "report": lambda: H.measure([*cli, "report", str(data), "-o", str(page), "-q"], cwd=work),
    }


def measure_at(rows: int, rounds: int, suffix: str) -> tuple[dict[str, Any], dict[str, Any]]:
    work = Path(tempfile.mkdtemp(prefix="mcqa-bench-report-"))
    try:
        data = work / "data"
        data.mkdir()
        generate(data, rows)
        runs = H.interleave(legs_for(data, work), rounds)
        for name in ("validate_w1", "validate"):
            if any(r.returncode not in (0, 1) for r in runs[name]):
                raise H.CommandFailed(
                    f"validate exited {runs[name][-1].returncode}: {runs[name][-1].stderr_tail}"
                )
        fig: dict[str, Any] = {}
        for name, rs in runs.items():
            fig.update(H.runs_figures(name, WHAT[name], rs, rows, suffix))
        wall = {k: [r.wall_s for r in v] for k, v in runs.items()}
        cpu = {k: [r.cpu_s for r in v] for k, v in runs.items()}
        fig["report_vs_validate_w1.x" + suffix] = H.ratio_figure(
            "report --workers 1 wall time / validate --workers 1's", wall["report_w1"], wall["validate_w1"],
            target={"op": "<=", "value": TARGET},
        )  # fmt: skip
        fig["report_vs_validate_w1.cpu_x" + suffix] = H.ratio_figure(
            "report --workers 1 CPU time / validate --workers 1's", cpu["report_w1"], cpu["validate_w1"]
        )
        fig["report_vs_validate.x" + suffix] = H.ratio_figure(
            "report wall time / validate's (both at their default workers: every core)",
            wall["report"],
            wall["validate"],
        )
        inputs = {
            f"rows{suffix}": rows,
            f"page_kb{suffix}": round((work / "page.html").stat().st_size / 1024),
        }
        return fig, inputs
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(scale: float = 1.0, *, rounds: int = 3, full: bool = False) -> dict[str, Any]:
    """The result document (docs/design/performance.md, "Result format")."""
    res: dict[str, Any] = {
        "bench": "report",
        "title": "mcqa-prep report against mcqa-prep validate on the same data",
        "figures": {},
        "checks": {},
        "inputs": {},
    }
    sizes = [(max(1000, int(ROWS * scale)), "")] + ([(FULL_ROWS, "@full")] if full else [])
    for rows, suffix in sizes:
        fig, inputs = measure_at(rows, rounds, suffix)
        res["figures"].update(fig)
        res["inputs"].update(inputs)
    return res


if __name__ == "__main__":
    H.standalone(run, __doc__)
