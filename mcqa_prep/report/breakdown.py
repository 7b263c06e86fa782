"""Pass-rate tables in a report: per model (never pooled across models, nor across contracts or counting rules),
the questions' difficulty broken down by source dataset and by any column the user names, with pass@k /
majority@k, and example prompts and responses per difficulty bucket.

Tables are grouped by (grading contract, counting rule, key kind) and each group is pooled
(`passrates.pool`); a group's model gets its own section. While the report reads its inputs, every dataset
row found in a table gives its question the row's column values (the first row of a question wins: template
variants of one question share its source and subject) and, for the questions chosen as examples, its
prompt; every rescored rollout of an example question gives a response (with its reward and extracted
answer). Memory: one tuple of interned column values per question of the tables; examples are bounded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from ..columns import MISSING, SOURCE, group_of
from ..evidence import model_of
from ..io.paths import distinct_inputs
from ..passrates.pool import pool_tables
from ..passrates.table import PassRateTable, read_table
from ..progress import Progress
from ..prompt import content_text, messages
from .bins import clip

NOT_IN_ROWS = "(no row in the inputs)"
EXAMPLE_CHARS = 400
RESPONSES_PER_QUESTION = 2


def load_groups(paths: Sequence[Any], progress: Progress | None = None) -> list[PassRateTable]:
    """The tables, pooled per (contract, counting rule, key kind), in a stable order."""
    groups: dict[tuple[str, str | None, str], list[PassRateTable]] = {}
    distinct_inputs(paths, "pass-rate table")
    for p in paths:
        t = read_table(p, progress)
        groups.setdefault((t.contract_id, t.no_answer, t.key_by), []).append(t)
    return [
        pool_tables(ts)
        for _, ts in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2]))
    ]


def response_text(row: Mapping[str, Any]) -> str | None:
    """The text a rollout answered with: its response's message output, concatenated."""
    resp = row.get("response")
    out = resp.get("output") if isinstance(resp, Mapping) else None
    if not isinstance(out, list):
        return None
    parts = [content_text(item.get("content")) for item in out if isinstance(item, Mapping)]
    text = "".join(p for p in parts if p)
    return text or None


def prompt_text(row: Mapping[str, Any]) -> str | None:
    msgs = messages(row.get("responses_create_params"))
    if not msgs:
        return None
    return "\n".join(t for _, t in msgs if isinstance(t, str)) or None


class Breakdown:
    """One table group's tallies: column values per question, examples per (model, bucket)."""

    def __init__(self, table: PassRateTable, columns: Sequence[str], examples: int) -> None:
        self.table = table
        self.columns = [SOURCE, *[c for c in columns if c != SOURCE]]
        self.values: dict[str, tuple[str, ...]] = {}
        self._intern: dict[str, str] = {}
        self.rows_seen = 0
        self.rows_found = 0
        self.rows_found_by: dict[str, int] = {}  # per model: dataset rows whose question it has a rate for
        self.examples = self._choose(examples)
        wanted = {k for keys in self.examples.values() for k in keys}
        self.prompts: dict[str, str] = dict.fromkeys(wanted, "")
        self.responses: dict[tuple[str, str], list[list[Any]]] = {}

    def _choose(self, n: int) -> dict[tuple[str, int], list[str]]:
        """Up to n example questions per (model, bucket): the first by a hash of the key (spread, repeatable)."""
        pools: dict[tuple[str, int], list[tuple[bytes, str]]] = {}
        for key, per in self.table.entries.items():
            h = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            for model, e in per.items():
                assert e.bucket is not None  # read_table and pool_tables give every entry its posterior
                pools.setdefault((model, e.bucket), []).append((h, key))
        return {mb: [k for _, k in sorted(v)[:n]] for mb, v in sorted(pools.items())}

    def add_row(self, row: Mapping[str, Any]) -> None:
        self.rows_seen += 1
        found = self.table.find(row)
        if found is None:
            return
        self.rows_found += 1
        for model in found[1]:
            self.rows_found_by[model] = self.rows_found_by.get(model, 0) + 1
        key = found[0]
        if key not in self.values:
            self.values[key] = tuple(
                self._intern.setdefault(v, v) for v in (group_of(row, c) for c in self.columns)
            )
        if self.prompts.get(key) == "":
            self.prompts[key] = clip(prompt_text(row) or "", EXAMPLE_CHARS)

    def add_rollout(self, row: Mapping[str, Any]) -> None:
        found = self.table.find(row)
        if found is None or found[0] not in self.prompts:
            return
        key = found[0]
        model = model_of(row)
        if model is None or model not in found[1]:
            return
        got = self.responses.setdefault((model, key), [])
        if len(got) < RESPONSES_PER_QUESTION:
            answer = row.get("extracted_answer")
            got.append([clip(response_text(row) or "", EXAMPLE_CHARS), row.get("reward"), answer])
        if self.prompts[key] == "":
            self.prompts[key] = clip(prompt_text(row) or "", EXAMPLE_CHARS)

    def value(self, key: str, column: int) -> str:
        v = self.values.get(key)
        return v[column] if v is not None else NOT_IN_ROWS


__all__ = ["MISSING", "NOT_IN_ROWS", "Breakdown", "load_groups", "prompt_text", "response_text"]
