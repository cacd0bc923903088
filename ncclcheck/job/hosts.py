"""Where each rank ran, and which ranks a lost peer's address names.

NCCL's line header (``host:pid:tid [dev]``) and its bootstrap address (``Bootstrap : Using eth0:10.0.0.2<0>``) place
a rank on a host; a transport's WARN line names the peer whose connection closed by host name or address
(``Connection closed by remote peer node-7<51450>``, ``NET/Socket : peer 10.0.5.194<41988> …``).  A peer is a host,
not a rank: the ranks the inputs place there are its candidates.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ncclcheck.evidence.types import ErrorKind, FileScan, Loc

_PEER = re.compile(r"peer \[?([\w.:-]+?)\]?<(\d+)>")
_ADDRESS = re.compile(r":([\d.]+|[0-9a-fA-F:]+%?\w*)<\d+>")
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}
_TRANSPORT = (ErrorKind.CONNECTION, ErrorKind.NCCL_WARN, ErrorKind.NCCL_ERROR)


@dataclass(frozen=True)
class PeerLost:
    """A rank's NCCL lost its connection to a peer it names by address: the ranks the inputs place there."""

    reporter: int | None
    peer: str  # as printed, with its port: node-7<51450>
    loc: Loc
    ranks: tuple[int, ...]
    names: frozenset[str]  # the host as named: node-7.cluster and node-7

    def elsewhere(self, at: frozenset[str]) -> bool:
        """Whether a rank placed at these names is on another host than this peer."""
        return bool(at) and not self.names & at


def rank_hosts(scans: Sequence[FileScan]) -> dict[int, frozenset[str]]:
    """Each rank's host names and addresses, from its own NCCL lines."""
    names: dict[int, set[str]] = defaultdict(set)
    for s in scans:
        for f in s.facts:
            if f.who.rank is None:
                continue
            if f.key == "host":
                names[f.who.rank] |= {f.value, f.value.split(".")[0]}
            elif f.key in ("bootstrap", "net_socket") and (m := _ADDRESS.search(f.value)):
                names[f.who.rank].add(m[1])
    return {r: frozenset(v) for r, v in names.items()}


def peers_lost(scans: Sequence[FileScan]) -> list[PeerLost]:
    """The peers whose connection a rank's NCCL reports closed or failed, each with the ranks placed on its host;
    a loopback address names no host."""
    hosts = rank_hosts(scans)
    out: list[PeerLost] = []
    seen: set[tuple[int | None, str]] = set()
    for s in scans:
        for e in s.errors:
            m = _PEER.search(e.message) if e.kind in _TRANSPORT else None
            if m is None or m[1] in _LOOPBACK or (e.who.rank, m[1]) in seen:
                continue
            seen.add((e.who.rank, m[1]))
            names = frozenset({m[1], m[1].split(".")[0]} if not m[1][0].isdigit() else {m[1]})
            ranks = tuple(sorted(r for r, at in hosts.items() if names & at))
            out.append(PeerLost(e.who.rank, f"{m[1]}<{m[2]}>", e.loc, ranks, names))
    return out
