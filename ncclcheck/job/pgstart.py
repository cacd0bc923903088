"""Inputs that stop inside a process group's start: the rendezvous never completed, or the log was cut there.

A framework prints its last words before init_process_group (evidence/formats/pgstart.py: DeepSpeed's
init_distributed, Lightning's "Initializing distributed", PyTorch 1.x's store-based barrier), which then waits at
the rendezvous store, printing nothing, until every rank of the world has joined it, for the group's timeout (30
minutes by default; the store's own connect timeout first where the store cannot be reached at all). Where every
input stops at such a line and nothing failed, the processes never got past that wait, or the log was cut there:
nothing in the lines tells the two apart, so the verdict is ``incomplete_evidence`` with the rendezvous' step, the
cause ``pg_start_unfinished``: a world whose ranks never all started or reached the store (a rank that crashed first,
a different world size), a store address or port the ranks do not share or cannot reach (MASTER_ADDR, MASTER_PORT, a
launcher's main_process_port; a port of 0 lets each process pick its own, so no two meet), a port another program
holds. job/stall.py calls :func:`unfinished` where its inputs stop at this step.

A framework that makes its own NCCL communicator (vLLM's and SGLang's pynccl, Paddle's NCCL context) prints its last
line before ``ncclCommInitRank`` (and vLLM's warm-up all-reduce after it); NCCL says nothing of its set-up without
NCCL_DEBUG=INFO. Inputs that stop there (:func:`comm_unfinished`) never finished NCCL's set-up or first collective, or
were cut there: ``incomplete_evidence``, the cause ``comm_init_unfinished``, whose steps are NCCL's (its INFO lines,
the bootstrap's interface, the paths' isolating runs, a library interposed under CUDA's memory calls).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ncclcheck.evidence.types import Fact
from ncclcheck.job.causedata import Cause
from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.model import VerdictKind
from ncclcheck.job.rules import Decision

UNFINISHED = cause("pg_start_unfinished")
COMM_UNFINISHED = cause("comm_init_unfinished")


def unfinished(d: Decision, stops: Sequence[Fact]) -> Decision:
    """The decision for inputs whose last lines are a framework's process-group start (the module's docstring)."""
    last = max(stops, key=lambda f: (f.loc.file, f.loc.line))
    detail = "the inputs stop at the process group's start, before the rendezvous completed"
    summary = (f"The inputs stop at the process group's start ({last.loc}), with no error: the framework's last line "
               "before init_process_group, which waits at the rendezvous store, printing nothing, until every rank "
               "of the world has joined. No line after it says the group started (a rank's step, NCCL's set-up, a "
               "framework's word that every process registered). Either the rendezvous never completed (a rank that "
               "never started or never reached the store, or ranks given different store addresses or ports), or "
               "the log was cut there: the rest of it, or every rank's log, tells which.")
    return _stopped(d, stops, last, UNFINISHED, detail, summary)


def comm_unfinished(d: Decision, stops: Sequence[Fact]) -> Decision:
    """The decision for inputs whose last lines are a framework's start of its own NCCL communicator (the module's
    docstring)."""
    last = max(stops, key=lambda f: (f.loc.file, f.loc.line))
    detail = "the inputs stop at a framework's start of its NCCL communicator, before NCCL's set-up finished"
    summary = (f"The inputs stop where a framework starts its own NCCL communicator ({last.loc}), with no error: its "
               "last line before NCCL's set-up (vLLM's and SGLang's pynccl print it before sharing the communicator's "
               "id over their CPU group and calling ncclCommInitRank, Paddle's NCCL context after sharing it). NCCL "
               "prints nothing of its set-up without NCCL_DEBUG=INFO, and no line after it says the communicator was "
               "made or a collective ran. Either NCCL's set-up (its bootstrap's "
               "connections between the ranks, the transports' set-up, its memory allocation) or the first collective "
               "hung on every rank these inputs show, or the log was cut there: the rest of it, or a run with "
               "NCCL_DEBUG=INFO, tells which.")
    return _stopped(d, stops, last, COMM_UNFINISHED, detail, summary)


def _stopped(d: Decision, stops: Sequence[Fact], last: Fact, cause: Cause, detail: str, summary: str) -> Decision:
    """Either start's decision: incomplete evidence, its cause citing the last start line and up to eight of them."""
    locs = tuple(dict.fromkeys(f.loc for f in stops))[:8]
    return replace(d, kind=VerdictKind.INCOMPLETE, summary=summary,
                   cause=Diagnosis(cause, (), detail, last.loc, locs, detail))
