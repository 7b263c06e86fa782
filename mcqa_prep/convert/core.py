"""convert(): source rows -> NeMo Gym `mcqa` rows, streamed in one pass, written atomically.

Per row: decode (shapes) -> identity (uuid5 of the source identity and row index) -> template (weighted,
by the uuid's hash) -> option order (balance) -> prompt (templates) -> self-check (the prompt graded as a
response must yield no letter) -> write; or a reject with its reason. Counts: read = written + rejected.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as _dt
import decimal
import hashlib
import math
import os
import re
import uuid as uuidlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from hashlib import blake2b, sha1
from pathlib import Path
from typing import Any

import orjson

from .. import __version__
from ..errors import InputError, McqaPrepError, UsageError
from ..grader import grade_text
from ..io import AtomicFile
from ..io.paths import check_output
from ..io.writers import output_error
from . import presets as presetmod
from .balance import Balancer, RowRandom, arrange, norm_pin, pinned_positions
from .checks import TemplateChecker
from .outputs import REPORT_NAME, Outputs
from .shapes import LETTERS, REJECT_REASONS, ColumnMap, Extractor, RowReject
from .sources import Source, plan_sources
from .templates import Template, TemplateMix, load_templates

REPORT_VERSION = 1
# uuid5 namespace of converted rows: uuid5(NAMESPACE_URL, "mcqa-prep/convert")
NAMESPACE = uuidlib.uuid5(uuidlib.NAMESPACE_URL, "mcqa-prep/convert")
BIAS_RATIO = 2.0  # report warning: a gold letter over twice its uniform share ...
BIAS_MIN_ROWS = 20  # ... among at least this many rows with that option count

Progress = Callable[..., Any]


class ConvertError(McqaPrepError):
    """The conversion produced no usable output (every row rejected)."""


@dataclass
class ConvertReport:
    """What convert() did: the JSON report (also written as convert.json in directory mode) and the first
    rejects for display."""

    doc: dict[str, Any]
    rejects_shown: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return self.doc


# ------------------------------------------------------------------------------------------ helpers


def _jsonable(v: Any) -> Any:
    """Source values that JSON cannot hold as such (NaN, dates, bytes, decimals) made representable; only
    for metadata copied from the source, never for grading fields."""
    if v is None or isinstance(v, (str, bool)):
        return v
    if isinstance(v, int):
        return v if -(2**63) <= v < 2**64 else str(v)  # orjson holds 64-bit integers only
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (_dt.date, _dt.datetime, _dt.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode("ascii")
    return str(v)


def _dumps(row: dict[str, Any]) -> bytes:
    """One JSONL line (UTF-8, newline included). orjson: the standard library's encoder took 30 of the 50 us
    a row may cost at the 20,000 rows/s target; orjson takes 2."""
    try:
        return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # a source value orjson cannot hold (e.g. an integer beyond 64 bits, non-str keys)
        return orjson.dumps(_jsonable(row), option=orjson.OPT_APPEND_NEWLINE)


_NS_BYTES = NAMESPACE.bytes
# the variant bits of an RFC 4122 uuid: the first hex digit of the fourth group is 8, 9, a or b
_VARIANT = {c: "89ab"[int(c, 16) & 3] for c in "0123456789abcdef"}


def row_uuid(name: bytes) -> str:
    """uuid5(NAMESPACE, name) as text, without building a UUID object (a third of the cost)."""
    h = sha1(_NS_BYTES + name).hexdigest()
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"


_ANSWER_COLON = re.compile(r"answer\s*:", re.IGNORECASE)
_BOXED_MODES = ("strict_single_letter_boxed", "lenient_boxed")


class _SelfCheck:
    """Grades a rendered prompt as if it were a response (it must yield no letter). grade_text decides; a
    conservative pre-test skips the call when no letter is possible: no output_regex pattern matches the
    prompt, and for the boxed modes the last \\boxed{ is empty or absent, for lenient_answer_colon no
    'answer:' occurs."""

    def __init__(self, t: Template):
        self.t = t
        pats = [t.output_regex] if isinstance(t.output_regex, str) else list(t.output_regex or [])
        self.patterns = []
        for p in pats:
            try:
                self.patterns.append(re.compile(p, re.IGNORECASE))
            except re.error:
                self.patterns = None  # type: ignore[assignment]
                break
        self.tm = t.template_metadata()
        t.compile()
        plan = t._plan
        tail = plan[-1] if plan and type(plan[-1]) is str else ""
        i = tail.rfind("\\boxed{")
        # A boxed-mode template without output_regex whose fixed closing text holds an empty \boxed{}: that
        # box is the last one of every prompt it renders, and the boxed modes read only the last box, so no
        # prompt can yield a letter (the built-in `boxed` template)
        self.never = (
            not pats and t.grading_mode in _BOXED_MODES and i >= 0 and tail.startswith("\\boxed{}", i)
        )

    def possible(self, prompt: str) -> bool:
        if self.patterns is None:
            return True
        for p in self.patterns:
            if p.search(prompt):
                return True
        mode = self.t.grading_mode
        if mode in _BOXED_MODES:
            i = prompt.rfind("\\boxed{")
            return i >= 0 and not prompt.startswith("\\boxed{}", i)
        if mode == "lenient_answer_colon":
            return _ANSWER_COLON.search(prompt) is not None
        return True

    def check(self, prompt: str, options: list[dict[str, str]], gold: str) -> None:
        """Raise RowReject when the prompt is graded to a letter (call when possible(prompt))."""
        res = grade_text(prompt, options, gold, self.t.grading_mode, self.tm)
        if res.extracted_answer is not None or res.status == "regex_timeout":
            got = res.extracted_answer or "a timeout"
            raise RowReject(
                "prompt_self_graded",
                f"the prompt itself is graded as {got} under template {self.t.id!r} "
                f"({res.rule or res.mode}): a response that echoes it would score",
            )


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.resolve().relative_to(parent.resolve())
        return True
    except (ValueError, OSError):
        return False


def default_rejects(out: Path) -> Path:
    """`x.jsonl` -> `x.rejects.jsonl`; a directory `d` -> `d.rejects.jsonl` beside it (never inside, where
    `prepare` and `validate` would read it as data)."""
    if out.suffix == ".jsonl":
        return out.with_name(out.name[: -len(".jsonl")] + ".rejects.jsonl")
    return out.with_name(out.name + ".rejects.jsonl")


def _check_paths(out: Path, rejects: Path, args: Sequence[str], sources: Sequence[Source]) -> None:
    inputs = [*args, *(src.path for src in sources if src.path is not None)]
    check_output(out, inputs)
    check_output(rejects, inputs, "the rejects file")
    for src in sources:
        if src.path is not None and _inside(src.path, out):
            raise UsageError(f"the output {out} holds an input ({src.path})", reason="output_is_input")
    if _same(out, rejects):
        raise UsageError(
            f"the output and the rejects file are the same path ({out})", reason="output_is_rejects"
        )
    seen: dict[tuple[Any, ...], Source] = {}
    for src in sources:
        key = (src.dataset, src.config, src.split, src.file, src.start_index)  # shards continue a numbering
        if key in seen:
            raise UsageError(
                f"{seen[key].label} and {src.label} have the same identity (dataset {src.dataset!r}, split "
                f"{src.split!r}, file {src.file!r}): their rows would get the same uuids",
                reason="same_source_identity",
            )
        seen[key] = src
    if out.suffix != ".jsonl" and out.exists():
        if not out.is_dir():
            raise UsageError(f"-o {out}: exists and is not a directory (a file output must end in .jsonl)")
        if any(out.iterdir()) and not (out / REPORT_NAME).is_file():
            raise UsageError(
                f"-o {out}: the directory exists and was not written by convert (no {REPORT_NAME}); "
                "choose a new output directory or remove it"
            )
    if out.suffix == ".jsonl" and out.is_dir():
        raise UsageError(f"-o {out}: is a directory")


def _bias_warnings(hist: dict[str, dict[int, list[int]]], shuffled: bool) -> list[str]:
    out = []
    for key, by_n in hist.items():
        for n, counts in by_n.items():
            total = sum(counts)
            if total < BIAS_MIN_ROWS:
                continue
            top = max(range(n), key=counts.__getitem__)
            if counts[top] > BIAS_RATIO * total / n:
                where = f" in {key}" if key else ""
                fix = "" if shuffled else "; pass --shuffle --seed N to balance the gold positions"
                out.append(
                    f"gold letter {LETTERS[top]} in {counts[top]} of {total} rows with {n} options{where} "
                    f"({100 * counts[top] / total:.0f}%, uniform is {100 / n:.0f}%){fix}"
                )
    return out


# ------------------------------------------------------------------------------------------ mapping


def _map_for(src: Source, columns: list[str], preset: str | None, pairs: Sequence[str], drop: Sequence[str]):
    """(ColumnMap, preset name or None) for one source: an explicit preset, else a complete --map, else the
    preset detected from the dataset id or the columns, with --map pairs applied on top."""
    chosen = None
    if preset and preset != "auto":
        chosen = presetmod.get_preset(preset)
        cmap = chosen.cmap.with_pairs(pairs)
    else:
        cmap = ColumnMap().with_pairs(pairs)
        try:
            cmap.check()
        except UsageError:
            chosen = presetmod.for_dataset(src.dataset) if src.kind == "hub" else None
            chosen = chosen or presetmod.detect(columns)
            if chosen is None:
                shown = ", ".join(repr(c) for c in columns[:40])
                raise UsageError(
                    f"{src.label}: no preset matches the columns ({shown})",
                    reason="no_preset",
                    columns=columns[:40],
                ) from None
            cmap = chosen.cmap.with_pairs(pairs)
    if drop:
        from dataclasses import replace

        cmap = replace(cmap, drop=tuple(dict.fromkeys([*cmap.drop, *drop])))
    cmap.check()
    return cmap, (chosen.name if chosen else None)


# ------------------------------------------------------------------------------------------ convert


def convert(
    sources: Sequence[str],
    out: str | os.PathLike,
    *,
    preset: str | None = None,
    mapping: Sequence[str] = (),
    templates: Sequence[str] = (),
    shuffle: bool = False,
    seed: int = 0,
    pins: Sequence[str] = (),
    drop: Sequence[str] = (),
    revision: str | None = None,
    config: str | None = None,
    split: str | None = None,
    dataset: str | None = None,
    rejects: str | os.PathLike | None = None,
    verify: bool = True,
    progress: Progress | None = None,
    max_shown: int = 20,
) -> ConvertReport:
    """Convert SOURCES into NeMo Gym mcqa rows at `out` (a .jsonl file, or a directory of <split>.jsonl).
    Raises UsageError (bad option, missing input, template failing its controls), InputError (unreadable
    input), ConvertError (no row could be converted). Nothing is written under `out` unless it succeeds."""
    out_p = Path(out)
    if str(out) == "-":
        raise UsageError("-o -: convert writes a file or a directory (output must be atomic), not stdout")
    rejects_p = Path(rejects) if rejects is not None else default_rejects(out_p)
    tmpls = load_templates(templates)
    mix = TemplateMix(tmpls)
    srcs = plan_sources(
        sources,
        revision=revision,
        config=config,
        split=split,
        dataset=dataset,
        verify=verify,
        progress=progress,
    )
    _check_paths(out_p, rejects_p, sources, srcs)
    if revision is not None and not any(s.kind == "hub" for s in srcs):
        raise UsageError("a revision applies to hub datasets (owner/name); no source is one", reason="usage")
    if config is not None and not any(s.kind == "hub" or s.commit is not None for s in srcs):
        raise UsageError(
            "a config applies to hub datasets and pulled directories; no source is one", reason="usage"
        )
    user_pins = frozenset(norm_pin(p) for p in pins if p.strip())
    uses_row = any(t.uses_row() for t in tmpls)

    checker = TemplateChecker()
    outputs = Outputs(out_p)
    balancer = Balancer()
    # BLAKE2b's salt (16 bytes) is part of its parameter block: keying by the seed costs nothing per row
    seed_salt = hashlib.sha256(b"mcqa-prep/convert seed %d" % seed).digest()[:16]
    by_reason: Counter[str] = Counter()
    tpl_rows: Counter[str] = Counter()
    n_rows: Counter[int] = Counter()
    n_pinned = n_gold_pinned = 0
    shown: list[dict[str, Any]] = []
    src_docs: list[dict[str, Any]] = []
    tms = {t.id: t.template_metadata() for t in tmpls}
    slots = []
    for t in tmpls:
        sc = _SelfCheck(t)
        t.compile()
        possible = (lambda _prompt: False) if sc.never else sc.possible
        slots.append((t.id, t.row_renderer(), t.grading_mode, tms[t.id], possible, sc.check))
    meta_convert_base = {"tool_version": __version__, "shuffle_seed": seed if shuffle else None}

    total = None
    if all(s.kind == "parquet" for s in srcs):
        total = sum(s.num_rows() or 0 for s in srcs)
    bar = progress(total=total, desc="convert", unit="row") if progress is not None else None
    rejects_atomic = AtomicFile(rejects_p, "wb")
    rj = None
    try:
        outputs.open()
        rj = rejects_atomic.__enter__()
        pending = 0
        for src in srcs:
            columns = src.columns()
            sdoc = {
                **src.identity(),
                "kind": src.kind,
                "path": src.label,
                "read": 0,
                "written": 0,
                "rejected": 0,
            }
            src_docs.append(sdoc)
            if columns is None:
                continue  # an empty source
            cmap, pname = _map_for(src, columns, preset, mapping, drop)
            sdoc["preset"] = pname
            sdoc["map"] = cmap.to_dict()
            ext = Extractor(cmap, columns, where=src.label)
            proj = None if uses_row else _projection(ext)
            key = outputs.key_for(src)
            fh = None
            ident = src.identity()
            prefix = "\x1f".join([src.dataset, src.config or "", src.split, src.file or ""]) + "\x1f"
            meta_convert = {**meta_convert_base, "preset": pname}
            extract = ext.extract
            pick = mix.pick_index
            checked = checker.done
            counts = balancer.counts
            choose = balancer.choose
            place_free = balancer.place_free
            n_read = n_written = n_rejected = 0
            for index, line, data, error in src.rows(proj):
                n_read += 1
                pending += 1
                if pending >= 1024 and bar is not None:
                    bar.update(pending)
                    pending = 0
                try:
                    if error is not None:
                        raise RowReject("malformed_row", error)
                    item = extract(data)
                    name = (prefix + str(index)).encode("utf-8", "surrogatepass")
                    u = row_uuid(name)
                    h = blake2b(name, digest_size=32, salt=seed_salt).digest()
                    k = pick(int.from_bytes(h[:8], "big"))
                    tid, render, mode, tm, possible, check = slots[k]
                    question, choices, gold, sidx, context, ident_col, subject, kept = item
                    n = len(choices)
                    if (tid, n) not in checked:
                        checker.ensure(mix.templates[k], n, data)
                    if shuffle:
                        rng = RowRandom(int.from_bytes(h[8:], "big"))
                        pinned = pinned_positions(choices, user_pins)
                        if not pinned:
                            target, perm = place_free(key, n, gold, rng)
                        else:
                            n_pinned += 1
                            if gold in pinned:
                                target = gold
                                n_gold_pinned += 1
                            else:
                                target = choose(key, n, [p for p in range(n) if p not in pinned], rng)
                            perm = arrange(n, gold, pinned, target, rng)
                        texts = [*map(choices.__getitem__, perm)]
                        osi = [*map(sidx.__getitem__, perm)]
                    else:
                        target = gold
                        texts = choices
                        osi = sidx
                    letters = LETTERS[:n]
                    prompt = render(question, texts, context, subject, data)
                    if not prompt or prompt.isspace():
                        raise UsageError(
                            f"template {tid!r} rendered an empty prompt for {src.label} row {index}"
                        )
                    options = [{L: x} for L, x in zip(letters, texts)]  # noqa: B905 - equal lengths
                    gold_letter = letters[target]
                    if possible(prompt):
                        check(prompt, options, gold_letter)
                    src_meta = {**ident, "row": index}
                    if ident_col is not None:
                        src_meta["id"] = ident_col
                    meta = {
                        "source": src_meta,
                        "convert": {
                            **meta_convert,
                            "option_source_index": osi,
                            "gold_source_index": sidx[gold],
                        },
                    }
                    if subject is not None:
                        meta["subject"] = subject
                    if kept:
                        meta["source_fields"] = kept
                    line_out = _dumps(
                        {
                            "responses_create_params": {"input": [{"role": "user", "content": prompt}]},
                            "options": options,
                            "expected_answer": gold_letter,
                            "grading_mode": mode,
                            "template_metadata": tm,
                            "uuid": u,
                            "metadata": meta,
                        }
                    )
                except RowReject as r:
                    n_rejected += 1
                    by_reason[r.reason] += 1
                    rec = {
                        "reason": r.reason,
                        "message": r.message,
                        "source": {**ident, "row": index, "line": line, "path": src.label},
                        "row": _jsonable(data) if data is not None else None,
                    }
                    rj.write(_dumps(rec))
                    if len(shown) < max_shown:
                        shown.append(rec)
                    continue
                c = counts.get((key, n))
                if c is None:
                    c = counts[(key, n)] = [0] * n
                c[target] += 1
                if fh is None:
                    fh = outputs.handle(key)
                fh.write(line_out)
                n_written += 1
                tpl_rows[tid] += 1
                n_rows[n] += 1
            sdoc["read"] += n_read
            sdoc["written"] += n_written
            sdoc["rejected"] += n_rejected
            outputs.rows[key] += n_written
        if bar is not None and pending:
            bar.update(pending)

        read = sum(s["read"] for s in src_docs)
        written = sum(s["written"] for s in src_docs)
        rejected = sum(s["rejected"] for s in src_docs)
        if written == 0:
            first = ""
            if shown:
                s0 = shown[0]["source"]
                first = f"; first: {s0['path']}:{s0['line']}: {shown[0]['message']} [{shown[0]['reason']}]"
            reasons = ", ".join(f"{k} {v}" for k, v in by_reason.most_common())
            raise ConvertError(
                f"no row could be converted ({read} read, {rejected} rejected: {reasons or 'no rows'}){first}",
                reason="nothing_converted",
            )
        hist = {}
        for (key, n), c in sorted(balancer.counts.items()):
            hist.setdefault(key, {})[n] = c
        doc = {
            "report_version": REPORT_VERSION,
            "tool_version": __version__,
            "ok": True,
            "output": str(out_p),
            "output_files": [
                {"path": path, "split": key or None, "rows": outputs.rows[key]}
                for key, path in outputs.names().items()
            ],
            "rejects": str(rejects_p),
            "counts": {
                "read": read,
                "written": written,
                "rejected": rejected,
                "rejected_by_reason": dict(sorted(by_reason.items())),
            },
            "sources": src_docs,
            "templates": [{**t.describe(), "rows": tpl_rows[t.id]} for t in tmpls],
            "template_controls": checker.checked,
            "shuffle": {
                "enabled": shuffle,
                "seed": seed if shuffle else None,
                "pins": sorted(user_pins),
                "rows_with_pins": n_pinned,
                "gold_pinned": n_gold_pinned,
            },
            "option_counts": {str(n): c for n, c in sorted(n_rows.items())},
            "gold_histogram": {
                (key or "all"): {str(n): dict(zip(LETTERS[:n], c, strict=True)) for n, c in by_n.items()}
                for key, by_n in hist.items()
            },
            "gold_spread": {
                (key or "all"): {str(n): s for n, s in by_n.items()}
                for key, by_n in balancer.spread().items()
            },
            "warnings": _bias_warnings(hist, shuffle),
        }
        assert read == written + rejected
        rejects_atomic.__exit__(None, None, None)
        rj = None
        try:
            outputs.commit(doc)
        except BaseException:
            # the rows could not be put in place: their rejects file must not stay, looking complete
            with contextlib.suppress(OSError):
                rejects_p.unlink()
            raise
        return ConvertReport(doc, shown)
    except BaseException as exc:
        if rj is not None:
            rejects_atomic.__exit__(type(exc), exc, exc.__traceback__)
        outputs.abort(exc)
        if isinstance(exc, OSError):  # a full disk, a read-only directory: a failure, not a crash
            raise _os_failure(exc, out_p) from None
        raise
    finally:
        checker.close()
        if bar is not None and hasattr(bar, "close"):
            bar.close()


def _os_failure(exc: OSError, out: Path) -> McqaPrepError:
    """An OSError that reached convert: an output error (with the writers' reason: disk full, read-only,
    permission) unless it names a file that is not one of the outputs."""
    name = exc.filename
    if name is None or str(name) == str(out) or str(name).startswith(str(out.parent / f".{out.name}.")):
        return output_error(exc, out)
    return InputError(f"{name}: read failed: {exc.strerror or exc}", reason="input_unreadable")


def _projection(ext: Extractor) -> list[str]:
    cols = [ext.question, ext.choices, ext.correct, ext.answer, ext.context, ext.id, ext.subject]
    cols += ext.options + ext.incorrect + ext.keep
    return sorted({c.key for c in cols if c is not None})


def reject_reasons() -> dict[str, str]:
    return dict(REJECT_REASONS)


def template_list() -> list[Template]:
    from .templates import BUILTIN

    return list(BUILTIN.values())
