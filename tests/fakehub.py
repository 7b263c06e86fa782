"""A loopback stand-in for the Hugging Face hub, speaking the endpoints huggingface_hub uses to pull a dataset.

Two threaded stdlib HTTP servers on 127.0.0.1: the hub (API + `resolve`) and a "CDN" on another port, so that
LFS downloads take the real path: HEAD/GET resolve -> 302 to another origin carrying X-Linked-Etag/-Size.
Also: a builder for Parquet shards shaped like nvidia/Nemotron-RL-knowledge-mcqa (null-filled options).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

LETTERS = "ABCDEFGHIJ"


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fake_commit(label: str) -> str:
    return hashlib.sha1(f"commit {label}".encode()).hexdigest()


def lfs_pointer(data: bytes) -> bytes:
    return (
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256(data)}\nsize {len(data)}\n".encode()
    )


@dataclass
class FakeRepo:
    """A dataset repo: commits (sha -> {path: bytes}), branches and tags; optionally gated behind one token."""

    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    token: str | None = None  # gated: requests need "Authorization: Bearer <token>"
    lfs_suffixes: tuple[str, ...] = (".parquet",)

    def add_commit(self, label: str, files: dict[str, bytes], *, branch: str | None = "main") -> str:
        sha = fake_commit(label)
        self.commits[sha] = dict(files)
        if branch:
            self.branches[branch] = sha
        return sha

    def resolve(self, rev: str) -> str | None:
        if rev in self.branches:
            return self.branches[rev]
        if rev in self.tags:
            return self.tags[rev]
        return rev if rev in self.commits else None

    def is_lfs(self, path: str) -> bool:
        return path.endswith(self.lfs_suffixes)

    def entries(self, sha: str) -> list[dict[str, Any]]:
        """Tree entries for every file and folder at a commit, as the hub's tree API shows them."""
        files = self.commits[sha]
        out: dict[str, dict[str, Any]] = {}
        for path, data in files.items():
            parts = path.split("/")
            for i in range(1, len(parts)):
                d = "/".join(parts[:i])
                out.setdefault(
                    d,
                    {
                        "type": "directory",
                        "oid": hashlib.sha1(f"tree {sha} {d}".encode()).hexdigest(),
                        "size": 0,
                        "path": d,
                    },
                )
            if self.is_lfs(path):
                out[path] = {
                    "type": "file",
                    "oid": git_blob_sha1(lfs_pointer(data)),
                    "size": len(data),
                    "path": path,
                    "lfs": {"oid": sha256(data), "size": len(data), "pointerSize": len(lfs_pointer(data))},
                }
            else:
                out[path] = {"type": "file", "oid": git_blob_sha1(data), "size": len(data), "path": path}
        return [out[k] for k in sorted(out)]


def card_license(readme: bytes | None) -> str | None:
    if not readme:
        return None
    m = re.search(rb"^license:\s*(\S+)\s*$", readme, re.M)
    return m.group(1).decode() if m else None


class FakeHub:
    """Start with `with FakeHub() as hub:` (or start()/stop()); `hub.url` is the endpoint for HF_ENDPOINT."""

    def __init__(self, page_size: int = 2):
        self.repos: dict[str, FakeRepo] = {}
        self.page_size = page_size
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._servers: list[ThreadingHTTPServer] = []
        self.url = ""
        self.cdn_url = ""
        # faults a test injects: the CDN answers this HTTP status instead of the bytes; tree entries list a
        # size off by this many bytes; the CDN holds each download until this event is set (or 30 s pass).
        self.cdn_status: int | None = None
        self.size_lies: dict[str, int] = {}
        self.hold_cdn: threading.Event | None = None
        self.resolve_errors = 0  # the next this many `resolve` requests answer HTTP 500

    # lifecycle ------------------------------------------------------------------------------------------------
    def start(self) -> FakeHub:
        hub_srv = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self, cdn=False))
        cdn_srv = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self, cdn=True))
        for srv in (hub_srv, cdn_srv):
            srv.daemon_threads = True
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            self._servers.append(srv)
        self.url = f"http://127.0.0.1:{hub_srv.server_address[1]}"
        self.cdn_url = f"http://127.0.0.1:{cdn_srv.server_address[1]}"
        return self

    def stop(self) -> None:
        for srv in self._servers:
            srv.shutdown()
            srv.server_close()
        self._servers.clear()

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def log(self, method: str, path: str) -> None:
        with self._lock:
            self.requests.append((method, path))

    def reset_log(self) -> None:
        with self._lock:
            self.requests.clear()

    def blob(self, oid: str) -> bytes | None:
        for repo in self.repos.values():
            for files in repo.commits.values():
                for data in files.values():
                    if sha256(data) == oid:
                        return data
        return None


_API = re.compile(
    r"^/api/datasets/(?P<repo>[^/]+/[^/]+)(?:/(?P<op>revision|tree|paths-info|refs)(?:/(?P<rest>.*))?)?$"
)
_RESOLVE = re.compile(r"^/datasets/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")
_CDN = re.compile(r"^/lfs/(?P<oid>[0-9a-f]{64})$")


def _make_handler(hub: FakeHub, *, cdn: bool) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet test output
            pass

        # plumbing ---------------------------------------------------------------------------------------------
        def _send(
            self,
            status: int,
            body: bytes = b"",
            headers: dict[str, str] | None = None,
            content_type: str = "application/json",
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD" and body:
                self.wfile.write(body)

        def _json(self, status: int, doc: Any, headers: dict[str, str] | None = None) -> None:
            self._send(status, json.dumps(doc).encode(), headers)

        def _error(
            self, status: int, code: str | None, message: str, headers: dict[str, str] | None = None
        ) -> None:
            h = dict(headers or {})
            if code:
                h["X-Error-Code"] = code
            h["X-Error-Message"] = message
            self._json(status, {"error": message}, h)

        def _repo(self, repo_id: str) -> FakeRepo | None:
            repo = hub.repos.get(repo_id)
            if repo is None:
                self._error(404, "RepoNotFound", "Repository not found")
                return None
            if repo.token is not None:
                auth = self.headers.get("Authorization", "")
                if not auth:
                    self._error(
                        401,
                        "GatedRepo",
                        f"Access to dataset {repo_id} is restricted. You must be authenticated.",
                    )
                    return None
                if auth != f"Bearer {repo.token}":
                    self._error(
                        403,
                        "GatedRepo",
                        f"Access to dataset {repo_id} is restricted and you are not in the authorized list.",
                    )
                    return None
            return repo

        def _rev(self, repo: FakeRepo, rev: str) -> str | None:
            sha = repo.resolve(rev)
            if sha is None:
                self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
            return sha

        # verbs ------------------------------------------------------------------------------------------------
        def do_HEAD(self) -> None:  # noqa: N802
            self._dispatch()

        def do_GET(self) -> None:  # noqa: N802
            self._dispatch()

        def do_POST(self) -> None:  # noqa: N802
            self._dispatch()

        def _dispatch(self) -> None:
            hub.log(self.command, self.path)
            parts = urlsplit(self.path)
            if cdn:
                m = _CDN.match(parts.path)
                data = hub.blob(m.group("oid")) if m else None
                if data is None or self.command == "POST":
                    return self._send(404, b"NoSuchKey", content_type="text/plain")
                if hub.cdn_status is not None:
                    return self._send(hub.cdn_status, b"boom", content_type="text/plain")
                if hub.hold_cdn is not None:
                    hub.hold_cdn.wait(30)
                return self._send(
                    200, data, {"ETag": f'"{m.group("oid")}"'}, content_type="application/octet-stream"
                )
            if m := _RESOLVE.match(parts.path):
                with hub._lock:
                    fail, hub.resolve_errors = hub.resolve_errors > 0, max(hub.resolve_errors - 1, 0)
                if fail:
                    return self._send(500, b'{"error": "boom"}')
                return self._resolve(
                    unquote(m.group("repo")), unquote(m.group("rev")), unquote(m.group("path"))
                )
            if m := _API.match(parts.path):
                return self._api(
                    unquote(m.group("repo")), m.group("op"), m.group("rest"), parse_qs(parts.query)
                )
            self._send(404, b"Not Found", content_type="text/plain")

        def _api(self, repo_id: str, op: str | None, rest: str | None, query: dict[str, list[str]]) -> None:
            repo = self._repo(repo_id)
            if repo is None:
                return
            if op is None or op == "revision":
                if self.command != "GET":
                    return self._send(405)
                rev = unquote(rest) if op == "revision" and rest else "main"
                sha = self._rev(repo, rev)
                if sha is None:
                    return
                files = repo.commits[sha]
                return self._json(
                    200,
                    {
                        "_id": hashlib.md5(repo_id.encode()).hexdigest()[:24],
                        "id": repo_id,
                        "author": repo_id.split("/")[0],
                        "sha": sha,
                        "private": False,
                        "gated": "manual" if repo.token else False,
                        "disabled": False,
                        "downloads": 0,
                        "likes": 0,
                        "tags": [],
                        "lastModified": "2025-01-01T00:00:00.000Z",
                        "cardData": {"license": card_license(files.get("README.md"))},
                        "siblings": [{"rfilename": p} for p in sorted(files)],
                    },
                )
            if op == "refs":

                def refs(d: dict[str, str], kind: str) -> list[dict[str, str]]:
                    return [
                        {"name": k, "ref": f"refs/{kind}/{k}", "targetCommit": v}
                        for k, v in sorted(d.items())
                    ]

                doc = {
                    "branches": refs(repo.branches, "heads"),
                    "converts": [],
                    "tags": refs(repo.tags, "tags"),
                }
                if query.get("include_prs"):
                    doc["pullRequests"] = []
                return self._json(200, doc)
            rev_raw, _, sub = (rest or "").partition("/")
            sha = self._rev(repo, unquote(rev_raw))
            if sha is None:
                return
            entries = repo.entries(sha)
            for e in entries:
                if e["path"] in hub.size_lies:
                    e["size"] += hub.size_lies[e["path"]]
                    if "lfs" in e:
                        e["lfs"]["size"] += hub.size_lies[e["path"]]
            if op == "paths-info":
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                wanted = set(form.get("paths", []))
                return self._json(200, [e for e in entries if e["path"] in wanted])
            # tree: recursive or direct children of `sub`, paginated with a Link header
            prefix = unquote(sub).strip("/")
            recursive = (query.get("recursive", ["False"])[0]).lower() == "true"
            inside = [e for e in entries if not prefix or e["path"].startswith(prefix + "/")]
            if prefix and not inside:
                return self._error(404, "EntryNotFound", f"{prefix} does not exist on {rev_raw}")
            if not recursive:
                depth = prefix.count("/") + 1 if prefix else 0
                inside = [e for e in inside if e["path"].count("/") == depth]
            cursor = int(query.get("cursor", ["0"])[0])
            page = inside[cursor : cursor + hub.page_size]
            headers = {}
            if cursor + hub.page_size < len(inside):
                nxt = (
                    f"{hub.url}/api/datasets/{repo_id}/tree/{rev_raw}{'/' + sub if sub else ''}"
                    f"?recursive={recursive}&expand=False&cursor={cursor + hub.page_size}"
                )
                headers["Link"] = f'<{nxt}>; rel="next"'
            return self._json(200, page, headers)

        def _resolve(self, repo_id: str, rev: str, path: str) -> None:
            if self.command not in ("GET", "HEAD"):
                return self._send(405)
            repo = self._repo(repo_id)
            if repo is None:
                return
            sha = self._rev(repo, rev)
            if sha is None:
                return
            data = repo.commits[sha].get(path)
            if data is None:
                return self._error(
                    404, "EntryNotFound", f"{path} does not exist on {rev}", {"X-Repo-Commit": sha}
                )
            if repo.is_lfs(path):
                oid = sha256(data)
                return self._send(
                    302,
                    b"",
                    {
                        "Location": f"{hub.cdn_url}/lfs/{oid}?X-Amz-Signature=fake&response-content-disposition="
                        + quote(f'attachment; filename="{path.rsplit("/", 1)[-1]}"'),
                        "X-Repo-Commit": sha,
                        "X-Linked-Etag": f'"{oid}"',
                        "X-Linked-Size": str(len(data)),
                        "ETag": f'"{git_blob_sha1(lfs_pointer(data))}"',
                    },
                    content_type="text/plain",
                )
            return self._send(
                200,
                data,
                {"X-Repo-Commit": sha, "ETag": f'"{git_blob_sha1(data)}"'},
                content_type="text/plain; charset=utf-8",
            )

    return Handler


# --------------------------------------------------------------------------------------------------------------
# data shaped like nvidia/Nemotron-RL-knowledge-mcqa


def mcqa_rows(n: int, *, seed: int = 0, n_options: int = 4) -> list[dict[str, Any]]:
    """Rows like the real dataset's: one user message, options as single-letter dicts, a gold letter."""
    rows = []
    for i in range(n):
        k = seed * 1000 + i
        letters = LETTERS[: min(10, n_options + (k % 3) * 3)]
        options = [{ch: f"option {ch.lower()} of question {k}"} for ch in letters]
        gold = letters[k % len(letters)]
        lines = "\n".join(f"{ch}) {next(iter(o.values()))}" for ch, o in zip(letters, options, strict=True))
        prompt = (
            "Answer the following multiple choice question. The last line of your response should be of the "
            f"following format: 'Answer: \\boxed{{LETTER}}'.\n\nWhich is option {gold.lower()} of question {k}?\n\n"
            f"{lines}"
        )
        rows.append(
            {
                "responses_create_params": {"input": [{"role": "user", "content": prompt}]},
                "options": options,
                "expected_answer": gold,
                "uuid": hashlib.md5(f"row {k}".encode()).hexdigest(),
                "grading_mode": "strict_single_letter_boxed" if k % 2 else None,
                "template_metadata": {
                    "template_id": f"tpl-{k % 3}",
                    "output_regex": None if k % 2 else r"Answer:\s*\\boxed\{([A-J])\}",
                },
                "metadata": {"source": "fakehub", "index": k},
            }
        )
    return rows


def parquet_bytes(rows: list[dict[str, Any]]) -> bytes:
    """Parquet as the hub's converter writes it: every options element a struct with all keys A..J, nulls
    for the absent letters."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    options_type = pa.list_(pa.struct([(ch, pa.string()) for ch in LETTERS]))
    filled = [{**r, "options": [{ch: o.get(ch) for ch in LETTERS} for o in r["options"]]} for r in rows]
    table = pa.Table.from_pylist(filled)
    table = table.set_column(
        table.schema.get_field_index("options"),
        "options",
        pa.array([r["options"] for r in filled], type=options_type),
    )
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


README = b"""---
license: cc-by-4.0
task_categories:
- question-answering
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train-*
  - split: validation
    path: data/validation-*
---

# Fake Nemotron-RL-knowledge-mcqa

Served by tests/fakehub.py.
"""


def nemotron_like_repo() -> tuple[FakeRepo, str, str]:
    """A repo with two commits on main: c1 (2 train shards + 1 validation shard + README), then c2 where
    the validation shard changed and a test shard was added. main points at c1; `repo.branches['main'] = c2`
    moves it upstream."""
    repo = FakeRepo()
    v1 = {
        "README.md": README,
        ".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n",
        "data/train-00000-of-00002.parquet": parquet_bytes(mcqa_rows(5, seed=1)),
        "data/train-00001-of-00002.parquet": parquet_bytes(mcqa_rows(4, seed=2)),
        "data/validation-00000-of-00001.parquet": parquet_bytes(mcqa_rows(3, seed=3)),
    }
    c1 = repo.add_commit("v1", v1)
    v2 = {
        **v1,
        "data/validation-00000-of-00001.parquet": parquet_bytes(mcqa_rows(6, seed=4)),
        "data/test-00000-of-00001.parquet": parquet_bytes(mcqa_rows(2, seed=5)),
    }
    c2 = repo.add_commit("v2", v2, branch=None)
    repo.tags["v1.0"] = c1
    return repo, c1, c2
