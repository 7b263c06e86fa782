"""`mcqa-prep audit` as a command against MMLU + MMLU-Pro + GPQA-shaped benchmark files, interleaved with the
simplest honest alternative (datasketch's MinHashLSH built and queried in a loop, a command too), on the same
rows and files.

Data (bench/audit_data.py, cached in bench/.cache/audit/): benchmark files in the three real layouts at their
real sizes whatever the scale (MMLU test 14,042 questions, 4 options, JSONL; MMLU-Pro test 12,032, up to 10
options, Parquet; GPQA main 448, CSV) and a dataset shaped like nvidia/Nemotron-RL-knowledge-mcqa (one Parquet
file in row groups of 5,000, options in the null-filled all-letters struct shape, 10 options for most rows,
five instruction templates, uuids), 2% of whose rows are MMLU questions planted verbatim, with options
shuffled, or lightly edited (a sidecar file lists them: the checks count what each side finds of them).

Sizes: 100,000 rows at scale 1 (`scale` multiplies it, at least 20,000), and 685,573 rows (the real train
split's size) with full=True, whose figure keys end in @full. Legs (bench/harness.py: wall, CPU and peak RSS
of the process tree) at each size, `rounds` times, the order rotated each round:
- audit: `mcqa-prep audit DATA --against MMLU --against MMLU_PRO --against GPQA -j 2 -o audit.json -q`
  (every check but rollouts: contamination three ways, duplicates, position bias);
- audit_nodup: the same with --no-duplicates (the benchmark index in memory, the dataset streamed);
- audit_small, audit_small_nodup: both on the first quarter of the rows (at least 10,000, two row groups, so
  the same workers start): peak RSS at two sizes, memory bounded as rows grow (the duplicate index grows
  with the rows, nothing else should);
- datasketch: bench/audit_datasketch.py on the same rows and files (what it does not do: its docstring);
- fixed (scaled runs only): the command on 1,000 rows, its fixed cost (start-up, imports, the benchmark index;
  one row group, so one process).

In-process leg (once per run): the library choice behind the audit's MinHash, CPU time per document of
the same feature sets (word pairs of benchmark questions): rensa as the audit calls it (features.signatures,
64 permutations, pre-hashed features) against datasketch's MinHash (64 permutations, shared, its own hashing
of each feature) .update_batch; alternated `rounds` times.

Targets (issue 26): at 685,573 rows (full=True) the audit within 60 s of wall time on 2 cores, and ahead of
the datasketch loop (its time / ours >= 1) at every size.

    python bench/bench_audit.py [--scale 0.1] [--rounds 3] [--full]
"""

from __future__ import annotations

import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import audit_data as A  # noqa: E402
import harness as H  # noqa: E402

CACHE = HERE / ".cache" / "audit"
SIZES = {"mmlu": 14_042, "mmlu_pro": 12_032, "gpqa": 448}
PLANTED = 0.02
DATA_VERSION = 2
ROWS = 100_000
FULL_ROWS = 685_573
FIXED_ROWS = 1_000
# The quarter-size run must start the same workers as the full one to compare their memory: a Parquet file of
# one row group (5,000 rows) is one chunk, audited without a pool. So at least two row groups, at any scale.
SMALL_MIN = 10_000
ROWS_MIN = 20_000
WORKERS = 2
TARGET_S = 60
TARGET_AHEAD = 1.0
MICRO_DOCS = 2_000

WHAT = {
    "audit": f"mcqa-prep audit --against (3 files) -j {WORKERS}",
    "audit_nodup": f"mcqa-prep audit --against (3 files) -j {WORKERS} --no-duplicates",
    "audit_small": f"mcqa-prep audit --against (3 files) -j {WORKERS}, a quarter of the rows",
    "audit_small_nodup": f"mcqa-prep audit --against (3 files) -j {WORKERS} --no-duplicates, a quarter of the rows",
    "datasketch": "datasketch MinHashLSH loop (bench/audit_datasketch.py, one process)",
    "fixed": f"mcqa-prep audit --against (3 files) -j {WORKERS} on {FIXED_ROWS:,} rows (its fixed cost)",
}


# ---- data ---------------------------------------------------------------------------------------------


def generate(rows: int) -> tuple[Path, list[Path]]:
    """The benchmark files and a dataset of `rows` rows (cached by size; a smaller dataset is the first rows
    of a larger one); the planted rows are listed beside the dataset (`planted`)."""
    vocab = A.Vocabulary()
    bench_dir = CACHE / f"bench-v{DATA_VERSION}-{sum(SIZES.values())}"
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
    data = CACHE / f"data-v{DATA_VERSION}-{sum(SIZES.values())}-{PLANTED}-{rows}.parquet"
    if not data.exists() or not _sidecar(data).exists():
        _write_dataset(data, rows, vocab)
    return data, bench


def _sidecar(data: Path) -> Path:
    return data.with_suffix(".planted.json")


def planted(data: Path) -> dict[str, list[int]]:
    """The dataset's planted rows (0-based) by kind: verbatim, shuffled, or one of audit_data.EDITS."""
    return json.loads(_sidecar(data).read_text(encoding="utf-8"))


def _write_dataset(path: Path, rows: int, vocab: A.Vocabulary) -> None:
    import pyarrow.parquet as pq

    rnd = random.Random(7)
    pool = list(A.questions(101, SIZES["mmlu"], range(0, 32), vocab))  # the MMLU file's questions, again
    clean = A.questions(200, rows, range(0, 48), vocab, n_options=(10, 10, 10, 10, 4))
    kinds: dict[str, list[int]] = {}
    tmp = path.with_suffix(".tmp")
    writer = None
    batch: list[dict[str, Any]] = []
    for i, q in enumerate(clean):
        if rnd.random() < PLANTED:
            q = rnd.choice(pool)
            kind = rnd.choice(("verbatim", "shuffled", *A.EDITS))
            if kind == "shuffled":
                q = A.shuffled(q, rnd)
            elif kind != "verbatim":
                q = A.edit(q, kind, rnd, vocab)
            kinds.setdefault(kind, []).append(i)
        r = A.row(q, rnd)
        r["options"] = [{L: o.get(L) for L in "ABCDEFGHIJ"} for o in r["options"]]  # the null-filled shape
        batch.append(r)
        if len(batch) == 5000:
            writer = _flush(writer, tmp, batch)
            batch = []
    if batch:
        writer = _flush(writer, tmp, batch)
    assert writer is not None
    writer.close()
    pq.ParquetFile(tmp)  # readable before it takes the final name
    _sidecar(path).write_text(json.dumps(kinds), encoding="utf-8")
    tmp.rename(path)


def _flush(writer: Any, path: Path, batch: list[dict[str, Any]]) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(batch, schema=writer.schema if writer is not None else None)
    if writer is None:
        writer = pq.ParquetWriter(path, table.schema)
    writer.write_table(table)
    return writer


# ---- the command legs ---------------------------------------------------------------------------------


def audit_argv(data: Path, bench: list[Path], out: Path, *extra: str) -> list[str]:
    against = [a for b in bench for a in ("--against", str(b))]
    return [*H.cli(), "audit", str(data), *against, "-j", str(WORKERS), "-o", str(out), "-q", *extra]


def legs_for(data: Path, small: Path, bench: list[Path], work: Path, fixed: Path | None) -> dict[str, Any]:
    def audit(name: str, d: Path, *extra: str) -> Any:
        return lambda: H.measure(audit_argv(d, bench, work / f"{name}.json", *extra), cwd=work)

    legs = {
        "audit": audit("audit", data),
        "datasketch": lambda: H.measure(
            H.py("audit_datasketch.py", str(data), *map(str, bench), "--out", str(work / "datasketch.json")),
            cwd=work,
        ),
        "audit_nodup": audit("audit_nodup", data, "--no-duplicates"),
        "audit_small": audit("audit_small", small),
        "audit_small_nodup": audit("audit_small_nodup", small, "--no-duplicates"),
    }
    if fixed is not None:
        legs["fixed"] = audit("fixed", fixed)
    return legs


def flagged_rows(audit_json: Path) -> set[int]:
    """The 0-based rows an audit document names as contaminated (its findings give 1-based records)."""
    doc = json.loads(audit_json.read_text(encoding="utf-8"))
    return {f["row"]["line"] - 1 for f in doc["contamination"]["findings"]}


def found_checks(name: str, found: set[int], kinds: dict[str, list[int]], rows: int) -> dict[str, Any]:
    """What one side found of the planted rows, per kind, and how many clean rows it flagged."""
    every = {i for v in kinds.values() for i in v}
    out: dict[str, Any] = {f"{name}.found_planted": f"{len(found & every):,}/{len(every):,}"}
    for kind, idx in sorted(kinds.items()):
        out[f"{name}.found_planted.{kind}"] = f"{len(found & set(idx)):,}/{len(idx):,}"
    out[f"{name}.flagged_clean"] = f"{len(found - every):,}/{rows - len(every):,}"
    return out


def measure_at(rows: int, rounds: int, suffix: str, work: Path) -> tuple[dict, dict, dict]:
    """Every command leg at `rows` (and a quarter of them; the fixed cost with the scaled size): figures,
    checks, inputs (keys end in suffix)."""
    small_rows = max(SMALL_MIN, rows // 4)
    data, bench = generate(rows)
    small, _ = generate(small_rows)
    fixed = generate(FIXED_ROWS)[0] if not suffix else None
    runs = H.interleave(legs_for(data, small, bench, work, fixed), rounds)
    ds = json.loads((work / "datasketch.json").read_text(encoding="utf-8"))  # the last round's
    found = {leg: flagged_rows(work / f"{leg}.json") for leg in ("audit", "audit_nodup")}
    return results_at(runs, rows, small_rows, suffix, ds, planted(data), found, data.stat().st_size)


def results_at(
    runs: dict[str, list[H.Run]], rows: int, small_rows: int, suffix: str, ds: dict[str, Any],
    kinds: dict[str, list[int]], found: dict[str, set[int]], data_bytes: int,
) -> tuple[dict, dict, dict]:  # fmt: skip
    """The figures, checks and inputs of one size from its measured runs, the datasketch loop's last output,
    the planted rows and the rows each audit flagged."""
    sizes = {"audit": rows, "audit_nodup": rows, "datasketch": rows, "audit_small": small_rows,
             "audit_small_nodup": small_rows, "fixed": FIXED_ROWS}  # fmt: skip
    fig: dict[str, Any] = {}
    for name, rs in runs.items():
        fig.update(H.runs_figures(name, WHAT[name], rs, sizes[name], suffix))
    wall = {k: [r.wall_s for r in v] for k, v in runs.items()}
    cpu = {k: [r.cpu_s for r in v] for k, v in runs.items()}
    rss = {k: [r.peak_rss_mb for r in v] for k, v in runs.items()}
    fig["datasketch_vs_audit.x" + suffix] = H.ratio_figure(
        "datasketch loop's wall time / mcqa-prep audit's (ahead when above 1)", wall["datasketch"], wall["audit"],
        target={"op": ">=", "value": TARGET_AHEAD},
    )  # fmt: skip
    fig["datasketch_vs_audit.cpu_x" + suffix] = H.ratio_figure(
        "datasketch loop's CPU time / mcqa-prep audit's", cpu["datasketch"], cpu["audit"]
    )
    for leg, label in (("audit", "with the duplicate index"), ("audit_nodup", "--no-duplicates")):
        fig[f"{leg}.rss_growth_mb{suffix}"] = H.figure(
            f"mcqa-prep audit {label}: peak RSS at {rows:,} rows minus at {small_rows:,}", "MB",
            [a - b for a, b in zip(rss[leg], rss[leg.replace("audit", "audit_small")], strict=True)], digits=1,
        )  # fmt: skip
    if suffix == "@full":
        fig["audit.wall_s@full"]["target"] = {"op": "<=", "value": TARGET_S}
    fig["datasketch.index_s" + suffix] = H.figure(
        "datasketch loop: building the LSH of the benchmark questions (its own clock)", "s", [ds["index_s"]]
    )
    fig["datasketch.loop_s" + suffix] = H.figure(
        "datasketch loop: reading and querying the rows (its own clock)", "s", [ds["loop_s"]]
    )
    checks = {
        **found_checks("audit", found["audit"], kinds, rows),
        **found_checks("datasketch", set(ds["found"]), kinds, rows),
        "audit_nodup.same_contaminated_rows": found["audit_nodup"] == found["audit"],
    }
    inputs = {
        "rows": rows,
        "rows_small": small_rows,
        "planted_rows": sum(map(len, kinds.values())),
        "parquet_mb": round(data_bytes / 2**20, 1),
        "benchmark_questions": ds["questions"],
    }
    suffixed = lambda d: {k + suffix: v for k, v in d.items()}  # noqa: E731
    return fig, suffixed(checks), suffixed(inputs)


# ---- the library choice, in process -------------------------------------------------------------------


def minhash_docs(n: int) -> tuple[Any, Any]:
    """Feature sets (word pairs, the audit's MinHash features) of n MMLU-Pro-shaped questions (mostly 10
    options, as the dataset's rows): (feats, offsets) as features.kgrams gives them."""
    from mcqa_prep.audit import features as ft
    from mcqa_prep.audit.text import options_words, words

    qs = A.questions(102, n, range(16, 48), A.Vocabulary(), n_options=(10, 10, 10, 9, 4))
    docs = [[words(q["question"]), *options_words(q["options"])] for q in qs]
    return ft.kgrams(docs, 2, short=True)


def minhash_micro(rounds: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """CPU microseconds per document: rensa as the audit calls it, datasketch's MinHash on the same features."""
    from datasketch import MinHash

    from mcqa_prep.audit import features as ft

    feats, offsets = minhash_docs(MICRO_DOCS)
    as_bytes = [
        [int(x).to_bytes(8, "little") for x in feats[offsets[d] : offsets[d + 1]]] for d in range(MICRO_DOCS)
    ]
    base = MinHash(num_perm=ft.NUM_PERM)
    perms, scheme = base.permutations, base.scheme

    def rensa() -> float:
        t0 = time.process_time()
        ft.signatures(feats, offsets)
        return (time.process_time() - t0) / MICRO_DOCS * 1e6

    def datasketch() -> float:
        t0 = time.process_time()
        for b in as_bytes:
            MinHash(num_perm=ft.NUM_PERM, permutations=perms, scheme=scheme).update_batch(b)
        return (time.process_time() - t0) / MICRO_DOCS * 1e6

    rensa(), datasketch()  # warm-up: imports, first calls
    got = H.interleave({"rensa": rensa, "datasketch": datasketch}, rounds)
    fig = {
        "minhash.rensa_us": H.figure(
            "MinHash signature per document, rensa as the audit calls it (64 permutations; CPU)", "µs",
            got["rensa"], digits=2,
        ),
        "minhash.datasketch_us": H.figure(
            "MinHash signature per document, datasketch MinHash.update_batch (64 permutations; CPU)", "µs",
            got["datasketch"], digits=2,
        ),
        "minhash.x": H.ratio_figure(
            "MinHash per document: datasketch's CPU time / rensa's", got["datasketch"], got["rensa"]
        ),
    }  # fmt: skip
    inputs = {
        "minhash.documents": MICRO_DOCS,
        "minhash.features_per_document": round(len(feats) / MICRO_DOCS, 1),
    }
    return fig, inputs


# ---- the document -------------------------------------------------------------------------------------


def run(scale: float = 1.0, *, rounds: int = 3, full: bool = False) -> dict[str, Any]:
    """The result document (docs/design/performance.md, "Result format")."""
    from importlib.metadata import version

    res: dict[str, Any] = {
        "bench": "audit",
        "title": "mcqa-prep audit against MMLU + MMLU-Pro + GPQA-shaped files, beside a datasketch LSH loop",
        "figures": {},
        "checks": {},
        "inputs": {"workers": WORKERS, "planted_share": PLANTED, "fixed_rows": FIXED_ROWS},
        "peers": {"datasketch": version("datasketch"), "rensa": version("rensa")},
    }
    work = Path(tempfile.mkdtemp(prefix="mcqa-bench-audit-"))
    try:
        fig, inputs = minhash_micro(rounds)
        res["figures"].update(fig)
        res["inputs"].update(inputs)
        sizes = [(max(ROWS_MIN, int(ROWS * scale)), "")] + ([(FULL_ROWS, "@full")] if full else [])
        for rows, suffix in sizes:
            fig, checks, inputs = measure_at(rows, rounds, suffix, work)
            res["figures"].update(fig)
            res["checks"].update(checks)
            res["inputs"].update(inputs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return res


if __name__ == "__main__":
    H.standalone(run, __doc__)
