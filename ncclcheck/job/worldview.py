"""An NCCL ``invalid argument`` with no reason, raised where PyTorch makes the communicator: the processes' views of
the world disagree.

PyTorch makes a group's NCCL communicator in its NCCLComm (the file PyTorch's check names, "NCCL error in:
.../NCCLUtils.hpp:N" or NCCLUtils.cpp: evidence/formats/nccl.py's ``nccl_comm_check``), with the group's size as the
rank count and the process's rank; without a device_id it does so lazily, at the group's first collective (DDP's
broadcast of the model's state while the model is wrapped, for most programs). ncclCommInitRank refuses with
ncclInvalidArgument a rank outside 0 to the count less one (src/init.cc, every release, its WARN "Invalid rank
requested : R/N" printed only under NCCL_DEBUG=WARN; a config not made with NCCL_CONFIG_INITIALIZER, which PyTorch
always uses, is the only other argument it refuses there). So such an error with no reason printed is the world the
process was given: a rank at or beyond the world size, from a launcher and a framework (or a script) that count the
nodes or processes differently. The fix is job/statements.toml's ``nccl_world_disagrees``, which reads NCCL's own
words for it where they are printed. An invalid argument raised by a collective on a communicator already made (the
argument checks of src/misc/argcheck.cc: a root, a type, a buffer on another device) comes from ProcessGroupNCCL's
own file and is not read here.
"""

from __future__ import annotations

from dataclasses import replace

from ncclcheck.evidence.types import RankError
from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.model import Job, VerdictKind
from ncclcheck.job.reasons import FAILED, ranked
from ncclcheck.job.statements import STATEMENTS, told
from ncclcheck.ranks import rank_phrase

WORLD = next(s for s in STATEMENTS if s.id == "nccl_world_disagrees")
INVALID = "ncclInvalidArgument"
STATED = cause("stated_reason")


def restate(job: Job, kind: VerdictKind, culprits: list[int], summary: str, found: Diagnosis | None
            ) -> tuple[VerdictKind, list[int], str, Diagnosis | None]:
    """The verdict with the world's fix: NCCL's own words for it (a set-up failure whatever the other ranks' logs
    show: NCCL checked this process's own arguments, or the counts the processes gave its bootstrap), else an
    argument NCCL refused, unexplained, as the communicator was made."""
    lines = [x for x in ranked([x for x in job.facts.stated if x.source in FAILED]) if told(x.text) is WORLD]
    if lines and not (found is not None and found.said is WORLD):
        line = lines[0]
        ranks = tuple(sorted({x.rank for x in lines if x.rank is not None}))
        who = f"{rank_phrase(ranks).capitalize()} failed" if ranks else "A process failed"
        return (VerdictKind.SETUP_FAILURE, list(ranks),
                f"{who} making its NCCL communicator, as its own line states: {line.quoted()}. NCCL checked the "
                "rank and rank count the process gave it: no other rank's failure explains it.",
                Diagnosis(STATED, ranks, line.text, line.loc, tuple(dict.fromkeys(x.loc for x in lines))[:8],
                          f"{line.label}: {line.text}; {line.meaning}", line.clock_s, WORLD))
    if found is None or found.cause.kind != "nccl_no_reason" or found.said is not None:
        return kind, culprits, summary, found
    made = {f.loc: f.value for f in job.facts.nccl_comm_checks}
    site = made.get(found.loc)
    error = next((e for e in job.facts.errors if e.loc == found.loc and isinstance(e, RankError)), None)
    if site is None or error is None or error.says is None or error.says.result != INVALID:
        return kind, culprits, summary, found
    where = site.rsplit("/", 1)[-1]
    summary = (f"{summary} PyTorch raised it where it makes the group's NCCL communicator ({where}, at the group's "
               "first collective unless the group was made with a device), and there NCCL refuses only a rank outside "
               "0 to the rank count less one (its WARN, printed under NCCL_DEBUG=WARN: 'Invalid rank requested : "
               "R/N'): the rank and world size this process was given disagree.")
    return kind, culprits, summary, replace(found, said=WORLD)
