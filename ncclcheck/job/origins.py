"""Who stopped a rank: the launcher after a failure, someone outside the job, or Ctrl-C (issue 41 §4).

A rank that dies of a signal did not fail of its own accord; the question is who sent the signal, and the launcher
says. torchrun's agent (torch 2.13, torch/distributed/elastic) sends SIGTERM to the workers still running only
after one of them failed, logging "Sending process <pid> closing signal SIGTERM" for each
(multiprocessing/api.py: SubprocessContext._poll closes the context on the first failure, PContext._close logs
the line), and passes on a signal it received itself ("Received <n> death signal, shutting down workers",
agent/server/api.py: run). So:

* a worker that died of SIGTERM when the agent's closing lines are in its console and none names its PID, while the
  agent itself received no signal, was stopped from outside the job (signals.ORIGIN): it is the first to go, and the
  agent's SIGTERMs to the others follow it;
* a rank whose error is ``KeyboardInterrupt`` got SIGINT: Ctrl-C, or the agent passing it on; it was stopped, it did
  not fail.

The signal facts themselves (names, numbers, who sends which) are in ncclcheck/signals.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet

from ncclcheck import signals
from ncclcheck.evidence import formats
from ncclcheck.evidence.types import ElasticFailure, Loc, RankError
from ncclcheck.job.attempts import dir_attempt
from ncclcheck.job.model import Ending, EndKind, Job, VerdictKind
from ncclcheck.ranks import rank_phrase


def agents(closed: Mapping[int, tuple[str, Loc]]) -> set[str]:
    """The consoles that hold the agent's closing lines (``closed``: the PIDs it sent a closing signal to)."""
    return {loc.file for _, loc in closed.values()}


def outside_stop(failures: Iterable[ElasticFailure], closed: Mapping[int, tuple[str, Loc]], agents: AbstractSet[str],
                 got: AbstractSet[str]) -> Ending | None:
    """A worker's death by SIGTERM that its agent did not send (see the module's docstring), as its ending.

    ``agents``: the consoles of the closing lines (:func:`agents`); ``got``: the consoles whose agent received a
    signal itself (:func:`received`). Every rank asks, so both are built once by the caller, not here (issue 42)."""
    for f in failures:
        if f.signal != "SIGTERM" or f.pid is None or f.pid in closed:
            continue
        if f.loc.file in agents and f.loc.file not in got:
            code = f" (exit code {f.exitcode})" if f.exitcode is not None else ""
            return Ending(EndKind.KILLED, f"stopped by SIGTERM{code} from outside the job: torchrun's agent sent its "
                          "PID no closing signal (it sends SIGTERM only to the workers still running after one "
                          f"failed); {signals.ORIGIN['SIGTERM']}", f.loc, "SIGTERM")
    return None


def interrupted(err: RankError) -> Ending | None:
    """A rank whose error is Python's KeyboardInterrupt got SIGINT: it was stopped, it did not fail."""
    if signals.INTERRUPTED not in err.message:
        return None
    return Ending(EndKind.ABORTED, f"interrupted by SIGINT ({signals.INTERRUPTED}): {signals.ORIGIN['SIGINT']}",
                  err.loc, "SIGINT")


def is_interrupted(e: Ending) -> bool:
    return e.kind is EndKind.ABORTED and e.detail.startswith("interrupted by SIGINT")


def interrupted_job(job: Job) -> tuple[VerdictKind, list[int], list[int], str] | None:
    """Every rank with input was interrupted by SIGINT and none failed or waited: the job was stopped by Ctrl-C."""
    present = [s for s in job.ranks if s.present]
    if not present or not all(is_interrupted(s.ending) for s in present):
        return None
    ranks = [s.rank for s in present]
    at = present[0].ending.loc
    return (VerdictKind.LAUNCHER_FAILURE, [], [],
            f"The job was interrupted: {rank_phrase(ranks)} ended by SIGINT ({signals.INTERRUPTED}"
            f"{f', {at}' if at is not None else ''}), {signals.ORIGIN['SIGINT']}. No rank failed and none was "
            "waiting in a collective; if it was stopped because it hung, the lines before the interrupt say where.")


def received(clues: Sequence[tuple[str, Loc]]) -> list[str]:
    """The files whose agent says it received a signal itself (``Received 15 death signal``)."""
    return [loc.file for text, loc in clues if signals.death_signal(text) is not None]


def unended(job: Job) -> tuple[VerdictKind, list[int], list[int], str] | None:
    """Per-rank files alone (torchrun's ``--log-dir``, or a launcher's own per-rank output: srun's ``--output=%t``,
    mpirun's ``--output-filename``, each named in its module under evidence/formats/) that all stop without an
    ending: how the job ended is not in them. A worker stopped by a signal (the agent's SIGTERM after another's
    failure, SIGKILL, a scheduler's stop) writes nothing more, so its files stop mid-run exactly as a finished rank's
    would without a last line; the launcher's console says which it was (its closing-signal lines and failure
    report). Never ``no_failure``: nothing here says the work was done."""
    present = [s for s in job.ranks if s.present]
    if not present or job.facts.work_done or job.facts.elastic or job.facts.relaunches:
        return None
    if job.facts.consoles:  # torchrun's console is given: it says how the job ended, or that it was cut (ending.py)
        return None
    if any(s.ending.kind is not EndKind.SILENT or not s.files or
           any(dir_attempt(f) is None and formats.path_rank(f) is None for f in s.files) for s in present):
        return None
    ranks = [s.rank for s in present]
    torchrun = all(dir_attempt(f) is not None for s in present for f in s.files)
    kind = "torchrun's --log-dir, attempt_N/<rank>/" if torchrun else "the launcher's per-rank output files"
    return (VerdictKind.INCOMPLETE, [], [],
            f"The files of {rank_phrase(ranks)} ({kind}) stop without an ending: no "
            "error, no exit, no line that says the work was done. A worker stopped by a signal (the launcher's "
            "SIGTERM after another worker failed, a kill, a scheduler's stop) writes nothing more, so they stop as "
            f"these do; how the job ended is in {'torchrun' if torchrun else 'the launcher'}'s own console (its "
            f"closing-signal lines and failure report){'' if torchrun else ' and its exit status'}, which these "
            "inputs do not hold. Give it too.")
