"""Pass-rate tables since passrates.v2 (posterior, counting rule): measuring them as a command, and reading them,
each next to a baseline measured in the same rounds.

Synthetic rescored rollouts: 2 models, 8 rollouts per question (pass probabilities drawn from a Beta per model;
a failed rollout answers another letter or nothing), each carrying its grading contract as `rescore` writes it
and a response as NeMo Gym's rollouts carry one (the model's output items: one message of 300 to 2,000
characters of varied text, distinct per rollout, ending in the answer format). Without the responses (the
input before round 6 of the perf sprint) whole lines repeated, as they rarely do in real rollouts.

- measure (a command, bench/harness.py: wall, CPU, process-tree peak RSS): `mcqa-prep passrates ROLLOUTS -o
  TABLE -q` against the floor `bench/floors.py parse ROLLOUTS` (every line orjson.loads, nothing else, one core,
  the JSON library the command uses), interleaved;
- read (a library call, `passrates.table.read_table`; CPU seconds of this process, interleaved, after one
  untimed call of each): the v2 table, the same entries written as a passrates.v1 table (the format before
  issue 27; read today, its posterior computed on reading), that v1 table read without the posterior (the
  reader before issue 27), and the floor of parsing every entry line with orjson;
- the prior fit alone (`passrates.posterior.fit_prior` over the distinct (n, c) pairs).

    python bench/bench_passrates.py [--scale 0.05] [--rounds 3]      # prints one JSON document
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import harness as H  # noqa: E402

QUESTIONS = 20_000  # at scale 1
MODELS = {"m-a": (2.0, 3.0), "m-b": (4.0, 1.5)}  # Beta(a, b) of each model's pass probability
ROLLOUTS_PER_QUESTION = 8


_WORDS = tuple(
    (
        "the a of and to in is that for it as with by on this be are from at which an or option answer "
        "question statement correct incorrect because however therefore thus consider each step first second "
        "finally value energy rate pressure temperature cell protein gene market price law court theorem "
        "function integral limit sample mean variance probability reaction acid base charge field force mass "
        "velocity period frequency country policy century treaty author novel poem argument premise evidence "
        "claim follows implies contradicts supports weakens strengthens assumes increases decreases remains "
        "constant equal greater less than not only also both neither nor if then since so we can see here"
    ).split()
)


def _response(rng: random.Random, model: str, n: int, answer: str | None) -> dict[str, Any]:
    """A NeMo Gym-shaped `response` (ng_collect_rollouts: the model's output items): one assistant message
    of 300 to 2,000 characters of varied text, distinct per rollout, ending in the answer format
    (\\boxed{X}), or without one for a rollout that gave no answer."""
    words = rng.choices(_WORDS, k=rng.randint(50, 330))
    for i in range(12, len(words), rng.randint(10, 25)):  # sentences and paragraphs
        words[i] += ".\n\n" if i % 5 == 0 else "."
    text = " ".join(words) + (f". The answer is \\boxed{{{answer}}}" if answer else ". I cannot decide.")
    return {
        "id": f"resp_{n:048x}",
        "created_at": 1756093415.0 + n,
        "model": model,
        "object": "response",
        "output": [
            {
                "id": f"msg_{n:048x}",
                "content": [{"annotations": [], "text": text, "type": "output_text", "logprobs": []}],
                "role": "assistant",
                "status": "completed",
                "type": "message",
            }
        ],
        "status": "completed",
        "usage": {"input_tokens": 250, "output_tokens": len(words) + 8, "total_tokens": len(words) + 258},
    }


def _rows(questions: int, seed: int = 0, responses: bool = True) -> Iterator[dict[str, Any]]:
    """The bench's rescored rollouts; each carries a response unless `responses` is False (the input before
    the responses were added: identical lines repeat in it, as they rarely do in real rollouts)."""
    from mcqa_prep.policy import GradingPolicy

    rng = random.Random(seed)
    text_rng = random.Random(
        seed + 1
    )  # (its own stream: the counts are those of the input without responses)
    n = 0
    contract = GradingPolicy().contract()
    cid = GradingPolicy().contract_id()
    grading = {"status": "ok", "contract": cid, "grader_version": contract["grader_version"]}
    for model, (a, b) in MODELS.items():
        for q in range(questions):
            p = rng.betavariate(a, b)
            for _ in range(ROLLOUTS_PER_QUESTION):
                ok = rng.random() < p
                answer = "A" if ok else rng.choice(("B", "C", None))
                row = {
                    "responses_create_params": {
                        "input": [{"role": "user", "content": f"Question {q}?"}],
                        "model": model,
                    },
                    "uuid": f"q{q:07d}",
                    "reward": 1.0 if ok else 0.0,
                    "extracted_answer": answer,
                    "metadata": {"grading": grading},
                }
                if responses:
                    row["response"] = _response(text_rng, model, n, answer)
                n += 1
                yield row


def as_v1(table: Path, out: Path) -> Path:
    """The same table as passrates.v1 wrote it (the documented hash recipe)."""
    from mcqa_prep.policy import canonical_json

    lines = table.read_bytes().splitlines(keepends=True)
    header = json.loads(lines[0])
    for k in ("counting", "posterior", "metrics", "consistency"):  # consistency: passrates.v3's
        header.pop(k, None)
    header["table_schema"] = "passrates.v1"
    for k in ("unanswered_only", "answers_unknown"):
        header["counts"].pop(k)
    keep = ("key", "mean_reward", "model", "pass_rate", "passes", "samples")
    body = [
        json.dumps({k: json.loads(ln)[k] for k in keep}, separators=(",", ":")).encode() + b"\n"
        for ln in lines[1:]
    ]
    hashed = {k: v for k, v in header.items() if k not in ("content_sha256", "created_at", "tool")}
    h = hashlib.sha256(canonical_json(hashed) + b"\n")
    for ln in body:
        h.update(ln)
    header["content_sha256"] = h.hexdigest()
    out.write_bytes(json.dumps(header).encode() + b"\n" + b"".join(body))
    return out


def _cpu(fn: Callable[[], Any]) -> Callable[[], float]:
    def timed() -> float:
        t0 = time.process_time()
        fn()
        return time.process_time() - t0

    return timed


def read_legs(v2: Path, v1: Path) -> dict[str, Callable[[], float]]:
    import orjson

    import mcqa_prep.passrates.estimate as est
    from mcqa_prep.passrates.posterior import fit_prior
    from mcqa_prep.passrates.table import read_table

    def v1_bare() -> None:  # the reader before issue 27: no posterior computed
        saved = est.with_posterior
        est.with_posterior = lambda entries, *a, **k: (entries, {})
        try:
            read_table(v1)
        finally:
            est.with_posterior = saved

    pairs = [(e.samples, e.passes) for per in read_table(v2).entries.values() for e in per.values()]
    return {
        "v2": _cpu(lambda: read_table(v2)),
        "v1": _cpu(lambda: read_table(v1)),
        "v1_bare": _cpu(v1_bare),
        "floor": _cpu(lambda: [orjson.loads(ln) for ln in v2.read_bytes().splitlines()]),
        "fit_prior": _cpu(lambda: fit_prior(pairs)),
    }


READ_WHAT = {
    "v2": "read_table of the v2 table",
    "v1": "read_table of the same entries as a v1 table (its posterior computed on reading)",
    "v1_bare": "read_table of that v1 table without the posterior (the reader before issue 27)",
    "floor": "floor: orjson.loads of every line of the v2 table",
    "fit_prior": "fit_prior alone (the distinct (n, c) pairs of every entry)",
}


def run(scale: float = 1.0, *, rounds: int = 3, full: bool = False) -> dict[str, Any]:
    """The result document (docs/design/performance.md, "Result format"). `full` changes nothing here."""
    import orjson

    questions = max(500, int(QUESTIONS * scale))
    rollouts = len(MODELS) * ROLLOUTS_PER_QUESTION * questions
    entries = len(MODELS) * questions
    res: dict[str, Any] = {
        "bench": "passrates",
        "title": "passrates (measure as a command; read_table) against orjson parsing floors",
        "figures": {},
        "checks": {},
        "inputs": {"questions": questions, "rollouts": rollouts, "entries": entries},
    }
    work = Path(tempfile.mkdtemp(prefix="mcqa-bench-passrates-"))
    try:
        src = work / "rescored.jsonl"
        with open(src, "wb") as fh:
            fh.writelines(orjson.dumps(r) + b"\n" for r in _rows(questions))
        table = work / "table.jsonl"
        legs = {
            "measure": lambda: H.measure([*H.cli(), "passrates", str(src), "-o", str(table), "-q"]),
            "floor": lambda: H.measure(H.py("floors.py", "parse", str(src))),
        }
        runs = H.interleave(legs, rounds)
        fig = res["figures"]
        fig.update(H.runs_figures("measure", "mcqa-prep passrates (measure)", runs["measure"], rollouts))
        fig.update(
            H.runs_figures("floor", "floor: orjson.loads of every rollout line", runs["floor"], rollouts)
        )
        fig["measure_vs_floor.x"] = H.ratio_figure(
            "passrates wall time / the floor's",
            [r.wall_s for r in runs["measure"]],
            [r.wall_s for r in runs["floor"]],
            target={"op": "<=", "value": 3.0},  # issue 36
        )
        fig["measure_vs_floor.cpu_x"] = H.ratio_figure(
            "passrates CPU time / the floor's",
            [r.cpu_s for r in runs["measure"]],
            [r.cpu_s for r in runs["floor"]],
        )
        res["inputs"]["rollouts_mb"] = round(src.stat().st_size / 2**20, 1)
        res["inputs"]["table_mb"] = round(table.stat().st_size / 2**20, 1)
        v1 = as_v1(table, work / "v1.jsonl")
        reads = read_legs(table, v1)
        for leg in reads.values():  # untimed: imports, caches
            leg()
        cpu = H.interleave(reads, rounds)
        for name, samples in cpu.items():
            fig[f"read.{name}.cpu_s"] = H.figure(f"{READ_WHAT[name]}: CPU seconds", "s", samples, digits=4)
        fig["read.v2.us_per_entry"] = H.figure(
            "read_table of the v2 table: CPU microseconds per entry",
            "µs",
            [s / entries * 1e6 for s in cpu["v2"]],
            1,
        )
        for other, what in (("v1", "a v1 table read today"), ("v1_bare", "a v1 table read without the posterior"),
                            ("floor", "parsing the entry lines")):  # fmt: skip
            fig[f"read.v2_vs_{other}.x"] = H.ratio_figure(
                f"read_table of the v2 table / {what} (CPU time)", cpu["v2"], cpu[other]
            )
        from mcqa_prep.passrates.table import read_table

        res["checks"]["entries_read"] = sum(len(per) for per in read_table(table).entries.values())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=0.25)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(json.dumps(run(args.scale, rounds=args.rounds), indent=1))


if __name__ == "__main__":
    main()
