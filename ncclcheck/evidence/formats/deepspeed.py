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
"""

from __future__ import annotations

import re

from ncclcheck import signals
from ncclcheck.evidence.formats.lines import LineFormat, TaskEnd
from ncclcheck.evidence.linear import then


def _exit(m: re.Match[str]) -> TaskEnd:
    code = int(m[1])
    return TaskEnd(None, exitcode=code, signal=signals.of_exitcode(code))


LINES = (
    LineFormat("DeepSpeed", "exits with return code",
               re.compile(then(r"sigkill_handler\]", r"exits with return code = (-?\d+)", lazy=False)),
               "[2026-11-25 15:28:08,874] [ERROR] [launch.py:259:sigkill_handler] ['python3', '-u', 'worker.py', "
               "'--local_rank=3', 'kill', '1'] exits with return code = -9", read=_exit, rankless=True),
)

SPAWNED = re.compile(r"process (\d+) spawned with command: \[.*?'--local_rank=(\d+)'")
NODE = re.compile(r"nnodes=\d+, num_local_procs=(\d+), node_rank=(\d+)")
MAPPING = re.compile(r"global_rank_mapping=\w*\(?(?:<class 'list'>, )?\{(.*)\}")
_NODE_RANKS = re.compile(r"'[^']*': \[([\d, ]*)\]")
OWN_LOGS = re.compile(r"--enable_each_rank_log=(\S+)")
WORDS = ("spawned with command", "num_local_procs=", "global_rank_mapping=", "enable_each_rank_log=")


class Spawns:
    """One input's DeepSpeed launcher lines, read in order: each spawned worker's PID and global rank.

    A console that pdsh gathered from several nodes interleaves their launchers' lines, each behind its node's
    label: a node's own line ("node_rank=") is kept by the label it stands behind."""

    def __init__(self) -> None:
        self._ranks: list[list[int]] = []  # each node's global ranks, in node_rank order
        self._node: dict[str, tuple[int, int]] = {}  # label -> (num_local_procs, node_rank)
        self.own_logs = False  # the launcher wrote each worker's output to a file of its own

    def feed(self, text: str) -> tuple[int, int] | None:
        """(PID, global rank) of a worker this line says the launcher spawned; None for any other line."""
        label = text.split("[", 1)[0]
        if "spawned with command" in text and (m := SPAWNED.search(text)):
            local = self._node.get(label)
            if local is None or local[1] >= len(self._ranks):
                return None
            size, node = local
            ranks = [r for r in self._ranks[node] if r % size == int(m[2])]
            return (int(m[1]), ranks[0]) if len(ranks) == 1 else None
        if "num_local_procs=" in text and (m := NODE.search(text)):
            self._node[label] = (int(m[1]), int(m[2]))
        elif "global_rank_mapping=" in text and (m := MAPPING.search(text)):
            self._ranks = [[int(x) for x in g.split(",") if x.strip()] for g in _NODE_RANKS.findall(m[1])]
        elif "enable_each_rank_log=" in text and (m := OWN_LOGS.search(text)):
            self.own_logs = m[1] != "None"
        return None
