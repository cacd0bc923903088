"""NVIDIA compute-sanitizer's (and cuda-memcheck's) memcheck report: which kernel made which bad access.

``compute-sanitizer --tool memcheck`` (CUDA 11 on; ``cuda-memcheck`` before, the same report) writes each error it
finds behind its prefix (``--prefix``, ``=========`` by default), a headline and indented details (the Compute
Sanitizer documentation, "Memcheck Tool": the error types and the memcheck_demo outputs)::

    ========= Invalid __global__ write of size 16 bytes        a memory access error: its space, read or write, size
    =========     at ncclDevFunc_AllReduce_Sum_bf16_RING_SIMPLE()+0x14440      the kernel (and offset) that made it
    =========     by thread (221,0,0) in block (0,0,0)
    =========     Address 0x1bc00031d0 is out of bounds        (or ``is misaligned``)
    =========     and is 34,357,653,969 bytes after the nearest allocation at 0x13c0000000 of size 2,097,152 bytes
    =========     Saved host backtrace up to driver entry point at kernel launch time
    ========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call
      to cudaDeviceSynchronize.                                a CUDA API call's error (--report-api-errors)
    ========= ERROR SUMMARY: 3 errors

cuda-memcheck wrote the size without ``bytes`` and the frame as ``at 0x00000028 in file.cu:6:kernel(args)``;
compute-sanitizer writes ``at kernel()+0x28`` (and `` in file.cu:6`` with line information). A hardware exception
the GPU reports is a headline of its own name (``Warp Illegal Address``, ``Illegal Instruction``, ``Invalid PC``,
``Hardware Stack Overflow``, ``Misaligned Shared or Local Address``, ...) with the same ``at``/``by thread`` lines.

A memory access error or a hardware exception is read as a ``sanitizer`` clue of the line's process, its headline,
and again at its ``at`` line as ``<headline>, at <kernel>`` (the catalogue's illegal_access; job/statements.toml says
what it means where the kernel is NCCL's); ``Program hit`` is a ``cuda`` clue with CUDA's error string (``CUDA error: <string>``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who

# A memory access error's headline (compute-sanitizer's "of size N bytes", cuda-memcheck's "of size N")
ACCESS = re.compile(r"========= (?P<what>(?:Invalid __|Misaligned __)(?:global|shared|local|generic)__ "
                    r"(?:read|write|atomic)(?: of size \d{1,6}(?: bytes?)?)?)\s*$")
# A hardware exception's headline (the error the GPU itself reported, per warp or lane)
HARDWARE = re.compile(r"========= (?P<what>(?:Warp |Lane )?(?:Illegal Address|Illegal Instruction|Invalid PC"
                      r"|Misaligned PC|Hardware Stack Overflow|User Stack Overflow|Invalid Address Space"
                      r"|Misaligned (?:Shared or Local )?Address|Out-of-range (?:Shared or Local )?Address))\s*$")
# The frame that made it: compute-sanitizer's "at kernel()+0x.." or cuda-memcheck's "at 0x.. in file:line:kernel(..)"
KERNEL = re.compile(r"=========     at (?:0x[0-9a-fA-F]{1,16} in (?:[^\s:]{1,400}:\d{1,7}:)?)?(?:void )?"
                    r"(?P<kernel>[A-Za-z_][\w:<>]{0,300}?)(?:\(|\+0x|\s|$)")
# A CUDA API call's error (--report-api-errors): the error's name, number and string, the call
API = re.compile(r'========= Program hit (?P<name>cudaError\w{1,60}|CUDA_ERROR_\w{1,60}) \(error \d{1,5}\) due to '
                 r'"(?P<string>[^"\n]{1,200})" on CUDA API call to (?P<call>\w{1,80})')
_HW_WORDS = ("========= Misaligned ", "========= Warp ", "========= Lane ", "========= Illegal ", "========= Invalid PC",
             "========= Hardware Stack", "========= User Stack", "========= Invalid Address", "========= Out-of-range ")
WORDS = ("Invalid __", "Misaligned __", *_HW_WORDS, "=========     at ", "========= Program hit ")


class Reports:
    """One input's memcheck reports: each error's headline (a clue of its own, where a paste cuts the rest), held
    until its ``at`` line names the kernel (the clue again, with the kernel)."""

    def __init__(self) -> None:
        self._what: str | None = None  # the headline of the error whose kernel line is next

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "=========     at " in text:
            if self._what is not None and (k := KERNEL.search(text)) is not None:
                what, self._what = self._what, None
                return (Clue(Who(), "sanitizer", f"{what}, at {k['kernel']}", loc),)
            return ()
        if "========= Program hit " in text and (a := API.search(text)) is not None:
            return (Clue(Who(), "cuda", f"CUDA error: {a['string']} ({a['call']}, compute-sanitizer)", loc),)
        m = ACCESS.search(text) if "__ " in text else None
        if m is None and any(w in text for w in _HW_WORDS):
            m = HARDWARE.search(text)
        self._what = m["what"] if m is not None else None
        return (Clue(Who(), "sanitizer", m["what"], loc),) if m is not None else ()


_T325 = "tests/data/public_threads/325-llamacpp-24489-crash-on-request-with-tensor-split.log"
FORMAT = Format(
    name="compute-sanitizer",
    words=WORDS,
    make=Reports,
    patterns=(ACCESS,),
    # the frame line under a headline; a hardware exception's headline and an API call's error, behind their words
    behind=(Behind(("=========     at ",), (KERNEL,)), Behind(_HW_WORDS, (HARDWARE,)),
            Behind(("========= Program hit ",), (API,))),
    samples=(
        Sample("=========     at ncclDevFunc_AllReduce_Sum_bf16_RING_SIMPLE()+0x14440", f"{_T325}:2",
               (Clue(Who(), "sanitizer", "Invalid __global__ write of size 16 bytes", AT),
                Clue(Who(), "sanitizer", "Invalid __global__ write of size 16 bytes, at "
                                         "ncclDevFunc_AllReduce_Sum_bf16_RING_SIMPLE", AT)),
               before=("========= Invalid __global__ write of size 16 bytes",)),
    ),
)
