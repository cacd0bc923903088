"""PyTorch Lightning: the line each rank prints as it joins, its tag of the global rank, and its word that fitting
is over.

Each process prints "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/4" (1.x: "initializing ddp: …",
Lightning-Universe/lightning-bolts#691) as it sets up the process group: the rank that printed it and the world's
size. Its own messages carry "[rank: 1] " (rank_zero_only's prefix); "`Trainer.fit` stopped: `max_steps=6` reached."
is the program's word that its training ended as asked. Recorded with tools/launchers/python_launchers.sh
(tests/data/launchers/lightning/).

How its console ends (job/ending.py): the start line makes a console Lightning's (its Trainer starts the other ranks
itself, as children that print to the same console). At a normal end it prints "`Trainer.fit` stopped:
`max_epochs=…` reached." (``work_done``; pytorch/loops/fit_loop.py, when the loop's limit is reached); a failure is
a rank's own traceback. A console that stops with neither, while nothing failed, stops mid-run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Console, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

START = re.compile(r"GLOBAL_RANK: (?P<rank>\d+), MEMBER: (?:\d+/(?P<world>\d+))?")
TAG = re.compile(r"\[rank: (?P<rank>\d+)\] ")
# The tag at a line's start, as it is taken off (evidence/whose.py), with or without the space after it.
PREFIX = re.compile(r"\[rank: \d+\]")
FIT_DONE = re.compile(r"(?P<done>`Trainer\.fit` stopped: `max_(?:epochs|steps)=[^`]*` reached)")
ANYONE = Who()  # the facts below are the line's process's: the parser puts it on them
CONSOLE = Console("Lightning", "'`Trainer.fit` stopped: `max_epochs=N` reached.' (or max_steps)",
                  "a rank's own traceback", "the rest of the console and the script's exit status")


class Lines:
    """One input's Lightning lines (each read on its own)."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "GLOBAL_RANK" in text and (m := START.search(text)):
            said = [Fact(ANYONE, "framework", "lightning", loc), Fact(ANYONE, "launched", CONSOLE.name, loc)]
            return said + [Fact(ANYONE, "lightning_world", m["world"], loc)] if m["world"] else said
        if "Trainer.fit" in text and (m := FIT_DONE.search(text)):
            return (Fact(ANYONE, "work_done", m["done"], loc),)
        return ()


_CLEAN = "tests/data/launchers/lightning/clean/console.log"
FORMAT = Format(
    name="Lightning",
    words=("Trainer.fit",),
    # Its start line comes once, at the start: read in the head of an input (and wherever a trigger hands it over).
    head_words=("GLOBAL_RANK", "[rank: "),
    make=Lines,
    patterns=(FIT_DONE,),
    rank_marks=(("GLOBAL_RANK: ", START), ("[rank: ", TAG)),
    prefixes=(PREFIX,),
    samples=(
        Sample("Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/4", f"{_CLEAN}:6",
               (Fact(ANYONE, "framework", "lightning", AT), Fact(ANYONE, "launched", "Lightning", AT),
                Fact(ANYONE, "lightning_world", "4", AT))),
        Sample("Epoch 0: 100%|##########| 6/6 [00:00<00:00, 11.15it/s]`Trainer.fit` stopped: `max_steps=6` reached.",
               f"{_CLEAN}:18 (the progress bar before it shortened)",
               (Fact(ANYONE, "work_done", "`Trainer.fit` stopped: `max_steps=6` reached", AT),)),
    ),
)
