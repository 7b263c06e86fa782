"""The audit across option orders (`audit --pass-rates TABLE`, `--drift BEFORE AFTER`): from pass-rate tables
(passrates.v3), per model the consistent rate against the plain one, the pass rate by gold position, the
questions solved at one position only, and the letter-prior drift between two tables (passrates/positions.py).
The tables are read (and pooled, as `report` and `curriculum` pool them) before any dataset row; the
document's `option_orders` object holds the result, absent when neither option is given."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ..passrates.pool import read_tables
from ..passrates.positions import drift_of_tables, model_entries, summary
from ..passrates.table import read_table


def option_orders(
    tables: Sequence[str | os.PathLike],
    drift: tuple[str | os.PathLike, str | os.PathLike] | None,
    progress: Any = None,
) -> dict[str, Any] | None:
    if not tables and drift is None:
        return None
    models: dict[str, Any] = {}
    identities: list[dict[str, Any]] = []
    if tables:
        t = read_tables(tables, progress)
        identities = t.identities()
        models = {m: summary(model_entries(t.entries, m)) for m in sorted(t.models)}
    d = drift_of_tables(read_table(drift[0], progress), read_table(drift[1], progress)) if drift else None
    return {"tables": identities, "models": models, "drift": d}
