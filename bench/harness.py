"""How the bench measures: whole commands as processes, their process tree's memory, A/B interleaved.

`measure(argv)` runs one command in a new session and, until it exits, samples /proc every 20 ms (50 ms after
the first second): the processes of its tree are found by parent links from the command's pid, by session id
(a child that is re-parented stays in the session) and by having been seen before (pid and start time), and
their resident sets are summed. Per run:

- `wall_s`: from spawn to exit;
- `cpu_s`: user + system seconds of the command and of every child it waited for (the kernel's rusage of
  the reaped process, what `time` prints; interpreter start-up and imports included);
- `peak_rss_mb`: the largest sum of VmRSS over the tree at one sample (shared pages are counted in every
  process that maps them, as `ps` and `top` do): what the machine must hold;
- `hwm_sum_mb`: the sum of every process's own peak (VmHWM), an upper bound (peaks at different moments),
  also covering spikes between two samples;
- `extra`: the CPU seconds of the command's own process and of its children as last sampled (a split of
  `cpu_s` for reading where the time goes, e.g. a parent against its workers; the last 50 ms are missed).

Not cgroup memory accounting: a cgroup's memory.peak counts the page cache of the files a command writes
(hundreds of MB for a rescored file) beside its processes' memory, so it measures output size more than the
command; and creating cgroups needs a delegated hierarchy most machines do not give a user.

`interleave(legs, rounds)` runs every leg once per round, the order rotated each round (A B C, B C A,
C A B, ...), so a busy moment of a shared machine lands on different legs; `stats()` and `paired()` turn the
samples into the figures of bench/results (min, max, median and every sample).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


@dataclass
class Run:
    """One command, measured."""

    argv: list[str]
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    hwm_sum_mb: float
    processes: int
    returncode: int
    stderr_tail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class CommandFailed(RuntimeError):
    pass


def cli() -> list[str]:
    """`mcqa-prep` as a user runs it: the console script beside this interpreter (else `python -m`)."""
    script = Path(sys.executable).with_name("mcqa-prep")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mcqa_prep"]


def revision_tree(rev: str, work: Path) -> Path | None:
    """`rev`'s mcqa_prep package extracted under work (git archive) and compiled (as an install has its
    bytecode, and as run.py compiles this checkout's), for a before/after leg; None when git cannot give it.
    Run it as `python -m mcqa_prep` with this directory as the working directory (revision_cli)."""
    import compileall

    tree = work / f"rev-{rev.replace('/', '_')}"
    if not (tree / "mcqa_prep").is_dir():
        tree.mkdir(exist_ok=True)
        # (the package's schemas/ is a link to the top-level schemas/: both, so that the link resolves)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "mcqa_prep", "schemas"],
                                 capture_output=True, check=False)  # fmt: skip
        if archive.returncode != 0:
            return None
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
        compileall.compile_dir(str(tree / "mcqa_prep"), quiet=1)
    return tree


def revision_cli() -> list[str]:
    """`mcqa-prep` from a revision_tree: `python -m` puts the working directory (the tree) first on sys.path."""
    return [sys.executable, "-m", "mcqa_prep"]


def baseline_figures(what: str, wall: Mapping[str, Sequence[float]], legs: Sequence[str]) -> dict[str, Any]:
    """For each leg L that also ran at a baseline revision (leg "base_L"): "L_vs_baseline.x", the baseline's
    wall time / this revision's, round by round (above 1: this revision is faster), measured in the same run."""
    return {
        f"{leg}_vs_baseline.x": ratio_figure(
            f"{what} {leg}: the baseline revision's wall time / this revision's",
            wall[f"base_{leg}"],
            wall[leg],
        )
        for leg in legs
        if f"base_{leg}" in wall
    }


def py(script: str, *args: str) -> list[str]:
    """A bench script (bench/<script>) as its own process."""
    return [sys.executable, str(HERE / script), *args]


TICK = os.sysconf("SC_CLK_TCK")


def _proc_table() -> dict[int, tuple[int, int, int, int]]:
    """pid -> (ppid, session id, start time, user + system ticks) for every process visible in /proc."""
    out: dict[int, tuple[int, int, int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                raw = fh.read()
        except OSError:
            continue
        f = raw[raw.rfind(b")") + 2 :].split()
        out[int(name)] = (int(f[1]), int(f[3]), int(f[19]), int(f[11]) + int(f[12]))
    return out


def _status_kb(pid: int) -> tuple[int, int] | None:
    """(VmRSS, VmHWM) in kB, or None when the process is gone (or a kernel thread)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    rss = hwm = -1
    for line in raw.split(b"\n"):
        if line.startswith(b"VmRSS:"):
            rss = int(line.split()[1])
        elif line.startswith(b"VmHWM:"):
            hwm = int(line.split()[1])
    return (rss, hwm) if rss >= 0 else None


class _Tree:
    """The processes of one command, followed across samples."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.known: dict[int, int] = {}  # pid -> start time, every process ever seen in the tree
        self.hwm_kb: dict[tuple[int, int], int] = {}
        self.ticks: dict[tuple[int, int], int] = {}  # CPU ticks of each process at its last sample
        self.peak_kb = 0

    def sample(self) -> None:
        table = _proc_table()
        children: dict[int, list[int]] = {}
        for pid, (ppid, *_rest) in table.items():
            children.setdefault(ppid, []).append(pid)
        tree = {self.root}
        todo = [self.root]
        while todo:
            for c in children.get(todo.pop(), ()):
                if c not in tree:
                    tree.add(c)
                    todo.append(c)
        tree.update(pid for pid, (_p, sid, *_r) in table.items() if sid == self.root)
        tree.update(pid for pid, start in self.known.items() if pid in table and table[pid][2] == start)
        total = 0
        for pid in tree:
            if pid not in table:
                continue
            st = _status_kb(pid)
            if st is None:
                continue
            start = table[pid][2]
            self.known[pid] = start
            total += st[0]
            key = (pid, start)
            self.hwm_kb[key] = max(self.hwm_kb.get(key, 0), st[1])
            self.ticks[key] = table[pid][3]
        self.peak_kb = max(self.peak_kb, total)


def measure(
    argv: Sequence[str],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    stdout: Path | None = None,
    check: bool = True,
    timeout: float | None = None,
) -> Run:
    """Run `argv` as its own process (new session) and measure it (module docstring). stdout goes to `stdout`
    (else nowhere); the last lines of stderr are kept. `check`: raise CommandFailed on a non-zero exit."""
    err_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"mcqa-bench-stderr-{os.getpid()}.txt"
    out_fh = open(stdout, "wb") if stdout else subprocess.DEVNULL
    with open(err_path, "wb") as err_fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            list(argv), cwd=cwd, env=dict(env) if env is not None else None, stdin=subprocess.DEVNULL,
            stdout=out_fh, stderr=err_fh, start_new_session=True,
        )  # fmt: skip
        tree = _Tree(proc.pid)
        status = rusage = None
        while True:
            tree.sample()
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            elapsed = time.perf_counter() - t0
            if timeout is not None and elapsed > timeout:
                os.killpg(proc.pid, 9)
                pid, status, rusage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02 if elapsed < 1.0 else 0.05)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
    if not isinstance(out_fh, int):
        out_fh.close()
    tail = err_path.read_text(errors="replace").strip().splitlines()[-5:]
    err_path.unlink(missing_ok=True)
    assert rusage is not None
    # not rusage.ru_maxrss: it keeps the RSS the child had before exec, a copy of this process's
    peak_kb = tree.peak_kb
    run = Run(
        argv=[str(a) for a in argv],
        wall_s=round(wall, 3),
        cpu_s=round(rusage.ru_utime + rusage.ru_stime, 3),
        peak_rss_mb=round(peak_kb / 1024, 1),
        hwm_sum_mb=round(max(sum(tree.hwm_kb.values()), peak_kb) / 1024, 1),
        processes=len(tree.hwm_kb),
        returncode=proc.returncode,
        stderr_tail="\n".join(tail),
        extra={"root_cpu_s": round(sum(t for (pid, _s), t in tree.ticks.items() if pid == proc.pid) / TICK, 2),
               "children_cpu_s": round(sum(t for (pid, _s), t in tree.ticks.items() if pid != proc.pid) / TICK, 2)},
    )  # fmt: skip
    if check and run.returncode != 0:
        raise CommandFailed(f"{' '.join(run.argv[:6])} ... exited {run.returncode}: {run.stderr_tail[-500:]}")
    return run


def interleave(legs: Mapping[str, Callable[[], Any]], rounds: int = 3) -> dict[str, list[Any]]:
    """Every leg once per round, in an order rotated each round; the results per leg in round order."""
    names = list(legs)
    out: dict[str, list[Any]] = {n: [] for n in names}
    for r in range(max(1, rounds)):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            out[name].append(legs[name]())
    return out


# ---- figures: the result format of bench/results (docs/design/performance.md, "Result format") ------------------


def stats(samples: Sequence[float], digits: int = 3) -> dict[str, Any]:
    xs = [float(x) for x in samples]
    return {
        "samples": [round(x, digits) for x in xs],
        "min": round(min(xs), digits),
        "max": round(max(xs), digits),
        "median": round(statistics.median(xs), digits),
    }


def figure(what: str, unit: str, samples: Sequence[float], digits: int = 3, **extra: Any) -> dict[str, Any]:
    """One figure: what it is, its unit and every sample (one per round), with min, max and median."""
    return {"what": what, "unit": unit, **stats(samples, digits), **extra}


def paired(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """a[i] / b[i] per round: a ratio whose range shows how much one round's pair can differ from another's."""
    return [x / y for x, y in zip(a, b, strict=True)]


def rate_figure(what: str, rows: int, seconds: Sequence[float], unit: str = "rows/s", **extra: Any) -> dict:
    return figure(what, unit, [rows / s for s in seconds], digits=0, **extra)


def runs_figures(
    prefix: str, what: str, runs: Sequence[Run], rows: int | None = None, suffix: str = ""
) -> dict:
    """The standard figures of a measured command: wall, CPU, peak RSS of the tree (and rates when rows), keyed
    `prefix.name` + suffix (`@full` for the full-size runs)."""
    out = {
        f"{prefix}.wall_s{suffix}": figure(f"{what}: wall seconds", "s", [r.wall_s for r in runs]),
        f"{prefix}.cpu_s{suffix}": figure(
            f"{what}: CPU seconds of the process tree", "s", [r.cpu_s for r in runs]
        ),
        f"{prefix}.rss_mb{suffix}": figure(
            f"{what}: peak RSS of the process tree",
            "MB",
            [r.peak_rss_mb for r in runs],
            digits=1,
            processes=max(r.processes for r in runs),
            hwm_sum_mb=max(r.hwm_sum_mb for r in runs),
            rows=rows,
        ),  # fmt: skip
    }
    if any(r.extra.get("children_cpu_s") for r in runs):  # a parent and its workers: where the CPU went
        out[f"{prefix}.parent_cpu_s{suffix}"] = figure(
            f"{what}: CPU seconds of the command's own process", "s", [r.extra["root_cpu_s"] for r in runs]
        )
        out[f"{prefix}.children_cpu_s{suffix}"] = figure(
            f"{what}: CPU seconds of its child processes", "s", [r.extra["children_cpu_s"] for r in runs]
        )
    if rows:
        out[f"{prefix}.rows_per_s{suffix}"] = rate_figure(
            f"{what}: rows per wall second", rows, [r.wall_s for r in runs]
        )
        out[f"{prefix}.rows_per_cpu_s{suffix}"] = rate_figure(
            f"{what}: rows per CPU second", rows, [r.cpu_s for r in runs], unit="rows/CPU-s"
        )
    return out


def ratio_figure(what: str, a: Sequence[float], b: Sequence[float], **extra: Any) -> dict[str, Any]:
    """a/b per round (paired), unit x."""
    return figure(what, "x", paired(a, b), digits=2, **extra)


def standalone(run: Callable[..., dict[str, Any]], doc: str | None, scale: float = 0.1) -> None:
    """A module run by hand (`python bench/bench_X.py --scale 0.05`): its document on stdout, as bench/run.py
    would receive it. For modules whose run takes only scale, rounds and full."""
    import argparse
    import json

    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=scale)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--full", action="store_true")
    args = ap.parse_args()
    print(json.dumps(run(args.scale, rounds=args.rounds, full=args.full), indent=1))
