"""The flight-recorder dumps' whole histories matched across ranks, collective by collective, op by op.

A hang's rules (job/hang.py) look at the collective the ranks are stuck in. The dumps hold more: every collective
of each group in the window every rank's ring buffer still covers. Every member of a group must issue the same
collectives in the same order (NCCL pairs them by order alone), and each must agree on what NCCL is told: the
op, each tensor's element count and dtype (``ncclAllReduce(sendbuff, recvbuff, count, datatype, ...)`` on every
rank). A disagreement that completed is no less wrong than one that hung: NCCL moved the bytes each rank asked
for, so a larger side waits forever or a smaller one reads garbage, and later collectives pair up wrongly.

This follows what PyTorch's own analyzer checks (torch/distributed/flight_recorder/components: ``Op.match`` and
``build_collectives``), written from its mechanism:

* ranks are matched by sequence number per group, from the newest first record any member holds (older ones are
  not in every buffer), to the last any member issued;
* the ops of a coalesced block share one sequence number (``startCoalescing``/``endCoalescing``: one number for
  the block, the block's end recorded last as ``coalesced``); they are matched op by op, in record order;
* per op: its type; its input sizes (not an all_to_all's or a scatter's, whose inputs differ by rank or exist on
  the root only), output sizes (not an all_to_all's or a gather's); its own syntax (an all_reduce's output is its
  input, an all_gather's output its input times the group's size, a reduce_scatter's input its output times the
  size); input dtypes and output dtypes across ranks, and a rank's input against its output; then its state;
* all_to_all: the elements all ranks send must be the elements all ranks receive; where each rank passes one
  tensor per peer (``all_to_all``), what rank i sends to j must be what j expects from i, so the short side is
  named; where each passes one tensor and its splits (``all_to_all_single``), the totals say only that some split
  is short, and the states say whose: a member that completed it received all it expected, so in a group of two
  the one still in it lacks its only peer's elements;
* a collective some ranks completed that another member never issued (its history ends before it).

Only the first disagreement of a group is reported (after it the pairing of later numbers is in doubt, as the
analyzer says too). A side is named as the culprit only where it is a minority against a majority that agrees;
two ranks that disagree are both named, neither blamed.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ncclcheck.evidence.frdump import numel
from ncclcheck.findings import Finding, Severity
from ncclcheck.job.model import Group, GroupId, Job, Position, VerdictKind, Work
from ncclcheck.ranks import rank_phrase

# Ops by what their tensors mean, in torch.distributed's spelling (a dump's profiling name, normalised by _kind).
_ROOT_OUTPUT = {"gather"}  # only the root's output exists
_ROOT_INPUT = {"scatter"}  # only the root's input exists
_NO_DTYPE_PAIR = {"scatter", "gather", "broadcast", "_broadcast_oop"}  # a rank's input and output may be absent
_SAME_IN_OUT = {"all_reduce", "all_reduce_coalesced", "allreduce_coalesced"}
_GATHERS = {"all_gather", "_all_gather_base", "all_gather_into_tensor", "all_gather_into_tensor_coalesced"}
_SCATTERS = {"reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor", "reduce_scatter_tensor_coalesced"}
# What the report says of each kind of disagreement; "state" alone is no mismatch of the calls.
FIELDS = {"op": "the op", "block": "the ops in the coalesced block", "input_sizes": "input sizes",
          "output_sizes": "output sizes", "syntax": "the op's own sizes", "input_dtypes": "input dtypes",
          "output_dtypes": "output dtypes", "in_out_dtypes": "input against output dtype",
          "all_to_all": "all_to_all sizes", "missing": "whether it was issued", "state": "state"}
CALLS = set(FIELDS) - {"state"}


def _kind(op: str | None) -> str:
    """``_ALLGATHER_BASE`` (the WorkNCCL spelling the model keeps) -> ``_all_gather_base``."""
    low = (op or "").lower()
    for a, b in (("allgather", "all_gather"), ("allreduce", "all_reduce"), ("alltoall", "all_to_all")):
        low = low.replace(a, b)
    return low


def _shape(sizes: Sequence[Sequence[int]]) -> str:
    return ", ".join("x".join(str(d) for d in s) or "scalar" for s in sizes) or "none"


def _total(sizes: Sequence[Sequence[int]]) -> int:
    return sum(numel(tuple(s)) for s in sizes if s)


def _is_end(w: Work) -> bool:
    """A coalesced block's closing entry (``coalesced``, ``ALLGATHER_coalesced``): no tensors of its own."""
    return _kind(w.op).endswith("coalesced") and not any(w.sizes) and not any(w.out_sizes)


@dataclass(frozen=True)
class Disagreement:
    """The first place where a group's members' histories part: what differs, each side's value and ranks."""

    group: GroupId
    seq: int
    field: str  # a key of FIELDS
    sides: tuple[tuple[str, tuple[int, ...]], ...]  # each value in words, with the ranks that hold it
    op: str  # the op as the first side recorded it
    index: int | None  # 1-based place in a coalesced block of ``size`` ops; None for a single op
    size: int
    culprits: tuple[int, ...]
    why: str  # what the difference does, in a sentence

    def where(self) -> str:
        block = f", op {self.index} of its coalesced block of {self.size}" if self.index is not None else ""
        return f"#{self.seq} of {self.group.label()}{block}"

    def words(self) -> str:
        sides = "; ".join(f"{rank_phrase(r)}: {v}" for v, r in self.sides)
        if self.field == "syntax":
            return f"At {self.where()} ({self.op}) the flight-recorder dumps show a malformed call ({sides})."
        return f"At {self.where()} ({self.op}) the ranks' flight-recorder dumps disagree on {FIELDS[self.field]} ({sides})."


def _culprits(sides: dict[str, list[int]]) -> tuple[int, ...]:
    """The minority, where one value is held by more ranks than all the others together."""
    counts = Counter({v: len(r) for v, r in sides.items()})
    (top, n), *rest = counts.most_common()
    if not rest or n <= sum(c for _, c in rest) or n < 2:
        return ()
    return tuple(sorted(r for v, rs in sides.items() if v != top for r in rs))


def _split(works: Iterable[Work]) -> dict[int, list[Work]]:
    """A rank's collectives of one group by sequence number, each number's ops in record order."""
    blocks: dict[int, list[Work]] = defaultdict(list)
    for w in sorted(works, key=lambda x: x.order):
        if not w.p2p and w.seq is not None:
            blocks[w.seq].append(w)
    return blocks


def _differ(field: str, values: dict[int, str], op: str, index: int | None, size: int, group: GroupId, seq: int,
            why: str) -> Disagreement | None:
    """The sides of one field, or None where every rank holds the same value (a wrong call on every rank is
    reported by its own check, not here)."""
    sides: dict[str, list[int]] = defaultdict(list)
    for r, v in sorted(values.items()):
        sides[v].append(r)
    if len(sides) < 2 and field != "syntax":
        return None
    return Disagreement(group, seq, field, tuple((v, tuple(r)) for v, r in sides.items()), op, index, size,
                        _culprits(sides), why)


_WHY_CALL = ("NCCL pairs the members' calls by order alone and moves what each rank asks for: the side that asks "
             "for more waits for data that never comes, the other finishes with the wrong bytes, and every later "
             "collective of the group is paired wrongly.")
_WHY_DTYPE = ("Each rank tells NCCL its element count and datatype: the same count of another dtype is another "
              "number of bytes, so the sides read each other's bytes wrongly (or wait for the rest).")


def _compare_op(ops: dict[int, Work], n: int, group: GroupId, seq: int, index: int | None,
                size: int) -> Disagreement | None:
    """One op of one sequence number on every rank that holds it, as the analyzer's ``Op.match`` orders it."""
    first = ops[min(ops)]
    if len(ops) > 1 and len({(w.op, w.sizes, w.out_sizes, w.dtypes, w.out_dtypes, w.state) for w in ops.values()}) == 1 \
            and _compare_op({min(ops): first}, n, group, seq, index, size) is None:
        return None  # every rank recorded the same call, and the call itself is well formed
    kind = _kind(first.op)
    op = first.op or "?"

    def diff(field: str, value: dict[int, str], why: str = _WHY_CALL) -> Disagreement | None:
        return _differ(field, value, op, index, size, group, seq, why)

    found = diff("op", {r: (w.op or "?") for r, w in ops.items()})
    if found or _is_end(first):
        return found
    if not kind.startswith("all_to_all") and kind not in _ROOT_INPUT:
        found = diff("input_sizes", {r: _shape(w.sizes) for r, w in ops.items()})
    if not found and not kind.startswith("all_to_all") and kind not in _ROOT_OUTPUT:
        found = diff("output_sizes", {r: _shape(w.out_sizes) for r, w in ops.items() if w.out_sizes})
    if found:
        return found
    bad = {}
    for r, w in ops.items():
        i, o = _total(w.sizes), _total(w.out_sizes)
        if not w.out_sizes or not w.sizes:
            continue
        if kind in _SAME_IN_OUT and w.sizes != w.out_sizes:
            bad[r] = f"input {_shape(w.sizes)} into output {_shape(w.out_sizes)}"
        elif kind in _GATHERS and o != i * n:
            bad[r] = f"{i:,} elements in, {o:,} out, where {n} ranks gather {i * n:,}"
        elif kind in _SCATTERS and i != o * n:
            bad[r] = f"{i:,} elements in, {o:,} out, where {n} ranks scatter {i:,} as {i // n:,} each"
    if bad:
        ok = {r: "as the op requires" for r in ops if r not in bad}
        rule = ("an all_reduce's output is its input" if kind in _SAME_IN_OUT else
                "an all_gather's output is its input times the group's size" if kind in _GATHERS else
                "a reduce_scatter's output is its input divided by the group's size")
        return diff("syntax", {**bad, **ok}, f"The call itself is wrong where it was issued: {rule}.")
    ins = {r: "/".join(w.dtypes) for r, w in ops.items() if w.dtypes and kind not in _ROOT_INPUT}
    found = diff("input_dtypes", ins, _WHY_DTYPE)
    if not found and kind not in _ROOT_OUTPUT:
        found = diff("output_dtypes", {r: "/".join(w.out_dtypes) for r, w in ops.items() if w.out_dtypes}, _WHY_DTYPE)
    if not found and kind not in _NO_DTYPE_PAIR:
        pair = {r: f"{'/'.join(w.dtypes)} into {'/'.join(w.out_dtypes)}" for r, w in ops.items()
                if w.dtypes and w.out_dtypes and set(w.dtypes) != set(w.out_dtypes)}
        if pair:
            found = diff("in_out_dtypes", {**pair, **{r: "the same dtype in and out" for r in ops if r not in pair}},
                         _WHY_DTYPE)
    if found:
        return found
    if kind.startswith("all_to_all"):
        found = _all_to_all(ops, op, index, size, group, seq, n)
    return found or diff("state", {r: w.state for r, w in ops.items()}, _state_why({r: w.state for r, w in ops.items()}))


def _state_why(states: dict[int, str]) -> str:
    """What ranks at different states of one agreed collective say (FlightRecorder's update_state: ``started``
    once the op's start event ran on the GPU, which exists only with TORCH_NCCL_ENABLE_TIMING; ``completed`` once
    its end event ran; otherwise ``scheduled``)."""
    scheduled = sorted(r for r, v in states.items() if v == "scheduled")
    started = sorted(r for r, v in states.items() if v == "started")
    done = sorted(r for r, v in states.items() if v == "completed")
    if scheduled and started:
        return (f"The calls agree. {rank_phrase(started).capitalize()} started it on the GPU (their start event ran: "
                f"timing is on), {rank_phrase(scheduled)} never did: {'its' if len(scheduled) == 1 else 'their'} "
                "stream was still busy with earlier work (a kernel, or a collective of another group), so "
                f"{rank_phrase(scheduled)} never launched it.")
    if done:
        return (f"The calls agree. {rank_phrase(done).capitalize()} completed it and "
                f"{rank_phrase(sorted(set(states) - set(done)))} had not: a collective completes only once every "
                "member's kernel has run, so the others' dumps were taken before they saw it complete (dumps of "
                "different moments), or their progress stalled right after it.")
    return "The calls agree; the ranks' progress through them differs."


def _all_to_all(ops: dict[int, Work], op: str, index: int | None, size: int, group: GroupId,
                seq: int, n: int) -> Disagreement | None:
    """What every rank sends must be what every rank receives; with one tensor per peer, pair by pair."""
    members = sorted(ops)
    per_peer = all(len(w.sizes) == len(members) and len(w.out_sizes) == len(members) for w in ops.values())
    if per_peer:
        short: dict[int, str] = {}
        under: set[int] = set()  # ranks that send less than a peer expects: their input was short
        for i, src in enumerate(members):
            for j, dst in enumerate(members):
                sent, wanted = numel(tuple(ops[src].sizes[j])), numel(tuple(ops[dst].out_sizes[i]))
                if sent != wanted and src not in short:
                    short[src] = f"sends {sent:,} elements to rank {dst}, which expects {wanted:,}"
                    if sent < wanted:
                        under.add(src)
        if not short:
            return None
        sides = short | {r: "sends what its peers expect" for r in members if r not in short}
        d = _differ("all_to_all", sides, op, index, size, group, seq,
                    "An all_to_all moves each rank's split to its peer: a split smaller than the peer expects "
                    "leaves the peer waiting for the rest (or reading the wrong bytes). The splits are the ranks' "
                    "input tensors, one per peer, against the peers' output tensors.")
        return None if d is None else replace(d, culprits=tuple(sorted(under)) or d.culprits)
    sent = sum(_total(w.sizes) for w in ops.values())
    got = sum(_total(w.out_sizes) for w in ops.values() if w.out_sizes)
    if not got or sent == got:
        return None
    values = {r: f"{_total(w.sizes):,} in, {_total(w.out_sizes):,} out" for r, w in ops.items()}
    owed = _owed(ops, n, sent, got)
    if owed is not None:
        d = _differ("all_to_all", values, op, index, size, group, seq, owed[1])
        return None if d is None else replace(d, culprits=(owed[0],))
    return _differ("all_to_all", values, op, index, size, group, seq,
                   f"All ranks together send {sent:,} elements and expect {got:,}: some rank's split sizes are not "
                   "what its peers expect (input_split_sizes/output_split_sizes); the dumps record the tensors, not "
                   "the splits, so which rank cannot be told from them.")


def _owed(ops: dict[int, Work], n: int, sent: int, got: int) -> tuple[int, str] | None:
    """The rank whose all_to_all input was short, where the states leave one: the ranks whose op ``completed``
    received every split they expected (a receive completes only once its count arrived), so the elements missing
    are owed to the members still in it; where that is one rank with one peer (a group of two: its split for itself
    is its own input against its own output), the peer sent less than it expects."""
    if sent >= got or n != len(ops) or n != 2:
        return None
    done = [r for r, w in ops.items() if w.state == "completed"]
    waiting = [r for r in ops if r not in done]
    if len(done) != 1 or len(waiting) != 1:
        return None
    return done[0], (f"All ranks together send {sent:,} elements and expect {got:,} (input_split_sizes against "
                     f"output_split_sizes). Rank {done[0]} completed it, so it received all it expected; rank "
                     f"{waiting[0]} still waits for the {got - sent:,} missing, and its only peer is rank {done[0]}.")


def _group_history(g: Group, dumped: Sequence[tuple[int, Position]]) -> Disagreement | None:
    """The first disagreement in one group's window (``dumped``: each rank's dump position in it), or None."""
    blocks: dict[int, dict[int, list[Work]]] = {}
    last: dict[int, int] = {}
    for rank, p in dumped:
        mine = _split(p.works)
        if mine:
            blocks[rank] = mine
            last[rank] = max(max(mine), p.last_enqueued if p.last_enqueued is not None else -1)
    if len(blocks) < 2:
        return None
    n = g.size or len(g.members) or len(blocks)
    start = max(min(b) for b in blocks.values())
    end = max(last.values())
    for seq in range(start, end + 1):
        held = {r: b[seq] for r, b in blocks.items() if seq in b}
        never = sorted(r for r in blocks if last[r] < seq)
        if not held:
            continue
        if never:
            if all(w.state == "completed" for ws in held.values() for w in ws):
                first = held[min(held)][0]
                inner = [w for w in held[min(held)] if not _is_end(w)]
                what = (f"a coalesced block of {len(inner)} {'/'.join(sorted({w.op or '?' for w in inner}))}"
                        if len(held[min(held)]) > 1 else first.op or "?")
                sides = {**{r: "issued and completed it" for r in held}, **{r: "never issued it" for r in never}}
                return _differ("missing", sides, f"{what}", None, 1, g.id, seq,
                               f"A collective completes only once every member has called it: {rank_phrase(never)} "
                               "ran fewer collectives in this group than the others (a rank-dependent branch, an "
                               "uneven last batch), or its dump was taken earlier.")
            continue  # a collective some ranks still wait in: the hang's own rules read it
        counts = {len(ws) for ws in held.values()}
        size = max(counts)
        ops = sum(1 for w in held[min(held)] if not _is_end(w))
        if len(counts) > 1:
            first = held[min(held)][0]
            return _differ("block", {r: " then ".join(w.op or "?" for w in ws) for r, ws in held.items()},
                           first.op or "?", None, size, g.id, seq, _WHY_CALL)
        for i in range(size):
            found = _compare_op({r: ws[i] for r, ws in held.items()}, n, g.id, seq, i + 1 if size > 1 else None, ops)
            if found is not None:
                return found
    return None


_LAST: list[tuple[Job, list[Disagreement]]] = []  # the last job's answer: the rules and the findings each ask


def disagreements(job: Job) -> list[Disagreement]:
    """Each group's first disagreement between its members' dumps, groups in their order."""
    if _LAST and _LAST[0][0] is job:
        return _LAST[0][1]
    dumped: dict[GroupId, list[tuple[int, Position]]] = {}  # one pass over the ranks, not one a group
    for s in job.ranks:
        for p in s.positions:
            if p.source == "dump":
                dumped.setdefault(p.group, []).append((s.rank, p))
    out = []
    for g in job.groups:
        d = _group_history(g, dumped.get(g.id, ()))
        if d is not None:
            out.append(d)
    _LAST[:] = [(job, out)]
    return out


def history_mismatch(job: Job, fields: Iterable[str] = CALLS) -> tuple[list[int], str] | None:
    """The first disagreement of the calls themselves (not of progress), of these fields: its culprits and its
    sentence."""
    wanted = set(fields)
    d = next((x for x in disagreements(job) if x.field in wanted), None)
    if d is None:
        return None
    one = len(d.culprits) == 1
    blame = (f" {rank_phrase(d.culprits).capitalize()} sent less than {'its' if one else 'their'} peers expect: "
             f"{'its' if one else 'their'} input was short." if d.culprits and d.field == "all_to_all" else
             f" {rank_phrase(d.culprits).capitalize()} differ{'s' if one else ''} from the majority." if d.culprits else
             " No majority singles one side out: both are named, neither is blamed." if len(d.sides) > 1
             and d.field != "syntax" else "")
    return list(d.culprits), f"{d.words()} {d.why}{blame}"


def history_verdict(job: Job) -> tuple[VerdictKind, list[int], list[int], str] | None:
    """No rank is stuck, but the dumps show the members' calls disagreed: a mismatch that completed."""
    found = history_mismatch(job)
    if found is None:
        return None
    culprits, summary = found
    return VerdictKind.COLLECTIVE_MISMATCH, culprits, [], summary


def history_findings(job: Job, said: str) -> list[Finding]:
    """Every group's first disagreement that the verdict's sentence does not already say."""
    out = []
    for d in disagreements(job):
        text = d.words()
        if text in said or f"#{d.seq} of {d.group.label()}" in said and d.field in ("op", "input_sizes", "input_dtypes"):
            continue  # the verdict's own sentence already names this collective's difference
        severity = Severity.WARNING if d.field == "state" else Severity.ERROR
        out.append(Finding(severity, "fr-history", f"{text} {d.why}", ()))
    return out


def never_launched(job: Job, stuck: Work) -> tuple[list[int], str] | None:
    """Members whose dump holds the collective the others wait in as ``scheduled`` while theirs is ``started``.

    The recorder marks an op ``started`` once its start event has run on the GPU (events that exist only with
    TORCH_NCCL_ENABLE_TIMING), so ranks showing ``started`` prove timing is on: a member still ``scheduled`` had
    enqueued the call but its GPU stream never reached it, still busy with earlier work (a long or hung kernel, a
    collective of another group). Every member issued the same call; that one never launched it.
    """
    if stuck.seq is None or stuck.p2p:
        return None
    states: dict[int, Work] = {}
    for s in job.ranks:
        for p in s.positions:
            if p.group == stuck.group and p.source == "dump":
                w = next((x for x in p.works if not x.p2p and x.seq == stuck.seq and not _is_end(x)), None)
                if w is not None:
                    states[s.rank] = w
    scheduled = sorted(r for r, w in states.items() if w.state == "scheduled")
    started = sorted(r for r, w in states.items() if w.state == "started")
    if not scheduled or not started or len(states) < 2:
        return None
    d = _differ("state", {r: states[r].state for r in scheduled + started}, stuck.op or "?", None, 1, stuck.group,
                stuck.seq, _state_why({r: states[r].state for r in scheduled + started}))
    assert d is not None
    return scheduled, d.words() + " " + d.why
