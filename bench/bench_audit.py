"""`audit` against MMLU + MMLU-Pro + GPQA-shaped benchmark files, beside the simplest honest alternative
(datasketch's MinHash LSH used directly in a loop), in the same run, on the same files.

Data (bench/audit_data.py, cached in bench/.cache/audit/): benchmark files in the three real layouts at their
real sizes (MMLU test 14,042 questions, 4 options, JSONL; MMLU-Pro test 12,032, up to 10 options, Parquet;
GPQA main 448, CSV) and a dataset shaped like nvidia/Nemotron-RL-knowledge-mcqa (Parquet in row groups of
5,000, options in the null-filled all-letters struct shape, 10 options for most rows, five instruction
templates, uuids), 2% of whose rows are benchmark questions planted verbatim, shuffled or lightly edited.

Figures:
- `audit_*`: the command (`mcqa-prep audit DATA --against ... -j 2 --format json`), wall-clock, all checks
  but rollouts, at the full size; the process tree's peak RSS (polled from /proc every 20 ms);
- `subset_*`: ours with one worker and the datasketch loop on the same first `subset` rows (one process each):
  the loop reads the rows with the same reader, makes each row's word-bigram set, builds a datasketch MinHash
  (update_batch, 64 permutations, the same as ours) and queries a MinHashLSH of the benchmark questions;
  it finds near-duplicates only (no n-grams, no exact match, no duplicates);
- `memory`: peak RSS of the tree at two sizes, with the duplicate index and without (--no-duplicates: the
  benchmark index in memory, the dataset streamed; it should stay flat as rows grow).

Usage: python bench/bench_audit.py [--rows N] [--subset N]   (prints one JSON document)
importable: run(rows, subset=..., memory=...) -> dict (bench/run.py calls run(rows)).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import audit_data as A  # noqa: E402

CACHE = HERE / ".cache" / "audit"
SIZES = {"mmlu": 14_042, "mmlu_pro": 12_032, "gpqa": 448}
PLANTED = 0.02
DATA_VERSION = 1


def generate(rows: int) -> tuple[Path, list[Path]]:
    """The benchmark files and a dataset of `rows` rows (cached by size)."""
    bench_dir = CACHE / f"bench-v{DATA_VERSION}"
    vocab = A.Vocabulary()
    if not (bench_dir / "done").exists():
        bench_dir.mkdir(parents=True, exist_ok=True)
        A.write_mmlu(bench_dir / "mmlu.jsonl", list(A.questions(101, SIZES["mmlu"], range(0, 32), vocab)))
        A.write_mmlu_pro(
            bench_dir / "mmlu_pro.parquet",
            list(A.questions(102, SIZES["mmlu_pro"], range(16, 48), vocab, n_options=(10, 10, 10, 9, 4))),
        )
        A.write_gpqa(bench_dir / "gpqa.csv", list(A.questions(103, SIZES["gpqa"], range(0, 48), vocab)))
        (bench_dir / "done").touch()
    bench = [bench_dir / "mmlu.jsonl", bench_dir / "mmlu_pro.parquet", bench_dir / "gpqa.csv"]
    data = CACHE / f"data-v{DATA_VERSION}-{rows}.parquet"
    if not data.exists():
        _write_dataset(data, rows, vocab)
    return data, bench


def _write_dataset(path: Path, rows: int, vocab: A.Vocabulary) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rnd = random.Random(7)
    planted = list(A.questions(101, SIZES["mmlu"], range(0, 32), vocab))  # the MMLU file's questions, again
    clean = A.questions(200, rows, range(0, 48), vocab, n_options=(10, 10, 10, 10, 4))
    tmp = path.with_suffix(".tmp")
    writer = None
    batch: list[dict[str, Any]] = []
    for q in clean:
        if rnd.random() < PLANTED:
            q = rnd.choice(planted)
            kind = rnd.choice(("verbatim", "shuffled", *A.EDITS))
            q = (
                q
                if kind == "verbatim"
                else A.shuffled(q, rnd)
                if kind == "shuffled"
                else A.edit(q, kind, rnd, vocab)
            )
        r = A.row(q, rnd)
        r["options"] = [
            {L: (o.get(L)) for L in "ABCDEFGHIJ"} for o in r["options"]
        ]  # the Parquet null-filled shape
        batch.append(r)
        if len(batch) == 5000:
            writer = _flush(writer, tmp, batch, pa, pq)
            batch = []
    if batch:
        writer = _flush(writer, tmp, batch, pa, pq)
    writer.close()
    tmp.rename(path)


def _flush(writer: Any, path: Path, batch: list[dict[str, Any]], pa: Any, pq: Any) -> Any:
    table = pa.Table.from_pylist(batch, schema=writer.schema if writer is not None else None)
    if writer is None:
        writer = pq.ParquetWriter(path, table.schema)
    writer.write_table(table)
    return writer


# ---- measuring ----------------------------------------------------------------------------------------


def _tree_rss_kb(pid: int) -> int:
    """RSS of a process and all its descendants (KiB), from /proc."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(d))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, []))
        try:
            with open(f"/proc/{p}/status") as fh:
                total += next((int(x.split()[1]) for x in fh if x.startswith("VmRSS:")), 0)
        except OSError:
            pass
    return total


def timed_tree(cmd: list[str]) -> dict[str, Any]:
    """Run cmd; its wall time, the CPU time of its process tree (workers included: they are reaped by it), the
    peak RSS of its process tree (MiB, polled every 100 ms), its exit code and
    stdout (through a file: a pipe nobody reads would stop a command that prints a large document)."""
    import resource
    import tempfile

    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        peak = 0
        while proc.poll() is None:
            peak = max(peak, _tree_rss_kb(proc.pid))
            time.sleep(0.1)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read().decode(errors="replace")
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "peak_rss_mb": round(peak / 1024, 1),
        "rc": proc.returncode,
        "stdout": stdout,
        "stderr": stderr[-500:],
    }


def ours(data: Path, bench: list[Path], workers: int, *extra: str) -> dict[str, Any]:
    cmd = [
        sys.executable,
        "-m",
        "mcqa_prep",
        "audit",
        str(data),
        *[a for b in bench for a in ("--against", str(b))],
        "-j",
        str(workers),
        "--format",
        "json",
        "-q",
        *extra,
    ]
    res = timed_tree(cmd)
    doc = json.loads(res.pop("stdout")) if res["rc"] == 0 else {}
    res["summary"] = {
        k: doc.get("summary", {}).get(k) for k in ("rows", "contaminated_rows", "duplicate_rows")
    }
    return res


BASELINE = r"""
import json, sys, time
sys.path.insert(0, {root!r})
from datasketch import MinHash, MinHashLSH
from mcqa_prep.audit.benchmarks import load
from mcqa_prep.audit.text import words
from mcqa_prep.io.readers import read_parquet

t0 = time.perf_counter()
index = load({bench!r})
lsh = MinHashLSH(threshold=0.5, num_perm=64)
def bigrams(ws):
    return {{(a + " " + b).encode() for a, b in zip(ws, ws[1:])}} or {{w.encode() for w in ws}}
for i, q in enumerate(index.question):
    m = MinHash(num_perm=64)
    m.update_batch(list(bigrams(q.split())))
    lsh.insert(i, m)
t1 = time.perf_counter()
n = found = 0
for rec in read_parquet({data!r}, "train"):
    if n >= {rows}:
        break
    n += 1
    d = rec.data
    text = d["responses_create_params"]["input"][0]["content"]
    m = MinHash(num_perm=64)
    m.update_batch(list(bigrams(words(text))))
    found += bool(lsh.query(m))
t2 = time.perf_counter()
print(json.dumps({{"rows": n, "found": found, "index_s": t1 - t0, "rows_s": t2 - t1}}))
"""


def baseline(data: Path, bench: list[Path], rows: int) -> dict[str, Any]:
    code = BASELINE.format(root=str(HERE.parent), bench=[str(b) for b in bench], data=str(data), rows=rows)
    res = timed_tree([sys.executable, "-c", code])
    if res["rc"] != 0:
        return {"error": res["stderr"].strip().splitlines()[-1] if res["stderr"].strip() else "failed"}
    doc = json.loads(res["stdout"])
    doc.update(
        wall_s=res["wall_s"],
        cpu_s=res["cpu_s"],
        peak_rss_mb=res["peak_rss_mb"],
        rows_per_s=round(doc["rows"] / doc["rows_s"]),
    )
    return doc


def run(rows: int = 685_573, subset: int = 50_000, memory: bool = True, workers: int = 2) -> dict[str, Any]:
    subset = min(subset, rows)
    data, bench = generate(rows)
    sub, _ = generate(subset)
    out: dict[str, Any] = {"rows": rows, "benchmark_questions": sum(SIZES.values()), "workers": workers}
    full = ours(data, bench, workers)
    out["audit"] = full
    out["audit_rows_per_s"] = round(rows / full["wall_s"]) if full["rc"] == 0 else None
    one = ours(sub, bench, 1)
    base = baseline(sub, bench, subset)
    out["subset"] = {"rows": subset, "ours_1_worker": one, "datasketch_loop": base}
    out["subset"]["ours_rows_per_s"] = round(subset / one["wall_s"]) if one["rc"] == 0 else None
    if memory:
        small = max(1000, rows // 4)
        d_small, _ = generate(small)
        out["memory"] = {
            "rows": [small, rows],
            "with_duplicates_mb": [ours(d_small, bench, workers)["peak_rss_mb"], full["peak_rss_mb"]],
            "contamination_only_mb": [
                ours(d, bench, workers, "--no-duplicates")["peak_rss_mb"] for d in (d_small, data)
            ],
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=685_573)
    ap.add_argument("--subset", type=int, default=50_000)
    ap.add_argument("--no-memory", action="store_true")
    args = ap.parse_args()
    print(json.dumps(run(args.rows, subset=args.subset, memory=not args.no_memory), indent=2))


if __name__ == "__main__":
    main()
