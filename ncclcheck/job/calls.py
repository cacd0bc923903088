"""The collective a rank waited in where its timeout line names none: its traceback's call (gloo).

gloo's timeouts print no op and no sequence number; the traceback above the exception does
(evidence/formats/pycall.py reads it into a ``collective_call`` fact: the op, then the user's line). The call of a
rank's timeout is its last such fact in the same input at or before the timeout's line.
"""

from __future__ import annotations

from collections.abc import Sequence

from ncclcheck.evidence.frdump import Frame
from ncclcheck.evidence.types import FileScan, Loc

# DDP issues its gradient all_reduce from its reducer's hooks while autograd's backward runs.
_OPS = {"backward": "ALLREDUCE"}


def call_before(scans: Sequence[FileScan], rank: int, loc: Loc) -> tuple[str, Frame | None] | None:
    """The op (WorkNCCL spelling) and the calling line of the rank's traceback nearest above ``loc``, or None."""
    found = None
    for s in scans:
        if s.file != loc.file:
            continue
        for f in s.facts:
            if f.key == "collective_call" and f.loc.line <= loc.line and f.who.rank in (rank, None) and (
                    found is None or f.loc.line > found.loc.line):
                found = f
    if found is None:
        return None
    call, _, where = found.value.partition(" ")
    file, _, line = where.rpartition(":")
    op = _OPS.get(call) or call.upper().replace("ALL_REDUCE", "ALLREDUCE").replace("ALL_GATHER", "ALLGATHER") \
        .replace("ALL_TO_ALL", "ALLTOALL")
    frame = Frame("<module>" if call != "backward" else "backward", file, int(line)) if line.isdigit() else None
    return op, frame
