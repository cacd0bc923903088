"""Correlate ranks and decide what happened.

Ranks are compared within one process group by SeqNum.  The order of the
checks encodes what usually explains what:

1. a rank that failed on its own (OOM, exception, killed) explains the others' timeouts;
2. ranks that disagree on the collective at the same SeqNum are a desync;
3. a rank that never reached the SeqNum the others wait in (or printed nothing) is the straggler;
4. only when every rank is waiting in the same collective is the transport suspect.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from ncclcheck.evidence.frdump import user_frame
from ncclcheck.evidence.types import PG, ErrorKind, FileScan, Loc, Mismatch, RankError
from ncclcheck.findings import Finding, Severity
from ncclcheck.job.franalysis import FrResult, analyze_dumps
from ncclcheck.job.model import Analysis, RankRow, Record, Verdict, VerdictKind
from ncclcheck.transfer import (
    DTYPE_BYTES,
    FABRICS,
    FIXED_SIZE_OPS,
    GATHER_SCATTER_OPS,
    collective_bytes,
    human_bytes,
    human_seconds,
    transfer_seconds,
)

REAL_FAILURES = {ErrorKind.OOM, ErrorKind.CUDA, ErrorKind.EXCEPTION, ErrorKind.KILLED}
# Signals that end a rank on its own account; SIGABRT is the watchdog's abort, SIGTERM torchrun's clean-up.
FATAL_SIGNALS = {"SIGKILL", "SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE"}

FR_ENV = (
    "TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_FR_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 "
    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/tmp/nccl_trace_rank_ TORCH_FR_DUMP_TEMP_FILE=/tmp/nccl_trace_rank_"
)


def _fmt_ranks(ranks: Iterable[int]) -> str:
    rs = sorted(set(ranks))
    return ", ".join(str(r) for r in rs) if rs else "none"


def _numel(n: int | None) -> str:
    return f"{n:,}" if n is not None else "?"


def _sig(r: Record) -> str:
    parts = [r.op_type or "?"]
    if r.numel_in is not None:
        parts.append(f"NumelIn={r.numel_in:,}")
    return " ".join(parts)


class _Facts:
    """Cross-file lookups the checks need."""

    def __init__(self, scans: Sequence[FileScan], records: Sequence[Record]) -> None:
        self.scans = scans
        self.records = records
        self.errors: list[RankError] = [e for s in scans for e in s.errors]
        self.elastic = [e for s in scans for e in s.elastic]
        self.heartbeats = [h for s in scans for h in s.heartbeats]
        self.desync = [d for s in scans for d in s.desync]
        self.mismatches = [m for s in scans for m in s.mismatches]
        self.dumps = [d for s in scans for d in s.dump_signals]
        self.seen: set[int] = {r for s in scans for r in s.ranks_seen}
        self.seen |= {r.who for r in records if r.who is not None}
        self.seen |= {e.who.rank for e in self.errors if e.who.rank is not None}
        self.world = self._world()

    def _world(self) -> int | None:
        printed = [int(f.value) for s in self.scans for f in s.facts if f.key == "world_size"]
        if printed:
            return max(printed)
        sizes = [e.rank + 1 for e in self.elastic if e.rank is not None]
        for d in self.desync:
            sizes += [max(r) + 1 for *_, r in d.snapshot if r]
        for r in self.records:
            small, big = sorted((r.numel_in or 0, r.numel_out or 0))
            if small and big > small and big % small == 0 and r.op_type in GATHER_SCATTER_OPS:
                sizes.append(big // small)
        return max(sizes) if sizes else None

    def first_errors(self) -> dict[int, RankError]:
        """The first error each rank printed, in the order the inputs were given."""
        out: dict[int, RankError] = {}
        for e in self.errors:
            if e.who.rank is not None and e.who.rank not in out:
                out[e.who.rank] = e
        return out


def _group_key(pg: PG | None) -> tuple[str | None, str | None] | None:
    return (pg.id, pg.guid) if pg else None


def _primary_group(records: Sequence[Record]) -> tuple[PG | None, list[Record]]:
    """The process group most timeouts were reported in; records without a PG join the only known one."""
    groups: dict[tuple[str | None, str | None] | None, list[Record]] = defaultdict(list)
    pgs: dict[tuple[str | None, str | None] | None, PG | None] = {}
    for r in records:
        groups[_group_key(r.pg)].append(r)
        pgs.setdefault(_group_key(r.pg), r.pg)
    known = [k for k in groups if k is not None]
    if None in groups and len(known) == 1:
        groups[known[0]].extend(groups.pop(None))
    key = max(groups, key=lambda k: (len(groups[k]), k == ("0", None) or k == ("0", "0")))
    return pgs.get(key), sorted(groups[key], key=lambda r: r.loc.line)


def _size_finding(rec: Record, dtype: str, world: int | None) -> Finding | None:
    item = DTYPE_BYTES.get(dtype, 4)
    nbytes = collective_bytes(rec.op_type, rec.numel_in, rec.numel_out, item)
    if nbytes is None:
        return None
    times = [(f.name, transfer_seconds(nbytes, rec.op_type, world, f)) for f in FABRICS]
    slowest = times[-1][1]
    timeout = (rec.timeout_ms or 600_000) / 1000
    table = "; ".join(f"{name} {human_seconds(t)}" for name, t in times)
    n = f"{world} ranks" if world else "any number of ranks (upper bound)"
    msg = (
        f"{rec.op_type or 'The collective'} of {_numel(max(c for c in (rec.numel_in, rec.numel_out) if c is not None))}"
        f" elements is {human_bytes(nbytes)} if {dtype} (an assumption: the log does not print the dtype). "
        f"With the bus factor for {n} it takes: {table}."
    )
    if slowest * 10 < timeout:
        ratio = f"{timeout / slowest:,.0f}x" if timeout / slowest < 1e6 else "over a million times"
        msg += (
            f" Even on 10 GbE that is {ratio} shorter than the {human_seconds(timeout)} timeout:"
            " the size cannot explain the timeout. A rank never arrived, or the transport hung."
        )
        explain = f"ncclcheck explain --numel {rec.numel_in or rec.numel_out} --model ... (or --config config.json)"
        return Finding(Severity.INFO, "size-not-the-cause", msg, (rec.loc,),
                       f"Do not raise the timeout or shrink the tensor; find the rank that did not join. "
                       f"What tensor it is: {explain}.")
    return Finding(Severity.WARNING, "size-plausible", msg + " On a slow network the size alone comes close to the timeout.",
                   (rec.loc,), "Check which fabric NCCL used (NCCL_DEBUG=INFO: 'Using network ...').")


def _side_findings(facts: _Facts, group: Sequence[Record]) -> list[Finding]:
    out: list[Finding] = []
    for r in group:
        if r.ran_for_ms and r.timeout_ms and r.ran_for_ms > r.timeout_ms * 1.05:
            late = (r.ran_for_ms - r.timeout_ms) / 1000
            out.append(Finding(
                Severity.INFO, "watchdog-late",
                f"Rank {r.who}'s watchdog reported {late:,.0f} s after the timeout expired: that process was itself "
                "stalled (busy GIL, blocked CUDA call) while waiting.", (r.loc,)))
            break
    for r in group:
        if r.last_completed is not None and r.last_enqueued is not None and r.last_completed > r.last_enqueued:
            out.append(Finding(
                Severity.INFO, "garbage-counter",
                f"Rank {r.who} printed last completed work {r.last_completed}, above last enqueued "
                f"{r.last_enqueued}: an uninitialised counter, ignored.", (r.loc,)))
            break
    never = [r for r in group if r.last_completed == -1]
    if never:
        out.append(Finding(
            Severity.WARNING, "first-collective",
            f"Nothing ever completed on this process group (last completed work -1 on rank(s) "
            f"{_fmt_ranks(r.who for r in never if r.who is not None)}): the hang is on its first collective, which points "
            "at communicator set-up: interfaces, firewall, a rank that never created the group.",
            tuple(r.loc for r in never), "Run `ncclcheck probe` on every node and compare the results."))
    for d in facts.dumps:
        if d.from_rank is not None:
            out.append(Finding(Severity.INFO, "first-detector",
                               f"Rank {d.from_rank} was the first to detect the timeout (dump signal received by rank "
                               f"{d.who.rank}).", (d.loc,)))
            break
    warns = [e for e in facts.errors if e.kind in (ErrorKind.NCCL_WARN, ErrorKind.CONNECTION)]
    for e in warns[:3]:
        out.append(Finding(Severity.WARNING, "nccl-warn", f"Rank {e.who.rank}: {e.message}", (e.loc,)))
    nets = {f.value for s in facts.scans for f in s.facts if f.key == "network"}
    if nets:
        loc = next(f.loc for s in facts.scans for f in s.facts if f.key == "network")
        out.append(Finding(Severity.INFO, "transport", f"NCCL used network transport: {', '.join(sorted(nets))}.",
                           (loc,)))
    return out


def _failed_first(facts: _Facts, group: Sequence[Record]) -> tuple[dict[int, Loc], dict[int, str]]:
    """Ranks whose own failure came before (or instead of) their timeout."""
    first_record_line = {}
    for r in group:
        if r.who is not None:
            first_record_line.setdefault((r.who, r.loc.file), r.loc.line)
    timed_out = {r.who for r in group}
    culprits: dict[int, Loc] = {}
    why: dict[int, str] = {}
    for rank, e in facts.first_errors().items():
        if e.kind not in REAL_FAILURES:
            continue
        line = first_record_line.get((rank, e.loc.file))
        if rank not in timed_out or (line is not None and e.loc.line < line):
            culprits.setdefault(rank, e.loc)
            why.setdefault(rank, e.message)
    for f in facts.elastic:
        own_failure = (f.exitcode or 0) > 0 or f.signal in FATAL_SIGNALS
        if f.rank is not None and own_failure and f.rank not in culprits:
            culprits[f.rank] = f.loc
            why[f.rank] = f"exit code {f.exitcode}" + (f" ({f.signal})" if f.signal else "")
    return culprits, why


def _mismatch(group: Sequence[Record]) -> tuple[list[int], list[int], str] | None:
    """Ranks disagreeing on the collective at the same SeqNum, or on the SeqNum itself."""
    by_seq: dict[int | None, list[Record]] = defaultdict(list)
    for r in group:
        by_seq[r.seq].append(r)
    for seq, recs in sorted(by_seq.items(), key=lambda kv: (kv[0] is None, kv[0])):
        ops = {r.op_type for r in recs if r.op_type}
        fixed = all(op in FIXED_SIZE_OPS for op in ops)
        sizes = {r.numel_in for r in recs if r.numel_in is not None}
        if len(ops) > 1 or (fixed and len(sizes) > 1):
            sigs = Counter(_sig(r) for r in recs)
            top, top_n = sigs.most_common(1)[0]
            if list(sigs.values()).count(top_n) > 1:
                # A tie: the side with the smaller tensor (a barrier, a metric) most often left a loop early.
                top = max(sigs, key=lambda s: max((r.numel_in or 0) for r in recs if _sig(r) == s))
            culprit = [r.who for r in recs if _sig(r) != top and r.who is not None]
            waiting = [r.who for r in recs if _sig(r) == top and r.who is not None]
            where = "; ".join(
                f"rank(s) {_fmt_ranks(r.who for r in recs if _sig(r) == s and r.who is not None)} in {s}"
                for s in sigs
            )
            return culprit, waiting, f"At SeqNum {seq} the ranks are in different collectives: {where}."
    seqs = {r.seq for r in group if r.seq is not None}
    if len(seqs) > 1:
        where = "; ".join(
            f"rank(s) {_fmt_ranks(r.who for r in group if r.seq == s and r.who is not None)} at SeqNum {s}"
            for s in sorted(seqs)
        )
        counts = Counter(r.seq for r in group if r.seq is not None)
        top, n = counts.most_common(1)[0]
        if list(counts.values()).count(n) > 1:
            return [], [], (f"The ranks timed out at different positions in the same process group ({where}): "
                            "their collective sequences diverged. The logs cannot tell which side issued the extra "
                            "or the missing collective.")
        culprit = [r.who for r in group if r.seq != top and r.who is not None]
        waiting = [r.who for r in group if r.seq == top and r.who is not None]
        return culprit, waiting, f"The ranks timed out at different SeqNums ({where}): their collective sequences diverged."
    return None


def _fingerprint_mismatch(m: Mismatch) -> tuple[list[int], list[int], str]:
    """TORCH_DISTRIBUTED_DEBUG=DETAIL's report: PyTorch names its own rank first, the other as differing."""
    return [m.rank_b], [m.rank_a], f"Rank {m.rank_a} ran {m.fingerprint_a} but rank {m.rank_b} ran {m.fingerprint_b}."


def _missing(facts: _Facts, group: Sequence[Record], seq: int | None) -> tuple[list[int], list[int], list[Loc]]:
    """(silent ranks seen in the inputs, ranks absent from the inputs, evidence) for this SeqNum."""
    timed_out = {r.who for r in group if r.who is not None}
    evidence: list[Loc] = []
    lagging: set[int] = set()
    for d in facts.desync:
        for lag in d.lagging:
            lagging.update(lag.ranks)
            evidence.append(d.loc)
    for dmp in facts.dumps:
        if seq is not None and dmp.last_enqueued is not None and dmp.last_enqueued < seq and dmp.who.rank is not None:
            lagging.add(dmp.who.rank)
            evidence.append(dmp.loc)
    silent = sorted((facts.seen - timed_out) | (lagging - timed_out))
    absent: list[int] = []
    if timed_out:
        world = facts.world or (max(facts.seen | timed_out) + 1)
        absent = sorted(set(range(world)) - facts.seen - timed_out)
    return silent, absent, evidence


def _next_steps(kind: VerdictKind, culprits: Sequence[int]) -> tuple[str, ...]:
    who = f"rank {_fmt_ranks(culprits)}" if culprits else "the culprit rank"
    record_next = f"Next time, capture flight-recorder dumps of every rank: export {FR_ENV}"
    if kind is VerdictKind.RANK_FAILED_FIRST:
        return (f"Fix the first error on {who}; the other ranks' timeouts are only its cascade.",
                "Raising the timeout will not help: the failed rank will never arrive.", record_next)
    if kind is VerdictKind.COLLECTIVE_MISMATCH:
        return ("Make every rank issue the same collectives in the same order: look for collectives inside "
                "rank-dependent branches (if rank == 0, early exits, uneven batches per rank, eval/logging/"
                "checkpoint code).",
                "Reproduce with TORCH_DISTRIBUTED_DEBUG=DETAIL: the mismatch becomes an immediate error that names "
                "both collectives.", record_next)
    if kind is VerdictKind.LAGGING_RANK:
        return (f"Look at what {who} was doing instead of joining: while it hangs, `py-spy dump --pid <pid>` on "
                "that rank shows its Python stack.",
                "Typical causes: rank-0-only work (saving, evaluation, preprocessing), a slow data loader, "
                "uneven data, a crash whose log is missing.", record_next,
                "Raise the timeout only if the straggler is doing legitimate long work, and only around that phase.")
    if kind is VerdictKind.ALL_RANKS_STUCK:
        return ("Every rank waits in the same collective: suspect the transport. Run NCCL's own test on the same "
                "GPUs (all_reduce_perf from nccl-tests) or `torchrun -m ncclcheck.bench`.",
                "Re-run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_DEBUG_FILE=/tmp/nccl.%h.%p.log and check "
                "the interfaces NCCL picked; run `ncclcheck probe` on every node.",
                "Try NCCL_P2P_DISABLE=1 or NCCL_IB_DISABLE=1 once, only to bisect a hardware path.", record_next)
    if kind is VerdictKind.WATCHDOG_STUCK:
        return ("The watchdog thread itself stopped making progress: a CUDA call or the GIL is blocked. Dump the "
                "stacks of the stuck process (`py-spy dump --native --pid <pid>`).",
                "Check `nvidia-smi` and `dmesg` for Xid errors on that host.")
    return ()


def decide(scans: Sequence[FileScan], records: Sequence[Record], dtype: str = "float32") -> Analysis:
    """Correlate everything read and return the verdict, the per-rank table and the findings."""
    facts = _Facts(scans, records)
    pg, group = _primary_group(records) if records else (None, [])
    seq = Counter(r.seq for r in group).most_common(1)[0][0] if group else None
    findings: list[Finding] = []
    culprits: list[int] = []
    waiting: list[int] = []
    failed, why = _failed_first(facts, group)

    if group:
        waiting_all = sorted({r.who for r in group if r.who is not None})
        mismatch = _mismatch(group)
        silent, absent, lag_evidence = _missing(facts, group, seq)
        hung = next((r for r in group if r.seq == seq), group[0])
        if failed:
            kind = VerdictKind.RANK_FAILED_FIRST
            culprits, waiting = sorted(failed), [r for r in waiting_all if r not in failed]
            detail = "; ".join(f"rank {r}: {why[r]} ({failed[r]})" for r in sorted(failed))
            summary = (f"Rank {_fmt_ranks(culprits)} failed first ({detail}); "
                       f"{len(waiting)} rank(s) then timed out waiting in {_sig(hung)} (SeqNum {seq}).")
            findings.append(Finding(Severity.ERROR, "rank-failed-first", summary,
                                    tuple(failed[r] for r in culprits) + (hung.loc,)))
        elif mismatch is not None or facts.mismatches:
            kind = VerdictKind.COLLECTIVE_MISMATCH
            if mismatch is not None:
                culprits, waiting, summary = mismatch
                evidence = tuple(r.loc for r in group)
            else:
                culprits, waiting, summary = _fingerprint_mismatch(facts.mismatches[0])
                evidence = (facts.mismatches[0].loc,)
            findings.append(Finding(Severity.ERROR, "collective-mismatch", summary, evidence[:8]))
        elif silent or absent:
            kind = VerdictKind.LAGGING_RANK
            culprits = silent or absent
            waiting = waiting_all
            if silent:
                where = f"SeqNum {seq}" + (f", {pg.label()}" if pg else "")
                limit = f"{human_seconds(hung.timeout_ms / 1000)} " if hung.timeout_ms else ""
                summary = (f"Rank {_fmt_ranks(silent)} never joined {_sig(hung)} ({where}); rank(s) "
                           f"{_fmt_ranks(waiting)} waited in it until the {limit}timeout. Rank {_fmt_ranks(silent)} "
                           "is the likely culprit.")
            else:
                summary = (f"Rank(s) {_fmt_ranks(waiting)} timed out in {_sig(hung)} (SeqNum {seq}); rank(s) "
                           f"{_fmt_ranks(absent)} printed nothing in these inputs: either they never reached it "
                           "(the likely culprits) or their logs were not given.")
            findings.append(Finding(Severity.ERROR, "lagging-rank", summary,
                                    tuple(lag_evidence) + tuple(r.loc for r in group)[:8]))
        else:
            kind = VerdictKind.ALL_RANKS_STUCK
            waiting = waiting_all
            summary = (f"All {len(waiting)} rank(s) seen are waiting in the same collective, {_sig(hung)} at SeqNum "
                       f"{seq}, and none is missing: suspect the transport (network, NVLink/PCIe P2P, NCCL itself).")
            findings.append(Finding(Severity.ERROR, "all-ranks-stuck", summary, tuple(r.loc for r in group)[:8]))
        size = _size_finding(hung, dtype, facts.world)
        if size:
            findings.append(size)
        findings.extend(_side_findings(facts, group))
    elif facts.heartbeats:
        kind = VerdictKind.WATCHDOG_STUCK
        hb = facts.heartbeats[0]
        culprits = sorted({h.who.rank for h in facts.heartbeats if h.who.rank is not None})
        summary = (f"The heartbeat monitor fired on rank {_fmt_ranks(culprits)}: the NCCL watchdog thread was stuck, "
                   "not a collective timeout. A CUDA call or the GIL is blocked in that process.")
        findings.append(Finding(Severity.ERROR, "watchdog-stuck", summary, tuple(h.loc for h in facts.heartbeats)[:8]))
        pg = hb.pg
    elif facts.mismatches:
        kind = VerdictKind.COLLECTIVE_MISMATCH
        culprits, waiting, summary = _fingerprint_mismatch(facts.mismatches[0])
        findings.append(Finding(Severity.ERROR, "collective-mismatch", summary, (facts.mismatches[0].loc,)))
    elif failed:
        kind = VerdictKind.RANK_FAILED_FIRST
        culprits = sorted(failed)
        summary = "; ".join(f"Rank {r} failed: {why[r]}" for r in culprits) + "."
        findings.append(Finding(Severity.ERROR, "rank-failed-first", summary, tuple(failed[r] for r in culprits)))
    elif facts.elastic:
        kind = VerdictKind.ALL_RANKS_STUCK
        waiting = sorted({f.rank for f in facts.elastic if f.rank is not None})
        summary = ("Every failed rank in torchrun's summary ended by SIGABRT (the watchdog's abort after a collective "
                   "timeout) or SIGTERM (torchrun stopping the survivors); the timeout lines themselves are not in "
                   "these inputs. Give the ranks' own logs to name the collective.")
        findings.append(Finding(Severity.ERROR, "aborted-without-timeout-lines", summary,
                                tuple(f.loc for f in facts.elastic)[:8]))
    else:
        kind = VerdictKind.NO_FAILURE
        summary = "No collective timeout, desync, heartbeat failure or rank failure found in these inputs."
    if facts.elastic and any(f.root_cause for f in facts.elastic):
        root = next(f for f in facts.elastic if f.root_cause)
        findings.append(Finding(Severity.INFO, "root-cause-caveat",
                                f"torchrun's 'Root Cause' names rank {root.rank}: that is only the first process to "
                                "exit, not necessarily the rank that hung.", (root.loc,)))
    for d in facts.desync:
        lag = "; ".join(
            f"rank(s) {_fmt_ranks(x.ranks)} "
            + ("never joined any collective" if x.never_joined else
               f"finished #{x.finished} but did not join #{x.did_not_join}" if x.did_not_join is not None else
               f"joined but did not finish #{x.did_not_finish}")
            for x in d.lagging) or "no lagging rank named"
        findings.append(Finding(Severity.INFO, "desync-report",
                                f"PyTorch's desync report (rank {d.reporting_rank}, timed out in {d.timeout_collective} "
                                f"#{d.timeout_index}): {lag}. Its # counts differ from SeqNum.", (d.loc,)))
    stacks = {st.who.rank: st for s in scans for st in s.stacks if st.who.rank is not None}
    if stacks:
        where = "; ".join(f"rank {r}: {st.frames[0].name} from {user_frame(st.frames)}" for r, st in
                          sorted(stacks.items()))
        findings.append(Finding(Severity.INFO, "collective-stack",
                                f"Where each rank issued its failed collective (PyTorch's stack trace): {where}.",
                                tuple(st.loc for _, st in sorted(stacks.items()))[:8]))
    fr = analyze_dumps([s.dump for s in scans if s.dump is not None])
    primary = next((r for r in fr if r.kind != "no_failure"), None)
    if primary is not None:
        if kind is VerdictKind.NO_FAILURE:
            kind, summary = _FR_KIND[primary.kind], primary.message
            culprits, waiting = list(primary.culprit_ranks), list(primary.waiting_ranks)
            seq, pg = primary.seq, PG(id=primary.pg, desc=primary.pg_desc)
        findings.append(_fr_finding(primary, scans))
    for r in fr:
        if r.missing_dumps:
            findings.append(Finding(Severity.WARNING, "fr-missing-dumps",
                                    f"No flight-recorder dump from rank(s) {_fmt_ranks(r.missing_dumps)} of process "
                                    f"group {r.pg}; the analysis uses the dumps that exist.", ()))
    verdict = Verdict(kind, summary, tuple(culprits), tuple(waiting), pg, seq, tuple(findings),
                      _next_steps(kind, culprits))
    return Analysis(tuple(scans), tuple(records), verdict, tuple(_rows(facts, group, culprits)), dtype, tuple(fr))


_FR_KIND = {"missing_rank": VerdictKind.LAGGING_RANK, "collective_mismatch": VerdictKind.COLLECTIVE_MISMATCH,
            "all_stuck": VerdictKind.ALL_RANKS_STUCK}


def _fr_finding(r: FrResult, scans: Sequence[FileScan]) -> Finding:
    """The dumps' answer, with the line of user code each rank was at."""
    stacks = "; ".join(f"rank {rank}: {what}" + (f" from {frame}" if frame else "") for rank, what, frame in r.stacks)
    files = tuple(Loc(s.file, 0) for s in scans if s.dump is not None)
    return Finding(Severity.ERROR, "flight-recorder", r.message + (f" Stacks: {stacks}." if stacks else ""), files,
                   "The frames name the line of code that issued (or skipped) the collective on each rank.")


def _rows(facts: _Facts, group: Sequence[Record], culprits: Sequence[int]) -> list[RankRow]:
    by_rank = {r.who: r for r in group if r.who is not None}
    errors = facts.first_errors()
    files: dict[int, set[str]] = defaultdict(set)
    for s in facts.scans:
        for r in s.ranks_seen:
            files[r].add(s.file)
    ranks = sorted(facts.seen | set(by_rank) | set(culprits))
    rows = []
    for rank in ranks:
        rec = by_rank.get(rank)
        err = errors.get(rank)
        if err is not None and err.kind in REAL_FAILURES:
            state = f"failed ({err.kind.value})"
        elif rec is not None:
            state = "timed out"
        elif rank in facts.seen:
            state = "no timeout line"
        else:
            state = "not in inputs"
        if rank in culprits:
            state += ", culprit"
        rows.append(RankRow(rank, state, rec, err, tuple(sorted(files.get(rank, ())))))
    return rows
