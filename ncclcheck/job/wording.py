"""The decision in words: the summary with a busy rank's last line, the findings around it and the next steps.

job/rules.py decides (a frozen :class:`~ncclcheck.job.rules.Decision`); nothing here changes who is named or
which kind the verdict is. The findings that read only the job model or the decision are here; the few that
read the inputs' lines (job/findings.py: counters, detectors, reports) are added by job/verdict.py in their order.
"""

from __future__ import annotations

from collections.abc import Sequence

from ncclcheck import signals
from ncclcheck.evidence.types import ElasticFailure, Loc
from ncclcheck.findings import Finding, Severity
from ncclcheck.job.causes import PROBE, Diagnosis, describe
from ncclcheck.job.disagree import calls_differ
from ncclcheck.job.exitonly import exit_only_step
from ncclcheck.job.findings import EXIT_IF_DONE, next_steps
from ncclcheck.job.framewaits import frame_steps
from ncclcheck.job.live import live_steps
from ncclcheck.job.lonework import lone_work
from ncclcheck.job.model import Job, VerdictKind
from ncclcheck.job.pipeline import pipeline_step
from ncclcheck.job.rules import Decision
from ncclcheck.job.runs import Restart
from ncclcheck.job.slow import Busy, slow_steps
from ncclcheck.job.transport import OWN_STEPS
from ncclcheck.job.waitsteps import wait_steps

EXIT_TEARDOWN_STEP = (
    "Call `torch.distributed.destroy_process_group()` at the end of the program on every rank, after its last "
    "collective and before it exits: the groups (and their NCCL communicators) are then torn down together instead of "
    "by each process's exit (https://pytorch.org/docs/stable/distributed.html#shutdown); a job with many groups (expert or "
    "pipeline parallel) hangs there most (modelscope/ms-swift#7992).")


def summary(d: Decision) -> str:
    """The rule's sentence, with what the lagging rank was busy with."""
    return d.summary + (" " + d.busy.words() if d.busy is not None else "")


def lead_findings(job: Job, d: Decision) -> list[Finding]:
    """The verdict itself as the first finding (none when nothing failed)."""
    if not d.found:
        return []
    return [Finding(Severity.ERROR, d.kind.value.replace("_", "-"), summary(d),
                    _evidence(job, d.culprits, d.cause, d.busy))]


def busy_findings(d: Decision) -> list[Finding]:
    """A busy line that names no rank, beside a verdict that names none as busy."""
    b = d.unnamed_busy
    return [] if b is None else [Finding(Severity.WARNING, "busy-rank", b.words(), (b.loc,), " ".join(slow_steps(b)))]


def run_findings(job: Job, d: Decision, restarts: Sequence[Restart]) -> list[Finding]:
    """Earlier runs in the same file, torchrun's restarts, and its 'Root Cause' lines."""
    out: list[Finding] = []
    for r in restarts:
        earlier = "; ".join(f"rank {x.who} {x.op_type or 'an unnamed collective'}"
                            + (f" #{x.seq}" if x.seq is not None else "") for x in r.earlier[:4])
        out.append(Finding(Severity.INFO, "earlier-runs",
                           f"{r.file} holds more than one run of the job (a restart appending to the same file): "
                           f"the last run, from line {r.line}, is analysed; the earlier run timed out too "
                           f"({earlier}). Analyse it separately if it matters.",
                           tuple(x.loc for x in r.earlier[:4])))
    relaunches = job.facts.relaunches
    if relaunches:
        out.append(Finding(Severity.INFO, "elastic-restarts",
                           f"torchrun restarted the workers after a failure {len(relaunches)} time(s) (last: "
                           f"{relaunches[-1].text}). Each attempt is a run of its own: if they all fail the same "
                           "way, more restarts will not help. Give one attempt's directory (attempt_N) to analyse "
                           "it alone.", tuple(c.loc for c in relaunches[:8])))
    return out + _root_causes(job, d.primary is not None)


def steps(job: Job, d: Decision) -> tuple[str, ...]:
    """The next steps: the cause's fix first, then the teardown's, then the verdict kind's."""
    if d.cause is not None and d.cause.cause.kind in OWN_STEPS:  # it says why every rank waits: its runs are the steps
        return (*d.cause.cause.fix, *((PROBE,) if d.cause.cause.probe else ()))
    reports = {m.loc for m in job.facts.mismatches}  # TORCH_DISTRIBUTED_DEBUG=DETAIL's, already in the inputs
    # a failed rank that no other rank is shown to wait for: the inputs hold only the failed ones (a one-process log)
    alone = not d.waiting and not d.waited and all(s.rank in d.culprits for s in job.ranks if s.present)
    out = next_steps(d.kind, d.culprits, d.killed, d.unknown, d.dumped, d.waited,
                     slow_steps(d.busy) if d.busy is not None else (), bool(reports), alone)
    out = lone_work(job, d, out)  # the rank waited for, and the work one rank does alone (job/lonework.py)
    out = (*live_steps(job.live, d.culprits), *out)  # what a culprit's live stack waits for (job/live.py)
    out = wait_steps(job, d, out)  # why a member never arrives, the op's wait, the number's proof (job/waitsteps.py)
    if (exited := exit_only_step(job, d.culprits)) is not None:  # exit statuses alone (job/exitonly.py)
        out = (exited, *out)
    if (pipe := pipeline_step(job)) is not None:  # a pipeline's exchange between stages (job/pipeline.py)
        out = (pipe, *out)
    if d.primary is None and job.facts.exit_teardown:  # the warning says when: the step as it applies, not as an if
        out = (EXIT_TEARDOWN_STEP, *(s for s in out if s != EXIT_IF_DONE))
    # A cause read from DETAIL's own report, or from the ranks' own records of one call (job/disagree.py): the calls
    # were compared and found different, which answers the cause's fixes (run with DETAIL; tell different calls from
    # different settings: NCCL's settings do not change the op or size PyTorch records).
    if d.cause is not None and not (d.kind is VerdictKind.COLLECTIVE_MISMATCH and (
            d.cause.loc in reports or d.cause == calls_differ(job))):
        out = (*d.cause.fix, *((PROBE,) if d.cause.cause.probe else ()), *out)
    out = (*frame_steps(job), *out)  # a stack inside a framework's own gather (job/framewaits.py)
    if d.cause is not None and d.cause.cause.kind == "error_unread":  # the line is all that is known: it comes first
        out = (f'Read the error line: "{d.cause.text}" ({d.cause.loc}).', *out)
    return out


def host_findings(job: Job, d: Decision) -> list[Finding]:
    """Every host or scheduler record besides the one the verdict quotes: what it says, and whose it is."""
    out: list[Finding] = []
    for j in job.facts.host_records:
        if d.cause is not None and j.event.loc in d.cause.locs:
            continue
        text = describe(j)
        if not j.ranks and j.by == "" and j.event.source == "slurm" and j.event.pid is None and j.event.host is None:
            text += "; the whole job's record: it names no task or process"
        elif not j.ranks and j.by == "":
            text += "; no rank of these inputs had that PID, GPU or host: another process's record"
        out.append(Finding(Severity.WARNING if j.ranks else Severity.INFO, "host-record", text, (j.event.loc,)))
    return out


def _root_causes(job: Job, hung: bool) -> list[Finding]:
    """torchrun's 'Root Cause' of every node's summary, each quoted: on a hang each is only the first process of its
    node to exit, not necessarily the rank that hung."""
    roots = list({(f.rank, f.host, f.loc.file): f for f in job.facts.elastic if f.root_cause}.values())
    if not roots:
        return []
    nodes = len({(f.host, f.loc.file) for f in roots}) > 1

    def said(f: ElasticFailure) -> str:
        sig = f.signal or (signals.name(-f.exitcode) if f.exitcode is not None and f.exitcode < 0 else None)
        how = f"exitcode {f.exitcode}" + (f", {sig}" if sig else "") if f.exitcode is not None else ""
        where = f" on {f.host}" if f.host and nodes else ""
        return f"rank {f.rank}{where}" + (f" ({how})" if how and nodes else "")

    each = "; ".join(said(f) for f in roots[:8])
    if not hung:
        return [Finding(Severity.INFO, "torchrun-root-cause", f"torchrun's 'Root Cause' {'on each node ' if nodes else ''}"
                        f"names {each}.", tuple(f.loc for f in roots[:8]))]
    what = ("each is only the first process of its node to exit" if nodes else "that is only the first process to exit")
    return [Finding(Severity.INFO, "root-cause-caveat", f"torchrun's 'Root Cause' {'on each node ' if nodes else ''}"
                    f"names {each}: {what}, not necessarily the rank that hung.", tuple(f.loc for f in roots[:8]))]


def _evidence(job: Job, culprits: Sequence[int], cause: Diagnosis | None = None,
              busy: Busy | None = None) -> tuple[Loc, ...]:
    """The cause's lines first (or the slow rank's last line), then the culprits' endings, then the waiters' stuck
    works: at most eight lines."""
    locs = list(cause.locs) if cause is not None else []
    locs += [busy.loc] if busy is not None else []
    named = set(culprits)
    locs += [s.ending.loc for s in job.ranks if s.rank in named and s.ending.loc is not None]
    locs += [s.stuck.loc for s in job.ranks if s.stuck is not None and s.stuck.loc is not None]
    return tuple(dict.fromkeys(locs))[:8]
