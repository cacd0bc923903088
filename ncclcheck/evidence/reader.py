"""Read inputs fast and in bounded memory, handing the parser only the lines that matter.

A 1 GiB NCCL_DEBUG=INFO log is mostly lines the parser would throw away, and a
Python loop over every line runs at ~0.3 GB/s.  Instead each block is searched
with ``bytes.find`` for single *anchor bytes* (memchr speed, ~10 GB/s) that every
line the parser acts on contains and that NCCL INFO chatter almost never does:

* ``W`` WorkNCCL, Watchdog, NCCL WARN        * ``w`` every "... work: N" status line, watchdog
* ``#`` desync report (``#315``)             * ``<`` interface lists (``eth0:10.0.0.1<0>``), ``<N/A>``
* ``"`` Python traceback ``File "..."`` lines * ``+`` ``NCCL version 2.21.5+cuda12.4``
* ``z`` ProcessGroupNCCL's "initialization options: size: N, global rank: R" (group membership)

An anchored line is kept only if it also names something the parser looks for
(checked on that one line), and is then handed over with ``BEFORE`` lines before and ``AFTER`` lines
after it (hard-wrap continuations, desync report bodies, the error line under a
traceback, torchrun's failure table).  The first ``HEAD`` bytes of every input are
handed over whole, since that is where NCCL and PyTorch print their settings.
Newlines are still counted everywhere so that evidence keeps exact line numbers.
"""

from __future__ import annotations

import bz2
import glob
import gzip
import lzma
import os
import re
import sys
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

ANCHORS = (b"W", b"w", b"#", b"<", b'"', b"+", b"z")
# An anchored line is taken (with its context) only if it also says one of these; checked on that line alone.
_WANTED = re.compile(
    rb"WorkNCCL|[Ww]atchdog|NCCL WARN|NCCL work|work sequence|Timeout at collective|best knowledge|#\d|"
    rb'File "|NCCL version|Using|<N/A>|error_file|Heartbeat|Received a|Detected mismatch|Error|Exception|'
    rb"initialization options"
)
BEFORE = 8
AFTER = 16
HEAD = 16 << 10
BLOCK = 8 << 20
MAX_LINE = 1 << 20
KEEP_OF_LONG_LINE = 64 << 10

_PATH_RANK = (
    re.compile(r"attempt_\d+[/\\](\d+)[/\\](?:stdout|stderr|error)\.(?:log|txt|json)"),
    re.compile(r"(?:^|[^a-z])rank[_-]?(\d+)(?:\D|$)", re.IGNORECASE),
)
_GLOB_CHARS = re.compile(r"[*?\[]")
_FREE: list[bytearray] = []  # block buffers to reuse: a fresh one costs its page faults again


class InputError(Exception):
    """An input that cannot be read at all (missing, unreadable, binary, empty directory)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


@dataclass(frozen=True)
class Source:
    """One input to read: a path, or ``-`` for standard input."""

    name: str
    path: str | None  # None for stdin
    explicit: bool = True  # named on the command line (not found by walking a directory)

    @property
    def path_rank(self) -> int | None:
        """The rank a file name implies (``rank6.log``, ``rank_6``, ``attempt_0/6/stderr.log``)."""
        if self.path is None:
            return None
        norm = self.path.replace("\\", "/")
        m = _PATH_RANK[0].search(norm)
        if m:
            return int(m[1])
        m = _PATH_RANK[1].search(os.path.basename(norm))
        return int(m[1]) if m else None

    def size(self) -> int:
        """Bytes on disk (0 for stdin)."""
        return os.path.getsize(self.path) if self.path else 0


def resolve(args: list[str], on_error: Callable[[InputError], None]) -> list[Source]:
    """Expand files, directories (recursively), globs and ``-`` into sources, in a stable order."""
    out: list[Source] = []
    seen: set[str] = set()

    def add(path: str, explicit: bool = True) -> None:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            out.append(Source(path, path, explicit))

    for arg in args:
        if arg == "-":
            out.append(Source("<stdin>", None))
        elif os.path.isdir(arg):
            found = sorted(
                os.path.join(root, f)
                for root, dirs, files in os.walk(arg)
                for f in files
                if not f.startswith(".")
            )
            if not found:
                on_error(InputError(arg, "directory contains no files"))
            for f in found:
                add(f, explicit=False)
        elif os.path.exists(arg):
            add(arg)
        elif _GLOB_CHARS.search(arg):
            matches = sorted(p for p in glob.glob(arg, recursive=True) if os.path.isfile(p))
            if not matches:
                on_error(InputError(arg, "no file matches this pattern"))
            for f in matches:
                add(f)
        else:
            on_error(InputError(arg, "no such file or directory"))
    return out


_MAGIC: tuple[tuple[bytes, Callable[[BinaryIO], BinaryIO]], ...] = (
    (b"\x1f\x8b", lambda f: gzip.GzipFile(fileobj=f)),  # noqa: SIM115  # type: ignore[return-value]
    (b"BZh", lambda f: bz2.BZ2File(f)),  # noqa: SIM115  # type: ignore[return-value]
    (b"\xfd7zXZ\x00", lambda f: lzma.LZMAFile(f)),  # noqa: SIM115  # type: ignore[return-value]
)
_DECOMPRESS_ERRORS = (EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile, OSError)


def _open(source: Source) -> tuple[BinaryIO, bool]:
    """Open a source, transparently decompressing gzip, bzip2 and xz by content."""
    if source.path is None:
        raw: BinaryIO = sys.stdin.buffer
        head = raw.peek(6)[:6] if hasattr(raw, "peek") else b""
    else:
        try:
            raw = open(source.path, "rb")  # noqa: SIM115 - read_lines closes it
        except PermissionError:
            raise InputError(source.name, "permission denied") from None
        except IsADirectoryError:
            raise InputError(source.name, "is a directory") from None
        except OSError as exc:
            raise InputError(source.name, exc.strerror or str(exc)) from None
        head = raw.read(6)
        raw.seek(0)
    for magic, wrap in _MAGIC:
        if head.startswith(magic):
            return wrap(raw), True
    return raw, False


def read_lines(source: Source, on_problem: Callable[[str], None]) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line number, line)`` for the lines the parser should see.

    Returns (via ``StopIteration.value``) ``(lines, bytes_read)``.  Problems that
    stop reading part-way (truncated archives) are reported through ``on_problem``
    and end the iteration; what was read before them still counts.

    NOTE: blocks are read into one reused buffer (``readinto``): allocating a fresh
    8 MiB object per read costs more in page faults than the whole anchor search.
    """
    stream, compressed = _open(source)
    buf = _FREE.pop() if _FREE and len(_FREE[-1]) == BLOCK + MAX_LINE + 1 else bytearray(BLOCK + MAX_LINE + 1)
    view = memoryview(buf)
    held = 0  # bytes of an unfinished line kept at the front of ``buf``
    lineno = 1  # number of the next line to start
    total = 0  # bytes read from the (decompressed) stream
    consumed = 0  # stream offset of buf[0]
    skipping = False  # inside an over-long line, dropping bytes until its end
    after_left = 0
    try:
        while True:
            n, error = _read_into(stream, compressed, view[held: held + BLOCK])
            if error is not None:
                kind = "compressed data is truncated or corrupt" if compressed else "read failed"
                on_problem(f"{kind} after {total + n} bytes ({error}); the rest is ignored")
            if total == 0:
                if n == 0 and source.explicit:
                    on_problem("empty input")
                elif buf.find(b"\x00", 0, min(n, 8192)) != -1:
                    raise InputError(source.name, "binary file (contains NUL bytes), skipped")
            total += n
            eof = n == 0 or error is not None
            end = held + n
            if skipping:
                nl = buf.find(b"\n", 0, end)
                if nl == -1:
                    consumed += end
                    held = 0
                    if eof:
                        break
                    continue
                buf[: end - nl - 1] = buf[nl + 1: end]
                consumed += nl + 1
                end -= nl + 1
                skipping = False
                lineno += 1
            if eof:
                if end == 0:
                    break
                if buf[end - 1] != 0x0A:
                    buf[end] = 0x0A
                    end += 1
                cut = end - 1
            else:
                cut = buf.rfind(b"\n", 0, end)
                if cut == -1:
                    held = end
                    if held > MAX_LINE:
                        on_problem(f"line {lineno} is longer than {MAX_LINE >> 20} MiB; only its start is read")
                        yield lineno, bytes(buf[:KEEP_OF_LONG_LINE])
                        consumed += held
                        held, skipping = 0, True
                    continue
            lineno, after_left = yield from _scan(buf, cut + 1, lineno, after_left, max(0, HEAD - consumed))
            held = end - cut - 1
            buf[:held] = buf[cut + 1: end]
            consumed += cut + 1
            if eof:
                break
    finally:
        view.release()
        _FREE.append(buf)
        if source.path is not None:
            stream.close()
    return lineno - 1, total


def _read_into(stream: BinaryIO, compressed: bool, out: memoryview) -> tuple[int, Exception | None]:
    """Fill ``out`` as far as one block goes; report how many bytes, and an error that ended reading."""
    if not compressed:
        try:
            return stream.readinto(out) or 0, None  # type: ignore[attr-defined]
        except OSError as exc:
            return 0, exc
    chunk, error = _read_block(stream)
    out[: len(chunk)] = chunk
    return len(chunk), error


def _read_block(stream: BinaryIO) -> tuple[bytes, Exception | None]:
    """Decompress up to BLOCK bytes; from a damaged archive, keep everything decoded before the damage."""
    parts: list[bytes] = []
    size = 0
    try:
        while size < BLOCK:
            piece = stream.read1(BLOCK - size)  # type: ignore[attr-defined]
            if not piece:
                break
            parts.append(piece)
            size += len(piece)
    except _DECOMPRESS_ERRORS as exc:
        return b"".join(parts), exc
    return b"".join(parts), None


def _useful_lt(buf: bytearray, i: int) -> bool:
    """'<' matters in ``<N/A>``, interface lists (``10.0.0.1<0>``) and ``<module>``, not in progress bars (``11<1:25``).

    NOTE: checked on the bytes that follow, before any line bounds or regex: every tqdm line has one.
    """
    nxt = bytes(buf[i + 1: i + 7])
    return nxt.startswith((b"N/A>", b"module")) or (nxt[:1].isdigit() and b">" in nxt[1:4])


def _scan(buf: bytearray, size: int, lineno: int, after_left: int, full_until: int) -> Iterator[tuple[int, bytes]]:
    """Yield the selected lines of ``buf[:size]`` (whole lines; ``buf[size - 1]`` is a newline)."""
    starts: list[int] = []
    for anchor in ANCHORS:
        i = buf.find(anchor, 0, size)
        while i != -1:
            if anchor == b"<" and not _useful_lt(buf, i):
                i = buf.find(anchor, i + 1, size)
                continue
            s = buf.rfind(b"\n", 0, i) + 1
            e = buf.find(b"\n", i, size)
            if _WANTED.search(buf, s, e):
                starts.append(s)
            i = buf.find(anchor, e + 1, size)
    ranges: list[tuple[int, int]] = []
    if after_left or full_until:
        end = 0
        n = 0
        while end < size and (n < after_left or end < full_until):
            end = buf.find(b"\n", end, size) + 1
            n += 1
        ranges.append((0, end))
        after_left = max(0, after_left - n)
    for s in sorted(set(starts)):
        a = s
        for _ in range(BEFORE):
            if a == 0:
                break
            a = buf.rfind(b"\n", 0, a - 1) + 1
        b = s
        n = 0
        while n <= AFTER and b < size:
            b = buf.find(b"\n", b, size) + 1
            n += 1
        if n <= AFTER:
            after_left = max(after_left, AFTER + 1 - n)
        if ranges and a <= ranges[-1][1]:
            if b > ranges[-1][1]:
                ranges[-1] = (ranges[-1][0], b)
        else:
            ranges.append((a, b))
    pos = 0
    for a, b in ranges:
        lineno += buf.count(b"\n", pos, a)
        for line in bytes(buf[a: b - 1]).split(b"\n"):
            yield lineno, line
            lineno += 1
        pos = b
    lineno += buf.count(b"\n", pos, size)
    return lineno, after_left
