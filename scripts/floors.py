"""The declared floors of every direct dependency, as pip constraints (`name==floor`), or a check that an
environment has exactly those versions installed.

`make test-floors` installs the package with these constraints into a separate venv and runs the suite
there, so every `>=` in pyproject.toml is a version the tests pass on. Requirements without a floor are
left to the resolver. Usage: python scripts/floors.py [--check]
"""

from __future__ import annotations

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?\s*(.*?)\s*(?:;.*)?$")


# what `make test-floors` installs, `-e '.[dev,bench]'`, as `make test` does (bench: the bench's own tests run
# its baseline, datasketch)
INSTALLED_EXTRAS = ("dev", "bench")


def floors(path: Path = PYPROJECT, extras: tuple[str, ...] = INSTALLED_EXTRAS) -> dict[str, str]:
    """{distribution name: floor} of the core dependencies and of `extras` with the extras they name in turn
    (`mcqa-prep[ray]`), the project itself left out. An extra that the install does not reach has no floor
    the suite could check."""
    project = tomllib.loads(path.read_text(encoding="utf-8"))["project"]
    reqs = list(project.get("dependencies", [])) + _extra_requirements(project, extras, path)
    out: dict[str, str] = {}
    for req in reqs:
        name, _extras, spec = _parse(req, path)
        if _norm(name) == _norm(project["name"]):
            continue
        found = re.search(r">=\s*([^,\s]+)", spec)
        if found is None:
            continue
        if _norm(name) in out and out[_norm(name)] != found.group(1):
            raise SystemExit(f"{name} has two floors in {path}: {out[_norm(name)]} and {found.group(1)}")
        out[_norm(name)] = found.group(1)
    return out


def _parse(req: str, path: Path) -> tuple[str, list[str], str]:
    """(distribution name, the extras it asks for, version specifier) of one requirement string."""
    m = _REQ.match(req)
    if m is None:
        raise SystemExit(f"cannot read the requirement {req!r} in {path}")
    return m.group(1), [e.strip() for e in (m.group(2) or "").split(",") if e.strip()], m.group(3)


def _extra_requirements(project: dict, wanted: tuple[str, ...], path: Path) -> list[str]:
    """The requirements of the `wanted` extras and of every extra of the project they name, each extra once."""
    extras = project.get("optional-dependencies", {})
    pending, seen, out = list(wanted), set(), []
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        if name not in extras:
            raise SystemExit(f"{path} has no extra {name!r}")
        seen.add(name)
        for req in extras[name]:
            dist, named, _spec = _parse(req, path)
            if _norm(dist) == _norm(project["name"]):
                pending += named
            else:
                out.append(req)
    return out


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _release(version: str) -> tuple[int, ...]:
    parts = [int(p) for p in re.findall(r"\d+", version.split("+")[0])[:3]]
    return tuple(parts + [0] * (3 - len(parts)))


def check() -> int:
    """Every floor installed exactly (1.0 == 1.0.0); a line per mismatch."""
    bad = []
    for name, floor in sorted(floors().items()):
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            bad.append(f"{name}: not installed (floor {floor})")
            continue
        if _release(have) != _release(floor):
            bad.append(f"{name}: {have} installed, floor {floor}")
    for line in bad:
        print(line, file=sys.stderr)
    if not bad:
        print(f"every direct dependency at its floor ({len(floors())})")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        raise SystemExit(check())
    for name, floor in sorted(floors().items()):
        print(f"{name}=={floor}")
