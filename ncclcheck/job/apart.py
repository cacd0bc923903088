"""Ranks whose own progress counters stop apart, with no failure line: a stall where the ranks ran different numbers
of steps, or one rank was held before its next step.

Ranks of a data-parallel job run in step: every step issues the same collectives on every rank (DDP's gradient
all_reduce, FSDP's gathers), so no rank gets more than a step ahead of another while the job runs. Each rank's last
count of a loop it prints (formats/progress.py: a count its line names the rank of, DistDGL's ``Part r | Epoch e |
Step s``) is where it stood when its log stops. Where those counts differ and no line says the job failed or ended,
the ranks stopped apart: a rank whose loop holds fewer batches left it while the others went on into collectives it
never issued (uneven data: a validation set consumed to its end, an IterableDataset sharded by rank, a split of
one's own), or one rank was held before its next step (its data loader's or sampler's worker processes, work of its
own). Both stall the others in their next collective, which waits for the full timeout or, with a process killed
first, prints nothing. Which rank is at fault no line states: the verdict names none (incomplete evidence) and says
what decides it. job/slow.py reads a count that rose after a timeout (a busy rank); job/uneven.py totals that
differ in a loop that prints them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ncclcheck.evidence.types import Loc
from ncclcheck.findings import Finding, Severity
from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.model import Job, VerdictKind
from ncclcheck.job.rules import Decision

# The catalogue's cause for ranks that stop apart (job/catalogue/steps_apart.toml): its fix is the steps.
STEPS_APART = cause("steps_apart")


@dataclass(frozen=True)
class Stop:
    """A rank's last count of one loop."""

    rank: int
    count: tuple[int, ...]
    loc: Loc

    def words(self) -> str:
        at = str(self.count[0]) if len(self.count) == 1 else f"({', '.join(str(n) for n in self.count)})"
        return f"rank {self.rank} at {at} ({self.loc})"


def _count(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.split("."))


def stops(job: Job) -> dict[str, dict[int, Stop]]:
    """loop -> rank -> the rank's last count there (the highest where several inputs hold it)."""
    out: dict[str, dict[int, Stop]] = {}
    for f in job.facts.counts:
        loop, rank, count = f.value.rsplit(": ", 2)
        r, c = int(rank.removeprefix("rank ")), _count(count)
        seen = out.setdefault(loop, {})
        if r not in seen or seen[r].count < c:
            seen[r] = Stop(r, c, f.loc)
    return out


def apart(job: Job) -> dict[str, list[Stop]]:
    """The loops whose ranks' last counts differ, each rank's stop, the furthest first."""
    return {loop: sorted(ranks.values(), key=lambda x: (x.count, -x.rank), reverse=True)
            for loop, ranks in stops(job).items() if len(ranks) > 1 and len({x.count for x in ranks.values()}) > 1}


def _said(loops: dict[str, list[Stop]]) -> str:
    return "; ".join(f"'{loop}': {', '.join(x.words() for x in xs)}" for loop, xs in loops.items())


def stopped_apart(job: Job, d: Decision) -> Decision:
    """``no_failure`` where the ranks' own counters stop apart and no line shows the job's end becomes
    ``incomplete_evidence``, naming no culprit."""
    if d.kind is not VerdictKind.NO_FAILURE or d.cause is not None or job.live:
        return d
    if job.facts.work_done or job.facts.elastic or job.facts.relaunches:
        return d
    loops = apart(job)
    if not loops:
        return d
    summary = (f"The ranks' own progress lines stop at different counts, and no line says the job failed or ended: "
               f"{_said(loops)}. Ranks that run in step (every step's collectives wait for every rank) stop apart where "
               "they ran different numbers of steps, or where one was held before its next step: the job stalled "
               "there (or its log was cut). No line says which rank is at fault.")
    locs = tuple(x.loc for xs in loops.values() for x in xs)
    detail = f"the ranks' own counters stop apart: {_said(loops)}"
    return replace(d, kind=VerdictKind.INCOMPLETE, summary=summary,
                   cause=Diagnosis(STEPS_APART, (), detail, locs[0], locs[:8], detail))


def apart_findings(job: Job, d: Decision) -> list[Finding]:
    """The loops whose ranks stop apart, where the inputs stop with no rank seen stuck or failed (a job that ended
    may have counted its ranks' own loops differently): what decides which rank held the others."""
    if d.kind is not VerdictKind.INCOMPLETE or d.primary is not None or d.culprits:
        return []
    loops = apart(job)
    if not loops:
        return []
    return [Finding(Severity.WARNING, "counters-apart",
                    f"The ranks' own counters stop apart: {_said(loops)}. A rank ahead waits in a collective that a "
                    "rank behind has not issued: the rank behind ran out of steps (uneven data) or was held before "
                    "its next step.",
                    tuple(x.loc for xs in loops.values() for x in xs)[:8],
                    # the verdict's cause says it already, with the same steps: the finding keeps the evidence
                    None if d.cause is not None and d.cause.cause is STEPS_APART else " ".join(STEPS_APART.fix))]
