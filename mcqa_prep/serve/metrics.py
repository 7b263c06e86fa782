"""The server's counters, summed over its worker processes (`GET /metrics`, `/aggregate_metrics`).

Every counter has a fixed slot: a block of 64-bit integers in shared memory, one row per worker process, made
by the parent before the workers are forked. A worker writes only its own row (from its event loop thread:
one writer, no lock); a reader sums the rows. Nothing grows with the number of requests.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

from ..records import STATUSES
from .contract import MISMATCH_REASONS

# HTTP-level refusals of a verify request (4xx): the row was never graded
REFUSALS = (
    "body_too_large",
    "not_json",
    "not_an_object",
    "no_response",
    "bad_field",
    "contract_rejected",
)
# graded statuses that say the row (not the model) is at fault: counted as invalid rows too
INVALID_STATUSES = ("invalid_row", "invalid_regex", "regex_timeout")

KEYS: tuple[str, ...] = (
    "requests",
    "graded",
    "rewarded",
    "unstamped",
    "mismatched",
    "masked",
    "grader_errors",
    "grading_timeouts",
    *(f"status.{s}" for s in STATUSES),
    *(f"mismatch.{r}" for r in MISMATCH_REASONS),
    *(f"refused.{r}" for r in REFUSALS),
    "other_requests",
)
SLOT = {k: i for i, k in enumerate(KEYS)}


class Counters:
    """Per-worker rows of counters in shared memory (`rows` = the number of worker processes)."""

    def __init__(self, rows: int = 1) -> None:
        self.rows = rows
        self.width = len(KEYS)
        self._array: Any = multiprocessing.RawArray("q", rows * self.width)
        self.row = 0  # the worker this process is (set after the fork)

    def add(self, key: str, n: int = 1) -> None:
        i = self.row * self.width + SLOT[key]
        self._array[i] += n

    def totals(self) -> dict[str, int]:
        a = self._array
        w = self.width
        return {k: sum(a[r * w + i] for r in range(self.rows)) for i, k in enumerate(KEYS)}

    def document(self) -> dict[str, Any]:
        """The counters as GET /metrics?format=json gives them: graded, mismatched, unstamped and invalid
        rows, each by reason."""
        t = self.totals()

        def by(prefix: str, names: tuple[str, ...]) -> dict[str, int]:
            return {n: t[f"{prefix}.{n}"] for n in names if t[f"{prefix}.{n}"]}

        statuses = by("status", STATUSES)
        invalid = {s: statuses[s] for s in INVALID_STATUSES if s in statuses}
        invalid.update(by("refused", REFUSALS))
        return {
            "verify_requests": t["requests"],
            "graded": t["graded"],
            "rewarded": t["rewarded"],
            "graded_by_status": statuses,
            "unstamped": t["unstamped"],
            "mismatched": t["mismatched"],
            "mismatched_by_reason": by("mismatch", MISMATCH_REASONS),
            "masked": t["masked"],
            "invalid": sum(invalid.values()),
            "invalid_by_reason": invalid,
            "grader_errors": t["grader_errors"],
            "grading_timeouts": t["grading_timeouts"],
            "other_requests": t["other_requests"],
        }


def prometheus(doc: dict[str, Any], contract: str) -> str:
    """The same counters in the Prometheus text format (GET /metrics)."""
    lines: list[str] = []

    def counter(name: str, help_text: str, values: dict[str, int] | int, label: str | None = None) -> None:
        lines.append(f"# HELP mcqa_prep_{name} {help_text}")
        lines.append(f"# TYPE mcqa_prep_{name} counter")
        if isinstance(values, int):
            lines.append(f'mcqa_prep_{name}{{contract="{contract}"}} {values}')
            return
        for k, v in sorted(values.items()):
            lines.append(f'mcqa_prep_{name}{{contract="{contract}",{label}="{k}"}} {v}')

    counter("verify_requests_total", "Verify requests received.", doc["verify_requests"])
    counter("graded_total", "Rows graded, by status.", doc["graded_by_status"], "status")
    counter("rewarded_total", "Rows graded with reward 1.", doc["rewarded"])
    counter("unstamped_total", "Rows graded without a contract stamp.", doc["unstamped"])
    counter(
        "mismatched_total", "Rows whose contract differs, by reason.", doc["mismatched_by_reason"], "reason"
    )
    counter("masked_total", "Responses with mask_sample true.", doc["masked"])
    counter(
        "invalid_total", "Invalid rows and refused requests, by reason.", doc["invalid_by_reason"], "reason"
    )
    counter("grader_errors_total", "Rows the grader failed on (masked).", doc["grader_errors"])
    counter(
        "grading_timeouts_total",
        "Requests not graded within the per-request bound (masked).",
        doc["grading_timeouts"],
    )
    return "\n".join(lines) + "\n"
