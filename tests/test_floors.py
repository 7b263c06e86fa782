"""scripts/floors.py: the floors `make test-floors` pins and checks are those of what it installs
(`-e '.[dev,bench]'`: the core dependencies, those extras and the extras they name), never an extra it does
not install, or the check fails on a package the venv was never meant to hold."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _floors_module():
    spec = importlib.util.spec_from_file_location("floors", ROOT / "scripts" / "floors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_floors_follow_the_installed_extra_and_the_extras_it_names(tmp_path):
    floors = _floors_module().floors
    path = _write(
        tmp_path,
        """
[project]
name = "demo-pkg"
dependencies = ["click>=8.1", "numpy"]
[project.optional-dependencies]
bench = ["datasketch>=1.6"]
ray = ["ray[data]>=2.58"]
serve = ["uvicorn>=0.30", "uvloop>=0.19; sys_platform != 'win32'"]
dev = ["pytest>=8.1.1", "demo_pkg[ray, serve]", "ruff==0.17.6"]
""",
    )
    assert floors(path, extras=("dev",)) == {
        "click": "8.1",
        "ray": "2.58",
        "uvicorn": "0.30",
        "uvloop": "0.19",
        "pytest": "8.1.1",
    }
    assert floors(path, extras=("bench",)) == {"click": "8.1", "datasketch": "1.6"}
    assert set(floors(path, extras=("dev", "bench"))) == {
        "click",
        "ray",
        "uvicorn",
        "uvloop",
        "pytest",
        "datasketch",
    }


def test_an_unknown_extra_is_an_error_not_an_empty_set(tmp_path):
    floors = _floors_module().floors
    path = _write(
        tmp_path,
        '[project]\nname = "p"\ndependencies = []\n[project.optional-dependencies]\ndev = ["p[nope]"]\n',
    )
    with pytest.raises(SystemExit, match="no extra 'nope'"):
        floors(path, extras=("dev",))


def test_the_repositorys_floors_are_those_make_test_floors_installs():
    module = _floors_module()
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert f"-e '.[{','.join(module.INSTALLED_EXTRAS)}]'" in makefile
    names = set(module.floors())
    assert {"ray", "uvicorn", "huggingface-hub", "pytest"} <= names
