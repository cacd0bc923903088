"""The C++ runtime's last words on an exception nothing caught: ``terminate called after throwing an instance of
'T'`` and, on its next line, ``  what():  <text>``, the exception's own message (GCC's verbose terminate handler,
libstdc++'s default, prints both before it aborts). The message is the reason; gloo words its failed checks there as
"[enforce fail at file:line] condition. message" (gloo/common/logging.cc, EnforceNotMet). A ``what():`` that restates
the NCCL watchdog's timeout is read as the timeout's record; other lines read theirs (an NCCL or a CUDA error) as
well.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who

# gloo's failed check, "[enforce fail at file:line] condition. message" (its site), and the terminate handler's type.
ENFORCE = re.compile(r"\[enforce fail at (?P<at>[^\]]{1,400})\]\s*(?P<said>.*)")  # bounded: linear on a hostile line
TERMINATE = re.compile(r"terminate called after throwing an instance of '(?P<type>[^']+)'")
# At the line's start (after a launcher's prefix: torchrun's "[rank1]:", Open MPI's and horovodrun's
# "[1,1]<stderr>:" / "[1]<stderr>:"), or after the type on a paste that joined the two lines.
WHAT = re.compile(r"(?:^|[\]>]:|')\s*what\(\):\s+(?P<text>\S.*)")


class Terminates:
    """One input's ``what():`` lines (each read on its own)."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        """The exception's message, as a clue of the line's process (the parser names it)."""
        if m := WHAT.search(text):
            return (Clue(Who(), "what", m["text"].strip(), loc),)
        return ()


_REMOTE = ("NCCL error: remote process exited or there was a network error, NCCL version 2.14.3 ncclRemoteError: A "
           "call failed possibly due to a network error or a remote process exiting prematurely. Last error: NET/IB : "
           "Got completion from peer 11.214.147.122<39138> with error 12, opcode 0, len 0, vendor err 129")
FORMAT = Format(
    name="C++ terminate",
    words=("what():",),
    make=Terminates,
    patterns=(WHAT,),
    samples=(
        Sample("terminate called after throwing an instance of 'std::runtime_error' what(): " + _REMOTE,
               "tests/data/failure_corpus/10-alpaca207-ib-error12-remote.log:1",
               (Clue(Who(), "what", _REMOTE, AT),)),
    ),
)
