"""A traceback through a point-to-point operation: the rank was in a send or a recv, not a collective.

ProcessGroupNCCL creates each NCCL communicator lazily, at a rank's first operation on it, unless the group was set
up eagerly (init_process_group(device_id=...)): a collective's (and a batch_isend_irecv's) communicator spans the
group, and a single send or recv gets a communicator of its own for the two ranks (torch/csrc/distributed/c10d/
ProcessGroupNCCL.cpp, pointToPoint: "For single P2P, preserve the old two-rank behavior", getKeySendRecv). Which op a
rank was in when it waited for a communicator's ncclUniqueId decides who could have posted it (job/idwait.py).

Read from a traceback: torch.distributed's own frame of the op (``File ".../distributed_c10d.py", line N, in recv``)
or the code line that calls it on a process group or on torch.distributed (``group.recv([tensor], src, tag)``,
``dist.isend(t, dst)``, ``pg.send(...)``). Each is one ``p2p_call`` fact of its rank: the op.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

# torch.distributed's point-to-point functions (distributed_c10d.py) and ProcessGroup's methods of them.
OPS = ("send", "recv", "isend", "irecv", "batch_isend_irecv", "send_object_list", "recv_object_list", "recv_anysource")
_OP = "|".join(OPS)
FRAME = re.compile(r'File "[^"]{0,400}/torch/distributed/[\w/]{1,80}\.py", line \d+, in (?P<op>' + _OP + r')\b')
# The call on a process group or torch.distributed itself: `group.recv(`, `dist.isend(`, `self.pg.send(`,
# `torch.distributed.batch_isend_irecv(`; a bare name (`sock.recv(`) is no process group's.
CALL = re.compile(r"\b(?:dist|distributed|\w{0,40}(?:group|_pg|pg))\.(?P<op>" + _OP + r")\(")
ANYONE = Who()  # the line's process: the parser puts it on the fact
# Its gate: an op as only these lines write it, a frame's function ("in recv") or a method called ("group.recv("),
# never the bare words "send" and "recv" that NCCL's trace ("recvbuff"), channel ("[send] via") and socket lines hold.
_WORDS = (*(f"in {op}" for op in OPS), *(f".{op}" for op in OPS))


class Calls:
    """One input's point-to-point calls, once per line."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        m = FRAME.search(text) or CALL.search(text)
        return (Fact(ANYONE, "p2p_call", m["op"], loc),) if m else ()


FORMAT = Format(
    name="point-to-point call",
    words=_WORDS,
    make=Calls,
    patterns=(FRAME, CALL),
    samples=(
        Sample("[rank2]: return group.recv([tensor], group_src, tag)",
               "tests/data/public_threads/171-xdit-731-lazy-init-unique-id-wait.log:1 (the code line of a frame "
               "calling ProcessGroup.recv, torch/distributed/distributed_c10d.py's recv)",
               (Fact(ANYONE, "p2p_call", "recv", AT),)),
        Sample('  File "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py", line 2480, in isend',
               "torch/distributed/distributed_c10d.py: isend's frame",
               (Fact(ANYONE, "p2p_call", "isend", AT),)),
    ),
)
