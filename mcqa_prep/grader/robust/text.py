"""Stage 1, normalise: the views of the response every later stage reads. All of them keep the length of
the text, so a span found in any view indexes the text as given."""

from __future__ import annotations

import re
import unicodedata

from ..letters import normalize_option_text
from .patterns import MARKUP_CHAR_TABLE, MARKUP_CMD_RE, MARKUP_PRESENT_RE

# Full-width ASCII -> ASCII, ideographic space/full stop/comma and lenticular brackets -> ASCII.
# (Full NFKC can change lengths; it is used on payloads only.)
_FW_TABLE = {cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F)}
_FW_TABLE.update({0x3000: 0x20, 0x3002: ord("."), 0x3001: ord(","), 0x3010: ord("["), 0x3011: ord("]")})
FW_RE = re.compile("[\uff01-\uff5e\u3000-\u3002\u3010\u3011]")


def _fullwidth_to_ascii(m: re.Match[str]) -> str:
    return chr(_FW_TABLE[ord(m.group())])


def fold_width(text: str) -> str:
    """Full-width forms folded to ASCII, one character for one."""
    return text if text.isascii() else FW_RE.sub(_fullwidth_to_ascii, text)


def lower_same_length(t: str) -> str:
    """t.lower(), except the few characters (such as U+0130) whose lower case is two characters long."""
    if t.isascii():
        return t.lower()
    low = t.lower()
    if len(low) != len(t):
        low = "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in t)
    return low


def _spaces(m: re.Match[str]) -> str:
    return " " * (m.end() - m.start())


def blank_markup(raw: str) -> str:
    """LaTeX wrappers, markdown and tags replaced by spaces of the same length: commands and tags by
    regex, the characters $ * _ { } ` by a table (they can neither start nor end a command or a tag,
    so blanking them after the commands gives what one combined pattern would)."""
    if MARKUP_PRESENT_RE.search(raw) is None:
        return raw
    if "\\" in raw or "<" in raw:
        raw = MARKUP_CMD_RE.sub(_spaces, raw)
    return raw.translate(MARKUP_CHAR_TABLE)


# Decimal digits of other scripts (Arabic-Indic ٣, Persian ۳, Devanagari ३, Bengali ৩, Thai ๓, ...) -> ASCII:
# an answer "3" meets an option "۳". (NFKC folds full-width and mathematical digits, not these.)
_DIGITS = {
    cp: 48 + unicodedata.decimal(chr(cp))
    for cp in range(0x0660, 0x1C60)
    if unicodedata.category(chr(cp)) == "Nd"
}


_SPACE_BEFORE_MARK_RE = re.compile(r" ([,.;])")


def norm(s: str) -> str:
    """NFKC (non-ASCII only), digits of every script as ASCII, lower case, whitespace collapsed: how
    payloads meet option texts."""
    if not s.isascii():
        s = unicodedata.normalize("NFKC", s).translate(_DIGITS)
    s = normalize_option_text(s)
    if " ," in s or " ." in s or " ;" in s:  # ("I , II ve III" meets "I, II ve III")
        s = _SPACE_BEFORE_MARK_RE.sub(r"\1", s)
    return s


def line_end(t: str, pos: int) -> int:
    e = t.find("\n", pos)
    return len(t) if e < 0 else e


# A box's content is looked for within this many characters of its "{" (an anchor's payload has the same
# bound): a response that opens box after box without closing them (`\boxed{\boxed{...`) then costs linear
# time instead of one read to the end of the line per box. Real box contents are short (57 characters at
# most in every corpus this repository holds).
BOX_MAX = 400


def box_content(t: str, open_end: int) -> tuple[int, int]:
    """The content of a box whose "{" ends at open_end, braces counted within BOX_MAX characters; a box not
    closed there is read to the end of its line (at most BOX_MAX characters)."""
    limit = min(len(t), open_end + BOX_MAX)
    depth = 1
    k = open_end
    while True:
        close = t.find("}", k, limit)
        if close < 0:
            e = t.find("\n", open_end, limit)
            return open_end, limit if e < 0 else e
        opening = t.find("{", k, close)
        if opening >= 0:
            depth += 1
            k = opening + 1
            continue
        depth -= 1
        if depth == 0:
            return open_end, close
        k = close + 1


def line_start(t: str, pos: int) -> int:
    return t.rfind("\n", 0, pos) + 1


def at_line_start(t: str, pos: int) -> bool:
    """Only spaces, markup (`*_#>`) and a list bullet (`-+•`) between the previous newline (or the text
    start) and pos."""
    k = pos - 1
    while k >= 0 and t[k] in " \t*_#>-+•":
        k -= 1
    return k < 0 or t[k] == "\n"


_AZ = "abcdefghijklmnopqrstuvwxyz"


def az_run_start(low: str, j: int) -> int:
    """Start of the run of a-z ending at j (or some i with low[i:j] 12+ letters long when the run is
    longer: no qualifier word is that long)."""
    a = j - 12 if j > 12 else 0
    return a + len(low[a:j].rstrip(_AZ))
