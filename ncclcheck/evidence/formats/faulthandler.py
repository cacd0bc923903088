"""Python's faulthandler dumps: each thread's Python stack, read as the process's live stack (as py-spy's dumps are).

CPython's faulthandler (Modules/faulthandler.c, and Python/traceback.c's ``_Py_DumpTracebackThreads`` and
``dump_frame``, the same from 3.3 to 3.14) writes, with signal-safe calls only::

    Timeout (0:10:00)!                                     dump_traceback_later(timeout): the timer fired
                                                           (``Timeout (H:MM:SS.ffffff)!`` for a fractional one)
    Thread 0x00007f57caf71740 (most recent call first):    each thread, newest first: its id in hexadecimal
      File "/path/stage3.py", line 490 in _synchronize_communication     its frames, innermost first
      File "???", line ??? in ???                          (what a frame lacks is ``???``)
                                                           (a blank line between threads)
    Current thread 0x00007f5812345700 (most recent call first):   the thread that writes the dump, where it has a
                                                           Python state (dump_traceback(), a signal's handler)
      <no Python frame>                                    a thread outside Python code (3.11 on; before, nothing)

``Stack (most recent call first):`` heads a dump of one thread (``all_threads=False``); Python 3.3 wrote the
thread's line without ``(most recent call first)`` (``Current thread 0x...:``); 3.14 puts the thread's name in
brackets after its id (``Thread 0x... [python3] (most recent call first):``). A thread past 100 frames ends with
``  ...``, a dump past 100 threads with ``...``; 3.12 on writes ``  Garbage-collecting`` under the current thread
while the cycle collector runs; a free-threaded build writes ``<Cannot show all threads while the GIL is disabled>``.

The same dump follows ``Fatal Python error: <signal's name>`` (``Segmentation fault``, ``Aborted``, ``Bus error``,
``Floating point exception``, ``Illegal instruction``; ``Fatal Python error from unexpected signum: N``), Windows'
``Windows fatal exception: <what>`` and Py_FatalError's ``Fatal Python error: <function>: <message>`` (with
``Python runtime state: ...`` under it), then 3.10 on ``Extension modules: ...`` and 3.14's C stack. That dump is
where the process crashed, not where it waits: errors.py reads the fatal line as the crash; its frames are read as
no live stack (:attr:`Dumps.open` swallows them, yielding nothing).

A dump names no PID and no rank: its rank is the one a launcher's tag on its lines names (torchrun's
``[default0]:``), or the input's. A thread's line opens a dump (a frame's line too, where a paste cut the thread's
line off: its ``, line N in `` shape without a comma is faulthandler's alone, a traceback's has ``, in``); each next
line of the same prefix is fed here until one that is no part of it; dumps of several processes interleaved line by
line (torchrun's ``--tee``) are told apart by their prefix. Each line of a dump yields it as read so far
(:class:`~ncclcheck.evidence.types.SpiedProcess`, its ``tool`` ``faulthandler``): its threads with the main thread
first (the interpreter lists threads newest first, so the main thread is the last one printed), frames innermost
first. job/live.py and job/spied.py read it as they read py-spy's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.frdump import Frame
from ncclcheck.evidence.types import LiveThread, Loc, Said, SpiedProcess

TOOL = "faulthandler"
# A thread's line (3.3's without the words in parentheses; 3.14's with its name) or a one-thread dump's
THREAD = re.compile(r"(?:(?P<current>Current )?[Tt]hread (?P<id>0x[0-9a-fA-F]{1,16})(?: \[(?P<name>[^\]\n]{0,200})\])?"
                    r"(?: \(most recent call first\))?|Stack \(most recent call first\)):\s*$")
# A frame: dump_frame's `  File "<file>", line <n> in <function>` (``???`` for what the frame lacks)
FRAME = re.compile(r'  File (?:"(?P<file>[^"\n]{1,600})"|\?\?\?), line (?P<line>\d{1,7}|\?\?\?) in '
                   r"(?P<name>\S[^\n]{0,300}?)\s*$")
# The timer's line before a dump (dump_traceback_later), and the lines of a crash's dump's header
TIMEOUT = re.compile(r"Timeout \((?P<clock>\d{1,6}:\d\d:\d\d(?:\.\d{6})?)\)!\s*$")
FATAL = re.compile(r"Fatal Python error(?::| from unexpected signum:) |Windows fatal exception: ")
# Lines of a dump that hold no frame: a thread outside Python, a cut, the collector, a free-threaded build's notice
OTHER = re.compile(r"(?:  <no Python frame>|  <tstate is freed>|  \.\.\.|\.\.\.|  Garbage-collecting"
                   r"|<Cannot show all threads while the GIL is disabled>)\s*$")
# A crash's dump's other lines (Py_FatalError's state, 3.10's extension modules, 3.14's C stack)
CRASH_LINE = re.compile(r"(?:Python runtime state: |Extension modules: |Current thread's C stack|  Binary file "
                        r"|  <unknown>|  <cannot get C stack)")
# Fatal-error lines a crash's dump follows within (a blank line, Py_FatalError's state line between)
_CRASH_GAP = 4


@dataclass
class _Dump:
    """One process's dump as read so far: where it opened, its threads, whether it is a crash's."""

    index: int
    lead: int
    at: Loc
    crash: bool
    timeout: str = ""
    threads: list[tuple[str, list[Frame]]] = field(default_factory=list)


def _thread(m: re.Match[str]) -> str:
    """A thread's name: its own (3.14), else its id, marked where it is the dumping thread."""
    if m["id"] is None:
        return "Stack"
    return m["name"] or (("Current thread " if m["current"] else "Thread ") + m["id"])


class Dumps:
    """One input's faulthandler dumps, read in order; dumps behind different prefixes (processes) apart."""

    def __init__(self) -> None:
        self._open: dict[str, _Dump] = {}  # each open dump by the prefix its lines stand behind
        self._index = -1
        self._fatal: dict[str, int] = {}  # each prefix's last fatal-error line: a dump right after it is the crash's
        self._timeout: dict[str, tuple[int, str]] = {}  # each prefix's last timer line
        self.inside = False  # whether the line just fed is a dump's own (no other source's line)

    @property
    def open(self) -> bool:
        """Whether a dump is open: every next line is fed here until one that is no part of it closes it."""
        return bool(self._open)

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        self.inside = False
        if ("Fatal Python error" in text or "Windows fatal exception" in text) and (f := FATAL.search(text)):
            self._fatal[text[:f.start()]] = loc.line
        elif "Timeout (" in text and (t := TIMEOUT.search(text)) is not None:
            self._timeout[text[:t.start()]] = (loc.line, t["clock"])
            self._open.pop(text[:t.start()], None)  # a timer that repeats: its next dump is a new one
            return ()
        if ("most recent call first" in text or "hread 0x" in text) and (m := THREAD.search(text)) is not None:
            return self._header(text, m, loc)
        if 'File ' in text and (fr := FRAME.search(text)) is not None:
            return self._frame(text, fr, loc)
        if not self._open:
            return ()
        for prefix, d in list(self._open.items()):
            if not text.startswith(prefix):
                continue
            body = text[d.lead:]
            if not body.strip() or OTHER.match(body) or (d.crash and CRASH_LINE.match(body)):
                self.inside = not d.crash
                return ()
            del self._open[prefix]  # a line of the same prefix that is no part of a dump
        return ()

    def _header(self, text: str, m: re.Match[str], loc: Loc) -> Iterable[Said]:
        prefix = text[:m.start()]
        d = self._open.get(prefix)
        fatal = self._fatal.get(prefix)
        crash = fatal is not None and 0 < loc.line - fatal <= _CRASH_GAP
        if d is None or m["id"] is None or crash and not d.crash:  # a new dump: none open, one thread's, a crash's
            timer = self._timeout.get(prefix)
            d = self._start(prefix, m.start(), loc, crash, timer[1] if timer and loc.line - timer[0] == 1 else "")
        d.threads.append((_thread(m), []))
        self.inside = not d.crash
        return () if d.crash else (self._said(d),)

    def _frame(self, text: str, fr: re.Match[str], loc: Loc) -> Iterable[Said]:
        lead = fr.start()
        prefix = text[:lead]
        d = self._open.get(prefix)
        if d is None:  # a frame with no thread's line above it: a paste that cut it off
            fatal = self._fatal.get(prefix)
            d = self._start(prefix, lead, loc, fatal is not None and 0 < loc.line - fatal <= _CRASH_GAP + 1, "")
            d.threads.append(("Thread", []))
        elif not d.threads:
            d.threads.append(("Thread", []))
        line = fr["line"]
        d.threads[-1][1].append(Frame(fr["name"], fr["file"] or "???", int(line) if line.isdigit() else 0))
        self.inside = not d.crash
        return () if d.crash else (self._said(d),)

    def _start(self, prefix: str, lead: int, loc: Loc, crash: bool, timeout: str) -> _Dump:
        self._index += 1
        d = self._open[prefix] = _Dump(self._index, lead, loc, crash, timeout)
        return d

    @staticmethod
    def _said(d: _Dump) -> SpiedProcess:
        """The dump as read so far, its main thread (the last printed: the interpreter's oldest) first."""
        threads = [LiveThread(name, tuple(frames)) for name, frames in d.threads]
        if len(threads) > 1:
            threads = [threads[-1], *threads[:-1]]
        command = f"Timeout ({d.timeout})!" if d.timeout else ""
        return SpiedProcess(d.index, None, None, command, tuple(threads), d.at, TOOL)


_T320 = "tests/data/public_threads/320-deepspeed-860-zero3-inference-after-training-hangs-full-gpu.log"
_SYNC = Frame("synchronize", "/home/stas/anaconda3/envs/main-38/lib/python3.8/site-packages/torch/cuda/streams.py", 95)
FORMAT = Format(
    name="faulthandler",
    words=("hread 0x", "most recent call first)", 'File "', "File ???", "Fatal Python error", "Windows fatal exception",
           "Timeout ("),
    make=Dumps,
    patterns=(THREAD, FRAME),
    # a dump's other lines, read while it is open; the fatal error's and the timer's lines, behind their words
    behind=(Behind((THREAD, FRAME), (OTHER, CRASH_LINE)),
            Behind(("Fatal Python error", "Windows fatal exception"), (FATAL,)), Behind(("Timeout (",), (TIMEOUT,))),
    # one sample (each costs the 1 MiB test of tests/test_keep.py 4 KiB): a thread's line and a frame under it
    samples=(
        Sample('  File "/home/stas/anaconda3/envs/main-38/lib/python3.8/site-packages/torch/cuda/streams.py", line 95 '
               "in synchronize", f"{_T320}:2",
               (SpiedProcess(0, None, None, "", (LiveThread("Thread 0x00007f57caf71740", ()),), AT, TOOL),
                SpiedProcess(0, None, None, "", (LiveThread("Thread 0x00007f57caf71740", (_SYNC,)),), AT, TOOL)),
               before=("Thread 0x00007f57caf71740 (most recent call first):",)),
    ),
)
