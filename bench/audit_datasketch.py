"""The simplest honest alternative to `mcqa-prep audit --against`, as a command: datasketch's MinHashLSH built
over the benchmark questions and queried in a loop, one dataset row at a time (bench_audit's baseline).

    python bench/audit_datasketch.py DATA.parquet BENCH... [--out found.json] [--threshold 0.5]

What it does, as someone reaching for datasketch would:
- reads each benchmark file in its layout (MMLU JSONL: question, choices; MMLU-Pro Parquet: question, options;
  GPQA CSV: Question and its four answers), no preset detection beyond the file's suffix;
- makes each question's text (the question, then its options) a set of word pairs (lower-cased `\\w+` words),
  a MinHash of 64 permutations (the audit's number; the permutations computed once and shared, as datasketch
  allows) and inserts it into one MinHashLSH (`--threshold`, Jaccard);
- reads the dataset's rows with pyarrow, batch by batch, makes the same word-pair set of each row's prompt and
  queries the LSH; a row with a candidate counts as found.

What it does not do (the audit does): no exact match of the option set, no 13-gram overlap, no verification of
a candidate (its rows with a candidate include false positives), no instruction text taken out of the prompt,
no duplicates within or across splits, no position bias, no report of which row matched which benchmark line,
one process. So on the same rows and files it does less work than the audit, not more.

Prints nothing; `--out` gets {"rows", "questions", "found": [0-based row numbers], "index_s", "loop_s"}.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
from datasketch import MinHash, MinHashLSH

NUM_PERM = 64
WORD = re.compile(r"\w+")


def benchmark_texts(path: Path) -> Iterator[str]:
    """Each question of a benchmark file with its options, as one text."""
    if path.suffix == ".jsonl":
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                yield " ".join([d["question"], *d["choices"]])
    elif path.suffix == ".parquet":
        for batch in pq.ParquetFile(path).iter_batches(columns=["question", "options"]):
            for d in batch.to_pylist():
                yield " ".join([d["question"], *d["options"]])
    elif path.suffix == ".csv":
        with open(path, encoding="utf-8", newline="") as fh:
            for d in csv.DictReader(fh):
                answers = [d["Correct Answer"], *(d[f"Incorrect Answer {k}"] for k in (1, 2, 3))]
                yield " ".join([d["Question"], *answers])
    else:
        raise SystemExit(f"audit_datasketch: no reader for {path}")


def shingles(text: str) -> list[bytes]:
    ws = WORD.findall(text.lower())
    pairs = {f"{a} {b}" for a, b in zip(ws, ws[1:], strict=False)} or set(ws)
    return [p.encode("utf-8") for p in pairs]


def row_prompts(path: Path) -> Iterator[str]:
    for batch in pq.ParquetFile(path).iter_batches(columns=["responses_create_params"], batch_size=5000):
        for d in batch.column(0).to_pylist():
            yield d["input"][0]["content"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("bench", nargs="+")
    ap.add_argument("--out")
    ap.add_argument("--threshold", type=float, default=0.5)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    base = MinHash(num_perm=NUM_PERM)
    perms, scheme = base.permutations, base.scheme  # computed once, shared by every MinHash below
    lsh = MinHashLSH(threshold=args.threshold, num_perm=NUM_PERM)
    questions = 0
    for b in args.bench:
        for text in benchmark_texts(Path(b)):
            m = MinHash(num_perm=NUM_PERM, permutations=perms, scheme=scheme)
            m.update_batch(shingles(text))
            lsh.insert(questions, m, check_duplication=False)
            questions += 1
    t1 = time.perf_counter()
    found: list[int] = []
    rows = 0
    for i, prompt in enumerate(row_prompts(Path(args.data))):
        m = MinHash(num_perm=NUM_PERM, permutations=perms, scheme=scheme)
        m.update_batch(shingles(prompt))
        if lsh.query(m):
            found.append(i)
        rows = i + 1
    t2 = time.perf_counter()
    doc = {"rows": rows, "questions": questions, "found": found, "index_s": t1 - t0, "loop_s": t2 - t1}
    if args.out:
        Path(args.out).write_text(json.dumps(doc), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
