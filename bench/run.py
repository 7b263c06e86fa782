"""`make bench`: every bench module in its own process; raw results to bench/results/<bench>.json.

A bench module is a self-contained file `bench/bench_<name>.py` exposing

    run(scale: float = 1.0, *, rounds: int = 3, full: bool = False) -> dict

that measures and returns one result document (docs/design/performance.md, "Result format"). This runner finds the
modules, runs each in a fresh interpreter (nothing one module imported or allocated colours the next), adds
what the figures were measured on (commit, date, CPU, cores, load average before and after, the other work
the machine did meanwhile, scale, rounds),
checks the document's shape and writes it to bench/results/<bench>.json (a failed module leaves its previous
file alone). `python bench/render.py` then rewrites the marked figures of README.md and docs/ from those files.

    python bench/run.py                          # every module, scale 1, 3 rounds (make bench)
    python bench/run.py --full                   # also the 685,573-row figures (make bench FULL=1)
    python bench/run.py --scale 0.05 --only rescore --out /tmp/r   # a quick check of the machinery
    python bench/run.py --baseline-rev REV       # rescore, validate, prepare also on REV's package: before/after
    python bench/run.py --only soak              # on request only: soak (make soak-serve), serve_stacks

A module whose `run` is not in that shape yet (the earlier `run(rows)`) is skipped with a line saying so; the
others run (named with --only, it fails the run).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime
import json
import os
import platform
import resource
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
    "gym",
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


def machine_busy_s() -> float | None:
    """CPU seconds every core of the machine has spent busy since boot (/proc/stat), None where unknown."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    busy = sum(fields[:8]) - idle  # user nice system idle iowait irq softirq steal (guest is inside user)
    return busy / os.sysconf("SC_CLK_TCK")


def session_cpu_s(sid: int) -> float:
    """CPU seconds of the live processes of session `sid` (themselves and the children they reaped): what
    a module left running, Ray's daemons for one, is the module's work, not other work."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0.0
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                rest = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if (
            int(rest[3]) == sid
        ):  # fields after the name: state ppid pgrp session ... utime(12) stime cutime cstime
            total += sum(int(x) for x in rest[11:15]) / tick
    return total


class CpuGroup:
    """A cgroup that counts the CPU of every process started in it, whatever session or parent it ends up
    with (Ray's daemons start sessions of their own and are reaped by init): cgroup v1's cpuacct or v2's
    cpu.stat, where this process may create one (root on most bench machines); else `usable` is False."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.v2 = False
        name = f"mcqa-bench-{os.getpid()}"
        for root, v2 in ((Path("/sys/fs/cgroup/cpuacct"), False), (Path("/sys/fs/cgroup"), True)):
            probe = root / ("cpu.stat" if v2 else "cpuacct.usage")
            if not probe.exists():
                continue
            try:
                (root / name).mkdir()
            except OSError:
                continue
            self.path, self.v2 = root / name, v2
            break

    @property
    def usable(self) -> bool:
        return self.path is not None

    def enter(self) -> None:
        """Move the calling process (a child between fork and exec) into the group."""
        if self.path is not None:
            with open(self.path / "cgroup.procs", "w", encoding="ascii") as fh:
                fh.write(str(os.getpid()))

    def usage_s(self) -> float | None:
        if self.path is None:
            return None
        try:
            if self.v2:
                text = (self.path / "cpu.stat").read_text(encoding="ascii")
                return int(text.split("usage_usec", 1)[1].split()[0]) / 1e6
            return int((self.path / "cpuacct.usage").read_text(encoding="ascii")) / 1e9
        except (OSError, ValueError, IndexError):
            return None

    def remove(self) -> None:
        if self.path is not None:
            with contextlib.suppress(OSError):
                self.path.rmdir()


def own_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_module(
    name: str, scale: float, rounds: int, full: bool, kwargs: dict[str, Any]
) -> tuple[dict[str, Any], float]:
    """(the module's document, the CPU seconds of its process tree), from a fresh interpreter in its own
    session. Its output goes to files, not pipes, and whatever it leaves running in its session (a server it
    failed to stop) is ended with it."""
    code = CHILD.format(here=str(HERE), module=stem(name), scale=scale, rounds=rounds, full=full,
                        kwargs=json.dumps(kwargs))  # fmt: skip
    env = dict(os.environ, PYTHONHASHSEED="0")
    group = CpuGroup()
    try:
        return _run_in(group, code, env)
    finally:
        group.remove()


def _run_in(group: CpuGroup, code: str, env: dict[str, str]) -> tuple[dict[str, Any], float]:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        cpu0 = own_cpu_s()
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=err, env=env, cwd=REPO,
                                start_new_session=True, preexec_fn=group.enter if group.usable else None)  # fmt: skip
        leftover = 0.0
        try:
            proc.wait()
            leftover = session_cpu_s(proc.pid)
            in_group = group.usage_s()
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
    cpu = in_group if in_group is not None else own_cpu_s() - cpu0 + leftover
    return json.loads(line[len("@@RESULT@@") :]), cpu


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


def meta(
    args: argparse.Namespace, load_before: tuple[float, ...], wall: float, other_cores: float | None
) -> dict[str, Any]:
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
        # cores busy on average with work other than the module's process tree while it ran: the machine's
        # busy CPU time (/proc/stat) less the module's own; the load average counts the bench's own work
        "other_cores": None if other_cores is None else round(other_cores, 2),
        "scale": args.scale,
        "rounds": args.rounds,
        "full": args.full,
        "wall_s": round(wall, 1),
        "command": "python bench/run.py " + " ".join(sys.argv[1:]),
    }


def compile_package() -> None:
    """Write the package's bytecode (__pycache__) before anything is timed, as installing a wheel does. The
    checkout is an editable install, which compiles nothing, and where PYTHONDONTWRITEBYTECODE is set (these
    machines set it) every command would otherwise compile every module it imports on every start: a cost a
    user's install does not have, and the floors (which import only the standard library and orjson) do not
    pay. py_compile writes regardless of that variable; a source edited later is compiled afresh, as usual."""
    import compileall

    compileall.compile_dir(str(REPO / "mcqa_prep"), quiet=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every module's sizes (quick checks)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every A/B (>= 3 for published figures)")
    ap.add_argument("--full", action="store_true", help="also the figures at 685,573 rows (minutes more)")
    ap.add_argument("--only", action="append", metavar="NAME", help="run only this module (repeatable)")
    ap.add_argument(
        "--baseline-rev",
        help="rescore, validate and prepare also on this git revision's package (before/after)",
    )
    ap.add_argument("--out", default=str(RESULTS), help="directory of the result files [bench/results]")
    args = ap.parse_args(argv)
    names = [n.removeprefix("bench_") for n in args.only] if args.only else modules()
    unknown = sorted(set(names) - set(modules()) - set(ON_REQUEST))
    if unknown:
        ap.error(f"no bench module {', '.join(unknown)} (have: {', '.join(modules() + list(ON_REQUEST))})")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    compile_package()
    failed: list[str] = []
    skipped: list[str] = []
    for name in names:
        if not in_result_format(HERE / f"{stem(name)}.py"):
            print(f"== {name}: skipped, its run() is not in the result format yet (run(scale, *, rounds, full): "
                  "docs/design/performance.md, 'Result format')", flush=True)  # fmt: skip
            (failed if args.only else skipped).append(name)
            continue
        print(
            f"== {name} (scale {args.scale}, {args.rounds} rounds{', full' if args.full else ''})", flush=True
        )
        load0, t0, busy0 = os.getloadavg(), time.perf_counter(), machine_busy_s()
        try:
            doc, module_cpu = run_module(
                name, args.scale, args.rounds, args.full, {"baseline_rev": args.baseline_rev}
            )
        except RuntimeError as exc:
            print(f"   FAILED:\n{exc}", flush=True)
            failed.append(name)
            continue
        problems = check_document(doc)
        if problems:
            print("   bad result document: " + "; ".join(problems), flush=True)
            failed.append(name)
            continue
        wall, busy1 = time.perf_counter() - t0, machine_busy_s()
        other = None if busy0 is None or busy1 is None else max(0.0, busy1 - busy0 - module_cpu) / wall
        doc["meta"] = meta(args, load0, wall, other)
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
