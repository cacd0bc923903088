"""A Python traceback through NCCL's own C API, called by name from a binding: which NCCL call returned the error.

Serving engines and libraries call libnccl.so directly (vLLM's pynccl_wrapper.py through ctypes, CuPy's and
nccl4py's bindings), each wrapping one C function of src/nccl.h.in under that function's name: a traceback's frame
``File ".../pynccl_wrapper.py", line 257, in ncclAllReduce`` says the error came back from ncclAllReduce itself.
Through such a binding the communicator is made by its own call (ncclCommInitRank), before any collective, so an
error a collective's frame returns is the run's, not the set-up's (job/rununsage.py). Each such frame is one
``nccl_api_call`` fact of its process: the C function's name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

# NCCL's collective and point-to-point calls and the group call that launches them (src/nccl.h.in).
_CALL = re.compile(r', in nccl(?P<call>AllReduce|AllGather|AlltoAll|Bcast|Broadcast|Gather|Reduce|ReduceScatter|'
                   r'Scatter|Send|Recv|GroupEnd)\s*$')
_FRAME = re.compile(r'File "[^"]{1,400}", line \d{1,7}$')  # what stands before it: a traceback's frame
_ANYONE = Who()


class Frames:
    """One input's frames of NCCL's C API, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        m = _CALL.search(text)
        if m is None or not _FRAME.search(text, 0, m.start()):
            return ()
        return (Fact(_ANYONE, "nccl_api_call", f"nccl{m['call']}", loc),)


_SAMPLE = ('[rank0]:   File "/home/u/vllm/vllm/distributed/device_communicators/pynccl_wrapper.py", line 257, in '
          "ncclAllReduce")
FORMAT = Format(
    name="NCCL's C API in a traceback",
    words=(", in nccl",),
    make=Frames,
    patterns=(_CALL,),
    behind=(
        # the frame line before an NCCL call's
        Behind((_CALL,), (_FRAME,)),
    ),
    samples=(
        Sample(_SAMPLE, "vLLM's vllm/distributed/device_communicators/pynccl_wrapper.py (ctypes over libnccl.so), "
                       "https://github.com/vllm-project/vllm/issues/7201",
               (Fact(_ANYONE, "nccl_api_call", "ncclAllReduce", AT),)),
    ),
)
