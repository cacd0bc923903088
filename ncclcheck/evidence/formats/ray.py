"""Ray Train (2.x, TorchTrainer): which worker process is which global rank.

Ray puts the actor and its PID before each line a worker prints ("(RayTrainWorker pid=5665) ..."), never the rank;
the rank comes from Ray's own lines that pair a PID with it: the controller's table when the worker group starts
("- (ip=192.0.2.2, pid=5494) world_rank=0, local_rank=0, node_rank=0") and each worker's "Setting up process group
for: env:// [rank=0, world_size=4]". A line Ray merged across workers ("... [repeated 4x across cluster]") stands for
several processes and names none. Recorded with tools/launchers/python_launchers.sh (tests/data/launchers/ray/).

A worker whose process died without an error of its own is reported by the controller, not by the worker: Ray's
actor error lists the actor ("class_name: RayTrainWorker", "pid: 19369", ...) and then "The actor is dead because
its worker process has died. Worker exit type: SYSTEM_ERROR" (the worker's connection to Ray ended without the worker
saying it would exit: a kill by signal or a crash). Ray Train groups the workers' errors under "[Rank 1 Error
Snippet]:" (poll.py's get_error_string; "[Rank 0,2 Error Snippet]:" where ranks' errors differ only in numbers).
The dead worker is the one of the PID the actor error names, or else the one rank of the snippet it stands in.

Ray Tune (which runs a Ray Train trainer as a trial) reports a trial that failed in its table of errored trials,
"| TorchTrainer_96bfe_00000 | 1 | /home/ray/ray_results/.../error.txt |" (the trial, its failures, its error file:
ray/tune/progress_reporter.py's failure table), and at the end "Trials did not complete: [...]" (ray/tune/tune.py):
the trial's exception and traceback are in that file, not in the console.

How its console ends (job/ending.py): a worker's "Setting up process group for" line (Ray Train's torch backend)
makes a console Ray Train's, holding its workers' lines behind their actors' tags. At a normal end Ray prints no
line of its own (the controller's state goes to FINISHED without a log line; ray/train/v2/_internal/execution/
controller/controller.py) and merges the workers' repeated lines, so only the program's own last word shows it; a
failure is the workers' error snippets and the actor errors above.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Console, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, PidRank, Said, Who, WorkerDied

# Lines that pair a worker's PID with its global rank.
PID_RANKS = (
    re.compile(r"\(ip=[\d.]+, pid=(?P<pid>\d+)\) world_rank=(?P<rank>\d+), local_rank="),
    re.compile(r"^\(RayTrainWorker pid=(?P<pid>\d+)[^)]*\) Setting up process group for: \S+ \[rank=(?P<rank>\d+), "
               r"world_size="),
)
# The actor and PID of the process a line is from (a worker's, the controller's, any actor's); "merged": a line Ray
# merged across workers, which is no one process's.
PID_TAG = re.compile(r"^\(\w+ pid=(?P<pid>\d+)(?:, ip=[\d.]+)?\)(?=(?P<merged>.*across cluster\]\s*$)?)")
# The actor before a line, as it is taken off (evidence/whose.py): its name may hold dots and brackets
# ("(RayTrainWorker[rank=0] pid=5665)"), and the node's address may follow the PID.
ACTOR = re.compile(r"\([\w.\[\]=]+ pid=\d+(?:, ip=[\d.]+)?\)")
# The controller's report of a worker that died without an error of its own, cut before Ray's list of what may have
# caused it (its words in each release: "Some common causes include", "There are some potential root causes"): a list
# of guesses, not a statement. Its exit type (src/ray/protobuf/common.proto, WorkerExitType): SYSTEM_ERROR, a worker
# that went away unannounced (a crash, a kill by signal: its connection to the raylet ended, "Worker unexpectedly exits
# with a connection error code N"), or NODE_OUT_OF_MEMORY, a worker Ray's own memory monitor killed (its detail says
# so: job/catalogue/host_oom.toml). The other types are no death: USER_ERROR is the actor's own exception (its
# traceback is the reason), INTENDED_USER_EXIT and INTENDED_SYSTEM_EXIT an exit the program or Ray asked for (ray.kill,
# exit_actor, an idle worker), not read here.
DIED = re.compile(r"The actor is dead because its worker process has died\. Worker exit type: "
                  r"(?:SYSTEM_ERROR|NODE_OUT_OF_MEMORY)(?:(?!Some common causes|There are some potential root causes).)*")
SNIPPET = re.compile(r"\[Rank (?P<ranks>[\d,]+) Error Snippet\]:")
# The actor error's own line for its process, a field of its tab-indented list ("\tpid: 19369").
ACTOR_PID = re.compile(r"^(?:\(\w+ pid=\d+[^)]*\) ?)?\s*\tpid: (?P<pid>\d+)\s*$")

# Ray Tune's failure table: a trial, its count of failures and the file its error is in.
ERROR_FILE = re.compile(r"^\|\s*(?P<trial>\w+)\s*\|\s*(?P<n>\d+)\s*\|\s*(?P<file>\S+/error\.txt)\s*\|")
NOT_COMPLETE = re.compile(r"Trials did not complete: \[(?P<trials>[^\][]*)\]")
_ANYONE = Who()
CONSOLE = Console("Ray", "none of its own: trainer.fit() returns with no line of Ray's",
                  "a worker's error snippet ('[Rank N Error Snippet]:'), an actor error ('The actor is dead because "
                  "its worker process has died'), Ray Tune's 'Trials did not complete'",
                  "the rest of the driver's console and its exit status (and the Ray session's logs, "
                  "/tmp/ray/session_latest/logs)")
_SETUP = "Setting up process group for"


class Deaths:
    """One input's Ray lines, read in order: the PIDs paired with ranks, and the worker a "worker process has died"
    line is about."""

    def __init__(self) -> None:
        self._snippet: tuple[int, ...] = ()  # the ranks of the error snippet being read
        self._pid: int | None = None  # the PID of the actor error being read

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        """A PID paired with its rank, or a death (the dead worker's PID, the snippet's ranks, Ray's words)."""
        if "rank=" in text:
            for pattern in PID_RANKS:
                if m := pattern.search(text):
                    paired = PidRank(int(m["pid"]), int(m["rank"]), loc)
                    return (paired, Fact(_ANYONE, "launched", CONSOLE.name, loc)) if _SETUP in text else (paired,)
        if "Error Snippet]" in text and (m := SNIPPET.search(text)):
            self._snippet = tuple(int(r) for r in m["ranks"].split(","))
            self._pid = None
        elif "\tpid: " in text and (m := ACTOR_PID.match(text)):
            self._pid = int(m["pid"])
        elif "worker process has died" in text and (m := DIED.search(text)):
            return (WorkerDied(self._pid, self._snippet, m[0].strip(), loc),)
        elif "error.txt" in text and (m := ERROR_FILE.search(text)):
            return (Fact(_ANYONE, "error_file", f"{m['trial']} {m['file']}", loc),)
        elif "Trials did not complete" in text and (m := NOT_COMPLETE.search(text)):
            return (Fact(_ANYONE, "trials_failed", m["trials"], loc),)
        return ()


_CTL = "(TrainController pid=18992) "
_DIED = ("The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: "
         "Worker unexpectedly exits with a connection error code 2. End of file.")
_OOM_DIED = ("The actor is dead because its worker process has died. Worker exit type: NODE_OUT_OF_MEMORY Worker exit "
             "detail: Task was killed due to the node running low on memory.")
_KILL = "tests/data/launchers/ray/kill/console.log"
_T85 = "tests/data/public_threads/85-ray-30333-multinode-torchtrainer-fails.log"
FORMAT = Format(
    name="Ray",
    # "\tpid: ": the actor error's process, a few lines above its "worker process has died", which no other word
    # brings along deep in a log
    words=("world_rank=", _SETUP, "worker process has died", "Error Snippet]", "\tpid: ",
           "error.txt", "Trials did not complete"),
    make=Deaths,
    patterns=(*PID_RANKS, DIED, SNIPPET, ACTOR_PID, ERROR_FILE, NOT_COMPLETE),
    pid_tags=(PID_TAG,),
    prefixes=(ACTOR,),
    samples=(  # the recording's colour codes left off, as evidence/repair.clean leaves them
        Sample(_CTL + "- (ip=192.0.2.2, pid=19369) world_rank=1, local_rank=1, node_rank=0", f"{_KILL}:29",
               (PidRank(19369, 1, AT),)),
        Sample("(RayTrainWorker pid=19342) Setting up process group for: env:// [rank=0, world_size=4]",
               f"{_KILL}:26", (PidRank(19342, 0, AT), Fact(_ANYONE, "launched", "Ray", AT))),
        Sample(_CTL + _DIED + " Some common causes include: (1) the process was killed by the OOM killer",
               f"{_KILL}:77", (WorkerDied(19369, (1,), _DIED, AT),),
               before=(_CTL + "[Rank 1 Error Snippet]:", _CTL + "\tpid: 19369")),
        Sample(_CTL + _OOM_DIED + " There are some potential root causes.",
               "the GCS's actor death message with the raylet's memory monitor's exit type (src/ray/protobuf/"
               "common.proto, WorkerExitType NODE_OUT_OF_MEMORY) and detail (src/ray/raylet/node_manager.cc)",
               (WorkerDied(None, (), _OOM_DIED, AT),)),
        Sample("| TorchTrainer_96bfe_00000 |            1 | /home/ray/ray_results/TorchTrainer_2022-11-15_19-20-15/"
               "TorchTrainer_96bfe_00000_0_2022-11-15_19-20-16/error.txt |", f"{_T85}:3",
               (Fact(_ANYONE, "error_file", "TorchTrainer_96bfe_00000 /home/ray/ray_results/TorchTrainer_2022-11-15_19-20-15/"
                     "TorchTrainer_96bfe_00000_0_2022-11-15_19-20-16/error.txt", AT),)),
        Sample("2022-11-15 19:26:36,618\tERROR tune.py:773 -- Trials did not complete: [TorchTrainer_96bfe_00000]",
               f"{_T85}:6", (Fact(_ANYONE, "trials_failed", "TorchTrainer_96bfe_00000", AT),)),
    ),
)
