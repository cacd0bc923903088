"""NCCL's RAS report: what ``ncclras`` (and ``ncclras -v``) prints about a live job, read from its text.

NCCL's RAS thread (src/ras/, NCCL 2.24 and later) answers its client with a job summary, then ``Errors`` and
``Warnings`` sections (src/ras/client_support.cc). A section names a communicator as ``#0-0 (2b902544309b73fa)
MISMATCH`` (or ``INCOMPLETE``, ``ERROR``), says what is wrong in one sentence ("Communicator ranks have different
AllReduce operation counts", "Missing communicator data from 1 rank", "Asynchronous error on 1 rank") and lists
each rank it concerns: ``Rank 1 has launched up to operation 3 -- GPU 1 managed by process 1408 on node
192.0.2.2``, or ``Rank 1 -- GPU 1 managed by process 1408 on node 192.0.2.2``. Job-wide, ``INCOMPLETE``/``DEAD``
name processes the RAS network lost. A rank of a section is its rank in that communicator (the hash names it), not
a global rank. Each rank line is a clue in NCCL's own words, with its communicator and sentence put before it, so
that the report reads whole wherever the line stands. Recorded: tests/data/gpu/nccl232/hang/ras/.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who

SECTION = re.compile(r"^#\d+-\d+ \([0-9a-f]{16}\) MISMATCH|^#\d+-\d+ \([0-9a-f]{16}\) INCOMPLETE"
                     r"|^#\d+-\d+ \([0-9a-f]{16}\) ERROR")
NAMED = re.compile(r"\((?P<hash>[0-9a-f]{16})\) (?P<kind>[A-Z]+)")
RANK = re.compile(r"^ *Rank (?P<rank>\d+) (?:has (?P<what>.+?) )?-- (?:GPU (?P<gpu>\S+) managed by process "
                  r"(?P<pid>\d+) on node (?P<node>\S+)|\[process information not found\])")
SENTENCE = re.compile(r"^ *(?P<said>Communicator ranks have different .+|Missing communicator data from .+"
                      r"|Initialization errors? on .+|Asynchronous errors? on .+)$")
DEAD = re.compile(r"(?<!\d)\d{1,9} job process(?:es are| is) considered dead \(unreachable via the RAS network\)")
COUNT = re.compile(r"^ *\d+ ranks have launched up to operation (?P<op>\d+)")
LAUNCHED = re.compile(r"launched up to operation (?P<op>\d+)")
ANYONE = Who()


class Report:
    """One input's ncclras report: the communicator and sentence each rank line belongs to. Of a section's operation
    counts, only a rank behind another of the section is a clue (the first outlier NCCL lists may be ahead): it is
    told once a count above its own has been read, before or after it."""

    def __init__(self) -> None:
        self._section: str | None = None
        self._said: str | None = None
        self._counts: list[tuple[int, Clue | None]] = []  # the section's operation counts (a rank's clue, held)

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if SECTION.match(text) and (m := NAMED.search(text)):
            self._section, self._said, self._counts = f"comm {m['hash']} {m['kind']}", None, []
            return ()
        if m := DEAD.search(text):  # job-wide: it stands on its own
            return (Clue(ANYONE, "nccl", f"ncclras: {m[0]}", loc),)
        if self._section and (m := SENTENCE.match(text)):
            self._said, self._counts = m["said"], []
            return ()
        if not (self._section and self._said):
            return ()
        if m := COUNT.match(text):
            return self._count(int(m["op"]), None)
        if m := RANK.match(text):
            clue = Clue(ANYONE, "nccl", f"ncclras: {self._section}: {self._said}: {text.strip()}", loc)
            if m["what"] and (op := LAUNCHED.match(m["what"])):
                return self._count(int(op["op"]), clue)
            return (clue,)
        return ()

    def _count(self, op: int, clue: Clue | None) -> list[Said]:
        """The held clues of ranks now known to be behind, and this one where it is."""
        told: list[Said] = [c for k, c in self._counts if c is not None and k < op]
        self._counts = [(k, None if k < op else c) for k, c in self._counts]
        if clue is not None and any(k > op for k, _ in self._counts):
            told.append(clue)
            clue = None
        self._counts.append((op, clue))
        return told


_RAS = "tests/data/gpu/nccl232/hang/ras"
_HEAD = "#0-0 (2b902544309b73fa) MISMATCH"
_SAID = "  Communicator ranks have different AllReduce operation counts"
_BEHIND = "  Rank 1 has launched up to operation 3 -- GPU 1 managed by process 1408 on node 192.0.2.2"
_MISSING = "  Rank 1 -- GPU 1 managed by process 1408 on node 192.0.2.2"
FORMAT = Format(
    name="ncclras",
    words=("MISMATCH", "INCOMPLETE", ") ERROR", "managed by process", "Communicator ranks have",
           "communicator data from", "considered dead", "process information not found", "Initialization error",
           "Asynchronous error", "ranks have launched"),
    make=Report,
    patterns=(SECTION, RANK, SENTENCE, COUNT, DEAD),
    behind=(
        # a section's heading
        Behind((SECTION,), (NAMED,)),
        # a rank's row, what it says it launched
        Behind((RANK,), (LAUNCHED,)),
    ),
    samples=(
        Sample(_BEHIND, f"{_RAS}/status_live.txt:27", (Clue(ANYONE, "nccl", (
            "ncclras: comm 2b902544309b73fa MISMATCH: Communicator ranks have different AllReduce operation counts: "
            "Rank 1 has launched up to operation 3 -- GPU 1 managed by process 1408 on node 192.0.2.2"), AT),),
            before=(_HEAD, _SAID, "  Rank 0 has launched up to operation 4 -- GPU 0 managed by process 1407 on node "
                    "192.0.2.2")),
        Sample(_MISSING, f"{_RAS}/status_dead.txt:27", (Clue(ANYONE, "nccl", (
            "ncclras: comm 2b902544309b73fa INCOMPLETE: Missing communicator data from 1 rank: "
            "Rank 1 -- GPU 1 managed by process 1408 on node 192.0.2.2"), AT),),
            before=("#0-0 (2b902544309b73fa) INCOMPLETE", "  Missing communicator data from 1 rank")),
        # the count most ranks share first (most frequent first), then the one rank behind it
        Sample(_BEHIND, "NCCL src/ras/client_support.cc (2.24 to 2.32): '  %d ranks have launched up to operation "
               "%ld', then '  Rank %d has launched up to operation %ld -- GPU %s managed by process %d on node %s'",
               (Clue(ANYONE, "nccl", (
                   "ncclras: comm 2b902544309b73fa MISMATCH: Communicator ranks have different AllReduce operation "
                   "counts: Rank 1 has launched up to operation 3 -- GPU 1 managed by process 1408 on node "
                   "192.0.2.2"), AT),),
               before=(_HEAD, _SAID, "  3 ranks have launched up to operation 4")),
        Sample("  1 job process is considered dead (unreachable via the RAS network)",
               "NCCL src/ras/client_support.cc (2.24 to 2.32): 'DEAD', then '  %d job process%s considered dead "
               "(unreachable via the RAS network)' ('es are' or ' is')",
               (Clue(ANYONE, "nccl", "ncclras: 1 job process is considered dead (unreachable via the RAS network)",
                     AT),)),
    ),
)
