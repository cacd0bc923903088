"""The launchers that start workers with subprocess and report a failed one as Python's CalledProcessError:
torch.distributed.launch before torchrun, and ``accelerate launch`` (its own launcher, not torchrun's agent).

The report is Python's own text, "CalledProcessError: Command '[…, '--local_rank=1', …]' died with
<Signals.SIGKILL: 9>." or "… returned non-zero exit status 1.": where the command holds the worker's
``--local_rank`` (torch.distributed.launch passes it), that is the worker that failed, on its node.

How an Accelerate job's console ends (job/ending.py): Accelerate's state, as a program prints it at its start
("Distributed environment: DistributedType.MULTI_GPU  Backend: nccl", accelerate/state.py's ``__repr__``), makes the
console its job's. ``accelerate launch --multi_gpu`` runs torchrun's agent in its own process
(torch.distributed.run's ``elastic_launch``), which prints nothing at a normal end at the default log level; a
failure it reports as torchrun does (its "failed (exitcode: …)" line and failure table), its own launcher as the
CalledProcessError above. So only the program's own last word shows a normal end.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck import signals
from ncclcheck.evidence.formats.source import AT, Behind, Console, Format, Sample
from ncclcheck.evidence.types import AgentExit, Fact, Loc, Said, Who, WorkerEnd

CALLED_PROCESS = re.compile(
    r"CalledProcessError: Command '(?P<command>(?:(?!CalledProcessError: ).)*)' "
    r"(?:died with <Signals\.SIG\w+: (?P<signal>\d+)>|returned non-zero exit status (?P<status>\d+))")
_LOCAL_RANK = re.compile(r"--local[_-]rank[=', ]+(?P<rank>\d+)")
STATE = re.compile(r"^Distributed environment: (?:DistributedType\.)?\w+")
_STATE_WORD = "Distributed environment: "
CONSOLE = Console("Accelerate", "none of its own: torchrun's agent under `accelerate launch` prints nothing at a "
                  "normal end at the default log level (with LOGLEVEL=INFO, 'worker group successfully finished')",
                  "torchrun's 'failed (exitcode: N) local_rank: …' and its failure table, or a CalledProcessError",
                  "the rest of the console and `accelerate launch`'s exit status (or a run with LOGLEVEL=INFO, whose "
                  "agent says it finished)")


class Children:
    """One input's CalledProcessError reports (each read on its own)."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        """The worker a CalledProcessError's command names by its ``--local_rank``, and how it ended (the assembler
        takes it where the exception is the line's own, not one quoted inside another's message); a command without
        one (``accelerate launch``'s own) is a worker's end the line cannot place, quoted from the report's start."""
        if _STATE_WORD in text and STATE.match(text):
            return (Fact(Who(), "launched", CONSOLE.name, loc),)
        if not (c := CALLED_PROCESS.search(text)):
            return ()
        code = -int(c["signal"]) if c["signal"] else int(c["status"])
        if local := _LOCAL_RANK.search(c["command"]):
            return (AgentExit(int(local["rank"]), code, None, loc),)
        return (WorkerEnd(NAME, None, text[c.start():].strip(), loc, exitcode=code,
                          signal=signals.name(int(c["signal"])) if c["signal"] else None),)


NAME = "Accelerate / torch.distributed.launch"


_SEGV = ("subprocess.CalledProcessError: Command '['/opt/tiger/conda/bin/python3', '-u', 'train_imagenet.py', "
         "'--local_rank=7', '--epochs', '180']' died with <Signals.SIGSEGV: 11>.")
_KILLED = "subprocess.CalledProcessError: Command '['python3', '-u', 'train.py']' died with <Signals.SIGKILL: 9>."
FORMAT = Format(
    name=NAME,
    words=("CalledProcessError: Command '",),
    head_words=(_STATE_WORD,),  # its state, printed as the program starts
    make=Children,
    patterns=(CALLED_PROCESS, STATE),
    behind=(
        # the command a CalledProcessError quotes
        Behind((CALLED_PROCESS,), (_LOCAL_RANK,)),
    ),
    samples=(
        Sample("Distributed environment: DistributedType.MULTI_CPU  Backend: gloo",
               "tests/data/launchers/accelerate/clean/console.log:1", (Fact(Who(), "launched", "Accelerate", AT),)),
        Sample(_SEGV, "https://github.com/pytorch/pytorch/issues/61839 (torch.distributed.launch; its arguments after "
                      "'--epochs', '180' left out)", (AgentExit(7, -11, None, AT),)),
        Sample(_KILLED, "https://github.com/pytorch/pytorch/issues/61839's shape without --local_rank, as accelerate "
                        "launch reports its own child (tests/test_failures.py's host kill)",
               (WorkerEnd(NAME, None, _KILLED[len("subprocess."):], AT, exitcode=-9, signal="SIGKILL"),)),
    ),
)
