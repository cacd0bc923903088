"""A lost node: one agent's console that stops mid-run while another agent of the job reports a failure.

torchrun's agent has the last word on its node whatever its workers do (torch/distributed/elastic): when a worker
fails it logs "failed (exitcode: …) local_rank: …" and the failure table (multiprocessing/api.py, errors/), when it
stops the others "Sending process PID closing signal SIGTERM" (PContext._close), when it is stopped itself "Received
N death signal" (agent/server/api.py), and a worker that ends of itself prints its own error or its end. A console
of a node that holds its workers' lines and none of these, while the console of another node's agent reports a
failure, was cut off with its agent: the host lost power, crashed or was fenced, or something killed the agent and
its workers at once (SIGKILL to the whole tree, a container's kill). Its workers died without a word, and the others
only lost them (a connection closed by the peer, a store that went away, a timeout).

What it means for the action: nothing in such a console says why the node went, so the host's own records decide
(its kernel log of the boot before, the scheduler's record of the node): drain it where they show a fault. A host
record in the inputs that states it (Slurm's NODE_FAIL, an Xid, a kernel OOM kill) is a cause of the catalogue and
decides on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ncclcheck.evidence.types import FileScan, Loc


@dataclass(frozen=True)
class LostNode:
    """A console that stops mid-run with no word of its agent: its file, host (where a line names it) and ranks."""

    file: str
    host: str | None
    ranks: tuple[int, ...]  # its workers' global ranks, where its lines state them
    local_ranks: tuple[int, ...]  # its workers' local tags whose global rank no line states
    last: Loc  # its last line
    reported: Loc  # the other agent's failure report


# The facts that show a console's end: its agent's failure, its workers' word that their work is over.
END_FACTS = ("agent_failed", "work_done")


def said_end(s: FileScan) -> bool:
    """A console's end in lines other than a fact: its agent's own words (its failure report or exit lines, a closing
    signal, a signal it got) or its workers' (an error of theirs, an end line)."""
    return bool(s.elastic or s.errors or s.endings) or any(c.kind == "launcher" for c in s.clues)


def _spoke_or_ended(s: FileScan) -> bool:
    """The agent's own words in a console, or its workers' end."""
    return said_end(s) or any(f.key in END_FACTS for f in s.facts)


def lost_nodes(scans: Sequence[FileScan]) -> tuple[LostNode, ...]:
    """Each console of torchrun's workers (lines behind its ``[defaultN]:`` tags, nothing from a per-rank file) that
    stops with no word of its agent and no end of its workers, while another console's agent reports a failure."""
    reports = [loc for s in scans for loc in
               [*(e.loc for e in s.elastic), *(c.loc for c in s.clues if c.kind == "launcher")][:1]]
    if not reports:
        return ()
    out = []
    for s in scans:
        if s.path_rank is not None or s.dump is not None or not (s.ranks_seen or s.local_ranks):
            continue
        if not s.tagged or _spoke_or_ended(s):
            continue
        other = next((loc for loc in reports if loc.file != s.file), None)
        if other is None:
            continue
        host = next((f.value for f in s.facts if f.key == "host"), None)
        out.append(LostNode(s.file, host, s.ranks_seen, s.local_ranks, Loc(s.file, s.lines), other))
    return tuple(out)

