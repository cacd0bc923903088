"""A rank the others waited for that left no input: unknown, not guilty, and the place to look.

A collective completes only once every member of its group has called it (ProcessGroupNCCL's watchdog times out
the work of each rank that did; the members that never called it print nothing of it). Where every rank of the
inputs waits in one collective and every rank but one is accounted for, that one is the member they waited for.
What it did instead is in its own lines alone: it may have died (an exception, a kill), been busy with work the others
do not do, or run other code. Without a line about it, naming it the culprit would be a guess: it is unknown, and its
log is where to look. It is named only where a line of the inputs says something of it:

* PyTorch's desync report (TORCH_NCCL_DESYNC_DEBUG, ProcessGroupNCCL's ``retrieveDesyncReport``) names the ranks that
  did not join or finish the collective;
* ``monitored_barrier`` names the ranks that never reached it (torch/csrc/distributed/c10d/ProcessGroupGloo.cpp);
* a line that names no rank says a process was busy while the others waited (a progress bar drawn by the main
  process; job/slow.py), or a loop's count that names no rank rose after the others timed out (a live process at
  work; job/slow.py): the rank that waited nowhere is the one that printed it.

Lines the rank wrote itself, a launcher's line about its exit and a flight-recorder dump give it an ending of its own
(job/build.py), so it is never "without input"; the catalogue's causes that name a rank (the flight recorder's
analysis, NCCL's RAS report) restate the verdict with it (job/rules.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from ncclcheck.job.model import Job
from ncclcheck.job.slow import busy_rank, progressed
from ncclcheck.ranks import rank_phrase


def said_of(job: Job, rank: int) -> bool:
    """Whether a line of the inputs says something of ``rank``, the one member without input the others waited for."""
    return rank in job.facts.reported_late or busy_rank(job.facts.busy, job.facts.framework, None, None) is not None \
        or progressed(job) is not None


def awaited_words(job: Job, awaited: Sequence[int]) -> str:
    """The verdict's words for the one member every waiter waited for, when no line says anything of it."""
    who = rank_phrase(awaited)
    they = "they" if sum(s.stuck is not None for s in job.ranks) > 1 else "it"
    return (f"every other rank is accounted for, so the one {they} waited for is {who}, and {who} left nothing in these "
            "inputs (no log, no dump, no line about it). It is unknown, not guilty: whether it died, was still busy "
            f"with work the others do not do, or ran other code is in its own log. Bring {who}'s log.")


def awaited_step(ranks: Sequence[int]) -> str:
    """The first next step: the log of the rank the others waited for."""
    who = rank_phrase(ranks)
    return (f"Bring {who}'s log (its console or stderr: `torchrun --log-dir DIR --redirects 3 --tee 3` keeps one file "
            f"per rank) or its flight-recorder dump: every other rank waited for {who}, and only its own lines say "
            "whether it died (a traceback, a kill), was slow with work of its own, or issued other collectives.")
