"""A hang every rank shares and none explains: the ranks' NCCL settings that disagree, or the transport itself.

Every rank the inputs hold waits in the same collective, none reported an error, none is missing (or nothing says
a member is): no rank lagged, so either NCCL moved no data between ranks that all arrived, or the ranks' NCCL did not
agree on how to move it.

* **A setting the ranks disagree on** (``settings_differ_hang``). Each process reads NCCL_PROTO and NCCL_ALGO for
  itself and picks the algorithm and protocol of every call from its own table and its own tuning model
  (NVIDIA/nccl src/graph/tuning.cc ``ncclTopoTuneModel``, src/enqueue.cc ``topoGetAlgoInfo``); the transport and
  the network plugin likewise (NCCL_NET, NCCL_IB_DISABLE, src/plugin/net.cc). Where two ranks pick differently for
  the same call, each waits for data in a form, or on a connection, the other never uses: that call hangs with no
  error on either side, at the first collective whose size makes the choices differ (not necessarily the first).
  The settings come from the job's versions table (job/versions.py), which takes each rank's ``<NAME> set by
  environment to`` line (src/misc/param.cc) and NCCL 2.32's ``NCCL DIAG`` environment comparison; the ranks that
  hold the minority value are named, none where there is no majority. Recorded: tests/data/gpu/nccl232/
  diag_env_proto (NCCL_PROTO=Simple on rank 1 alone: barrier()'s one-element all_reduce, the first call small enough
  for LL on rank 0, hung on both ranks after five larger all_reduces completed).
* **The first collective of the group** (``first_collective_hang``): every member issued it and none completed it
  (its sequence number is 1, or the ranks' last completed work is 0 or -1). Since NCCL 2.22 the communicator's
  ring and tree connections are made when the first collective that needs them runs (NCCL_RUNTIME_CONNECT,
  src/init.cc, src/enqueue.cc), and before that the first data moved then: a hang there with no error is a
  transport or GPU peer-to-peer path that does not carry data (PCIe ACS or the IOMMU redirecting peer traffic,
  GPUDirect RDMA, a firewall between the hosts, /dev/shm), not a straggler. The isolating runs switch one path off
  at a time. Where the inputs do not name the group's members this stays ``incomplete_evidence``: a member that
  never arrived explains it as well.

Read from the job model and the decision (job/rules.py's): the lines of a setting are the job's ``settings`` facts
(job/facts.py), quoted as the evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ncclcheck.evidence.types import Fact, Loc
from ncclcheck.job.apart import STEPS_APART
from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.launchgaps import ERROR_FILE
from ncclcheck.job.model import EndKind, Job, VerdictKind, Work
from ncclcheck.job.phrases import place
from ncclcheck.job.rules import Decision
from ncclcheck.job.stall import NO_REPLY, STOPPED
from ncclcheck.job.versions import LOG_RULES, ranks_word
from ncclcheck.probe.agree import Row, rule_for, value_text
from ncclcheck.ranks import rank_phrase

SETTINGS_DIFFER = cause("settings_differ_hang")
FIRST_COLLECTIVE = cause("first_collective_hang")
# Causes whose own steps replace a hang's generic ones (job/wording.py): they already say which path to test (or,
# for ranks that stopped apart, which rank was held).
OWN_STEPS = frozenset({SETTINGS_DIFFER.kind, FIRST_COLLECTIVE.kind, STOPPED.kind, NO_REPLY.kind, ERROR_FILE.kind,
                       STEPS_APART.kind})
# The disagreements (versions.LOG_RULES' codes) by which each rank chooses on its own how its data travels: the
# algorithm and protocol of a call, the transport, the network plugin. Others (a buffer size, a channel count) take
# another path or speed on the odd ranks, and the ranks still connect (tests/data/gpu/nccl232/diag_env: a different
# NCCL_BUFFSIZE on one rank, the job ran).
_ON_THE_WIRE = ("proto-algo-differs", "transport-differs", "net-plugin-differs")
# Endings of a rank that reported no error of its own: its timeout, a dump or stack inside the collective, the
# watchdog's abort after that timeout.
_QUIET = {EndKind.TIMED_OUT, EndKind.WAITING, EndKind.ABORTED}


def shared_hang(job: Job, d: Decision) -> Decision:
    """The decision with the setting the ranks disagree on, or the first collective's transport, as its cause."""
    w = d.primary
    if w is None or d.cause is not None or d.kind not in (VerdictKind.ALL_RANKS_STUCK, VerdictKind.INCOMPLETE):
        return d
    present = [s for s in job.ranks if s.present]
    if len(present) < 2 or any(
            s.stuck is None or (s.stuck.group, s.stuck.seq, s.stuck.p2p) != (w.group, w.seq, w.p2p)
            or s.stuck.signature() != w.signature() or s.ending.kind not in _QUIET for s in present):
        return d
    ranks = [s.rank for s in present]
    rows = [r for r in job.facts.versions.compared if not r.agrees and rule_for(r.aspect, LOG_RULES).code in _ON_THE_WIRE]
    if rows:
        return _settings(job, d, w, ranks, rows)
    if d.kind is VerdictKind.ALL_RANKS_STUCK and _first(job, w):
        return _first_collective(job, d, w, ranks)
    return d


def _after(job: Job, w: Work) -> str:
    done = [p.last_completed for s in job.ranks for p in s.positions if p.group == w.group and p.last_completed is not None]
    return f" after completing #{max(done)}" if done and max(done) > 0 else ""


def _first(job: Job, w: Work) -> bool:
    """The group's first collective: number 1, or nothing of the group completed on any rank that says."""
    if w.seq == 1:
        return True
    done = [p.last_completed for s in job.ranks for p in s.positions if p.group == w.group and p.last_completed is not None]
    return bool(done) and max(done) <= 0


def _locs(rows: Sequence[Row], settings: Sequence[Fact]) -> tuple[Loc, ...]:
    """Where each differing setting is printed: NCCL's ``set by environment`` line, its DIAG comparison."""
    names = {r.aspect for r in rows}
    locs = [f.loc for f in settings
            if f.key in names or f.key == "nccl_diag_setting" and any(f"for {n}" in f.value for n in names)]
    return tuple(dict.fromkeys(locs))[:6]


def _somewhere(job: Job) -> Loc:
    """A stuck work known without a line (a dump's entry): its rank's input, as a whole."""
    return Loc(next((f for s in job.ranks for f in s.files), "the inputs"), 0)


def _values(r: Row) -> str:
    return ", ".join(f"{value_text(g.value)} ({ranks_word(g.members)})" for g in r.groups)


def _settings(job: Job, d: Decision, w: Work, ranks: list[int], rows: Sequence[Row]) -> Decision:
    odd = sorted({int(m) for r in rows for m in r.odd if m.isdigit()})
    said = "; ".join(_values(r) if len(rows) == 1 else f"{r.aspect} {_values(r)}" for r in rows)
    locs = (*_locs(rows, job.facts.settings), *((w.loc,) if w.loc is not None else ()))
    names = " and ".join(dict.fromkeys(r.aspect for r in rows))
    who = (f" {rank_phrase(odd).capitalize()} {'holds' if len(odd) == 1 else 'hold'} the odd value." if odd else
           " No majority: either side may be the one set wrong.")
    members = "" if d.kind is VerdictKind.ALL_RANKS_STUCK else (
        " These inputs do not name every member of the group; the disagreement explains the hang without one.")
    at = f" ({locs[0]})" if locs else ""
    detail = f"the ranks ran with different {names}: {said}"
    summary = (f"{rank_phrase(ranks, job.world).capitalize()} waited in {place(w)}{_after(job, w)} and none reported an "
               f"error; the ranks ran with different {names}: {said}{at}. Each rank's NCCL picks a call's protocol, "
               "algorithm and transport from its own settings: where they pick differently, each waits for data the "
               f"other never sends.{who}{members}")
    diag = Diagnosis(SETTINGS_DIFFER, tuple(ranks), said, locs[0] if locs else _somewhere(job), locs, detail)
    waiting = tuple(r for r in ranks if r not in odd)
    return replace(d, kind=VerdictKind.ALL_RANKS_STUCK, summary=summary, culprits=tuple(odd), waiting=waiting,
                   cause=diag, unnamed_busy=None)


def _first_collective(job: Job, d: Decision, w: Work, ranks: list[int]) -> Decision:
    detail = (f"every member issued {place(w)}, the group's first collective, and none completed it or reported an "
              "error")
    summary = (f"{rank_phrase(ranks, job.world).capitalize()} wait in {place(w)}, the group's first collective: every "
               "member is there and none reported an error, so no rank lagged. The transport or the GPU peer-to-peer "
               "path under it carried nothing (the first collective is where NCCL first moves the group's data): the "
               "runs in the next steps switch one path off at a time.")
    locs = tuple(dict.fromkeys(s.stuck.loc for s in job.ranks if s.stuck is not None and s.stuck.loc is not None))[:8]
    diag = Diagnosis(FIRST_COLLECTIVE, tuple(ranks), detail, locs[0] if locs else _somewhere(job), locs, detail)
    return replace(d, summary=summary, cause=diag)
