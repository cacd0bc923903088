"""A launcher that killed its workers after one of them failed, where nothing else in the inputs says why.

DeepSpeed's launcher (deepspeed/launcher/launch.py) polls its workers; when one exits with a non-zero status it calls
its handler, which logs ``Killing subprocess <pid>`` for every worker it started, then ``<command> exits with return
code = N``; the same handler, called by a signal the launcher itself received, ends with ``Main process received
SIGINT, exiting`` (or SIGTERM) instead (evidence/formats/deepspeed.py reads the first as ``ds_killing`` facts, the
others as a worker's end and a job's stop). So its kill lines with neither after them, and nothing failed in the
inputs, say that a worker failed and not which or how. A worker that printed no error of its own died of a signal,
most often the kernel's OOM killer's SIGKILL: ``rank_failed_first`` with no culprit, the cause ``host_kill``, whose
steps are the host's kernel log and memory.

A launcher's report that a worker's process died with no error of its own and no line naming its rank (Ray's actor
error for an actor no rank table pairs with its PID: an RL framework's or a serving engine's own actors) is the same
death, of a process the inputs do not rank: the cause is ``host_kill`` too, never a code error to fix.
"""

from __future__ import annotations

from dataclasses import replace

from ncclcheck.evidence.types import ErrorKind
from ncclcheck.job.causes import HOST_KILL, Diagnosis
from ncclcheck.job.model import Job, VerdictKind
from ncclcheck.job.rules import Decision
from ncclcheck.job.statements import told


def killed_workers(job: Job, d: Decision) -> Decision:
    """The decision for a launcher's kill of its workers with nothing else said (the module's docstring), else ``d``."""
    if d.cause is not None or d.kind not in (VerdictKind.NO_FAILURE, VerdictKind.INCOMPLETE) or d.primary is not None:
        return d
    kills = job.facts.launcher_kills
    if not kills or job.facts.errors:
        return d
    first = min(kills, key=lambda f: (f.loc.file, f.loc.line))
    pids = ", ".join(dict.fromkeys(f.value for f in kills))
    detail = (f"DeepSpeed's launcher killed its workers (PIDs {pids}) after one of them exited with a non-zero status; "
              "no worker's error is in these inputs")
    summary = (f"DeepSpeed's launcher killed its workers ({first.loc}: `Killing subprocess PID` for each, PIDs {pids}): "
               "its handler does so when one of them exited with a non-zero status, and no line says the launcher "
               "itself was stopped from outside (`Main process received SIGINT/SIGTERM`). Which worker, and its "
               "status, the launcher's next line says (`... exits with return code = N`), which these inputs do not "
               "hold; no worker's error is in them either. A worker that died with no error of its own was killed by "
               "a signal, most often the kernel's OOM killer (host memory: a checkpoint's save or load, CPU offload); "
               "else its error is in a log these inputs lack (each rank's log under --enable_each_rank_log).")
    locs = tuple(dict.fromkeys(f.loc for f in kills))[:8]
    return replace(d, kind=VerdictKind.RANK_FAILED_FIRST, summary=summary, culprits=(), waiting=(),
                   cause=Diagnosis(HOST_KILL, (), detail, first.loc, locs, detail))


def unranked_death(job: Job, d: Decision) -> Decision:
    """A process no line ranks that died with no error of its own, and no other failure (the module's docstring):
    ``host_kill``, naming no culprit; else ``d``."""
    if d.cause is not None or d.kind is not VerdictKind.RANK_FAILED_FIRST or d.culprits or d.primary is not None:
        return d
    unnamed = job.facts.unnamed_failures
    if not unnamed or any(e.kind is not ErrorKind.KILLED for e in unnamed):
        return d
    first = unnamed[0]
    detail = f"a process of the job died with no error of its own ({first.message})"
    # the launcher's words may name where to look (Ray's worker lost its raylet: job/statements.toml's ray_worker_lost)
    return replace(d, cause=Diagnosis(HOST_KILL, (), detail, first.loc, tuple(e.loc for e in unnamed)[:8], detail,
                                      said=told(first.message)))
