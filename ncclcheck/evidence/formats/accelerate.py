"""The launchers that start workers with subprocess and report a failed one as Python's CalledProcessError:
torch.distributed.launch before torchrun, and ``accelerate launch`` (its own launcher, not torchrun's agent).

The report is Python's own text, "CalledProcessError: Command '[…, '--local_rank=1', …]' died with
<Signals.SIGKILL: 9>." or "… returned non-zero exit status 1.": where the command holds the worker's
``--local_rank`` (torch.distributed.launch passes it), that is the worker that failed, on its node.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck import signals
from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import AgentExit, Loc, Said

CALLED_PROCESS = re.compile(
    r"CalledProcessError: Command '(?P<command>(?:(?!CalledProcessError: ).)*)' "
    r"(?:died with <Signals\.SIG\w+: (?P<signal>\d+)>|returned non-zero exit status (?P<status>\d+))")
_LOCAL_RANK = re.compile(r"--local[_-]rank[=', ]+(?P<rank>\d+)")


class Children:
    """One input's CalledProcessError reports (each read on its own)."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        """The worker a CalledProcessError's command names by its ``--local_rank``, and how it ended; the parser
        takes it where the exception is the line's own (not one quoted inside another's message)."""
        if (c := CALLED_PROCESS.search(text)) and (local := _LOCAL_RANK.search(c["command"])):
            code = -int(c["signal"]) if c["signal"] else int(c["status"])
            return (AgentExit(int(local["rank"]), code, None, loc),)
        return ()


def died_of(text: str) -> str | None:
    """The signal a CalledProcessError on this line says its child died of (``SIGKILL``), named or not."""
    m = CALLED_PROCESS.search(text)
    return signals.name(int(m["signal"])) if m and m["signal"] else None


_SEGV = ("subprocess.CalledProcessError: Command '['/opt/tiger/conda/bin/python3', '-u', 'train_imagenet.py', "
         "'--local_rank=7', '--epochs', '180']' died with <Signals.SIGSEGV: 11>.")
FORMAT = Format(
    name="Accelerate / torch.distributed.launch",
    words=("CalledProcessError: Command '",),
    make=Children,
    patterns=(CALLED_PROCESS,),
    samples=(
        Sample(_SEGV, "https://github.com/pytorch/pytorch/issues/61839 (torch.distributed.launch; its arguments after "
                      "'--epochs', '180' left out)", (AgentExit(7, -11, None, AT),)),
    ),
)
