"""tests/slow_tests.txt names tests that exist: a renamed or removed slow test would otherwise leave a stale line
behind (and a renamed one would silently join `make test-quick`)."""

from __future__ import annotations

import ast

from conftest import REPO, slow_entries


def _names(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            out.add(node.name)
        elif isinstance(node, ast.ClassDef):
            out.add(node.name)
            out |= {f"{node.name}::{f.name}" for f in node.body if isinstance(f, ast.FunctionDef)}
    return out


def test_every_slow_entry_names_an_existing_test_file_or_test():
    stale = []
    for entry in slow_entries():
        file, _, test = entry.partition("::")
        path = REPO / file
        if not path.is_file() or (test and test not in _names(path)):
            stale.append(entry)
    assert stale == [], f"tests/slow_tests.txt names tests that do not exist: {stale}"


def test_the_list_has_no_repeat_and_only_tests():
    entries = slow_entries()
    assert len(entries) == len(set(entries)) and all(
        e.startswith("tests/test") or e.startswith("tests/hostile/test") for e in entries
    )
