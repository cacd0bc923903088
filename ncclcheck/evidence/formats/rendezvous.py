"""torchrun's elastic agent in its rendezvous: the agent's own failure there, not its workers'.

The agent (torch/distributed/elastic/agent/server/api.py, SimpleElasticAgent) logs "[role] Rendezvous'ing worker
group" and calls the rendezvous handler (_initialize_workers), at start and again on every restart after "[role]
Worker group FAILED. N/M attempts left; will restart worker group" and "[role] Stopping worker group"
(_invoke_run, _restart_workers). A rendezvous that completes is followed by "Rendezvous complete for workers" (older
releases) and "[role] Starting worker group". One that raises propagates out of the agent's run() (only
RendezvousGracefulExitError is caught there, logged as "Rendezvous gracefully exited") through launch_agent
(torch/distributed/launcher/api.py) and torchrun's main (torch/distributed/run.py): the agent process's own
traceback, whose first frame is torchrun's console script (``File ".../bin/torchrun", line 8, in <module>``) or
``python -m torch.distributed.run``'s. The exception it ends in is the rendezvous handler's: api.py's RendezvousError
family (RendezvousClosedError, RendezvousTimeoutError, RendezvousConnectionError, RendezvousStateError), read by the
catalogue's causes where its line is in the inputs (evidence/formats/errors.py reads the names).

Without the agent's log lines (LOGLEVEL below INFO, a collector that kept only the traceback) the traceback tells the
two apart by itself: launch_agent calls ``result = agent.run()`` and only after it returns raises ChildFailedError for
the workers that failed (``raise ChildFailedError(``); anything else propagating out of its ``agent.run()`` line (or
out of its own set-up: the rendezvous handler, the agent) is the agent failing itself: its rendezvous
(``_invoke_run`` -> ``_initialize_workers`` -> ``_rendezvous`` -> the handler's ``next_rendezvous``), the start or
watch of its workers, or a signal it received (SignalException, which the agent logs first as "Received SIGTERM
death signal"). So a traceback whose launch_agent frame's code line is not ChildFailedError's, in an input whose agent
logged no death signal, is read as the agent's own failure, even where it is cut before its exception's line.

A traceback of the agent's that starts after "Rendezvous'ing worker group" and before the rendezvous completed is
read here as the agent's failure in its rendezvous even where the traceback is cut before its exception: its workers
were stopped by then, so no worker's error is what ended the job. A traceback of the agent's after its workers ran
(ChildFailedError: its workers failed) is not one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who

RENDEZVOUSING = re.compile(r"\] Rendezvous'ing worker group")
RESTART = re.compile(r"attempts left; will restart worker group")
# The rendezvous completed (older releases print its result; every release then starts the workers).
COMPLETED = re.compile(r"Rendezvous complete for workers|\] Starting worker group")
# The agent's own traceback: torchrun's console script, or `python -m torch.distributed.run`'s module.
AGENT_FRAME = re.compile(r"File \"[^\"]{0,400}(?:/bin/torchrun|torch/distributed/run\.py)\", line \d+")
# launch_agent's frame (torch/distributed/launcher/api.py): the line under it says which call raised.
LAUNCH_AGENT = re.compile(r"File \"[^\"]{0,400}torch/distributed/launcher/api\.py\", line \d+, in launch_agent")
_DEATH = re.compile(r"Received \S+ death signal|SignalException")
_WORDS = ("Rendezvous'ing worker group", "attempts left; will restart worker group", "Rendezvous complete for workers",
          "] Starting worker group", "/bin/torchrun", "torch/distributed/run.py", "in launch_agent", "agent.run()",
          "death signal", "SignalException")
# The clue's words where the agent's traceback runs out of launch_agent's agent.run() (the catalogue's rdzv_failed).
AGENT_RAN = ("the agent's own traceback runs out of launch_agent's agent.run(): the agent itself failed (its "
             "rendezvous or its workers' start), not a worker (theirs is ChildFailedError)")


def said(restart: bool) -> str:
    """The clue's words (the catalogue's rdzv_failed matches them)."""
    after = " after it restarted its worker group" if restart else ""
    return (f"the agent's own traceback (torchrun's main) follows its 'Rendezvous'ing worker group' line{after}, and "
            "no rendezvous completed")


class Agent:
    """One input's agent lines about its rendezvous, in order."""

    def __init__(self) -> None:
        self._restart = False  # the agent said it will restart its worker group
        self._open: bool | None = None  # a rendezvous began: whether it was a restart's
        self._said = False
        self._launch = False  # the line before was launch_agent's frame: this one is its code
        self._signal = False  # the agent logged a death signal: a traceback through agent.run() is that signal's

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if self._launch:
            self._launch = False
            code = 'File "' not in text  # a traceback printed without its code lines says nothing here
            if code and "ChildFailedError" not in text and not self._signal and not self._said:
                self._said = True
                return (Clue(Who(), "launcher", AGENT_RAN, loc),)
        if "in launch_agent" in text and LAUNCH_AGENT.search(text):
            self._launch = True
        elif ("death signal" in text or "SignalException" in text) and _DEATH.search(text):
            self._signal = True
        if "attempts left" in text and RESTART.search(text):
            self._restart = True
        elif "Rendezvous'ing" in text and RENDEZVOUSING.search(text):
            self._open = self._restart
        elif ("Rendezvous complete" in text or "Starting worker group" in text) and COMPLETED.search(text):
            self._open, self._restart = None, False
        elif self._open is not None and not self._said and AGENT_FRAME.search(text):
            self._said = True
            return (Clue(Who(), "launcher", said(self._open), loc),)
        return ()


_HERE = "tests/data/public_threads/156-pytorch-147064-elastic-agent-restart-rendezvous-closed.log"
_LOST = "tests/data/launchers/torchrun/rdzv_store_lost/node0.console.log"
_TERM = "tests/data/launchers/torchrun/agent_term/console.log"
_API = "torch/distributed/elastic/agent/server/api.py:"
_AGENT_RUN = "    result = agent.run()"
FORMAT = Format(
    name="torchrun rendezvous",
    words=_WORDS,
    make=Agent,
    patterns=(RENDEZVOUSING, RESTART, COMPLETED, AGENT_FRAME, LAUNCH_AGENT, _DEATH),
    samples=(
        Sample('  File "/usr/local/google/home/kiuk/.pyenv/versions/venv311/bin/torchrun", line 8, in <module>',
               f"{_HERE}:6 (torch/distributed/elastic/agent/server/api.py: _restart_workers, _initialize_workers)",
               (Clue(Who(), "launcher", said(True), AT),),
               before=("I0213 12:07:20.086000 870572 torch/distributed/elastic/agent/server/api.py:889] [default] "
                       "Worker group FAILED. 3/3 attempts left; will restart worker group",
                       "I0213 12:07:20.087000 870572 torch/distributed/elastic/agent/server/api.py:677] [default] "
                       "Rendezvous'ing worker group")),
        # launch_agent's frame, then its code line: the agent's own failure, whatever its exception
        Sample(_AGENT_RUN, "tests/data/failures/rdzv_timeout/console.log:16",
               (Clue(Who(), "launcher", AGENT_RAN, AT),),
               before=('  File "/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/launcher/api.py", '
                       'line 308, in launch_agent',)),
        # a rendezvous that completed (both releases' lines): the agent's traceback after it is not its rendezvous'
        Sample('  File "/work/main/.venv/bin/torchrun", line 6, in <module>', f"{_LOST}:55", (),
               before=(f"I1128 05:34:12.388000 25877 {_API}707] [default] Rendezvous'ing worker group",
                       f"I1128 05:34:15.642000 25877 {_API}553] [default] Rendezvous complete for workers. Result:",
                       f"I1128 05:34:15.642000 25877 {_API}715] [default] Starting worker group")),
        # the agent logged its death signal: the traceback through agent.run() is that signal's (SignalException)
        Sample(_AGENT_RUN, f"{_TERM}:33", (),
               before=(f"W1127 15:04:59.651000 922 {_API}753] Received 15 death signal, shutting down workers",
                       '  File "/work/main/.venv/lib/python3.11/site-packages/torch/distributed/launcher/api.py", '
                       'line 374, in launch_agent')),
    ),
)
