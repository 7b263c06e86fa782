"""Which files are data, in which order, and which split each belongs to: one rule for every command.

The split rule follows the Hugging Face `datasets` library's conventions, so a directory means the same
split here as on the hub: a sharded name `<split>-00000-of-00004.*` names its split; otherwise a keyword in
a directory name (nearest first), then in the file name, as a word delimited by `-._ `, digits, `/` or the
ends: train/training -> train; validation/valid/dev/val -> validation; test/testing/eval/evaluation -> test;
anything else is train. `test/part-0.parquet` is test, `dev.jsonl` validation, `eval.jsonl` test, wherever
the file lies and whether or not a pull lock sits beside it.
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
STDIN = "-"
DEFAULT_SPLIT = "train"

# (canonical split, keywords), in the order the `datasets` library tries them
SPLIT_KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("train", ("train", "training")),
    ("validation", ("validation", "valid", "dev", "val")),
    ("test", ("test", "testing", "eval", "evaluation")),
)
_SEP = r"[-._ 0-9]"
_SHARDED = re.compile(r"^(?P<split>[\w.-]+?)[-_]\d{5}[-_]of[-_]\d{5}(?:\.|$)")
_KEYWORD_RES = tuple(
    (split, re.compile(rf"(?:^|{_SEP})(?:{'|'.join(words)})(?:{_SEP}|$)", re.IGNORECASE))
    for split, words in SPLIT_KEYWORDS
)


def data_kind(path: str | Path) -> str | None:
    """ "parquet" or "jsonl" by the file name's suffix, in any case (`TRAIN.JSONL` too); None otherwise."""
    name = str(path).lower()
    for suffix in DATA_SUFFIXES:
        if name.endswith(suffix):
            return suffix[1:]
    return None


_COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".zstd", ".lz4", ".zip", ".7z")


def _packed_data(name: str) -> bool:
    """A data file inside a compressed file (`train.jsonl.gz`), by its name."""
    low = name.lower()
    return any(low.endswith(s + c) for s in DATA_SUFFIXES for c in _COMPRESSED)


def is_data_path(path: str | Path) -> bool:
    return data_kind(path) is not None


def is_parquet(path: str | Path) -> bool:
    return data_kind(path) == "parquet"


def _keyword_split(name: str) -> str | None:
    for split, pattern in _KEYWORD_RES:
        if pattern.search(name):
            return split
    return None


def split_of(path: str | Path) -> str:
    """The split of a data file from its path relative to the dataset's root (as the hub lists files, or
    relative to the directory given as input; for a file given by itself, its name)."""
    p = PurePosixPath(Path(str(path)).as_posix())
    m = _SHARDED.match(p.name)
    if m:
        return m.group("split")
    for part in reversed(p.parts[:-1]):
        found = _keyword_split(part)
        if found is not None:
            return found
    return _keyword_split(p.name) or DEFAULT_SPLIT


@dataclass(frozen=True)
class InputFile:
    """A data file to read: its path, its name relative to the argument that named it, and its split.

    Only the relative name decides the split: `data/test/x.jsonl` given as `data/` is test, but the
    directories above an argument (a temporary directory called `test_run/`) say nothing."""

    path: Path | str
    name: str
    split: str


def expand_inputs(paths: Iterable[str | os.PathLike[str]], *, split: str | None = None) -> list[InputFile]:
    """Files to read, in a stable order: files as given, directories recursively (sorted), '-' for stdin.

    Hidden files and directories (starting with '.') are skipped inside directories. `split` forces the
    split of every file."""
    out: list[InputFile] = []
    for p in paths:
        if str(p) == STDIN:
            out.append(InputFile(STDIN, STDIN, split or DEFAULT_SPLIT))
            continue
        path = Path(p)
        if path.is_dir():
            found = sorted(
                f
                for f in path.rglob("*")
                if f.is_file()
                and is_data_path(f.name)
                and not any(part.startswith(".") for part in f.relative_to(path).parts)
            )
            packed = sorted(
                f
                for f in path.rglob("*")
                if _packed_data(f.name)
                and not any(part.startswith(".") for part in f.relative_to(path).parts)
            )
            if packed:  # rows the run would leave out without a word
                raise InputError(
                    f"{path}: holds compressed data files this command does not read ({packed[0]}"
                    + (f" and {len(packed) - 1} more" if len(packed) > 1 else "")
                    + "); decompress them, or pass the files to read",
                    reason="compressed_input",
                    path=str(packed[0]),
                )
            if not found:
                raise InputError(
                    f"{path}: directory holds no .jsonl or .parquet files", reason="no_data_files"
                )
            for f in found:
                name = f.relative_to(path).as_posix()
                out.append(InputFile(f, name, split or split_of(name)))
        elif path.exists():  # a regular file, or a pipe (`<(zcat rows.jsonl.gz)`) read as it streams
            out.append(InputFile(path, path.name, split or split_of(path.name)))
        else:
            raise InputError(f"{path}: no such file or directory", reason="missing_input", path=str(path))
    return out


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
