"""What NCCL's collective trace says of a hang: the processes issued different collectives, or the same ones on
several communicators in opposite orders (issue 41).

NCCL prints each collective at its call (evidence/formats/colltrace.py), so a process's lines of one communicator
are that communicator's calls in the order the process made them. Every member must make the same calls in the same
order: NCCL matches them by position alone and never checks the op, the count, the type or the root (NCCL's user
guide, "Collective operations": every rank must call each collective with the same count and type). So:

* Per process (NCCL's ``host:pid`` header; where a paste dropped it, each run of trace lines under its own heading,
  joined where two runs print the same communicator's address, which one process alone can hold) and per
  communicator, the calls are lined up across processes: by ``opCount`` where it advances on every call of that
  communicator in every process (up to NCCL 2.11 it counts each call; since, only the calls that went through the
  proxy, and on one node it can stay 0), else by their order in the input. A communicator is matched across
  processes by its set-up line: the ``commId`` every member prints (2.18 on), a split's parent and split count, else
  the order of the process's set-ups of that size; with no set-up line, as the one communicator of its size where
  each process shows one address of that size (and no more processes than the size: else two communicators of one
  size), else by identical calls, else of that size among the rest.
* Two processes whose calls at one position differ in op, count, type, reduction or root issued a collective
  mismatch (``collective_mismatch``): the verdict names each side by the rank a line states (the communicator's
  set-up line, RCCL's ``globalrank``, a launcher's rank tag), otherwise by its host, PID and GPU, and a culprit only
  where a strict majority of three or more processes agrees and the odd one's global rank is stated.
* Two processes that issued calls of two communicators in opposite orders, both issuing both, or each stopping
  at its own, wait for each other (``deadlock``, no single culprit): NCCL's user guide, "Using multiple NCCL
  communicators concurrently", says operations on different communicators must be issued in the same order on every
  rank, or grouped (ncclGroupStart/End), since a blocked launch or a GPU's full occupancy waits for the other.

A paste with no header and no headings could be any mixture of processes: its lines of one communicator address are
one process's, and nothing says which other addresses share a process with them, so it is compared only across the
runs of lines described above, and otherwise left unread (said in the summary where that is all there is).
Recorded: tests/data/gpu/colltrace (NCCL 2.28.9 on two H200s: rank 1's all_gather where rank 0 all_reduces, and two
groups' all_reduces issued in opposite orders).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ncclcheck.evidence.formats.colltrace import Call, Comm
from ncclcheck.evidence.types import Loc
from ncclcheck.findings import Finding, Severity
from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.model import Job, VerdictKind
from ncclcheck.job.rules import Decision

MISMATCH = cause("trace_mismatch")
DISAGREE = cause("calls_disagree")
ORDER = cause("comm_order_deadlock")
# The verdicts a trace may replace: nothing found, or a stop that no line explains.
_OPEN = (VerdictKind.NO_FAILURE, VerdictKind.INCOMPLETE, VerdictKind.ALL_RANKS_STUCK)
_OPEN_CAUSES = ("stopped_after_setup", "first_collective_hang")
_P2P = ("Send", "Recv")  # point-to-point calls: each peer's count and peer differ by design
_ROOTED = ("Broadcast", "Reduce", "Gather", "Scatter")
_REDUCING = ("AllReduce", "Reduce", "ReduceScatter")
PAIRS = 64  # the most processes whose orders are weighed pair by pair (a paste or a small job's logs)
# ncclDataType_t (src/nccl.h.in), the numbers the trace prints.
DTYPES = ("int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64", "bfloat16",
          "float8e4m3", "float8e5m2")


# A communicator's key shared by its members across processes, and each one's calls by position per process.
Key = tuple[object, ...]
Aligned = dict[Key, dict[str, dict[int, tuple[Call, Loc]]]]


@dataclass(frozen=True)
class Proc:
    """One process of the trace: its name in words, its rank where a line states it, its calls in issue order."""

    key: str
    name: str
    rank: int | None  # its global rank, where a line states it
    calls: tuple[tuple[Call, Loc], ...]
    comms: dict[str, Comm]  # its communicators' set-up lines, by address


def _procs(job: Job) -> tuple[list[Proc], bool]:
    """The processes of the trace lines, and whether some were told apart only by the runs of a paste."""
    out: list[Proc] = []
    unheaded = False
    for s in job.facts.traces:
        calls = [(Call.of(f.value), f) for f in s.calls]
        comms = [(Comm.of(f.value), f) for f in s.comms]
        groups: dict[str, list[tuple[Call, Loc]]] = {}
        ranks: dict[str, int] = {}
        headless: list[list[tuple[Call, Loc]]] = []
        last = -2
        for c, f in sorted(calls, key=lambda cf: cf[1].loc.line):
            if c.proc:
                groups.setdefault(c.proc, []).append((c, f.loc))
                if f.who.global_rank is not None:
                    ranks.setdefault(c.proc, f.who.global_rank)
            elif f.who.global_rank is not None:
                groups.setdefault(f"rank{f.who.global_rank}", []).append((c, f.loc))
                ranks.setdefault(f"rank{f.who.global_rank}", f.who.global_rank)
            else:
                if f.loc.line != last + 1 or not headless:
                    headless.append([])
                headless[-1].append((c, f.loc))
                last = f.loc.line
        for i, run in enumerate(_join(headless)):
            unheaded = unheaded or len(headless) > 1
            groups[f"{s.file}#{i}"] = run
        for key, cs in groups.items():
            own = {c.comm: c for c, _ in comms if c.proc == key.partition("#")[0] or c.proc == "" and "#" in key}
            c0 = cs[0][0]
            rank = ranks.get(key, c0.grank)
            if "#" in key:
                name = f"the process of lines {cs[0][1].line}-{cs[-1][1].line} of {s.file}"
            else:
                name = f"{key}" + (f" (GPU {c0.dev})" if c0.dev else "")
            out.append(Proc(f"{s.file}|{key}", name, rank, tuple(cs), own))
    return out, unheaded


def _join(runs: list[list[tuple[Call, Loc]]]) -> list[list[tuple[Call, Loc]]]:
    """Runs of header-less lines that print one communicator's address are one process's: joined."""
    out: list[list[tuple[Call, Loc]]] = []
    for run in runs:
        addrs = {c.comm for c, _ in run}
        for o in out:
            if addrs & {c.comm for c, _ in o}:
                o.extend(run)
                break
        else:
            out.append(list(run))
    return out


def _keys(procs: list[Proc]) -> dict[tuple[str, str], Key]:
    """Each process's communicators matched across processes: (process key, address) -> a key all members share."""
    keys: dict[tuple[str, str], Key] = {}
    for p in procs:
        seen: dict[int, int] = {}
        for addr, c in sorted(p.comms.items(), key=lambda ac: ac[1].order):
            if c.commid:
                keys[(p.key, addr)] = ("id", c.commid)
            elif c.parent and (p.key, c.parent) in keys:
                keys[(p.key, addr)] = ("split", keys[(p.key, c.parent)], c.split)
            else:
                n = seen[c.nranks] = seen.get(c.nranks, -1) + 1
                keys[(p.key, addr)] = ("setup", c.nranks, n)
    # Communicators no set-up line names: by identical calls, else the one of its size each process shows.
    loose: dict[str, dict[str, tuple[int, Key]]] = {}
    for p in procs:
        addrs = dict.fromkeys(call.comm for call, _ in p.calls if (p.key, call.comm) not in keys)
        for addr in addrs:
            mine = [call for call, _ in p.calls if call.comm == addr]
            sig: Key = tuple((m.op, m.count, m.dtype, m.redop, m.root) for m in mine)
            loose.setdefault(p.key, {})[addr] = (mine[0].nranks, sig)
    if len(loose) < 2:
        return keys
    # A size that each process shows on one address alone, held by no more processes than the size: one communicator,
    # whatever its calls (they are what is compared); the calls match only where a process holds two of one size.
    _claim(loose, keys, "size", lambda n, _: n, bounded=True)
    _claim(loose, keys, "calls", lambda _, sig: sig, bounded=False)
    _claim(loose, keys, "size", lambda n, _: n, bounded=True)  # of that size among the rest
    return keys


def _claim(loose: dict[str, dict[str, tuple[int, Key]]], keys: dict[tuple[str, str], Key], tag: str,
           of: Callable[[int, Key], Any], bounded: bool) -> None:
    """The communicators no key names yet, grouped by ``of`` their size and calls: a group of one address in each of
    two or more processes (and, ``bounded``, no more processes than its size) is one communicator across them."""
    groups: dict[Any, list[tuple[str, str]]] = {}
    for pk, found in loose.items():
        for addr, (n, sig) in found.items():
            if (pk, addr) not in keys:
                groups.setdefault(of(n, sig), []).append((pk, addr))
    for i, (g, members) in enumerate(groups.items()):
        if len(members) > 1 and (not bounded or len(members) <= g) and len({pk for pk, _ in members}) == len(members):
            for m in members:
                keys[m] = (tag, g if bounded else i)  # the calls' own tuple is long: a number stands for it


def _aligned(procs: list[Proc], keys: dict[tuple[str, str], Key]) -> Aligned:
    """Each matched communicator's calls per process, by position (opCount where it advances on every call of it in
    every process, else the order of its calls in the input)."""
    comms: dict[Key, dict[str, list[tuple[Call, Loc]]]] = {}
    for p in procs:
        for c, loc in p.calls:
            if (k := keys.get((p.key, c.comm))) is not None:
                comms.setdefault(k, {}).setdefault(p.key, []).append((c, loc))
    out: Aligned = {}
    for k, per in comms.items():
        if len(per) < 2:
            continue
        counted = all(len({c.opcount for c, _ in cs}) == len(cs) for cs in per.values())
        out[k] = {pk: {(c.opcount if counted else c.index): (c, loc) for c, loc in cs} for pk, cs in per.items()}
    return out


def _said(c: Call) -> str:
    dtype = DTYPES[c.dtype] if 0 <= c.dtype < len(DTYPES) else f"type {c.dtype}"
    root = f" root {c.root}" if c.op in _ROOTED else ""
    return f"{c.op} of {c.count:,} {dtype}{root}"


def _sig(c: Call) -> Key:
    return (c.op, c.count, c.dtype, c.redop if c.op in _REDUCING else 0, c.root if c.op in _ROOTED else 0)


def _label(p: Proc, comm: Comm | None) -> str:
    if comm is not None:
        return f"{p.name}, rank {comm.rank} of that communicator's {comm.nranks}"
    if p.rank is not None:
        return f"{p.name}, rank {p.rank}"
    return p.name


def _mismatch(procs: list[Proc], aligned: Aligned) -> Decision | None:
    """The first position of a matched communicator where processes issued different calls, as a decision's parts."""
    by = {p.key: p for p in procs}
    found = []
    for k, per in aligned.items():
        for pos in sorted({i for calls in per.values() for i in calls}):
            here = {pk: calls[pos] for pk, calls in per.items() if pos in calls and calls[pos][0].op not in _P2P}
            if len({_sig(c) for c, _ in here.values()}) > 1:
                found.append((min(loc.line for _, loc in here.values()), k, pos, here))
                break
    if not found:
        return None
    _, k, pos, here = min(found, key=lambda f: f[0])
    sides: dict[Key, list[str]] = {}
    for pk, (c, _) in here.items():
        sides.setdefault(_sig(c), []).append(pk)
    big = max(sides.values(), key=len)
    odd = [pk for s in sides.values() if s is not big for pk in s] if len(here) >= 3 and len(big) * 2 > len(here) \
        else []
    words = []
    for pk, (c, loc) in sorted(here.items(), key=lambda kv: kv[1][1].line):
        p = by[pk]
        words.append(f"{_label(p, p.comms.get(c.comm))} issued {_said(c)} ({loc})")
    first = next(iter(here.values()))[0]
    at = f"opCount {first.opcount:x}" if all(c.opcount == first.opcount for c, _ in here.values()) and \
        any(c.opcount for c, _ in here.values()) else f"call {pos + 1} the inputs show"
    culprits = tuple(sorted(r for pk in odd if (r := by[pk].rank) is not None))
    blame = (f" The majority issued the other: {', '.join(by[pk].name for pk in odd)} is the odd one." if odd else
             " Nothing these lines show singles one side out: either may be the one that is wrong.")
    ops = {c.op for c, _ in here.values()}
    # One op with another count, type, reduction or root is one call made with different arguments (calls_disagree,
    # as job/disagree.py reads it from PyTorch's records), save a one-element AllReduce, which is how a barrier is
    # issued (maybe another place in the program).
    one = len(ops) == 1 and not (ops == {"AllReduce"} and any(c.count == 1 for c, _ in here.values()))
    what = f"one {first.op} with different arguments" if one else "different collectives"
    summary = (f"NCCL's collective trace shows the processes of one communicator ({first.nranks} ranks) issuing "
               f"{what} at its {at}: {'; '.join(words)}. NCCL matches its members' calls by position alone and "
               f"checks none of their arguments, so they wait in calls that never meet (or exchange the wrong "
               f"data).{blame}")
    locs = tuple(loc for _, loc in sorted(here.values(), key=lambda cl: cl[1].line))
    said = "; ".join(dict.fromkeys(_said(c) for c, _ in sorted(here.values(), key=lambda cl: cl[1].line)))
    detail = f"the trace shows {what} at the communicator's {at} ({said})"
    return _decision(VerdictKind.COLLECTIVE_MISMATCH, summary, culprits, Diagnosis(
        DISAGREE if one else MISMATCH, culprits, detail, locs[0], locs, detail))


def _crossed(procs: list[Proc], aligned: Aligned) -> Decision | None:
    """Two processes that issued two matched communicators' calls in opposite orders. Only each process's last call
    on each communicator is weighed: a crossing followed by later calls on both did not hang them (the launches
    were not blocking and both calls completed). Pairs of processes are weighed up to :data:`PAIRS` processes."""
    by = {p.key: p for p in procs}
    last: dict[str, dict[Key, tuple[int, int, Loc, Call]]] = {}  # process -> communicator -> (line, position, ...)
    every: dict[str, dict[tuple[Key, int], int]] = {}  # process -> (communicator, position) -> line
    for k, per in aligned.items():
        for pk, calls in per.items():
            i = max(calls)
            c, loc = calls[i]
            last.setdefault(pk, {})[k] = (loc.line, i, loc, c)
            every.setdefault(pk, {}).update({(k, j): cl[1].line for j, cl in calls.items()})
    if len(last) > PAIRS:
        return None
    final = {pk: max(ev.values(), key=lambda v: v[0])[2] for pk, ev in last.items()}
    pks = sorted(last)
    for x, pa in enumerate(pks):
        for pb in pks[x + 1:]:
            for ka, (la, ia, loc_a, ca) in sorted(last[pa].items(), key=lambda kv: kv[1][0]):
                for kb, (lb, ib, loc_b, cb) in last[pb].items():
                    if ka == kb:
                        continue
                    a_in_b, b_in_a = every[pb].get((ka, ia)), every[pa].get((kb, ib))
                    a_before = b_in_a is None or la < b_in_a
                    b_before = a_in_b is None or lb < a_in_b
                    both = a_in_b is not None and b_in_a is not None
                    stopped = final[pa] == loc_a and final[pb] == loc_b
                    if a_before and b_before and (both or stopped):
                        return _order(by[pa], by[pb], (ca, loc_a), (cb, loc_b), both)
    return None


def _order(pa: Proc, pb: Proc, a: tuple[Call, Loc], b: tuple[Call, Loc], both: bool) -> Decision:
    (ca, la), (cb, lb) = a, b
    how = ("each then issued the other's, in the opposite order" if both else
           "and neither printed a call after it: each waits in its own, for a peer that is waiting in the other")
    summary = (f"NCCL's collective trace shows two processes issuing calls of two communicators in opposite orders: "
               f"{_label(pa, pa.comms.get(ca.comm))} issued {_said(ca)} on communicator {ca.comm} first ({la}), "
               f"{_label(pb, pb.comms.get(cb.comm))} issued {_said(cb)} on the other, {cb.comm}, first ({lb}), {how}. "
               "A collective completes only when every member has issued it, so with blocking launches or a GPU "
               "fully occupied each process waits for a peer that waits for it: an order deadlock across "
               "communicators, with no single culprit.")
    ring = tuple(sorted(r for r in (pa.rank, pb.rank) if r is not None))
    detail = "two processes issued two communicators' collectives in opposite orders"
    d = _decision(VerdictKind.DEADLOCK, summary, (), Diagnosis(ORDER, (), detail, la, (la, lb), detail))
    return replace(d, ring=ring if len(ring) == 2 else ())


def _decision(kind: VerdictKind, summary: str, culprits: tuple[int, ...], diag: Diagnosis) -> Decision:
    return Decision(kind=kind, summary=summary, culprits=culprits, waiting=(), unknown=(), ring=(), cause=diag,
                    primary=None, named=None, busy=None, unnamed_busy=None, killed=False, dumped=False, waited="")


def traced(job: Job, d: Decision) -> Decision:
    """The decision the collective trace gives (the module's docstring) where no other rule found more, else ``d``."""
    if d.kind not in _OPEN or d.cause is not None and d.cause.cause.kind not in _OPEN_CAUSES:
        return d
    procs, _ = _procs(job)
    if len(procs) < 2:
        return d
    keys = _keys(procs)
    aligned = _aligned(procs, keys)
    found = _crossed(procs, aligned) or _mismatch(procs, aligned)
    if found is None:
        return d
    waiting = tuple(r for r in sorted({p.rank for p in procs if p.rank is not None}) if r not in found.culprits)
    return replace(found, waiting=waiting if found.kind is VerdictKind.COLLECTIVE_MISMATCH else (),
                   unknown=tuple(r for r in d.unknown if r not in found.culprits))


def unplaced_findings(job: Job) -> list[Finding]:
    """Trace lines no header, heading or rank tag places in a process (the module's docstring): what they allow, said
    plainly, one finding an input."""
    out = []
    procs, _ = _procs(job)
    for p in procs:
        if "#" not in p.key or sum(q.key.partition("#")[0] == p.key.partition("#")[0] for q in procs) > 1:
            continue
        addrs = dict.fromkeys(c.comm for c, _ in p.calls)
        if len(addrs) < 2:
            continue
        out.append(Finding(
            Severity.INFO, "trace-unplaced",
            f"NCCL's collective trace lines here ({len(p.calls):,}, on {len(addrs)} communicator addresses) carry no "
            "NCCL header (host:pid:tid [GPU]) and no heading or rank tag, so which process issued each is not known: "
            "the lines of one address are one process's calls on one communicator, in order, but nothing says which "
            "addresses are one process's or the same communicator's in another process, so no calls were compared "
            "across processes.",
            tuple(loc for _, loc in p.calls[:2]),
            "Bring each process's trace lines with NCCL's header (NCCL_DEBUG=INFO prints host:pid:tid [GPU] before "
            "each) or each rank's log as its own file, with its `Init COMPLETE` lines (NCCL_DEBUG_SUBSYS=INIT,COLL)."))
    return out
