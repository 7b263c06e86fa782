"""`mcqa-prep pull` against a loopback fake hub (tests/fakehub.py); no test reaches the internet.

Hub-facing tests run the CLI in a subprocess: huggingface_hub reads HF_ENDPOINT and friends once, at import,
so each run gets a fresh process with the fake hub's endpoint, Xet and telemetry off, and HF_HOME in tmp.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jsonschema import Draft202012Validator

from mcqa_prep import errors
from mcqa_prep.pull import hub as hub_mod
from mcqa_prep.pull import lock as locks

try:  # tests/ as a package or as a rootdir-relative directory
    from .fakehub import FakeHub, FakeRepo, git_blob_sha1, nemotron_like_repo, sha256
    from .pull_helpers import write_pulled
except ImportError:
    from fakehub import FakeHub, FakeRepo, git_blob_sha1, nemotron_like_repo, sha256
    from pull_helpers import write_pulled

REPO = "nvidia/Nemotron-RL-knowledge-mcqa"
GATED = "acme/gated-mcqa"
TOKEN = "hf_fake_good_token"
ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "schemas" / "pull-lock.v1.schema.json").read_text())
DATA = [
    "data/train-00000-of-00002.parquet",
    "data/train-00001-of-00002.parquet",
    "data/validation-00000-of-00001.parquet",
]


@pytest.fixture
def hub():
    h = FakeHub(page_size=2)  # small pages: the tree listing needs the Link header to be complete
    repo, c1, c2 = nemotron_like_repo()
    h.repos[REPO] = repo
    gated, _, _ = nemotron_like_repo()
    gated.token = TOKEN
    h.repos[GATED] = gated
    h.c1, h.c2, h.repo = c1, c2, repo
    h.start()
    yield h
    h.stop()


@pytest.fixture(scope="module")
def pulled_template(tmp_path_factory):
    """One real pull per module; tests that start from a pulled directory get a copy (the fake hub's content
    is deterministic, so every per-test hub serves the same commits and bytes)."""
    tmp = tmp_path_factory.mktemp("template")
    with FakeHub() as h:
        h.repos[REPO] = nemotron_like_repo()[0]
        proc = pull(h.url, tmp, "--to", "d")
    assert proc.returncode == 0, proc.stderr
    return tmp / "d"


@pytest.fixture
def pulled(pulled_template, tmp_path) -> Path:
    """tmp_path/d: a directory pulled (main at c1, all splits) by `mcqa-prep pull`."""
    shutil.copytree(pulled_template, tmp_path / "d", symlinks=True)
    return tmp_path / "d"


def _env(endpoint: str, tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(
        HF_ENDPOINT=endpoint,
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HOME=str(tmp / "hf-home"),
        HF_HUB_ETAG_TIMEOUT="5",
        PYTHONPATH=str(ROOT),
    )
    env.update(extra)
    return env


def pull(
    endpoint: str, tmp: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcqa_prep", "pull", *args],
        cwd=tmp,
        env=env or _env(endpoint, tmp),
        capture_output=True,
        text=True,
        timeout=120,
    )


def lock_of(d: Path) -> dict:
    return json.loads((d / locks.LOCK_NAME).read_text())


def error_lines(proc: subprocess.CompletedProcess) -> list[str]:
    return [ln for ln in proc.stderr.splitlines() if ln.startswith("Error:")]


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# -- fresh pull -------------------------------------------------------------------------------------------------


def test_fresh_pull_downloads_verifies_and_locks(hub, tmp_path):
    proc = pull(hub.url, tmp_path)  # default repo, default revision, default directory
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "Nemotron-RL-knowledge-mcqa"
    served = hub.repo.commits[hub.c1]
    for path in ["README.md", *DATA]:
        assert (out / path).read_bytes() == served[path]
    assert not (out / ".gitattributes").exists()

    lock = lock_of(out)
    Draft202012Validator(SCHEMA).validate(lock)
    assert lock["repo"] == REPO and lock["repo_type"] == "dataset"
    assert lock["requested_revision"] == "main" and lock["commit"] == hub.c1
    assert lock["endpoint"] == hub.url and lock["license"] == "cc-by-4.0" and lock["splits"] is None
    by_path = {f["path"]: f for f in lock["files"]}
    assert list(by_path) == sorted(["README.md", *DATA])
    assert by_path["README.md"] == {
        "path": "README.md",
        "split": None,
        "size": len(served["README.md"]),
        "hash_kind": "git-blob-sha1",
        "hash": git_blob_sha1(served["README.md"]),
        "rows": None,
    }
    for path, split, rows in zip(DATA, ["train", "train", "validation"], [5, 4, 3], strict=True):
        assert by_path[path] == {
            "path": path,
            "split": split,
            "size": len(served[path]),
            "hash_kind": "sha256",
            "hash": sha256(served[path]),
            "rows": rows,
        }

    assert f"pulled {REPO}@main -> commit {hub.c1}" in proc.stdout
    assert "splits: train 9 rows in 2 files; validation 3 rows in 1 file" in proc.stdout
    assert "license: cc-by-4.0" in proc.stdout
    for path in DATA:
        assert path in proc.stdout
    # the real download path: paginated tree, HEAD resolve, 302 to the CDN origin for LFS files
    paths = [p for _, p in hub.requests]
    assert any("cursor=" in p for p in paths)
    assert any(m == "HEAD" and "/resolve/" + hub.c1 in p for m, p in hub.requests)
    assert any(p.startswith("/lfs/") for p in paths)


def test_served_parquet_has_null_filled_options(hub):
    table = pq.read_table(pa.BufferReader(hub.repo.commits[hub.c1][DATA[0]]))
    options_type = table.schema.field("options").type
    assert [f.name for f in options_type.value_type] == list("ABCDEFGHIJ")
    first = table.column("options").to_pylist()[0]
    assert first[0]["A"] is not None and first[0]["B"] is None and first[1]["B"] is not None


# -- re-runs ----------------------------------------------------------------------------------------------------


def test_rerun_with_lock_needs_no_network(hub, tmp_path, pulled):
    hub.reset_log()
    proc = pull(hub.url, tmp_path, "--to", "d")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"verified, offline: {REPO}@{hub.c1}")
    proc = pull(hub.url, tmp_path, "--to", "d", "--revision", hub.c1)  # the locked commit, spelled out
    assert proc.returncode == 0 and "verified, offline" in proc.stdout
    assert hub.requests == []


def test_offline_never_touches_the_network(hub, tmp_path, pulled):
    url = hub.url
    hub.stop()
    proc = pull(url, tmp_path, "--to", "d", "--offline")
    assert proc.returncode == 0, proc.stderr
    assert "verified, offline" in proc.stdout
    # a branch name cannot be re-resolved offline: the lock is used, and the output says so
    proc = pull(url, tmp_path, "--to", "d", "--offline", "--revision", "main")
    assert proc.returncode == 0, proc.stderr
    assert "not re-resolved" in proc.stdout


def test_offline_path_does_not_need_huggingface_hub(hub, tmp_path, pulled):
    """The lock-only path must work even where huggingface_hub cannot be imported at all."""
    code = (
        "import sys; sys.modules['huggingface_hub'] = None\n"
        "from mcqa_prep import pull\n"
        "r = pull.pull(to=sys.argv[1], offline=True); print(r.status)\n"
        "r = pull.pull(to=sys.argv[1]); print(r.status)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "d")],
        cwd=ROOT,
        env=_env(hub.url, tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["verified, offline", "verified, offline"]


def test_hf_hub_offline_env_means_offline(hub, tmp_path, pulled):
    hub.reset_log()
    proc = pull(
        hub.url, tmp_path, "--to", "d", "--revision", "main", env=_env(hub.url, tmp_path, HF_HUB_OFFLINE="1")
    )
    assert proc.returncode == 0, proc.stderr
    assert hub.requests == []


def test_offline_without_lock_is_refused(hub, tmp_path):
    proc = pull(hub.url, tmp_path, "--to", "d", "--offline")
    assert proc.returncode == 1
    assert error_lines(proc) == [
        f"Error: d: no {locks.LOCK_NAME} to use offline; pull once without --offline"
    ]
    assert hub.requests == []


def test_branch_rerun_resolves_and_reports_up_to_date(hub, tmp_path, pulled):
    hub.reset_log()
    proc = pull(hub.url, tmp_path, "--to", "d", "--revision", "main")
    assert proc.returncode == 0, proc.stderr
    assert f"up to date: {REPO}@main is still {hub.c1}" in proc.stdout
    assert [p for _, p in hub.requests if "/resolve/" in p or "/lfs/" in p] == []


def test_corrupted_file_is_refused_naming_both_hashes_then_force_download_repairs(hub, tmp_path, pulled):
    shard = tmp_path / "d" / DATA[1]
    good = shard.read_bytes()
    bad = good[:100] + bytes([good[100] ^ 0xFF]) + good[101:]
    shard.write_bytes(bad)
    proc = pull(hub.url, tmp_path, "--to", "d")
    assert proc.returncode == 1
    [line] = error_lines(proc)
    assert f"d/{DATA[1]}" in line
    assert sha256(bad) in line and sha256(good) in line
    assert "--force-download" in line
    assert shard.read_bytes() == bad  # refused, not silently replaced

    proc = pull(hub.url, tmp_path, "--to", "d", "--force-download")
    assert proc.returncode == 0, proc.stderr
    assert shard.read_bytes() == good
    assert pull(hub.url, tmp_path, "--to", "d").returncode == 0


def test_missing_file_is_refused(hub, tmp_path, pulled):
    (tmp_path / "d" / DATA[2]).unlink()
    proc = pull(hub.url, tmp_path, "--to", "d", "--offline")
    assert proc.returncode == 1
    assert "missing" in proc.stderr and DATA[2] in proc.stderr and "--force-download" in proc.stderr


def test_upstream_moved_is_refused_then_update_moves_the_lock(hub, tmp_path, pulled):
    before = lock_of(tmp_path / "d")
    hub.repo.branches["main"] = hub.c2

    proc = pull(hub.url, tmp_path, "--to", "d", "--revision", "main")
    assert proc.returncode == 1
    assert hub.c1 in proc.stderr and hub.c2 in proc.stderr
    assert "added: data/test-00000-of-00001.parquet" in proc.stderr
    assert "changed: data/validation-00000-of-00001.parquet" in proc.stderr
    [line] = error_lines(proc)
    assert "(1 added, 0 removed, 1 changed)" in line and "--update" in line
    assert lock_of(tmp_path / "d") == before

    proc = pull(hub.url, tmp_path, "--to", "d", "--revision", "main", "--update")
    assert proc.returncode == 0, proc.stderr
    assert f"updated {REPO}@main -> commit {hub.c2}" in proc.stdout
    assert f"previous commit {hub.c1}" in proc.stdout
    assert "added: data/test-00000-of-00001.parquet" in proc.stdout
    assert "changed: data/validation-00000-of-00001.parquet" in proc.stdout
    after = lock_of(tmp_path / "d")
    assert after["commit"] == hub.c2
    assert (tmp_path / "d" / "data/test-00000-of-00001.parquet").read_bytes() == hub.repo.commits[hub.c2][
        "data/test-00000-of-00001.parquet"
    ]

    # upstream removes a file: --update (re-resolving the locked branch) removes it and says so
    files = dict(hub.repo.commits[hub.c2])
    del files["data/test-00000-of-00001.parquet"]
    c3 = hub.repo.add_commit("v3", files)
    proc = pull(hub.url, tmp_path, "--to", "d", "--update", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["status"] == "updated" and doc["commit"] == c3 and doc["previous_commit"] == hub.c2
    assert doc["changes"] == {"added": [], "removed": ["data/test-00000-of-00001.parquet"], "changed": []}
    assert not (tmp_path / "d" / "data/test-00000-of-00001.parquet").exists()


def test_other_repo_in_a_pulled_dir_is_refused(hub, tmp_path, pulled):
    proc = pull(hub.url, tmp_path, "someone/else", "--to", "d")
    assert proc.returncode == 1
    assert error_lines(proc) == [
        f"Error: d holds a pull of {REPO}, not someone/else; pull into another directory with --to"
    ]


# -- hub errors: one clear line each, exit 1 ---------------------------------------------------------------------


def test_unknown_repo(hub, tmp_path):
    proc = pull(hub.url, tmp_path, "acme/does-not-exist")
    assert proc.returncode == 1
    assert error_lines(proc) == [
        f"Error: dataset acme/does-not-exist at {hub.url}: not found "
        "(check the name; if it is private, set HF_TOKEN to a token with access)"
    ]
    assert "Traceback" not in proc.stderr


def test_unknown_revision(hub, tmp_path):
    proc = pull(hub.url, tmp_path, "--revision", "no-such-branch")
    assert proc.returncode == 1
    assert error_lines(proc) == [
        f"Error: revision 'no-such-branch' not found in dataset {REPO} at {hub.url} (branches: main; tags: v1.0)"
    ]


def test_tag_resolves_to_its_commit(hub, tmp_path):
    hub.repo.branches["main"] = hub.c2
    proc = pull(hub.url, tmp_path, "--revision", "v1.0", "--to", "d")
    assert proc.returncode == 0, proc.stderr
    lock = lock_of(tmp_path / "d")
    assert lock["requested_revision"] == "v1.0" and lock["commit"] == hub.c1


def test_gated_without_token_is_401(hub, tmp_path):
    proc = pull(hub.url, tmp_path, GATED)
    assert proc.returncode == 1
    [line] = error_lines(proc)
    assert line.startswith(f"Error: access to dataset {GATED} at {hub.url} denied (401)")
    assert "HF_TOKEN" in line


def test_gated_with_wrong_token_is_403(hub, tmp_path):
    proc = pull(hub.url, tmp_path, GATED, env=_env(hub.url, tmp_path, HF_TOKEN="hf_wrong"))
    assert proc.returncode == 1
    [line] = error_lines(proc)
    assert line.startswith(f"Error: access to dataset {GATED} at {hub.url} refused (403)")


def test_gated_with_token_from_environment(hub, tmp_path):
    proc = pull(hub.url, tmp_path, GATED, "--to", "g", env=_env(hub.url, tmp_path, HF_TOKEN=TOKEN))
    assert proc.returncode == 0, proc.stderr
    assert lock_of(tmp_path / "g")["repo"] == GATED


def test_unreachable_endpoint(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}"
    proc = pull(url, tmp_path)
    assert proc.returncode == 1
    [line] = error_lines(proc)
    assert line.startswith(f"Error: cannot reach the hub at {url} (ConnectError")
    assert "--offline" in line
    assert len(proc.stderr.strip().splitlines()) == 1


def test_invalid_repo_id_is_a_usage_error(tmp_path):
    proc = pull("http://127.0.0.1:9", tmp_path, "not a repo")
    assert proc.returncode == 2
    assert "is not a hub repo id" in proc.stderr


# -- splits, json ------------------------------------------------------------------------------------------------


def test_split_filter_and_growing_selection(hub, tmp_path):
    proc = pull(hub.url, tmp_path, "--to", "d", "--split", "validation")
    assert proc.returncode == 0, proc.stderr
    lock = lock_of(tmp_path / "d")
    assert [f["path"] for f in lock["files"]] == ["README.md", DATA[2]]
    assert lock["splits"] == ["validation"]
    assert not (tmp_path / "d" / DATA[0]).exists()

    hub.reset_log()
    assert pull(hub.url, tmp_path, "--to", "d", "--split", "validation").returncode == 0
    assert hub.requests == []  # covered by the lock

    proc = pull(hub.url, tmp_path, "--to", "d", "--split", "train")
    assert proc.returncode == 0, proc.stderr
    lock = lock_of(tmp_path / "d")
    assert lock["splits"] == ["train", "validation"] and lock["commit"] == hub.c1
    assert [f["path"] for f in lock["files"]] == sorted(["README.md", *DATA])

    proc = pull(hub.url, tmp_path, "--to", "e", "--split", "nope")
    assert proc.returncode == 2
    assert "no split 'nope'" in proc.stderr and "splits: train, validation" in proc.stderr


def test_format_json(hub, tmp_path):
    proc = pull(hub.url, tmp_path, "--to", "d", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["status"] == "pulled" and doc["network"] is True and doc["lock_written"] is True
    assert doc["repo"] == REPO and doc["commit"] == hub.c1 and doc["requested_revision"] == "main"
    assert doc["splits"] == {
        "train": {"files": 2, "rows": 9, "bytes": doc["splits"]["train"]["bytes"]},
        "validation": {"files": 1, "rows": 3, "bytes": doc["splits"]["validation"]["bytes"]},
    }
    assert {f["action"] for f in doc["files"]} == {"downloaded"}
    assert doc["lock_file"].endswith(locks.LOCK_NAME)

    doc = json.loads(pull(hub.url, tmp_path, "--to", "d", "--format", "json").stdout)
    assert doc["status"] == "verified, offline" and doc["network"] is False and doc["lock_written"] is False
    assert {f["action"] for f in doc["files"]} == {"verified"}


def test_tampered_lock_is_refused(hub, tmp_path, pulled):
    path = tmp_path / "d" / locks.LOCK_NAME
    doc = json.loads(path.read_text())
    doc["commit"] = "main"
    path.write_text(json.dumps(doc))
    proc = pull(hub.url, tmp_path, "--to", "d")
    assert proc.returncode == 1
    [line] = error_lines(proc)
    assert "$.commit" in line and "[pull-lock.v1]" in line


# -- mcqa_prep.pull.lock, in process (no hub) --------------------------------------------------------------------------


def _pulled_dir(tmp_path: Path) -> Path:
    """A pulled directory written by hand: what validate/prepare will read."""
    repo, c1, _ = nemotron_like_repo()
    files = {path: data for path, data in sorted(repo.commits[c1].items()) if path != ".gitattributes"}
    small = {path for path in files if not repo.is_lfs(path)}
    return write_pulled(tmp_path / "pulled", files, small=small, commit=c1, license="cc-by-4.0")


def test_lock_schema_is_draft_2020_12_with_id():
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["$id"].endswith("/pull-lock.v1.schema.json")


def test_lock_api_for_downstream(tmp_path):
    d = _pulled_dir(tmp_path)
    assert locks.is_pulled_dir(d) and not locks.is_pulled_dir(tmp_path)
    lock = locks.read_lock(d)
    summary = locks.verify_pulled_dir(d)
    assert summary["commit"] == lock["commit"] and summary["files"] == 4
    assert locks.data_files(d, lock) == [
        (d / p, s) for p, s in zip(DATA, ["train", "train", "validation"], strict=True)
    ]
    assert locks.data_files(d, lock, ["validation"]) == [(d / DATA[2], "validation")]
    with pytest.raises(errors.UsageError, match="no split 'test'"):
        locks.data_files(d, lock, ["test"])
    prov = locks.provenance(lock)
    assert prov["commit"] == lock["commit"] and len(prov["files"]) == 4


def test_verify_pulled_dir_names_file_both_hashes_and_fix(tmp_path):
    d = _pulled_dir(tmp_path)
    readme = d / "README.md"
    expected = git_blob_sha1(readme.read_bytes())
    readme.write_bytes(readme.read_bytes() + b"\nedited\n")
    with pytest.raises(errors.IntegrityError) as exc:
        locks.verify_pulled_dir(d)
    msg = str(exc.value)
    assert str(readme) in msg and expected in msg and git_blob_sha1(readme.read_bytes()) in msg
    assert "--" not in msg  # the library names no flag; the CLI adds the fix
    from mcqa_prep.cli.errors import hint

    assert hint(exc.value) == f"fetch the locked bytes again with `mcqa-prep pull --to {d} --force-download`"


def test_verify_pulled_dir_reports_progress(tmp_path):
    d = _pulled_dir(tmp_path)
    seen = []

    class Bar:
        def __init__(self, **kw):
            seen.append(kw)
            self.n = 0

        def update(self, n):
            self.n += n

        def close(self):
            seen.append(self.n)

    locks.verify_pulled_dir(d, progress=lambda **kw: Bar(**kw))
    total = sum(f["size"] for f in locks.read_lock(d)["files"])
    assert seen == [{"total": total, "desc": "verify", "unit": "B"}, total]


def test_read_lock_errors(tmp_path):
    with pytest.raises(errors.InputError, match="not a pulled directory"):
        locks.read_lock(tmp_path)
    (tmp_path / locks.LOCK_NAME).write_text("{not json")
    with pytest.raises(errors.IntegrityError, match="not valid JSON"):
        locks.read_lock(tmp_path)
    d = _pulled_dir(tmp_path)
    doc = locks.read_lock(d)
    doc["files"][0]["path"] = "../escape"
    with pytest.raises(errors.IntegrityError, match=r"\$\.files\[0\]\.path"):
        locks.write_lock(d, doc)


@pytest.mark.parametrize(
    ("path", "split"),
    [
        ("data/train-00000-of-00004.parquet", "train"),
        ("data/validation-00000-of-00001.parquet", "validation"),
        ("train.jsonl", "train"),
        ("test/part-0.parquet", "test"),
        ("my_set.jsonl", "train"),  # no split keyword: train, as the `datasets` library reads it
        ("eval.jsonl", "test"),
        ("dev.jsonl", "validation"),
    ],
)
def test_split_of(path, split):
    assert locks.split_of(path) == split
    assert not locks.is_data_path("README.md")


def test_hashes_match_git_and_lfs(tmp_path):
    p = tmp_path / "empty"
    p.write_bytes(b"")
    assert (
        locks.hash_file(p, "git-blob-sha1")[0] == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    )  # git hash-object
    p.write_bytes(b"hello\n")
    assert locks.hash_file(p, "sha256")[0] == sha256(b"hello\n")


def test_diff_files():
    def f(path, h):
        return {"path": path, "hash": h, "size": 1}

    assert locks.diff_files(
        [f("a", "1"), f("b", "2"), f("c", "3")], [f("a", "1"), f("b", "9"), f("d", "4")]
    ) == {"added": ["d"], "removed": ["c"], "changed": ["b"]}


def test_lock_module_never_imports_huggingface_hub():
    code = "import sys, mcqa_prep.pull.lock; print('huggingface_hub' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


def test_fakehub_repo_resolves_branches_tags_and_commits():
    repo = FakeRepo()
    c = repo.add_commit("x", {"a.jsonl": b"{}\n"})
    repo.tags["t"] = c
    assert repo.resolve("main") == repo.resolve("t") == repo.resolve(c) == c and repo.resolve("nope") is None


@pytest.mark.parametrize(
    ("card", "license"),
    [
        (b"---\nlicense: mit\npretty_name: x\n---\n# Card\n", "mit"),
        (b"---\r\nlicense: apache-2.0\r\n---\r\n", "apache-2.0"),  # CRLF, as the hub's parser reads it
        (b"\xef\xbb\xbf---\nlicense: cc-by-4.0\n---\n", "cc-by-4.0"),  # a byte-order mark
        (b"---\nlicense:\n  - mit\n  - cc-by-4.0\n---\n", "mit, cc-by-4.0"),
        (b"# no metadata block\n", None),
        (b"---\nlicense: [mit, apache-2.0\n---\n", None),  # not YAML: the API's license is kept
        (b"---\n- a list\n---\n", None),
        (b"\xff\xfe---\n", None),
    ],
)
def test_the_card_license_is_read_by_huggingface_hub(tmp_path, card, license):
    """pull/hub.readme_license reads the card with huggingface_hub's own metadata parser, offline."""
    path = tmp_path / "README.md"
    path.write_bytes(card)
    assert hub_mod.readme_license(path) == license
    assert hub_mod.readme_license(tmp_path / "missing" / "README.md") is None  # no network for a missing file
