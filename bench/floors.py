"""The floors: what any tool must do with the same files, as a command of its own (timed like ours).

    python bench/floors.py jsonl SRC DST      # every line: orjson.loads, orjson.dumps, write (rescore's floor)
    python bench/floors.py parquet SRC DST    # Parquet batches -> Python rows -> orjson -> write (prepare's,
                                              # convert's floor; one core)
    python bench/floors.py read SRC...        # Parquet batches -> Python rows, nothing else (validate's floor)
    python bench/floors.py parse SRC...       # every JSONL line: orjson.loads, nothing else (passrates' floor)

The same JSON library the package uses (orjson), no checks, no grading. Each runs on one core: the floor a
single process cannot beat, which `--workers` may.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def jsonl(src: str, dst: str) -> int:
    import orjson

    loads, dumps, opt = orjson.loads, orjson.dumps, orjson.OPT_APPEND_NEWLINE
    n = 0
    with open(src, "rb") as fh, open(dst, "wb") as out:
        for line in fh:
            out.write(dumps(loads(line), option=opt))
            n += 1
    return n


def _files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out += sorted(p.glob("*.parquet")) if p.is_dir() else [p]
    return out


def parquet(src: str, dst: str) -> int:
    import orjson
    import pyarrow.parquet as pq

    dumps, opt = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    n = 0
    with open(dst, "wb") as out:
        for path in _files([src]):
            for batch in pq.ParquetFile(path).iter_batches(batch_size=2048):
                rows = batch.to_pylist()
                out.write(b"".join(dumps(r, option=opt) for r in rows))
                n += len(rows)
    return n


def read(*srcs: str) -> int:
    import pyarrow.parquet as pq

    n = 0
    for path in _files(list(srcs)):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=2048):
            n += len(batch.to_pylist())
    return n


def parse(*srcs: str) -> int:
    import orjson

    loads = orjson.loads
    n = 0
    for src in srcs:
        with open(src, "rb") as fh:
            for line in fh:
                loads(line)
                n += 1
    return n


def main(argv: list[str]) -> int:
    kinds: dict[str, Callable[..., int]] = {"jsonl": jsonl, "parquet": parquet, "read": read, "parse": parse}
    if not argv or argv[0] not in kinds:
        print(__doc__, file=sys.stderr)
        return 2
    n = kinds[argv[0]](*argv[1:])
    print(n)
    return 0 if n else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
