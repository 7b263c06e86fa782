"""`rescore` end to end (read, grade, write) next to NeMo Gym 0.7.0's verify path and the read-serialise floor.

Synthetic verify requests shaped like NeMo Gym's (the dataset row: a 10-option prompt, options, gold, grading
mode, 30% custom templates with an output_regex; plus a Responses API `response` like NeMo Gym's rollouts, whose
text is ~1,500 characters of reasoning, half of it multilingual, ending in the row's answer format), written as
JSONL once and read by every leg, in the same run:

- floor: read each line, orjson.loads, orjson.dumps, write (the same JSON library every leg uses);
- mcqa-prep: `rescore.rescore` (read, grade, write rescored rows);
- NeMo Gym 0.7.0: per line orjson.loads, its request model (`MCQAVerifyRequest.model_validate`), `verify()`,
  the response model serialised (`model_dump_json`), write; no HTTP (bench/nemo_gym_ref.py);
- before/after: with --baseline-rev REV, the mcqa-prep leg also runs on REV's package (git archive);
  each of these legs runs in a fresh child process, three times, interleaved, keeping its least CPU time;
- workers: `mcqa-prep rescore --workers N` (1, 2) when the CLI has that option, else "n/a";
- Ray: measured by bench_cluster.py (fixed cost per job apart from per-row throughput);
- memory: peak RSS of `mcqa-prep rescore` at the given sizes, for verify requests (no join) and for rollouts
  joined with their dataset rows (--rows: the join index is the state that grows with the dataset).

Single-process rates are rows per CPU second of the process doing the work (other load on a shared machine
barely moves them); workers and Ray are wall-clock rates.

    python bench/bench_rescore.py --rows 20000 [--baseline-rev HEAD~3] [--memory 100000,685573]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from texts import multilingual_prose  # noqa: E402

LETTERS = "ABCDEFGHIJ"
SEED = 20240611
TARGET_RATIO = 5.0
TEMPLATE_REGEX = r"Final Choice:\s*([A-Za-z])"
_TERMS = ["Gibbs free energy", "entropy change", "Michaelis constant", "refractive index", "allele frequency",
          "salt bridge", "trophic cascade", "Nernst equation", "ribosome", "Golgi apparatus"]  # fmt: skip


def _prose(rng: random.Random, chars: int) -> str:
    parts, size = [], 0
    while size < chars:
        a, b = rng.sample(_TERMS, 2)
        s = f"The {a} is related to the {b}, so we compare option {rng.choice(LETTERS)} with the data."
        parts.append(s)
        size += len(s) + 1
    return " ".join(parts)


def _answer(rng: random.Random, mode: str, letter: str, custom: bool) -> str:
    if custom:
        return f"Final Choice: {letter}"
    if mode == "lenient_answer_colon":
        return f"Answer: {letter}"
    return rng.choice(
        [f"\\boxed{{{letter}}}", f"\\[\n\\boxed{{\\text{{{letter}}}}}\n\\]", f"\\boxed{{{letter}: x}}"]
    )


def dataset_row(rng: random.Random, i: int) -> dict[str, Any]:
    """A dataset row like nvidia/Nemotron-RL-knowledge-mcqa's."""
    options = [
        {c: f"The {rng.choice(_TERMS)} {rng.choice(['rises', 'falls', 'holds'])} ({c}{i % 97})"}
        for c in LETTERS
    ]
    body = "\n".join(f"{c}: {next(iter(o.values()))}" for c, o in zip(LETTERS, options, strict=True))
    row: dict[str, Any] = {
        "responses_create_params": {
            "input": [
                {
                    "role": "user",
                    "content": "You should output your final response letter inside \\boxed{} and nothing else. "
                    f"Question {i}: which statement is correct?\n{body}",
                }
            ]
        },
        "options": options,
        "expected_answer": rng.choice(LETTERS),
        "grading_mode": rng.choice(
            ["strict_single_letter_boxed"] * 8 + ["lenient_boxed", "lenient_answer_colon"]
        ),
        "uuid": f"{i:08x}-0000-4000-8000-bench",
    }
    if rng.random() < 0.3:
        row["template_metadata"] = {
            "template_id": f"mcqa_custom_{rng.randint(0, 40):03d}",
            "output_regex": TEMPLATE_REGEX,
            "prompt_type": "custom",
            "format_type": "mcqa",
        }
    return row


def response(rng: random.Random, row: dict[str, Any], i: int) -> dict[str, Any]:
    """A Responses API response like NeMo Gym's rollouts carry."""
    letter = row["expected_answer"] if rng.random() < 0.7 else rng.choice(LETTERS)
    if rng.random() < 0.5:
        prose = multilingual_prose(rng, row["options"], 1450)
    else:
        prose = _prose(rng, 1450)
    text = f"{prose}\n\n{_answer(rng, row['grading_mode'], letter, 'template_metadata' in row)}"
    return {
        "id": f"resp_{rng.getrandbits(192):048x}",  # hex ids as NeMo Gym writes them (no long digit runs)
        "created_at": 1756093415.0,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "model": "bench-model",
        "object": "response",
        "output": [
            {
                "id": f"msg_{rng.getrandbits(192):048x}",
                "content": [{"annotations": [], "text": text, "type": "output_text", "logprobs": []}],
                "role": "assistant",
                "status": "completed",
                "type": "message",
            }
        ],
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "status": "completed",
        "usage": {
            "input_tokens": 254,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 475,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 729,
        },
    }


def write_inputs(work: Path, n: int, seed: int = SEED) -> tuple[Path, Path, Path]:
    """(verify requests, rollouts without options, dataset rows as Parquet) for n prompts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    requests, rollouts, dataset = work / "requests.jsonl", work / "rollouts.jsonl", work / "train.parquet"
    writer = None
    with open(requests, "wb") as rq, open(rollouts, "wb") as ro:
        batch: list[dict[str, Any]] = []
        for i in range(n):
            row = dataset_row(rng, i)
            resp = response(rng, row, i)
            rq.write(orjson.dumps({**row, "response": resp}) + b"\n")
            ro.write(
                orjson.dumps(
                    {
                        "responses_create_params": row["responses_create_params"],
                        "response": resp,
                        "reward": float(rng.random() < 0.6),
                        "extracted_answer": rng.choice(LETTERS),
                    }
                )
                + b"\n"
            )
            batch.append(row)
            if len(batch) == 5000 or i == n - 1:
                table = pa.Table.from_pylist(batch, schema=writer.schema if writer else None)
                writer = writer or pq.ParquetWriter(dataset, table.schema)
                writer.write_table(table)
                batch = []
    assert writer is not None
    writer.close()
    return requests, rollouts, dataset


# ---- legs -----------------------------------------------------------------------------------------------


def floor_here(src: str, dst: str) -> list[float]:
    """(CPU, wall) seconds of the floor: read every line, orjson loads and dumps it, write it."""
    t0, w0 = time.process_time(), time.perf_counter()
    loads, dumps = orjson.loads, orjson.dumps
    with open(src, "rb") as fh, open(dst, "wb") as out:
        for line in fh:
            out.write(dumps(loads(line)) + b"\n")
    return [time.process_time() - t0, time.perf_counter() - w0]


def ours_here(src: str, dst: str) -> list[float]:
    """(CPU, wall) seconds of rescore.rescore (read, grade, write) with the default policy."""
    from mcqa_prep.policy import GradingPolicy
    from mcqa_prep.rescore.run import rescore

    t0, w0 = time.process_time(), time.perf_counter()
    rescore(src, dst, GradingPolicy())
    return [time.process_time() - t0, time.perf_counter() - w0]


def nemo_gym_here(src: str, dst: str) -> list[float] | None:
    """(CPU, wall) seconds of NeMo Gym's verify path: request model, verify(), response JSON, per line."""
    try:
        import nemo_gym_ref

        ng = nemo_gym_ref.load()
    except Exception:
        return None
    t0, w0 = time.process_time(), time.perf_counter()
    loads, verify = orjson.loads, ng.verify_row
    with open(src, "rb") as fh, open(dst, "wb") as out:
        for line in fh:
            out.write(verify(loads(line)) + b"\n")
    return [time.process_time() - t0, time.perf_counter() - w0]


LEG_CHILD = """
import json, sys
sys.path.insert(0, {root!r})
import mcqa_prep  # first: the package measured is the one under root (bench_rescore puts the working tree first)
assert mcqa_prep.__file__.startswith({root!r}), mcqa_prep.__file__
sys.path.insert(1, {here!r})
import bench_rescore as b
print("@@" + json.dumps(b.{leg}_here({src!r}, {dst!r})))
"""


def leg(name: str, src: Path, dst: Path, root: Path = REPO) -> list[float] | None:
    """(CPU, wall) seconds of one leg in a fresh child process: every leg starts from the same clean state
    (a process that has loaded NeMo Gym, pydantic and the generated rows is not one)."""
    code = LEG_CHILD.format(root=str(root), here=str(HERE), leg=name, src=str(src), dst=str(dst))
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=str(dst.parent), check=False
    )
    out = [ln for ln in p.stdout.splitlines() if ln.startswith("@@")]
    return json.loads(out[-1][2:]) if p.returncode == 0 and out else None


def revision_tree(rev: str, work: Path) -> Path | None:
    """`rev`'s mcqa_prep package extracted under work (git archive), for the before/after leg."""
    tree = work / f"rev-{rev.replace('/', '_')}"
    if not (tree / "mcqa_prep").is_dir():
        tree.mkdir(exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", rev, "mcqa_prep"], capture_output=True, check=False
        )
        if archive.returncode != 0:
            return None
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def rewards_agree(a: Path, b: Path) -> float:
    same = total = 0
    with open(a, "rb") as fa, open(b, "rb") as fb:
        for x, y in zip(fa, fb, strict=True):
            total += 1
            same += orjson.loads(x)["reward"] == orjson.loads(y)["reward"]
    return same / total if total else 0.0


def cli_has_workers() -> bool:
    p = subprocess.run([*_cli(), "rescore", "--help"], capture_output=True, text=True, check=False)
    return re.search(r"(?<![\w-])--workers\b", p.stdout) is not None


def _cli() -> list[str]:
    return [sys.executable, "-m", "mcqa_prep"]


def workers_leg(src: Path, work: Path, n: int) -> float:
    """Wall seconds of `mcqa-prep rescore --workers n` (start-up included)."""
    t0 = time.perf_counter()
    subprocess.run([*_cli(), "rescore", str(src), "-o", str(work / f"w{n}.jsonl"), "--workers", str(n), "-q"],
                   check=False, capture_output=True)  # fmt: skip
    return time.perf_counter() - t0


PEAK_CHILD = """
import atexit, runpy, sys
def _peak():
    with open("/proc/self/status") as fh:
        hwm = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    with open({out!r}, "w") as fh:
        fh.write(str(hwm))
atexit.register(_peak)
sys.argv = ["mcqa-prep", *{args!r}]
runpy.run_module("mcqa_prep", run_name="__main__")
"""


def peak_rss_mb(args: list[str], work: Path) -> tuple[float, float]:
    """(peak RSS in MB, wall seconds) of one CLI run: the process's own VmHWM, read as it exits (ru_maxrss of
    a child would include its parent's RSS at fork)."""
    out = work / "peak.kib"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", PEAK_CHILD.format(out=str(out), args=args)], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    wall = time.perf_counter() - t0
    return round(int(out.read_text()) / 1024, 1), round(wall, 1)


def memory(n: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="mcqa-bench-mem-"))
    try:
        requests, rollouts, dataset = write_inputs(work, n, SEED + 1)
        req_mb, req_s = peak_rss_mb(["rescore", str(requests), "-o", str(work / "o1.jsonl"), "-q"], work)
        join_mb, join_s = peak_rss_mb(
            ["rescore", str(rollouts), "--rows", str(dataset), "-o", str(work / "o2.jsonl"), "-q"], work
        )
        return {"rows": n, "requests_peak_rss_mb": req_mb, "requests_wall_s": req_s,
                "rollouts_join_peak_rss_mb": join_mb, "rollouts_join_wall_s": join_s}  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(rows: int = 100_000, *, baseline_rev: str | None = None, memory_rows: tuple[int, ...] = (),
        repeat: int = 3) -> dict[str, Any]:  # fmt: skip
    """Every leg on the same rows; the single-process legs `repeat` times, interleaved, each keeping its least
    CPU time (on a shared machine one pass of a leg can land in a busy moment; interleaving spreads that)."""
    work = Path(tempfile.mkdtemp(prefix="mcqa-bench-rescore-"))
    try:
        requests, _, _ = write_inputs(work, rows)
        res: dict[str, Any] = {
            "rows": rows,
            "input_mb": round(requests.stat().st_size / 2**20, 1),
            "repeat": repeat,
        }
        best: dict[str, float] = {}
        walls: list[float] = []
        legs: list[tuple[str, str, Path]] = [
            ("floor", "floor", REPO),
            ("ours", "ours", REPO),
            ("nemo_gym", "nemo_gym", REPO),
        ]
        tree = revision_tree(baseline_rev, work) if baseline_rev else None
        if tree is not None:
            legs.append(("baseline", "ours", tree))
        for _ in range(max(1, repeat)):  # interleaved: a busy moment of the machine hits one pass of each
            for key, name, root in legs:
                got = leg(name, requests, work / f"{key}.jsonl", root)
                if got is not None:
                    best[key] = min(best.get(key, float("inf")), got[0])
                    if key == "ours":
                        walls.append(got[1])
        rate = lambda k: round(rows / best[k]) if k in best else None  # noqa: E731
        res.update(floor_rows_per_cpu_s=rate("floor"), ours_rows_per_cpu_s=rate("ours"))
        res["ours_rows_per_wall_s"] = round(rows / min(walls))
        res["floor_ratio"] = round(best["ours"] / best["floor"], 2)
        if "nemo_gym" in best:
            res["nemo_gym_rows_per_cpu_s"] = rate("nemo_gym")
            res["ratio"] = round(best["nemo_gym"] / best["ours"], 2)
            res["same_reward_as_nemo_gym"] = round(
                rewards_agree(work / "ours.jsonl", work / "nemo_gym.jsonl"), 4
            )
        if baseline_rev:
            res["baseline"] = {"rev": baseline_rev, "rows_per_cpu_s": rate("baseline")}
        res["workers"] = (
            {str(n): round(rows / workers_leg(requests, work, n)) for n in (1, 2)}
            if cli_has_workers()
            else "n/a"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if memory_rows:
        res["memory"] = [memory(n) for n in memory_rows]
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--baseline-rev", help="also time the mcqa-prep leg on this git revision's package")
    ap.add_argument("--memory", default="", help="comma-separated row counts for the peak-memory runs")
    args = ap.parse_args()
    mem = tuple(int(x) for x in args.memory.split(",") if x)
    print(json.dumps(run(args.rows, baseline_rev=args.baseline_rev, memory_rows=mem), indent=2))


if __name__ == "__main__":
    main()
