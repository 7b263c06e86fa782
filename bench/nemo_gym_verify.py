"""NeMo Gym 0.7.0's verify path over a JSONL file of verify requests, as a command (rescore's peer).

    python bench/nemo_gym_verify.py REQUESTS.jsonl OUT.jsonl [--grading]

Per line, what its resources server does for one POST /verify minus HTTP: orjson.loads, its request model
(`MCQAVerifyRequest.model_validate`), `verify()`, the response model serialised (`model_dump_json`), one line
written. With --grading, the peer of `mcqa-prep rescore --output-shape grading` (the same output size): instead
of the whole response model, one small line per row with the row's line, id (its uuid), reward and extracted
answer (orjson). NeMo Gym's code is loaded from its wheel (bench/nemo_gym_ref.py, `make bench-deps`); its import and
start-up are part of the command's time, as mcqa-prep's are of its own.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv: list[str]) -> int:
    import nemo_gym_ref
    import orjson

    grading = "--grading" in argv
    src, dst = [a for a in argv if a != "--grading"]
    ng = nemo_gym_ref.load()
    loads, dumps, opt = orjson.loads, orjson.dumps, orjson.OPT_APPEND_NEWLINE
    n = 0
    with open(src, "rb") as fh, open(dst, "wb") as out:
        if grading:
            for line in fh:
                row = loads(line)
                r = ng.verify_result(row)
                n += 1
                out.write(
                    dumps(
                        {
                            "line": n,
                            "id": row.get("uuid"),
                            "reward": r.reward,
                            "extracted_answer": r.extracted_answer,
                        },
                        option=opt,
                    )
                )
        else:
            verify = ng.verify_row
            for line in fh:
                out.write(verify(loads(line)) + b"\n")
                n += 1
    print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
