"""Measure the `robust` mode on a corpus of real model output (tests/robust_real/README.md, the format).

    python tests/robust_real/measure.py DIR_OR_FILE [...] [--json] [--misses] [--by lang,tags]

Every `*.jsonl` under the given directories (or the given files) is graded through `grade_text` in mode
`robust`, the question's label scheme passed as `template_metadata.option_labels` (from the case's
`labels`: see `option_labels`), and the response's context as a verify request gives it (`grade_request`):
the rendered prompt (the case's `prompt`, where the dump had it) and, for a case whose `finish` says the
generation stopped at its token limit ("length"), that it was cut off. A case is scored on the letter alone:

- right: the letter equals `want` (a letter, or None for no answer);
- false positive: a letter came back where `want` is None or another letter (a wrong reward);
- miss: no letter where `want` is a letter.

Contested cases (`"contested": true`) are reported apart and not counted. Figures are printed per source
and pooled (and, with --by, per value of other fields). Exit status 0; 1 when no case was read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from mcqa_prep.grader import grade_text  # noqa: E402
from mcqa_prep.grader.request import CUT_FINISH_REASONS  # noqa: E402

# Label schemes of the corpus (`labels`) -> what the grader is told (template_metadata.option_labels):
# "lower", "numbers", or the labels themselves in option order for a native script.
NATIVE_LABELS: dict[str, str | tuple[str, ...]] = {
    "cyrillic": "АБВГДЕЖЗИК",
    "arabic": "أبجدهوزحطي",
    "persian": "الفبپتثجچحخ",
    "hebrew": "אבגדהוזחטי",
    "greek": "ΑΒΓΔΕΖΗΘΙΚ",
    "katakana": "アイウエオカキクケコ",
    "japanese": "アイウエオカキクケコ",
    "hangul": "가나다라마바사아자차",
    "korean": "가나다라마바사아자차",
    "devanagari": "कखगघङचछजझञ",
    "hindi": "कखगघङचछजझञ",
    "bengali": "কখগঘঙচছজঝঞ",
    "thai": "กขคงจฉชซฌญ",
    "circled": "①②③④⑤⑥⑦⑧⑨⑩",
    # Persian alphabet order as Persian exams label options: the first label is the three-letter name الف
    # (not the abjad الف ب ج د, and not one character per label as "persian" above reads).
    "persian-alefba": ("الف", "ب", "پ", "ت", "ث", "ج", "چ", "ح"),
}


def option_labels(labels: Any) -> str | tuple[str, ...] | None:
    """template_metadata.option_labels for a case's `labels` field (None: Latin capitals, the default)."""
    if not isinstance(labels, str) or labels in ("", "latin", "upper", "letters"):
        return None
    if labels in ("lower", "numbers"):
        return labels
    if labels.startswith("native:"):
        script = labels.split(":", 1)[1].strip().lower()
        return NATIVE_LABELS.get(script, script if len(script) >= 2 and not script.isascii() else None)
    return None


def load(paths: Iterable[Path]) -> Iterator[dict[str, Any]]:
    """Every case of every *.jsonl file under `paths`, in sorted file order; `_file` names its file."""
    files: list[Path] = []
    for p in paths:
        files.extend(sorted(p.rglob("*.jsonl")) if p.is_dir() else [p])
    for f in files:
        with f.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    case = json.loads(line)
                    case["_file"] = f"{f.name}:{n}"
                    yield case


def grade(case: dict[str, Any]) -> Any:
    options = [{k: v} for k, v in case["options"].items()]
    tm = dict(case.get("template_metadata") or {})
    labels = option_labels(case.get("labels"))
    if labels is not None:
        tm.setdefault("option_labels", labels)
    return grade_text(
        case["text"], options, case.get("want") or "", None, tm or None, override="robust", **context(case)
    )


def context(case: dict[str, Any]) -> dict[str, str | None]:
    """grade_text's `prompt` and `incomplete` for a case: its `prompt`, and why it was cut off: its
    `incomplete` reason (golden cases), or its `finish` when that says the generation stopped at its limit."""
    prompt = case.get("prompt")
    cut = case.get("incomplete")
    if cut is None and case.get("finish") in CUT_FINISH_REASONS:
        cut = case["finish"]
    return {
        "prompt": prompt if isinstance(prompt, str) and prompt else None,
        "incomplete": cut if isinstance(cut, str) and cut else None,
    }


class Tally:
    """Right / counted, false positives, misses (by tag) and contested cases of one group."""

    def __init__(self) -> None:
        self.counted = self.right = self.false_pos = self.misses = self.contested = 0
        self.contested_agree = 0
        self.fp_by_tag: Counter[str] = Counter()
        self.miss_by_tag: Counter[str] = Counter()

    def add(self, case: dict[str, Any], got: str | None) -> None:
        want = case.get("want")
        if case.get("contested"):
            self.contested += 1
            self.contested_agree += got == want
            return
        self.counted += 1
        tags = case.get("tags") or ["untagged"]
        if got == want:
            self.right += 1
        elif got is not None:
            self.false_pos += 1
            self.fp_by_tag.update(tags)
        else:
            self.misses += 1
            self.miss_by_tag.update(tags)

    def as_dict(self) -> dict[str, Any]:
        return {
            "counted": self.counted,
            "right": self.right,
            "rate": round(self.right / self.counted, 4) if self.counted else None,
            "false_positives": self.false_pos,
            "misses": self.misses,
            "contested": self.contested,
            "contested_same_as_want": self.contested_agree,
            "false_positives_by_tag": dict(self.fp_by_tag.most_common()),
            "misses_by_tag": dict(self.miss_by_tag.most_common()),
        }

    def line(self, name: str) -> str:
        rate = f"{100 * self.right / self.counted:.1f}%" if self.counted else "-"
        s = f"{name:34s} {self.right:5d}/{self.counted:<5d} {rate:>6s}  fp {self.false_pos:3d}  miss {self.misses:3d}"
        if self.contested:
            s += f"  (contested {self.contested}, {self.contested_agree} as labelled)"
        return s


def measure(cases: Iterable[dict[str, Any]], by: tuple[str, ...] = ()) -> dict[str, Any]:
    """Per source, pooled and per value of each field in `by`; with every wrong case listed."""
    pooled = Tally()
    per_source: dict[str, Tally] = defaultdict(Tally)
    per_field: dict[str, dict[str, Tally]] = {f: defaultdict(Tally) for f in by}
    wrong: list[dict[str, Any]] = []
    for case in cases:
        r = grade(case)
        got = r.extracted_answer
        for t in (pooled, per_source[str(case.get("source", "?"))]):
            t.add(case, got)
        for f in by:
            values = case.get(f)
            for v in values if isinstance(values, list) else [values]:
                per_field[f][str(v)].add(case, got)
        if got != case.get("want") and not case.get("contested"):
            wrong.append(
                {"id": case.get("id"), "file": case["_file"], "got": got, "want": case.get("want"),
                 "kind": "false_positive" if got is not None else "miss", "rule": r.rule,
                 "message": r.message, "tags": case.get("tags", [])}
            )  # fmt: skip
    return {
        "pooled": pooled,
        "sources": dict(sorted(per_source.items())),
        "by": {f: dict(sorted(v.items())) for f, v in per_field.items()},
        "wrong": wrong,
    }


def report(result: dict[str, Any], *, misses: bool) -> str:
    out = [f"{'source':34s} right/counted   rate"]
    out += [t.line(name) for name, t in result["sources"].items()]
    out.append(result["pooled"].line("POOLED"))
    for f, groups in result["by"].items():
        out.append(f"\nby {f}:")
        out += [t.line(f"  {v}") for v, t in groups.items()]
    p = result["pooled"]
    if p.fp_by_tag:
        out.append("\nfalse positives by tag: " + ", ".join(f"{k} {n}" for k, n in p.fp_by_tag.most_common()))
    if p.miss_by_tag:
        out.append("misses by tag: " + ", ".join(f"{k} {n}" for k, n in p.miss_by_tag.most_common()))
    if misses:
        out.append("")
        for w in result["wrong"]:
            out.append(
                f"{w['kind']:14s} {w['id']} got {w['got']} want {w['want']} ({w['rule']}; {w['message']})"
            )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", type=Path, help="directories (every *.jsonl below) or files")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    ap.add_argument("--misses", action="store_true", help="list every wrong case")
    ap.add_argument("--by", default="", help="also group by these fields, comma-separated (lang,tags,...)")
    args = ap.parse_args(argv)
    by = tuple(f for f in args.by.split(",") if f)
    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        print(f"not found: {', '.join(missing)}", file=sys.stderr)
        return 1
    result = measure(load(args.paths), by)
    if result["pooled"].counted + result["pooled"].contested == 0:
        print("no cases found", file=sys.stderr)
        return 1
    if args.json:
        doc = {
            "pooled": result["pooled"].as_dict(),
            "sources": {k: v.as_dict() for k, v in result["sources"].items()},
            "by": {f: {k: v.as_dict() for k, v in g.items()} for f, g in result["by"].items()},
            "wrong": result["wrong"],
        }
        print(json.dumps(doc, ensure_ascii=False, sort_keys=True))
    else:
        print(report(result, misses=args.misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
