"""`make bench`: every bench module in its own process; raw results to bench/results/<bench>.json.

A bench module is a self-contained file `bench/bench_<name>.py` exposing

    run(scale: float = 1.0, *, rounds: int = 3, full: bool = False) -> dict

that measures and returns one result document (docs/performance.md, "Result format"). This runner finds the
modules, runs each in a fresh interpreter (nothing one module imported or allocated colours the next), adds
what the figures were measured on (commit, date, CPU, cores, load average before and after, scale, rounds),
checks the document's shape and writes it to bench/results/<bench>.json (a failed module leaves its previous
file alone). `python bench/render.py` then rewrites the marked figures of README.md and docs/ from those files.

    python bench/run.py                          # every module, scale 1, 3 rounds (make bench)
    python bench/run.py --full                   # also the 685,573-row figures (make bench FULL=1)
    python bench/run.py --scale 0.05 --only rescore --out /tmp/r   # a quick check of the machinery
    python bench/run.py --baseline-rev REV       # rescore also on REV's package: before/after
    python bench/run.py --only soak              # on request only: soak (make soak-serve), serve_stacks

A module whose `run` is not in that shape yet (the earlier `run(rows)`) is skipped with a line saying so; the
others run (named with --only, it fails the run).
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
# The order of a full run (cheap, in-process first); modules not listed run after these, by name.
ORDER = (
    "grader",
    "robust",
    "rescore",
    "prepare",
    "validate",
    "report",
    "convert",
    "passrates",
    "audit",
    "serve",
    "cluster",
)
# Run only when named with --only (long, or a one-time design measurement): name -> file stem.
ON_REQUEST = {"soak": "soak_serve", "serve_stacks": "serve_stacks"}
FIGURE_KEYS = ("what", "unit", "samples", "min", "max", "median")

CHILD = """
import inspect, json, sys
sys.path.insert(0, {here!r})
import {module} as m
kwargs = json.loads({kwargs!r})
accepted = inspect.signature(m.run).parameters
res = m.run({scale!r}, rounds={rounds!r}, full={full!r}, **{{k: v for k, v in kwargs.items() if k in accepted}})
print("@@RESULT@@" + json.dumps(res))
"""


def modules() -> list[str]:
    """bench/bench_*.py by name (without the bench_ prefix), in ORDER first: what a plain run runs."""
    names = sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))
    return [n for n in ORDER if n in names] + [n for n in names if n not in ORDER]


def stem(name: str) -> str:
    return ON_REQUEST.get(name, f"bench_{name}")


def in_result_format(path: Path) -> bool:
    """Whether the module's top-level `run` takes `rounds` and `full` (the result format), read from its source
    without importing it. A module still in the earlier `run(rows)` shape is skipped, said so, and the run goes
    on: the module list grows as branches land, and one module not yet adapted must not stop the others."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "run":
            a = node.args
            names = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
            return {"rounds", "full"} <= names or a.kwarg is not None
    return False


def run_module(name: str, scale: float, rounds: int, full: bool, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The module's document, from a fresh interpreter in its own session. Its output goes to files, not pipes,
    and whatever it leaves running in its session (a server it failed to stop) is ended with it."""
    code = CHILD.format(here=str(HERE), module=stem(name), scale=scale, rounds=rounds, full=full,
                        kwargs=json.dumps(kwargs))  # fmt: skip
    env = dict(os.environ, PYTHONHASHSEED="0")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=err, env=env, cwd=REPO,
                                start_new_session=True)  # fmt: skip
        try:
            proc.wait()
        finally:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    line = next((ln for ln in stdout.splitlines() if ln.startswith("@@RESULT@@")), None)
    if proc.returncode != 0 or line is None:
        tail = stderr.strip().splitlines()[-12:] or ["no result"]
        raise RuntimeError("\n".join(tail))
    return json.loads(line[len("@@RESULT@@") :])


def check_document(doc: dict[str, Any]) -> list[str]:
    """What is wrong with a module's result document (empty when nothing)."""
    problems = []
    if not isinstance(doc.get("bench"), str) or not doc["bench"]:
        problems.append("no 'bench' name")
    figures = doc.get("figures")
    if not isinstance(figures, dict):
        return problems + ["no 'figures' object"]
    for key, f in figures.items():
        missing = [k for k in FIGURE_KEYS if k not in f]
        if missing:
            problems.append(f"figure {key}: missing {', '.join(missing)}")
        elif not f["samples"] or not f["min"] <= f["median"] <= f["max"]:
            problems.append(f"figure {key}: samples and min/median/max disagree")
    return problems


def git(*args: str) -> str:
    p = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False)
    return p.stdout.strip()


def machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), cpu)
    except OSError:
        pass
    mem_gb = None
    try:
        with open("/proc/meminfo") as fh:
            mem_gb = round(int(next(ln for ln in fh if ln.startswith("MemTotal:")).split()[1]) / 2**20, 1)
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": mem_gb, "python": platform.python_version(),
            "platform": platform.platform()}  # fmt: skip


def meta(args: argparse.Namespace, load_before: tuple[float, ...], wall: float) -> dict[str, Any]:
    # the code measured: the package and the bench, not the result files this run is writing
    dirty = bool(
        git("status", "--porcelain", "--untracked-files=no", "--", "mcqa_prep", "bench", ":!bench/results")
    )
    return {
        "commit": git("rev-parse", "--short=12", "HEAD"),
        "commit_dirty": dirty,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        **machine(),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "scale": args.scale,
        "rounds": args.rounds,
        "full": args.full,
        "wall_s": round(wall, 1),
        "command": "python bench/run.py " + " ".join(sys.argv[1:]),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every module's sizes (quick checks)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every A/B (>= 3 for published figures)")
    ap.add_argument("--full", action="store_true", help="also the figures at 685,573 rows (minutes more)")
    ap.add_argument("--only", action="append", metavar="NAME", help="run only this module (repeatable)")
    ap.add_argument("--baseline-rev", help="rescore also on this git revision's package (before/after)")
    ap.add_argument("--out", default=str(RESULTS), help="directory of the result files [bench/results]")
    args = ap.parse_args(argv)
    names = [n.removeprefix("bench_") for n in args.only] if args.only else modules()
    unknown = sorted(set(names) - set(modules()) - set(ON_REQUEST))
    if unknown:
        ap.error(f"no bench module {', '.join(unknown)} (have: {', '.join(modules() + list(ON_REQUEST))})")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []
    skipped: list[str] = []
    for name in names:
        if not in_result_format(HERE / f"{stem(name)}.py"):
            print(f"== {name}: skipped, its run() is not in the result format yet (run(scale, *, rounds, full): "
                  "docs/performance.md, 'Result format')", flush=True)  # fmt: skip
            (failed if args.only else skipped).append(name)
            continue
        print(
            f"== {name} (scale {args.scale}, {args.rounds} rounds{', full' if args.full else ''})", flush=True
        )
        load0, t0 = os.getloadavg(), time.perf_counter()
        try:
            doc = run_module(name, args.scale, args.rounds, args.full, {"baseline_rev": args.baseline_rev})
        except RuntimeError as exc:
            print(f"   FAILED:\n{exc}", flush=True)
            failed.append(name)
            continue
        problems = check_document(doc)
        if problems:
            print("   bad result document: " + "; ".join(problems), flush=True)
            failed.append(name)
            continue
        doc["meta"] = meta(args, load0, time.perf_counter() - t0)
        path = out / f"{doc['bench']}.json"
        path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"   {len(doc['figures'])} figures -> {path} ({doc['meta']['wall_s']} s)", flush=True)
        for line in summary(doc):
            print("   " + line, flush=True)
    if skipped:
        print(f"skipped (not in the result format yet): {', '.join(skipped)}", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", flush=True)
    elif Path(args.out).resolve() == RESULTS.resolve():
        print(
            "now: python bench/render.py   (rewrites the figures in README.md and docs/ from bench/results)"
        )
    return 1 if failed else 0


def summary(doc: dict[str, Any]) -> list[str]:
    """The figures that carry a target, and whether every round met it."""
    lines = []
    for key, f in doc["figures"].items():
        t = f.get("target")
        if t:
            ok = all((x >= t["value"]) if t["op"] == ">=" else (x <= t["value"]) for x in f["samples"])
            lines.append(f"{key}: {f['min']:g}-{f['max']:g} {f['unit']} (target {t['op']} {t['value']:g}: "
                         f"{'met' if ok else 'NOT met'})")  # fmt: skip
    return lines


if __name__ == "__main__":
    sys.exit(main())
