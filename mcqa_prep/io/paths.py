"""Which files are data, in which order, and which split each belongs to: one rule for every command.

The split of a data file is the one the Hugging Face `datasets` library gives it when it resolves a
directory's (or a hub repository's) data files without a configuration (`datasets.data_files`,
`get_data_patterns`), worked out from the file's path relative to the dataset's root (as the hub lists
files, or relative to the directory given as input; for a file given by itself, its name):

1. a sharded name directly under `data/`: `data/<split>-00000-of-00004.<ext>` is `<split>` (any name the
   library accepts as a split, `\\w+(\\.\\w+)*`: `data/TRAIN-...` is `TRAIN`); outside `data/` a sharded
   name is read by the keywords below (`test-00000-of-00001.parquet` is test, `foo-00000-...` train);
2. else a keyword as a directory name, or inside one between separators: `train/`, `my-dev/`, `val_2/`;
3. else a keyword opening the file name or inside it, followed by a separator: `dev.jsonl`,
   `mmlu_dev.csv`, `test1.jsonl`;
4. else train.

Keywords: train, training -> train; validation, valid, dev, val -> validation; test, testing, eval,
evaluation -> test. Separators: `-`, `.`, `_`, space and digits; so a keyword inside a word says nothing
(`contest.jsonl`, `trainer.jsonl`, `xtrain/` are train by rule 4). Keywords are matched case-sensitively,
as the library matches them: `TEST.JSONL` and `Test/` are train. Where the library puts one file in
several splits (`train_test.jsonl`, `test/train/x.jsonl` are in both train and test), the first of train,
validation, test wins, so each row is read once.

Two decisions where a per-file answer cannot be the library's: the library picks one of the rules above
for a whole directory (the first that matches any file) and leaves out the files it does not match
(`train.jsonl` beside `notes.jsonl`: notes is not loaded); here every data file is read, each with its own
answer, so that no row is left out without a word. A sharded name whose split the library would refuse
(`data/my split-00000-of-00001.parquet`) makes it refuse the whole directory; here it is read by keywords.
Hidden files and directories (a name starting with `.`), directories starting with `__` and the library's
metadata files (`dataset_info.json`, ...) are not data, as for the library. `tests/test_split_rule.py`
asks the installed library for every path in `data/golden/split_paths.jsonl`.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import InputError, UsageError

DATA_SUFFIXES = (".jsonl", ".parquet")
# suffix (any case) -> how the file is read; convert reads more kinds than the row commands
DATA_KINDS: dict[str, str] = {".jsonl": "jsonl", ".parquet": "parquet"}
CONVERT_KINDS: dict[str, str] = {
    **DATA_KINDS,
    ".ndjson": "jsonl",
    ".json": "jsonl",  # one array of objects, or JSONL
    ".csv": "csv",
    ".tsv": "csv",
}
STDIN = "-"
DEFAULT_SPLIT = "train"

# (canonical split, keywords), in the order the `datasets` library lists them (datasets.data_files)
SPLIT_KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("train", ("train", "training")),
    ("validation", ("validation", "valid", "dev", "val")),
    ("test", ("test", "testing", "eval", "evaluation")),
)
SEPARATORS = "-._ 0-9"  # the library's NON_WORDS_CHARS
# files the library never takes for data (its FILES_TO_IGNORE)
IGNORED_NAMES = frozenset(
    (
        "README.md",
        "config.json",
        "dataset_info.json",
        "dataset_infos.json",
        "dummy_data.zip",
        "dataset_dict.json",
    )
)
_SEP = f"[{SEPARATORS}]"
# the library's SPLIT_PATTERN_SHARDED, "data/{split}-[0-9]{5}-of-[0-9]{5}*.*", as a glob, then as it reads
# the split back out of the name (a greedy match)
_SHARDED_GLOB = re.compile(r"data/[^/]+-[0-9]{5}-of-[0-9]{5}[^/]*\.[^/]*")
_SHARDED_SPLIT = re.compile(r"(?P<split>.+)-[0-9]{5}-of-[0-9]{4}")
_SPLIT_NAME = re.compile(r"\w+(\.\w+)*")  # datasets.naming's _split_re
_DIR_RES = tuple(
    (split, re.compile(rf"(?:^|{_SEP})(?:{'|'.join(words)})(?:{_SEP}|$)")) for split, words in SPLIT_KEYWORDS
)
_FILE_RES = tuple(
    (split, re.compile(rf"(?:^|{_SEP})(?:{'|'.join(words)}){_SEP}")) for split, words in SPLIT_KEYWORDS
)


def data_kind(path: str | Path, kinds: dict[str, str] = DATA_KINDS) -> str | None:
    """How a file is read ("jsonl", "parquet"; with CONVERT_KINDS also "csv"), by its name's suffix in
    any case (`TRAIN.JSONL` too); None when it is not a data file."""
    name = str(path).lower()
    for suffix, kind in kinds.items():
        if name.endswith(suffix):
            return kind
    return None


_COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".zstd", ".lz4", ".zip", ".7z")


def _packed_data(name: str, kinds: dict[str, str]) -> bool:
    """A data file inside a compressed file (`train.jsonl.gz`), by its name."""
    low = name.lower()
    return any(low.endswith(s + c) for s in kinds for c in _COMPRESSED)


def is_data_path(path: str | Path) -> bool:
    return data_kind(path) is not None


def is_parquet(path: str | Path) -> bool:
    return data_kind(path) == "parquet"


def _first_split(name: str, patterns: tuple[tuple[str, re.Pattern[str]], ...]) -> str | None:
    for split, pattern in patterns:
        if pattern.search(name):
            return split
    return None


def split_of(path: str | Path) -> str:
    """The split of a data file from its path relative to the dataset's root (as the hub lists files, or
    relative to the directory given as input; for a file given by itself, its name): the `datasets`
    library's answer, see the module's docstring."""
    p = PurePosixPath(Path(str(path)).as_posix())
    rel = p.as_posix().lstrip("/")
    if _SHARDED_GLOB.fullmatch(rel):
        m = _SHARDED_SPLIT.match(p.name)
        if m and _SPLIT_NAME.fullmatch(m.group("split")):
            return m.group("split")
    for patterns, names in ((_DIR_RES, p.parts[:-1]), (_FILE_RES, p.parts[-1:])):
        found = [s for s in (_first_split(n, patterns) for n in names) if s is not None]
        if found:
            return min(found, key=_SPLIT_ORDER.index)
    return DEFAULT_SPLIT


_SPLIT_ORDER = [split for split, _ in SPLIT_KEYWORDS]


def ignored(rel: str | PurePosixPath) -> bool:
    """A path inside a directory that is not data to the `datasets` library: hidden (a part starting with
    `.`), inside a directory starting with `__` (`__pycache__`), or one of its metadata files."""
    parts = PurePosixPath(rel).parts
    return (
        any(part.startswith(".") and set(part) != {"."} for part in parts)
        or any(part.startswith("__") for part in parts[:-1])
        or (bool(parts) and parts[-1] in IGNORED_NAMES)
    )


@dataclass(frozen=True)
class InputFile:
    """A data file to read: its path, its name relative to the argument that named it, its split, and
    how it is read (data_kind).

    Only the relative name decides the split: `data/test/x.jsonl` given as `data/` is test, but the
    directories above an argument (a temporary directory called `test_run/`) say nothing."""

    path: Path | str
    name: str
    split: str
    kind: str = "jsonl"


def expand_inputs(
    paths: Iterable[str | Path],
    *,
    split: str | None = None,
    kinds: dict[str, str] = DATA_KINDS,
    select: bool = False,
) -> list[InputFile]:
    """Files to read, in a stable order: files as given, directories recursively (sorted, without what
    `ignored` says is not data), '-' for stdin (JSONL). `split` forces the split of every file, or with
    `select` keeps only a directory's files of that split (a file given by itself is still forced)."""
    out: list[InputFile] = []
    for p in paths:
        if str(p) == STDIN:
            out.append(InputFile(STDIN, STDIN, split or DEFAULT_SPLIT))
            continue
        path = Path(p)
        if path.is_dir():
            out.extend(_directory(path, split, kinds, select))
        elif path.exists():  # a regular file, or a pipe (`<(zcat rows.jsonl.gz)`) read as it streams
            kind = data_kind(path.name, kinds) or "jsonl"
            out.append(InputFile(path, path.name, split or split_of(path.name), kind))
        else:
            raise InputError(f"{path}: no such file or directory", reason="missing_input", path=str(path))
    return out


def _directory(path: Path, split: str | None, kinds: dict[str, str], select: bool) -> list[InputFile]:
    files = sorted(f for f in path.rglob("*") if not ignored(f.relative_to(path).as_posix()))
    found = [f for f in files if f.is_file() and data_kind(f.name, kinds) is not None]
    packed = [f for f in files if _packed_data(f.name, kinds)]
    if packed:  # rows the run would leave out without a word
        raise InputError(
            f"{path}: holds compressed data files this command does not read ({packed[0]}"
            + (f" and {len(packed) - 1} more" if len(packed) > 1 else "")
            + "); decompress them, or pass the files to read",
            reason="compressed_input",
            path=str(packed[0]),
        )
    if not found:
        names = list(kinds)
        suffixes = ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]
        raise InputError(f"{path}: directory holds no {suffixes} files", reason="no_data_files")
    out = []
    for f in found:
        name = f.relative_to(path).as_posix()
        out.append(InputFile(f, name, split_of(name), data_kind(f.name, kinds) or "jsonl"))
    if split is None:
        return out
    if not select:
        return [InputFile(f.path, f.name, split, f.kind) for f in out]
    chosen = [f for f in out if f.split == split]
    if not chosen:
        splits = ", ".join(sorted({f.split for f in out}))
        raise UsageError(
            f"{path}: no file of split {split!r} (splits by file name: {splits})", reason="unknown_split"
        )
    return chosen


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def check_output(
    output: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]], what: str = "the output"
) -> None:
    """Refuse an output that is one of the inputs (the same file, through any path: writing it would destroy
    an input) or lies inside an input directory (the next run would read it as input): one rule for every
    command that writes. '-' (stdout, stdin) is neither."""
    if str(output) == STDIN:
        return
    out = Path(output)
    for i in inputs:
        if str(i) == STDIN:
            continue
        p = Path(i)
        if _same_file(out, p):
            raise UsageError(f"{what} {out} is an input", reason="output_is_input", path=str(out))
        if p.is_dir():
            try:
                out.resolve().relative_to(p.resolve())
            except ValueError:
                continue
            raise UsageError(
                f"{what} {out} lies inside the input directory {p}",
                reason="output_inside_input",
                path=str(out),
            )


def is_special(path: str | os.PathLike[str]) -> bool:
    """An existing path that is neither a regular file nor a directory (a device, a pipe, a socket): an output
    written in place (io/writers.AtomicFile), never replaced."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def require_regular(path: str | os.PathLike[str], why: str) -> None:
    """Refuse a pipe or a device where a command must read its input twice (hash it, then read its rows):
    the second read of a pipe would find nothing, and an empty result would be reported instead."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # a missing file is reported where it is opened
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise UsageError(
            f"{path}: not a regular file (a pipe or a device): {why}; write it to a file first",
            reason="input_not_regular",
            path=str(path),
        )


def distinct_inputs(paths: Iterable[str | os.PathLike[str]], what: str = "input") -> None:
    """One identity for an input file wherever inputs are pooled: the same file (through any path, a link, a
    second argument naming it) or the same bytes under another name, given twice, is refused as a usage error
    (pooled, its rows would count twice: `passrates r.jsonl r.jsonl` reported pass@2 on one sample each).
    Files are compared by device and inode, then by sha256 among the regular files of one size only (equal
    bytes have equal sizes), so distinct inputs are not read here; a pipe is compared by its identity alone."""
    from .hashing import sha256_file

    seen: dict[tuple[int, int], str] = {}
    by_size: dict[int, list[str]] = {}
    for p in paths:
        name = str(p)
        if name == STDIN:
            key = (-1, -1)
        else:
            try:
                st = os.stat(p)
            except OSError:
                continue  # a missing file is reported where it is opened
            key = (st.st_dev, st.st_ino)
        if key in seen:
            _repeated(what, seen[key], name, "the same file")
        seen[key] = name
        if name != STDIN and stat.S_ISREG(st.st_mode):
            by_size.setdefault(st.st_size, []).append(name)
    for names in by_size.values():
        digests: dict[str, str] = {}
        for name in names if len(names) > 1 else ():
            digest = sha256_file(name)[0]
            if digest in digests:
                _repeated(what, digests[digest], name, f"the same bytes (sha256 {digest[:16]}...)")
            digests[digest] = name


def _repeated(what: str, first: str, second: str, how: str) -> None:
    which = "given twice" if first == second else f"{how} as {first}: given twice"
    raise UsageError(
        f"{second} is {which}, its rows would count twice; give each {what} once",
        reason="input_repeated",
        path=second,
    )
