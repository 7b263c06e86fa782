"""docs/errors.md is generated from the code (scripts/error_table.py) and must equal what the script writes now;
and one failure reason means one exit code, wherever it is raised."""

from __future__ import annotations

import importlib.util
import sys

from conftest import REPO

_spec = importlib.util.spec_from_file_location("error_table", REPO / "scripts" / "error_table.py")
et = importlib.util.module_from_spec(_spec)
sys.modules["error_table"] = et  # (its dataclasses look their module up)
_spec.loader.exec_module(et)


def test_the_error_reference_is_the_codes_own():
    doc = (REPO / "docs" / "errors.md").read_text(encoding="utf-8")
    assert doc == et.render(), "docs/errors.md drifted: `python scripts/error_table.py --write` writes it"


def test_a_reason_has_one_exit_code_and_every_fix_names_a_reason_the_code_makes():
    from mcqa_prep.cli.errors import HINTS

    reasons = et.collect()
    assert {c: sorted(r.exits) for c, r in reasons.items() if len(r.exits) != 1} == {}
    assert sorted(set(HINTS) - set(reasons)) == []  # a hint for a reason nothing raises is dead
    # the scan finds what it claims: a reason passed through a variable, a forwarding function, a class default
    assert reasons["nothing_readable"].exits == {1} and reasons["invalid_rollouts"].exits == {1}
    assert reasons["upstream_moved"].exits == {1} and reasons["output_disk_full"].exits == {1}
    assert reasons["missing_extra"].exits == {1} and reasons["usage"].exits == {2}
    assert reasons["input_not_regular"].exits == {2} and reasons["unknown_split"].exits == {2}
