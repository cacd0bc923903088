"""py-spy's dump of a running Python process (``py-spy dump --pid PID``): each thread's stack, read as that process's
live stack, as ``ncclcheck snapshot`` takes it.

py-spy (benfred/py-spy, src/dump.rs ``print_traces`` and ``write_trace``; src/stack_trace.rs ``status_str`` and
``format_threadid``) prints, for each process it dumps::

    Process 23189: /usr/bin/python -u train.py            the PID and its command line
    Python v3.11.7 (/usr/bin/python3.11)                  the interpreter's release and path
    Parent Process 23188: /usr/bin/python -u train.py     with --subprocesses (0.3.14 on): a child's parent
                                                          (a blank line)
    Thread 23189 (idle): "MainThread"                     each thread: its id, its activity, its name
        Queue.get (multiprocessing/queues.py:113)         its frames, innermost first
            Arguments:                                    with --locals: the frame's arguments and locals,
                self: <Queue at 0x7fb84b805910>           one `name: repr` a line
    ------------------------------------------------      with --subprocesses: between processes

A thread's id is the OS thread id in decimal on Linux (0.2.0 on), else the Python thread id as ``{:#X}``
(``0x7FA6E7C01740``: before 0.2.0, on macOS, and where py-spy finds no OS id); its activity is ``idle``, ``active``
or ``active+gil``; its name, in quotes after a colon, is printed since 0.2.2 (0.1 and 0.2.0-0.2.1 print none). A
frame is ``name (file:line)``, or ``name (file)`` where it has no line (a native frame of ``--native``); 0.1 to
0.2.1 put a tab and a space before it, 0.2.2 on four spaces. Python 3.11 and later name a method with its class
(``Queue.get``). The threads are printed in reverse of the interpreter's list, the main thread most often first.

The dump names no rank: its rank is the one a launcher's tag on its lines names, or the one this input's launcher
lines pair with its PID, or the rank the file's name gives (evidence/parse.py joins it). Each line of a process's
dump yields that dump as read so far (:class:`~ncclcheck.evidence.types.SpiedProcess`, the last one of an index
wins): a dump has no line that ends it. A frame's line holds none of the words that gate this source: once a dump
is open its reader is fed every next line (``Dumps.open``) until a line that is no part of a dump closes it; the
block reader hands frame lines over by their shape (``(file.py:N)`` at a line's end, a trigger).

The torch.distributed calls a rank can block in (:data:`COLLECTIVES`) and the one a stack is inside
(:func:`collective_of`) are shared with ``ncclcheck snapshot``'s own py-spy reading (snapshot/pyspy.py, which takes
py-spy's ``--json``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample, Trigger
from ncclcheck.evidence.frdump import Frame
from ncclcheck.evidence.types import LiveThread, Loc, Said, SpiedProcess

# torch.distributed calls a rank can block in, under the names distributed_c10d.py gives them.
COLLECTIVES = frozenset({
    "all_reduce", "all_reduce_coalesced", "all_gather", "all_gather_into_tensor", "all_gather_object",
    "all_gather_coalesced", "_all_gather_base", "reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base",
    "all_to_all", "all_to_all_single", "broadcast", "broadcast_object_list", "reduce", "gather", "gather_object",
    "scatter", "scatter_object_list", "barrier", "monitored_barrier", "send", "recv", "send_object_list",
    "recv_object_list", "batch_isend_irecv", "init_process_group", "new_group", "new_subgroups",
    "destroy_process_group",
})

PROCESS = re.compile(r"(?<!\S)Process (?P<pid>\d{1,10}): (?P<command>.*?)\s*$")
PARENT = re.compile(r"Parent Process (?P<pid>\d{1,10}): ")
PYTHON = re.compile(r"Python v(?P<version>\d+\.\d+\.\d+\S*) \(")
THREAD = re.compile(r"Thread (?P<id>0x[0-9A-Fa-f]{1,16}|\d{1,10}) \((?:idle|active\+gil|active|gil)\)"
                    r'(?:: "(?P<name>[^"]*)")?\s*$')
# A frame: four spaces (a tab and a space before 0.2.2), the function, the file and its line (none for a native frame)
FRAME = re.compile(r"(?:    |\t )(?P<name>\S.*?) \((?P<file>[^()]+?)(?::(?P<line>\d{1,7}))?\)\s*$")
# --locals' lines under a frame (8 and 12 spaces), and --subprocesses' rule between processes
LOCALS = re.compile(r"(?:        (?:Arguments|Locals):{1,2}|            \S.*)\s*$")
RULE = re.compile(r"-{20,}\s*$")
# A Python frame's line, as the block reader finds it (its anchor byte, the dot, starts it): a frame of this source
# where the line is a frame's whole shape (``wanted``).
# A rank in a dump file's own name (``rank3.txt``, ``pyspy_rank_3.log``): read for the one process a file holds
FILE_RANK = re.compile(r"(?i)(?<![a-z])rank[-_.]?(?P<rank>\d{1,7})(?!\d)")
FRAME_TRIGGER = r"\.py:\d{1,7}\)"
FRAME_WANTED = r"(?:    |\t )\S[^\n]{0,400} \([^()\n]{1,400}\.py:\d{1,7}\)\r?$"


def name_of(raw: str) -> str:
    """Python 3.11+ frames are qualified (``Thread.run``): the bare function name."""
    return raw.rsplit(".", 1)[-1]


def collective_of(frames: Sequence[Frame]) -> str | None:
    """The torch.distributed call these frames are inside: the outermost one, which is what user code called."""
    for f in reversed(frames):
        if name_of(f.name) in COLLECTIVES and "torch/distributed/" in f.file.replace("\\", "/"):
            return name_of(f.name)
    return None


def file_rank(path: str) -> int | None:
    """The rank a dump file's name gives (its base name only: a folder named for a rank may hold every rank's)."""
    m = FILE_RANK.search(path.replace("\\", "/").rsplit("/", 1)[-1])
    return int(m["rank"]) if m else None


def main_first(threads: tuple[LiveThread, ...], pid: int | None) -> tuple[LiveThread, ...]:
    """The threads with the process's main thread first: the one py-spy names ``MainThread``, else the one whose OS
    id is the PID; else py-spy's order, which prints the interpreter's oldest thread first."""
    main = next((t for t in threads if t.name == "MainThread"), None) or next(
        (t for t in threads if pid is not None and t.name == str(pid)), None)
    return threads if main is None else (main, *(t for t in threads if t is not main))


class Dumps:
    """One input's py-spy dumps, read in order: the process each opened, its threads and their frames."""

    def __init__(self) -> None:
        self.open = False  # inside a dump: every next line is fed here until one closes it
        self._index = -1
        self._lead = 0  # the width of what stands before the dump's own text (a collector's label)
        self._pid: int | None = None
        self._parent: int | None = None
        self._command = ""
        self._at: Loc | None = None
        self._threads: list[tuple[str, list[Frame]]] = []

    @property
    def inside(self) -> bool:
        """Whether the line just fed is a dump's own (a thread of it was read): no other source's line."""
        return self.open and bool(self._threads)

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "Process " in text and (not self.open or self._threads) and (m := PROCESS.search(text)) is not None \
                and not text[:m.start()].rstrip().endswith("Parent"):
            self._start(loc, m.start(), int(m["pid"]), m["command"])
            return ()
        if "Thread " in text and (m := THREAD.search(text)) is not None and (not self.open or m.start() == self._lead):
            if not self.open:
                self._start(loc, m.start(), None, "")
            self._threads.append((m["name"] or m["id"], []))
            return (self._said(),)
        if not self.open:
            return ()
        body = text[self._lead:]
        if self._threads and (f := FRAME.match(body)) is not None:
            self._threads[-1][1].append(Frame(f["name"], f["file"], int(f["line"]) if f["line"] else 0))
            return (self._said(),)
        if not body.strip() or LOCALS.match(body) or RULE.match(body):
            return ()
        if not self._threads and (p := PARENT.match(body)) is not None:
            self._parent = int(p["pid"])
            return ()
        if not self._threads and PYTHON.match(body):
            return ()
        self.open = False  # a line that is no part of a dump
        return ()

    def _start(self, loc: Loc, lead: int, pid: int | None, command: str) -> None:
        self.open = True
        self._index += 1
        self._lead = max(lead, 0)
        self._pid, self._parent, self._command, self._at = pid, None, command, loc
        self._threads = []

    def _said(self) -> SpiedProcess:
        assert self._at is not None
        return SpiedProcess(self._index, self._pid, self._parent, self._command,
                            tuple(LiveThread(name, tuple(frames)) for name, frames in self._threads), self._at)


_T264 = "tests/data/public_threads/264-pytorch-87995-four-node-freeze-after-few-epochs.log"
_REC = "tests/data/pyspy/loader-hang/rank1.txt"
_PROC = "Process 29148: /work/main/.venv/bin/python -u tools/pyspy/loader_hang.py"
_ONE = (LiveThread("MainThread", ()),)
FORMAT = Format(
    name="py-spy",
    words=("Process ", "(idle", "(active", "(gil"),
    make=Dumps,
    patterns=(PROCESS, THREAD),
    # a dump's other lines, read while it is open: its frames, --locals' lines, the rule between processes, the
    # parent's line and the Python line; and the file's name, where a file holds one process's dump
    behind=(Behind((PROCESS, THREAD), (FRAME, LOCALS, RULE, PARENT, PYTHON, FILE_RANK)),),
    triggers=(Trigger(FRAME_TRIGGER, ".", pattern=True),),
    wanted=(FRAME_WANTED,),
    samples=(
        Sample('Thread 0x7FA6E7C01740 (idle): "MainThread"', f"{_T264}:1",
               (SpiedProcess(0, None, None, "", _ONE, AT),)),
        Sample('Thread 29148 (idle): "MainThread"', f"{_REC}:4", (SpiedProcess(0, 29148, None, _PROC[15:], _ONE, AT),),
               before=(_PROC,)),
    ),
)
