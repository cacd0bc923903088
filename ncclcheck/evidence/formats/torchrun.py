"""torchrun's elastic agent (torch.distributed.run): its line about each worker that exited.

The agent logs "failed (exitcode: -9) local_rank: 3 (pid: 812917) of binary: /usr/bin/python3" when a worker of
its group exits non-zero, in each form its logger has had (``ERROR:torch.distributed.elastic.multiprocessing.api:``,
``[time] torch.distributed.elastic…: [ERROR]``, glog's ``E1122 … 812900 api.py:…]``, where the thread id is the
agent's PID). It names the local rank only: on one node that is the rank; the failure table of the same run (read in
evidence/formats/elastic.py) names the global rank and is preferred. Behind a collector's node label (pdsh running torchrun
on each node) it is that node's local rank.

When every worker of its group succeeded, the agent says so at INFO (LOGLEVEL=INFO; nothing at the default WARNING):
"[default] worker group successfully finished. Waiting 300 seconds for other agents to finish." (agent/server/api.py,
SimpleElasticAgent._invoke_run on WorkerState.SUCCEEDED), then "Local worker group finished (WorkerState.SUCCEEDED)"
and "Done waiting for other agents. Elapsed: … seconds" (_exit_barrier, reached on success only): an ``agent_done``
fact, the job's clean end on that node (job/ending.py).

As it starts more than one worker on a node with OMP_NUM_THREADS unset, the launcher warns once, before its agent
starts them: "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system
being overloaded, …" between two rows of stars (torch/distributed/run.py, config_from_args, every release since 1.9;
torch.distributed.launch printed the same words before it). Its logger's prefix changed (``WARNING:
torch.distributed.run:``, ``[time] torch.distributed.run: [WARNING]``, glog's ``W0322 … run.py:N]``); the words did
not. The line shows a job launched: a ``launch_banner`` fact (job/ending.py's ``stalled``: a console whose last
sign of progress is this banner, with no ending and no failure, stopped at rendezvous or the workers' init).

When a worker fails, the agent stops the others and logs "Sending process <pid> closing signal SIGTERM" for each
(multiprocessing/api.py, PContext._close: the worker's PID and the signal's name; SIGINT where it passes Ctrl-C on).
evidence/formats/errors.py keeps the line as a launcher clue; its PID and signal are read here once, into the clue's
``closing`` field (:func:`closing`), which job/build.py joins to the ranks' PIDs.

The agent's own exceptions end its process, not a worker's: its rendezvous handler's (rendezvous/api.py: RendezvousError
and its kinds), the failure table's ChildFailedError (multiprocessing/errors/__init__.py) and the SignalException it
raises on a signal it received (multiprocessing/api.py, _terminate_process_handler). Where a kept error or clue names
one, it is read here once (:func:`agent_error`) into what the line states (``says.agent``), which job/causes.py matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.collectors import LABEL, NODE_LABEL, node_label
from ncclcheck.evidence.formats.source import AT, Behind, Console, Format, Sample
from ncclcheck.evidence.types import AgentExit, Closing, Fact, Loc, Said, Who

# Its tags of its workers' lines (``--tee`` / ``--redirects``, elastic/multiprocessing's default line prefix):
# "[rank3]:" with the global rank (torch 2.2 on), also with its "[" lost at the start of a paste, or "[rank3[]:"
# mangled; "[ rank3]:" or "rank3]:" at the start, after a space or after ":)|>" (a run of spaces is its own boundary).
RANK_TAG = re.compile(r"(?:\[\s*|(?<![^\s:)|>]))rank(?P<rank>\d+)\[?\]:")
# "[default3]:": the role's name and the rank on its node (every release; before "[rank3]:" where a line has both).
LOCAL_TAG = re.compile(r"\[[A-Za-z_]+?(?P<rank>\d+)\]:")
# Either tag, as it is taken off a line's start (evidence/whose.py).
TAG = re.compile(r"\[[A-Za-z_]*\d+\]:")
# A rank tag further along a line, right before the c10 header it belongs to (a record glued after a progress bar).
GLUED_TAG = re.compile(r"\[rank(?P<rank>\d+)\]:(?=\[[EWIF]\d)")
# A line its global rank's tag starts (or a paste that lost the tag's "["): a new record, never a wrap's continuation.
TAGGED_LINE = re.compile(r"(?:\[|^)rank\d+\[?\]:")
AGENT_FAILED = re.compile(
    r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<local>\d+) \(pid: (?P<pid>\d+)\) of binary")
GLOG_PID = re.compile(r"^[EWIF]\d{4} [\d:.]+ +(?P<pid>\d+) ")
AGENT_DONE = re.compile(r"(?P<done>worker group successfully finished|Local worker group finished \((?:WorkerState\.)?"
                        r"SUCCEEDED\)|Done waiting for other agents)")
CLOSING = re.compile(r"Sending process (?P<pid>\d+) closing signal (?P<signal>SIG\w+)")
# `--log-dir DIR`: the agent redirects each worker's output to files of its own (torch.distributed.elastic's log
# specs) under DIR/<run id>/attempt_<N>/<local rank>/: stdout.log, stderr.log and its error.json (the reply file).
PATH_RANK = re.compile(r"attempt_\d+[/\\](?P<rank>\d+)[/\\](?:stdout|stderr|error)\.(?:log|txt|json)")
AGENT_ERROR = re.compile(r"Rendezvous(?:Closed|Timeout|Connection|State|GracefulExit)?Error|ChildFailedError"
                         r"|SignalException")
_AGENT_WORDS = ("Rendezvous", "ChildFailedError", "SignalException")
# the launcher's warning as it starts more than one worker per node (run.py config_from_args)
OMP_BANNER = re.compile(r"Setting OMP_NUM_THREADS environment variable for each process")
_BANNER_WORD = "Setting OMP_NUM_THREADS"
_DONE_WORDS = ("successfully finished", "Local worker group finished", "Done waiting for other agents")
_ANYONE = Who()
# Its console is the one whose lines carry its workers' local tags ("[default3]:", FileScan.tagged).
CONSOLE = Console("torchrun", "at LOGLEVEL=INFO only, 'worker group successfully finished', 'Local worker group "
                  "finished (WorkerState.SUCCEEDED)' and 'Done waiting for other agents'; nothing at the default level",
                  "'failed (exitcode: N) local_rank: …', its failure table, its closing SIGTERMs, 'Received N death "
                  "signal'", "the rest of this console and the other nodes' consoles (or a run with LOGLEVEL=INFO, "
                  "whose agent says it finished)")


def closing(text: str) -> Closing | None:
    """The worker a launcher clue says the agent stopped, and the signal it sent, or None."""
    m = CLOSING.search(text) if "closing signal" in text else None
    return Closing(int(m["pid"]), m["signal"]) if m else None


def agent_error(text: str) -> str | None:
    """The first of the agent's own exceptions a kept line names (:data:`AGENT_ERROR`), or None."""
    m = AGENT_ERROR.search(text) if any(map(text.__contains__, _AGENT_WORDS)) else None
    return m[0] if m else None


class Agent:
    """One input's agent lines (each read on its own)."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        """The worker an agent's line says exited, and which agent said so (its label and glog PID); the agent's word
        that its workers succeeded."""
        if _BANNER_WORD in text and OMP_BANNER.search(text):
            return (Fact(_ANYONE, "launch_banner", "torchrun", loc),)
        if not (m := AGENT_FAILED.search(text)):
            done = AGENT_DONE.search(text) if any(w in text for w in _DONE_WORDS) else None
            return (Fact(_ANYONE, "agent_done", done["done"], loc),) if done else ()
        label = LABEL.match(text)
        agent = GLOG_PID.match(text[label.end():] if label else text)
        said_by = f"{label[0] if label else ''}{agent['pid'] if agent else ''}"
        return (AgentExit(int(m["local"]), int(m["code"]), int(m["pid"]), loc, node_label(text), said_by),)


_ONE = ("E1125 15:15:55.506000 1671 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -9) "
        "local_rank: 1 (pid: 1764) of binary: /work/wt/venv-launchers/bin/python3")
_NODE = ("node0: E1125 15:07:23.561000 25208 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: "
         "-9) local_rank: 1 (pid: 25402) of binary: .venv/bin/python")
FORMAT = Format(
    name="torchrun",
    words=("of binary", _BANNER_WORD, *_DONE_WORDS),
    make=Agent,
    patterns=(AGENT_FAILED, AGENT_DONE, OMP_BANNER),
    path_ranks=(PATH_RANK,),
    rank_tags=(RANK_TAG,),
    prefixes=(TAG,),
    headers=(TAGGED_LINE,),
    behind=(
        # the agent's glog header after its label, on its failed line
        Behind((AGENT_FAILED,), (GLOG_PID,)),
    ),
    # collectors' labels (pdsh, ``srun -l``, kubectl; formats/collectors.py), taken off any line, and a node's
    # label before torchrun's ``[default0]:``; its local tag and a glued rank tag, read by evidence/whose.py
    shapes=(LABEL, NODE_LABEL, LOCAL_TAG, GLUED_TAG),
    samples=(
        Sample(_ONE, "tests/data/launchers/accelerate/kill/console.log:45", (AgentExit(1, -9, 1764, AT, None, "1671"),)),
        Sample(_NODE, "tests/data/launchers/pdsh/kill/console.log:59",
               (AgentExit(1, -9, 25402, AT, "node0: ", "node0: 25208"),)),
        Sample("I0227 16:33:56.670000 20640 site-packages/torch/distributed/elastic/agent/server/api.py:946] Done waiting "
               "for other agents. Elapsed: 0.0005085468292236328 seconds",
               "torch/distributed/elastic/agent/server/api.py (_exit_barrier, LOGLEVEL=INFO)",
               (Fact(_ANYONE, "agent_done", "Done waiting for other agents", AT),)),
        Sample("W1129 01:49:27.596000 487 torch/distributed/run.py:874] Setting OMP_NUM_THREADS environment variable "
               "for each process to be 1 in default, to avoid your system being overloaded, please further tune the "
               "variable for optimal performance in your application as needed.",
               "tests/data/gloo_mechanisms/stall_launch/console.log:3",
               (Fact(_ANYONE, "launch_banner", "torchrun", AT),)),
        Sample("WARNING:torch.distributed.run:Setting OMP_NUM_THREADS environment variable for each process to be 1 in "
               "default, to avoid your system being overloaded, please further tune the variable for optimal "
               "performance in your application as needed.",
               "torch/distributed/run.py config_from_args (1.9-2.1: the logging module's default prefix)",
               (Fact(_ANYONE, "launch_banner", "torchrun", AT),)),
    ),
)
