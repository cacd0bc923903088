"""A collective's own size check: the rank that raised it is the one whose call was wrong, and its call is named.

ProcessGroupNCCL and ProcessGroupGloo check a collective's tensors against the group's size before any data moves
(_allgather_base: "output tensor size must be equal to world_size times input tensor size"; _reduce_scatter_base:
"input tensor must be the same size as output size times world size"; gloo's "invalid tensor size at index" and
"Check failed: outputShape[0] * worldSize == inputShape[0]"; job/catalogue/collective_size.toml). The check runs on
the rank that called, on its own tensors: that rank raised and left, and the others, whose calls passed it, wait in
the collective. The call itself is in the rank's traceback (evidence/formats/pycall.py): named with its line.
"""

from __future__ import annotations

from ncclcheck.job.causes import Cause, Diagnosis
from ncclcheck.job.model import Job
from ncclcheck.job.phrases import cap
from ncclcheck.ranks import rank_phrase

# What each call's output must hold, for the sentence that names it (the group's size is n).
_RULE = {
    "all_gather_into_tensor": "its output must hold n times its input",
    "_all_gather_base": "its output must hold n times its input",
    "reduce_scatter_tensor": "its output must hold its input / n",
    "_reduce_scatter_base": "its output must hold its input / n",
    "all_to_all_single": "its split sizes must add up to its tensors' first dimension",
}


def _call(job: Job, d: Diagnosis) -> tuple[str, str] | None:
    """The raising rank's last torch.distributed call at or before the error, with the user's line that made it."""
    ranks = set(d.ranks)
    calls = [f for f in job.facts.calls if f.loc.file == d.loc.file and f.loc.line <= d.loc.line
             and (f.who.rank in ranks or f.who.rank is None)]
    if not calls:
        return None
    call, _, where = max(calls, key=lambda f: f.loc.line).value.partition(" ")
    return call, where.rsplit("/", 1)[-1]


def sized_call(job: Job, c: Cause, d: Diagnosis) -> str:
    """The summary: who raised, in which call (from its traceback), what the call's sizes must be, the check's line."""
    who = rank_phrase(d.ranks).capitalize() if d.ranks else "A rank"
    found = _call(job, d)
    if found is None:
        return f"{cap(c.title)}: {d.detail} ({d.loc}). {cap(c.why)}."
    call, where = found
    rule = f" ({_RULE[call]}, n the group's size)" if call in _RULE else ""
    return (f"{who} called {call} at {where} with tensors of the wrong size for its group{rule}: {d.detail} ({d.loc}). "
            "The check runs on the calling rank before any data moves: that rank raised and left, and the others, "
            "whose calls passed it, waited for it in the collective.")
