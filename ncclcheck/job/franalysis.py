"""Cross-rank analysis of flight-recorder dumps, per process group, by collective sequence id.

Walking the sequence ids upward, the first one where the ranks' records disagree
is the answer: a rank that never scheduled it (missing or lagging), ranks that
scheduled different collectives (op, sizes or dtypes), or every rank scheduled
and none completed (the transport).  Ranks whose dumps are missing are reported,
not fatal; a rank whose ring buffer no longer reaches back to a sequence id is
not counted as missing it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ncclcheck.evidence.frdump import Dump, Entry, Frame, numel


@dataclass(frozen=True)
class RankState:
    """One rank's position in one process group."""

    rank: int
    last_completed: int | None
    last_started: int | None
    last_scheduled: int | None
    last_entry: Entry | None


@dataclass(frozen=True)
class FrResult:
    """What the dumps say about one process group."""

    kind: str  # missing_rank | collective_mismatch | all_stuck | no_failure
    pg: str
    pg_desc: str | None
    seq: int | None
    culprit_ranks: tuple[int, ...]
    waiting_ranks: tuple[int, ...]
    message: str
    stacks: tuple[tuple[int, str, Frame | None], ...]  # (rank, what it did, user frame)
    states: tuple[RankState, ...]
    missing_dumps: tuple[int, ...]


def _describe(e: Entry) -> str:
    sizes = ",".join("x".join(map(str, s)) or "scalar" for s in e.input_sizes) or "?"
    return f"{e.op} #{e.seq} [{sizes}] {'/'.join(e.dtypes)} ({e.state})"


def _last(entries: dict[int, Entry], status: Mapping[str, int], states: tuple[str, ...], key: str) -> int | None:
    """The highest sequence id in one of ``states``, from the entries and the PG's own counters."""
    seqs = [s for s, e in entries.items() if e.state in states]
    v = status.get(key)
    if v is not None and v >= 0:
        seqs.append(v)
    return max(seqs) if seqs else None


def _states(pg: str, dumps: Sequence[Dump]) -> tuple[dict[int, dict[int, Entry]], list[RankState]]:
    by_rank: dict[int, dict[int, Entry]] = {}
    states = []
    for d in dumps:
        if d.rank is None:
            continue
        entries = {e.seq: e for e in d.entries if e.pg == pg and not e.is_p2p and e.seq is not None}
        by_rank[d.rank] = entries
        status = d.pg_status.get(pg, {})
        states.append(RankState(d.rank, _last(entries, status, ("completed",), "last_completed_collective"),
                                _last(entries, status, ("started", "completed"), "last_started_collective"),
                                _last(entries, status, ("scheduled", "started", "completed"), "last_enqueued_collective"),
                                entries[max(entries)] if entries else None))
    return by_rank, sorted(states, key=lambda s: s.rank)


def analyze_pg(pg: str, dumps: Sequence[Dump]) -> FrResult:
    """Find the first sequence id in ``pg`` where the ranks disagree or all hang."""
    by_rank, states = _states(pg, dumps)
    expected = {r for d in dumps for r in d.pg_ranks.get(pg, ())}
    missing_dumps = tuple(sorted(expected - set(by_rank))) if expected else ()
    desc = next((d.pg_desc[pg] for d in dumps if pg in d.pg_desc), None)
    last_sched = {s.rank: s.last_scheduled for s in states}
    seqs = sorted({s for entries in by_rank.values() for s in entries})

    def result(kind: str, seq: int | None, culprit: Sequence[int], waiting: Sequence[int], message: str,
               stacks: Sequence[tuple[int, str, Frame | None]]) -> FrResult:
        return FrResult(kind, pg, desc, seq, tuple(sorted(culprit)), tuple(sorted(waiting)), message, tuple(stacks),
                        tuple(states), missing_dumps)

    for seq in seqs:
        present = {r: e[seq] for r, e in by_rank.items() if seq in e}
        covering = {r for r, e in by_rank.items() if e and min(e) <= seq}
        never = sorted(r for r in covering - set(present) if (last_sched.get(r) or 0) < seq)
        pending = {r: e for r, e in present.items() if e.state != "completed"}
        if not pending and not never:
            continue
        sigs = Counter(e.signature() for e in present.values())
        if len(sigs) > 1:
            top, n = sigs.most_common(1)[0]
            if list(sigs.values()).count(n) > 1:  # a tie: the side in the smaller collective left a loop early
                top = max(sigs, key=lambda s: sum(numel(sz) for sz in s[1]))
            culprit = [r for r, e in present.items() if e.signature() != top]
            waiting = [r for r, e in present.items() if e.signature() == top]
            where = "; ".join(f"rank {r}: {_describe(e)}" for r, e in sorted(present.items()))
            return result("collective_mismatch", seq, culprit, waiting,
                          f"Flight recorder, {pg}: at collective #{seq} the ranks scheduled different collectives "
                          f"({where}).", [(r, _describe(e), e.user_frame()) for r, e in sorted(present.items())])
        if never:
            stacks = [(s.rank, f"last recorded {_describe(s.last_entry)}" if s.last_entry else "recorded nothing",
                       s.last_entry.user_frame() if s.last_entry else None) for s in states if s.rank in never]
            stacks += [(r, _describe(e), e.user_frame()) for r, e in sorted(present.items())]
            return result("missing_rank", seq, never, list(present),
                          f"Flight recorder, {pg}: rank(s) {', '.join(map(str, never))} never scheduled collective "
                          f"#{seq} ({next(iter(present.values())).op}) that rank(s) "
                          f"{', '.join(map(str, sorted(present)))} waited in.", stacks)
        if len(pending) == len(present):
            return result("all_stuck", seq, [], list(present),
                          f"Flight recorder, {pg}: every rank scheduled collective #{seq} "
                          f"({next(iter(present.values())).op}) and none completed it: suspect the transport.",
                          [(r, _describe(e), e.user_frame()) for r, e in sorted(present.items())])
    if missing_dumps and seqs:
        return result("missing_rank", None, missing_dumps, list(by_rank),
                      f"Flight recorder, {pg}: no dump from rank(s) {', '.join(map(str, missing_dumps))}; the ranks "
                      "that dumped agree on every collective they recorded.", [])
    return result("no_failure", None, [], [], f"Flight recorder, {pg}: the ranks' records agree.", [])



def analyze_dumps(dumps: Sequence[Dump]) -> list[FrResult]:
    """One result per process group, the groups with a problem first."""
    pgs = sorted({e.pg for d in dumps for e in d.entries if not e.is_p2p})
    results = [analyze_pg(pg, dumps) for pg in pgs]
    return sorted(results, key=lambda r: (r.kind == "no_failure", r.pg))
