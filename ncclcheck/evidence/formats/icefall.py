"""k2/icefall's logger: each record says which rank of how many wrote it.

icefall's ``setup_logger`` (icefall/utils.py), copied by the projects built on it (lhotse-based speech recipes,
VALL-E ports and others), formats every record as ``%(asctime)s %(levelname)s [%(filename)s:%(lineno)d]
(RANK/WORLD) %(message)s`` once the default process group is up, with ``RANK = dist.get_rank()`` and ``WORLD =
dist.get_world_size()``: a global rank and the world's size on every line, behind the logger's header. Without a
process group the tag is left out. Every tagged record is kept: its rank is one the job ran (evidence/whose.py
reads the tag as the line's rank), and its world the job's size.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

# The tag right after the header's "[file.py:N] ": the word a line is tested for first is its opening "] (".
TAG = re.compile(r"\[[\w.-]{1,80}\.py:\d{1,6}\] \((?P<rank>\d{1,7})/(?P<world>\d{1,7})\) ")
_WORD = "] ("
_ANYONE = Who()  # the line's process: the parser puts the fact on it


class Lines:
    """One input's icefall records, each read on its own: the world its tag states."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        m = TAG.search(text, 0, 200)
        if m is None:
            return ()
        return (Fact(_ANYONE, "logger_world", m["world"], loc),)


FORMAT = Format(
    name="icefall logger",
    words=(_WORD,),  # every record it tags: each names its rank (a rare word elsewhere: 35 lines of the fixtures)
    make=Lines,
    patterns=(TAG,),
    rank_marks=((_WORD, TAG),),
    samples=(
        Sample("2023-04-13 16:00:05,621 INFO [trainer.py:650] (5/8) Reaches end of dataloader.",
               "https://github.com/lifeiteng/vall-e/issues/86 (icefall's setup_logger, 8 GPUs)",
               (Fact(_ANYONE, "logger_world", "8", AT),)),
    ),
)
