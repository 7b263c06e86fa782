"""One conversion's row loop: per source, decode (extract) -> identity (uuid5 of the source identity and row
index) -> template (weighted, by the row name's hash) -> option order (balance) -> prompt (templates) ->
self-check (the prompt graded as a response must yield no letter) -> a line in the output, or a reject with
its reason. The counts and per-source documents become the report that `core.convert` commits."""

from __future__ import annotations

import hashlib
import uuid as uuidlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from hashlib import blake2b, sha1
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import InputError, UsageError
from ..io.writers import row_line
from ..jsonsafe import as_text, json_safe
from ..labels import LETTERS
from ..records import display_name
from . import presets as presetmod
from .balance import Balancer, RowRandom, arrange, scan_pins
from .checks import SelfCheck, TemplateChecker
from .extract import Extractor
from .orders import PermuteSpec
from .outputs import Outputs
from .permute import ConvertOrders
from .shapes import ColumnMap, RowReject
from .sources import SourceRow, Stream
from .templates import Template, TemplateMix

REPORT_VERSION = 1
# uuid5 namespace of converted rows: uuid5(NAMESPACE_URL, "mcqa-prep/convert")
NAMESPACE = uuidlib.uuid5(uuidlib.NAMESPACE_URL, "mcqa-prep/convert")
BIAS_RATIO = 2.0  # report warning: a gold letter over twice its uniform share ...
BIAS_MIN_ROWS = 20  # ... among at least this many rows with that option count
WRITE_BLOCK = 512  # output lines gathered per write


def _dumps(row: dict[str, Any]) -> bytes:
    """One JSONL line (UTF-8, newline included), written as every command writes rows (io/writers.row_line:
    orjson, exact integers beyond 64 bits); a source value JSON cannot hold made representable first."""
    try:
        return row_line(row)
    except (TypeError, ValueError):  # NaN, bytes, dates, decimals, non-str keys from the source
        return row_line(json_safe(row, as_text))


_NS_BYTES = NAMESPACE.bytes
# the variant bits of an RFC 4122 uuid: the first hex digit of the fourth group is 8, 9, a or b
_VARIANT = {c: "89ab"[int(c, 16) & 3] for c in "0123456789abcdef"}


def row_uuid(name: bytes) -> str:
    """uuid5(NAMESPACE, name) as text, without building a UUID object (a third of the cost)."""
    h = sha1(_NS_BYTES + name).hexdigest()
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"


# A row's option order: (output key, choices, gold, its random) -> (the gold's new position, the permutation)
Orders = Callable[[str, list[str], int, int], tuple[int, list[int]]]


def row_hash(prefix: str, index: int, salt: bytes) -> tuple[bytes, bytes]:
    """A row's name (its source's prefix and its index: what its uuid5 names) and its hash (BLAKE2b of the
    name, salted by the seed: the first 8 bytes pick its template, the last 24 are its random). One rule for
    the row loop and --shuffle's pass 1 (chunked.order_chunk), whose placements go to the rows by it."""
    name = (prefix + str(index)).encode("utf-8", "surrogatepass")
    return name, blake2b(name, digest_size=32, salt=salt).digest()


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


@dataclass(frozen=True)
class Mapping:
    """How the user asked to map source columns: a preset name (or None/"auto"), column=role pairs, columns
    to leave out of the copied source fields."""

    preset: str | None
    pairs: tuple[str, ...]
    drop: tuple[str, ...]


def map_for(src: Stream, columns: list[str], mapping: Mapping) -> tuple[ColumnMap, str | None]:
    """(ColumnMap, preset name or None) for one source: an explicit preset, else a complete --map, else the
    preset detected from the dataset id or the columns, with --map pairs applied on top."""
    preset, pairs, drop = mapping.preset, mapping.pairs, mapping.drop
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
                shown += f" … and {len(columns) - 40} more" if len(columns) > 40 else ""
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


# ------------------------------------------------------------------------------------------ the run


@dataclass
class SourcePlan:
    """What the rows of one source need, whoever converts them (this process, or a worker given a chunk):
    its label (as given, and as displayed), identity, output key, uuid prefix, preset, column map and the
    columns it was made for (None: no row held data), and the columns the conversion reads (None: all)."""

    label: str
    path: str
    ident: dict[str, Any]
    key: str
    prefix: str
    pname: str | None
    cmap: ColumnMap | None
    columns: list[str] | None
    projection: list[str] | None = None

    def extractor(self) -> Extractor:
        assert self.cmap is not None and self.columns is not None
        return Extractor(self.cmap, self.columns, where=self.label)


class _MetadataByCount(dict):
    """A template's template_metadata per option count, built on first use (a built-in's output_regex names
    the row's letters)."""

    def __init__(self, t: Template) -> None:
        super().__init__()
        self.t = t

    def __missing__(self, n: int) -> dict[str, Any]:
        tm = self[n] = self.t.template_metadata(n)
        return tm


class Run:
    """The state of one conversion: templates and their self-checks, the option balancer, the counts and the
    per-source documents that become the report. `source()` streams one source; `report()` builds the
    document once every source is done."""

    def __init__(
        self,
        tmpls: list[Template],
        *,
        shuffle: bool,
        seed: int,
        pins: frozenset[str],
        max_shown: int,
        permute: PermuteSpec | None = None,
        checker: Any = None,
    ):
        self.tmpls = tmpls
        self.mix = TemplateMix(tmpls)
        self.shuffle = shuffle
        self.seed = seed
        self.user_pins = pins
        self.max_shown = max_shown
        self.uses_row = any(t.uses_row() for t in tmpls)
        self.permute_spec = permute
        # BLAKE2b's salt (16 bytes) is part of its parameter block: keying by the seed costs nothing per row
        self.seed_salt = hashlib.sha256(b"mcqa-prep/convert seed %d" % seed).digest()[:16]
        self.reset(checker if checker is not None else TemplateChecker())
        self.slots = []
        for t in tmpls:
            sc = SelfCheck(t)
            t.compile()
            possible = (lambda _prompt: False) if sc.never else sc.possible
            self.slots.append(
                (t.id, t.row_renderer(), t.grading_mode, _MetadataByCount(t), possible, sc.check)
            )
        self.meta_base = {"tool_version": __version__, "shuffle_seed": seed if shuffle else None}

    def reset(self, checker: Any, orders: Orders | None = None) -> None:
        """Counts from zero, with `checker` for the template controls: a new run, or a chunk of one (a worker
        counts each chunk on its own, and its checker only notes the controls the fold runs in input order).
        With --shuffle, `orders` gives each row's option order: None, balanced here (`balanced`); a chunk of
        --shuffle on the engine takes pass 1's placements (convert/shuffled.Feeder)."""
        self.checker = checker
        self.orders: Orders = orders if orders is not None else self.balanced
        self.permute = (
            ConvertOrders(self.permute_spec, self.user_pins) if self.permute_spec is not None else None
        )
        self.balancer = Balancer()
        self.by_reason: Counter[str] = Counter()
        self.tpl_rows: Counter[str] = Counter()
        self.n_rows: Counter[int] = Counter()
        self.n_pinned = self.n_gold_pinned = self.n_unresolved = 0
        self.unresolved_shown: list[dict[str, Any]] = []
        self.shown: list[dict[str, Any]] = []
        self.src_docs: list[dict[str, Any]] = []

    # -- one source

    def source(
        self, src: Stream, outputs: Outputs, rj: Any, tick: Callable[[], None], mapping: Mapping
    ) -> None:
        """Convert every row of `src`: a line in its output file or a record in the rejects file `rj`."""
        sdoc, plan = self.plan(src, outputs, mapping)
        self.rows(plan, sdoc, src.rows(plan.projection), outputs, rj, tick)

    def plan(self, src: Stream, outputs: Outputs, mapping: Mapping) -> tuple[dict[str, Any], SourcePlan]:
        """The source's document (in the report's sources, in order) and what its rows need: its columns
        mapped (a preset detected), its output, its identity."""
        label = display_name(src.label)
        sdoc = {**src.identity(), "kind": src.kind, "path": label, "read": 0, "written": 0, "rejected": 0}
        self.src_docs.append(sdoc)
        columns = src.columns()
        cmap, pname = None, None
        if columns is not None:
            cmap, pname = map_for(src, columns, mapping)
            sdoc["preset"] = pname
            sdoc["map"] = cmap.to_dict()
        prefix = "\x1f".join([src.dataset, src.config or "", src.split, src.file or ""]) + "\x1f"
        plan = SourcePlan(
            src.label, label, src.identity(), outputs.key_for(src), prefix, pname, cmap, columns
        )
        if cmap is not None and not self.uses_row:
            plan.projection = _projection(plan.extractor())
        return sdoc, plan

    def rows(
        self,
        plan: SourcePlan,
        sdoc: dict[str, Any],
        rows: Iterable[SourceRow],
        outputs: Any,
        rj: Any,
        tick: Callable[[], None],
    ) -> None:
        """Convert `rows` (index, line, data, error) of the source `plan` describes: each a line in its output
        (`outputs.handle(key)`) or a record in `rj`; the counts into `sdoc` and this run."""
        # no row holds data (the source is empty, or none of its lines is readable): nothing to map or detect
        # a preset from, yet each row read still goes through the loop below, to be counted and rejected at
        # its line like a malformed line in any other source
        extract = _changed(plan.label) if plan.cmap is None else plan.extractor().extract
        key, ident, label = plan.key, plan.ident, plan.path
        prefix = plan.prefix
        meta_convert = {**self.meta_base, "preset": plan.pname}
        pick, slots, seed_salt = self.mix.pick_index, self.slots, self.seed_salt
        counts = self.balancer.counts
        label_src = plan.label
        per_slot = [0] * len(slots)
        per_n: Counter[int] = Counter()
        pending: list[bytes] = []  # lines written in blocks: one write per WRITE_BLOCK rows
        fh = None
        n_read = n_written = n_lines = 0
        for index, line, data, error in rows:
            n_read += 1
            tick()
            try:
                if error is not None:
                    raise RowReject("malformed_row", error)
                item = extract(data)
                name, h = row_hash(prefix, index, seed_salt)
                k = pick(int.from_bytes(h[:8], "big"))
                line_out, targets, n = self._line(
                    slots[k],
                    k,
                    item,
                    data,
                    key,
                    h,
                    row_uuid(name),
                    {**ident, "row": index},
                    meta_convert,
                    label_src,
                    index,
                )
            except RowReject as r:
                self._reject(rj, r, {**ident, "row": index, "line": line, "path": label}, data)
                continue
            c = counts.get((key, n))
            if c is None:
                c = counts[(key, n)] = [0] * n
            for target in targets:
                c[target] += 1
            pending.append(line_out)
            if len(pending) >= WRITE_BLOCK:
                fh = fh or outputs.handle(key)
                fh.write(b"".join(pending))
                pending.clear()
            n_written += 1
            n_lines += len(targets)
            per_slot[k] += 1
            per_n[n] += 1
        if pending:
            (fh or outputs.handle(key)).write(b"".join(pending))
        for k, done in enumerate(per_slot):
            if done:
                self.tpl_rows[slots[k][0]] += done
        self.n_rows.update(per_n)
        sdoc["read"] += n_read
        sdoc["written"] += n_written
        sdoc["rejected"] += n_read - n_written
        outputs.rows[key] += n_lines

    def _line(
        self, slot, k, item, data, key, h, u, src_meta, meta_convert, label, index
    ) -> tuple[bytes, list[int], int]:
        """The output line(s) of one decoded row (with --permute, one per option order), the gold's position
        in each and the option count."""
        tid, _, _, _, _, _ = slot
        question, choices, gold, sidx, context, ident_col, subject, kept = item
        n = len(choices)
        if (tid, n) not in self.checker.done:
            self.checker.ensure(self.mix.templates[k], n, data)
        if self.shuffle:
            target, perm = self.orders(key, choices, gold, int.from_bytes(h[8:], "big"))
            texts = [*map(choices.__getitem__, perm)]
            osi = [*map(sidx.__getitem__, perm)]
        else:
            target, texts, osi = gold, choices, sidx
        if self.permute is None:
            row = self._row(slot, item, data, texts, osi, target, u, src_meta, meta_convert, label, index)
            return _dumps(row), [target], n
        out, targets = [], []
        for order, link in self.permute.orders(texts, u):
            t = order.index(target)
            row = self._row(
                slot, item, data, [texts[j] for j in order], [osi[j] for j in order], t, u, dict(src_meta),
                meta_convert, label, index,
            )  # fmt: skip
            row["metadata"]["mcqa_prep"] = {"permutation": link}
            out.append(_dumps(row))
            targets.append(t)
        return b"".join(out), targets, n

    def _row(
        self, slot, item, data, texts, osi, target, u, src_meta, meta_convert, label, index
    ) -> dict[str, Any]:
        """The row of one decoded row in one option order (`texts`, `osi`: the texts and their source
        positions; `target`: the gold's position)."""
        tid, render, mode, tms, possible, check = slot
        question, choices, gold, sidx, context, ident_col, subject, kept = item
        n = len(choices)
        letters = LETTERS[:n]
        tm = tms[n]
        prompt = render(question, texts, context, subject, data)
        if not prompt or prompt.isspace():
            raise UsageError(f"template {tid!r} rendered an empty prompt for {label} row {index}")
        options = [{L: x} for L, x in zip(letters, texts)]  # noqa: B905 - equal lengths
        gold_letter = letters[target]
        if possible(prompt):
            check(prompt, options, gold_letter)
        if ident_col is not None:
            src_meta["id"] = ident_col
        meta = {
            "source": src_meta,
            "convert": {**meta_convert, "option_source_index": osi, "gold_source_index": sidx[gold]},
        }
        if subject is not None:
            meta["subject"] = subject
        if kept:
            meta["source_fields"] = kept
        row = {
            "responses_create_params": {"input": [{"role": "user", "content": prompt}]},
            "options": options,
            "expected_answer": gold_letter,
            "grading_mode": mode,
            "template_metadata": tm,
            "uuid": u,
            "metadata": meta,
        }
        return row

    def balanced(self, key: str, choices: list[str], gold: int, seed: int) -> tuple[int, list[int]]:
        """The gold's new position and the option permutation: balanced per (output, option count), with
        positional options ("All of the above", --pin texts) kept in place."""
        pinned, unresolved = scan_pins(choices, self.user_pins)
        return self.place(key, len(choices), gold, RowRandom(seed), pinned, unresolved, choices)

    def place(
        self,
        key: str,
        n: int,
        gold: int,
        rng: RowRandom,
        pinned: frozenset[int],
        unresolved: str | None,
        choices: Sequence[str],
    ) -> tuple[int, list[int]]:
        """balanced() of a row whose pins are known (`choices` is read only when a reference is unresolved)."""
        if not pinned:
            return self.balancer.place_free(key, n, gold, rng)
        self.n_pinned += 1
        if unresolved is not None:
            # an option names letters that cannot be told for sure: the row keeps its order (reported)
            self.n_unresolved += 1
            if len(self.unresolved_shown) < self.max_shown:
                self.unresolved_shown.append({"option": unresolved, "options": list(choices)})
            return gold, list(range(n))
        if gold in pinned:
            self.n_gold_pinned += 1
            target = gold
        else:
            target = self.balancer.choose(key, n, [p for p in range(n) if p not in pinned], rng)
        return target, arrange(n, gold, pinned, target, rng)

    def _reject(self, rj: Any, r: RowReject, where: dict[str, Any], data: Any) -> None:
        self.by_reason[r.reason] += 1
        rec = {
            "reason": r.reason,
            "message": r.message,
            "source": where,
            "row": json_safe(data, as_text) if data is not None else None,
        }
        rj.write(_dumps(rec))
        if len(self.shown) < self.max_shown:
            self.shown.append(rec)

    # -- the end

    def totals(self) -> tuple[int, int, int]:
        read = sum(s["read"] for s in self.src_docs)
        written = sum(s["written"] for s in self.src_docs)
        rejected = sum(s["rejected"] for s in self.src_docs)
        assert read == written + rejected
        return read, written, rejected

    def counts(self) -> dict[str, Any]:
        read, written, rejected = self.totals()
        by_reason = dict(sorted(self.by_reason.items()))
        return {"read": read, "written": written, "rejected": rejected, "rejected_by_reason": by_reason}

    def nothing_converted(self) -> tuple[str, str, dict[str, Any]]:
        """Why no row could be converted, as (message, reason, details): the counts by reason and the first
        reject in the message; the counts, the sources and the first rejects (their rows left out) in the
        details, since a failed run leaves no rejects file to read them from. The reason tells a mapping
        that fits no row from a source with no readable row, or none at all."""
        read, written, rejected = self.totals()
        first = ""
        if self.shown:
            s0 = self.shown[0]
            first = (
                f"; first: {s0['source']['path']}:{s0['source']['line']}: {s0['message']} [{s0['reason']}]"
            )
        reasons = ", ".join(f"{k} {v}" for k, v in self.by_reason.most_common())
        message = (
            f"no row could be converted ({read} read, {written} written, {rejected} rejected: "
            f"{reasons or 'no rows'}){first}"
        )
        if not read:
            reason = "no_rows"
        elif set(self.by_reason) == {"malformed_row"}:
            reason = "nothing_readable"
        else:
            reason = "nothing_converted"
        shown = [{k: r[k] for k in ("reason", "message", "source")} for r in self.shown]
        return message, reason, {"counts": self.counts(), "sources": self.src_docs, "rejects_shown": shown}

    def report(self, out: Path, rejects: Path, outputs: Outputs) -> dict[str, Any]:
        hist: dict[str, dict[int, list[int]]] = {}
        for (key, n), c in sorted(self.balancer.counts.items()):
            hist.setdefault(key, {})[n] = c
        shuffle, seed = self.shuffle, self.seed
        return {
            "report_version": REPORT_VERSION,
            "tool_version": __version__,
            "ok": True,
            "output": display_name(out),
            "output_files": [
                {"path": display_name(path), "split": key or None, "rows": outputs.rows[key]}
                for key, path in outputs.names().items()
            ],
            "rejects": display_name(rejects),
            "counts": self.counts(),
            "sources": self.src_docs,
            "templates": [{**t.describe(), "rows": self.tpl_rows[t.id]} for t in self.tmpls],
            "template_controls": self.checker.checked,
            "shuffle": {
                "enabled": shuffle,
                "seed": seed if shuffle else None,
                "pins": sorted(self.user_pins),
                "rows_with_pins": self.n_pinned,
                "gold_pinned": self.n_gold_pinned,
                "unresolved_references": {"rows": self.n_unresolved, "shown": self.unresolved_shown},
            },
            "permutation": self.permute.report() if self.permute is not None else None,
            "option_counts": {str(n): c for n, c in sorted(self.n_rows.items())},
            "gold_histogram": {
                (key or "all"): {str(n): dict(zip(LETTERS[:n], c, strict=True)) for n, c in by_n.items()}
                for key, by_n in hist.items()
            },
            "gold_spread": {
                (key or "all"): {str(n): s for n, s in by_n.items()}
                for key, by_n in self.balancer.spread().items()
            },
            "warnings": _bias_warnings(hist, shuffle)
            + _unresolved_warnings(self.n_unresolved, self.unresolved_shown),
        }


def _unresolved_warnings(n: int, shown: list[dict[str, Any]]) -> list[str]:
    if not n:
        return []
    example = shown[0]["option"] if shown else ""
    return [
        f"{n} row(s) kept their option order: an option names other options by letters that cannot be told for "
        f"sure (e.g. {example!r}: a letter that is not one of the options, or Cyrillic letters that also read as "
        "Latin ones); check them (shuffle.unresolved_references)"
    ]


class Ticker:
    """Counts rows and moves the progress bar every 1,024 of them (a bar update per row costs more than the
    row)."""

    __slots__ = ("bar", "pending")

    def __init__(self, bar: Any):
        self.bar = bar
        self.pending = 0

    def __call__(self) -> None:
        self.pending += 1
        if self.pending >= 1024 and self.bar is not None:
            self.bar.update(self.pending)
            self.pending = 0

    def flush(self) -> None:
        if self.bar is not None and self.pending:
            self.bar.update(self.pending)
        self.pending = 0


def _changed(label: str) -> Callable[[Any], Any]:
    """The extractor of a source in which no row held data when its columns were looked for: a row with data
    on the second read means the file changed in between."""

    def extract(_data: Any) -> Any:
        raise InputError(f"{label}: changed while being read", reason="input_changed")

    return extract


def _projection(ext: Extractor) -> list[str]:
    cols = [ext.question, ext.choices, ext.correct, ext.answer, ext.context, ext.id, ext.subject]
    cols += ext.options + ext.incorrect + ext.keep
    return sorted({c.key for c in cols if c is not None})
