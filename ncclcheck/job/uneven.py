"""Uneven data, from the ranks' own progress prints: the same loop counted to different totals on different ranks.

A training step issues the same collectives on every rank (DDP's backward all_reduces the gradients, FSDP gathers
and reduces the shards), so every rank must run the same number of steps. A rank whose loop holds fewer batches
leaves it first and issues whatever comes after (a barrier, an epoch's metric, a save, its exit) while the others
still issue their extra steps' collectives: a hang, a size mismatch, or a lost peer, whichever the backend meets
first (PyTorch's DistributedSampler pads or drops so that every rank gets the same count; a split of one's own, an
IterableDataset sharded by rank, or per-rank files do not). Read from each rank's latest count of each loop
(evidence/formats/progress.py): where the totals differ, the data is uneven. Recorded:
tests/data/launchers/torchrun/uneven_* (tools/launchers/uneven.sh, uneven_job.py: 25 samples split by rank, 7 batches on rank 0
and 6 on rank 1, gloo on CPU; printed counts and tqdm bars; a barrier or an epoch's metric after the loop).
"""

from __future__ import annotations

from ncclcheck.evidence.types import Loc
from ncclcheck.findings import Finding, Severity
from ncclcheck.job.model import Job
from ncclcheck.ranks import rank_phrase

FIX = ("Give every rank the same number of steps: a DistributedSampler (drop_last=True drops the tail, "
       "drop_last=False pads every rank to the same count) instead of a split of one's own, or the same step count "
       "on every rank (the smallest shard's); where ranks must run different amounts of data, wrap the loop in "
       "torch.distributed.algorithms.Join with the model (DDP's join()), which shadows the collectives of the ranks "
       "that ran out.")


def _last_counts(job: Job) -> dict[str, dict[int, tuple[int, int, Loc]]]:
    """loop -> rank -> (count, total, line) of the rank's latest progress line in that loop."""
    out: dict[str, dict[int, tuple[int, int, Loc]]] = {}
    for f in job.facts.progress:
        if f.who.rank is None:
            continue
        loop, _, count = f.value.rpartition(": ")
        i, _, n = count.partition("/")
        seen = out.setdefault(loop, {})
        if f.who.rank not in seen or seen[f.who.rank][2].line < f.loc.line:
            seen[f.who.rank] = (int(i), int(n), f.loc)
    return out


def uneven_findings(job: Job, failed: bool) -> list[Finding]:
    """One finding per loop whose totals differ across ranks, where the job failed (a loop may legitimately count
    differently per rank, an evaluation of each rank's own shard, in a job that ended well)."""
    if not failed:
        return []
    out = []
    for loop, ranks in _last_counts(job).items():
        totals = {n for _, n, _ in ranks.values()}
        if len(ranks) < 2 or len(totals) < 2:
            continue
        by_total = sorted(totals, reverse=True)
        groups = "; ".join(f"{rank_phrase(r for r, (_, n, _) in ranks.items() if n == t)}: {t:,}" for t in by_total)
        more = [r for r, (_, n, _) in ranks.items() if n == by_total[0]]
        last = "; ".join(f"rank {r} {i:,}/{n:,}" for r, (i, n, _) in sorted(ranks.items()))
        out.append(Finding(
            Severity.WARNING, "uneven-data",
            f"Uneven data: the ranks counted '{loop}' to different totals ({groups}); their last counts: {last}. "
            f"{rank_phrase(more).capitalize()} ran steps the others never reached: each step's collectives there wait "
            "for ranks that had left the loop (or meet their next call, a barrier or a metric, of another size).",
            tuple(loc for _, _, loc in (ranks[r] for r in sorted(ranks)))[:8], FIX))
    return out
