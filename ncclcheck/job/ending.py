"""When analyze-log may say ``no_failure``: only where the inputs show how the job ended (issue 41 §4).

Nothing failed in the lines read is no proof that nothing failed: a console or a log that stops mid-run with no
error and no ending was cut, by a node or container that went away with its processes (power, a kernel crash, a
kill of the whole process tree, a fenced host) or by a user who pasted only part of it. The lines that show an
ending, by the source that prints them:

* torchrun's agent: on a worker's failure its failure report and exit lines, the closing SIGTERMs to the others, a
  signal it got itself (multiprocessing/api.py, errors/, agent/server/api.py); on success, at LOGLEVEL=INFO only,
  "worker group successfully finished", "Local worker group finished (…SUCCEEDED)" and "Done waiting for other
  agents" (evidence/formats/torchrun.py's ``agent_done``). At the default log level a clean end prints nothing of the
  agent's, so there only its workers' own lines show it;
* a worker's own end: its error, its exit, a program's word that its work is over ("rank 3 done", "Rank 3
  completed", the HF Trainer's "Training completed", Lightning's "`Trainer.fit` stopped": formats/world.py,
  lightning.py's ``work_done``), NCCL's "Destroy COMPLETE" (ncclCommDestroy: a communicator torn down at the end,
  formats/ncclsetup.py's ``nccl_end``).

A launcher's console holds both, and each launcher says in its own module under evidence/formats/ which lines mark
its console, which show a normal end and which a failure (its ``CONSOLE``; formats.CONSOLES): torchrun's
``[defaultN]:`` tags (FileScan.tagged), srun -l's task labels, mpirun --tag-output's rank tags, DeepSpeed's "process
… spawned with command", Accelerate's state, Lightning's "GLOBAL_RANK: …, MEMBER:", Ray Train's "Setting up process
group for" (each a ``launched`` fact); DeepSpeed's "Process … exits successfully" at a normal end (a
``launcher_done`` fact). srun, mpirun, Ray, and torchrun at its default log level print nothing at a normal end, so
there only the workers' own last words show it. A console that holds its workers' lines and none of these, while
nothing failed anywhere in the inputs, stops mid-run: the job was cut off there, or only part of the console is here.
That is ``incomplete_evidence`` (the cause ``console_cut``), which names what is missing: the rest of the console and
what says how the job ended under that launcher (its ``bring``: the launcher's exit status, the scheduler's record,
a run with LOGLEVEL=INFO), the other nodes' consoles, the host's kernel log. (Where another agent reports a failure,
a torchrun console is a lost node: job/lostnode.py.) Per-rank files of torchrun's ``--log-dir`` without a console:
job/origins.py's ``unended``; inputs that stop at NCCL's set-up: job/stall.py, read first.

Inputs with no launcher's console of workers still show a job that ran: torchrun's OMP_NUM_THREADS banner as it
starts its workers (formats/torchrun.py's ``launch_banner``), a loop's tqdm bar or printed count (formats/progress.py).
Where they stop after these with no ending and no failure (``stalled``, the cause ``console_stalled``), a job that
hangs prints nothing until a timeout fires, so the last such line says where it stopped: at launch (the banner and
nothing after: rendezvous, or init_process_group waiting for a world the launch did not start), at the first step (a
count at 0: the first collective), or mid-run; and what to take while it hangs (every rank's stacks, the flight
recorder). A loop at its total is a finished loop, and a paste with none of these (a configuration dump) no sign of a
run: both stay ``no_failure``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace

from ncclcheck.evidence.formats import CONSOLES
from ncclcheck.evidence.formats.source import Console
from ncclcheck.evidence.formats.torchrun import CONSOLE as TORCHRUN
from ncclcheck.evidence.types import Fact, FileScan, Loc
from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.lostnode import END_FACTS, said_end
from ncclcheck.job.model import ConsoleInput, Job, VerdictKind
from ncclcheck.job.phrases import cap
from ncclcheck.job.rules import Decision
from ncclcheck.ranks import rank_phrase

CUT = cause("console_cut")
# the agent's word that its workers succeeded; another launcher's (launcher_done); a communicator torn down
_ENDS = ("agent_done", "launcher_done", "nccl_end")
# the facts that show an input's end: these, and a console's agent's failure or its workers' word that the work is
# over (job/lostnode.py); job/facts.py keeps them by input
END_KEYS = (*END_FACTS, *_ENDS)
# the fact by which a launcher other than torchrun marks its console (job/facts.py keeps it by input)
LAUNCHED = "launched"


def read_consoles(scans: Sequence[FileScan], launched: Mapping[int, Sequence[Fact]],
                  ends: AbstractSet[int]) -> tuple[tuple[ConsoleInput, ...], bool]:
    """The inputs that are a launcher's console of its workers, each with whether it shows an ending, and whether any
    input does. ``launched``: each input's ``launched`` facts; ``ends``: the inputs that hold a fact of END_KEYS."""
    out = []
    for i, s in enumerate(scans):
        if (c := _console(s, launched.get(i, ()))) is not None:
            out.append(ConsoleInput(s.file, s.lines, c, i in ends or said_end(s), s.ranks_seen, s.local_ranks))
    return tuple(out), any(i in ends or said_end(s) for i, s in enumerate(scans))


def consoles(inputs: Sequence[ConsoleInput]) -> tuple[str, ...]:
    """The inputs that are torchrun's console of a node: its workers' lines behind their ``[defaultN]:`` tags."""
    return tuple(c.file for c in inputs if c.console is TORCHRUN)


def _console(s: FileScan, launched: Sequence[Fact]) -> Console | None:
    """The launcher whose console this input is (its workers' lines behind its marks), if any."""
    if s.path_rank is not None or s.dump is not None:
        return None
    if s.tagged and (s.ranks_seen or s.local_ranks):
        return TORCHRUN
    return next((CONSOLES[f.value] for f in launched if f.value in CONSOLES), None)


def cut_off(job: Job, d: Decision) -> Decision:
    """``no_failure`` where a launcher's console of its workers stops with no ending becomes ``incomplete_evidence``."""
    if d.kind is not VerdictKind.NO_FAILURE or d.cause is not None or job.live:
        return d
    if job.facts.work_done or job.facts.elastic or job.facts.relaunches:
        return d
    cut = [c for c in job.facts.launched if not c.ended]
    if not cut:
        return d
    launcher = cut[0].console
    last = Loc(cut[0].file, cut[0].lines)
    ranks = sorted({r for c in cut for r in c.ranks_seen})
    local = sorted({r for c in cut for r in c.local_ranks})
    whose = f" of {rank_phrase(ranks)}" if ranks else f" of local {rank_phrase(local)}" if local else ""
    which = (f"the {launcher.name} console{whose} ({last.file}" + (f" and {len(cut) - 1} more" if len(cut) > 1 else "")
             + ")")
    detail = f"{which} stops mid-run with no ending and no failure (its last line is {last})"
    summary = (f"{cap(which)} stops with no ending and no failure: its last line ({last}) is its workers' own, and no "
               f"line says how the job ended: no failure of {launcher.name}'s ({launcher.failed}), no worker's "
               "error, no word of a worker that the work was done, no NCCL communicator destroyed, and no line of "
               f"{launcher.name}'s at a normal end ({launcher.done}). A node or container lost with its processes "
               "(power, a crash, a kill of the whole process tree) stops its console just so, and so does a console "
               "pasted only in part. These inputs cannot tell a finished job from a cut one: "
               f"{launcher.bring} would.")
    return replace(d, kind=VerdictKind.INCOMPLETE, summary=summary,
                   cause=Diagnosis(CUT, tuple(ranks), detail, last, tuple(Loc(c.file, c.lines) for c in cut), detail))


STALLED = cause("console_stalled")
# the facts that show a job launched or running, by the formats that read them: torchrun's banner as it starts its
# workers (formats/torchrun.py), a loop's bar or printed count with its total, a bar with none (formats/progress.py)
RAN = ("launch_banner", "progress", "progress_open")
_WHERE = {"launch": "at launch: the launcher's banner as it starts its workers, and no line of theirs after it (they "
                    "wait at rendezvous or in init_process_group)",
          "first": "at the first step: a loop's count at 0 (its first step, and the first collectives in it, never "
                   "completed)",
          "started": "after launch: the workers' own lines follow the launcher's banner, with no count of a loop and "
                     "no ending",
          "running": "mid-run: a loop's count part of the way"}
# lines of the banner's own after its warning (its closing row of stars, a wrapped half): more is the workers'
_BANNER_TAIL = 2


def _stage(f: Fact, lines: int) -> str | None:
    """Where a job whose last sign of progress is ``f`` (in an input of ``lines`` lines) stopped; None for a loop at
    its total (it finished)."""
    if f.key == "launch_banner":
        return "launch" if lines - f.loc.line <= _BANNER_TAIL else "started"
    i, _, n = f.value.rpartition(": ")[2].partition("/")
    if n and int(i) >= int(n):
        return None
    return "first" if int(i) == 0 else "running"


def stalled(job: Job, d: Decision) -> Decision:
    """``no_failure`` where the inputs show a job launched or running (a launcher's banner, a loop's bar or count)
    and then stop with no ending and no failure becomes ``incomplete_evidence``: a stall whose evidence is short."""
    if d.kind is not VerdictKind.NO_FAILURE or d.cause is not None or job.live:
        return d
    if job.facts.work_done or job.facts.elastic or job.facts.relaunches or job.facts.ended:
        return d
    ran = [r for r in job.facts.ran if not r.dump]
    if not ran:
        return d
    sign = max(ran, key=lambda r: (r.fact.loc.line, r.fact.key != "launch_banner"))
    last = sign.fact
    stage = _stage(last, sign.lines)
    if stage is None:
        return d
    where = _WHERE[stage]
    loop, _, count = last.value.rpartition(": ")
    shown = "torchrun's banner" if last.key == "launch_banner" else f"the count {count} of the loop '{loop}'"
    detail = f"the job stops {where.partition(':')[0]} with no ending: its last sign of progress is {shown} " \
             f"({last.loc})"
    summary = (f"These inputs show the job launched and then stop with no ending and no failure, {where}: its last "
               f"sign of progress is {shown} ({last.loc}, the input ends at line {sign.lines}). No line says it failed, "
               "exited or finished, so it hung there, or the console was copied only that far. A stall that "
               "prints nothing is told apart by the stacks of every rank while it hangs and by the flight recorder.")
    return replace(d, kind=VerdictKind.INCOMPLETE, summary=summary,
                   cause=Diagnosis(STALLED, (), detail, last.loc, job.facts.ran_ends, detail))
