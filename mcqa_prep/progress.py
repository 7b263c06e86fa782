"""The progress a library function reports, as an interface: the caller hands in a bar factory (`Progress`),
the function asks it for a `Bar` with the total when it knows one (bytes to hash, rows to read) and advances
it. The CLI's factory (`cli/common.bar_factory`) draws one tqdm bar on stderr: a count and a rate, and with a
total also the share done and the time left. A total learnt after the bar started is set on it (`bar.total =
n`); library code never draws anything itself."""

from __future__ import annotations

from typing import Any, Protocol


class Bar(Protocol):
    """One bar: advanced by `update(n)` (rows, bytes), closed when the work ends."""

    total: float | None

    def update(self, n: float = 1) -> Any: ...

    def close(self) -> None: ...


class Progress(Protocol):
    """A bar factory: `progress(total=, desc=, unit=)` -> Bar (`total` None when unknown; `unit` "row", "B")."""

    def __call__(self, *, total: float | None = None, desc: str = "", unit: str = "row") -> Bar: ...
