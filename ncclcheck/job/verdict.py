"""Decide what happened: the inputs into the job model, its decision, and the decision in words.

The roles are apart: job/build.py (with job/facts.py) reads the inputs into one model; job/hang.py and
job/rules.py decide from that model alone (the kind, the culprits, who waited, the cause); job/wording.py words
the decision (summary, findings, next steps). This module joins them, with the later rules and the findings (the
size arithmetic, counters, detectors, PyTorch's reports), each read from the job model alone, the catalogue's
matching (job/causes.py) included: no rule reads the inputs' scans. It is the only module that builds a verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ncclcheck.evidence.types import FileScan
from ncclcheck.findings import Finding
from ncclcheck.job import wording
from ncclcheck.job.actions import decide_action
from ncclcheck.job.afterend import stuck_after_end
from ncclcheck.job.apart import apart_findings, stopped_apart
from ncclcheck.job.build import build_job
from ncclcheck.job.callphase import host_call
from ncclcheck.job.causes import diagnose
from ncclcheck.job.chain import chain_lines
from ncclcheck.job.colltrace import traced, unplaced_findings
from ncclcheck.job.crashsite import crash_findings, crash_steps
from ncclcheck.job.ending import cut_off, stalled
from ncclcheck.job.findings import (
    counter_findings,
    detector_findings,
    membership_findings,
    report_findings,
    size_finding,
)
from ncclcheck.job.frmatch import history_findings
from ncclcheck.job.idwait import lazy_p2p
from ncclcheck.job.launcherkill import killed_workers, unranked_death
from ncclcheck.job.launchgaps import error_file, member_steps, unstarted_members
from ncclcheck.job.localonly import local_only_findings, local_only_steps
from ncclcheck.job.lonework import awaited_ranks
from ncclcheck.job.model import Analysis, Group, Job, Record, Verdict, VerdictKind, Work
from ncclcheck.job.nativestall import native_stall
from ncclcheck.job.netpath import fallback_findings
from ncclcheck.job.partition import partition
from ncclcheck.job.raisesite import raise_findings
from ncclcheck.job.rules import Decision, decide_job
from ncclcheck.job.runs import Restart
from ncclcheck.job.shutdown import shutdown_findings
from ncclcheck.job.spied import unranked_stack
from ncclcheck.job.stall import stopped_at_setup
from ncclcheck.job.stated import best
from ncclcheck.job.storeaddr import loopback_steps
from ncclcheck.job.storebarrier import barrier_waited
from ncclcheck.job.storewait import store_waited
from ncclcheck.job.transport import shared_hang
from ncclcheck.job.uneven import FIX as UNEVEN_FIX
from ncclcheck.job.uneven import uneven_findings
from ncclcheck.job.unexplained import unexplained_findings
from ncclcheck.job.unreadline import unread_error
from ncclcheck.job.versions import agreement_findings

# The verdicts that name no rank at fault: a first collective that never completed is the path's question there.
_OPEN = frozenset({VerdictKind.INCOMPLETE, VerdictKind.ALL_RANKS_STUCK})
# Names the tensor of a collective (explain's table, when the user gave the model); None when it cannot.
TensorOf = Callable[[Work, Group | None], Finding | None]


def decide(scans: Sequence[FileScan], records: Sequence[Record], dtype: str = "float32",
           restarts: Sequence[Restart] = (), tensor_of: TensorOf | None = None) -> Analysis:
    """Build the job model and decide the verdict, the chain and the findings (of the last run of each file).

    ``tensor_of`` names the tensor of the hung collective (explain's table, when the user gave the model)."""
    job = build_job(scans, records)
    d = decide_job(job, lambda killed, fired, silent: diagnose(job, killed, fired, silent))
    d = shared_hang(job, d)  # every rank waits in one collective: a setting they disagree on, the transport
    d = stopped_at_setup(job, d)  # the inputs stop at NCCL's set-up with no error (job/stall.py)
    d = traced(job, d)  # NCCL's collective trace: calls that differ, or orders that cross (job/colltrace.py)
    d = native_stall(job, d)  # native stacks inside an NCCL call, nothing failed (job/nativestall.py)
    d = stuck_after_end(job, d)  # a watchdog stuck after the job's own end (job/afterend.py)
    d = store_waited(job, d)  # a store's wait that gave up after the job ran (job/storewait.py)
    d = barrier_waited(job, d)  # ranks waiting in the store-based barrier (job/storebarrier.py)
    d = lazy_p2p(job, d)  # a send or recv's wait for its communicator's NCCL id (job/idwait.py)
    d = killed_workers(job, d)  # a launcher's kill of its workers, nothing else said (job/launcherkill.py)
    d = unranked_death(job, d)  # a process no line ranks died with no error of its own (job/launcherkill.py)
    d = unranked_stack(job, d)  # py-spy dumps that no line ranks, nothing else found (job/spied.py)
    d = unstarted_members(job, error_file(job, d))  # what a launcher says is missing (launchgaps.py)
    # nothing else failed, but an input ends on an error of no known form (job/unreadline.py): ahead of the rules
    # below, which read a stop with no failure line
    d = unread_error(job, d)
    d = cut_off(job, d)  # a console that stops mid-run with no ending and no failure (job/ending.py)
    d = stopped_apart(job, d)  # the ranks' own counters stop apart, nothing failed or ended (job/apart.py)
    d = stalled(job, d)  # a job shown launched or running, then no ending and no failure (job/ending.py)
    uneven = uneven_findings(job, d.found)  # the ranks' loops counted to different totals (job/uneven.py)
    crash = crash_findings(job, d.cause)  # the library a native crash struck in
    findings = [*wording.lead_findings(job, d), *history_findings(job, d.summary),
                *_size_findings(job, d, dtype, tensor_of), *wording.busy_findings(d),
                *crash,
                *raise_findings(job, d.kind),  # a framework's own check, a call path
                *shutdown_findings(scans, d.culprits),  # a library shut down after another rank's failure
                *wording.host_findings(job, d), *counter_findings(records, d.cause is None and d.kind in _OPEN),
                *detector_findings(job), *fallback_findings(job),  # the network NCCL fell back to (job/netpath.py)
                *uneven,
                *apart_findings(job, d),  # the ranks' own counters stop apart (job/apart.py)
                *unplaced_findings(job),  # trace lines no process is known for (job/colltrace.py)
                *local_only_findings(job),  # DeepSpeed's runner on this node alone (job/localonly.py)
                *membership_findings(job), *report_findings(job), *wording.run_findings(job, d, restarts),
                *agreement_findings(job.facts.versions), *unexplained_findings(job.facts.versions, d.kind, d.cause)]
    pg = d.named.group.to_pg() if d.named is not None else None
    # a set-up failure that names no culprit (the host's, the launch's): no rank waited for a peer (job/partition.py)
    sets = partition(job, d.found, d.culprits, d.waiting, d.kind is VerdictKind.SETUP_FAILURE and not d.culprits
                     or host_call(d.kind, d.culprits, d.cause))  # the host's library failed a call (job/callphase.py)
    verdict = Verdict(d.kind, wording.summary(d), sets.culprits, sets.waiting, sets.unknown, pg,
                      d.named.seq if d.named is not None else job.facts.detail_seq,
                      chain_lines(job, d.culprits or d.ring or awaited_ranks(job, d)) if d.found else (), tuple(findings),
                      (*((UNEVEN_FIX,) if uneven else ()), *member_steps(job, d),  # job/launchgaps.py
                       *loopback_steps(job, d),  # a one-node job's store at its own host name (job/storeaddr.py)
                       *local_only_steps(job, d.kind),  # job/localonly.py
                       *crash_steps(crash, d.cause, wording.steps(job, d))), d.cause, d.ring, decide_action(job, d),
                      best(job, d.culprits, d.cause), sets.stopped)
    return Analysis(tuple(scans), tuple(records), job, verdict, dtype)


def _size_findings(job: Job, d: Decision, dtype: str, tensor_of: TensorOf | None) -> list[Finding]:
    """Is the hung collective's size the cause (almost never), and which tensor it is, when the model is given."""
    if d.primary is None:
        return []
    group = next((g for g in job.groups if g.id == d.primary.group), None)
    size = size_finding(d.primary, dtype, group, tensor_of is not None, job.facts.network)
    tensor = tensor_of(d.primary, group) if tensor_of is not None else None
    return [f for f in (size, tensor) if f is not None]
