"""The chain of who waits for whom, as lines a person reads from the waiters to the root.

Edges are folded twice so that thousands of ranks read like a few lines: one waiter's edges of
one reason become a target set, and waiters with the same work, reason and targets become one
rank set ("ranks 0-516, 518-1023 wait in PG 0 #120 for rank 517").
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

from ncclcheck.job.graph import NO_INPUT
from ncclcheck.job.live import library
from ncclcheck.job.model import Edge, EdgeReason, EndKind, GroupId, Job, RankState
from ncclcheck.ranks import rank_phrase

# Frames that are not the job's own code: the interpreter, the standard library, installed packages, torch.
_LIBRARY = re.compile(r"^<|/torch/|site-packages|dist-packages|/lib/python\d")

_MANY = {
    EdgeReason.NOT_REACHED: "they never issued it",
    EdgeReason.UNKNOWN: "the inputs hold nothing from them",
    EdgeReason.BLOCKED_ELSEWHERE: "each of them is stuck in earlier work of another group",
    EdgeReason.DIFFERENT_COLLECTIVE: "they issued other collectives at that number",
    EdgeReason.P2P_PEER: "they never posted the matching operation",
}


def _distances(job: Job, roots: Sequence[int]) -> dict[int, int]:
    """Hops from each waiter to a root, following the edges backwards."""
    into: dict[int | None, list[int]] = defaultdict(list)
    for e in job.edges:
        into[e.target].append(e.waiter)
    dist: dict[int, int] = {r: 0 for r in roots}
    frontier: list[int | None] = list(roots) + ([] if roots else [None])
    while frontier:
        nxt: list[int | None] = []
        for t in frontier:
            for w in into.get(t, ()):
                if w not in dist:
                    dist[w] = dist.get(t, 0) + 1 if t is not None else 1
                    nxt.append(w)
        frontier = nxt
    return dist


def root_words(s: RankState) -> str:
    """What a rank that waits for no one did instead, in words."""
    e = s.ending
    if e.kind is EndKind.SILENT:
        return "printed no timeout, error or exit: it never arrived"
    if e.kind is EndKind.ABORTED and s.stuck is None:
        by = "the launcher stopped it (SIGTERM)" if e.signal == "SIGTERM" else "it was aborted (SIGABRT)"
        # Not "it never arrived": a rank that issued a different collective ends the same way (DETAIL's mismatch).
        return f"printed no timeout or error, and was still running when {by}"
    if e.kind is EndKind.UNKNOWN:
        return ("left nothing in these inputs (no log, no dump): a rank that exited, crashed or was killed writes "
                "no dump; its own log says which")
    if e.kind is EndKind.RUNNING and s.live is not None:
        frames = s.live.threads[0].frames if s.live.threads else ()
        mine = next((f for f in frames if not _LIBRARY.search(f.file) and not library(f.file)), None)
        if mine is None:
            return f"is {e.detail}"
        inner = f", inside {frames[0].name}" if frames and frames[0] is not mine else ""
        return f"is {e.detail} at {mine.file}:{mine.line} ({mine.name}){inner}"
    return e.detail


def chain_lines(job: Job, roots: Sequence[int], limit: int | None = None) -> tuple[str, ...]:
    """From the farthest waiters to the root(s), then what the roots did."""
    per_waiter: dict[tuple[int, GroupId, int | None, EdgeReason], list[Edge]] = defaultdict(list)
    for e in job.edges:
        per_waiter[(e.waiter, e.work.group, e.work.seq, e.reason)].append(e)
    folded: dict[tuple[GroupId, int | None, EdgeReason, tuple[int | None, ...]], list[int]] = defaultdict(list)
    sample: dict[tuple[GroupId, int | None, EdgeReason, tuple[int | None, ...]], Edge] = {}
    for (waiter, group, seq, reason), edges in per_waiter.items():
        targets = tuple(sorted({e.target for e in edges}, key=lambda t: -1 if t is None else t))
        key = (group, seq, reason, targets)
        folded[key].append(waiter)
        sample.setdefault(key, edges[0])
    dist = _distances(job, roots)
    # Second fold: the same wait in many sibling groups (every data-parallel group of a mesh waiting for
    # its member in the straggler's tensor-parallel group) reads as one line.
    siblings: dict[tuple[object, ...], list[tuple[GroupId, int | None, EdgeReason, tuple[int | None, ...]]]] = defaultdict(list)
    for key in folded:
        group, seq, reason, targets = key
        e = sample[key]
        target = job.rank(targets[0]) if len(targets) == 1 and targets[0] is not None else None
        there = None if target is None or target.stuck is None else (target.stuck.group, target.stuck.seq)
        # A live stack's call has no group or number: calls at different lines are different calls, not siblings.
        call = e.work.frame if seq is None else None
        siblings[(group.id, group.desc, seq, reason, e.work.describe(), there, target is None, call)].append(key)
    lines = []
    order = sorted(siblings, key=lambda k2: (-max(dist.get(w, 0) for key in siblings[k2] for w in folded[key]),
                                             min(w for key in siblings[k2] for w in folded[key])))
    for k2 in order:
        keys = siblings[k2]
        e = sample[keys[0]]
        waiters = sorted(w for key in keys for w in folded[key])
        verb = "waits" if len(waiters) == 1 else "wait"
        if len(keys) == 1:
            group, seq, reason, targets = keys[0]
            named = [t for t in targets if t is not None]
            whom = (rank_phrase(named, job.world, waiters) if named else "members without input"
                    if e.detail.startswith(NO_INPUT) else "members not named in these inputs")
            why = e.detail if len(targets) == 1 else _MANY[reason]
            lines.append(f"{rank_phrase(waiters, job.world)} {verb} in {group.label()} {e.work.number} "
                         f"({e.work.describe()}) for {whom}: {why}.")
            continue
        named = sorted({t for key in keys for t in key[3] if t is not None})
        first = job.rank(named[0]) if named else None
        why = (f"each is stuck in {first.stuck.describe()} {first.stuck.number} of {first.stuck.group.label()}"
               if first is not None and first.stuck is not None and e.reason is EdgeReason.BLOCKED_ELSEWHERE
               else "their membership is not in these inputs" if not named else _MANY[e.reason])
        whom = f"its member among {rank_phrase(named)}" if named else "members not named in these inputs"
        label = f"PG {e.work.group.id}" + (f" ({e.work.group.desc})" if e.work.group.desc else "")
        lines.append(f"{rank_phrase(waiters, job.world)} {verb} in {len(keys)} groups {label} {e.work.number} "
                     f"({e.work.describe()}), each for {whom}: {why}.")
    who_waits = {e.waiter for e in job.edges}
    for r in roots:
        s = job.rank(r)
        if s is None or s.ending.kind is EndKind.UNKNOWN or r in who_waits or s.stuck is not None:
            continue
        lines.append(f"rank {r} {root_words(s)}; it waits for no one: it is the root.")
    waiting = sorted(who_waits - set(roots))
    if waiting and roots:
        lines.append(f"{rank_phrase(waiting, job.world, roots).capitalize()} {'is' if len(waiting) == 1 else 'are'} only "
                     "waiting.")
    if limit is not None and len(lines) > limit:
        lines = lines[: limit - 1] + [f"... {len(lines) - limit + 1} more lines in --json."]
    return tuple(lines)
