"""Decompression with limits: one rule for every compressed input (logs, kernel logs, evidence files, archives).

A compressed file may inflate to anything: 1 MB of gzip is 1 GiB of zeros (1030:1, deflate's ceiling), 1 MB of
bzip2 far more. Real logs compress 5 to 50 times with gzip, about 300 times when every line is the same; xz and
bzip2 reach thousands on such lines, as on zeros. So:

* the first ``FREE`` bytes (32 MiB) of output are always read;
* beyond them, the output may be at most ``RATIO`` (500) times the compressed bytes read so far: every gzip bomb
  stops there, within a second; an xz or bzip2 log of one line repeated over 32 MiB stops too, and says so;
* and never more than ``ABSOLUTE`` (16 GiB) from one input.

Past a limit reading stops with :class:`InflateLimit`, whose message is the one-line problem the user sees.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
from collections.abc import Callable
from typing import BinaryIO, cast

FREE = 32 << 20
RATIO = 500
ABSOLUTE = 16 << 30

GZIP_MAGIC = b"\x1f\x8b"
OPENERS: tuple[tuple[bytes, Callable[[BinaryIO], BinaryIO]], ...] = (
    # cast: the decompressors are binary streams, though not typing.BinaryIO subclasses
    (GZIP_MAGIC, lambda f: cast(BinaryIO, gzip.GzipFile(fileobj=f, mode="rb"))),  # noqa: SIM115
    (b"BZh", lambda f: cast(BinaryIO, bz2.BZ2File(f))),  # noqa: SIM115
    (b"\xfd7zXZ\x00", lambda f: cast(BinaryIO, lzma.LZMAFile(f))),  # noqa: SIM115
)


class InflateLimit(Exception):
    """A compressed input inflates beyond the limits (a bomb, or a file no log is): reading stops."""


class _Counted(io.RawIOBase):
    """The compressed bytes as read: how many the decompressor has taken so far."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.count = 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.count += len(data)
        return data

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)


class Bounded(io.RawIOBase):
    """A decompressed stream that stops at the limits; ``read``/``readinto`` as a file's."""

    def __init__(self, raw: BinaryIO, wrap: Callable[[BinaryIO], BinaryIO]) -> None:
        self._in = _Counted(raw)
        self._stream = wrap(self._in)  # type: ignore[arg-type]
        self.out = 0

    def readable(self) -> bool:
        return True

    def _check(self) -> None:
        if self.out > ABSOLUTE:
            raise InflateLimit(f"decompresses to more than {ABSOLUTE >> 30} GiB; the rest is not read")
        if self.out > FREE and self.out > RATIO * self._in.count:
            raise InflateLimit(f"decompresses to more than {RATIO} times its size ({self.out >> 20} MiB from "
                               f"{self._in.count:,} bytes): a compression bomb, not a log; the rest is not read")

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        n: int = self._stream.readinto(b)  # type: ignore[attr-defined]
        self.out += n
        self._check()
        return n

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            parts = []
            while piece := self.read(1 << 20):
                parts.append(piece)
            return b"".join(parts)
        data = self._stream.read(n)
        self.out += len(data)
        self._check()
        return data

    def read1(self, n: int = -1) -> bytes:
        data: bytes = self._stream.read1(n)  # type: ignore[attr-defined]
        self.out += len(data)
        self._check()
        return data

    def close(self) -> None:
        self._stream.close()
        super().close()


def wrapper(head: bytes) -> Callable[[BinaryIO], BinaryIO] | None:
    """The decompressor for a file that starts with ``head``, or None for one that is not compressed."""
    return next((wrap for magic, wrap in OPENERS if head.startswith(magic)), None)


def bounded(raw: BinaryIO, head: bytes) -> BinaryIO | None:
    """``raw`` decompressed under the limits, or None when ``head`` is no compressed format's."""
    wrap = wrapper(head)
    return Bounded(raw, wrap) if wrap is not None else None  # type: ignore[return-value]


def read_bounded(path: str) -> bytes:
    """A whole file, decompressed under the limits when it is gzip, bzip2 or xz (InflateLimit past them)."""
    with open(path, "rb") as f:
        head = f.read(6)
        f.seek(0)
        stream = bounded(f, head)
        return f.read() if stream is None else stream.read()
