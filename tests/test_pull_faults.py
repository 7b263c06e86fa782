"""`pull` when the hub fails or the run is stopped half-way: the target directory is left as it was (a
verified pull stays verified; a first pull leaves nothing a reader would take for a dataset), and the failure
is one line that names its real cause."""

from __future__ import annotations

try:  # tests/ as a package or as a rootdir-relative directory
    from .test_pull import hub, pull  # noqa: F401
except ImportError:
    from test_pull import hub, pull  # noqa: F401


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

    from mcqa_prep.hub import HubClient

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
