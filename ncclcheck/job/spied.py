"""py-spy's (and Python's faulthandler's) dumps of processes no line ranks: where each one's main thread stands, where
nothing else decides.

A py-spy dump (evidence/formats/pyspy.py) names a PID and a command line, never a rank. Where no launcher line pairs
the PID with a rank and no tag or file name gives one, its stack is no rank's (evidence/parse.py keeps it apart from
the ranks' live stacks), yet it still says where that process stands, read as job/live.py reads a rank's stack: a
main thread inside a torch.distributed call waits for the group's other members; one outside any call (its own code,
its data loader's queue, a lock, a socket) is not in the collective the others wait in, so it is the process they
wait for, whichever rank it is. Dumps all inside one collective, none outside, show no straggler among them: if they
are every rank, the collective's transport carries nothing (issue 41 §3: the isolating runs). The verdict is
``incomplete_evidence`` with the cause ``unranked_stack``: no rank is named, so no culprit rank is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ncclcheck.evidence.formats.pyspy import collective_of
from ncclcheck.evidence.frdump import Frame
from ncclcheck.evidence.types import SpiedProcess
from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.framewaits import family_of
from ncclcheck.job.live import DATA, IO, LOCK, blocked_on, code_frame, cuda_wait
from ncclcheck.job.model import Job, VerdictKind
from ncclcheck.job.rules import Decision

UNRANKED = cause("unranked_stack")
_WAITS = {DATA: "waiting for its data loader's next batch", LOCK: "waiting on a lock or a condition",
          IO: "waiting on a socket or a file"}


def _at(f: Frame) -> str:
    return f"{f.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{f.line} ({f.name})"


def _where(e: SpiedProcess) -> tuple[str, str]:
    """Where a dump's main thread stands: the collective it waits in (or ``""`` outside any), and in words."""
    frames = e.threads[0].frames if e.threads else ()
    op = collective_of(frames)
    at = code_frame(frames)
    if op is not None:
        return op, f"waits in {op}" + (f" at {_at(at)}" if at else "")
    if (hit := family_of(frames)) is not None:  # a framework's own gather, issued asynchronously (job/framewaits.py)
        fam, f = hit
        return fam.op, f"waits in {fam.name.split(' (', 1)[0]}, an {fam.op} of its own, at {_at(f)}"
    if (sync := cuda_wait(frames)) is not None:
        return "", f"waits on the GPU in {sync}" + (f" at {_at(at)}" if at else "")
    said = "is in its own code" + (f" at {_at(at)}" if at else "")
    if (blocked := blocked_on(frames)) is not None:
        kind, f = blocked
        said += f", {_WAITS[kind]}" + (f" (in {_at(f)})" if f != at else "")
    return "", said + ", inside no torch.distributed call"


def _who(e: SpiedProcess) -> str:
    timer = f", written when its timer fired: {e.command}" if e.tool == "faulthandler" and e.command else ""
    cut = ", its thread's line cut off (its innermost frames may be too)" if e.tool == "faulthandler" and \
        e.threads and e.threads[0].name == "Thread" else ""
    return (f"PID {e.pid} ({e.loc})" if e.pid is not None else f"its dump at {e.loc}") + timer + cut


def _tools(dumps: Sequence[SpiedProcess]) -> str:
    """Whose dumps they are: py-spy's, Python's faulthandler's (evidence/formats/faulthandler.py), or both."""
    names = dict.fromkeys(e.tool for e in dumps)
    return " and ".join(names)


def unranked_stack(job: Job, d: Decision) -> Decision:
    """The decision for py-spy's or faulthandler's dumps that name no rank, where nothing else was found, else ``d``."""
    dumps: Sequence[SpiedProcess] = job.facts.unranked_stacks
    if d.kind is not VerdictKind.NO_FAILURE or d.cause is not None or job.live or not dumps:
        return d
    places = [(e, *_where(e)) for e in dumps]
    inside = [p for p in places if p[1]]
    outside = [p for p in places if not p[1]]
    if len(dumps) == 1:
        e, _, said = places[0]
        cut = e.tool == "faulthandler" and bool(e.threads) and e.threads[0].name == "Thread"
        summary = (f"A {_tools(dumps)} dump of one process ({_who(e)}) names no rank: its main thread {said}. "
                   + ("With its innermost frames perhaps cut off, where it waits is not certain. " if cut and not inside
                      else "Where the other ranks wait in a collective meanwhile, this process is the one they wait "
                           "for. " if not inside else "Whether the other ranks wait there too, or one of them is "
                                                       "elsewhere, no input shows. ")
                   + "No line says which rank it is.")
    else:
        each = "; ".join(f"{_who(e)} {said}" for e, _, said in places)
        if outside and inside:
            tail = (f" The process{'es' if len(outside) > 1 else ''} outside any collective "
                    f"({', '.join(_who(e) for e, _, _ in outside)}) {'are' if len(outside) > 1 else 'is'} what the "
                    "others wait for.")
        elif inside and len({op for _, op, _ in inside}) == 1:
            tail = (f" Every one waits in {inside[0][1]} and none is outside it: if these are every rank, no straggler "
                    "explains the hang, and the collective's transport is what to isolate.")
        else:
            tail = ""
        summary = (f"{_tools(dumps)} dumps of {len(dumps)} processes name no rank: {each}.{tail} No line says which "
                   "ranks they are.")
    detail = f"{_tools(dumps)} dump{'s' if len(dumps) > 1 else ''} of {len(dumps)} process{'es' if len(dumps) > 1 else ''} " \
             "that no line ranks"
    locs = tuple(e.loc for e in dumps)
    return replace(d, kind=VerdictKind.INCOMPLETE, summary=summary,
                   cause=Diagnosis(UNRANKED, (), detail, locs[0], locs, detail))
