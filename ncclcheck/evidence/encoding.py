"""Text that is not plain UTF-8, and bytes that are not text.

Two things people's logs really hold:

* UTF-16 or UTF-32: Windows PowerShell's ``kubectl logs pod > rank3.log`` writes UTF-16 with a byte
  order mark, and some log exporters do so without one.  The BOM says which; without one, ASCII text
  in UTF-16 puts a NUL in every other byte (in every four, UTF-32), a pattern no UTF-8 log has.
* Runs of NUL bytes inside UTF-8 text: a node that crashed or lost power leaves the blocks its
  file system had allocated but never written as zeros, often in the log of the very rank that died.
  Those runs are skipped and counted; a file is binary only when what is left is not text either.
"""

from __future__ import annotations

import codecs
from typing import BinaryIO

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Bytes that appear in text logs besides printable ones: tab, newline, vertical tab, form feed, carriage return,
# backspace and ESC (colour codes).
_TEXT_CONTROL = frozenset(b"\t\n\x0b\x0c\r\x08\x1b")
BINARY_SHARE = 0.10  # more control bytes and invalid UTF-8 than this, NUL runs aside, and it is not a log


def sniff(head: bytes) -> str | None:
    """The encoding of a UTF-16/32 input from its first bytes, or None for UTF-8 (and anything else)."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    sample = head[:4096]
    if len(sample) < 8 or b"\x00" not in sample:  # a UTF-8 log: nothing to look at (the common case, and fast)
        return None
    for width, name in ((4, "utf-32"), (2, "utf-16")):
        n = len(sample) // width
        lanes = [sample[k: n * width: width] for k in range(width)]  # byte k of every code unit
        zero = [lane.count(0) for lane in lanes]
        if all(z >= 0.9 * n for z in zero[1:]) and zero[0] <= 0.1 * n:
            return f"{name}-le"
        if all(z >= 0.9 * n for z in zero[:-1]) and zero[-1] <= 0.1 * n:
            return f"{name}-be"
    return None


def is_binary(sample: bytes) -> bool:
    """After its NUL runs are gone, is this still not text?"""
    if not sample:
        return False
    control = sum(1 for b in sample if b < 0x20 and b not in _TEXT_CONTROL) + sample.count(0x7F)
    invalid = sample.decode("utf-8", "replace").count("\ufffd")  # compressed or machine data is rarely UTF-8
    return control + invalid > BINARY_SHARE * len(sample)


class Transcoded:
    """A byte stream in UTF-16/32 read as UTF-8, block by block (``read1``), with its BOM dropped."""

    def __init__(self, raw: BinaryIO, encoding: str) -> None:
        self._raw = raw
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._first = True
        self._pending = b""

    def read1(self, limit: int) -> bytes:
        while len(self._pending) < limit:
            chunk = self._raw.read(max(limit, 1 << 16))
            text = self._decoder.decode(chunk or b"", final=not chunk)
            if self._first and text.startswith("\ufeff"):
                text = text[1:]
            self._first = self._first and not text
            self._pending += text.encode("utf-8")
            if not chunk:
                break
        out, self._pending = self._pending[:limit], self._pending[limit:]
        return out
