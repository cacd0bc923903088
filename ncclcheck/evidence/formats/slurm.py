"""Slurm's srun and slurmstepd: per-task output files, srun's report of the tasks that ended, and the lines that stop
a whole step.

Recorded with tools/launchers/slurm.sh (tests/data/launchers/slurm/). srun numbers its tasks 0..n-1 (``%t``,
``SLURM_PROCID``), the job's global ranks when one task runs one rank.

How srun's console ends (job/ending.py): ``srun -l`` (``--label``) puts each task's number before its lines ("3: "),
so a console of such lines is srun's, holding its tasks' output. At a normal end srun prints nothing: it exits 0
when every task did. A task's failure it reports as "srun: error: HOST: task N: Exited with exit code C" (or
"Killed", "Out Of Memory"), and a step that Slurm stopped as slurmstepd's "*** STEP J.S ON HOST CANCELLED AT … ***"
(a time limit, scancel, a node's failure). A labelled console that stops with none of these, while its tasks said
nothing of their end, stops mid-run: srun itself was lost (the node of the batch script, a kill), or only part of the
console is here; the job's record (``sacct -j JOBID``, ``scontrol show job``) says how it ended.

A step that never started is srun's own failure, not a task's: "srun: error: Task launch for STEP failed on node
NODE: REASON" (a node's slurmd refused the launch), "Unable to create step for job J: REASON" (the controller refused
the step) and "Application launch failed: REASON", each with Slurm's reason in slurm_strerror's words (the
catalogue's slurm_launch; a credential's reasons in job/statements.toml).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck import signals
from ncclcheck.evidence.formats.source import AT, Behind, Console, Format, LauncherLines, LineFormat, Sample
from ncclcheck.evidence.types import Clue, ElasticFailure, Fact, JobStop, Loc, Said, Who

# slurmstepd's program name before its error (the host's in it from Slurm 21), quoted with the stop's words
_STEPD = r"(?:slurmstepd(?:-[\w.-]+)?: error: )?"
# `--output=DIR/%t.log` (or .out/.err/.txt): a file named by the task number alone.
PATH_RANK = re.compile(r"(?:^|/)(?P<rank>\d{1,7})\.(?:log|out|err|txt)$")
LINES = (
    # Memory enforced by accounting (JobAcctGatherParams=OverMemoryKill, no cgroup): the step's tasks are summed,
    # and every task is killed at once, so no one task is named.
    # "%ps exceeded memory limit (%lu > %lu), being killed" (src/common/slurm_jobacct_gather.c): "StepId=J.S" from
    # 20.02, "Step J.S" and "Job J" before.
    LineFormat("Slurm", "xceeded",
               re.compile(r"Exceeded job memory limit|(?:StepId=|(?:Step|Job) )\S{1,64} exceeded memory limit"),
               stop=True),
    # "slurmstepd: error: *** STEP 11.0 ON vm CANCELLED AT 2026-11-25T15:05:34 DUE TO TIME LIMIT ***"; Slurm 21+
    # names the host in the program's name ("slurmstepd-vm: error:"). Newer Slurm says why (src/slurmd/slurmstepd/
    # req.c: TIME LIMIT, PREEMPTION, NODE FAILURE, JOB REQUEUE, SIGNAL: outside stops) and "DUE TO TASK FAILURE" where
    # srun itself stopped the step after a task failed (--kill-on-bad-exit, SIG_TERM_KILL): that one is no outside
    # stop but the launcher's after the first failure, as its "srun: error: HOST: task N: ..." lines say.
    LineFormat("Slurm", "CANCELLED AT",
               re.compile(r"(?:slurmstepd(?:-[\w.-]+)?: error: )?\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT"
                          r"(?! \S{1,40} DUE TO TASK FAILURE)"),
               stop=True),
    # The controller had marked the job FAILED (its batch script or another step failed) when it had this node's
    # steps ended (SIG_FAILURE, 21.08 on); the node reported an uncorrectable memory error to its steps (SIG_UME,
    # 21.08 to 24.05): slurmstepd's stops with no time (job/statements.toml says what each means).
    LineFormat("Slurm", "FAILED (non-zero",
               re.compile(_STEPD + r"\*\*\* (?:JOB|STEP) \S{1,64} ON \S{1,256} FAILED \(non-zero exit code"), stop=True),
    LineFormat("Slurm", "UNCORRECTABLE MEMORY",
               re.compile(_STEPD + r"\*\*\* (?:JOB|STEP) \S{1,64} ON \S{1,256} UNCORRECTABLE MEMORY ERROR AT"), stop=True),
)

# "srun: error: node3: tasks 8-13,15: Exited with exit code 1" (or "Killed", "Out Of Memory"): the tasks of a step
# are the job's ranks when srun starts one process a rank.
TASKS = re.compile(r"srun: error: (?P<host>\S+): tasks? (?P<tasks>\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*): (?P<what>.+)$")
_CODE = re.compile(r"exit code (?P<code>-?\d+)")
# srun's own failure to start a step, before any task of it ran there: the slurmd of a node refused the launch
# request ("Task launch for %ps failed on node %s: %m", src/api/step_launch.c, the slurmd's reason in
# slurm_strerror's words, src/common/slurm_errno.c: "Job credential expired", "Invalid job credential", "Job
# credential revoked", "Slurmd could not execve job", "Job prolog failed", …), the controller refused the step
# ("Unable to create step for job %u: %m", src/srun/launch.c) or the launch itself failed ("Application launch
# failed: %m", src/srun/launch.c). Each is the launcher's failure: no rank of the step started, and the reason is
# Slurm's (job/statements.toml words the slurmd's reasons; the catalogue's slurm_launch names the failure).
LAUNCH = re.compile(r"(?:Task launch for \S{1,64} failed on node \S{1,256}|Unable to create step for job \d{1,12}"
                    r"|Application launch (?:add )?failed): \S")
_LAUNCH_WORDS = ("Task launch for", "Unable to create step", "Application launch")
# `srun -l`: the task's number before each line (right-aligned to the widest task number).
LABEL = re.compile(r"^ *\d{1,7}: ")
# Task 0's lines always hold it (its label, or a wider task's last digit before it): the reader's word in a head.
_LABEL_WORD = "0: "
CONSOLE = Console("Slurm", "none: srun exits 0 with no line of its own when every task did",
                  "srun's 'srun: error: HOST: task N: Exited with exit code C' (or Killed, Out Of Memory) and "
                  "slurmstepd's '*** STEP J.S ON HOST CANCELLED AT … ***'",
                  "the job's record (sacct -j JOBID, scontrol show job JOBID: its state and exit code) and the rest "
                  "of srun's console")


class Steps:
    """One input's srun and slurmstepd lines (each read on its own)."""

    def __init__(self) -> None:
        self._stops = LauncherLines(LINES)
        self._labels = 0  # task labels read so far (two make srun -l's console, one may be any line's "0: ")

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "srun: error: " in text and (m := TASKS.search(text)):
            return _tasks(m, loc)
        if any(w in text for w in _LAUNCH_WORDS) and (m := LAUNCH.search(text)):
            return (Clue(Who(), "launcher", text[m.start():].strip()[:300], loc),)
        if self._labels < 2 and _LABEL_WORD in text and LABEL.match(text):
            self._labels += 1
            if self._labels == 2:
                return (Fact(Who(), "launched", CONSOLE.name, loc),)
        return self._stops.feed(text, loc)


def _tasks(m: re.Match[str], loc: Loc) -> list[Said]:
    """Each range of tasks srun says ended, as one entry ("tasks 0-30000000" is 45 bytes, not 30 million ranks), and
    Slurm's own word that the step's memory limit killed it (a cause, not a guess)."""
    what = m["what"]
    code = int(c["code"]) if (c := _CODE.search(what)) else None
    sig = "SIGKILL" if ("Killed" in what or "Out Of Memory" in what) else ("SIGTERM" if "Terminated" in what else None)
    if sig is None:  # a native crash, in strsignal's words ("Segmentation fault (core dumped)": src/srun/launch.c)
        sig = signals.BY_WORDS.get(what.removesuffix(" (core dumped)").strip())
    if sig is None and code is None:
        return []
    out: list[Said] = []
    if "Out Of Memory" in what:
        out.append(Clue(Who(int(m["tasks"].split(",")[0].split("-")[0]), None), "launcher", m[0], loc))
    for part in m["tasks"].split(","):
        lo, _, hi = part.partition("-")
        first, last = int(lo), int(hi or lo)
        if last >= first:
            out.append(ElasticFailure(rank=first, local_rank=None, exitcode=code, pid=None, signal=sig, host=m["host"],
                                      time=None, root_cause=False, loc=loc, last_rank=last if last > first else None))
    return out


_OOM = "srun: Exceeded job memory limit"
_CANCELLED = "slurmstepd-vm: error: *** STEP 11.0 ON vm CANCELLED AT 2026-11-25T15:05:34 DUE TO TIME LIMIT ***"
_FAILED = "slurmstepd: error: *** STEP 4242.0 ON gpu07 FAILED (non-zero exit code or other failure mode) ***"
_UME = "slurmstepd: error: *** JOB 4242 ON gpu07 UNCORRECTABLE MEMORY ERROR AT 2026-11-29T03:10:00 ***"
FORMAT = Format(
    name="Slurm",
    words=("srun: error: ", *(f.word for f in LINES), *_LAUNCH_WORDS),
    head_words=(_LABEL_WORD,),  # srun -l's labels, read where a console starts
    make=Steps,
    patterns=(TASKS, *(f.pattern for f in LINES), LAUNCH),
    path_ranks=(PATH_RANK,),
    behind=(
        # srun -l's label, where its word stands
        Behind((_LABEL_WORD,), (LABEL,)),
        # the tasks' words srun says ended
        Behind((TASKS,), (_CODE,)),
    ),
    samples=(
        Sample(_OOM, "tests/data/launchers/slurm/oom/tasks/srun.log:1", (JobStop("Slurm", "Exceeded job memory limit", AT),)),
        Sample("0: " + _CANCELLED, "tests/data/launchers/slurm/timelimit/console.log:17",
               (JobStop("Slurm", _CANCELLED, AT),)),
        Sample("srun: error: vm: tasks 0,2-3: Killed", "tests/data/launchers/slurm/oom/tasks/srun.log:3",
               (ElasticFailure(0, None, None, None, "SIGKILL", "vm", None, False, AT),
                ElasticFailure(2, None, None, None, "SIGKILL", "vm", None, False, AT, last_rank=3))),
        Sample("0: rank 0 step 0 done, loss 1.0000", "tests/data/launchers/slurm/clean/console.log:5",
               (Fact(Who(), "launched", "Slurm", AT),), before=("0: rank 0 of 4 joined (pid 14285)",)),
        Sample("srun: error: Task launch for StepId=36.0 failed on node cn131: Job credential expired",
               "src/api/step_launch.c (error(\"Task launch for %ps failed on node %s: %m\"), the slurmd's "
               "ESLURMD_CREDENTIAL_EXPIRED: src/common/slurm_errno.c); ai4d-iasc/trixie#58 quotes it of Slurm 19",
               (Clue(Who(), "launcher", "Task launch for StepId=36.0 failed on node cn131: Job credential expired",
                     AT),)),
        Sample("srun: error: Unable to create step for job 1: More processors requested than permitted",
               "tests/data/launchers/slurm/no_step/console.log:2 (src/srun/launch.c: error(\"Unable to create step "
               "for job %u: %m\"))",
               (Clue(Who(), "launcher", "Unable to create step for job 1: More processors requested than permitted",
                     AT),)),
        Sample(_FAILED, "src/slurmd/slurmstepd/req.c (SIG_FAILURE, 21.08 to 26.05); "
               "tests/data/stated_formats/launcher_stops.log:3", (JobStop("Slurm", _FAILED, AT),)),
        Sample(_UME, "src/slurmd/slurmstepd/req.c (SIG_UME, 21.08 to 24.05); "
               "tests/data/stated_formats/launcher_stops.log:4", (JobStop("Slurm", _UME, AT),)),
        Sample("srun: error: gpu07: task 1: Segmentation fault (core dumped)",
               "src/srun/launch.c (_task_finish: error(\"%s: %s %s: %s%s\") with strsignal(WTERMSIG) and \" (core "
               "dumped)\")", (ElasticFailure(1, None, None, None, "SIGSEGV", "gpu07", None, False, AT),)),
        Sample("srun: error: vm: task 1: Out Of Memory", "tests/data/launchers/slurm-gpu/oom/console.log:15",
               (Clue(Who(1, None), "launcher", "srun: error: vm: task 1: Out Of Memory", AT),
                ElasticFailure(1, None, None, None, "SIGKILL", "vm", None, False, AT))),
    ),
)
