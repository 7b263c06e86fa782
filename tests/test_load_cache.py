"""load_prepared's cache: warm calls read and hash nothing, a shard edited between two calls is refused, the
cache is the user's own and is never served when it does not match the shards, and integers come back exact
or are refused. No timing here: `make bench` (bench/bench_cluster.py) measures warm and cold calls."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from conftest import SAMPLE

from mcqa_prep.errors import CacheError, IntegrityError, UnrepresentableValue
from mcqa_prep.prepared import arrow_build, cache
from mcqa_prep.prepared import load as load_mod
from mcqa_prep.prepared.load import load_prepared

SHARD = "train-00000-of-00001.jsonl"


def _rows(meta=None):
    rows = [json.loads(line) for line in (SAMPLE / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    # rows without a template only: one output_regex type, so Arrow's reader takes the rows as they are (a
    # templated row's prompt asks for its own answer format, which validate checks against its regex)
    rows = [r for r in rows if not r.get("template_metadata")]
    for i, r in enumerate(rows):
        if meta is not None:
            r["metadata"] = meta(i)
    return rows


def _prepare(cli, tmp_path: Path, name: str, rows) -> Path:
    src = tmp_path / f"{name}.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / name
    res = cli("prepare", src, "-o", out, "-q")
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture
def prepared(cli, tmp_path):
    return _prepare(cli, tmp_path, "p", _rows())


def _golds(ds):
    return [r["expected_answer"] for r in ds]


def _shard_golds(d: Path):
    return [json.loads(line)["expected_answer"] for line in (d / SHARD).read_text().splitlines()]


def _entry(cache_dir: Path) -> Path:
    (entry,) = [p for p in (cache_dir / cache.LAYOUT).iterdir() if p.is_dir()]
    return entry


def _count_passes(monkeypatch):
    calls = []
    real = load_mod.verify_and_spill

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(load_mod, "verify_and_spill", counted)
    return calls


def test_warm_call_hashes_nothing_and_maps_the_same_rows(prepared, tmp_path, monkeypatch):
    c = tmp_path / "cache"
    first = load_prepared(prepared, split="train", cache_dir=c)
    passes = _count_passes(monkeypatch)
    monkeypatch.setattr(arrow_build, "sha256_file", None)  # any hashing of a shard would fail
    second = load_prepared(prepared, split="train", cache_dir=c)
    assert passes == [] and second.to_list() == first.to_list()
    assert _golds(second) == _shard_golds(prepared)
    assert second.cache_files and Path(second.cache_files[0]["filename"]).parent == _entry(c)  # memory-mapped
    mode = stat.S_IMODE(os.stat(c / cache.LAYOUT).st_mode)
    assert mode == 0o700 and stat.S_IMODE(os.stat(_entry(c)).st_mode) == 0o700


def test_a_shard_edited_between_two_calls_is_refused(prepared, tmp_path):
    c = tmp_path / "cache"
    load_prepared(prepared, split="train", cache_dir=c)
    shard = prepared / SHARD
    st = os.stat(shard)
    data = shard.read_bytes().replace(b'"expected_answer": "B"', b'"expected_answer": "D"', 1)
    data = data.replace(b'"expected_answer":"B"', b'"expected_answer":"D"', 1)
    assert len(data) == st.st_size and data != shard.read_bytes()
    shard.write_bytes(data)
    os.utime(shard, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and modification time: only ctime moved
    with pytest.raises(IntegrityError, match="sha256 is .* the file changed after preparation"):
        load_prepared(prepared, split="train", cache_dir=c)


def test_verify_true_forces_the_full_check(prepared, tmp_path, monkeypatch):
    c = tmp_path / "cache"
    load_prepared(prepared, cache_dir=c)
    passes = _count_passes(monkeypatch)
    load_prepared(prepared, cache_dir=c)
    assert passes == []
    ds = load_prepared(prepared, cache_dir=c, verify=True)
    assert passes == [1] and _golds(ds["train"]) == _shard_golds(prepared)


def test_a_changed_cache_file_is_never_served(prepared, tmp_path):
    """The Arrow file rewritten with every gold turned to another letter: its identity changed, so it is
    rebuilt from the verified shards; with its identity restored, verify=True still finds it out."""
    c = tmp_path / "cache"
    load_prepared(prepared, split="train", cache_dir=c)
    (arrow,) = _entry(c).glob("*.arrow")

    def poison():
        st = os.stat(arrow)
        data = arrow.read_bytes()
        for g in b"ABC":
            data = data.replace(bytes([0, g, 0]), bytes([0, ord("D"), 0]))
        with open(arrow, "r+b") as fh:
            fh.write(data)
        os.utime(arrow, ns=(st.st_atime_ns, st.st_mtime_ns))

    poison()
    ds = load_prepared(prepared, split="train", cache_dir=c)
    assert _golds(ds) == _shard_golds(prepared) and set(_golds(ds)) != {"D"}
    (arrow,) = _entry(c).glob("*.arrow")
    poison()
    seal = json.loads((_entry(c) / cache.SEAL).read_text())
    seal["splits"]["train"]["identity"] = cache.identity(arrow)  # a careful poisoner fixes the seal too
    (_entry(c) / cache.SEAL).write_text(json.dumps(seal))
    ds = load_prepared(prepared, split="train", cache_dir=c, verify=True)
    assert _golds(ds) == _shard_golds(prepared)


def test_a_truncated_cache_file_is_rebuilt(prepared, tmp_path):
    c = tmp_path / "cache"
    want = load_prepared(prepared, split="train", cache_dir=c).to_list()
    (arrow,) = _entry(c).glob("*.arrow")
    with open(arrow, "r+b") as fh:
        fh.truncate(100)
    assert load_prepared(prepared, split="train", cache_dir=c).to_list() == want
    (_entry(c) / cache.SEAL).write_text("{not json")
    assert load_prepared(prepared, split="train", cache_dir=c).to_list() == want


def test_a_cache_directory_open_to_others_or_a_link_is_refused(prepared, tmp_path):
    c = tmp_path / "cache"
    load_prepared(prepared, split="train", cache_dir=c)
    os.chmod(c / cache.LAYOUT, 0o777)
    with pytest.raises(CacheError) as err:
        load_prepared(prepared, split="train", cache_dir=c)
    assert err.value.reason == "cache_unsafe" and "mode 0777" in err.value.message
    assert "\n" not in err.value.message
    os.chmod(c / cache.LAYOUT, 0o700)
    os.chmod(_entry(c), 0o755)
    with pytest.raises(CacheError, match="others may use it"):
        load_prepared(prepared, split="train", cache_dir=c)
    other = tmp_path / "elsewhere"
    other.mkdir(mode=0o700)
    (tmp_path / "linked").mkdir()
    os.symlink(other, tmp_path / "linked" / cache.LAYOUT)
    with pytest.raises(CacheError, match="symbolic link"):
        load_prepared(prepared, split="train", cache_dir=tmp_path / "linked")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a directory of another user")
def test_another_users_cache_directory_is_refused(prepared, tmp_path):
    theirs = tmp_path / "theirs"
    (theirs / cache.LAYOUT).mkdir(parents=True, mode=0o700)
    os.chown(theirs / cache.LAYOUT, 65534, 65534)
    with pytest.raises(CacheError) as err:
        load_prepared(prepared, split="train", cache_dir=theirs)
    assert err.value.reason == "cache_unsafe" and "owned by uid 65534" in err.value.message


def test_an_unwritable_cache_directory_is_one_typed_line(prepared, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(CacheError) as err:
        load_prepared(prepared, split="train", cache_dir=blocker)
    assert err.value.reason == "cache_unwritable" and "\n" not in err.value.message


def test_the_default_cache_is_per_user(prepared, monkeypatch, tmp_path):
    monkeypatch.delenv(cache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    load_prepared(prepared, split="train")
    assert stat.S_IMODE(os.stat(tmp_path / "xdg" / "mcqa-prep" / cache.LAYOUT).st_mode) == 0o700


@pytest.mark.parametrize(
    "name,meta,line",
    [
        ("float-column", lambda i: {"n": 2**53 + 1 if i == 0 else 1.5}, 1),
        ("beyond-64-bits", lambda i: {"n": 123456789012345678901234567890 if i == 1 else 7}, 2),
    ],
)
def test_an_integer_arrow_would_round_is_refused(cli, tmp_path, name, meta, line):
    d = _prepare(cli, tmp_path, name, _rows(meta))
    with pytest.raises(UnrepresentableValue) as err:
        load_prepared(d, split="train", cache_dir=tmp_path / "cache")
    assert f"{SHARD}:{line}: $.metadata.n: the integer" in err.value.message
    assert "\n" not in err.value.message
    assert not list(_entry(tmp_path / "cache").glob("*.arrow"))  # nothing half-built is left to serve


def test_integers_an_int64_column_holds_come_back_exact(cli, tmp_path):
    d = _prepare(cli, tmp_path, "ints", _rows(lambda i: {"n": [2**53 + 1, 2**63 - 1, -(2**63)][i % 3]}))
    ds = load_prepared(d, split="train", cache_dir=tmp_path / "cache")
    assert [r["metadata"]["n"] for r in ds] == [
        [2**53 + 1, 2**63 - 1, -(2**63)][i % 3] for i in range(len(ds))
    ]


def test_a_block_is_cast_to_the_union_schema_field_by_field_at_any_depth():
    """The union of 4- and 10-option blocks: a struct gains its missing fields as nulls (nested, in lists,
    sliced), nulls stay nulls; pyarrow before 18 cannot cast a struct to one with more fields itself."""
    import pyarrow as pa

    from mcqa_prep.prepared.arrow_build import _cast

    small = pa.struct([("A", pa.string()), ("B", pa.int64())])
    wide = pa.struct([("A", pa.string()), ("B", pa.float64()), ("C", pa.string())])
    col = pa.array([{"A": "x", "B": 1}, None, {"A": None, "B": 3}, {"A": "z", "B": 4}], type=small)[1:]
    out = _cast(col, wide)
    assert out.type == wide
    assert out.to_pylist() == [None, {"A": None, "B": 3.0, "C": None}, {"A": "z", "B": 4.0, "C": None}]
    outer = pa.struct([("opts", small), ("k", pa.string())])
    outer_wide = pa.struct([("opts", wide), ("k", pa.string())])
    nested = pa.array([{"opts": {"A": "a", "B": 2}, "k": "q"}, {"opts": None, "k": None}], type=outer)
    assert _cast(nested, outer_wide).to_pylist() == [
        {"opts": {"A": "a", "B": 2.0, "C": None}, "k": "q"},
        {"opts": None, "k": None},
    ]
    listed = pa.array([[{"A": "a", "B": 1}], None, [], [{"A": "b", "B": 2}, None]], type=pa.list_(small))[1:]
    assert _cast(listed, pa.list_(wide)).to_pylist() == [
        None,
        [],
        [{"A": "b", "B": 2.0, "C": None}, None],
    ]
    with pytest.raises(pa.ArrowInvalid):  # a leaf that cannot be held exactly is still refused
        _cast(pa.array([{"A": "a", "B": 2**60 + 1}], type=small), wide)
