"""What a hang's next steps say from the mechanism the lines state: why a member never arrived, what the collective
waits for, and what its sequence number proves.

* Why a member never reaches a collective: it crashed or was killed, it was busy with work only it does
  (job/lonework.py's step), it ran fewer iterations than the others (uneven data), or it called another collective
  (a desync). Each reason is one step of ``waitsteps.toml``, printed once, in the order the lines allow: where they
  show the others had just finished a loop (job/lonework.py's phase line) or the ranks counted one loop to different
  totals (job/uneven.py), a rank with fewer iterations comes first; else a crash does. They are said where the rank
  waited for left no input (a rank present and silent is named, and its own step, job/findings.py, names the
  common reasons; the 4,096-rank report keeps to 40 lines).
* The op decides what else to check (``waitsteps.toml``'s ``[[op]]``, one entry per family): an all-to-all's split
  sizes, a broadcast's root, an all-gather's or reduce-scatter's sizes.
* The sequence number: ProcessGroupNCCL numbers each group's collectives in order (seqCollective_, printed as
  ``SeqNum``; sends and receives have their own counter, seqP2P_, where older releases counted them in seq_), so a
  timeout at #N says the group ran N-1 before it: #1 is the first, where ProcessGroupNCCL::collective creates the
  NCCL communicator when none exists (initNCCLComm: no device_id given to init_process_group) and NCCL first moves
  data; #2 the first exchange after it; a larger number rules out a group that never worked, leaving an event that
  had not happened in those N-1 (a crash, a branch taken rarely, hardware, a hang a later release fixed). Where every
  member waits, only a larger number is read, without a missing rank's events.
  (https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp)
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ncclcheck.job.findings import SKIPPED_STEP
from ncclcheck.job.lonework import lone_work_step, phase_line
from ncclcheck.job.model import Job, VerdictKind
from ncclcheck.job.rules import Decision

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

TABLE = Path(__file__).with_name("waitsteps.toml")
# The verdicts whose culprit did not show why it never arrived: the rank waited for left no input.
_ABSENT = frozenset({VerdictKind.INCOMPLETE})
# The releases to name, in the order to try them, as the version table spells them (job/versions.py).
_RELEASES = (("PyTorch version", "PyTorch"), ("NCCL version", "NCCL"), ("DeepSpeed version", "DeepSpeed"),
             ("transformers version", "transformers"), ("Accelerate version", "Accelerate"),
             ("driver", "the NVIDIA driver"))
# What stops one rank at a point its group had passed many times: said where a member may be missing.
_RANK_EVENTS = "a rank's crash, a branch taken rarely (a condition on the data, an epoch's end, an evaluation), "


class WaitStepsError(ValueError):
    """The table cannot be read: the message names the file and the entry."""


@dataclass(frozen=True)
class OpWait:
    ops: frozenset[str]
    verdicts: frozenset[VerdictKind]
    step: str
    source: str


@dataclass(frozen=True)
class Table:
    reasons: dict[str, str]  # name -> step
    ops: tuple[OpWait, ...]


def op_key(op: str) -> str:
    """``_ALLGATHER_BASE``, ``nccl:all_to_all_single``, ``broadcast`` -> ``ALLGATHER_BASE``, ``ALL_TO_ALL_SINGLE``,
    ``BROADCAST``: the spelling the table's ``ops`` use."""
    return op.rpartition(":")[2].strip().lstrip("_").upper()


@functools.cache
def table() -> Table:
    """The table, checked: every reason and op has its step and an authority's source."""
    data = tomllib.loads(TABLE.read_text(encoding="utf-8"))
    reasons: dict[str, str] = {}
    for i, r in enumerate(data.get("reason", [])):
        if set(r) != {"name", "step", "source"} or not r["source"].startswith("https://"):
            raise WaitStepsError(f"{TABLE.name}: reason {i + 1}: needs name, step and an https source")
        reasons[r["name"]] = r["step"]
    ops = []
    for i, o in enumerate(data.get("op", [])):
        if set(o) != {"ops", "verdicts", "step", "source"} or not o["source"].startswith("https://"):
            raise WaitStepsError(f"{TABLE.name}: op {i + 1}: needs ops, verdicts, step and an https source")
        try:
            kinds = frozenset(VerdictKind(k) for k in o["verdicts"])
        except ValueError as e:
            raise WaitStepsError(f"{TABLE.name}: op {i + 1}: {e}") from None
        ops.append(OpWait(frozenset(op_key(x) for x in o["ops"]), kinds, o["step"], o["source"]))
    keys = [k for o in ops for k in o.ops]
    if len(keys) != len(set(keys)):
        raise WaitStepsError(f"{TABLE.name}: an op is in two entries")
    return Table(reasons, tuple(ops))


def op_step(op: str | None, kind: VerdictKind) -> str | None:
    """What the collective ``op`` waits for besides every member, where the verdict ``kind`` leaves it open."""
    if not op:
        return None
    key = op_key(op)
    return next((o.step for o in table().ops if key in o.ops and kind in o.verdicts), None)


def _releases(job: Job) -> list[str]:
    """The releases the job's lines print, as "PyTorch 2.1.0" (several values joined)."""
    v = job.facts.versions
    out = []
    for aspect, product in _RELEASES:
        row = v.row(aspect)
        values = [g.value for g in row.groups if g.value is not None] if row is not None else []
        if values:
            out.append(f"{product} {' and '.join(values)}")
    return out


def seq_step(job: Job, n: int | None, every: bool = False) -> str | None:
    """What a timed-out collective's sequence number ``n`` proves, and what that leaves to check; ``every``: every
    member waits in it, so no rank crashed or took another branch before it (only its #3 and later are read)."""
    if n is None or n < 1 or every and n < 3:
        return None
    if n == 1:
        return ("#1 is its group's first collective: none had completed before it, so nothing yet shows that "
                "the members could reach one another in it. Either a member never got there (it failed or was still "
                "starting) or the transport never carried data: the first collective is where PyTorch creates the "
                "NCCL communicator (unless init_process_group was given device_id) and where NCCL first moves data "
                "between the ranks.")
    if n == 2:
        return ("#2 is its group's second collective: one had completed before it, so the members had set the group "
                "up and exchanged data once. Between the two the ranks that timed out issued no collective of this group, "
                "however long they ran: the ranks had to come out of that work together, and one that did more of it (more "
                "samples or batches than the others) or died in it leaves the others waiting here.")
    runs = _releases(job)
    later = (f"The job runs {', '.join(runs)}: read the later releases' notes for a fixed hang, and if it began after "
             "an upgrade, run the previous release with everything else unchanged." if runs else
             "No line prints the releases: compare against the next release of PyTorch, NCCL and the framework (a "
             "hang fixed there), or the previous one if this began after an upgrade.")
    return (f"#{n:,}: its group had run {n - 1:,} operations before this one (PyTorch numbers each group's "
            "collectives in order; older releases counted sends and receives too), so its set-up and transport "
            "worked: not a group that never worked but an event that had not happened in those "
            f"{n - 1:,}: {'' if every else _RANK_EVENTS}hardware (Xid lines in the hosts' `dmesg -T`) or a hang that "
            f"a later release fixed. {later}")


def _loop_ended(job: Job) -> bool:
    """Whether the lines point at fewer iterations: a line before a file's first timeout shows a loop that had ended
    (its progress at its total, ``100/100``, or the program's line that its loop ended: job/lonework.py's phases of
    a loop), or the ranks counted one loop to different totals (job/uneven.py's finding)."""
    first: dict[str, int] = {}
    for s in job.ranks:
        if s.stuck is not None and s.stuck.loc is not None:
            loc = s.stuck.loc
            first[loc.file] = min(loc.line, first.get(loc.file, loc.line))
    ended = [f.loc for f in job.facts.progress if _at_total(f.value.rpartition(": ")[2])]
    ended += [f.loc for f in job.facts.work_done if not f.value.isdigit()]
    if any(loc.file in first and loc.line < first[loc.file] for loc in ended):
        return True
    totals: dict[str, set[str]] = {}
    for f in job.facts.progress:
        if f.who.rank is not None:
            loop, _, count = f.value.rpartition(": ")
            totals.setdefault(loop, set()).add(count.partition("/")[2])
    return any(len(t) > 1 for t in totals.values())


def _at_total(count: str) -> bool:
    i, _, n = count.partition("/")
    return i.isdigit() and i == n


def _reasons(job: Job, steps: Sequence[str]) -> list[str]:
    """The reasons a member never arrives, in the order the lines allow, with job/lonework.py's steps among them:
    the work one rank does alone (always: it is one of the reasons) and, where ``steps`` hold it right after that
    one, the phase the log shows the others stopped in. Where that phase is a loop that had ended, fewer iterations
    come first, after the phase; else a crash comes first."""
    t = table().reasons
    busy = lone_work_step(job)
    at = steps.index(busy) + 1 if busy in steps else len(steps)
    phase = [steps[at]] if at < len(steps) and phase_line(job) is not None else []
    # TORCH_DISTRIBUTED_DEBUG=DETAIL's report in the inputs has compared the calls already: no rerun with it
    desync = [] if job.facts.mismatches else [t["desync"]]
    if _loop_ended(job):
        return [*phase, t["uneven"], busy, t["crash"], *desync]
    return [t["crash"], busy, *phase, t["uneven"], *desync]


def _waited_in(job: Job, d: Decision) -> tuple[str | None, int | None] | None:
    """The op and sequence number of the collective the verdict's waiters timed out in: the stuck work, or where no
    rank of the job is placed, the timeout line of a rank no line names (job/stated.py)."""
    w = d.primary
    if w is not None:
        return w.op, None if w.p2p else w.seq
    unplaced = [r for r in job.records if r.global_rank is None and r.path_rank is None]
    if d.kind is VerdictKind.INCOMPLETE and not job.ranks and unplaced:
        return unplaced[0].op_type, unplaced[0].seq
    return None


def wait_steps(job: Job, d: Decision, steps: Sequence[str]) -> tuple[str, ...]:
    """The next steps with what the op waits for, what its number proves and why a member never arrived; unchanged
    where a cause of the catalogue or a busy rank's line explains the wait, or nothing is stuck."""
    waited = _waited_in(job, d)
    if waited is None or d.busy is not None or d.cause is not None:
        return tuple(steps)
    op, seq = waited
    out = list(steps)
    # Where every member waits, #1 and #2 say nothing a member's absence would not (and the first collective's hang
    # with every member there is a cause of its own, first_collective_hang): only a number that proves the group
    # worked is said, without the events of a missing rank (seq_step).
    every = d.kind is VerdictKind.ALL_RANKS_STUCK
    numbered = d.kind is VerdictKind.INCOMPLETE or every
    said = [s for s in (op_step(op, d.kind), seq_step(job, seq, every) if numbered else None)
            if s is not None and s not in out]
    if d.kind is VerdictKind.ALL_RANKS_STUCK:  # an op's own way to hang every member comes first, then the number
        first = [s for s in said[:1] if s == op_step(op, d.kind)]
        return (*first, *out[:1], *(s for s in said if s not in first), *out[1:])
    if d.kind not in _ABSENT:  # the one that lagged is named: its step first, then the op's
        return (*out[:1], *said, *out[1:])
    # after the first step (collect or bring the missing logs) and the mechanism's (a member that never called it)
    at = out.index(SKIPPED_STEP) + 1 if SKIPPED_STEP in out else min(1, len(out))
    reasons = _reasons(job, out)
    rest = [s for s in out[at:] if s not in reasons]
    return (*out[:at], *said, *reasons, *rest)
