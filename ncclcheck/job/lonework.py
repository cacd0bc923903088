"""The common reason one rank keeps the others waiting until the timeout: work that rank does alone.

ProcessGroupNCCL's watchdog times a collective out on the ranks that called it once another member has not called it
within the group's timeout (``init_process_group(timeout=...)``: 10 min for NCCL by default, 30 min under the HF
Trainer, DeepSpeed and Lightning; https://pytorch.org/docs/stable/distributed.html#torch.distributed.init_process_group).
Where the timeout's culprit is not in the inputs, or a lagging rank left no line saying what it did, the most common
reason is legitimate work done by one rank while the others went on to the next collective: evaluation or validation
on the main process, a checkpoint saved by rank 0, tests or plots at the end of an epoch, a dataset tokenised before
training. Its fixes are to spread that work over every rank, or to give that phase a longer timeout (the world
group's, or a group created for that phase with its own: ``new_group(timeout=...)``, the same page). Which applies is
told by the rank's own lines (job/slow.py: a busy line and no error is slow; a traceback or a kill is dead, and no
timeout helps), so the step says both and how to tell them apart.

Where the inputs show the phase the others stopped in (a loop's progress at its total, an epoch's end; a program's
line that its training loop ended; an evaluation or checkpoint line no rank's prefix names) before the first timeout
of the same file, the step cites that line.
"""

from __future__ import annotations

from collections.abc import Sequence

from ncclcheck.evidence.formats.busy import busy_phase
from ncclcheck.evidence.types import Fact, Loc
from ncclcheck.job.absent import awaited_step
from ncclcheck.job.findings import SKIPPED_STEP
from ncclcheck.job.hang import find_roots
from ncclcheck.job.model import Job, VerdictKind
from ncclcheck.job.rules import Decision
from ncclcheck.job.slow import first_timeouts, longer_timeout

# The verdicts whose culprit did not show what it did: the timeout's culprit is unknown, absent or only lagging.
_LONE = (VerdictKind.INCOMPLETE, VerdictKind.LAGGING_RANK)
_PHASES = {"eval": "an evaluation", "save": "a checkpoint's saving", "preprocess": "a dataset's preprocessing",
           "compile": "compiling"}


def lone_work_step(job: Job) -> str:
    """The common reason and both of its fixes, in the framework the job's lines show."""
    return ("A rank that stays away from a collective for the whole timeout is most often doing work the others do "
            "not: evaluation or validation, saving a checkpoint, tests or plots at the end of an epoch, or tokenising "
            "a dataset on the main process alone (`if rank == 0:`). If its log ends in such work with no error, it "
            "was slow, not dead: spread that work over every rank (a DistributedSampler over the eval set, the "
            "distributed checkpoint API), or give that phase a longer timeout: "
            f"{longer_timeout(job.facts.framework[0])}. If its log ends in a traceback or a kill, it died, and no "
            "timeout will help.")


def _at_total(f: Fact) -> bool:
    count = f.value.rpartition(": ")[2]
    i, _, n = count.partition("/")
    return i.isdigit() and i == n


def phase_line(job: Job) -> tuple[str, Loc] | None:
    """The last line before a file's first timeout that shows the phase the job was in: a loop at its end, the
    training loop's end, or work (evaluation, saving) that no rank's prefix names."""
    found: list[tuple[str, Loc]] = []
    for f in job.facts.progress:
        if _at_total(f):
            found.append((f"a loop's progress at its total ({f.value.rpartition(': ')[2]}: an epoch or another "
                          "loop had just ended)", f.loc))
    for f in job.facts.work_done:
        if not f.value.isdigit():
            found.append((f"the program's line that its loop ended (\"{f.value}\")", f.loc))
    for _, f in job.facts.busy:
        phase = busy_phase(f.value)
        if f.who.rank is None and phase is not None:
            found.append((f"{_PHASES[phase]} (\"{f.value[:80]}\")", f.loc))
    if not found:
        return None  # no phase line: no walk over every rank for the files' first timeouts
    first = first_timeouts(job)
    before = [(what, loc) for what, loc in found if loc.file in first and loc.line < first[loc.file]]
    return max(before, key=lambda x: x[1].line) if before else None


def awaited_ranks(job: Job, d: Decision) -> list[int]:
    """The one member every waiter waited for, where it left no input and no line says anything of it
    (job/absent.py): not a culprit, but the rank the chain and the steps lead to."""
    return find_roots(job).awaited if d.kind is VerdictKind.INCOMPLETE and not d.culprits else []


def lone_work(job: Job, d: Decision, steps: Sequence[str]) -> tuple[str, ...]:
    """The next steps with the rank the others waited for (where it left no input), the common reason of such a
    wait and the phase the log shows; unchanged where the verdict is not a timeout without a shown culprit, or where
    the culprit's own busy line already gives the fixes (job/slow.py)."""
    if d.primary is None or d.busy is not None or d.cause is not None or d.kind not in _LONE:
        return tuple(steps)
    out = list(steps)
    awaited = awaited_ranks(job, d)
    if awaited:  # the one rank waited for: its log is the first step (it replaces "collect every log" and torchrun's)
        out = [awaited_step(awaited), *(s for s in out[1:] if "--log-dir" not in s)]
    # A lagging rank's own step (job/findings.py) names the reason and its fixes already.
    extra = [lone_work_step(job)] if d.kind is VerdictKind.INCOMPLETE else []
    if (seen := phase_line(job)) is not None:
        extra.append(f"The log shows the phase the others stopped in: {seen[0]} ({seen[1]}), just before the "
                     "timeout: look for what one rank does after it alone.")
    # after the first step, and after the mechanism's own step (a member that never called it) where it is there
    at = out.index(SKIPPED_STEP) + 1 if SKIPPED_STEP in out else min(1, len(out))
    return (*out[:at], *extra, *out[at:])
