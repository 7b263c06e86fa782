"""README.md cannot drift: every `console` block is run (scripts/readme_console.py) on a copy of the
repository's data/ and must print what the README shows. Blocks that need the network are marked so and
listed in the summary as not run by design; nothing else may be marked."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from conftest import REPO, report

_spec = importlib.util.spec_from_file_location("readme_console", REPO / "scripts" / "readme_console.py")
rc = importlib.util.module_from_spec(_spec)
sys.modules["readme_console"] = rc  # (its dataclasses look their module up)
_spec.loader.exec_module(rc)

FIX = "python scripts/readme_console.py --write"


def test_every_console_block_prints_what_the_readme_shows():
    problems, not_run = rc.check()
    report(f"README console blocks: {len(rc.parse(rc.README.read_text().splitlines()))} in all")
    for line in not_run:
        report(f"  not run by design: {line}")
    assert not problems, "\n\n".join(problems) + f"\n\nREADME.md drifted: `{FIX}` rewrites the outputs"


def test_only_blocks_that_need_the_network_are_not_run():
    blocks = rc.parse(rc.README.read_text(encoding="utf-8").splitlines())
    assert len(blocks) >= 8 and all(b.commands for b in blocks)
    for b in blocks:
        if b.not_run is not None:
            assert b.not_run.startswith("needs the network"), f"README.md:{b.line}: {b.not_run}"
            assert any("pull" in c.text for c in b.commands), f"README.md:{b.line}"


def test_a_changed_output_is_a_drift_and_an_ellipsis_ends_what_is_shown():
    lines = ["```console", "$ echo one", "one", "$ printf 'a\\nb\\n' \\", "  # continued", "a", "...", "```"]
    (block,) = rc.parse(lines)
    assert [c.text for c in block.commands] == ["echo one", "printf 'a\\nb\\n' \\\n  # continued"]
    assert rc.compare([block], {block.line: [["one"], ["a", "b"]]}) == []
    drift = rc.compare([block], {block.line: [["two"], ["a", "b"]]})
    assert len(drift) == 1 and "-one" in drift[0] and "+two" in drift[0]
    assert rc.compare([block], {block.line: [["one"], ["b"]]})  # the shown start must match
    assert rc.rewrite(lines, [block], {block.line: [["two"], ["a", "b"]]})[2] == "two"


def test_a_marker_needs_a_reason_and_marks_the_block_after_it():
    lines = ["<!-- console: not run (needs the network: x) -->", "```console", "$ pull", "```"]
    assert rc.parse(lines)[0].not_run == "needs the network: x"
    assert rc.parse(["<!-- console: not run -->", *lines[1:]])[0].not_run is None


def test_only_a_written_page_size_is_normalised():
    assert rc._matches(
        ["wrote report.html (200 KB): 2 section(s)"], ["wrote report.html (194 KB): 2 section(s)"]
    )
    assert not rc._matches(
        ["wrote report.html (200 KB): 2 section(s)"], ["wrote report.html (200 KB): 3 section(s)"]
    )
    assert not rc._matches(["mean reward: 0.7500"], ["mean reward: 0.7600"])


@pytest.mark.parametrize("name", ["getting-started.md", "formats.md"])
def test_the_user_docs_print_what_they_show(name):
    """The user docs' transcripts are real runs too, every one of them (they need no network)."""
    doc = REPO / "docs" / name
    problems, not_run = rc.check(doc)
    assert not_run == []
    assert not problems, "\n\n".join(problems) + f"\n\ndocs/{name} drifted: `{FIX} docs/{name}` rewrites it"


def test_a_cd_carries_over_to_the_commands_after_it(tmp_path):
    assert (
        rc.after_cd("mkdir -p scratch && cd scratch && ln -sfn ../data data", tmp_path)
        == tmp_path / "scratch"
    )
    assert rc.after_cd("mcqa-prep validate cd.jsonl", tmp_path) == tmp_path
    lines = ["```console", "$ mkdir -p s && cd s", "$ pwd", "```"]
    (block,) = rc.parse(lines)
    assert rc.final_dir([block], tmp_path) == tmp_path / "s"
