"""Counting the line ends in a block of bytes (the planning pass over a JSONL file counts every newline for
the line numbers), the cheaper of two ways for the block's lines.

Counting every byte costs the same whatever the lines; finding each line end (memchr) costs per line, so it
is the cheaper way when lines are long (a row with a model's response, a passage). The count is the same
either way."""

from __future__ import annotations

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
