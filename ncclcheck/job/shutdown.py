"""A library's news that it shut down because another rank failed: the ranks that print it stopped, they did not fail.

Horovod stops every rank once one of them raises (or leaves while the others still call collectives), and each other
rank's next call raises Horovod's SHUT_DOWN_ERROR (horovod/common/common.h), which says so itself: "If the shutdown
was caused by an exception, you should see the exception in the log before the first shutdown message." Those ranks
end as stopped (job/build.py, from the clue of evidence/formats/errors.py); the failure is the first exception of
the rank that failed, in its own output before that message.
"""

from __future__ import annotations

from collections.abc import Sequence

from ncclcheck.evidence.types import FileScan
from ncclcheck.findings import Finding, Severity
from ncclcheck.ranks import rank_phrase


def shutdown_findings(scans: Sequence[FileScan], culprits: Sequence[int]) -> list[Finding]:
    """The ranks whose library shut down after another rank's failure, and where that failure is to be read."""
    news = [c for s in scans for c in s.clues if c.kind == "shutdown"]
    if not news:
        return []
    stopped = sorted({c.who.rank for c in news if c.who.rank is not None and c.who.rank not in culprits})
    who = rank_phrase(stopped).capitalize() if stopped else "A process"
    failed = f"{rank_phrase(culprits)}'s own output" if culprits else "the output of the rank that failed first"
    return [Finding(
        Severity.INFO, "shut-down-after-failure",
        f"{who} stopped after another rank's failure: Horovod shut down on {'them' if len(stopped) > 1 else 'it'} "
        "once one rank raised (or finished while the others still called collectives), and its shutdown error says "
        "the exception came first on another rank; "
        f"{'they are' if len(stopped) > 1 else 'it is'} no culprit.", tuple(c.loc for c in news[:4]),
        f"read {failed} before the first shutdown message: its first exception there is the failure to fix (the "
        "shutdown is only its consequence); where the inputs do not hold that output, bring it",
    )]
