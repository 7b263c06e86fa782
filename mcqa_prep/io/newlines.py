"""Counting the line ends in a block of bytes (the planning pass over a JSONL file counts every newline for
the line numbers), the cheaper of two ways for the block's lines; and, for a job that asks, the rows of each
block (RowCount: a chunk's first row index without another read of the file).

Counting every byte costs the same whatever the lines; finding each line end (memchr) costs per line, so it
is the cheaper way when lines are long (a row with a model's response, a passage). The count is the same
either way."""

from __future__ import annotations

import re
from typing import Any, cast

from .readers import row_bytes

# the average line length (bytes) from which finding each line end is cheaper than counting every byte
LONG_LINE = 1024


def count_newlines(buf: bytes | bytearray, start: int, end: int, long_lines: bool) -> int:
    """The newlines in buf[start:end]. `long_lines` (the lines so far averaged LONG_LINE bytes or more): found
    one by one, falling back to a count of the rest once there are more than long lines would have, so a
    block of short lines costs about one count more, never a find per short line."""
    if not long_lines:
        return buf.count(b"\n", start, end)
    most = (end - start) // LONG_LINE
    n = 0
    i = buf.find(b"\n", start, end)
    while i >= 0:
        n += 1
        if n > most:
            return n + buf.count(b"\n", i + 1, end)
        i = buf.find(b"\n", i + 1, end)
    return n


def fill(fh: Any, view: memoryview, rows: RowCount) -> int:
    """Read into `view` until it is full or the file ends: the bytes read (the planning pass's next block).
    `rows` counts the block's rows (RowCount.feed), and the file's end when nothing is left to read."""
    got = 0
    while got < len(view):
        n = fh.readinto(view[got:])
        if not n:
            break
        got += n
    if not rows.counting:
        return got
    if got:
        rows.feed(cast(bytearray, view.obj), got)
    else:
        rows.finish()
    return got


# a line end, then a blank line (row_bytes' whitespace: JSON's, the line end excluded), its own end not taken
_BLANK_NEXT = re.compile(rb"\n[ \t\r]*(?=\n)")


class RowCount:
    """The rows of a JSONL file (its lines that readers.row_bytes keeps: what read_jsonl yields) by the block
    each starts in, counted in the planning pass that reads the file in blocks, in order (parallel's chunk k
    holds the lines that start in block k): `feed` each block, `finish` at the end of the file. `before(seq)`,
    the rows of the blocks before its chunk's, is final once the line open at that block's start has ended."""

    def __init__(self, first_chunk: int = 0, counting: bool = True) -> None:
        self.first_chunk = first_chunk  # the number (seq) of the file's first chunk: before(seq) is by it
        self.counting = counting  # False: nothing is counted, before() is None (a job that did not ask)
        self.counts: list[int] = []
        self.pos = 0  # the file offset of the next block
        self.open_at = -1  # the block a line not ended yet started in (-1: none)
        self.row = False  # that line holds a byte of a row so far (the first line: past its first 3 bytes)
        self.first = True  # the open line, or the next, is the file's first
        self.head = b""  # the first line's bytes at offsets 0-2: row_bytes decides them (a BOM)
        self._k = self._before = 0

    def _holds(self, buf: bytes | bytearray, a: int, b: int) -> bool:
        if self.first and self.pos + a < 3:
            cut = min(b, 3 - self.pos)
            self.head += bytes(buf[a:cut])
            a = cut
        return bool(buf[a:b].strip(b" \t\r\n"))

    def _close(self) -> int:
        """The open line has ended: 1 if it is a row."""
        row = self.row or (self.first and row_bytes(self.head, True) is not None)
        self.first, self.row, self.open_at = False, False, -1
        return int(row)

    def feed(self, buf: bytes | bytearray, n: int) -> None:
        """The next block: buf[:n]."""
        k = len(self.counts)
        self.counts.append(0)
        start = 0
        if self.open_at >= 0:
            i = buf.find(b"\n", 0, n)
            self.row = self.row or self._holds(buf, 0, n if i < 0 else i)
            if i < 0:
                self.pos += n
                return
            self.counts[self.open_at] += self._close()
            start = i + 1
        j = buf.rfind(b"\n", start, n)
        if j >= 0:  # whole lines: the first one's, then those after it (each blank one follows a line end)
            i = buf.find(b"\n", start, n)
            self.row = self._holds(buf, start, i)
            blank = len(_BLANK_NEXT.findall(buf, i, j + 1))
            self.counts[k] += self._close() + buf.count(b"\n", i + 1, j + 1) - blank
            start = j + 1
        if start < n:
            self.open_at, self.row = k, self._holds(buf, start, n)
        self.pos += n

    def finish(self) -> None:
        if self.open_at >= 0:
            self.counts[self.open_at] += self._close()

    def before(self, seq: int) -> int | None:
        """The rows of the blocks before chunk `seq`'s (chunks asked for in order); None when not counting."""
        if not self.counting:
            return None
        k = seq - self.first_chunk
        while self._k < min(k, len(self.counts)):
            self._before += self.counts[self._k]
            self._k += 1
        return self._before
