"""A test framework's own end: the program's tests ran and it is tearing down.

A distributed test binary or suite prints its end before the process exits: googletest's console printer
(googletest/src/gtest.cc, PrettyUnitTestResultPrinter) ``[----------] Global test environment tear-down`` when the
global environments are torn down after the last test;
Python's unittest (unittest/runner.py) ``Ran N tests in T s``.
What a process prints after such a line is its tear-down, not its work: a watchdog stuck there is stuck destroying
the process groups (job/afterend.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

# unittest's line is the whole line, after a launcher's or a rank's tag (``[default0]:``, ``[rank0]:``) if any.
END = re.compile(r"\[-{10}\] Global test environment tear-down|(?:^|\]:)(?P<ran>Ran \d{1,9} tests? in \d{1,9}(?:\.\d+)?s)$")
_ANYONE = Who()  # the line's process: the parser puts the fact on it


class Lines:
    """One input's test-end lines, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        m = END.search(text.strip())
        return (Fact(_ANYONE, "program_end", m["ran"] or m[0], loc),) if m else ()


FORMAT = Format(
    name="test frameworks' end",
    words=("Global test environment tear-down", "Ran "),
    make=Lines,
    patterns=(END,),
    samples=(
        Sample("[----------] Global test environment tear-down",
               "https://github.com/NVIDIA/Fuser/issues/3055 (googletest, bin/test_multidevice under mpirun)",
               (Fact(_ANYONE, "program_end", "[----------] Global test environment tear-down", AT),)),
        Sample("Ran 4 tests in 12.031s", "Python's unittest runner (unittest/runner.py: 'Ran %d test%s in %.3fs')",
               (Fact(_ANYONE, "program_end", "Ran 4 tests in 12.031s", AT),)),
    ),
)
