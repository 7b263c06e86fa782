"""The entry point of a NeMo Gym component written by `mcqa-prep gym-component`: its app.py calls `main`.

NeMo Gym starts the component with `python app.py`; this runs mcqa-prep's own server on the host and port
NeMo Gym assigned (serve/gym_entry.py). Output goes to the process's stdout, which NeMo Gym prefixes with the
server's name; a failure to start is one line on stderr and exit 1.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import McqaPrepError


def _say(line: str) -> None:
    print(line, flush=True)


def main(component: str | os.PathLike) -> int:
    from ..serve.gym_entry import run

    try:
        return run(Path(component), os.environ, _say)
    except McqaPrepError as exc:
        print(f"Error: {exc}", file=sys.stderr, flush=True)
        return 1
