"""A library's fatal check, printed behind the tag ``[FATAL ERROR]``: the process stops on the words after it.

Some libraries of a GPU job end the process on a check of their own and print its reason behind a fixed tag instead
of raising: ROCm's stack does so at its set-up (RCCL's check that the HIP runtime and the GPU's firmware are run with
the scratch-memory setting they need, as ``[FATAL ERROR]: <text>`` then ``[FATAL ERROR]: Please set NAME=VALUE and
rerun.``, ROCm/ATOM#913's root cause quoting it), and C/C++ programs' loggers print the same tag before an exit.
What follows the tag is the library's stated reason; where it names a variable and the value to set, job/
statements.toml's ``names_setting`` reads it as that setting (the report's fix quotes it as an ``export`` line).

Each tagged line is a :class:`Clue` of the kind ``fatal`` of the line's process, its words those after the tag (a hard
wrap's continuation is left: the first line names the check). A lower-case ``[fatal error]`` or a tag without its
brackets is some other program's wording, not read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who

# The tag, an optional colon, then the reason (bounded: linear on a hostile line).
FATAL = re.compile(r"\[FATAL ERROR\]:?[ \t]{0,8}(?P<said>\S.{0,400})")
WORDS = ("[FATAL ERROR]",)
_ANYONE = Who()  # the line's process: the parser puts the clue on it


class Lines:
    """One input's fatal-tagged lines, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "[FATAL ERROR]" in text and (m := FATAL.search(text)):
            return (Clue(_ANYONE, "fatal", m["said"].rstrip(), loc),)
        return ()


FORMAT = Format(
    name="fatal tag",
    words=WORDS,
    make=Lines,
    patterns=(FATAL,),
    samples=(
        Sample("[FATAL ERROR]: HSA_NO_SCRATCH_RECLAIM=1 must be set to avoid performance",
               "RCCL's set-up check on ROCm (its first line, the reason; ROCm/ATOM#913's root cause quotes it)",
               (Clue(_ANYONE, "fatal", "HSA_NO_SCRATCH_RECLAIM=1 must be set to avoid performance", AT),)),
        Sample("[FATAL ERROR]: Please set HSA_NO_SCRATCH_RECLAIM=1 and rerun.",
               "RCCL's set-up check on ROCm (its last line, the step)",
               (Clue(_ANYONE, "fatal", "Please set HSA_NO_SCRATCH_RECLAIM=1 and rerun.", AT),)),
        Sample("[rank3]:[FATAL ERROR] Please set HSA_NO_SCRATCH_RECLAIM=1 and rerun.",
               "the same check behind torchrun's rank prefix (--tee), the tag's colon left out",
               (Clue(_ANYONE, "fatal", "Please set HSA_NO_SCRATCH_RECLAIM=1 and rerun.", AT),)),
    ),
)
