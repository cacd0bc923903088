"""PyTorch's nccl2 backend (``TORCH_DIST_USE_NCCL2``): its ``[TC]`` lines.

nccl2 prints no WorkNCCL record: "[TC][rank=R][name=PG] Operation timed out after N ms" is its collective's timeout
(WorkNCCL.cpp), "[TC]… Aborting process due to timeout|error …" the process's end, and its flight recorder's steps
stand behind the same tag.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.nccl import CONNECTION
from ncclcheck.evidence.formats.pgnccl import DUMP_HINT, dump_event
from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import EndLine, ErrorKind, Loc, RankError, Read, Who, WorkMention

TC = re.compile(r"\[TC\](?:\[rank=(?P<rank>-?\d+)\])?(?:\[name=(?P<name>[^\]]*)\])?\s*(?P<message>.*)")
_TIMEOUT = re.compile(r"Operation timed out after (?P<ms>\d+) ms")
_ABORT = re.compile(r"Aborting process due to (?P<why>timeout|error)(?P<rest>.*)")


def read(who: Who, text: str, loc: Loc) -> list[Read] | None:
    """What a ``[TC]`` line says (its timeout, the process's end, a dump step), or None where it is none of those."""
    m = TC.search(text)
    if not m:
        return None
    rank, comm, msg = int(m["rank"]) if m["rank"] else None, m["name"], m["message"]
    if t := _TIMEOUT.search(msg):
        return [WorkMention(who=who, rank=rank, seq=None, op_type=None, numel_in=None, numel_out=None,
                            tensor_shape=None, timeout_ms=None, ran_for_ms=int(t["ms"]), evidence="nccl2_timeout",
                            loc=loc, comm=comm)]
    if a := _ABORT.search(msg):
        said: list[Read] = [EndLine(who, "aborting", (a["why"] + a["rest"].rstrip(".")).strip(), loc)]
        if a["why"] == "error":
            kind = ErrorKind.CONNECTION if CONNECTION.search(a["rest"]) else ErrorKind.NCCL_ERROR
            said.append(RankError(who, kind, msg.strip(), loc))
        return said
    if DUMP_HINT.search(msg) and (event := dump_event(who, msg, loc)) is not None:
        return [event]
    return None


_NOBODY = Who()


class Lines:
    """One input's ``[TC]`` lines (each read on its own)."""

    def feed(self, text: str, loc: Loc) -> Iterable[Read]:
        return read(_NOBODY, text, loc) or ()


FORMAT = Format(
    name="nccl2",
    words=("[TC]",),
    head_words=("Aborting process", "[TC]"),
    make=Lines,
    patterns=(TC, _ABORT),
    logical=True,
    behind=(
        # a [TC] line's message
        Behind((TC,), (_TIMEOUT,)),
    ),
    samples=(
        Sample("[rank1]:[E1122 12:00:10.000000006 WorkNCCL.cpp:231] [TC][rank=1][name=0] Operation timed out after "
               "10007 ms", "torch/csrc/distributed/c10d/WorkNCCL.cpp (nccl2): the timeout's line, as tests/"
                           "test_formats.py's NCCL2_TIMEOUT quotes it from the source",
               (WorkMention(who=_NOBODY, rank=1, seq=None, op_type=None, numel_in=None, numel_out=None,
                            tensor_shape=None, timeout_ms=None, ran_for_ms=10007, evidence="nccl2_timeout", loc=AT,
                            comm="0"),)),
        Sample("[rank1]:[E1122 12:00:11.000000007 ProcessGroupNCCL.cpp:612] [TC][rank=1][name=0] Aborting process due "
               "to timeout", "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (nccl2): the abort after a timeout",
               (EndLine(_NOBODY, "aborting", "timeout", AT),)),
    ),
)
