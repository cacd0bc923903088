"""The path NCCL's connections took, against the network transport it loaded (issue 41 §3).

NCCL loads one network transport at init (``Using network Socket``, ``Using network IB``, a plugin's name: src/init.cc
after ncclNetInit) whether or not any connection will use it, and then picks each channel's transport per pair of
ranks (src/transport.cc ncclTransportP2pSetup, src/graph/paths.cc): P2P between GPUs that can reach each other's
memory (NCCL_P2P_LEVEL bounds how far), SHM through host memory when P2P is not allowed, NET only between ranks that
share no host, or where P2P and SHM are both ruled out. Each connection line names the one it took
(``Channel 00 : 0[0] -> 1[1] via SHM/direct/direct``, ``via P2P/CUMEM/read``, ``via NET/IB/0/GDRDMA``:
src/transport/shm.cc, p2p.cc, net.cc; evidence/formats/ncclsetup.py's ``nccl_via`` facts). So a one-node job whose
channels all went via SHM or P2P never moved data over the network transport it loaded: the finding names the paths
taken, and the network only as loaded unless a connection went via NET. Those lines are read in an input's head
only, so the paths are named from inputs no larger than it (a longer log keeps the loaded network's finding).
"""

from __future__ import annotations

from ncclcheck.findings import Finding, Severity
from ncclcheck.job.model import Job


def transport_finding(job: Job) -> Finding | None:
    """The ``transport`` finding: the paths the connections took where the inputs show them, and the network loaded."""
    nets = sorted({f.value for f in job.facts.networks})
    # A connection line is read in an input's head only (formats/ncclsetup.py: kept anywhere they slowed the reader
    # 18-30x): past it some are read, some not, so the paths are named from inputs the head holds whole.
    via = job.facts.via_whole
    net_loc = next((f.loc for f in job.facts.networks), None)
    if not via:
        if not nets or net_loc is None:
            return None
        return Finding(Severity.INFO, "transport", f"NCCL used network transport: {', '.join(nets)}.", (net_loc,))
    paths = sorted({f.value.partition(" ")[2] for f in via})
    locs = tuple(dict.fromkeys(next(f.loc for f in via if f.value.partition(" ")[2] == p) for p in paths))[:4]
    went = f"NCCL's connections went via {', '.join(paths)}"
    if not nets or net_loc is None:
        return Finding(Severity.INFO, "transport", f"{went}.", locs)
    if any(p.startswith("NET") for p in paths):
        return Finding(Severity.INFO, "transport", f"{went}; the network transport was {', '.join(nets)}.",
                       (*locs, net_loc))
    return Finding(Severity.INFO, "transport",
                   f"{went}: no connection in these inputs used the network transport NCCL loaded "
                   f"({', '.join(nets)}), which it loads whether or not a channel needs it.", (*locs, net_loc))
