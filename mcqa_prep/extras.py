"""Optional packages, imported where a feature needs them: the one table of which extra installs which package,
and the one failure when it is missing (errors.MissingExtra, exit code 1 with the install line as its hint).

The core install (`pip install mcqa-prep`) is what pull, validate, prepare, verify, grade, rescore, summarize,
passrates, curriculum, convert, audit and load_prepared need; the extras are named by use (docs/install.md).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import MissingExtra

# import name -> the extra that installs it (pyproject.toml [project.optional-dependencies])
EXTRA_OF: dict[str, str] = {
    "uvicorn": "serve",
    "ray": "ray",
}


def require(module: str, feature: str) -> ModuleType:
    """Import `module` (a package of an extra) for `feature`, or raise MissingExtra naming the extra."""
    top = module.split(".")[0]
    extra = EXTRA_OF[top]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        absent = isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == top
        state = "is not installed" if absent else f"cannot be imported ({exc})"
        raise MissingExtra(
            f"{feature} needs {top}, which {state} (the {extra} extra)",
            package=top,
            extra=extra,
            install=f"mcqa-prep[{extra}]",
        ) from None
