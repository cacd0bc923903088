"""A traceback's ``raise`` source line whose message is written out in it: the exception the process raised.

CPython prints each frame of a traceback with its source line under it (Lib/traceback.py, StackSummary.format), so
the innermost frame of an exception raised with a constant message shows that message whole:
``raise RuntimeError("Distributed package doesn't have NCCL " "built in")`` (torch/distributed/distributed_c10d.py,
the string literals Python joins at compile time). The exception's own line under it says the same; a paste that
stops before it, or quotes the source line alone, still states what the process raised. Only a call whose arguments
are string literals alone is read (no f-string, no ``%`` or ``.format``, no variable): those are printed exactly as
raised. A message errors.py takes for a cascade (a peer's failure restated) is none.

Each is a :class:`Clue` of the kind ``raise_line`` of the line's process (the parser names it), its words
``<name>: <message>`` as the exception's line would print them; job/reasons.py ranks it after the exception's own
line, so that a whole traceback is quoted from its last line, as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats import errors
from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who

# `raise Name(` then one or more string literals (either quote, an r/u/b prefix, no escapes) and `)` ending the line.
# Bounded: linear on a hostile line.
RAISE = re.compile(r"(?:^|\s)raise (?P<name>[A-Za-z_][\w.]{0,200}(?:Error|Exception))\("
                   r"(?P<literals>(?:\s{0,4}[rRuU]?(?:\"[^\"\\]{0,500}\"|'[^'\\]{0,500}')){1,8})\s{0,4}\)\s*$")
_LITERAL = re.compile(r"[rRuU]?(?:\"(?P<d>[^\"\\]*)\"|'(?P<s>[^'\\]*)')")
WORDS = ("raise ",)  # in traceback source lines alone, nearly: "raised the ..." holds no space after it
_ANYONE = Who()  # the line's process: the parser puts the clue on it


def raised(text: str) -> str | None:
    """The exception a ``raise`` source line raises, as its own line prints it (``Name: message``), or None."""
    if (m := RAISE.search(text)) is None:
        return None
    message = "".join(p["d"] if p["d"] is not None else p["s"] for p in _LITERAL.finditer(m["literals"]))
    line = f"{m['name']}: {message}"
    return line if errors.CASCADE.search(line) is None else None


class Lines:
    """One input's raise lines, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        said = raised(text)
        return (Clue(_ANYONE, "raise_line", said, loc),) if said is not None else ()


_T299 = "tests/data/public_threads/299-whispervitssvc-97-windows-two-gpu-backend-missing.log"
FORMAT = Format(
    name="raise line",
    words=WORDS,
    make=Lines,
    patterns=(RAISE,),
    behind=(Behind((RAISE,), (_LITERAL,)),),  # the literals, in what RAISE matched
    samples=(
        Sample("raise RuntimeError(\"Distributed package doesn't have NCCL \" \"built in\")", f"{_T299}:1",
               (Clue(_ANYONE, "raise_line", "RuntimeError: Distributed package doesn't have NCCL built in", AT),)),
        Sample("[rank1]:     raise ValueError('Default process group has not been initialized')",
               "torch/distributed/distributed_c10d.py's source line under a torchrun worker's tag",
               (Clue(_ANYONE, "raise_line", "ValueError: Default process group has not been initialized", AT),)),
    ),
)
