"""PyTorch's ProcessGroupWrapper: the collective each rank was about to run, under TORCH_DISTRIBUTED_DEBUG=DETAIL.

With DETAIL, every group is wrapped (torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp) and, before each
collective, the wrapper logs at INFO ``[Rank N] Running collective: CollectiveFingerPrint(SequenceNumber=S,
OpType=OP, TensorShape=[...], ...)`` and checks that fingerprint against every other rank's. ``N`` is the rank
within the group (the global rank in the default group, which the line does not name). A line of it says that rank
had reached that collective, its ``S``-th of the group, at that point of the log: the job was past its set-up, and
a rank whose line comes after another phase's work had finished that work (job/storewait.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

RUNNING = re.compile(r"\[Rank (?P<rank>\d{1,7})\] Running collective: CollectiveFingerPrint\("
                     r"(?:SequenceNumber=(?P<seq>\d{1,12}), )?OpType=(?P<op>[A-Z0-9_]{1,40})")
_ANYONE = Who()  # the line's process: the parser puts the fact on it


class Lines:
    """One input's wrapper lines, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        m = RUNNING.search(text)
        if m is None:
            return ()
        return (Fact(_ANYONE, "wrapper_call", f"{m['rank']} {m['op']} {m['seq'] or ''}".rstrip(), loc),)


FORMAT = Format(
    name="PyTorch ProcessGroupWrapper",
    words=("Running collective",),
    make=Lines,
    patterns=(RUNNING,),
    samples=(
        Sample("[I ProcessGroupWrapper.cpp:562] [Rank 0] Running collective: CollectiveFingerPrint(SequenceNumber=1, "
               "OpType=BROADCAST, TensorShape=[1], TensorDtypes=Char, TensorDeviceTypes=TensorOptions(dtype=float "
               "(default), device=cpu, layout=Strided (default), requires_grad=false (default), pinned_memory=false "
               "(default), memory_format=(nullopt)))",
               "https://github.com/rwth-i6/returnn/issues/1621 (PyTorch 2.1, TORCH_DISTRIBUTED_DEBUG=DETAIL)",
               (Fact(_ANYONE, "wrapper_call", "0 BROADCAST 1", AT),)),
    ),
)
