"""A worker the launcher names only by its local rank: torchrun's agent line without its failure table.

The agent's "failed (exitcode: N) local_rank: K (pid: P) of binary" (torch/distributed/elastic/multiprocessing/api.py)
names the worker's rank on its node, not in the job: global rank K only on the first node. The parser places it
(evidence/parse.py) where the node's first global rank is stated (its lines' tags beside [rankN]:, the failure
table's pairs, ``--nnodes 1``, a node label's rank); otherwise it stays here, unplaced: a failure of the job that no
global rank carries, said as the local rank it is, never guessed into a global one.

A failure table pasted without its rank rows (``exitcode: -9``, ``traceback : Signal 9 (SIGKILL) received by PID``)
is the same: a worker failed, by that exit code or signal, and no line says which rank it was.
"""

from __future__ import annotations

from ncclcheck import signals
from ncclcheck.evidence.types import ElasticFailure, Loc
from ncclcheck.job.model import Job, VerdictKind


def unplaced_exits(job: Job) -> list[ElasticFailure]:
    """The agent's exit lines of workers that failed (a non-zero exit) whose global rank no line states, and the
    failure table's entries that state none (their rank rows not in the inputs); the table's root cause first."""
    exits = [f for f in job.facts.elastic if f.rank is None and (f.local_rank is not None or not f.agent_line)
             and f.exitcode not in (None, 0)]
    return sorted(exits, key=lambda f: not f.root_cause)


def unplaced_killed(job: Job) -> list[tuple[int | None, Loc, str]]:
    """Those that died of a fatal signal, as the catalogue's killed ranks with no rank (job/causes.py). Where the
    table names its root cause, only that entry: the others may be the agent's own closing kills after it."""
    exits = unplaced_exits(job)
    first = [f for f in exits if f.root_cause] or exits
    return [(None, f.loc, f.signal) for f in first if f.signal in signals.FATAL]


def _how(f: ElasticFailure) -> str:
    return f"exit code {f.exitcode}" + (f", {f.signal}" if f.signal else "")


def unplaced_verdict(job: Job) -> tuple[VerdictKind, list[int], list[int], str] | None:
    """A failure the launcher reports of a worker by its local rank alone: the worker failed, its global rank
    unknown."""
    exits = unplaced_exits(job)
    if not exits:
        return None
    f = exits[0]
    more = f" ({len(exits) - 1} more such line{'s' if len(exits) > 2 else ''})" if len(exits) > 1 else ""
    if f.local_rank is None:
        return (VerdictKind.RANK_FAILED_FIRST, [], [],
                f"A worker failed ({_how(f)}; torchrun's failure table, {f.loc}){more}. The table's rows that name its "
                "rank and host are not in these inputs.")
    return (VerdictKind.RANK_FAILED_FIRST, [], [],
            f"The worker of local rank {f.local_rank} failed ({_how(f)}; torchrun's agent, {f.loc}){more}. That is its "
            "rank on its node: these inputs state no failure table, node rank or single node that would give its "
            "global rank.")
