"""The ``--json`` contract of ``analyze-log``: stable, versioned, complete, no markup.

Record field names follow the conformance files in ``../shared/conformance``.  Version 2 adds the
job model (groups with members, each rank's ending and positions, the wait-for edges and roots),
the verdict's chain and unknown ranks, and every input problem.  Version 3 adds the verdict's ``cause``
(the failure catalogue's kind, its detail, the ranks that show it and the fix), the verdict's ``cycle`` (the
ranks of a deadlock across groups) and the ``clues`` events.
"""

from __future__ import annotations

from typing import Any

from ncclcheck.evidence.types import PG, Loc
from ncclcheck.findings import Finding
from ncclcheck.job.causes import Diagnosis
from ncclcheck.job.model import Analysis, Edge, Group, GroupId, Position, RankState, Record, Work

SCHEMA_VERSION = 3


def pg_json(pg: PG | None) -> dict[str, Any] | None:
    """A PG as ``{id, guid, desc}`` or null."""
    return None if pg is None else {"id": pg.id, "guid": pg.guid, "desc": pg.desc}


def loc_json(loc: Loc) -> str:
    """``file:line``."""
    return str(loc)


def record_json(r: Record) -> dict[str, Any]:
    """One timeout event."""
    return {
        "rank": r.rank,
        "global_rank": r.global_rank,
        "pg": pg_json(r.pg),
        "seq": r.seq,
        "op_type": r.op_type,
        "numel_in": r.numel_in,
        "numel_out": r.numel_out,
        "tensor_shape": r.tensor_shape,
        "timeout_ms": r.timeout_ms,
        "ran_for_ms": r.ran_for_ms,
        "last_enqueued": r.last_enqueued,
        "last_completed": r.last_completed,
        "evidence": list(r.evidence),
        "occurrences": r.occurrences,
        "file": r.loc.file,
        "line": r.loc.line,
    }


def finding_json(f: Finding) -> dict[str, Any]:
    """One finding."""
    return {
        "severity": f.severity.value,
        "code": f.code,
        "message": f.message,
        "evidence": [str(e) for e in f.evidence],
        "fix": f.fix,
    }


def cause_json(d: Diagnosis | None) -> dict[str, Any] | None:
    """The catalogue's cause: what failed, where it shows, why, and the fix."""
    if d is None:
        return None
    c = d.cause
    return {"kind": c.kind, "family": c.family, "title": c.title, "detail": d.detail, "ranks": list(d.ranks),
            "evidence": [loc_json(x) for x in d.locs], "why": c.why, "fix": list(c.fix), "probe": c.probe,
            "reference": c.source}


def group_json(g: GroupId) -> dict[str, Any]:
    """A group's identity."""
    return {"id": g.id, "guid": g.guid, "desc": g.desc}


def work_json(w: Work | None) -> dict[str, Any] | None:
    """One work as a rank issued it."""
    if w is None:
        return None
    return {
        "group": group_json(w.group), "seq": w.seq, "op": w.op, "numel_in": w.numel_in, "numel_out": w.numel_out,
        "sizes": [list(s) for s in w.sizes], "dtypes": list(w.dtypes), "p2p": w.p2p, "peer": w.peer,
        "state": w.state, "timeout_ms": w.timeout_ms, "ran_for_ms": w.ran_for_ms,
        "frame": None if w.frame is None else {"name": w.frame.name, "file": w.frame.file, "line": w.frame.line},
        "at": None if w.loc is None else loc_json(w.loc),
    }


def _position(p: Position) -> dict[str, Any]:
    return {"group": group_json(p.group), "group_rank": p.group_rank, "last_enqueued": p.last_enqueued,
            "last_started": p.last_started, "last_completed": p.last_completed, "stuck": work_json(p.stuck),
            "source": p.source}


def _rank(s: RankState) -> dict[str, Any]:
    e = s.first_error
    return {
        "rank": s.rank,
        "ending": {"kind": s.ending.kind.value, "detail": s.ending.detail,
                   "at": None if s.ending.loc is None else loc_json(s.ending.loc)},
        "stuck": work_json(s.stuck),
        "positions": [_position(p) for p in s.positions],
        "first_error": None if e is None else {"kind": e.kind.value, "message": e.message, "at": loc_json(e.loc)},
        "files": list(s.files),
    }


def _group(g: Group) -> dict[str, Any]:
    return {**group_json(g.id), "members": list(g.members), "size": g.size, "members_source": g.source.value}


def _edge(e: Edge) -> dict[str, Any]:
    return {"waiter": e.waiter, "target": e.target, "reason": e.reason.value, "detail": e.detail,
            "work": work_json(e.work)}


def analysis_json(a: Analysis) -> dict[str, Any]:
    """The whole result."""
    v = a.verdict
    job = a.job
    events: dict[str, list[dict[str, Any]]] = {
        "dump_signals": [
            {"global_rank": d.who.global_rank, "pg": pg_json(d.pg), "from_rank": d.from_rank,
             "last_enqueued": d.last_enqueued, "last_completed": d.last_completed, "at": loc_json(d.loc)}
            for s in a.scans for d in s.dump_signals
        ],
        "heartbeats": [
            {"rank": h.who.rank, "pg": pg_json(h.pg), "kind": h.kind, "seconds": h.seconds, "at": loc_json(h.loc)}
            for s in a.scans for h in s.heartbeats
        ],
        "desync_reports": [
            {"reporting_rank": d.reporting_rank, "timeout_collective": d.timeout_collective,
             "timeout_index": d.timeout_index,
             "lagging": [{"ranks": list(x.ranks), "finished": x.finished, "did_not_join": x.did_not_join,
                          "did_not_finish": x.did_not_finish, "never_joined": x.never_joined} for x in d.lagging],
             "snapshot": [{"index": i, "state": st, "op": op, "ranks": list(rs)} for i, st, op, rs in d.snapshot],
             "at": loc_json(d.loc)}
            for s in a.scans for d in s.desync
        ],
        "mismatches": [
            {"rank_a": m.rank_a, "fingerprint_a": m.fingerprint_a, "rank_b": m.rank_b,
             "fingerprint_b": m.fingerprint_b, "at": loc_json(m.loc)}
            for s in a.scans for m in s.mismatches
        ],
        "errors": [
            {"rank": e.who.rank, "kind": e.kind.value, "message": e.message, "at": loc_json(e.loc)}
            for s in a.scans for e in s.errors
        ],
        "nccl_errors": [
            {"rank": w.who.rank, "group_rank": w.rank, "seq": w.seq, "op_type": w.op_type, "error": w.error,
             "at": loc_json(w.loc)}
            for s in a.scans for w in s.works if w.evidence == "async_exception"
        ],
        "group_inits": [
            {"global_rank": g.global_rank, "pg": pg_json(g.pg), "group_rank": g.group_rank, "size": g.size,
             "timeout_ms": g.timeout_ms, "at": loc_json(g.loc)}
            for s in a.scans for g in s.group_inits
        ],
        "elastic_failures": [
            {"rank": f.rank, "local_rank": f.local_rank, "exitcode": f.exitcode, "pid": f.pid, "signal": f.signal,
             "host": f.host, "time": f.time, "root_cause": f.root_cause, "at": loc_json(f.loc)}
            for s in a.scans for f in s.elastic
        ],
        "stacks": [
            {"rank": st.who.rank, "frames": [{"name": f.name, "file": f.file, "line": f.line} for f in st.frames],
             "at": loc_json(st.loc)}
            for s in a.scans for st in s.stacks
        ],
        "clues": [
            {"rank": c.who.rank, "kind": c.kind, "text": c.text, "at": loc_json(c.loc)}
            for s in a.scans for c in s.clues
        ],
        "facts": [
            {"rank": f.who.rank, "key": f.key, "value": f.value, "at": loc_json(f.loc)}
            for s in a.scans for f in s.facts
        ],
    }
    return {
        "schema_version": SCHEMA_VERSION,
        "inputs": [
            {"file": s.file, "path_rank": s.path_rank, "lines": s.lines, "bytes": s.bytes_read,
             "ranks_seen": list(s.ranks_seen), "kind": "dump" if s.dump is not None else "live" if s.live else "log"}
            for s in a.scans
        ],
        "problems": [{"file": p.file, "message": p.message, "fatal": p.fatal} for p in a.problems],
        "dtype_assumed": a.dtype,
        "records": [record_json(r) for r in a.records],
        "verdict": {
            "kind": v.kind.value,
            "summary": v.summary,
            "culprit_ranks": list(v.culprit_ranks),
            "waiting_ranks": list(v.waiting_ranks),
            "unknown_ranks": list(v.unknown_ranks),
            "pg": pg_json(v.pg),
            "seq": v.seq,
            "chain": list(v.chain),
            "findings": [finding_json(f) for f in v.findings],
            "next_steps": list(v.next_steps),
            "cause": cause_json(v.cause),
            "cycle": list(v.cycle),
        },
        "job": {
            "world_size": job.world,
            "groups": [_group(g) for g in job.groups],
            "ranks": [_rank(s) for s in job.ranks],
            "edges": [_edge(e) for e in job.edges],
            "roots": [r for r in job.roots if r >= 0],
            "trail_leaves_inputs": any(r < 0 for r in job.roots),
        },
        "events": events,
        "flight_recorder": {
            "dumps": [
                {"file": s.file, "rank": s.dump.rank, "version": s.dump.version, "entries": len(s.dump.entries),
                 "pg_status": {k: dict(v) for k, v in s.dump.pg_status.items()}}
                for s in a.scans if s.dump is not None
            ],
        },
    }
