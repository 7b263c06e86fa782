"""Soak and parity for `mcqa-prep serve`, run once and reported (tests/test_serve_parity.py runs a small version).

1. Soak: >= 100,000 requests on loopback from concurrent keep-alive clients, 5% of them hostile (malformed
   JSON, missing or mistyped fields, a catastrophic custom regex, non-UTF-8 bytes, deep nesting, thousands of
   options, a body over the limit, unknown routes); the rest realistic verify requests (bench_serve's).
   Pass: 0 server errors (5xx), 0 lost requests (every request answered), the server's counters account for
   every verify request, and the server's memory (RSS of its process tree) grows by under 10% from 10k to
   100k requests.
2. Parity: 20,000 bench rows through the server next to NeMo Gym 0.7.0's own verify (its request model and
   verify() from the wheel, bench/nemo_gym_ref.py) in the same run. Pass: 0 reward disagreements.

    make soak-serve                           # python bench/run.py --only soak: to bench/results/soak.json
    python bench/soak_serve.py [--scale 1] [--clients 32] [--workers 2]   # print the result document
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import bench_serve  # noqa: E402

Plan = list[tuple[str, str, bytes]]  # (kind, path, body)


def hostile_bodies(good: bytes) -> list[tuple[str, bytes]]:
    """(path, body) of hostile requests built around one good verify body."""
    row = json.loads(good)

    def w(**fields: Any) -> bytes:
        return json.dumps({**row, **fields}).encode()

    text = row["response"]
    return [
        ("/verify", b'{"options": ['),
        ("/verify", b"[1, 2, 3]"),
        ("/verify", json.dumps({k: v for k, v in row.items() if k != "response"}).encode()),
        ("/verify", w(options="A,B")),
        ("/verify", w(expected_answer=3)),
        ("/verify", w(grading_mode="no-such-mode")),
        (
            "/verify",
            w(
                template_metadata={"output_regex": "(a|aa)+$"},
                response={
                    **text,
                    "output": [
                        {"type": "message", "content": [{"type": "output_text", "text": "a" * 40 + "!"}]}
                    ],
                },
            ),
        ),  # fmt: skip
        ("/verify", w(template_metadata={"output_regex": "(["})),
        ("/verify", w(uuid="@@").replace(b'"@@"', b'"\xff\xfe"')),
        ("/verify", b'{"response": ' + b"[" * 5000 + b"]" * 5000 + b"}"),
        ("/verify", w(options=[{f"K{i}": f"o{i}"} for i in range(3000)])),
        ("/verify", w(metadata={"mcqa_prep": {"contract": "sha256:" + "1" * 64}})),
        ("/verify", w(metadata={"mcqa_prep": 42})),
        ("/nope", b"{}"),
        ("/seed_session", b"\x00"),
        ("/aggregate_metrics", b'{"verify_responses": [{"reward": "x"}]}'),
    ]


def plan(
    n: int, bodies: list[bytes], *, hostile_share: float = 0.05, rng: random.Random | None = None
) -> Plan:
    """n requests: `hostile_share` of them hostile, the rest the given verify bodies in turn."""
    rng = rng or random.Random(0)
    hostile = hostile_bodies(bodies[0])
    out: Plan = []
    for i in range(n):
        if rng.random() < hostile_share:
            path, body = hostile[rng.randrange(len(hostile))]
            out.append(("hostile", path, body))
        else:
            out.append(("verify", "/verify", bodies[i % len(bodies)]))
    return out


async def _exchange(
    r: asyncio.StreamReader, w: asyncio.StreamWriter, path: str, body: bytes
) -> tuple[int, bool]:
    w.write(
        b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        % (path.encode(), len(body))
        + body
    )
    await w.drain()
    head = await r.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ")[1])
    headers = {k.strip().lower(): v.strip() for k, v in (ln.split(b":", 1) for ln in lines[1:] if b":" in ln)}
    await r.readexactly(int(headers.get(b"content-length", b"0")))
    return status, headers.get(b"connection", b"").lower() == b"close"


async def drive(url: str, requests: Plan, clients: int = 32) -> dict[str, Any]:
    """Send every planned request from `clients` keep-alive connections; count answers by status class."""
    host, port = url.split("//")[1].rsplit(":", 1)
    todo = iter(enumerate(requests))
    statuses: Counter[int] = Counter()
    by_kind: Counter[str] = Counter()
    examples: list[str] = []
    answered = 0

    async def client() -> None:
        nonlocal answered
        r, w = await asyncio.open_connection(host, int(port))
        for _i, (kind, path, body) in todo:
            by_kind[kind] += 1
            for _attempt in range(2):
                try:
                    status, close = await _exchange(r, w, path, body)
                    break
                except (ConnectionError, asyncio.IncompleteReadError):
                    w.close()
                    r, w = await asyncio.open_connection(host, int(port))
            else:
                continue
            answered += 1
            statuses[status] += 1
            if status >= 500 and len(examples) < 5:
                examples.append(f"{status} {path} {body[:120]!r}")
            if close:
                w.close()
                r, w = await asyncio.open_connection(host, int(port))
        w.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    return {
        "sent": len(requests),
        "answered": answered,
        "lost": len(requests) - answered,
        "server_errors": sum(v for k, v in statuses.items() if k >= 500),
        "by_status": dict(sorted(statuses.items())),
        "by_kind": dict(by_kind),
        "examples": examples,
    }


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children, MB."""
    total = 0
    for p in [pid, *bench_serve._children(pid)]:
        with open(f"/proc/{p}/status") as fh:
            total += next(int(ln.split()[1]) for ln in fh if ln.startswith("VmRSS:"))
    return round(total / 1024, 1)


def soak(requests: int, clients: int, workers: int) -> dict[str, Any]:
    bodies = bench_serve.request_bodies(5000)
    rng = random.Random(11)
    first = plan(10_000, bodies, rng=rng)
    rest = plan(max(0, requests - 10_000), bodies, rng=rng)
    proc, url = bench_serve.start_ours(workers)
    try:
        t0 = time.perf_counter()
        a = asyncio.run(drive(url, first, clients))
        rss_10k = rss_mb(proc.pid)
        b = asyncio.run(drive(url, rest, clients))
        rss_100k = rss_mb(proc.pid)
        wall = time.perf_counter() - t0
        with urllib_open(url + "/metrics?format=json") as fh:
            metrics = json.loads(fh.read())
    finally:
        bench_serve.stop(proc)
    verify_sent = sum(1 for _, path, _ in first + rest if path == "/verify")
    total = {k: a[k] + b[k] for k in ("sent", "answered", "lost", "server_errors")}
    growth = (rss_100k - rss_10k) / rss_10k
    return {
        **total,
        "hostile": a["by_kind"].get("hostile", 0) + b["by_kind"].get("hostile", 0),
        "by_status": dict(Counter(a["by_status"]) + Counter(b["by_status"])),
        "examples": a["examples"] + b["examples"],
        "workers": workers,
        "clients": clients,
        "seconds": round(wall, 1),
        "verify_sent": verify_sent,
        "verify_counted": metrics["verify_requests"],
        "grader_errors": metrics["grader_errors"],
        "rss_mb_at_10k": rss_10k,
        "rss_mb_at_end": rss_100k,
        "rss_growth": round(growth, 4),
        "pass": total["server_errors"] == 0
        and total["lost"] == 0
        and metrics["verify_requests"] == verify_sent
        and growth < 0.10,
    }


def urllib_open(url: str) -> Any:
    import urllib.request

    return urllib.request.urlopen(url, timeout=30)


def parity(rows: int) -> dict[str, Any]:
    import nemo_gym_ref

    ng = nemo_gym_ref.load()
    bodies = bench_serve.request_bodies(rows, seed=99)
    proc, url = bench_serve.start_ours(1)
    try:
        ours = bench_serve.post_all(url, bodies)
    finally:
        bench_serve.stop(proc)
    theirs = [json.loads(ng.verify_row(json.loads(b))) for b in bodies]
    diff = [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a.get("reward") != b["reward"]]
    return {
        "rows": rows,
        "disagreements": len(diff),
        "first": [(i, ours[i].get("reward"), theirs[i]["reward"]) for i in diff[:5]],
        "ours_http_200": sum(1 for a in ours if a["http"] == 200),
        "rewarded": sum(1 for a in ours if a.get("reward") == 1.0),
    }


def run(
    scale: float = 1.0, *, rounds: int = 1, full: bool = False, clients: int = 32, workers: int = 2
) -> dict:
    """The result document (docs/design/performance.md, "Result format"): one soak and one parity run (rounds do not
    apply: the soak is one long run); checks.pass says whether both passed."""
    import harness as H

    par = parity(max(200, int(20_000 * scale)))
    s = soak(max(20_000, int(100_000 * scale)), clients, workers)
    return {
        "bench": "soak",
        "title": "mcqa-prep serve soaked with realistic and hostile requests; parity with NeMo Gym's verify",
        "figures": {
            "rss_mb_at_10k": H.figure("server process tree RSS after 10,000 requests", "MB", [s["rss_mb_at_10k"]], 1),
            "rss_mb_at_end": H.figure(f"server process tree RSS after {s['sent']:,} requests", "MB",
                                      [s["rss_mb_at_end"]], 1),
            "seconds": H.figure("soak wall time", "s", [s["seconds"]], 1),
        },
        "checks": {
            "pass": bool(s["pass"] and par["disagreements"] == 0),
            **{k: s[k] for k in ("sent", "answered", "lost", "server_errors", "hostile", "verify_sent",
                                 "verify_counted", "grader_errors", "rss_growth", "workers", "clients")},
            "by_status": {str(k): v for k, v in s["by_status"].items()},
            "parity_rows": par["rows"],
            "parity_disagreements": par["disagreements"],
        },
        "inputs": {"requests": s["sent"], "clients": clients, "workers": workers, "parity_rows": par["rows"]},
    }  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="requests = scale x 100,000 (parity: x 20,000)")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    res = run(args.scale, clients=args.clients, workers=args.workers)
    print(json.dumps(res, indent=1))
    return 0 if res["checks"]["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
