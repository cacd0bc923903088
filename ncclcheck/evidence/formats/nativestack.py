"""A hung process's native stacks as gdb prints them (``thread apply all bt``; pstack and gstack print gdb's): the
frames inside NCCL's API.

gdb writes each thread's header, ``Thread 55 (Thread 0x7f0085cb9700 (LWP 69796)):`` (or with its name in quotes),
then one line a frame, innermost first: ``#7 0x00007f008a19fabe in ncclAllReduce () from .../libnccl.so.2`` (or
``... in ncclCommInitRank (...) at init.cc:123`` with symbols). A frame of a public NCCL call (src/nccl.h.in: the
collectives, point-to-point calls and group end, the communicator's set-up and tear-down) says that thread is inside
that call; a frame of its host path (ncclEnqueueCheck, the proxy op append) says the kernel was not launched;
job/nativestall.py reads what that means where
nothing failed. NCCL's own threads (its proxy, its RAS thread) run internal functions, which are not read.

Each such frame is an ``nccl_frame`` fact: the call, then the thread's LWP where a header named it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

# The public calls a thread can block in (src/nccl.h.in), by what they do.
COLLECTIVES = ("AllReduce", "AllGather", "AlltoAll", "Bcast", "Broadcast", "Reduce", "ReduceScatter", "Gather",
               "Scatter", "Send", "Recv", "GroupEnd")
SETUP = ("CommInitRank", "CommInitRankConfig", "CommInitRankScalable", "CommInitAll", "CommSplit", "CommShrink",
         "CommGrow", "GetUniqueId")
TEARDOWN = ("CommDestroy", "CommFinalize", "CommAbort")
# NCCL's host path between a collective's call and its kernel's launch (src/enqueue.cc ncclEnqueueCheck, src/proxy.cc
# ncclProxySaveOp and ncclLocalOpAppend): a thread that stays there never launched its kernel.
HOSTPATH = ("EnqueueCheck", "ProxySaveOp", "LocalOpAppend")
FRAME = re.compile(r"^\s*#\d{1,4} +0x[0-9a-fA-F]{1,16} in nccl(?P<fn>" + "|".join(
    sorted((*COLLECTIVES, *SETUP, *TEARDOWN), key=len, reverse=True)) + r") \(")
# The host path's frames in every stack printer's form: gdb's `#N  0xADDR in FUNC (ARGS)`, or `#N  FUNC (ARGS)` with
# no address where the pc starts a source line (gdb/stack.c print_frame); eu-stack's and pstack's `#N  0xADDR FUNC`,
# whose C++ names carry their argument types.
HOSTFRAME = re.compile(r"^\s*#\d{1,4} +(?:0x[0-9a-fA-F]{1,16} (?:in )?)?nccl(?P<fn>" + "|".join(HOSTPATH) +
                       r") ?[(\s]")
THREAD = re.compile(r"^Thread \d{1,7} \(Thread 0x[0-9a-fA-F]{1,16} \(LWP (?P<lwp>\d{1,10})\)")
_ANYONE = Who()


class Frames:
    """One input's gdb stacks: the thread each NCCL frame is in."""

    def __init__(self) -> None:
        self._lwp = ""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "(LWP " in text and (m := THREAD.match(text)):
            self._lwp = m["lwp"]
            return ()
        if (" in nccl" in text and (m := FRAME.match(text))) or ("nccl" in text and (m := HOSTFRAME.match(text))):
            return (Fact(_ANYONE, "nccl_frame", f"nccl{m['fn']}|{self._lwp}", loc),)
        return ()


_T173 = "tests/data/public_threads/173-horovod-26-first-allreduce-after-comm-init-hang.log"
FORMAT = Format(
    name="native stacks",
    words=(" in nccl", "(LWP ", *(f"nccl{fn}" for fn in HOSTPATH)),
    make=Frames,
    patterns=(FRAME, HOSTFRAME, THREAD),
    samples=(
        Sample("#7 0x00007f008a19fabe in ncclAllReduce () from /home/asergeev/mpi/nccl/libnccl.so.2", f"{_T173}:9",
               (Fact(_ANYONE, "nccl_frame", "ncclAllReduce|69796", AT),),
               before=("Thread 55 (Thread 0x7f0085cb9700 (LWP 69796)):",)),
        Sample("#4  0x00007f2a1c0b2d1e in ncclCommInitRank (newcomm=0x7ffd, nranks=2, commId=..., myrank=1) at "
               "init.cc:1450", "gdb's frame with symbols (gdb/stack.c print_frame: `#N  0xADDR in FUNC (ARGS) at "
               "FILE:LINE`) of NVIDIA/nccl src/init.cc ncclCommInitRank",
               (Fact(_ANYONE, "nccl_frame", "ncclCommInitRank|", AT),)),
        Sample("#1  0x00007f3c2a4b1c20 ncclLocalOpAppend(ncclComm*, ncclProxyConnector*, ncclProxyOp*)",
               "eu-stack's frame (`#N  0xADDR FUNC`, libdw's demangled name) of NVIDIA/nccl src/proxy.cc "
               "ncclLocalOpAppend", (Fact(_ANYONE, "nccl_frame", "ncclLocalOpAppend|", AT),)),
        Sample("#3  ncclProxySaveOp (comm=0x55d0, op=0x7ffe, justInquire=0x0) at proxy.cc:612",
               "gdb's frame with no address (the pc starts a source line) of NVIDIA/nccl src/proxy.cc ncclProxySaveOp",
               (Fact(_ANYONE, "nccl_frame", "ncclProxySaveOp|", AT),)),
    ),
)
