"""NCCL's return trace: the ``file:line -> N`` INFO lines an error prints on its way up NCCL's own calls, and
nccl-tests' own line for the NCCL call that returned it.

NCCL propagates an error with its NCCLCHECK family of macros (src/include/checks.h; src/include/core.h in 2.3-2.4),
which log each frame it passes at INFO: ``INFO(NCCL_ALL, "%s:%d -> %d", __FILE__, __LINE__, res)`` from 2.3 to 2.29,
with the error's strerror behind it for a system call (`` -> 2 (Connection refused)``, SYSCHECK since 2.19), and
``INFO_LOC(NCCL_ALL, "-> %d", ...)`` since 2.30, which prints the function too (``init.cc:1840 (ncclCommInitRankDev)
-> 3``). A thread that is not the caller's tags its frame: ``[Async thread]`` (src/group.cc, the asynchronous
communicator set-up and group jobs), ``[Proxy Thread]``/``[Progress Thread]`` (src/proxy.cc), ``[Net]`` (NCCL
2.0-2.2's include/net.h, whose lines also lack the word NCCL: ``[1] INFO transport/net_ib.cu:537 -> 2``). ``N`` is
the ncclResult_t (src/nccl.h.in: 1 unhandled CUDA error, 2 system error, 3 internal error, 4 invalid argument, 5
invalid usage, 6 remote error, 7 in progress).

The frames under a WARN line are the path its error took up to the API call that returned it: the files name the
layers it came through (job/returntrace.py). Each frame is one ``nccl_return`` fact of its process, its value
``file:line -> N`` with `` [tag]`` where the line has one and `` @host:pid`` where NCCL's header names the process
(:func:`frame` reads it back). nccl-tests checks each NCCL call it makes and prints ``Test NCCL failure
common.cu:1294 '<ncclGetErrorString>'`` for one that failed: an ``nccl_test_check`` fact, the test's file and line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample, Trigger
from ncclcheck.evidence.types import Fact, Loc, Said, Who

# "host:pid:tid [dev] NCCL INFO file.cc:N (func) -> R (strerror) [tag]"; NCCL 2.0-2.2 without "NCCL", a paste without
# the header. Bounded throughout: linear on a hostile line.
TRACE = re.compile(
    r"(?:(?P<host>[A-Za-z0-9][\w.-]{0,200}):(?P<pid>\d{1,10}):\d{1,10} \[\d{1,4}\] )?(?:NCCL )?INFO "
    r"(?P<file>[\w./-]{1,200}\.(?:cc|cu|cpp|c|h|hpp)):(?P<line>\d{1,6})(?: \([\w:~<>]{1,200}\))? -> (?P<code>\d{1,3})"
    r"(?: \([^()]{0,200}\))?(?: \[(?P<tag>[\w ]{1,40})\])?\s*$")
KEY = "nccl_return"
# nccl-tests' own check of each NCCL call it makes (src/common.h, NCCLCHECK: "%s: Test NCCL failure %s:%d '%s'", the
# test's host, file and line; "NCCL failure %s:%d" in its 1.x): the test program's call that NCCL failed, its line in
# the test's source (which differs between nccl-tests releases).
TEST_CHECK = re.compile(r"(?:Test )?NCCL failure (?P<file>[\w./-]{1,200}\.cu):(?P<line>\d{1,7}) '")
TEST_KEY = "nccl_test_check"
_VALUE = re.compile(r"^(?P<file>[^\s:]{1,300}):(?P<line>\d{1,7}) -> (?P<code>\d{1,3})(?: \[(?P<tag>[^\]]{1,40})\])?"
                    r"(?: @(?P<proc>\S{1,300}))?$")
_ANYONE = Who()  # the line's process: the parser puts the fact on it


@dataclass(frozen=True)
class Frame:
    """One frame of NCCL's return trace: the file and line it passed, the ncclResult_t, the thread's tag, and the
    process (``host:pid``) where NCCL's header named it."""

    file: str
    line: int
    code: int
    tag: str = ""
    process: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line} -> {self.code}" + (f" [{self.tag}]" if self.tag else "")


def frame(value: str) -> Frame | None:
    """A ``nccl_return`` fact's value read back."""
    m = _VALUE.match(value)
    if m is None:
        return None
    return Frame(m["file"], int(m["line"]), int(m["code"]), m["tag"] or "", m["proc"] or "")


class Lines:
    """One input's return-trace lines, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "NCCL failure " in text and (t := TEST_CHECK.search(text)):
            return (Fact(_ANYONE, TEST_KEY, f"{t['file']}:{t['line']}", loc),)
        at = text.rfind(" -> ")
        if at < 1:
            return ()
        # a frame's arrow follows its file's line number (`enqueue.cc:447`) or its function's name (2.30); a
        # connection's (`Channel 00/32 : 0 -> 1`, `0[0] -> 1[1]`) follows neither, and is refused here before the
        # unanchored search, which costs ~20 us a line (a quarter of a chatty INFO log's lines)
        _, colon, line = text[text.rfind(" ", 0, at) + 1:at].rpartition(":")
        if not (line.endswith(")") or (colon and line.isdigit())) or (m := TRACE.search(text)) is None:
            return ()
        value = f"{m['file']}:{m['line']} -> {m['code']}" + (f" [{m['tag']}]" if m["tag"] else "")
        if m["host"]:
            value += f" @{m['host']}:{m['pid']}"
        return (Fact(_ANYONE, KEY, value, loc),)


FORMAT = Format(
    name="NCCL's return trace",
    words=("NCCL failure ",),
    # NCCL's connection lines ("0[0] -> 1[1] via P2P/IPC", a quarter of a chatty INFO log) hold " -> " too: as a
    # keep word it would hand every one of them over anywhere. It is a set-up word (the head), and a frame's own
    # shape, a source file's line (and 2.30's function) before the arrow, finds the frames beyond the head.
    head_words=(" -> ",),
    triggers=(Trigger(r"\.(?:cc|cu|cpp|c|h|hpp):\d{1,6}(?: \([\w:~<>]{1,200}\))? -> \d", ".", pattern=True),),
    wanted=(" -> ",),
    make=Lines,
    patterns=(TRACE, TEST_CHECK),
    behind=(
        # a nccl_return fact's value, read back (job/returntrace.py)
        Behind((TRACE,), (_VALUE,)),
    ),
    samples=(
        Sample("node1:54573:54696 [1] INFO transport/net_ib.cu:537 -> 2",
               "NCCL 2.x (before 2.3) under Horovod, https://github.com/horovod/horovod/issues/147",
               (Fact(_ANYONE, KEY, "transport/net_ib.cu:537 -> 2 @node1:54573", AT),)),
        Sample("node1:54573:54696 [1] INFO include/net.h:30 -> 2 [Net]",
               "the same trace's frame in NCCL 2.x's network wrapper, https://github.com/horovod/horovod/issues/147",
               (Fact(_ANYONE, KEY, "include/net.h:30 -> 2 [Net] @node1:54573", AT),)),
        Sample("YYY:2396:2428 [0] NCCL INFO enqueue.cc:447 -> 4",
               "NCCL 2.5.6 under PyTorch 1.3.1's DataParallel, https://github.com/NVIDIA/nccl/issues/276",
               (Fact(_ANYONE, KEY, "enqueue.cc:447 -> 4 @YYY:2396", AT),)),
        Sample("NCCL INFO group.cc:73 -> 3 [Async thread]",
               "NCCL 2.7 with NCCL_TOPO_FILE, the issue's quote without headers, https://github.com/NVIDIA/nccl/issues/379",
               (Fact(_ANYONE, KEY, "group.cc:73 -> 3 [Async thread]", AT),)),
        Sample("gpu1:311:311 [0] NCCL INFO misc/socket.cc:484 -> 2 (Connection refused)",
               "NCCL 2.19+ SYSCHECK's frame with strerror (src/include/checks.h: \"%s:%d -> %d (%s)\")",
               (Fact(_ANYONE, KEY, "misc/socket.cc:484 -> 2 @gpu1:311", AT),)),
        Sample("Test NCCL failure common.cu:1294 'unhandled cuda error ...'",
               "nccl-tests under scitix/sichek's nccltest, https://github.com/scitix/sichek/issues/71",
               (Fact(_ANYONE, TEST_KEY, "common.cu:1294", AT),)),
        Sample("NCCL failure all_reduce.cu:95 'unhandled cuda error'",
               "nccl-tests 1.x's NCCLCHECK, https://github.com/NVIDIA/nccl-tests/issues/5",
               (Fact(_ANYONE, TEST_KEY, "all_reduce.cu:95", AT),)),
        Sample("gpu1:311:311 [0] NCCL INFO init.cc:1840 (ncclCommInitRankDev) -> 3",
               "NCCL 2.30 INFO_LOC's frame with the function (src/include/debug.h: \"%s:%d (%s) \" fmt)",
               (Fact(_ANYONE, KEY, "init.cc:1840 -> 3 @gpu1:311", AT),)),
    ),
)
