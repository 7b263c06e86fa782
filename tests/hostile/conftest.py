"""What the hostile suite found and is not fixed yet: each entry is a try expected to fail (strictly: it
must fail, so a fix has to remove its entry), with the reason. Empty: everything it found so far is fixed
(the history of this file lists what that was); a new finding goes here until its fix lands."""

from __future__ import annotations

import pytest

KNOWN: dict[str, str] = {}
# tries that fail only sometimes (a race): not strict expectations
FLAKY: dict[str, str] = {}


def pytest_collection_modifyitems(config, items):
    for item in items:
        key = f"{item.path.name}::{item.name}"
        if key in KNOWN:
            item.add_marker(pytest.mark.xfail(reason=KNOWN[key], strict=True))
        elif key in FLAKY:
            item.add_marker(pytest.mark.xfail(reason=FLAKY[key], strict=False))
