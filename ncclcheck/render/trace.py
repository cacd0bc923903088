"""The timeline in the Chrome trace event format, for Perfetto (ui.perfetto.dev) and chrome://tracing.

One process per rank (pid = global rank), one thread per process group it is in (its sends and
receives on a thread of their own), every work a complete event (``"ph": "X"``) with its op, sizes,
sequence number and state in ``args``.  The inputs hold no clock for most works, so the time axis is
logical: each work sits at the step of the longest chain of works before it (its own rank's earlier
works in the same group, and in dump order across groups), one step being ``UNIT_US``
microseconds.  The same collective therefore lines up across its members, a send with its receive,
and a rank that never issued a number shows a gap where the others have a slice.  ``otherData``
says so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

from ncclcheck import __version__
from ncclcheck.job.model import Analysis, GroupId, Position, RankState
from ncclcheck.render.timeline import Slot, collective_slot, p2p_slots, top_seq

UNIT_US = 1000  # one step of the logical clock
KEEP = 64  # recorded works per rank and group
COUNTER_DEPTH = 3  # numbers before the last one shown where only the counters speak
_CNAME = {"completed": "good", "started": "thread_state_running", "scheduled": "grey", "stuck": "terrible",
          "failed": "bad"}


def _slots(p: Position) -> list[Slot]:
    """The works of one rank in one group worth drawing: recorded ones, else the last few the counters tell."""
    top = top_seq(p)
    seqs = sorted({w.seq for w in p.works if not w.p2p and w.seq is not None})[-KEEP:]
    if top is not None and not p.works:
        seqs = list(range(max(1, top - COUNTER_DEPTH), top + 1))
    slots = [collective_slot(p, s) for s in seqs]
    return [s for s in slots if s.state not in ("not_issued", "unknown")] + p2p_slots(p, KEEP)


def _node(rank: int, g: GroupId, slot: Slot, seen: dict[tuple[tuple[str | None, str | None], int, int], int]) -> Hashable:
    """What one work is across ranks: a collective is its group and number; a send is its receive."""
    w = slot.work
    if not slot.p2p:
        return ("c", g.key, slot.seq)
    if w is None or w.peer is None:
        return ("p", rank, g.key, slot.seq)
    src, dst = (rank, w.peer) if (w.op or "").upper().startswith("SEND") else (w.peer, rank)
    pair = (g.key, src, dst)
    seen[pair] = seen.get(pair, 0) + 1
    return ("p2p", g.key, src, dst, seen[pair])


def _levels(chains: Sequence[Sequence[Hashable]]) -> dict[Hashable, int]:
    """Longest-path step of every node; a cycle (ranks that disagree on the order) is cut at its earliest node."""
    succ: dict[Hashable, dict[Hashable, None]] = defaultdict(dict)
    indeg: dict[Hashable, int] = {}
    for ch in chains:
        for n in ch:
            indeg.setdefault(n, 0)
        for a, b in zip(ch, ch[1:], strict=False):
            if a != b and b not in succ[a]:
                succ[a][b] = None
                indeg[b] += 1
    level = dict.fromkeys(indeg, 0)
    remaining = dict.fromkeys(indeg)
    ready = [n for n, d in indeg.items() if d == 0]
    while remaining:
        if not ready:
            ready = [min(remaining, key=lambda n: (level[n], repr(n)))]
        n = ready.pop()
        if n not in remaining:
            continue
        del remaining[n]
        for m in succ.get(n, ()):
            if m in remaining:
                level[m] = max(level[m], level[n] + 1)
                indeg[m] -= 1
                if indeg[m] == 0:
                    ready.append(m)
    return level


def _args(slot: Slot, label: str, source: str) -> dict[str, Any]:
    w = slot.work
    # Perfetto shows these to a person: what is not known is left out, never written as null.
    out: dict[str, Any] = {"state": slot.state, "group": label, "source": "counters" if w is None else source}
    if slot.seq is not None:
        out["seq"] = slot.seq
    if w is not None:
        out.update({"sizes": [list(s) for s in w.sizes], "dtypes": list(w.dtypes)})
        out.update({k: v for k, v in (("op", w.op), ("numel_in", w.numel_in), ("numel_out", w.numel_out))
                    if v is not None})
        if w.p2p:
            out["peer"] = w.peer
        if w.timeout_ms is not None:
            out["timeout_ms"] = w.timeout_ms
        if w.ran_for_ms is not None:
            out["ran_for_ms"] = w.ran_for_ms
        if w.frame is not None:
            out["frame"] = str(w.frame)
        if w.loc is not None:
            out["evidence"] = str(w.loc)
    return out


def trace_json(a: Analysis) -> dict[str, Any]:
    """The whole trace: ``{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}``."""
    job, v = a.job, a.verdict
    tids = {g.id: i for i, g in enumerate(job.groups)}
    culprits, waiting = set(v.culprit_ranks), set(v.waiting_ranks)
    labels = {g.id: g.id.label() for g in job.groups}
    items: list[tuple[RankState, Position, Slot, Hashable]] = []
    chains: list[list[Hashable]] = []
    for s in job.ranks:
        seen: dict[tuple[tuple[str | None, str | None], int, int], int] = {}
        dump_order: list[tuple[tuple[int, float], Hashable]] = []
        for p in s.positions:
            slots = _slots(p)
            nodes = [_node(s.rank, p.group, sl, seen) for sl in slots]
            chains.append([n for sl, n in zip(slots, nodes, strict=True) if not sl.p2p])
            chains.append([n for sl, n in zip(slots, nodes, strict=True) if sl.p2p])
            for sl, n in zip(slots, nodes, strict=True):
                items.append((s, p, sl, n))
                if p.source == "dump" and sl.work is not None:
                    dump_order.append((sl.work.order, n))
        chains.append([n for _, n in sorted(dump_order, key=lambda x: x[0])])
    level = _levels(chains)
    end = (max(level.values(), default=0) + 2) * UNIT_US
    events: list[dict[str, Any]] = []
    for s in job.ranks:
        role = "culprit" if s.rank in culprits else "waiting" if s.rank in waiting else s.ending.kind.value
        events += [
            {"name": "process_name", "ph": "M", "pid": s.rank, "tid": 0, "args": {"name": f"rank {s.rank}"}},
            {"name": "process_labels", "ph": "M", "pid": s.rank, "tid": 0, "args": {"labels": role}},
            {"name": "process_sort_index", "ph": "M", "pid": s.rank, "tid": 0,
             "args": {"sort_index": -1 if s.rank in culprits else s.rank}},
        ]
    threads: dict[tuple[int, int], str] = {}
    slices: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for s, p, sl, n in items:
        tid = 2 * tids[p.group] + (2 if sl.p2p else 1)
        label = labels.get(p.group) or p.group.label()
        label += " p2p" if sl.p2p else ""
        threads[(s.rank, tid)] = label
        op = (sl.work.op if sl.work is not None and sl.work.op else "collective").lower()
        name = f"{op} #{sl.seq}" if not sl.p2p else f"{op} {'' if sl.work is None else sl.work.peer}".rstrip()
        ev: dict[str, Any] = {"name": name, "cat": "p2p" if sl.p2p else "collective", "ph": "X",
                              "ts": level[n] * UNIT_US, "dur": UNIT_US * 8 // 10, "pid": s.rank, "tid": tid,
                              "args": _args(sl, label, p.source)}
        if sl.state in _CNAME:
            ev["cname"] = _CNAME[sl.state]
        slices[(s.rank, tid)].append(ev)
    for (rank, tid), label in sorted(threads.items()):
        events.append({"name": "thread_name", "ph": "M", "pid": rank, "tid": tid, "args": {"name": label}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": rank, "tid": tid, "args": {"sort_index": tid}})
    for key in sorted(slices):
        row = sorted(slices[key], key=lambda e: e["ts"])
        for i, ev in enumerate(row):
            if ev["args"]["state"] == "stuck":  # a hang lasts until the next work of its thread, or the end
                nxt = next((e["ts"] for e in row[i + 1:] if e["ts"] > ev["ts"]), end)
                ev["dur"] = nxt - ev["ts"] - UNIT_US // 10
            events.append(ev)
    for s in job.ranks:
        events.append({"name": f"ending: {s.ending.kind.value}", "cat": "ending", "ph": "i", "s": "p", "ts": end,
                       "pid": s.rank, "tid": 0,
                       "args": {"detail": s.ending.detail,
                                **({} if s.ending.loc is None else {"evidence": str(s.ending.loc)})}})
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "generator": f"ncclcheck {__version__}",
            "verdict": v.kind.value,
            "summary": v.summary,
            "culprit_ranks": list(v.culprit_ranks),
            "clock": (f"logical, not wall-clock: the inputs give no start times for these works, so each sits at "
                      f"the step of the longest chain of works issued before it (the same collective lines up "
                      f"across ranks); one step = {UNIT_US} us. A stuck work lasts until its thread's next work or "
                      "the end. Where a group has no dump, its last works come from the log counters "
                      f"(at most {COUNTER_DEPTH + 1}, op unknown)."),
        },
    }
