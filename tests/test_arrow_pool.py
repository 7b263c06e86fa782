"""The command-line program has Arrow allocate with the C library's malloc (`_perf.use_system_allocator_for_arrow`):
its import must come before pyarrow's, and a user's own choice of pool wins."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = "import mcqa_prep.cli, pyarrow as pa; print(pa.default_memory_pool().backend_name)"


def _backend(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if env_value is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = env_value
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_the_program_uses_the_system_pool() -> None:
    assert _backend(None) == "system"


@pytest.mark.parametrize("chosen", ["jemalloc", "mimalloc"])
def test_a_pool_the_user_chose_is_kept(chosen: str) -> None:
    import pyarrow as pa

    if chosen not in pa.supported_memory_backends():
        pytest.skip(f"this pyarrow has no {chosen}")
    assert _backend(chosen) == chosen


def test_a_library_caller_that_imported_pyarrow_first_keeps_its_pool() -> None:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    code = (
        "import pyarrow as pa; before = pa.default_memory_pool().backend_name; import mcqa_prep.cli, os; "
        "print(before == pa.default_memory_pool().backend_name, 'ARROW_DEFAULT_MEMORY_POOL' in os.environ)"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]
