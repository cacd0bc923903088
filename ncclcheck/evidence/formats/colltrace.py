"""NCCL's collective trace (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=COLL) and the set-up lines that name each communicator.

Every collective a process issues is printed once, at its call, by ncclEnqueueCheck (NVIDIA/nccl src/enqueue.cc):

    <host>:<pid>:<tid> [<cudaDev>] NCCL INFO AllReduce: opCount 28c sendbuff 0x.. recvbuff 0x.. count 9984512
        datatype 7 op 0 root 0 comm 0x55bef0201370 [nranks=4] stream 0x55bef0208bd0

The same fields in every release from v2.3 to v2.30 (``count`` printed with %zi, since 2.22 %zu); RCCL (ROCm/rccl
src/enqueue.cc, since #817 of 2023-07) adds ``task <n> globalrank <r>``, the process's rank in the job. The prefix
is NCCL's debug header (src/debug.cc: host name, PID, thread id, the CUDA device), so the process is the line's
``host:pid``; a paste may drop it. ``comm`` is the communicator's address inside that process: two processes' lines
of one communicator print different addresses. ``opCount`` is the communicator's ``comm->opCount``: up to 2.11
incremented at each collective's enqueue, since then by the proxy (src/proxy.cc) only for operations that go through
it, so on one node (P2P, NVLink, SHM) it can stay 0 for every call (recorded: tests/data/gpu/colltrace, NCCL 2.28.9
on two H200s). The op names are ncclFuncStr's (src/collectives.cc): AllGather, AllReduce, Broadcast, Reduce,
ReduceScatter, Send, Recv, and since 2.28 AlltoAll, Gather, Scatter.

The communicator's set-up line at its end (src/init.cc) gives the process's rank in it and how to match it across
processes: ``comm 0x.. rank R nranks N cudaDev D [nvmlDev D] [busId B] [commId 0x..] ... - Init COMPLETE``, where
``commId`` (2.18 on) is the hash of the unique id every member was given (the same on all of them), and a split
communicator's line (2.23 on) names its ``parent 0x..``, ``splitCount`` (2.28 on) and ``color`` instead.

Each trace line is a ``nccl_coll`` fact, each set-up line an ``nccl_comm`` fact, their fields in the value (job/colltrace.py
reads them); the call's index on its communicator in this input ends the value, as NCCL repeats an identical line
for each call where opCount stays put.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

TRACE = re.compile(
    r"(?P<op>[A-Z][A-Za-z]{2,20}): opCount (?P<opcount>[0-9a-fA-F]{1,16}) sendbuff \S{1,24} recvbuff \S{1,24} "
    r"count (?P<count>-?\d{1,20}) datatype (?P<dtype>\d{1,3}) op (?P<redop>\d{1,3}) root (?P<root>-?\d{1,9}) "
    r"comm (?P<comm>0x[0-9a-fA-F]{1,16}|\(nil\)) \[nranks=(?P<nranks>\d{1,7})\]"
    r"(?: stream \S{1,24})?(?: task -?\d{1,9} globalrank (?P<grank>\d{1,7}))?")
# NCCL's debug header (src/debug.cc): host, PID, thread id and the CUDA device, before the level's word.
PREFIX = re.compile(r"(?P<host>[\w.-]{1,120}):(?P<pid>\d{1,10}):(?P<tid>\d{1,10}) \[(?P<dev>\d{1,4})\] NCCL ")
INIT = re.compile(r"comm (?P<comm>0x[0-9a-fA-F]{1,16}) rank (?P<rank>\d{1,7}) nranks (?P<n>\d{1,7}) "
                  r"cudaDev (?P<dev>\d{1,4})(?P<rest>.{0,300}?) ?- Init COMPLETE")
_COMMID = re.compile(r"commId (?P<id>0x[0-9a-fA-F]{1,16})")
_PARENT = re.compile(r"parent (?P<id>0x[0-9a-fA-F]{1,16})(?: splitCount (?P<count>\d{1,9}))?(?: color (?P<color>-?\d{1,12}))?")
# The facts it yields (one a call: left out of the JSON's events, where the verdict cites the lines it compares).
FACTS = frozenset({"nccl_coll", "nccl_comm"})
_ANYONE = Who()  # the line's process: the parser puts the fact on it (a launcher's rank tag, where there is one)


@dataclass(frozen=True)
class Call:
    """One traced collective of one process (``nccl_coll``'s value, read back)."""

    proc: str  # host:pid from NCCL's header, "" where the line has none
    dev: str  # the CUDA device the header names, "" where none
    op: str
    opcount: int
    count: int
    dtype: int
    redop: int
    root: int
    comm: str
    nranks: int
    grank: int | None  # RCCL's globalrank
    index: int  # how many calls of this process on this communicator the input printed before this one

    def value(self) -> str:
        return "|".join(map(str, (self.proc, self.dev, self.op, self.opcount, self.count, self.dtype, self.redop,
                                  self.root, self.comm, self.nranks, "" if self.grank is None else self.grank,
                                  self.index)))

    @classmethod
    def of(cls, value: str) -> Call:
        p = value.split("|")
        return cls(p[0], p[1], p[2], int(p[3]), int(p[4]), int(p[5]), int(p[6]), int(p[7]), p[8], int(p[9]),
                   int(p[10]) if p[10] else None, int(p[11]))


@dataclass(frozen=True)
class Comm:
    """One process's communicator as its set-up line states it (``nccl_comm``'s value, read back)."""

    proc: str
    comm: str
    rank: int
    nranks: int
    dev: str
    commid: str  # "" where the release prints none
    parent: str  # a split's parent communicator, "" for none
    split: str  # the split's count, else its color, "" for none
    order: int  # how many communicators this process set up before it, in this input

    def value(self) -> str:
        return "|".join(map(str, (self.proc, self.comm, self.rank, self.nranks, self.dev, self.commid, self.parent,
                                  self.split, self.order)))

    @classmethod
    def of(cls, value: str) -> Comm:
        p = value.split("|")
        return cls(p[0], p[1], int(p[2]), int(p[3]), p[4], p[5], p[6], p[7], int(p[8]))


def _proc(text: str, start: int) -> tuple[str, str]:
    """The process (host:pid) and device NCCL's header names before ``start``, or empty ones."""
    m = PREFIX.search(text, max(0, start - 200), start)
    return (f"{m['host']}:{m['pid']}", m["dev"]) if m else ("", "")


def _call(m: re.Match[str], text: str, index: int) -> Call:
    proc, dev = _proc(text, m.start())
    return Call(proc, dev, m["op"], int(m["opcount"], 16), int(m["count"]), int(m["dtype"]), int(m["redop"]),
                int(m["root"]), m["comm"], int(m["nranks"]), int(m["grank"]) if m["grank"] else None, index)


def call_of(text: str, index: int) -> Call | None:
    """The call a trace line states, as the ``index``-th of its process on its communicator; None for another line."""
    m = TRACE.search(text)
    return None if m is None else _call(m, text, index)


class Lines:
    """One input's trace and set-up lines, each read on its own; the calls counted per process and communicator."""

    def __init__(self) -> None:
        self._calls: dict[tuple[str, str], int] = {}
        self._comms: dict[str, int] = {}

    def _count(self, m: re.Match[str], text: str) -> tuple[str, str, int]:
        proc = _proc(text, m.start())[0]
        index = self._calls.get((proc, m["comm"]), 0)
        self._calls[(proc, m["comm"])] = index + 1
        return proc, m["comm"], index

    def counted(self, text: str) -> tuple[str, str, int] | None:
        """A trace line's process and communicator and its index among their calls (counted here), or None: the
        assembler's cheap path for a job's millions of them (evidence/parse.py), which reads only the last ones'
        calls (:func:`call_of`)."""
        m = TRACE.search(text)
        return None if m is None else self._count(m, text)

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "opCount " in text and (m := TRACE.search(text)):
            call = _call(m, text, self._count(m, text)[2])
            return (Fact(_ANYONE, "nccl_coll", call.value(), loc),)
        if "Init COMPLETE" in text and (m := INIT.search(text)):
            proc, _ = _proc(text, m.start())
            rest = m["rest"]
            cid, parent = _COMMID.search(rest), _PARENT.search(rest)
            split = (parent["count"] or parent["color"] or "") if parent else ""
            order = self._comms.get(proc, 0)
            self._comms[proc] = order + 1
            comm = Comm(proc, m["comm"], int(m["rank"]), int(m["n"]), m["dev"], cid["id"] if cid else "",
                        parent["id"] if parent else "", split, order)
            return (Fact(_ANYONE, "nccl_comm", comm.value(), loc),)
        return ()


_T167 = "tests/data/public_threads/167-rccl-429-four-process-allreduce-hang.log"
_REC = "tests/data/gpu/colltrace/order/console.log"
FORMAT = Format(
    name="NCCL collective trace",
    words=("opCount ",),
    # The set-up lines stand in an input's head, where ncclsetup.py reads them too. Read anywhere, they cost the
    # reader 45x on a log of NCCL's set-up chatter (docs/benchmarks.md, the eighth session); a communicator made later
    # in a long log is matched by its calls instead (job/colltrace.py), without the rank its set-up line states.
    head_words=("Init COMPLETE",),
    make=Lines,
    patterns=(TRACE, INIT),
    behind=(
        # a communicator's Init COMPLETE line, after its rank and size
        Behind((INIT,), (_COMMID, _PARENT)),
        # NCCL's ``host:pid:tid [dev] NCCL`` header before a trace's or an init's match: the process it names
        Behind((TRACE, INIT), (PREFIX,)),
    ),
    samples=(
        Sample("h03r3n06:45012:45012 [2] NCCL INFO AllGather: opCount 28c sendbuff 0x7f1fd894af00 recvbuff "
               "0x7f1ed1c00100 count 59205120 datatype 0 op 0 root 0 comm 0x559c24b55610 [nranks=4] stream "
               "0x559c248a3630", f"{_T167}:3",
               (Fact(_ANYONE, "nccl_coll", "h03r3n06:45012|2|AllGather|652|59205120|0|0|0|0x559c24b55610|4||0", AT),)),
        Sample("vm:776:776 [1] NCCL INFO AllReduce: opCount 0 sendbuff 0x410e01000 recvbuff 0x410e01000 count 3000 "
               "datatype 7 op 0 root 0 comm 0x50942360 [nranks=2] stream (nil)", f"{_REC}:306",
               (Fact(_ANYONE, "nccl_coll", "vm:776|1|AllReduce|0|3000|7|0|0|0x50942360|2||0", AT),)),
        Sample("node1:3110:3110 [0] NCCL INFO AllReduce: opCount 5 sendbuff 0x7f3a recvbuff 0x7f3a count "
               "1024 datatype 7 op 0 root 0 comm 0x55d0 [nranks=8] stream 0x5611 task 0 globalrank 3",
               "ROCm/rccl src/enqueue.cc (since #817, 2023-07): `... stream %p task %d globalrank %d`",
               (Fact(_ANYONE, "nccl_coll", "node1:3110|0|AllReduce|5|1024|7|0|0|0x55d0|8|3|0", AT),)),
        Sample("vm:776:776 [1] NCCL INFO ncclCommSplit comm 0x50942360 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 70 "
               "parent 0x480f79f0 splitCount 2 color 2130503744 key 1 - Init COMPLETE", f"{_REC}:196",
               (Fact(_ANYONE, "nccl_comm", "vm:776|0x50942360|1|2|1||0x480f79f0|2|0", AT),)),
        Sample("vm:775:775 [0] NCCL INFO ncclCommInitRankConfig comm 0x3dcf25c0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 "
               "busId 60 commId 0x9bf96cb55673b41 - Init COMPLETE", f"{_REC}:82",
               (Fact(_ANYONE, "nccl_comm", "vm:775|0x3dcf25c0|0|2|0|0x9bf96cb55673b41|||0", AT),)),
    ),
)
