"""The verdict and the action where a node of the job was lost (job/lostnode.py finds it in the consoles).

Its workers died with it without a word, so the others' errors only say that a peer went away, a store stopped
answering or a collective never completed: those verdicts (an NCCL error with no culprit, every rank stuck, missing
ranks, nothing failed) are the lost node's echo and are restated as its failure. A cause of the catalogue that names
a host's fault (a kernel log, a scheduler's NODE_FAIL) or a program's error stays the verdict: it says more.
"""

from __future__ import annotations

from ncclcheck.job.causes import Diagnosis
from ncclcheck.job.lostnode import LostNode
from ncclcheck.job.model import EndKind, Job, VerdictKind
from ncclcheck.ranks import rank_phrase

# Verdicts a lost node explains: the survivors' side of it. A culprit's own error or a cause stays.
_ECHOES = {VerdictKind.NCCL_ERROR, VerdictKind.ALL_RANKS_STUCK, VerdictKind.INCOMPLETE, VerdictKind.NO_FAILURE}
# Causes that are only what the survivors saw of a peer or a store that went away
_ECHO_CAUSES = {"remote_exited"}


def where(n: LostNode) -> str:
    """``node1.console.log (host node1, local rank 0: its global rank no line states)``."""
    parts = [f"host {n.host}"] if n.host else []
    if n.ranks:
        parts.append(rank_phrase(n.ranks))
    if n.local_ranks:
        one = len(n.local_ranks) == 1
        parts.append(f"local rank{'' if one else 's'} {rank_phrase(n.local_ranks).split(' ', 1)[-1]}: "
                     f"{'its' if one else 'their'} global rank{'' if one else 's'} no line states")
    return n.file + (f" ({', '.join(parts)})" if parts else "")


def restate(job: Job, kind: VerdictKind, culprits: list[int], summary: str, cause: Diagnosis | None,
            ) -> tuple[VerdictKind, list[int], str, Diagnosis | None]:
    """The lost node's failure, where the verdict so far was only its echo (see the module's docstring)."""
    lost = job.facts.lost_nodes
    if not lost or (cause is not None and cause.cause.kind not in _ECHO_CAUSES):
        return kind, culprits, summary, cause
    by_rank = {s.rank: s for s in job.ranks}
    echo = kind in _ECHOES or (kind is VerdictKind.RANK_FAILED_FIRST and all(
        (s := by_rank.get(r)) is None or s.ending.kind in (EndKind.SILENT, EndKind.UNKNOWN) or
        s.ending.gone is not None for r in culprits))
    if not echo:
        return kind, culprits, summary, cause
    ranks = sorted({r for n in lost for r in n.ranks})
    others = sorted(s.rank for s in job.ranks if s.present and s.rank not in ranks
                    and s.ending.kind is not EndKind.SILENT)
    n = lost[0]
    more = f" ({len(lost) - 1} more such console{'s' if len(lost) > 2 else ''})" if len(lost) > 1 else ""
    after = (f" {rank_phrase(others).capitalize()} only lost {'its peer' if len(others) == 1 else 'their peers'}."
             if others else "")
    return (VerdictKind.RANK_FAILED_FIRST, ranks,
            f"A node was lost: the console {where(n)} stops at line {n.last.line} with no word of its torchrun agent "
            f"(no failure report, no closing signal, no exit) and no error or end of its workers, while another "
            f"agent reported a failure ({n.reported}){more}. The agent and its workers were cut off at once (the "
            f"host crashed, lost power or was fenced, or the whole tree was killed).{after}", None)


def is_lost(job: Job, kind: VerdictKind, culprits: tuple[int, ...], cause: Diagnosis | None) -> bool:
    """Whether the decided verdict is the lost node's (``restate`` made it)."""
    lost = job.facts.lost_nodes
    return bool(lost) and cause is None and kind is VerdictKind.RANK_FAILED_FIRST and \
        set(culprits) == {r for n in lost for r in n.ranks}
