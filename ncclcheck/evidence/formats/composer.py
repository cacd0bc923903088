"""MosaicML Composer's launcher (``composer -n N train.py``): its line about each worker that exited.

Once per worker it logs "Global rank 1 (PID 787) exited with code -6": the global rank, the worker's PID and its
exit code (a negative code is the signal that ended it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck import signals
from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import ElasticFailure, Loc, Said

EXITED = re.compile(r"Global rank (?P<rank>\d+) \(PID (?P<pid>\d+)\) exited with code (?P<code>-?\d+)")


class Exits:
    """One input's Composer exit lines (each read on its own)."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if not (m := EXITED.search(text)):
            return ()
        code = int(m["code"])
        return (ElasticFailure(rank=int(m["rank"]), local_rank=None, exitcode=code, pid=int(m["pid"]),
                               signal=signals.of_exitcode(code), host=None, time=None, root_cause=False, loc=loc),)


FORMAT = Format(
    name="Composer",
    words=("Global rank",),
    make=Exits,
    patterns=(EXITED,),
    samples=(
        Sample("Global rank 0 (PID 786) exited with code -6",
               "tests/data/public_threads/29-llmfoundry-203-p2p-allgather-seq2-composer.log:8",
               (ElasticFailure(0, None, -6, 786, "SIGABRT", None, None, False, AT),)),
    ),
)
