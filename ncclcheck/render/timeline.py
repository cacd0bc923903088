"""Where each rank is in each group, work by work: what the incident report and the trace both draw.

A rank's recorded works (flight-recorder dumps) say each collective's state; where only text logs
speak, the group's counters do: numbers up to ``last_completed`` completed, up to ``last_started``
started, up to ``last_enqueued`` scheduled, the one it timed out in is stuck, later ones were never
issued.  Sequence numbers of collectives are the group's own; p2p operations count apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from ncclcheck.job.model import Position, Work

# States a slot can take, in the order the legend lists them.
STATES = ("completed", "started", "scheduled", "stuck", "failed", "not_issued", "unknown")


@dataclass(frozen=True)
class Slot:
    """One collective number (or one p2p operation) of one rank in one group."""

    seq: int | None
    state: str  # one of STATES
    work: Work | None  # None: known only from the group's counters
    p2p: bool = False


def _known(v: int | None) -> int | None:
    return v if v is not None and v >= 0 else None


def collective_slot(p: Position, seq: int) -> Slot:
    """The state of collective number ``seq`` on this rank, from its recorded work or its counters."""
    stuck = p.stuck if p.stuck is not None and not p.stuck.p2p else None
    if stuck is not None and stuck.seq == seq:
        return Slot(seq, "failed" if stuck.state == "failed" else "stuck", stuck)
    w = next((w for w in p.works if not w.p2p and w.seq == seq), None)
    if w is not None:
        return Slot(seq, w.state if w.state in STATES else "unknown", w)
    recorded = [w.seq for w in p.works if not w.p2p and w.seq is not None]
    if recorded and seq > max(recorded):
        return Slot(seq, "not_issued", None)
    done, started, enq = _known(p.last_completed), _known(p.last_started), _known(p.last_enqueued)
    if done is not None and seq <= done:
        return Slot(seq, "completed", None)
    if started is not None and seq <= started:
        return Slot(seq, "started", None)
    if enq is not None and seq <= enq:
        return Slot(seq, "scheduled", None)
    if enq is not None or (stuck is not None and stuck.seq is not None and seq > stuck.seq):
        return Slot(seq, "not_issued", None)
    return Slot(seq, "unknown", None)


def top_seq(p: Position) -> int | None:
    """The highest collective number this rank is known to have issued in this group (None: none)."""
    seqs = [w.seq for w in p.works if not w.p2p and w.seq is not None]
    if not p.works:  # a dump's counters also count its sends and receives: its recorded works say more
        seqs += [v for v in (_known(p.last_enqueued),) if v is not None]
    if p.stuck is not None and not p.stuck.p2p and p.stuck.seq is not None:
        seqs.append(p.stuck.seq)
    top = max(seqs, default=0)
    return top if top >= 1 else None


def p2p_slots(p: Position, keep: int) -> list[Slot]:
    """The last ``keep`` sends and receives of this rank in this group, oldest first."""
    works = [w for w in p.works if w.p2p]
    if p.stuck is not None and p.stuck.p2p and not any(w.seq == p.stuck.seq for w in works):
        works.append(p.stuck)
    works.sort(key=lambda w: (w.order, w.seq or 0))
    stuck = p.stuck if p.stuck is not None and p.stuck.p2p else None
    out = []
    for w in works[-keep:] if keep else []:
        state = "stuck" if stuck is not None and w.seq == stuck.seq else w.state if w.state in STATES else "unknown"
        out.append(Slot(w.seq, state, w, p2p=True))
    return out


def short_op(w: Work | None) -> str:
    """A few characters for a cell: ``AR``, ``AG``, ``send 3``."""
    if w is None or not w.op:
        return ""
    op = w.op.upper().strip("_")
    if w.p2p:
        peer = "" if w.peer is None else f" {w.peer}"
        return ("send" if op.startswith("SEND") else "recv" if op.startswith("RECV") else op.lower()[:4]) + peer
    for key, short in (("ALLREDUCE_BARRIER", "BAR"), ("BARRIER", "BAR"), ("ALLREDUCE", "AR"), ("ALLGATHER", "AG"),
                       ("REDUCE_SCATTER", "RS"), ("BROADCAST", "BC"), ("ALLTOALL", "A2A"), ("REDUCE", "RED"),
                       ("GATHER", "GA"), ("SCATTER", "SC"), ("COALESCED", "CO")):
        if op.startswith(key):
            return short
    return op[:4]
