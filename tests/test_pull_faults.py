"""`pull` when the hub fails or the run is stopped half-way: the target directory is left as it was (a
verified pull stays verified; a first pull leaves nothing a reader would take for a dataset), and the failure
is one line that names its real cause."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

try:  # tests/ as a package or as a rootdir-relative directory
    from .test_pull import DATA, _env, error_lines, hub, pull, pulled, pulled_template  # noqa: F401
except ImportError:
    from test_pull import DATA, _env, error_lines, hub, pull, pulled, pulled_template  # noqa: F401


def snapshot(d: Path) -> dict[str, bytes]:
    """Every file a reader can see (hidden directories such as huggingface_hub's .cache are not data)."""
    if not d.exists():
        return {}
    return {
        str(p.relative_to(d)): p.read_bytes()
        for p in sorted(d.rglob("*"))
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(d).parts)
    }


def only_one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error:"), proc.stderr
    return lines[0]


def stopped_pull(hub, tmp: Path, sig: int, *args: str) -> subprocess.CompletedProcess:
    """Start a pull, send `sig` while the CDN holds the first data file, then let the CDN go."""
    hub.hold_cdn = threading.Event()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcqa_prep", "pull", *args],
        cwd=tmp,
        env=_env(hub.url, tmp),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not any(path.startswith("/lfs/") for _, path in list(hub.requests)):
            assert time.monotonic() < deadline and proc.poll() is None, "the pull never reached the CDN"
            time.sleep(0.05)
        time.sleep(0.2)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        hub.hold_cdn.set()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


# -- a failed repair leaves the verified pull as it was -----------------------------------------------------------


def test_failed_force_download_keeps_the_verified_files(hub, tmp_path, pulled):
    before = snapshot(pulled)
    hub.cdn_status = 500
    proc = pull(hub.url, tmp_path, "--to", "d", "--force-download")
    assert proc.returncode == 1
    line = only_one_error_line(proc)  # no retry chatter from huggingface_hub
    assert "HTTP 500" in line and "could not be reached" not in line, line
    assert snapshot(pulled) == before
    hub.cdn_status = None
    assert pull(hub.url, tmp_path, "--to", "d", "--offline").returncode == 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_force_download_keeps_the_verified_files(hub, tmp_path, pulled, sig):
    before = snapshot(pulled)
    proc = stopped_pull(hub, tmp_path, sig, "--to", "d", "--force-download", "-q")
    assert proc.returncode == 1, proc.stderr
    assert snapshot(pulled) == before
    assert pull(hub.url, tmp_path, "--to", "d", "--offline").returncode == 0


# -- a failed first pull leaves nothing that looks like a dataset -------------------------------------------------


def test_failed_first_pull_leaves_no_data_and_names_the_size(hub, tmp_path):
    hub.size_lies = {DATA[1]: 7}
    proc = pull(hub.url, tmp_path, "--to", "d")
    assert proc.returncode == 1
    line = only_one_error_line(proc)
    assert "bytes" in line and "sha256 is" not in line, line  # the size differs, not the hash
    assert "prepare again" not in line and "pull" in line.split(":")[-1], line  # pull's fix, not prepare's
    assert snapshot(tmp_path / "d") == {}
    prep = subprocess.run(
        [sys.executable, "-m", "mcqa_prep", "prepare", "d", "-o", "out", "-q"],
        cwd=tmp_path,
        env=_env(hub.url, tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert prep.returncode != 0 and not (tmp_path / "out" / "manifest.json").exists()
    hub.size_lies = {}
    assert pull(hub.url, tmp_path, "--to", "d").returncode == 0  # and the next pull recovers


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_first_pull_writes_nothing(hub, tmp_path, sig):
    proc = stopped_pull(hub, tmp_path, sig, "--to", "d", "-q")
    assert proc.returncode == 1, proc.stderr
    assert snapshot(tmp_path / "d") == {}
    assert not (tmp_path / "d").exists() or not any((tmp_path / "d").iterdir())
    assert pull(hub.url, tmp_path, "--to", "d").returncode == 0


# -- one line, and the real cause -----------------------------------------------------------------------------------


def test_retries_of_a_flaky_hub_stay_off_stderr(hub, tmp_path):
    hub.resolve_errors = 2  # huggingface_hub retries these and logs each retry as a warning
    proc = pull(hub.url, tmp_path, "--to", "d", "-q")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_a_hub_that_answered_500_is_not_called_unreachable(hub, tmp_path):
    """huggingface_hub wraps a failed metadata request in LocalEntryNotFoundError ("check your connection");
    the HTTP status under it is the cause to report."""
    import httpx2
    from huggingface_hub import errors as hfe

    from mcqa_prep.pull.hub import HubClient

    client = HubClient(hub.url, "nvidia/Nemotron-RL-knowledge-mcqa")
    url = f"{hub.url}/datasets/nvidia/Nemotron-RL-knowledge-mcqa/resolve/main/README.md"
    response = httpx2.Response(500, request=httpx2.Request("HEAD", url))
    try:
        try:
            raise hfe.HfHubHTTPError("500 Server Error", response=response)
        except hfe.HfHubHTTPError as cause:
            raise hfe.LocalEntryNotFoundError("cannot find the requested files") from cause
    except hfe.LocalEntryNotFoundError as exc:
        err = client._translate(exc, hfe, httpx2, revision="main", path="README.md")
    assert "HTTP 500" in str(err) and "could not be reached" not in str(err)


def test_a_foreign_file_in_the_way_is_refused_in_one_line(hub, tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "README.md").write_text("my own notes\n")
    proc = pull(hub.url, tmp_path, "--to", "d")
    assert proc.returncode == 1
    line = only_one_error_line(proc)
    assert "no lock vouches for it" in line and "move" in line and "internal error" not in line, line
    assert (tmp_path / "d" / "README.md").read_text() == "my own notes\n"
