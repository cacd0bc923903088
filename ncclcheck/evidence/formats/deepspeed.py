"""DeepSpeed's launcher (`deepspeed`, deepspeed.launcher.launch): which worker is which rank, and its report of a
worker that failed.

When a worker exits non-zero, the launcher kills the others and logs "[launch.py:259:sigkill_handler] [<command>]
exits with return code = <code>". The code is the failed worker's; the command is not: it is the last command the
launcher built when it started the workers (the loop variable of its spawn loop, launch.py), so its `--local_rank`
is always the highest local rank, whichever worker failed. The line says that a worker of this node failed and how,
never which. Recorded with tools/launchers/python_launchers.sh (tests/data/launchers/deepspeed/: rank 1 killed by
SIGKILL, the line names --local_rank=3).

Which workers a node's launcher started is stated, though: it logs every node's global ranks
("global_rank_mapping=defaultdict(<class 'list'>, {'node0': [0, 1], 'node1': [2, 3]})", in the order of
node_rank), its own node ("nnodes=2, num_local_procs=2, node_rank=1"), and each worker it spawned with its PID and
command ("process 8884 spawned with command: [..., '--local_rank=1', ...]"). The worker's global rank is the one
of its node's ranks whose remainder by num_local_procs is that --local_rank (launch.py sets LOCAL_RANK so). Unless
the launcher wrote each rank's output to a file of its own (the runner's "--enable_each_rank_log=DIR"), the workers
inherit its stdout and stderr: its console carries every worker's lines, tagged or not, so a worker it started that
wrote nothing there wrote nothing at all.

Its failure handler (launch.py, sigkill_handler) first logs "Killing subprocess <pid>" for each worker it started
(printed without the logger's head in its first releases, early 2021), then, where a worker's non-zero exit called
it, the "exits with return code" line above (a CalledProcessError before DeepSpeed #1540, late 2021), and where the
launcher itself was signalled "Main process received SIGINT, exiting" (or SIGTERM): a stop from outside, read as a
job's stop. The "Killing subprocess" lines are ``ds_killing`` facts: with neither line after them (a paste that kept
only them), a worker failed and nothing says which or how (job/launcherkill.py).

How its console ends (job/ending.py): a console that holds the launcher's "nnodes=…, num_local_procs=…, node_rank=…"
line is its own, with its workers' output. At a normal end it logs "[launch.py:…:main] Process <pid> exits successfully."
for each worker (``launcher_done``); at a failure, the "exits with return code" line above, after which it kills the
others. A console that stops with neither, while its workers said nothing of their end, stops mid-run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck import signals
from ncclcheck.evidence.formats.source import AT, Behind, Console, Format, LauncherLines, LineFormat, Sample, ended
from ncclcheck.evidence.linear import then
from ncclcheck.evidence.types import Fact, JobStop, Loc, Said, Who, WorkerEnd, WorkerStarted


def _exit(m: re.Match[str]) -> WorkerEnd:
    code = int(m["code"])
    return ended("DeepSpeed", None, exitcode=code, signal=signals.of_exitcode(code))


LINES = (
    LineFormat("DeepSpeed", "exits with return code",
               re.compile(then(r"sigkill_handler\]", r"exits with return code = (?P<code>-?\d+)", lazy=False)),
               read=_exit, rankless=True),
    # The same line as pasted without the logger's head, or the tail of a long command that wrapped (its head on an
    # earlier line): the words are launch.py's own, printed nowhere else.
    LineFormat("DeepSpeed", "exits with return code", re.compile(r"exits with return code = (?P<code>-?\d+)"),
               read=_exit, rankless=True),
    # The launcher itself was signalled (Ctrl-C, a scheduler's or a user's SIGTERM): it kills its workers and exits 1.
    LineFormat("DeepSpeed", "Main process received SIG",
               re.compile(r"Main process received SIG(?:INT|TERM), exiting"), stop=True),
)
KILLING = re.compile(r"Killing subprocess (?P<pid>\d+)")
KILLING_FACT = "ds_killing"

SPAWNED = re.compile(r"process (?P<pid>\d+) spawned with command: \[.*?'--local_rank=(?P<local>\d+)'")
NODE = re.compile(r"nnodes=\d+, num_local_procs=(?P<procs>\d+), node_rank=(?P<node>\d+)")
MAPPING = re.compile(r"global_rank_mapping=\w*\(?(?:<class 'list'>, )?\{(?P<nodes>.*)\}")
_NODE_RANKS = re.compile(r"'[^']*': \[(?P<ranks>[\d, ]*)\]")
OWN_LOGS = re.compile(r"--enable_each_rank_log=(?P<dir>\S+)")
SUCCESS = re.compile(r"Process (?P<pid>\d+) exits successfully")
CONSOLE = Console("DeepSpeed", "'Process <pid> exits successfully.' for each worker",
                  "'exits with return code = N' (then it kills the other workers)",
                  "the rest of the launcher's console (its 'exits successfully' or 'exits with return code' lines) "
                  "and its exit status")
_ANYONE = Who()


class Spawns:
    """One input's DeepSpeed launcher lines, read in order: each spawned worker's PID and global rank, and the
    launcher's report of a worker's end.

    A console that pdsh gathered from several nodes interleaves their launchers' lines, each behind its node's
    label: a node's own line ("node_rank=") is kept by the label it stands behind."""

    def __init__(self) -> None:
        self._ranks: list[list[int]] = []  # each node's global ranks, in node_rank order
        self._node: dict[str, tuple[int, int]] = {}  # label -> (num_local_procs, node_rank)
        self._own_logs = False  # the launcher wrote each worker's output to a file of its own
        self._exits = LauncherLines(LINES)

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        """The worker this line says the launcher spawned, or the end of one; nothing for any other line."""
        label = text.split("[", 1)[0]
        if "spawned with command" in text and (m := SPAWNED.search(text)):
            local = self._node.get(label)
            if local is None or local[1] >= len(self._ranks):
                return ()
            size, node = local
            ranks = [r for r in self._ranks[node] if r % size == int(m["local"])]
            return (WorkerStarted(int(m["pid"]), ranks[0], loc, self._own_logs),) if len(ranks) == 1 else ()
        if "num_local_procs=" in text and (m := NODE.search(text)):
            self._node[label] = (int(m["procs"]), int(m["node"]))
            return (Fact(_ANYONE, "launched", CONSOLE.name, loc),)
        elif "global_rank_mapping=" in text and (m := MAPPING.search(text)):
            self._ranks = [[int(x) for x in n["ranks"].split(",") if x.strip()] for n in _NODE_RANKS.finditer(m["nodes"])]
        elif "enable_each_rank_log=" in text and (m := OWN_LOGS.search(text)):
            self._own_logs = m["dir"] != "None"
        elif "exits successfully" in text and (m := SUCCESS.search(text)):
            return (Fact(_ANYONE, "launcher_done", m[0], loc),)
        elif "Killing subprocess" in text and (m := KILLING.search(text)):
            return (Fact(_ANYONE, KILLING_FACT, m["pid"], loc),)
        else:
            return self._exits.feed(text, loc)
        return ()


_LAUNCH = "[2026-11-25 15:27:48,{}] [INFO] [launch.py:{}:main] "
_MAPPING = _LAUNCH.format("056", 169) + "global_rank_mapping=defaultdict(<class 'list'>, {'localhost': [0, 1, 2, 3]})"
_NODE = _LAUNCH.format("056", 158) + "nnodes=1, num_local_procs=4, node_rank=0"
_SPAWNED = _LAUNCH.format("085", 245) + ("process 8884 spawned with command: ['/work/wt/venv-launchers/bin/python3', "
                                         "'-u', 'worker.py', '--local_rank=1', 'kill', '1']")
_EXITS = ("[2026-11-25 15:28:08,874] [ERROR] [launch.py:259:sigkill_handler] ['/work/wt/venv-launchers/bin/python3', "
          "'-u', 'worker.py', '--local_rank=3', 'kill', '1'] exits with return code = -9")
_KILL = "tests/data/launchers/deepspeed/kill/console.log"
FORMAT = Format(
    name="DeepSpeed",
    words=("exits with return code", "spawned with command", "num_local_procs=", "global_rank_mapping=",
           "enable_each_rank_log=", "exits successfully", "Killing subprocess", "Main process received SIG"),
    make=Spawns,
    patterns=(*(f.pattern for f in LINES), SPAWNED, NODE, MAPPING, OWN_LOGS, SUCCESS, KILLING),
    behind=(
        # the nodes' ranks of the runner's global_rank_mapping
        Behind((MAPPING,), (_NODE_RANKS,)),
    ),
    samples=(
        Sample(_SPAWNED, f"{_KILL}:11", (Fact(_ANYONE, "launched", "DeepSpeed", AT), WorkerStarted(8884, 1, AT)),
               before=(_NODE, _MAPPING)),
        # the runner's command with the own-logs flag set (runner.py appends f"--enable_each_rank_log={DIR}"): a
        # worker's lines are in its own file, not here
        Sample(_SPAWNED, f"{_KILL}:3 (its flag 'None' there; runner.py main's 'cmd = ' with a directory)",
               (Fact(_ANYONE, "launched", "DeepSpeed", AT), WorkerStarted(8884, 1, AT, own_log=True)),
               before=("[2026-11-25 15:27:42,761] [INFO] [runner.py:618:main] cmd = /work/wt/venv-launchers/bin/python3 "
                       "-u -m deepspeed.launcher.launch --world_info=eyJsb2NhbGhvc3QiOiBbMCwgMSwgMiwgM119 "
                       "--master_addr=127.0.0.1 --master_port=30003 --enable_each_rank_log=/tmp/ds_logs "
                       "--log_level=info worker.py kill 1", _NODE, _MAPPING)),
        Sample(_NODE, f"{_KILL}:6", (Fact(_ANYONE, "launched", "DeepSpeed", AT),)),
        Sample("[2026-11-25 15:26:48,177] [INFO] [launch.py:285:main] Process 7166 exits successfully.",
               "tests/data/launchers/deepspeed/clean/console.log:46",
               (Fact(_ANYONE, "launcher_done", "Process 7166 exits successfully", AT),)),
        Sample("[2026-11-25 15:28:08,465] [INFO] [launch.py:253:sigkill_handler] Killing subprocess 8883",
               f"{_KILL}:52", (Fact(_ANYONE, KILLING_FACT, "8883", AT),)),
        Sample("Killing subprocess 4077", "deepspeed/launcher/launch.py (sigkill_handler's print, its first releases)",
               (Fact(_ANYONE, KILLING_FACT, "4077", AT),)),
        Sample("[2024-05-02 10:11:12,345] [INFO] [launch.py:325:sigkill_handler] Main process received SIGTERM, exiting",
               "deepspeed/launcher/launch.py (sigkill_handler, the launcher itself signalled)",
               (JobStop("DeepSpeed", "Main process received SIGTERM, exiting", AT),)),
        Sample(_EXITS, f"{_KILL}:67",
               (WorkerEnd("DeepSpeed", None, _EXITS[_EXITS.index("sigkill"):], AT, exitcode=-9, signal="SIGKILL"),)),
    ),
)
