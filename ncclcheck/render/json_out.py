"""The ``--json`` contract of ``analyze-log``: stable, versioned, no markup.

Record field names follow the conformance files in ``../shared/conformance``.
"""

from __future__ import annotations

from typing import Any

from ncclcheck.evidence.types import PG, Loc
from ncclcheck.findings import Finding
from ncclcheck.job.model import Analysis, Record

SCHEMA_VERSION = 1


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


def analysis_json(a: Analysis) -> dict[str, Any]:
    """The whole result."""
    v = a.verdict
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
        "facts": [
            {"rank": f.who.rank, "key": f.key, "value": f.value, "at": loc_json(f.loc)}
            for s in a.scans for f in s.facts
        ],
    }
    return {
        "schema_version": SCHEMA_VERSION,
        "inputs": [
            {"file": s.file, "path_rank": s.path_rank, "lines": s.lines, "bytes": s.bytes_read,
             "ranks_seen": list(s.ranks_seen)}
            for s in a.scans
        ],
        "dtype_assumed": a.dtype,
        "records": [record_json(r) for r in a.records],
        "verdict": {
            "kind": v.kind.value,
            "summary": v.summary,
            "culprit_ranks": list(v.culprit_ranks),
            "waiting_ranks": list(v.waiting_ranks),
            "pg": pg_json(v.pg),
            "seq": v.seq,
            "findings": [finding_json(f) for f in v.findings],
            "next_steps": list(v.next_steps),
        },
        "ranks": [
            {"rank": row.rank, "state": row.state,
             "record": None if row.record is None else f"{row.record.loc}",
             "first_error": None if row.first_error is None else
             {"kind": row.first_error.kind.value, "message": row.first_error.message,
              "at": loc_json(row.first_error.loc)}}
            for row in a.rows
        ],
        "events": events,
        "flight_recorder": {
            "dumps": [
                {"file": s.file, "rank": s.dump.rank, "version": s.dump.version, "entries": len(s.dump.entries),
                 "pg_status": {k: dict(v) for k, v in s.dump.pg_status.items()}}
                for s in a.scans if s.dump is not None
            ],
            "process_groups": [
                {"pg": r.pg, "desc": r.pg_desc, "kind": r.kind, "seq": r.seq, "culprit_ranks": list(r.culprit_ranks),
                 "waiting_ranks": list(r.waiting_ranks), "message": r.message, "missing_dumps": list(r.missing_dumps),
                 "source": "flight_recorder",
                 "stacks": [{"rank": rank, "what": what,
                             "frame": None if f is None else {"name": f.name, "file": f.file, "line": f.line}}
                            for rank, what, f in r.stacks],
                 "ranks": [{"rank": st.rank, "last_completed": st.last_completed, "last_started": st.last_started,
                            "last_scheduled": st.last_scheduled} for st in r.states]}
                for r in a.flight_recorder
            ],
        },
    }
