"""README.md's `console` blocks are transcripts of real runs: this runs them and compares, or rewrites them.

Every ```console block is a sequence of commands (lines starting with `$ `; a line ending in `\\` continues
on the next) each followed by what it printed (stdout and stderr together, as a terminal shows them). The
blocks run in README order, in one temporary directory holding a copy of the repository's `data/` and
`scripts/` (so `data/sample/...` paths and `python scripts/...` work, and a later block can read what an
earlier one wrote), with `mcqa-prep` from
this interpreter's environment first on PATH and the hub switched off (HF_HUB_OFFLINE=1).

Normalised, because they must vary: the temporary directory's path (shown as a relative path), and the
size of a written page in `wrote FILE (N KB)` (the page embeds the run's file paths).
Nothing else: counts, rewards, hashes and messages are compared as printed. A block whose last shown line of a command's
output is `...` shows only the start of that output.

A command that changes directory (`cd DIR`, alone or joined with `&&`) changes it for the commands after it,
as in the shell a reader types them into (the README's examples run from a scratch directory).

A command ending in ` &` is a server: it runs in the background (its own process group) for the rest of the
run, and its output is the lines it printed before it showed as many as the README does; every background
command is stopped with SIGTERM at the end. The port `8000` in commands is replaced by a free port of this
machine (and shown as 8000 in the output), so a run never depends on that port being free.

A block that cannot run here is marked by an HTML comment on the line before its opening fence, with the
reason, e.g. `<!-- console: not run (needs the network: pulls from the real hub) -->`; it is listed as not
run, never silently skipped. A ```json block marked `<!-- console: line N of FILE -->` shows a row a command
wrote: after the run it must equal (as JSON) line N of FILE in the working directory; it is checked, never
rewritten (its layout is the README's).

The user docs' console blocks (docs/getting-started.md) are run the same way: give the file.

Usage:
  python scripts/readme_console.py [FILE]            # check: exit 1 with a diff when FILE (README.md) drifted
  python scripts/readme_console.py --write [FILE]    # rewrite every output in FILE from a fresh run
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
FENCE = "```console"
NOT_RUN = re.compile(r"^<!--\s*console:\s*not run\s*\((.+)\)\s*-->\s*$")
ROW_OF = re.compile(r"^<!--\s*console:\s*line (\d+) of (\S+)\s*-->\s*$")
ELLIPSIS = "..."
_PAGE_SIZE = re.compile(r"^(wrote \S+ \()\d+ KB\)")
TIMEOUT = 300  # seconds per command: a hang guard, never a speed check


@dataclass
class Command:
    text: str  # the command as typed, continuation lines included
    shown: list[str] = field(default_factory=list)  # the output lines the README shows


@dataclass
class Block:
    line: int  # 1-based line of the opening fence
    start: int  # index of the first line inside the fence
    end: int  # index of the closing fence
    commands: list[Command]
    not_run: str | None  # the reason, when marked


def parse(lines: list[str]) -> list[Block]:
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != FENCE:
            i += 1
            continue
        marker = NOT_RUN.match(lines[i - 1].strip()) if i > 0 else None
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        if j == len(lines):
            raise SystemExit(f"README.md:{i + 1}: a console block that never closes")
        blocks.append(Block(i + 1, i + 1, j, _commands(lines[i + 1 : j], i + 2), marker and marker.group(1)))
        i = j + 1
    return blocks


def written_rows(lines: list[str]) -> list[tuple[int, int, str, str]]:
    """(README line, row line number, file, the block's JSON text) of every marked ```json block."""
    out = []
    for i, line in enumerate(lines):
        m = ROW_OF.match(line.strip())
        if m is None:
            continue
        if i + 1 >= len(lines) or lines[i + 1].strip() != "```json":
            raise SystemExit(f"README.md:{i + 1}: `{line.strip()}` must stand right before a ```json block")
        j = i + 2
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        out.append((i + 2, int(m.group(1)), m.group(2), "\n".join(lines[i + 2 : j])))
    return out


def compare_rows(rows: list[tuple[int, int, str, str]], workdir: Path) -> list[str]:
    problems = []
    for at, n, name, text in rows:
        path = workdir / name
        found = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        if len(found) < n:
            problems.append(f"README.md:{at}: {name} has no line {n} after the run")
        elif json.loads(text) != json.loads(found[n - 1]):
            problems.append(
                f"README.md:{at}: line {n} of {name} is now (edit the block by hand):\n{found[n - 1]}"
            )
    return problems


def _commands(body: list[str], first_line: int) -> list[Command]:
    out: list[Command] = []
    k = 0
    while k < len(body):
        line = body[k]
        if line.startswith("$ "):
            text = line[2:]
            while text.endswith("\\") and k + 1 < len(body):
                k += 1
                text += "\n" + body[k]
            out.append(Command(text))
        elif not out:
            raise SystemExit(f"README.md:{first_line + k}: output before any `$ ` command in a console block")
        else:
            out[-1].shown.append(line)
        k += 1
    return out


def _env(bin_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCQA_PREP_", "HF_", "RAY_ADDRESS"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", HF_HUB_OFFLINE="1", LC_ALL="C.UTF-8")
    env.pop("COLUMNS", None)
    return env


PORT = "8000"


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _background(text: str, want: int, workdir: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """Start a server command; its output: the first `want` lines it prints (within TIMEOUT)."""
    proc = subprocess.Popen(
        ["bash", "-c", "exec " + text],
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    lines: list[str] = []
    done = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            if len(lines) < want:
                lines.append(raw.decode("utf-8", errors="replace"))
            if len(lines) >= want:
                done.set()
        done.set()

    threading.Thread(target=read, daemon=True).start()
    done.wait(TIMEOUT)
    return proc, "".join(lines)


def _stop(servers: list[subprocess.Popen]) -> None:
    for proc in servers:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    for proc in servers:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def run(blocks: list[Block], workdir: Path) -> dict[int, list[list[str]]]:
    """{block line: the output lines of each of its commands}, for every block that runs."""
    shutil.copytree(REPO / "data", workdir / "data")
    shutil.copytree(REPO / "scripts", workdir / "scripts")  # README examples run scripts/simulate_rollouts.py
    env = _env(Path(sys.executable).parent)
    port = _free_port()
    got: dict[int, list[list[str]]] = {}
    servers: list[subprocess.Popen] = []
    cwd = workdir
    try:
        for block in blocks:
            if block.not_run is not None:
                continue
            outs = []
            for cmd in block.commands:
                text = cmd.text.replace(PORT, port)
                if text.rstrip().endswith("&"):
                    proc, out = _background(text.rstrip()[:-1], len(cmd.shown), cwd, env)
                    servers.append(proc)
                else:
                    done = subprocess.run(
                        ["bash", "-c", text],
                        cwd=cwd,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        timeout=TIMEOUT,
                    )
                    out = done.stdout.decode("utf-8", errors="replace")
                    cwd = after_cd(text, cwd)
                for prefix in {str(workdir) + os.sep, str(workdir.resolve()) + os.sep}:
                    out = out.replace(prefix, "")
                outs.append(out.replace(port, PORT).splitlines())
            got[block.line] = outs
    finally:
        _stop(servers)
    return got


_CD = re.compile(r"(?:^|&&)\s*cd\s+([^\s&;|#]+)")


def after_cd(text: str, cwd: Path) -> Path:
    """The working directory after a command: `cd DIR` in it (alone or joined with &&) moves there."""
    for target in _CD.findall(text):
        cwd = cwd / target
    return cwd


def final_dir(blocks: list[Block], workdir: Path) -> Path:
    """Where the blocks that run leave the reader (the directory a later `line N of FILE` is read in)."""
    for block in blocks:
        if block.not_run is None:
            for cmd in block.commands:
                workdir = after_cd(cmd.text, workdir)
    return workdir


def _norm(lines: list[str]) -> list[str]:
    return [_PAGE_SIZE.sub(r"\1N KB)", line) for line in lines]


def _matches(shown: list[str], actual: list[str]) -> bool:
    shown, actual = _norm(shown), _norm(actual)
    if shown and shown[-1] == ELLIPSIS:
        return actual[: len(shown) - 1] == shown[:-1]
    return actual == shown


def compare(blocks: list[Block], got: dict[int, list[list[str]]], name: str = "README.md") -> list[str]:
    """One message (with a diff) per command whose output differs from the README's."""
    problems = []
    for block in blocks:
        for cmd, actual in zip(block.commands, got.get(block.line, []), strict=False):
            if not _matches(cmd.shown, actual):
                diff = "\n".join(
                    difflib.unified_diff(cmd.shown, actual, name, "actual run", lineterm="", n=1)
                )
                problems.append(f"{name}:{block.line}: $ {cmd.text}\n{diff}")
    return problems


def rewrite(lines: list[str], blocks: list[Block], got: dict[int, list[list[str]]]) -> list[str]:
    out = list(lines)
    for block in reversed(blocks):
        if block.line not in got:
            continue
        body = []
        for cmd, actual in zip(block.commands, got[block.line], strict=True):
            body += ["$ " + cmd.text.split("\n")[0], *cmd.text.split("\n")[1:]]
            elided = cmd.shown and cmd.shown[-1] == ELLIPSIS
            body += [*actual[: len(cmd.shown) - 1], ELLIPSIS] if elided else actual
        out[block.start : block.end] = body
    return out


def check(readme: Path = README) -> tuple[list[str], list[str]]:
    """(problems, blocks not run with their reasons) for README.md (or another doc) as it is."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    blocks = parse(lines)
    name = readme.relative_to(REPO).as_posix() if readme.is_relative_to(REPO) else readme.name
    with tempfile.TemporaryDirectory(prefix="readme-console-") as tmp:
        got = run(blocks, Path(tmp))
        problems = compare(blocks, got, name) + compare_rows(written_rows(lines), final_dir(blocks, Path(tmp)))
    not_run = [f"{name}:{b.line}: {b.not_run}" for b in blocks if b.not_run is not None]
    return problems, not_run


def main(argv: list[str]) -> int:
    write = "--write" in argv
    rest = [a for a in argv if a != "--write"]
    if len(rest) > 1 or any(a.startswith("-") for a in rest):
        print(__doc__, file=sys.stderr)
        return 2
    doc = Path(rest[0]).resolve() if rest else README
    if write:
        lines = doc.read_text(encoding="utf-8").splitlines()
        blocks = parse(lines)
        with tempfile.TemporaryDirectory(prefix="readme-console-") as tmp:
            got = run(blocks, Path(tmp))
            stale = compare_rows(written_rows(lines), final_dir(blocks, Path(tmp)))
        doc.write_text("\n".join(rewrite(lines, blocks, got)) + "\n", encoding="utf-8")
        print(f"{doc.name}: {len(got)} console block(s) rewritten from a run")
        for p in stale:
            print(p, file=sys.stderr)
        return 1 if stale else 0
    problems, not_run = check(doc)
    for line in not_run:
        print(f"not run by design: {line}")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"{len(problems)} command(s) drifted: `python scripts/readme_console.py --write` rewrites them")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
