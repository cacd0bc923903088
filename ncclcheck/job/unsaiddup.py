"""An NCCL ``invalid usage`` at the communicator's set-up that no WARN line explains: the duplicate GPU unsaid.

From NCCL 2.5.6 (src/init.cc, initTransportsRank) the set-up compares every rank's host and GPU after its first
all-gather and, where two ranks of the communicator share one GPU, returns ncclInvalidUsage with the WARN "Duplicate
GPU detected : rank %d and rank %d both on CUDA device %x" (2.30: "Multiple ranks detected using the same GPU").
A WARN prints only under NCCL_DEBUG=WARN or INFO, which is unset by default: the job then shows PyTorch's "NCCL
error in: ...ProcessGroupNCCL.cpp:N, invalid usage, NCCL version X" and nothing more. The set-up's only other
ncclInvalidUsage is a topology or graph file of another version (NCCL_TOPO_FILE, NCCL_GRAPH_FILE; src/graph/xml.cc);
the run's (src/enqueue.cc: streams mixed in a group, too many aggregated operations) follow a set-up that completed.
So an invalid usage with no WARN, no such file and no collective that ran is read as the duplicate GPU, said as what
the release could not say without NCCL_DEBUG.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ncclcheck.evidence.types import Clue, ErrorKind
from ncclcheck.job.causedata import Cause

if TYPE_CHECKING:  # the job model holds the catalogue's Diagnosis (job/causes.py): imported here for its type only
    from ncclcheck.job.model import Job

_WARN = re.compile(r"NCCL WARN|Duplicate GPU|same GPU")
_FILES = ("NCCL_TOPO_FILE", "NCCL_GRAPH_FILE")
_FIRST = (2, 5, 6)  # the release whose set-up first checked for a shared GPU (NVIDIA/nccl 299c554d, 2.5.6-1)


def _version(job: Job) -> tuple[int, ...] | None:
    stated = [f.value for f in job.facts.nccl_versions]
    return tuple(int(x) for x in stated[0].split(".")) if stated else None


def said_why(job: Job) -> bool:
    """Whether a line says what NCCL refused: its WARN, a duplicate-GPU line, or the text after 'Last error:'."""
    clues = [x for x in job.facts.events if isinstance(x, Clue)]
    said = [e.message for e in job.facts.errors] + [c.text for c in clues]
    return (any(_WARN.search(t) for t in said) or any(e.kind is ErrorKind.NCCL_WARN for e in job.facts.errors)
            or any(c.kind == "last_error" and bool(c.text) for c in clues))


def unsaid_duplicate(kind: str, job: Job, duplicate: Cause) -> tuple[Cause, str] | None:
    """The duplicate-GPU cause and its detail where an ``invalid usage`` (``kind`` nccl_invalid_usage) came from the
    set-up and no line says why; None otherwise."""
    if kind != "nccl_invalid_usage" or said_why(job):
        return None  # NCCL said what it refused: that line decides
    if any(f.key in _FILES for f in job.facts.settings) or job.facts.timeouts:
        return None  # a topology file of the job's, or collectives that ran: not the set-up's check
    version = _version(job)
    if version is not None and version < _FIRST:
        return None
    release = f"NCCL {'.'.join(map(str, version))}" if version else "NCCL (2.5.6 and later)"
    return duplicate, (f"NCCL refused the communicator's set-up (invalid usage) and no WARN line says why: "
                       f"the most common reason {release} returns it at set-up is two ranks of the communicator on "
                       "one GPU (a barrier or collective before set_device included), which it names ('Duplicate GPU "
                       "detected') only in a WARN line: rerun with NCCL_DEBUG=WARN to confirm")

