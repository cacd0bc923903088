"""Read inputs fast and in bounded memory, handing the parser only the lines that matter.

A 1 GiB NCCL_DEBUG=INFO log is mostly lines the parser would throw away, and a
Python loop over every line runs at ~0.3 GB/s.  Instead each block is searched
with ``bytes.find`` for single *anchor bytes* (memchr speed) that the words the
parser acts on contain, and each hit is checked *where it stands*: the ``W`` of
``[W1122`` or ``Warning`` is dismissed with one anchored match, and the scan
moves on to the next hit.  A hit that starts one of the words in ``TRIGGERS``
takes its line if the line also names something in ``_WANTED`` (both made from the sources' own ``triggers`` and
``wanted``, evidence/formats/, never listed here):

* ``W``  WorkNCCL, Watchdog, NCCL WARN      * ``w``  watchdog, work (every "... NCCL work: N" line)
* ``#``  ``#315``, ``#0`` (desync, frames)   * ``<``  ``<N/A>``, ``<module>``, ``eth0:10.0.0.1<0>``
* ``"``  ``File "...``                       * ``+``  ``NCCL version 2.21.5+cuda12.4``
* ``z``  ProcessGroupNCCL initialization     * ``q``  ``CollectiveFingerPrint(SequenceNumber=``
* ``H``  Heartbeat monitor                   * ``B``  gloo's monitoredBarrier verdicts

(The hyperscan engine finds these triggers in the same pass as the keep words, below.)
An anchor must be a byte that chatter rarely holds: ``F`` or ``T`` would stop at every ``INFO`` or
``COMPLETE``, and each stop costs a Python-level match.

Every line the parser reads into an error, a clue, a death by signal, a launcher's or a host's report or an
ending is kept wherever it stands, whatever its neighbours: the parser tests each line for one of a few cheap
words before any of its patterns (``formats.KEEP_WORDS``, each source's own words), and each block is
searched for those words whole (``WHOLE_WORDS``, derived from them, never listed here).  A new pattern read behind
one of the parser's tests is therefore found at any offset; tests/test_keep.py holds every alternative of every
such pattern, and every cause of the catalogue, to it.

A taken line is handed over with ``BEFORE`` lines before and ``AFTER`` lines after it
(hard-wrap continuations, desync report bodies, the error line under a traceback,
torchrun's failure table).  In the first ``HEAD`` bytes of every input, where NCCL
and PyTorch print their settings, lines naming a setting or an error are handed over
as well ("Last error:" with the line under it).  Newlines are still counted everywhere so that evidence keeps exact line numbers.

Three engines (``ENGINE``, the fastest installed unless ``NCCLCHECK_ENGINE`` names another; tests hold each to the
line-by-line reading).  "hyperscan" finds the lines holding any keep word, and those holding a trigger, in one
pass over a block: every word and the rest of its line are one Hyperscan expression, every trigger and the rest of
its line another, each reported once a line at its newline however often the line holds one.  "stringzilla"
searches the block once per word with StringZilla's SIMD find, moving past each hit's line, and finds triggers by
their anchor bytes; so does "python", with CPython's find.  Every engine but "python" counts newlines with
StringZilla instead of CPython's byte loop (~1.5 GB/s), and ("stringzilla") searches the ``WORDS`` of an anchor
that keeps missing in a block whole.  Per 2 MiB block of the chatty benchmark corpus, for the 70 words alone
(tools/bench_words.py, 2-core VM, 2026-11-25): Hyperscan 0.52 ms (4.1 GB/s), StringZilla 3.05 ms (0.04 ms a word),
ahocorasick-rs 2.8 ms (with each match kind and automaton tried), pyahocorasick 20 ms (text only: the block
decoded first), one ``re`` alternation 97 ms; the synth corpus alike (0.29 against 1.96 ms).  Searching for fewer,
shorter pieces that every word holds does not pay: a cover of the words by 3-byte pieces still needs 47 of them,
and 2-byte pieces (``er``, ``ed``) stand on most lines.  Adding the triggers to the pass costs ~0.1 ms a block and
replaces the anchor passes (~0.3 ms): 10% of the reader's CPU on the chatty corpus.  The head's set-up words
(``_HEAD_WANTED``) are found by Hyperscan too: ``re`` took ~1 ms for each input's 16 KiB head.  Reading the whole
corpus took 0.46 s of CPU with the words alone in Hyperscan, 0.35 s (0.69 ms/MiB) with all three in it.

A physical line longer than ``MAX_LINE`` (a progress bar redrawn with ``\\r`` for
hours) is read in pieces split at its carriage returns, so a record at its end is
still found while memory stays bounded.
"""

from __future__ import annotations

import bisect
import errno
import functools
import glob
import gzip
import hashlib
import importlib
import io
import lzma
import os
import re
import stat
import sys
import tempfile
import zlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from ncclcheck import cachedir
from ncclcheck.evidence import formats
from ncclcheck.evidence.encoding import Transcoded, is_binary, sniff
from ncclcheck.evidence.inflate import InflateLimit, bounded

try:  # SIMD substring search and byte counting; the pure-Python path below is kept, and measured beside it
    import stringzilla as _sz
except ImportError:  # pragma: no cover - a platform without its wheel
    _sz = None


def _optional(name: str) -> Any:
    """A module that may be missing, as ``Any`` (hyperscan's stubs call every buffer ``AnyStr``, and the type check
    must give one answer with the module installed or not)."""
    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - a platform without its wheel
        return None


_hs = _optional("hyperscan")  # Intel Hyperscan: one pass over a block for every keep word and trigger



def _by_anchor() -> dict[bytes, list[formats.Trigger]]:
    by: dict[bytes, list[formats.Trigger]] = {}
    for trigger in formats.TRIGGERS:
        by.setdefault(trigger.anchor.encode(), []).append(trigger)
    assert all(len({t.back for t in ts}) == 1 for ts in by.values()), "an anchor stands at one place in its words"
    return by


# Anchor byte -> (what must stand at a hit, how many bytes of it come before the anchor byte): the sources' triggers.
TRIGGERS: dict[bytes, tuple[re.Pattern[bytes], int]] = {
    anchor: (re.compile(b"|".join(t.regex for t in ts)), ts[0].back) for anchor, ts in _by_anchor().items()}
# Misses of one anchor closer together than this (on average) hand the rest of the block to the regex engine,
# which skips them in C: each miss costs ~0.4 us in the Python loop, the regex ~1.5 ns per byte.
DENSE_GAP = 256
DENSE_AFTER = 1024  # misses of one anchor in one block before the density is checked (and then every as many)
# With StringZilla, an anchor that missed this often in one block has its words searched for whole instead.
WORD_SEARCH_AFTER = 64
ANCHORS = tuple(TRIGGERS)
# The triggers of an anchor whose triggers are all plain words: with StringZilla these are searched for whole.
WORDS: dict[bytes, tuple[bytes, ...]] = {
    anchor: tuple(t.word.encode() for t in ts) for anchor, ts in _by_anchor().items() if not any(t.pattern for t in ts)}
# A triggered line is taken (with its context) only if it also says one of these (the sources' ``wanted``); checked on
# that line alone.
_WANTED = re.compile(b"|".join(w.encode() for w in formats.WANTED))
# In the first HEAD bytes of an input, where NCCL and PyTorch print their settings, lines naming these are
# handed over too, whether triggered or not (``nranks``, ``NET/IB : No device found`` hold no anchor byte): every
# source's set-up words (its ``head_words``: NCCL's facts, ProcessGroupNCCL's options and dump steps, errors, the
# world's size, Lightning's start line and rank tag).
_HEAD_WANTED = re.compile(b"|".join(re.escape(w.encode()) for w in formats.HEAD_WORDS))
# Launchers' own words (evidence/formats/) are among them.
# Every line the parser reads into an error, a clue, a death by signal, a launcher's or a host's report, an ending
# or a setting holds one of its ``KEEP_WORDS`` (the words its own cheap tests look for): each block is searched for them whole,
# so such a line is kept wherever it stands.  A word that holds another is left out: the shorter finds its lines.


def _whole_words(words: tuple[str, ...]) -> tuple[bytes, ...]:
    """The words that hold no other, sorted: each word is searched for once in all of them, joined (comparing every
    pair took ~4 ms of each start, before the workers are forked)."""
    unique = sorted(set(words))
    starts = [0]
    for w in unique:
        starts.append(starts[-1] + len(w) + 1)
    joined = "\0".join(unique)
    holder = set()  # the words that hold another
    for o in unique:
        at = joined.find(o)
        while at != -1:
            i = bisect.bisect_right(starts, at) - 1  # the word this match stands in (no word holds a NUL)
            if unique[i] != o:
                holder.add(unique[i])
            at = joined.find(o, at + 1)
    return tuple(sorted(w.encode() for w in unique if w not in holder))


WHOLE_WORDS = _whole_words(formats.KEEP_WORDS)
BEFORE = 8
AFTER = 16
HEAD = 16 << 10
FULL = False  # hand over every line: the reference the tests hold the selection to
# The engines installed, fastest first: NCCLCHECK_ENGINE names one of them ("python" is always there), else the
# first is used.  "hyperscan" searches a block (keep words, triggers) and a head with Hyperscan, and counts newlines
# with StringZilla.
ENGINES = tuple(name for name, module in (("hyperscan", _hs), ("stringzilla", _sz)) if module is not None) + ("python",)
ENGINE = os.environ.get("NCCLCHECK_ENGINE", "") if os.environ.get("NCCLCHECK_ENGINE", "") in ENGINES else ENGINES[0]
BLOCK = 2 << 20  # small enough that the anchor passes over a block run from the CPU cache
MAX_LINE = 1 << 20
ZEROS_ONLY = 64 << 20  # NUL bytes with no text at all before them: not a log (``/dev/zero``, a zeroed file)
NOT_A_TTY_HINT = "pipe a log into it (kubectl logs POD | ncclcheck analyze-log -) or name files"

# A file named for its rank by whoever wrote it (``rank6.log``, ``rank_6``: no launcher's own naming); a launcher's
# per-rank files are its format's ``path_ranks`` (evidence/formats/: torchrun's --log-dir, Slurm's, Open MPI's).
_NAMED_RANK = re.compile(r"(?:^|[^a-z])rank[_-]?(?P<rank>\d+)(?:\D|$)", re.IGNORECASE)
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
    stream: bool = False  # a pipe, FIFO or device: read once, front to back, in this process

    @property
    def path_rank(self) -> int | None:
        """The rank a file name implies (``rank6.log``, ``rank_6``, ``attempt_0/6/stderr.log``)."""
        if self.path is None:
            return None
        norm = self.path.replace("\\", "/")
        m = _NAMED_RANK.search(os.path.basename(norm))
        return int(m["rank"]) if m else formats.path_rank(norm)

    def size(self) -> int:
        """Bytes on disk (0 for streams, and for a file that vanished since it was found), looked up once: the
        reader, its workers' chunks and the progress bar each ask, and a 100,000-file job paid a stat each time."""
        known = self.__dict__.get("_size")
        if known is not None:
            return int(known)
        try:
            size = os.stat(self.path).st_size if self.path is not None and not self.stream else 0
        except OSError:
            size = 0
        self.__dict__["_size"] = size  # a cache, not a field: equality and hashing stay the path's
        return size


def stdin_is_terminal() -> bool:
    """True when standard input is a terminal, where reading would wait for typing."""
    return sys.stdin is not None and sys.stdin.isatty()


def _kind(path: str) -> tuple[str, str | None]:
    """What a path is: ``(kind, None)``, or ``("", problem)`` when it cannot be read."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "", "symbolic link loop"
        if exc.errno == errno.ENOENT and os.path.islink(path):
            return "", f"broken symbolic link (to {os.readlink(path)})"
        if exc.errno == errno.EACCES:
            return "", "permission denied"
        return "", (exc.strerror or str(exc)).lower() if exc.errno != errno.ENOENT else "no such file or directory"
    if stat.S_ISDIR(mode):
        return "dir", None
    if stat.S_ISREG(mode):
        return "file", None
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)", None
    if stat.S_ISCHR(mode):
        return "character device", None
    if stat.S_ISSOCK(mode):
        return "socket", None
    if stat.S_ISBLK(mode):
        return "block device", None
    return "special file", None


def resolve(args: list[str], on_error: Callable[[InputError], None]) -> list[Source]:
    """Expand files, directories (recursively), globs and ``-`` into sources, in a stable order.

    Inside directories only regular files are read: FIFOs (PyTorch's dump pipes sit next to the dumps),
    sockets, devices, broken links and link loops are skipped with one error each.  Named on the
    command line, a FIFO or character device (``<(cmd)``, ``/dev/stdin``) is read as a stream.
    """
    out: list[Source] = []
    seen: set[str] = set()
    real_dirs: dict[str, str] = {}

    def real(path: str) -> str:
        """``os.path.realpath``, each folder resolved once: it lstats every part of the path, and a 100,000-file
        folder paid that for every file (a file that is itself a link is still resolved whole)."""
        head, tail = os.path.split(path)
        if not tail or tail in (".", "..") or os.path.islink(path):
            return os.path.realpath(path)
        if (folder := real_dirs.get(head)) is None:
            folder = real_dirs[head] = os.path.realpath(head or ".")
        return os.path.join(folder, tail)

    def add(path: str, explicit: bool, stream: bool = False) -> None:
        key = real(path)
        if stream or key not in seen:
            seen.add(key)
            out.append(Source(path, path, explicit, stream))

    def found(path: str, explicit: bool, matched: bool) -> None:
        """Add one path; ``matched``: found by walking a directory or by a glob, not named itself."""
        kind, problem = _kind(path)
        if problem:
            on_error(InputError(path, f"{problem}, skipped" if matched else problem))
        elif kind == "file":
            add(path, explicit)
        elif matched:
            on_error(InputError(path, f"is a {kind}, skipped"))
        elif kind in ("FIFO (named pipe)", "character device"):
            if kind == "character device" and _is_tty(path):
                on_error(InputError(path, f"is a terminal; {NOT_A_TTY_HINT}"))
            else:
                add(path, explicit, stream=True)
        else:
            on_error(InputError(path, f"is a {kind}, not a log"))

    for arg in args:
        if arg == "-":
            if sys.stdin is None:
                on_error(InputError("<stdin>", "standard input is closed"))
            elif stdin_is_terminal():
                on_error(InputError("<stdin>", f"standard input is a terminal; {NOT_A_TTY_HINT}"))
            else:
                out.append(Source("<stdin>", None, True, True))
            continue
        kind, problem = _kind(arg)
        if kind == "dir":
            before = len(out)
            refused: list[InputError] = []

            def walk_error(exc: InputError, refused: list[InputError] = refused) -> None:
                refused.append(exc)
                on_error(exc)

            for f in _walk(arg, walk_error):
                found(f, explicit=False, matched=True)
            if len(out) == before and not refused:  # what could not be read was said; "no files" would contradict it
                on_error(InputError(arg, "directory contains no files"))
        elif kind or problem != "no such file or directory" or not _GLOB_CHARS.search(arg):
            found(arg, explicit=True, matched=False)
        else:
            matches = sorted(p for p in glob.glob(arg, recursive=True) if not os.path.isdir(p))
            if not matches:
                on_error(InputError(arg, "no file matches this pattern"))
            for f in matches:
                found(f, explicit=True, matched=True)
    return out


def _walk(top: str, on_error: Callable[[InputError], None]) -> list[str]:
    """Every non-hidden entry under ``top`` that is not a directory, following directory links once each; hidden
    folders below ``top`` are skipped as hidden files are (a stale ``.cache/`` copy is not this job's log), the
    folder named itself is read whatever its name."""
    visited = {os.path.realpath(top)}
    entries: list[str] = []

    def failed(exc: OSError) -> None:
        on_error(InputError(exc.filename or top, f"{(exc.strerror or str(exc)).lower()}, skipped"))

    for root, dirs, files in os.walk(top, onerror=failed, followlinks=True):
        keep = []
        for d in dirs:
            if d.startswith("."):
                continue
            real = os.path.realpath(os.path.join(root, d))
            if real not in visited:  # a link back up the tree, or a second link to one directory
                visited.add(real)
                keep.append(d)
        dirs[:] = keep
        entries.extend(os.path.join(root, f) for f in files if not f.startswith("."))
    return sorted(entries)


def _is_tty(path: str) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return False
    try:
        return os.isatty(fd)
    finally:
        os.close(fd)


class _Prefixed(io.RawIOBase):
    """A stream whose first bytes were already read (to sniff the format) and are given back first."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        super().__init__()
        self._head = memoryview(head)
        self._rest = rest

    def readable(self) -> bool:
        return True

    # BufferedReader hands a memoryview; the base class declares any writable buffer
    def readinto(self, b: memoryview) -> int:  # type: ignore[override]
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._rest.readinto(b)  # type: ignore[attr-defined,no-any-return]  # BinaryIO declares no readinto


def open_source(source: Source, head_size: int = 4096) -> tuple[BinaryIO, bytes]:
    """Open an input once and read its first bytes; the stream returned starts at the beginning again.

    Streams cannot be reopened or rewound, so whatever sniffs the format (dump, compression)
    must look at these bytes rather than at the input itself.
    """
    if source.path is None:
        raw: BinaryIO = sys.stdin.buffer
    else:
        try:
            raw = open(source.path, "rb")  # noqa: SIM115 - the caller closes it
        except PermissionError:
            raise InputError(source.name, "permission denied") from None
        except IsADirectoryError:
            raise InputError(source.name, "is a directory") from None
        except OSError as exc:
            raise InputError(source.name, exc.strerror or str(exc)) from None
    try:
        head = _read_full(raw, head_size)
    except OSError as exc:
        _close(source, raw)
        raise InputError(source.name, f"read failed ({exc.strerror or exc})") from None
    if not source.stream:
        raw.seek(0)
        return raw, head
    return io.BufferedReader(_Prefixed(head, raw), 1 << 16), head


def _read_full(stream: BinaryIO, n: int) -> bytes:
    """Read ``n`` bytes, or up to end of input (a pipe may deliver them in several pieces)."""
    parts: list[bytes] = []
    size = 0
    while size < n:
        piece = stream.read(n - size)
        if not piece:
            break
        parts.append(piece)
        size += len(piece)
    return b"".join(parts)


def _close(source: Source, stream: BinaryIO) -> None:
    if source.path is not None:
        stream.close()


_DECOMPRESS_ERRORS = (EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile, OSError, InflateLimit)


def read_lines(
    source: Source,
    on_problem: Callable[[str], None],
    opened: tuple[BinaryIO, bytes] | None = None,
) -> Generator[tuple[int, bytes], None, tuple[int, int]]:
    """Yield ``(line number, line)`` for the lines the parser should see.

    Returns (via ``StopIteration.value``) ``(lines, bytes_read)``.  Problems that
    stop reading part-way (truncated archives) are reported through ``on_problem``
    and end the iteration; what was read before them still counts.  ``opened`` is
    the result of :func:`open_source` when the caller has already sniffed the input.

    NOTE: blocks are read into one reused buffer (``readinto``): allocating a fresh
    block per read costs more in page faults than the whole anchor search.
    """
    raw, head = opened if opened is not None else open_source(source)
    inflated = bounded(raw, head)  # decompressed under evidence/inflate.py's limits, the same for every input
    stream, compressed = (raw, False) if inflated is None else (inflated, True)
    encoding = None if compressed else sniff(head)
    if encoding is not None:  # read as UTF-8 from here on, through the same block reader as archives
        stream, compressed = Transcoded(raw, encoding), True  # type: ignore[assignment]
        on_problem(f"{encoding.upper()} text, read as UTF-8")
    nul_bytes, first_nul = 0, -1
    buf = _FREE.pop() if _FREE and len(_FREE[-1]) == BLOCK + MAX_LINE + 1 else bytearray(BLOCK + MAX_LINE + 1)
    view = memoryview(buf)
    held = 0  # bytes of an unfinished line kept at the front of ``buf``
    lineno = 1  # number of the next line to start
    total = 0  # bytes read from the (decompressed) stream
    consumed = 0  # stream offset of buf[0]
    long_line = False  # inside a line longer than MAX_LINE, part of which was already read in pieces
    after_left = 0
    every: bool | None = None  # every line, for a host's or a scheduler's records: told from the first block
    try:
        while True:
            n, error = _read_into(stream, compressed, view[held: held + BLOCK])
            if isinstance(error, InflateLimit):
                on_problem(str(error))
            elif error is not None:
                kind = "compressed data is truncated or corrupt" if compressed else "read failed"
                on_problem(f"{kind} after {total + n} bytes ({error}); the rest is ignored")
            eof = n == 0 or error is not None
            nul = buf.find(b"\x00", held, held + n) if n else -1
            if nul != -1:  # runs of zero bytes a crashed or truncated write left: skipped, counted, reported
                chunk = bytes(buf[held: held + n])
                text = chunk.translate(None, b"\x00")  # deletes in one pass: replace() is 30x slower on zeros
                if total == 0 and is_binary(text[:8192]):
                    raise InputError(source.name, "binary file (not text once its NUL bytes are set aside), skipped")
                first_nul = total + nul - held if first_nul == -1 else first_nul
                only_zeros = total == nul_bytes and not text  # nothing but NUL bytes so far
                nul_bytes += len(chunk) - len(text)
                if only_zeros and nul_bytes >= ZEROS_ONLY:
                    raise InputError(source.name, f"nothing but NUL bytes in its first {ZEROS_ONLY >> 20} MiB (a "
                                                  "zeroed file or device), skipped")
                buf[held: held + len(text)] = text
                total += n - len(text)
                n = len(text)
            total += n
            end = held + n
            if long_line:
                nl = buf.find(b"\n", 0, end)
                if nl == -1 and not eof:
                    if end > MAX_LINE:
                        cut = _piece_end(buf, end)
                        yield from _pieces(buf, cut, lineno, max(0, HEAD - consumed))
                        buf[: end - cut] = buf[cut:end]
                        consumed += cut
                        held = end - cut
                    else:
                        held = end
                    continue
                last = end if nl == -1 else nl
                yield from _pieces(buf, last, lineno, max(0, HEAD - consumed))
                long_line = False
                lineno += 1
                rest = min(last + 1, end)
                buf[: end - rest] = buf[rest:end]
                consumed += rest
                end -= rest
                if eof and end == 0:
                    break
            if eof:
                if end == 0:
                    break
                if buf[end - 1] != 0x0A:
                    buf[end] = 0x0A
                    end += 1
                every = _host_records(buf, end) if every is None else every
                lineno, _ = yield from _scan(buf, end, lineno, after_left, max(0, HEAD - consumed), on_problem,
                                             every or consumed + end <= SMALL)
                break
            cut = buf.rfind(b"\n", 0, end)
            if cut != -1:
                every = _host_records(buf, cut + 1) if every is None else every
                # The start of an input no bigger than SMALL is handed over line by line: selecting lines costs more
                # than parsing them there (a job of one small file per rank has 100,000 of them).
                lineno, after_left = yield from _scan(buf, cut + 1, lineno, after_left, max(0, HEAD - consumed),
                                                      on_problem, every or consumed + cut + 1 <= SMALL)
                buf[: end - cut - 1] = buf[cut + 1: end]
                consumed += cut + 1
                end -= cut + 1
            held = end
            if held > MAX_LINE:
                on_problem(_long_line(lineno))
                long_line = True
                piece = _piece_end(buf, end)
                yield from _pieces(buf, piece, lineno, max(0, HEAD - consumed))
                buf[: end - piece] = buf[piece:end]
                consumed += piece
                held = end - piece
    finally:
        view.release()
        _FREE.append(buf)
        _close(source, raw)
    if nul_bytes:
        on_problem(f"{nul_bytes:,} NUL bytes skipped (runs of zero bytes, as a crashed or truncated write leaves; "
                   f"the first at byte {first_nul:,}); the text around them was read")
    if total == 0 and source.explicit:
        on_problem("empty input (no log lines)")
    return lineno - 1, total


def _read_into(stream: BinaryIO, compressed: bool, out: memoryview) -> tuple[int, Exception | None]:
    """Fill ``out`` as far as one block goes; report how many bytes, and an error that ended reading."""
    if not compressed:
        try:
            return stream.readinto(out) or 0, None  # type: ignore[attr-defined]
        except OSError as exc:
            return 0, exc
    chunk, error = _read_block(stream, len(out))
    out[: len(chunk)] = chunk
    return len(chunk), error


def _read_block(stream: BinaryIO, limit: int) -> tuple[bytes, Exception | None]:
    """Decompress up to ``limit`` bytes; from a damaged archive, keep everything decoded before the damage."""
    parts: list[bytes] = []
    size = 0
    try:
        while size < limit:
            piece = stream.read1(limit - size)  # type: ignore[attr-defined]
            if not piece:
                break
            parts.append(piece)
            size += len(piece)
    except _DECOMPRESS_ERRORS as exc:
        return b"".join(parts), exc
    return b"".join(parts), None


def _long_line(lineno: int) -> str:
    limit = f"{MAX_LINE >> 20} MiB" if MAX_LINE >= 1 << 20 else f"{MAX_LINE >> 10} KiB"
    return f"line {lineno} is longer than {limit}; it is read in pieces split at its carriage returns"


def _piece_end(buf: bytearray, end: int) -> int:
    """Where to cut a partly read over-long line: after its last carriage return, else its last space, else anywhere.

    Only the second half is searched, so that every cut frees at least half of the buffer.
    """
    for sep in (b"\r", b" "):
        cut = buf.rfind(sep, end // 2, end) + 1
        if cut:
            return cut
    return end


def _pieces(buf: bytearray, size: int, lineno: int, full_until: int) -> Iterator[tuple[int, bytes]]:
    """The selected pieces of part of one over-long physical line, each numbered as that line.

    Carriage returns split it (a redrawn progress bar is many short pieces); a run without one is
    cut every MAX_LINE bytes.
    """
    text = bytes(buf[:size]).replace(b"\r", b"\n")
    if b"\n" not in text and len(text) > MAX_LINE:
        text = b"\n".join(text[i: i + MAX_LINE] for i in range(0, len(text), MAX_LINE))
    elif b"%|" in text:  # a bar redrawn: of each run of its pieces only the last says where the loop is, as repair
        # keeps the last of a shorter line's carriage-return segments (a tqdm log is one line of a million bars)
        pieces = text.split(b"\n")
        text = b"\n".join(p for p, after in zip(pieces, [*pieces[1:], b""], strict=True)
                           if not (b"%|" in p and b"%|" in after))
    part = bytearray(text)
    part += b"\n"
    for _, line in _scan(part, len(part), 1, 0, full_until, None):
        yield lineno, line


def _triggered(buf: bytearray, size: int) -> list[int]:
    """Start offsets of the lines in ``buf[:size]`` that hold a trigger and a wanted word."""
    starts: list[int] = []
    for anchor, (trigger, back) in TRIGGERS.items():
        match = trigger.match
        i = first = buf.find(anchor, 0, size)
        misses = 0
        while i != -1:
            if i < back or not match(buf, i - back):
                misses += 1
                if misses == WORD_SEARCH_AFTER and _simd() and anchor in WORDS:
                    _words(buf, size, WORDS[anchor], max(0, i + 1 - back), starts)
                    break
                if misses % DENSE_AFTER == 0 and i - first < misses * DENSE_GAP:
                    _searched(buf, size, trigger, back, i + 1, starts)
                    break
                i = buf.find(anchor, i + 1, size)
                continue
            i = _take(buf, size, i, starts)
            if i != -1:
                i = buf.find(anchor, i, size)
    return starts


def _words(buf: bytearray, size: int, words: tuple[bytes, ...], pos: int, starts: list[int]) -> None:
    """The rest of a block where an anchor byte keeps missing (``[W…] Warning:``): search for the words whole."""
    text = _sz.Str(buf)
    for word in words:
        i = text.find(word, pos, size)
        while i != -1:
            i = _take(buf, size, i, starts)
            if i != -1:
                i = text.find(word, i, size)


def _simd() -> bool:
    """Whether StringZilla counts newlines and searches an anchor's words (every engine but "python")."""
    return ENGINE != "python" and _sz is not None


def _newlines(buf: bytearray, start: int, end: int) -> int:
    """Newlines in ``buf[start:end]``: CPython's count runs at ~1.5 GB/s, StringZilla's at memory speed."""
    if _simd():
        n: int = _sz.Str(buf).count(b"\n", start, end)
        return n
    return buf.count(b"\n", start, end)


def _take(buf: bytearray, size: int, i: int, starts: list[int]) -> int:
    """Keep the line around a trigger at ``i`` if it names something wanted; return where its next line starts."""
    s = buf.rfind(b"\n", 0, i) + 1
    e = buf.find(b"\n", i, size)
    if _WANTED.search(buf, s, e):
        starts.append(s)
    return e + 1 if e + 1 < size else -1


def _searched(buf: bytearray, size: int, trigger: re.Pattern[bytes], back: int, pos: int, starts: list[int]) -> None:
    """The rest of a block where an anchor byte is everywhere (ASCII progress bars): let ``re`` find the triggers."""
    search = trigger.search
    m = search(buf, max(0, pos - back), size)
    while m:
        nxt = _take(buf, size, m.start() + back, starts)
        if nxt == -1:
            return
        m = search(buf, nxt, size)


def _kept(buf: bytearray, size: int, ends: list[int]) -> list[tuple[int, int]]:
    """The lines of ``buf[:size]`` that hold one of ``WHOLE_WORDS`` (given by their ``ends``, past the newline), as
    ``(start, end)`` spans; a line ending in NCCL's ``Last error:`` brings the line under it (NCCL's reason) along,
    and so does a line ending in an enforce's header (``[enforce fail at <file>:<line>]``, whose condition and message
    its source writes on the same line: a wrap put them under it, repair.ENFORCE_OPEN)."""
    spans = []
    for end in ends:
        start = buf.rfind(b"\n", 0, end - 1) + 1
        tail = bytes(buf[max(start, end - 24): end]).rstrip()
        if end < size and (tail.endswith(b"Last error:")
                           or tail.endswith(b"]") and buf.find(b"[enforce fail at ", start, end) != -1):
            end = buf.find(b"\n", end, size) + 1
        spans.append((start, end))
    return spans


def _found_ends(buf: bytearray, size: int) -> list[int]:
    """Ends of the lines holding a keep word, one word after another: from each hit on to the end of its line.
    StringZilla's find takes ~0.04 ms a word in a 2 MiB block, CPython's ~1.5 ms."""
    find = _sz.Str(buf).find if _simd() else buf.find
    ends = []
    for word in WHOLE_WORDS:
        at = find(word, 0, size)
        while at != -1:
            end = buf.find(b"\n", at, size) + 1
            ends.append(end)
            at = find(word, end, size)
    return ends


def _wanted(buf: bytearray, ends: list[int]) -> list[int]:
    """Start offsets of the lines (given by their ends, past the newline) that name something in ``_WANTED``."""
    starts = []
    for end in ends:
        start = buf.rfind(b"\n", 0, end - 1) + 1
        if _WANTED.search(buf, start, end - 1):
            starts.append(start)
    return starts


@functools.cache
def _hs_database() -> Any:
    """Hyperscan's databases: one for a block, one for an input's head; compiled once (~40 ms) and then loaded from
    the user's cache folder (~0.1 ms), since every worker of a large job would compile them alike.

    A block's has two expressions, each followed by the rest of its line: every keep word (id 0), and every trigger
    (id 1: the patterns of ``TRIGGERS``, which Hyperscan reads as ``re`` does).  A line reports a match of each once,
    at its newline, however often it holds one (a match's end is the only offset Hyperscan reports without asking
    for starts, and an expression matches at each end offset once).  The head's holds ``_HEAD_WANTED`` (id 0) and
    ``Last error`` (id 1), each reported at every match (a head is 16 KiB at most), so that a line cut by the head's
    end is still found.  None where this processor cannot run them (Hyperscan needs SSSE3): then ``re`` and the
    word-by-word search do the work."""
    words = b"|".join(b"".join(b"\\x%02x" % c for c in word) for word in WHOLE_WORDS)
    triggers = b"|".join(trigger.pattern for trigger, _ in TRIGGERS.values())
    sources = ([b"(?:" + words + rb")[^\n]*\n", b"(?:" + triggers + rb")[^\n]*\n"], [_HEAD_WANTED.pattern, b"Last error"])
    path = _hs_cached(sources)
    if path is not None and (loaded := _hs_load(path)) is not None:
        return loaded
    databases = []
    for expressions in sources:
        database = _hs.Database(mode=_hs.HS_MODE_BLOCK)
        try:
            database.compile(expressions=expressions, ids=[0, 1], elements=2, flags=[0, 0])
        except _hs.error:  # pragma: no cover - a processor Hyperscan does not support
            return None
        databases.append(database)
    if path is not None:
        _hs_store(path, databases)
    return tuple(databases)


def _hs_cached(sources: tuple[list[bytes], ...]) -> str | None:
    """Where the databases compiled from ``sources`` by this Hyperscan are kept (None: caching is off)."""
    folder = cachedir.directory()
    if folder is None:
        return None
    digest = hashlib.sha256(repr((_hs.__version__, sources)).encode()).hexdigest()[:24]
    return os.path.join(folder, f"reader-{digest}.hs")


def _hs_load(path: str) -> tuple[Any, ...] | None:
    """The databases kept at ``path``; None where there are none or they cannot be used (damaged, or compiled for
    another processor: Hyperscan checks), and then they are compiled again."""
    try:
        with open(path, "rb") as fh:
            blob = fh.read(_HS_CACHE_MAX)
        first = int.from_bytes(blob[:8], "little")
        if len(blob) < 8 + first:
            return None
        databases = (_hs.loadb(blob[8: 8 + first], _hs.HS_MODE_BLOCK), _hs.loadb(blob[8 + first:], _hs.HS_MODE_BLOCK))
        for database in databases:
            database.scratch = _hs.Scratch(database)
    except (OSError, _hs.error):
        return None
    return databases


def _hs_store(path: str, databases: list[Any]) -> None:
    """Keep the compiled databases for the next process; written whole or not at all (workers race to it)."""
    blobs = [_hs.dumpb(d) for d in databases]
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".reader-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(len(blobs[0]).to_bytes(8, "little") + blobs[0] + blobs[1])
        os.replace(tmp, path)
    except OSError:  # a cache that cannot be written is skipped: the answer is the same without it
        return


_HS_CACHE_MAX = 16 << 20  # bytes: the two databases take ~180 kB; a larger file is not ours


def before_fork() -> None:
    """Build once, in the parent, what every worker would build alike: Hyperscan's databases (~60 ms a process),
    which a forked worker then shares instead of compiling its own while the others wait on the slowest."""
    if ENGINE == "hyperscan":
        _hs_database()


def _hs_lines(database: Any, buf: bytearray, size: int) -> tuple[list[int], list[int]]:
    """Ends of the lines holding a keep word, and of those holding a trigger, found in one pass over the block
    (``buf[size - 1]`` is a newline)."""
    found: tuple[list[int], list[int]] = ([], [])
    with memoryview(buf) as view, view[:size] as block:
        database[0].scan(block, match_event_handler=lambda kind, _start, end, _flags, _ctx: found[kind].append(end))
    return found


def _head_hits(database: Any, buf: bytearray, head: int) -> list[tuple[int, bool]]:
    """Offsets inside the lines of ``buf[:head]`` that name a setting or an error (``_HEAD_WANTED``, wholly before
    ``head``), each with whether the line says NCCL's ``Last error``.  ``re`` takes ~1 ms for 16 KiB of it."""
    if database is None:
        return [(m.start(), m.group() == b"Last error") for m in _HEAD_WANTED.finditer(buf, 0, head)]
    hits: list[tuple[int, bool]] = []
    with memoryview(buf) as view, view[:head] as block:
        database[1].scan(block, match_event_handler=lambda kind, _start, end, _flags, _ctx: hits.append((end - 1,
                                                                                                        kind == 1)))
    return hits


# What a host's or a scheduler's records look like at their start: a kernel log (dmesg, dmesg -T, journalctl -k,
# kern.log, ISO stamps), kubectl's describe and events, Slurm's sacct and scontrol. Such inputs are read whole.
_HOST_RECORDS = re.compile(
    rb"^\[\s*\d+\.\d{6}\] |^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\] |"
    rb"^\S{3,8} [ \d]\d \d\d:\d\d:\d\d (?:\S+ )?kernel: |^NVRM: |^\d{4}-\d\d-\d\dT[\d:.,]+\S* \S+ kernel: |"
    rb"^LAST SEEN\s+TYPE\s+REASON|^Name:\s+\S+\s*$|^Events:\s*$|^\s*JobID\s+JobName|^JobId=\d+ ", re.M)
HOST_HEAD = 8192
SMALL = 4096  # bytes: an input this small is parsed whole


def _host_records(buf: bytearray, size: int) -> bool:
    """Whether the input starts as a host's or a scheduler's records (one signature in its first lines is enough:
    a pasted dmesg begins with it)."""
    return _HOST_RECORDS.search(buf, 0, min(size, HOST_HEAD)) is not None


def _scan(
    buf: bytearray,
    size: int,
    lineno: int,
    after_left: int,
    full_until: int,
    on_problem: Callable[[str], None] | None,
    every: bool = False,
) -> Generator[tuple[int, bytes], None, tuple[int, int]]:
    """Yield the selected lines of ``buf[:size]`` (whole lines; ``buf[size - 1]`` is a newline); ``every``: all
    of them (a host's or a scheduler's records, small and dense)."""
    every = every or FULL
    spans: list[tuple[int, int]] = [(0, size)] if every else []
    if after_left and not every:
        end = 0
        n = 0
        while end < size and n < after_left:
            end = buf.find(b"\n", end, size) + 1
            n += 1
        spans.append((0, end))
        after_left -= n
    database = _hs_database() if ENGINE == "hyperscan" and not every else None
    if full_until and not every:
        for at, last_error in _head_hits(database, buf, min(size, full_until)):
            end = buf.find(b"\n", at, size) + 1
            if 0 < end < size and last_error:  # and the line under it: NCCL's reason
                end = buf.find(b"\n", end, size) + 1 or end
            spans.append((buf.rfind(b"\n", 0, at) + 1, end))
    triggered: list[int] = []
    if not every:
        keep_ends, trigger_ends = (_found_ends(buf, size), None) if database is None else _hs_lines(database, buf, size)
        spans += _kept(buf, size, keep_ends)
        triggered = _triggered(buf, size) if trigger_ends is None else _wanted(buf, trigger_ends)
    for s in set(triggered):
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
        spans.append((a, b))
    ranges: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if ranges and a <= ranges[-1][1]:
            if b > ranges[-1][1]:
                ranges[-1] = (ranges[-1][0], b)
        else:
            ranges.append((a, b))
    pos = 0
    for a, b in ranges:
        lineno += _newlines(buf, pos, a)
        for line in bytes(buf[a: b - 1]).split(b"\n"):
            if on_problem is not None and len(line) > MAX_LINE:
                on_problem(_long_line(lineno))
                piece = bytearray(line)
                yield from _pieces(piece, len(piece), lineno, 0)
            else:
                yield lineno, line
            lineno += 1
        pos = b
    lineno += _newlines(buf, pos, size)
    return lineno, after_left
