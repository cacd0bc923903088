"""Whether an NCCL failure was the communicator's set-up or a call on a communicator already made, from what the
inputs show of the path the error took; the verdict's kind follows it.

A cause of the set-up family (the catalogue's ``setup``: NCCL failing without a reason, a library that cannot be
captured in a CUDA graph) is worded as a set-up failure by job/rules.py. Three lines say otherwise:

* NCCL's return trace under the error (job/returntrace.py) runs through a call's launch (enqueue.cc, its argument
  checks) and no set-up file: NCCL refused or failed a call the program made (``invalid root``), an NCCL error of
  that call.
* A binding of NCCL's C API (vLLM's pynccl, CuPy, nccl4py: evidence/formats/ncclapi.py) made its communicator by its
  own earlier call; the error came back from a collective's own frame (job/rununsage.py reads the same frame).
* nccl-tests' ``Test NCCL failure common.cu:N`` line is the test program's check of one NCCL call. Where the test's
  own lines do not place it in its set-up (its device table printed, its result header not yet: src/util.cu), and
  the error's words name no set-up mechanism (NCCL's ``internal error`` or ``unhandled cuda error`` without a reason,
  not a system error's /dev/shm or sockets), what failed is that call: an NCCL error.

* PyTorch's own NCCL calls (torch/csrc/cuda/nccl.cpp) word their error ``NCCL Error <n>: <reason>``; ProcessGroupNCCL
  makes those calls for all_to_all, gather, scatter, send and recv on a communicator it had already made (its set-up's
  check reads ``NCCL error in: <file>:<line>``). Such a line under a traceback through one of those collectives
  (evidence/formats/pycall.py) is an NCCL error of that call.

And one says the set-up where the rules read only a process's failure: the trace under a line that names no layer of
its own (a peer's reset connection inside a socket helper) runs through a transport's files and NCCL's init: the
communicator's set-up failed in that transport (NCCL 2.0-2.2 bootstrapped over its network transport:
``transport/net_ib.cu -> bootstrap.cu -> init.cu``), whose isolating setting is the layer's (NCCL_IB_DISABLE=1).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ncclcheck.job.causedata import SETUP as SETUP_FAMILY
from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.layers import Layer
from ncclcheck.job.model import Job, VerdictKind
from ncclcheck.job.phrases import cap
from ncclcheck.job.returntrace import CALL, RESULTS, SETUP, Chain, chain_at
from ncclcheck.job.stated import best
from ncclcheck.job.statements import GENERIC, Statement

_STATED = cause("stated_reason")
_SETUP_WORDS = re.compile(r"^(?:The job|[Rr]anks? [\d, and-]+) could not set up [^,]+, ")  # job/rules.py's words
# The causes that say less than a set-up trace through a layer: a failure with no mechanism, and a peer's lost
# connection (remote_exited: look at the peer), which at set-up inside a transport is that transport's.
_GENERAL = GENERIC | {"remote_exited"}
_GROUP_END = "ncclGroupEnd"  # ends an init group as well as a collectives' one: says no phase
# The collectives ProcessGroupNCCL runs through PyTorch's own NCCL calls (torch/csrc/cuda/nccl.cpp: all2all, gather,
# scatter, send, recv), as a traceback's frames name them (evidence/formats/pycall.py).
_OWN_CALLS = frozenset(("all_to_all", "all_to_all_single", "gather", "gather_object", "scatter", "scatter_object_list",
                        "send", "recv", "isend", "irecv", "batch_isend_irecv", "send_object_list", "recv_object_list"))


def restate(job: Job, kind: VerdictKind, culprits: list[int], summary: str, found: Diagnosis | None
            ) -> tuple[VerdictKind, list[int], str, Diagnosis | None]:
    """The verdict with its kind as the error's path shows it (the module's docstring)."""
    line = best(job, culprits, found)
    chain = chain_at(job.facts.returns, line.loc) if line is not None else None
    if chain is not None and line is not None and (layer := chain.layer) is not None and chain.phase == SETUP \
            and kind in (VerdictKind.RANK_FAILED_FIRST, VerdictKind.NCCL_ERROR) \
            and (found is None or found.cause.kind in _GENERAL):
        said = _layer_statement(layer, line.gone is not None)  # a peer that went away (evidence/formats/nccl.py)
        ranks = tuple(x for x in (line.rank,) if x is not None)
        detail = f"{line.label}: {line.text}; {said.means}"
        return (VerdictKind.SETUP_FAILURE, culprits,
                f"The job could not set up NCCL: {line.label} \"{line.text}\" ({line.loc}), and NCCL's return trace "
                f"under it ({chain.words()}) says the error came up through {layer.name} while the communicator was "
                f"made{_code(chain)}: {said.means}.",
                Diagnosis(_STATED, ranks, line.text, line.loc, (line.loc,), detail, line.clock_s, said))
    if kind is not VerdictKind.SETUP_FAILURE or found is None or found.cause.family != SETUP_FAMILY:
        return kind, culprits, summary, found
    how = _called(job, chain, found)
    if how is None:
        return kind, culprits, summary, found
    c = found.cause
    if _SETUP_WORDS.match(summary):
        host = (" The library and driver that host loaded are the cause, not one rank: every rank there loads the "
                "same." if c.host else "")
        summary = f"{cap(c.title)}: {found.detail} ({found.loc}). {cap(c.why)}.{host}"
    return VerdictKind.NCCL_ERROR, culprits, f"{summary} {how}", found


def _called(job: Job, chain: Chain | None, found: Diagnosis) -> str | None:
    """The sentence that says the error came back from a call on a communicator already made, or None."""
    if chain is not None and chain.phase == CALL:
        return (f"NCCL's return trace under it ({chain.words()}) runs through a call's launch and no set-up: NCCL "
                "refused or failed a call the program made (its argument check or its launch), not the communicator's "
                "set-up.")
    calls = [f for f in job.facts.api_calls if f.value != _GROUP_END]
    if calls and not chain:
        f = calls[-1]
        return (f"It came back from {f.value} itself ({f.loc}), a collective called through a binding of NCCL's C "
                "API on a communicator that binding had already made: NCCL failed as the job ran, not in its set-up.")
    at = {f.loc for f in job.facts.nccl_call_checks}
    through = [f for f in job.facts.calls if f.value.partition(" ")[0] in _OWN_CALLS]
    if found.loc in at and through:
        f = through[-1]
        op, _, where = f.value.partition(" ")
        return (f"It is worded as PyTorch's own NCCL calls word their errors (`NCCL Error N:`, torch/csrc/cuda/"
                f"nccl.cpp), which ProcessGroupNCCL makes for {op} on a communicator it had already made, and the "
                f"traceback runs through {op} ({where}, {f.loc}): NCCL failed in that call as the job ran, not in the "
                "communicator's set-up.")
    checks = [t for t in job.facts.test_checks if t.phase != SETUP]
    if checks and found.cause.kind == "nccl_no_reason":
        t = checks[0]
        where = ("after its result table's header: the communicators were made and its collectives ran"
                 if t.phase == CALL else
                 "and no line of the test says how far it got (its device table, its result header), so that call "
                 "may be a set-up or a collective; the line is in the test's own source, which differs between "
                 "nccl-tests releases")
        return (f"nccl-tests' own check of an NCCL call failed ({t.where}, {t.loc}) {where}: the test program's NCCL "
                "call returned the error.")
    return None


def _code(chain: Chain) -> str:
    code = chain.code
    return f" (ncclResult_t {code}, {RESULTS[code]})" if code in RESULTS else ""


def _layer_statement(layer: Layer, peer: bool) -> Statement:
    """The layer the trace names as the line's mechanism: its meaning, knob and isolating step."""
    means = layer.means
    if peer:
        means = (f"the peer closed its connection during the set-up of {layer.name}: that peer failed there first or the "
                 f"path between them did; {means}")
    return Statement(f"layer_{layer.id}", re.compile("$^"), f"{means} (known by NCCL's return trace)", "setup_failure",
                     layer.action, layer.fix, f"{layer.source}; NCCL src/include/checks.h (NCCLCHECK's return trace)",
                     cause=layer.cause, located=True)


def host_call(kind: VerdictKind, culprits: Sequence[int], found: Diagnosis | None) -> bool:
    """A call's NCCL error whose cause is the host's (its library, its driver: the catalogue's ``host``) and that names
    no culprit: the ranks that hit it stopped, as at a set-up failure no rank caused; none waited for a peer."""
    return kind is VerdictKind.NCCL_ERROR and not culprits and found is not None and found.cause.host
