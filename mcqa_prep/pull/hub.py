"""The hub client: the only module that imports huggingface_hub, and it does so lazily (a pull that its
lock can answer never imports it, so it cannot touch the network). It resolves revisions to commits,
lists and downloads files, and turns the hub's failures into one-line HubErrors. The pull workflow that
uses it lives in run.py."""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, TypeGuard

from .._version import __version__
from ..errors import HubError, InputError, IntegrityError, LockMismatch, UsageError
from ..io.paths import is_parquet
from . import lock as locks

DEFAULT_REPO = "nvidia/Nemotron-RL-knowledge-mcqa"
DEFAULT_REVISION = "main"
DEFAULT_ENDPOINT = "https://huggingface.co"
REPO_TYPE = "dataset"
README = "README.md"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_TRUE = {"1", "true", "yes", "on"}


def endpoint_from_env() -> str:
    """HF_ENDPOINT read at call time (huggingface_hub reads it once at import), passed explicitly to every call."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def offline_from_env() -> bool:
    """HF_HUB_OFFLINE=1 means the same as --offline: the user has said there is no network."""
    return (os.environ.get("HF_HUB_OFFLINE") or "").strip().lower() in _TRUE


def default_dir(repo: str) -> Path:
    """`./Nemotron-RL-knowledge-mcqa` for `nvidia/Nemotron-RL-knowledge-mcqa`."""
    return Path(repo.rsplit("/", 1)[-1])


def is_commit(revision: str | None) -> TypeGuard[str]:
    return bool(revision) and _COMMIT.match(revision) is not None  # type: ignore[arg-type]  # (not empty)


@dataclass(frozen=True)
class RemoteFile:
    """A file of the repo at one commit, with the hash the hub vouches for."""

    path: str
    size: int
    lfs: bool
    hash: str

    @property
    def hash_kind(self) -> str:
        return locks.hash_kind_for(lfs=self.lfs)

    @property
    def split(self) -> str | None:
        return locks.split_of(self.path) if locks.is_data_path(self.path) else None

    def entry(self, rows: int | None) -> dict[str, Any]:
        return {
            "path": self.path,
            "split": self.split,
            "size": self.size,
            "hash_kind": self.hash_kind,
            "hash": self.hash,
            "rows": rows,
        }


def _hf():
    """Import huggingface_hub on first use, with Xet off unless the user opted in (HF_HUB_DISABLE_XET=0).

    Why: with Xet off, downloads take the plain resolve -> CDN path that the tests exercise, and no extra chunk
    cache is written under HF_HOME; the bytes are verified against the hub's hashes either way.
    """
    os.environ.setdefault("HF_HUB_DISABLE_XET", "1")
    # A pull talks to the endpoints it needs and no others (huggingface_hub would otherwise also fetch a
    # telemetry registry from the endpoint); users can opt back in with HF_HUB_DISABLE_TELEMETRY=0.
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    import huggingface_hub

    _quiet_library_logging()
    return huggingface_hub


def _quiet_library_logging() -> None:
    """huggingface_hub logs its retries and resumes as warnings on stderr ("Retrying in 8s", "Trying to resume
    download..."); a pull's failure is one line of its own, so those records are dropped unless
    MCQA_PREP_DEBUG is set (then they show, to diagnose a flaky hub)."""
    if os.environ.get("MCQA_PREP_DEBUG"):
        return
    logging.getLogger("huggingface_hub").setLevel(logging.CRITICAL + 1)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


class HubClient:
    """Thin wrapper over HfApi / hf_hub_download for one repo; translates hub failures into HubError."""

    def __init__(self, endpoint: str, repo: str):
        hf = _hf()
        self.endpoint = endpoint
        self.repo = repo
        self.api = hf.HfApi(endpoint=endpoint, library_name="mcqa-prep", library_version=__version__)

    @contextlib.contextmanager
    def errors(self, *, revision: str | None = None, path: str | None = None) -> Iterator[None]:
        import httpx2
        from huggingface_hub import errors as hfe

        try:
            yield
        except (HubError, UsageError, IntegrityError, LockMismatch, InputError):
            raise
        except Exception as exc:  # noqa: BLE001 - every hub failure must become one clear line
            raise self._translate(exc, hfe, httpx2, revision=revision, path=path) from exc

    def _translate(self, exc: Exception, hfe, httpx2, *, revision: str | None, path: str | None) -> Exception:
        where = f"dataset {self.repo} at {self.endpoint}"
        for e in _chain(exc):
            status = getattr(getattr(e, "response", None), "status_code", None)
            if isinstance(e, hfe.GatedRepoError) or (
                isinstance(e, hfe.HfHubHTTPError) and status in (401, 403)
            ):
                if status == 403:
                    return HubError(
                        f"access to {where} refused (403): the token in HF_TOKEN has no access to it; "
                        "request access on the dataset page or use a token that has it"
                    )
                return HubError(
                    f"access to {where} denied (401): it is gated or private; "
                    "set HF_TOKEN to a token with access (or log in with `hf auth login`)"
                )
            if isinstance(e, hfe.RevisionNotFoundError):
                return HubError(f"revision {revision!r} not found in {where}{self._refs_hint()}")
            if isinstance(e, hfe.RepositoryNotFoundError):
                return HubError(
                    f"{where}: not found (check the name; if it is private, set HF_TOKEN to a token with access)"
                )
            if isinstance(e, hfe.RemoteEntryNotFoundError):
                return HubError(f"{where}: file {path!r} not found at {revision}")
            if isinstance(e, hfe.OfflineModeIsEnabled):
                return HubError("HF_HUB_OFFLINE is set: the hub cannot be reached", reason="hub_offline_env")
            if isinstance(
                e, (httpx2.ConnectError, httpx2.TimeoutException, httpx2.NetworkError, httpx2.ProxyError)
            ):
                return HubError(
                    f"cannot reach the hub at {self.endpoint} ({type(e).__name__}: {_one_line(e)})",
                    reason="hub_unreachable",
                )
            if isinstance(e, hfe.HfHubHTTPError) and status is not None:
                return HubError(f"{where}: the hub answered HTTP {status} ({_one_line(e)})")
            if isinstance(e, hfe.HFValidationError):
                return UsageError(f"{self.repo!r} is not a valid repo id: {_one_line(e)}")
        # Last, because huggingface_hub wraps every failed metadata request in it, including a hub that
        # answered (an HTTP status or a connection error further down the chain is the real cause).
        if any(isinstance(e, hfe.LocalEntryNotFoundError) for e in _chain(exc)):
            return HubError(f"cannot download {path!r} from {where}: the hub could not be reached; try again")
        return HubError(f"{where}: {type(exc).__name__}: {_one_line(exc)}")

    def _refs_hint(self) -> str:
        """'(branches: main, dev; tags: v1)' so a mistyped revision can be fixed without a browser."""
        try:
            refs = self.api.list_repo_refs(self.repo, repo_type=REPO_TYPE)
        except Exception:  # noqa: BLE001 - the hint is optional
            return ""
        branches = ", ".join(sorted(r.name for r in refs.branches)) or "none"
        tags = ", ".join(sorted(r.name for r in refs.tags)) or "none"
        return f" (branches: {branches}; tags: {tags})"

    def resolve(self, revision: str) -> tuple[str, str | None]:
        """Revision -> (40-hex commit, card license); an explicit commit is checked to exist too."""
        with self.errors(revision=revision):
            info = self.api.dataset_info(self.repo, revision=revision)
        sha = getattr(info, "sha", None)
        if not is_commit(sha):
            raise HubError(
                f"dataset {self.repo} at {self.endpoint}: revision {revision!r} did not resolve to a commit"
            )
        card = getattr(info, "card_data", None)
        lic = card.get("license") if card is not None else None
        return sha, _license_str(lic)

    def list_files(self, commit: str) -> list[RemoteFile]:
        """Every file of the repo at `commit` (recursive tree listing, all pages)."""
        out = []
        with self.errors(revision=commit):
            for item in self.api.list_repo_tree(
                self.repo, recursive=True, revision=commit, repo_type=REPO_TYPE
            ):
                if not hasattr(item, "blob_id"):  # a folder
                    continue
                lfs = item.lfs
                if lfs is not None:
                    out.append(RemoteFile(item.path, int(lfs.size), True, str(lfs.sha256).lower()))
                else:
                    out.append(RemoteFile(item.path, int(item.size), False, str(item.blob_id).lower()))
        for f in out:
            _check_safe_path(f.path, self.repo)
        return out

    def download(self, commit: str, path: str, dest: Path, tqdm_class: Any = None) -> Path:
        """Download one file at `commit` into dest/path (huggingface_hub's local_dir mode)."""
        hf = _hf()
        with self.errors(revision=commit, path=path):
            got = hf.hf_hub_download(
                self.repo,
                path,
                repo_type=REPO_TYPE,
                revision=commit,
                local_dir=dest,
                endpoint=self.endpoint,
                library_name="mcqa-prep",
                library_version=__version__,
                tqdm_class=tqdm_class,
            )
        return Path(got)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] + ("…" if len(text) > 200 else "")


def _license_str(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or None
    return str(value)


def _check_safe_path(path: str, repo: str) -> None:
    """A repo path must stay inside the target directory (it becomes a local path)."""
    p = PurePosixPath(path)
    if p.is_absolute() or "\\" in path or any(part in ("..", ".") for part in p.parts):
        raise HubError(f"dataset {repo}: refusing unsafe file path {path!r} from the hub")


def readme_license(path: Path) -> str | None:
    """`license:` of a pulled dataset card, read by huggingface_hub's own card-metadata parser (the YAML
    block the hub reads; `metadata_load` reads the local file and never the network, which the card class's
    `load` would try for a path that is missing). None when the card has no license or its metadata block
    cannot be read (the lock then records the license the hub's API reported)."""
    import yaml
    from huggingface_hub import metadata_load

    try:
        meta = metadata_load(path)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError):
        return None
    return _license_str(meta.get("license")) if isinstance(meta, dict) else None


def parquet_rows(path: Path) -> int | None:
    """Row count from the Parquet footer (cheap: reads only the footer); None when it cannot be read."""
    if not is_parquet(path):
        return None
    try:
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(path).metadata.num_rows)
    except Exception:  # noqa: BLE001 - a bad shard is validate's business, not pull's
        return None


class ByteForwarder:
    """A tqdm stand-in for hf_hub_download that forwards byte counts to one aggregate bar."""

    bar: Any = None

    def __init__(self, *args: Any, **kwargs: Any):
        pass

    def __enter__(self) -> ByteForwarder:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def update(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        pass
