"""NeMo Gym 0.7.0's verify path over a JSONL file of verify requests, as a command (rescore's peer).

    python bench/nemo_gym_verify.py REQUESTS.jsonl OUT.jsonl

Per line, what its resources server does for one POST /verify minus HTTP: orjson.loads, its request model
(`MCQAVerifyRequest.model_validate`), `verify()`, the response model serialised (`model_dump_json`), one line
written. NeMo Gym's code is loaded from its wheel (bench/nemo_gym_ref.py, `make bench-deps`); its import and
start-up are part of the command's time, as mcqa-prep's are of its own.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv: list[str]) -> int:
    import nemo_gym_ref
    import orjson

    src, dst = argv
    ng = nemo_gym_ref.load()
    loads, verify = orjson.loads, ng.verify_row
    n = 0
    with open(src, "rb") as fh, open(dst, "wb") as out:
        for line in fh:
            out.write(verify(loads(line)) + b"\n")
            n += 1
    print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
