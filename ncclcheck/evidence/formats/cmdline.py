"""Python's argparse refusing a program's command line: the program never started its work.

``ArgumentParser.error`` prints the usage and then ``%(prog)s: error: %(message)s`` to stderr and exits with status
2 (Lib/argparse.py, every Python 3 release): an argument it does not know (``unrecognized arguments: ...``), one it
requires and did not get (``the following arguments are required: ...``), a value it cannot convert (``argument
--x: invalid int value: ...``). ``prog`` is the script's file name (``train.py``), a console script's name
(``torchrun``), or ``python3 -m <module>`` since Python 3.14 (``__main__.py`` before it, for ``-m``). A launcher
that starts the script on every rank sees each rank exit with code 2 at once, before any collective: the line, not
the exit code, is the reason.

Each is a :class:`Clue` of the kind ``argparse`` of the line's process (the parser names it), its words the message
after ``error:``. A program's name that reads as an exception's (``RuntimeError: error: ...``) is Python's traceback,
not argparse's. The one mechanism a launcher causes, torch.distributed.launch passing ``--local-rank`` to a script
that does not take it, is a stated line of job/statements.toml (``launch_local_rank_argument``). Recorded with
torch 2.13 on CPU: tests/data/launch_argv.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who

# After the line's launcher tag, if any (torchrun's `[rank3]:`, Ray's `(Worker pid=N) `, srun -l's `3: `): the
# program's name (a file or command name, or `python3 -m module`), then argparse's own words. Bounded.
# The message is one of argparse's own (its parse_known_args', parse_args' and ArgumentError's words): other programs
# print "<name>: error: ..." too (slurmstepd's "Detected 1 oom-kill event(s)"), in words of their own.
ERROR = re.compile(r"(?:^|\]:|\) |^\d{1,6}: )\s*(?P<prog>(?:python[\d.]{0,5} -m )?[\w.+-]{1,120})"
                   r": error: (?P<message>(?:unrecognized arguments: |the following arguments are required: "
                   r"|one of the arguments |argument [^\s:]{1,100}: |ambiguous option: )\S.{0,500})$")
# A Python exception's name before the words is a traceback's last line, not a program's name.
_EXCEPTION = re.compile(r"(?:Error|Exception|Warning|Exit|Interrupt)$")
WORDS = (": error: ",)
_ANYONE = Who()  # the line's process: the parser puts the clue on it


def message(text: str) -> str | None:
    """argparse's message on this line (what it refused), or None."""
    m = ERROR.search(text.rstrip())
    if m is None or _EXCEPTION.search(m["prog"]) is not None:
        return None
    return m["message"]


class Lines:
    """One input's argparse error lines, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        said = message(text)
        return (Clue(_ANYONE, "argparse", said, loc),) if said is not None else ()


FORMAT = Format(
    name="argparse",
    words=WORDS,
    make=Lines,
    patterns=(ERROR,),
    behind=(
        # the program's name argparse's line gives
        Behind((ERROR,), (_EXCEPTION,)),
    ),
    samples=(
        Sample("train_no_local_rank.py: error: unrecognized arguments: --local-rank=1",
               "tests/data/launch_argv/console.log:16",
               (Clue(_ANYONE, "argparse", "unrecognized arguments: --local-rank=1", AT),)),
        Sample("torchrun: error: the following arguments are required: training_script, training_script_args",
               "Lib/argparse.py (ArgumentParser.error: \"%(prog)s: error: %(message)s\"; parse_known_args' "
               "\"the following arguments are required: %s\"), a console script's name as prog",
               (Clue(_ANYONE, "argparse", "the following arguments are required: training_script, "
                                          "training_script_args", AT),)),
        Sample("[rank0]: python3 -m train: error: argument --batch-size: invalid int value: '8x'",
               "Lib/argparse.py (_get_values' \"invalid %(type)s value: %(value)r\"; Python 3.14's prog for -m)",
               (Clue(_ANYONE, "argparse", "argument --batch-size: invalid int value: '8x'", AT),)),
    ),
)
