"""Import rules from docs/architecture: the grader is pure; nothing imports the CLI."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "mcqa_prep"


def test_grader_imports_no_click_hub_or_datasets():
    code = (
        "import sys, mcqa_prep.grader as g, mcqa_prep.grader.request, mcqa_prep.grader.selection\n"
        "for m in ('strict_single_letter_boxed','lenient_boxed','lenient_answer_colon',"
        "'lenient_answer_colon_md','string_equals_mcqa','robust'): g.mode_function(m)\n"
        "bad = [m for m in ('click','huggingface_hub','datasets','pyarrow') if m in sys.modules]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "", f"mcqa_prep.grader pulled in: {out.strip()}"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            names.add(("." * node.level) + mod)
    return names


def test_only_hub_module_imports_huggingface_hub():
    offenders = [
        str(p.relative_to(PKG))
        for p in PKG.rglob("*.py")
        if p.name != "hub.py" and any(n.startswith("huggingface_hub") for n in _imports(p))
    ]
    assert offenders == []


def test_nothing_outside_cli_imports_cli():
    offenders = []
    for p in PKG.rglob("*.py"):
        if "cli" in p.relative_to(PKG).parts or p.name == "__main__.py":
            continue
        for n in _imports(p):
            if n.lstrip(".").startswith("cli") or n.startswith("mcqa_prep.cli"):
                offenders.append(str(p.relative_to(PKG)))
    assert offenders == []


def test_library_never_prints():
    offenders = []
    for p in PKG.rglob("*.py"):
        if "cli" in p.relative_to(PKG).parts:
            continue
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                offenders.append(f"{p.relative_to(PKG)}:{node.lineno}")
    assert offenders == []
