"""A job whose inputs stop at NCCL's set-up with no error: stalled there or cut, never ``no_failure`` (issue 41 §3-4).

NCCL says how far a communicator got (evidence/formats/ncclsetup.py): its INFO lines through the set-up, ``Init
COMPLETE`` at its end on each rank, each connection's transport (``via P2P``/``SHM``/``NET``), which since 2.22 the
first collective makes (NCCL_RUNTIME_CONNECT). nccl-tests prints its device table before the communicators exist and
its result table's header after; each size's row after that size ran. A framework's progress bar at 0 is its first
step begun, not done. The first collective is where NCCL first moves the ranks' data over those connections.

So where every input's last lines are set-up lines, nothing after them proves progress (a bar or a count past 0, a
result row, a completed collective, an end or exit line, a communicator destroyed) and no failure was read, the job
either hung in its first collective on every rank that got there, or the log was cut there. A hang of the first
collective on every rank is no straggler (every rank reached it): a path that connects but carries nothing, the GPU
peer-to-peer path over PCIe (ACS, the IOMMU), shared memory, GPUDirect RDMA, a firewall (NVIDIA's NCCL
troubleshooting guide); the cause ``stopped_after_setup`` gives the runs that isolate it. Every rank of the
communicator shown with its set-up done (Init COMPLETE or a connection of its own): ``all_ranks_stuck``; a rank
not shown, or no line that set-up finished: ``incomplete_evidence``.

Inputs whose last line is a framework's process-group start (DeepSpeed's init_distributed, Lightning's
"Initializing distributed", evidence/formats/pgstart.py) stopped before the rendezvous completed; those whose last line
is a framework's start of its own NCCL communicator (vLLM's pynccl, Paddle's NCCL context) stopped in NCCL's set-up,
which says nothing without NCCL_DEBUG=INFO: job/pgstart.py.

Inputs whose last line is c10d's store client's connection (``The client socket has connected``) stopped before NCCL,
in the rendezvous: init_process_group waits there, printing nothing, until every rank joined the store. That is a
rank that never started, or a connection accepted by something that is not the store (a service-mesh sidecar in
Kubernetes): ``launcher_failure``, the cause ``store_no_reply``.

What stays ``no_failure``: a log that goes on after set-up (its lines run past the last set-up line: a training log,
a result row) and stops there, a log cut before NCCL said anything, a launcher's lines alone. The block reader keeps
only lines a source reads past an input's head, so "nothing after" is measured in lines: the input's last line is
its last set-up line. Any line after it may be the job's own (a finished job's "rank 0 ok", a loss, a result row,
which has no word to find it by): tests/data/gpu/nccl232/diag, a job that ran to its end, stops two such lines after
NCCL's last connection line.
"""

from __future__ import annotations

from dataclasses import replace

from ncclcheck.evidence.formats.ncclsetup import HEADER_STEP, STORE_STEP
from ncclcheck.evidence.formats.pgstart import COMM_STEP, PG_STEP
from ncclcheck.evidence.types import Fact
from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.model import EndKind, Job, TextInput, VerdictKind
from ncclcheck.job.pgstart import comm_unfinished, unfinished
from ncclcheck.job.rules import Decision
from ncclcheck.ranks import rank_phrase

STOPPED = cause("stopped_after_setup")
NO_REPLY = cause("store_no_reply")
_QUIET = (EndKind.SILENT, EndKind.UNKNOWN)


def _count(f: Fact) -> tuple[int, int]:
    """A progress fact's count and total (formats/progress.py: ``label: i/n``)."""
    i, _, n = f.value.rpartition(": ")[2].partition("/")
    return int(i), int(n)


def _last_lines(s: TextInput) -> Fact | None:
    """The input's last set-up line (or a bar at 0 after one), where its lines stop at set-up; else None."""
    marks = [f for f in s.facts if f.key == "setup"]
    bars = [f for f in s.facts if f.key == "progress"]
    if not marks or any(_count(f)[0] > 0 for f in bars):
        return None
    last = max((*marks, *bars), key=lambda f: f.loc.line)
    return last if last.loc.line >= s.lines else None


def stopped_at_setup(job: Job, d: Decision) -> Decision:
    """The decision for inputs that stop at NCCL's set-up with nothing failed (the module's docstring), else ``d``."""
    if d.kind is not VerdictKind.NO_FAILURE or d.cause is not None or job.facts.work_done or job.facts.elastic:
        return d
    if any(s.ending.kind not in _QUIET for s in job.ranks):
        return d
    if any(x.source == "unread" for x in job.facts.stated):  # an input ends on an error line: job/unreadline.py's
        return d
    texts = job.facts.texts
    if not job.facts.text_inputs or job.facts.text_states:
        return d
    if len(texts) < job.facts.text_inputs:  # an input of text with no set-up mark stops nowhere in the set-up
        return d
    if any(f.key == "nccl_end" for s in texts for f in s.facts):  # a communicator torn down: the job went on to its end
        return d
    stops = [_last_lines(s) for s in texts]
    if any(f is None for f in stops):
        return d
    if all(f is not None and f.value == STORE_STEP for f in stops):
        return _store(d, [f for f in stops if f is not None])
    if all(f is not None and f.value == PG_STEP for f in stops):  # a framework's last words before its rendezvous
        return unfinished(d, [f for f in stops if f is not None])  # (job/pgstart.py)
    if all(f is not None and f.value in (PG_STEP, COMM_STEP) for f in stops):  # a framework's own NCCL communicator's
        return comm_unfinished(d, [f for f in stops if f is not None and f.value == COMM_STEP])  # start, no further
    facts = [f for s in texts for f in s.facts]
    ready = [f for f in facts if f.key == "nccl_ready"]
    via = [f for f in facts if f.key == "nccl_via"]
    header = [f for f in stops if f is not None and f.value == HEADER_STEP]
    size = max((int(f.value.partition("/")[2]) for f in ready), default=0)
    shown = {int(f.value.partition("/")[0]) for f in ready if f.value.endswith(f"/{size}")} | {
        int(f.value.partition(" ")[0]) for f in via}
    shown = {r for r in shown if r < size} if size else shown
    done = bool(ready or via or header)
    every = done and size > 0 and len(shown) == size
    last = max((f for f in stops if f is not None), key=lambda f: (f.loc.file, f.loc.line))
    said = _said(ready, via, header, size, [f for f in facts if f.key == "progress"])
    if done:
        end = "" if str(last.loc) in said else f" (the last line is {last.loc})"
        who = f"{rank_phrase(sorted(shown)).capitalize()} of {size}" if every else "The job"
        hung = ("its first collective never completed on any rank" if every else
                "its first collective never completed on any rank these inputs show (a rank they do not show may "
                "never have got there)")
        summary = (f"{who} stopped after NCCL's set-up with no error: {said}; after it no collective completed, no "
                   f"step advanced, no rank reported an error and no line says the job ended{end}. If the job hung "
                   f"there, {hung}: every rank shown got that far, so no straggler "
                   "explains it; the transport or the GPU peer-to-peer path under it carried nothing (the first "
                   "collective is where NCCL first moves the ranks' data). If the log was only cut, or the job still "
                   "runs, the rest of it decides.")
    else:
        summary = (f"The inputs stop inside NCCL's set-up with no error: their last lines are its set-up lines "
                   f"({last.loc}), and no line says that the set-up finished (Init COMPLETE), that a collective "
                   "completed or that the job ended. Either the log was cut there, or the job hung in its set-up or "
                   "its first collective on every rank it started: no straggler explains that, the transport or the "
                   "GPU peer-to-peer path does. Bring the whole log; with NCCL_DEBUG=INFO its Init COMPLETE and "
                   "`via` lines say how far each rank got.")
    detail = f"the inputs stop after NCCL's set-up ({said})" if done else "the inputs stop inside NCCL's set-up"
    locs = tuple(dict.fromkeys(f.loc for f in (*ready[:1], *via[:1], *header, last)))
    ranks = tuple(sorted(shown)) if every else ()
    diag = Diagnosis(STOPPED, ranks, detail, last.loc, locs, detail)
    waiting = ranks if every and job.world == size else ()
    return replace(d, kind=VerdictKind.ALL_RANKS_STUCK if every else VerdictKind.INCOMPLETE, summary=summary,
                   waiting=waiting, cause=diag)


def _said(ready: list[Fact], via: list[Fact], header: list[Fact], size: int, bars: list[Fact]) -> str:
    """What the set-up lines show, each with its first line."""
    parts = []
    if ready:
        ranks = sorted({int(f.value.partition("/")[0]) for f in ready})
        parts.append(f"Init COMPLETE on {rank_phrase(ranks)}{f' of {size}' if size else ''} ({ready[0].loc})")
    if via:
        ways = sorted({f.value.partition(" ")[2].partition("/")[0] for f in via})  # the transport, not its path
        parts.append(f"connections via {', '.join(ways)} ({via[0].loc})")
    if header:
        parts.append(f"nccl-tests' result table begun with no row ({header[0].loc})")
    parts += [f"then {f.value.rpartition(': ')[0]} at 0 of {_count(f)[1]} ({f.loc})" for f in bars[:1]]
    return ", ".join(parts) or "its set-up lines"


def _store(d: Decision, stops: list[Fact]) -> Decision:
    """Inputs whose last line is the store client's connection: the rendezvous never completed."""
    last = max(stops, key=lambda f: (f.loc.file, f.loc.line))
    detail = "the store's client connected and the inputs stop there"
    summary = (f"The inputs stop right after the rendezvous store's client connected ({last.loc}), with no error: "
               "init_process_group waits there, printing nothing, until every rank has joined the store. Either a rank "
               "never started or never reached the store, or the connection was accepted by something that is not "
               "the store (in Kubernetes, a service-mesh sidecar proxy) and nothing answers through it.")
    locs = tuple(dict.fromkeys(f.loc for f in stops))
    return replace(d, kind=VerdictKind.LAUNCHER_FAILURE, summary=summary,
                   cause=Diagnosis(NO_REPLY, (), detail, last.loc, locs, detail))
