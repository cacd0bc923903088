"""NCCL's remote error where no line names a rank: the transport lost a peer, which is no rank that failed first.

NCCL returns ncclRemoteError, which ncclGetErrorString words "remote process exited or there was a network error"
(src/init.cc), where its socket layer finds a connection closed or reset by the peer, or a connect that ran out of
retries (ETIMEDOUT, EHOSTUNREACH, ECONNREFUSED: an address the peer cannot be reached at), and where its InfiniBand
transport gets a completion with an error status (src/misc/socket.cc, src/os/linux.cc,
src/transport/net_ib/p2p.cc). The process that printed it is alive and says it lost a peer: the failure is the
peer's (it exited first) or the path's (the network, or an interface the other node cannot reach), and the line says
neither which rank printed it nor which peer it lost. PyTorch raises it as "NCCL error: remote process exited or
there was a network error" (DistBackendError; ``ncclRemoteError: A call failed possibly due to a network error or
a remote process exiting prematurely.`` under it, torch/csrc/distributed/c10d/NCCLUtils.cpp).
"""

from __future__ import annotations

from ncclcheck.job.causes import one_line
from ncclcheck.job.model import Job, VerdictKind


def unnamed_remote(job: Job) -> tuple[VerdictKind, list[int], list[int], str] | None:
    """The verdict where every failure that names no rank is NCCL's remote error: an NCCL transport failure with no
    culprit (the peer is unknown), never "a process failed"; None otherwise."""
    unnamed = job.facts.unnamed_failures
    if not unnamed or not all(e.gone is not None and e.gone.remote for e in unnamed):  # (evidence/formats/nccl.py)
        return None
    e = unnamed[0]
    return (VerdictKind.NCCL_ERROR, [], [],
            f"NCCL lost a peer: {one_line(e.message)} ({e.loc}). The process that printed it is alive and reports "
            "that a peer exited or the network to it failed (ncclRemoteError); the line names neither that process's "
            "rank nor the peer.")
