"""UCX's logger and UCC's, which is UCX's: the transport Open MPI (pml ucx) and PyTorch's UCC backend run over.

UCX's default log handler (src/ucs/debug/log.c, ucs_log_default_handler and ucs_log_print) writes every record as
``[SEC.USEC] [HOST:PID:THREAD] FILE:LINE COMPONENT LEVEL MESSAGE`` (UCS_LOG_FMT: ``%17s:%-4u %-4s %-5s``, so the
file is padded left and the component and level right, the PID to five places: ``[node1:3000 :0]``); before its log
is set up it leaves out the process (``[SEC.USEC] FILE:LINE ...``), and releases before 1.9 printed the thread as a
number and the file in 16 places. The component is ``UCX`` for UCX's own records and ``UCC`` for UCC's (src/utils/
debug/log_def.h, ucc_global_opts.c: UCC logs through UCX's handler under its own component). The levels are
ucs_log_level_names': FATAL, ERROR, WARN, DIAG, INFO, DEBUG and the TRACE levels.

A FATAL or ERROR record is a ``ucs`` :class:`Clue` of the line's process, its words from the file on with the
component and level (``tl_cuda_cache.c:231 UCC ERROR ipc-cache: failed to open ipc mem handle...``): the library's
stated reason, whose mechanism job/statements.toml names where it knows the words. A WARN record is a ``ucs_warn``
clue, quoted only where no line says more: a healthy job prints them too (UCX's fork and device notices). DIAG,
INFO, DEBUG and TRACE records state no failure and are not read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who

# The component and the level as UCS_LOG_FMT pads them (``%-4s %-5s``), or with the padding one space (a paste's).
WORDS = ("UCX  ERROR", "UCC  ERROR", "UCX  FATAL", "UCC  FATAL", "UCX  WARN", "UCC  WARN", "UCX ERROR", "UCC ERROR",
         "UCX FATAL", "UCC FATAL", "UCX WARN", "UCC WARN")
# The stamp, the optional process, the site (its file padded to 17 places), the component and the level; then the
# message (indented by UCX's log indent). Bounded: linear on a hostile line.
LINE = re.compile(
    r"\[\d{6,11}\.\d{6}\] {1,40}(?:\[[^\]\n]{1,160}\] {1,40})?"
    r"(?P<site>[\w.+-]{1,120}:\d{1,7}) {1,4}(?P<tag>" + "|".join(re.escape(w) for w in WORDS) + r") {1,8}"
    r"(?P<msg>\S[^\n]{0,600})")
_ANYONE = Who()  # the line's process: the parser puts the clue on it


class Lines:
    """One input's UCX and UCC records of level WARN and above, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        m = LINE.search(text)
        if m is None:
            return ()
        comp, level = m["tag"].split()
        kind = "ucs_warn" if level == "WARN" else "ucs"
        return (Clue(_ANYONE, kind, f"{m['site']} {comp} {level} {m['msg'].strip()}", loc),)


_IPC = ("[1730117228.178968] [dgx1v-loki-23:3000 :0]   tl_cuda_cache.c:231  UCC  ERROR ipc-cache: failed to open ipc "
        "mem handle. addr:0x7f65a8000000 len:16777216 err:201")
FORMAT = Format(
    name="UCX/UCC log",
    words=WORDS,
    make=Lines,
    patterns=(LINE,),
    samples=(
        Sample(_IPC, "tests/data/public_threads/339-ucc-1041-v100-two-process-ipc-cache-error-hang.log:1",
               (Clue(_ANYONE, "ucs", "tl_cuda_cache.c:231 UCC ERROR ipc-cache: failed to open ipc mem handle. "
                                     "addr:0x7f65a8000000 len:16777216 err:201", AT),)),
        Sample("[1732000000.123456] [node1:51234:0]    ucc_context.c:424  UCC  ERROR failed to create tl context for "
               "nccl", "UCC src/core/ucc_context.c (ucc_context_create_proc_info: a required TL's context)",
               (Clue(_ANYONE, "ucs", "ucc_context.c:424 UCC ERROR failed to create tl context for nccl", AT),)),
        Sample("[1588000000.654321] [node2:4021 :0]      ib_iface.c:1377 UCX  ERROR mlx5_0: ibv_create_cq(cqe=4096) "
               "failed: Cannot allocate memory", "UCX src/uct/ib/base/ib_iface.c (uct_ib_check_memlock_limit_msg at "
               "ERROR: '<device>: <call> failed: <strerror>')",
               (Clue(_ANYONE, "ucs", "ib_iface.c:1377 UCX ERROR mlx5_0: ibv_create_cq(cqe=4096) failed: Cannot "
                                     "allocate memory", AT),)),
        Sample("[1732000000.000001] [node1:51234:0]     ucp_context.c:1041 UCX  WARN  network device 'mlx5_9:1' is "
               "not available, please use one or more of: eth0, lo, mlx5_0:1",
               "UCX src/ucp/core/ucp_context.c (ucp_report_unavailable: UCX_NET_DEVICES naming no device)",
               (Clue(_ANYONE, "ucs_warn", "ucp_context.c:1041 UCX WARN network device 'mlx5_9:1' is not available, "
                                          "please use one or more of: eth0, lo, mlx5_0:1", AT),)),
    ),
)
