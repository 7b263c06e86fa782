"""`mcqa-prep convert` (Parquet in, JSONL out) as a command next to the one-core read-serialise floor.

Two synthetic sources, each converted with --shuffle through every stage of a real run (decode, uuid, template
pick, controls, balanced order, render, self-check, serialise, write):
- mmlu_pro: the MMLU-Pro layout (question, options: 4-10 texts with some N/A padding, answer_index, category),
  the mmlu_pro preset, a 70/30 mix of the `boxed` and `final_choice` templates;
- mmlu_4: the MMLU layout (question, 4 choices, answer index), the mmlu preset, the default template.

Legs (bench/harness.py), `rounds` times per source, the order rotated each round: floor (bench/floors.py parquet:
pyarrow -> to_pylist -> orjson -> write, one core) and `mcqa-prep convert SRC -o OUT ...` at its default workers
(the row engine on every core this process may use: --shuffle in two passes). Targets: 20,000 rows per second,
and the command within 3x the floor's time.

    python bench/bench_convert.py [--scale 0.1] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness as H  # noqa: E402

ROWS = 100_000
FLOOR = 20_000
WORDS = (
    "cell",
    "gene",
    "acid",
    "wave",
    "mass",
    "law",
    "force",
    "energy",
    "protein",
    "the",
    "of",
    "Carbon",
    "membrane",
    "voltage",
    "market",
    "court",
)


def make_parquet(path: Path, n: int, seed: int = 0) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rnd = random.Random(seed)
    writer = None
    batch: list[dict[str, Any]] = []
    for i in range(n):
        k = rnd.randint(4, 10)
        opts = [
            " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 9))) + f" ({i}.{j})" for j in range(k)
        ]
        if k < 10 and i % 3 == 0:
            opts += ["N/A"] * (10 - k)
        gold = rnd.randrange(k)
        batch.append(
            {
                "question_id": i,
                "question": f"Question {i}: "
                + " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(12, 40)))
                + "?",
                "options": opts,
                "answer": "ABCDEFGHIJ"[gold],
                "answer_index": gold,
                "cot_content": "",
                "category": rnd.choice(("physics", "law", "biology", "economics")),
                "src": "bench",
            }
        )
        if len(batch) == 5000 or i == n - 1:
            table = pa.Table.from_pylist(batch)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
            batch = []
    assert writer is not None
    writer.close()
    return path


def make_mmlu_parquet(path: Path, n: int, seed: int = 1) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rnd = random.Random(seed)
    rows = [
        {
            "question": f"Question {i}: "
            + " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(12, 40)))
            + "?",
            "subject": rnd.choice(("college_physics", "professional_law", "anatomy")),
            "choices": [
                " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(2, 8))) + f" ({i}.{j})"
                for j in range(4)
            ],
            "answer": rnd.randrange(4),
        }
        for i in range(n)
    ]
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


SOURCES = {
    "mmlu_pro": ("MMLU-Pro layout, 4-10 options, 70% boxed + 30% final_choice", make_parquet,
                 ["--preset", "mmlu_pro", "--template", "boxed:0.7", "--template", "final_choice:0.3"]),
    "mmlu_4": ("MMLU layout, 4 options, boxed", make_mmlu_parquet, ["--preset", "mmlu", "--template", "boxed"]),
}  # fmt: skip


def run(scale: float = 1.0, *, rounds: int = 3, full: bool = False) -> dict[str, Any]:
    """The result document (docs/design/performance.md, "Result format")."""
    rows = max(1000, int(ROWS * scale))
    fig: dict[str, Any] = {}
    inputs: dict[str, Any] = {"rows": rows}
    cli = H.cli()
    work = Path(tempfile.mkdtemp(prefix="mcqa-bench-convert-"))
    try:
        for key, (what, make, args) in SOURCES.items():
            src = make(work / f"{key}-test.parquet", rows)
            out = work / f"{key}.jsonl"
            argv = [*cli, "convert", str(src), "-o", str(out), "--shuffle", "--seed", "0", *args, "-q"]
            legs = {
                "floor": lambda src=src: H.measure(
                    H.py("floors.py", "parquet", str(src), str(work / "f.jsonl"))
                ),
                "convert": lambda argv=argv: H.measure(argv, cwd=work),
            }
            runs = H.interleave(legs, rounds)
            fig.update(
                H.runs_figures(
                    f"{key}.floor", f"{what}: floor (bench/floors.py parquet)", runs["floor"], rows
                )
            )
            fig.update(H.runs_figures(f"{key}.convert", f"{what}: mcqa-prep convert", runs["convert"], rows))
            fig[f"{key}.convert.rows_per_s"]["target"] = {"op": ">=", "value": FLOOR}
            fig[f"{key}.convert_vs_floor.x"] = H.ratio_figure(
                f"{what}: convert wall time / the floor's",
                [r.wall_s for r in runs["convert"]], [r.wall_s for r in runs["floor"]],
                target={"op": "<=", "value": 3.0},  # issue 36
            )  # fmt: skip
            with open(out, "rb") as fh:
                inputs[f"{key}.written"] = sum(1 for _ in fh)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "bench": "convert",
        "title": "mcqa-prep convert against the read-serialise floor",
        "figures": fig,
        "checks": {},
        "inputs": inputs,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=0.1)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    print(json.dumps(run(args.scale, rounds=args.rounds), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
