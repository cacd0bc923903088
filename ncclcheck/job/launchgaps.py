"""What a launcher's own lines say is missing from the inputs (issue 41 §4): members it counted that no input shows
started, and a failure whose error it wrote to a file.

* **Lightning's members** (``initializing ddp: GLOBAL_RANK: k, MEMBER: m/N``, evidence/formats/lightning.py): each
  process prints it as it joins the process group, so the members of the stated world that printed none never got
  there. Lightning starts the processes of its own node only (its subprocess launcher); on a cluster every node's
  must be started there, and under Slurm that is ``srun`` (Lightning's SLURMEnvironment: "Parallel jobs (multi-GPU,
  multi-node) in SLURM are launched by prepending srun in front of the Python command", and not doing so leaves the
  processes hanging). The job's verdict stays as the rules decided it (``incomplete_evidence``: the ranks without
  input); this says which start was missing and how to make it.
* **Ray Tune's error file** (``| <trial> | <failures> | .../error.txt |`` and ``Trials did not complete``,
  evidence/formats/ray.py): the trial failed and its exception is in that file. Where nothing else in the inputs
  states a failure the verdict is ``incomplete_evidence`` with the cause ``error_file``: bring it.
"""

from __future__ import annotations

from dataclasses import replace

from ncclcheck.evidence.types import Fact
from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.model import Job, VerdictKind
from ncclcheck.job.rules import Decision
from ncclcheck.ranks import rank_phrase

ERROR_FILE = cause("error_file")
SLURM = ("https://lightning.ai/docs/fabric/latest/api/generated/"
         "lightning.fabric.plugins.environments.slurm.SLURMEnvironment.html")


def _unstarted(job: Job, d: Decision) -> tuple[list[int], list[int], Fact] | None:
    """The members Lightning's start lines show joining, those of its stated world they do not, and the first line."""
    starts = job.facts.lightning_starts
    if d.kind is not VerdictKind.INCOMPLETE or not starts or not job.world:
        return None
    started = sorted(s.rank for s in job.ranks if s.present and s.rank < job.world)
    missing = [r for r in range(job.world) if r not in set(started)]
    return (started, missing, starts[0]) if started and missing else None


def unstarted_members(job: Job, d: Decision) -> Decision:
    """The decision with Lightning's members that never started said, where its start lines show some only."""
    if (gap := _unstarted(job, d)) is None:
        return d
    started, missing, start = gap
    return replace(d, summary=(
        f"{d.summary} Lightning's start lines (`GLOBAL_RANK: k, MEMBER: m/{job.world}`, {start.loc}) show "
        f"{rank_phrase(started)} joining and nothing of {rank_phrase(missing)}: their processes never started, or "
        "their output is on another node that these inputs do not hold. Lightning starts the processes of its own "
        "node only: each other node's must be started there (under Slurm by `srun`)."))


def member_steps(job: Job, d: Decision) -> tuple[str, ...]:
    """How to start every member, where Lightning's start lines show some only (said by :func:`unstarted_members`)."""
    if _unstarted(job, d) is None:
        return ()
    return (
        "Start the script on every node, one process per GPU: under Slurm with `srun` (`srun python train.py` in "
        "the batch script, `#SBATCH --ntasks-per-node` equal to the Trainer's `devices`, `--nodes` to its "
        "`num_nodes`): Lightning's SLURMEnvironment takes each process's rank from its Slurm task, and a script run "
        f"with plain `python` starts one node's processes while the others wait ({SLURM}). Elsewhere run the same "
        "command on every node with MASTER_ADDR, MASTER_PORT and NODE_RANK set, or under torchrun.",
    )


def error_file(job: Job, d: Decision) -> Decision:
    """Ray Tune's trial that failed with its error in a file, where nothing else states a failure."""
    if d.kind is not VerdictKind.NO_FAILURE or d.cause is not None:
        return d
    files, failed = job.facts.error_files, job.facts.trials_failed
    if not files:
        return d
    trial, _, path = files[0].value.partition(" ")
    more = f" ({len(files) - 1} more trial{'s' if len(files) > 2 else ''} in the table)" if len(files) > 1 else ""
    end = f"; Tune ended with \"Trials did not complete\" ({failed[0].loc})" if failed else ""
    detail = f"trial {trial} failed and its error is in {path}"
    summary = (f"Ray Tune reports that trial {trial} failed ({files[0].loc}){more}{end}: the exception that ended it, "
               f"with its traceback, is in its error file, {path}, which these inputs do not hold. Nothing else here "
               "says why; bring that file (it is on the node that ran the trial) or the whole console.")
    locs = tuple(dict.fromkeys(f.loc for f in (*files, *failed)))
    return replace(d, kind=VerdictKind.INCOMPLETE, summary=summary,
                   cause=Diagnosis(ERROR_FILE, (), detail, files[0].loc, locs, detail))
