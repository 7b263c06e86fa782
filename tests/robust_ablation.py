"""Ablation of the `robust` phrase tables: build the mode without one table entry and see what changes.

Every entry of every table in `phrases.py` and `languages.py` (an element of a tuple, list or frozenset of
strings, a word of a triple-quoted string split into words, a key of a dict, a row of `ANCHORS_OTHER_LANGUAGES`, a pair of
`REASONING_MARKERS`, a character of a string of characters), and every script of the package's label table
(`SCRIPTS` in mcqa_prep/labels.py, which the mode reads), is removed from the source, the package is built
again from the patched source (as `mcqa_prep.grader._ablated`, next to the real one; a patched label table
is the `mcqa_prep.labels` it imports while it is built), and cases are graded with it. An entry whose removal changes no outcome of any case is dead weight: the tables should hold
only what some response needs.

    python tests/robust_ablation.py            # report entries and how many witnesses each has
    python tests/robust_ablation.py --write    # (re)write data/golden/robust_phrase_witnesses.json

`tests/test_robust_phrases.py` checks the recorded witnesses: every entry has one, and removing the entry
changes its outcome.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.abc
import importlib.util
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

PACKAGE = REPO / "mcqa_prep" / "grader" / "robust"
TABLE_FILES = ("phrases.py", "languages.py")
LABELS = "mcqa_prep/labels.py"  # the package's label table: only its SCRIPTS, one entry per script
LABELS_MODULE = "mcqa_prep.labels"
PATHS = {**{name: PACKAGE / name for name in TABLE_FILES}, LABELS: REPO / LABELS}
WITNESSES = REPO / "data" / "golden" / "robust_phrase_witnesses.json"
POOL = (
    [REPO / "data" / "golden" / "robust_cases.jsonl"]
    + sorted((REPO / "tests" / "robust_corpus").glob("*.jsonl"))
    + sorted((REPO / "tests" / "robust_real" / "tune").glob("*.jsonl"))
)
ABLATED = "mcqa_prep.grader._ablated"
sys.path.insert(0, str(REPO / "tests" / "robust_real"))
import measure  # noqa: E402

from mcqa_prep.grader.letters import allowed_letters  # noqa: E402
from mcqa_prep.grader.robust.derive import literal_prefixes  # noqa: E402


class Entry(NamedTuple):
    file: str  # phrases.py, languages.py or mcqa_prep/labels.py
    table: str  # the table's name
    index: int  # position in the table (in source order)
    text: str  # the entry, as written (a word, a pattern, a key, an anchor's word, a marker pair)
    span: tuple[int, int, int, int]  # (line, col, end line, end col) of its node, or of the word in a string

    @property
    def key(self) -> str:
        return f"{self.table}[{self.text}]"


# --------------------------------------------------------------------------------------------------
# Entries
# --------------------------------------------------------------------------------------------------


def _elements(node: ast.expr) -> list[tuple[ast.AST, str]] | None:
    """(node, text) of each entry of a table literal, or None when `node` is not a table."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "frozenset":
        return _elements(node.args[0]) if node.args else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "split":
        return None  # (handled by word: see entries())
    if isinstance(node, ast.Dict):
        return [(k, k.value) for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        out: list[tuple[ast.AST, str]] = []
        for e in node.elts:
            if isinstance(e, ast.Constant) and isinstance(e.value, str):
                out.append((e, e.value))
            elif isinstance(e, ast.Call) and getattr(e.func, "id", "") == "Anchor":
                word = e.args[0].value if e.args and isinstance(e.args[0], ast.Constant) else "?"
                out.append((e, f"Anchor({word}#{e.lineno})"))
            elif isinstance(e, ast.Call) and getattr(e.func, "id", "") == "Script":
                name = e.args[0].value if e.args and isinstance(e.args[0], ast.Constant) else "?"
                out.append((e, f"Script({name})"))
            elif isinstance(e, ast.Tuple) and all(isinstance(x, ast.Constant) for x in e.elts):
                out.append((e, " ~ ".join(str(x.value) for x in e.elts)))
        return out
    return None


def entries() -> list[Entry]:
    out: list[Entry] = []
    for name, path in PATHS.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if not isinstance(target, ast.Name) or value is None or not target.id.isupper():
                continue
            if name == LABELS and target.id != "SCRIPTS":
                continue
            table = target.id
            if isinstance(value, ast.Call) and getattr(value.func, "attr", "") == "split":
                words = value.func.value.value.split()  # type: ignore[union-attr]
                out += [Entry(name, table, i, w, _pos(value)) for i, w in enumerate(words)]
                _SPLIT_TABLES.add(table)
                continue
            if (
                isinstance(value, ast.Constant)
                and isinstance(value.value, str)
                and table.endswith("OPERATORS")
            ):
                out += [Entry(name, table, i, c, _pos(value)) for i, c in enumerate(value.value)]
                continue
            found = _elements(value)
            if found:
                ends = dict(zip(value.keys, value.values, strict=True)) if isinstance(value, ast.Dict) else {}
                for i, (n, text) in enumerate(found):
                    span = _pos(n)
                    if n in ends:  # (a dict's key: the entry runs to the end of its value)
                        span = (span[0], span[1], *_pos(ends[n])[2:])
                    out.append(Entry(name, table, i, text, span))
    return out


def _pos(n: ast.AST) -> tuple[int, int, int, int]:
    return (n.lineno, n.col_offset, n.end_lineno or n.lineno, n.end_col_offset or 0)  # type: ignore[attr-defined]


def ablated_source(entry: Entry) -> str:
    """The source of entry.file without the entry."""
    source = PATHS[entry.file].read_text(encoding="utf-8")
    tree = ast.parse(source)
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if not isinstance(target, ast.Name) or target.id != entry.table:
            continue
        value = node.value  # type: ignore[union-attr]
        if isinstance(value, ast.Call) and getattr(value.func, "attr", "") == "split":
            words = value.func.value.value.split()  # type: ignore[union-attr]
            del words[entry.index]
            value.func.value.value = " ".join(words)  # type: ignore[union-attr]
        elif isinstance(value, ast.Constant):
            value.value = value.value[: entry.index] + value.value[entry.index + 1 :]
        else:
            _remove(value, entry)
        return ast.unparse(tree)
    raise KeyError(entry.key)


def _remove(value: ast.expr, entry: Entry) -> None:
    if isinstance(value, ast.Call):  # frozenset(...)
        value = value.args[0]
    found = _elements(value)
    assert found is not None
    target = found[entry.index][0]
    if isinstance(value, ast.Dict):
        k = value.keys.index(target)  # type: ignore[arg-type]
        del value.keys[k]
        del value.values[k]
    else:
        value.elts.remove(target)  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------------
# Building the package from patched sources
# --------------------------------------------------------------------------------------------------


class _Loader(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves `mcqa_prep.grader._ablated.*` from the robust package's files, with patched sources."""

    def __init__(self) -> None:
        self.patched: dict[str, str] = {}
        self._code: dict[tuple[str, str], Any] = {}

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != ABLATED and not name.startswith(ABLATED + "."):
            return None
        mod = "__init__" if name == ABLATED else name.rsplit(".", 1)[1]
        file = PACKAGE / f"{mod}.py"
        if not file.exists():
            return None
        spec = importlib.util.spec_from_loader(name, self, origin=str(file), is_package=name == ABLATED)
        if name == ABLATED:
            spec.submodule_search_locations = [str(PACKAGE)]  # type: ignore[union-attr]
        return spec

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: Any) -> None:
        file = Path(module.__spec__.origin)
        source = self.patched.get(file.name)
        if source is None:
            source = file.read_text(encoding="utf-8")
        key = (file.name, source)
        code = self._code.get(key)
        if code is None:
            code = compile(source, str(file), "exec")
            if file.name not in TABLE_FILES:
                self._code[key] = code
        module.__file__ = str(file)
        exec(code, module.__dict__)


_LOADER = _Loader()
sys.meta_path.insert(0, _LOADER)


def build(patched: dict[str, str]) -> Any:
    """The robust package built from the given patched sources (file name -> source); its extract_robust."""
    for name in [m for m in sys.modules if m == ABLATED or m.startswith(ABLATED + ".")]:
        del sys.modules[name]
    _LOADER.patched = patched
    if LABELS not in patched:
        return importlib.import_module(ABLATED).extract_robust
    real = sys.modules[LABELS_MODULE]
    table = importlib.util.module_from_spec(importlib.util.spec_from_loader(LABELS_MODULE, loader=None))
    exec(compile(patched[LABELS], str(PATHS[LABELS]), "exec"), table.__dict__)
    sys.modules[LABELS_MODULE] = table  # (what the ablated package imports while it is built)
    try:
        return importlib.import_module(ABLATED).extract_robust
    finally:
        sys.modules[LABELS_MODULE] = real


# --------------------------------------------------------------------------------------------------
# Cases and outcomes
# --------------------------------------------------------------------------------------------------


def pool() -> dict[str, dict[str, Any]]:
    """Every case of the pool by "file:id"."""
    out: dict[str, dict[str, Any]] = {}
    for path in POOL:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                c = json.loads(line)
                c["_hay"] = (c["text"] + " " + " ".join(str(v) for v in c["options"].values())).lower()
                out[f"{path.name}:{c['id']}"] = c
    return out


def outcome(extract: Any, case: dict[str, Any]) -> tuple[Any, str, Any]:
    """What grading says: the letter, the status and the rule that decided."""
    letters = allowed_letters([{k: v} for k, v in case["options"].items()])
    tm = dict(case.get("template_metadata") or {})
    labels = measure.option_labels(case.get("labels"))
    if labels is not None:
        tm.setdefault("option_labels", labels)
    ext = extract(case["text"], letters, tm or None, **measure.context(case))
    return ext.letter, ext.status, ext.rule


_WORD_RE = re.compile(r"[^\W\d_]{2,}")


_REGEX_SYNTAX = re.compile(r"[\\()\[\]?*+|{}^$]")


def needles(entry: Entry) -> list[str]:
    """What must occur in a case (lower-cased) for the entry to matter there: the entry itself when it is
    plain text (a word, a mark, a marker), the anchor's word of an anchor row, else the words of a regex."""
    text = entry.text
    if text.startswith("Anchor("):
        return [text[7:].split("#")[0].lower()]
    if text.startswith("Script("):  # (its labels, their other spellings, its look-alikes)
        from mcqa_prep.labels import SCRIPTS

        (s,) = [s for s in SCRIPTS if f"Script({s.name})" == text]
        return sorted({c.lower() for run in (*s.label_runs, s.spellings, s.lookalikes) for c in run})
    if entry.table == "REASONING_MARKERS":
        return [m.lower() for m in text.split(" ~ ")]
    from robust_witness_templates import REGEX_TABLES

    if entry.table not in REGEX_TABLES:
        return [text.lower()]
    try:
        prefixes = literal_prefixes(text)
    except re.error:  # (a mark such as "+" is no pattern)
        return [text.lower()]
    # a regex: the first word of each way a match can start (its literal prefixes), or everything
    found = {_WORD_RE.match(re.sub(r"\\(.)", r"\1", p.replace(r"\s+", " "))) for p in prefixes}
    return sorted({m.group().lower() for m in found if m is not None}) if all(found) else [""]


def relevant(entry: Entry, case: dict[str, Any], hay: str) -> bool:
    """A cheap filter: something the entry needs occurs in the case (text or options, lower-cased)."""
    return any(n in hay for n in needles(entry))


def still_witnesses(entry: Entry, cases: list[dict[str, Any]], full: Any) -> bool:
    """Some of the recorded witness cases still change outcome without the entry."""
    if not cases:
        return False
    extract = build({entry.file: ablated_source(entry)})
    return any(outcome(extract, c) != outcome(full, c) for c in cases)


def witnesses(entry: Entry, cases: dict[str, dict[str, Any]], full: Any, limit: int = 3) -> Iterator[str]:
    """Cases whose outcome changes without the entry (at most `limit`)."""
    extract = build({entry.file: ablated_source(entry)})
    n = 0
    for cid, case in cases.items():
        if not relevant(entry, case, case["_hay"]):
            continue
        if outcome(extract, case) != outcome(full, case):
            yield cid
            n += 1
            if n >= limit:
                return


def from_templates(dead: list[Entry], all_entries: list[Entry], full: Any) -> dict[str, dict[str, Any]]:
    """A witness case per dead entry where one of its table's templates changes outcome without it."""
    import robust_witness_templates as W

    out: dict[str, dict[str, Any]] = {}
    for entry in dead:
        candidates = W.witness_texts(entry, all_entries)
        if not candidates:
            continue
        extract = build({entry.file: ablated_source(entry)})
        for text, options, tm in candidates:
            case = {"text": text, "options": options, "template_metadata": tm}
            got = outcome(full, case)
            if outcome(extract, case) != got:
                cid = f"w-{entry.table.lower().replace('_', '-')}-{entry.index}"
                out[entry.key] = {"id": cid, "text": text, "options": options, "want": got[0],
                                  "status": got[1], "note": f"witness of {entry.key}"}  # fmt: skip
                if tm:
                    out[entry.key]["template_metadata"] = tm
                break
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help=f"write {WITNESSES.relative_to(REPO)}")
    ap.add_argument("--only", default="", help="only tables whose name contains this")
    ap.add_argument("--reuse", action="store_true", help="keep the recorded witnesses; search only the rest")
    ap.add_argument(
        "--templates", action="store_true", help="write witness cases for entries without one (golden cases)"
    )
    args = ap.parse_args(argv)
    cases = pool()
    full = build({})
    known = json.loads(WITNESSES.read_text(encoding="utf-8")) if args.reuse and WITNESSES.exists() else {}
    found: dict[str, list[str]] = {}
    dead = []
    for entry in entries():
        if args.only and args.only not in entry.table:
            continue
        w = known.get(entry.key) or []
        if w and not still_witnesses(entry, [cases[i] for i in w if i in cases], full):
            w = []
        if not w:
            w = list(witnesses(entry, cases, full))
        found[entry.key] = w
        if not w:
            dead.append(entry)
            print(f"DEAD {entry.file}:{entry.span[0]} {entry.key}", flush=True)
        if args.write and len(found) % 50 == 0:  # (progress kept: a long run may be resumed with --reuse)
            WITNESSES.write_text(
                json.dumps({**known, **found}, ensure_ascii=False, indent=0, sort_keys=True) + "\n",
                encoding="utf-8",
            )
    print(f"{len(found)} entries, {len(dead)} without a witness")
    if args.write:
        WITNESSES.write_text(
            json.dumps(found, ensure_ascii=False, indent=0, sort_keys=True) + "\n", encoding="utf-8"
        )
    if args.templates and dead:
        made = from_templates(dead, entries(), full)
        golden = REPO / "data" / "golden" / "robust_cases.jsonl"
        with golden.open("a", encoding="utf-8") as fh:
            for key, case in made.items():
                fh.write(json.dumps(case, ensure_ascii=False) + "\n")
                found[key] = [f"{golden.name}:{case['id']}"]
        for entry in dead:
            if entry.key not in made:
                print(f"NO TEMPLATE WORKS {entry.file}:{entry.span[0]} {entry.key}")
        print(f"{len(made)} witness cases written, {len(dead) - len(made)} entries still without one")
    if args.write:
        WITNESSES.write_text(
            json.dumps(found, ensure_ascii=False, indent=0, sort_keys=True) + "\n", encoding="utf-8"
        )
    return 0


def prune(victims: list[Entry]) -> None:
    """Remove the given entries from the source files, keeping the formatting of the rest (a tuple's element
    with the comma and space after it; a word of a split string)."""
    for name, path in PATHS.items():
        mine = sorted((e for e in victims if e.file == name), key=lambda e: (e.span, e.index), reverse=True)
        if not mine:
            continue
        lines = path.read_text(encoding="utf-8").split("\n")
        for e in mine:
            (l0, c0, l1, c1) = e.span
            if e.table in _SPLIT_TABLES:
                _drop_word(lines, e)
                continue
            if e.table.endswith("OPERATORS"):  # (a string of characters: drop the character)
                line = lines[l0 - 1]
                q = line.index('"', _chars(line, c0)) + 1 + e.index
                lines[l0 - 1] = line[:q] + line[q + 1 :]
                continue
            assert l0 == l1, e
            line = lines[l0 - 1]
            c0, c1 = _chars(line, c0), _chars(line, c1)  # (ast counts UTF-8 bytes)
            end = c1
            while end < len(line) and line[end] in ", ":
                end += 1
            lines[l0 - 1] = line[:c0] + line[end:]
            if not lines[l0 - 1].strip():
                del lines[l0 - 1]
        path.write_text("\n".join(lines), encoding="utf-8")


_SPLIT_TABLES: set[str] = set()


def _chars(line: str, byte_col: int) -> int:
    return len(line.encode("utf-8")[:byte_col].decode("utf-8"))


def _drop_word(lines: list[str], e: Entry) -> None:
    """The e.index-th word of the split string that starts at e.span (counted over its lines)."""
    (l0, _, l1, _) = e.span
    k = 0
    for li in range(l0 - 1, l1):
        words = list(re.finditer(r"[^\s\"]+", lines[li].split('"""')[-1] if li == l0 - 1 else lines[li]))
        offset = len(lines[li]) - len(lines[li].split('"""')[-1]) if li == l0 - 1 else 0
        for m in words:
            if m.group() in ('""".split()', ".split()"):
                continue
            if k == e.index:
                line = lines[li]
                a, b = m.start() + offset, m.end() + offset
                while b < len(line) and line[b] == " ":
                    b += 1
                lines[li] = line[:a] + line[b:]
                return
            k += 1
    raise KeyError(e.key)


if __name__ == "__main__":
    sys.exit(main())
