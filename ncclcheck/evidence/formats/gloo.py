"""PyTorch's gloo backend: its collective timeouts and ``monitored_barrier``'s verdicts.

gloo's transport times a receive or a send out with "Timed out waiting 10000ms for recv operation to complete"
(tcp/unbound_buffer.cc); ``monitored_barrier`` on rank 0 names the ranks that never arrived ("Rank 2 failed to pass
monitoredBarrier in 8000 ms"), and every other rank says it arrived but saw errors (ProcessGroupGloo.cpp). Each is a
wait, like NCCL's watchdog line, not the rank's own failure, and so is a program's error record that logs one
(evidence/parse.py leaves a record a wait was read from out of the process's own errors).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence import stamps
from ncclcheck.evidence.formats.source import AT, Format, Sample, Trigger
from ncclcheck.evidence.types import GlooWait, Loc, Said

TIMEOUT = re.compile(r"Timed out waiting (?P<ms>\d+)ms for (?:recv|send) operation to complete")
MISSING = re.compile(r"Ranks? (?P<ranks>\d+(?:, \d+)*) failed to pass monitoredBarrier in (?P<ms>\d+) ms")
# The message every other pending operation of the process sees once one of its receives timed out: the context
# closes its pairs with it (gloo/transport/tcp/unbound_buffer.cc, waitRecv and waitSend: signalException("Application
# timeout caused pair closure") before the "Timed out waiting" exception): the same wait, not a failure of its own.
PAIR_CLOSURE = re.compile(r"Application timeout caused pair closure")
REACHED = re.compile(r"Rank \d+ successfully reached monitoredBarrier, but received errors while waiting")


class Waits:
    """One input's gloo timeouts (each read on its own)."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if m := MISSING.search(text):
            missing = ", ".join(x.strip() for x in m["ranks"].split(",") if x.strip())
            return (GlooWait("monitored_barrier", int(m["ms"]), loc, missing, stamps.glog(text)),)
        if REACHED.search(text):
            return (GlooWait("monitored_barrier", None, loc, None, stamps.glog(text)),)
        if m := TIMEOUT.search(text):
            return (GlooWait("gloo_timeout", int(m["ms"]), loc, None, stamps.glog(text)),)
        if PAIR_CLOSURE.search(text):
            return (GlooWait("gloo_timeout", None, loc, None, stamps.glog(text)),)
        return ()


_MONITORED = "tests/data/real_gloo/monitored/attempt_0"
_RECV = ("[rank2]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
         "Timed out waiting 10000ms for recv operation to complete")
FORMAT = Format(
    name="gloo",
    words=("operation to complete", "monitoredBarrier", "caused pair closure"),
    make=Waits,
    triggers=(Trigger("monitoredBarrier", "B"),),
    wanted=("monitoredBarrier",),
    patterns=(TIMEOUT, MISSING, REACHED, PAIR_CLOSURE),
    samples=(
        Sample(_RECV, "tests/data/launchers/slurm/hang/tasks/2.log:15", (GlooWait("gloo_timeout", 10000, AT),)),
        Sample("[rank0]:[E1125 09:36:46.844271395 ProcessGroupGloo.cpp:67] [Rank 0]: Rank 2 failed to pass "
               "monitoredBarrier in 8000 ms", f"{_MONITORED}/0/stderr.log:1",
               (GlooWait("monitored_barrier", 8000, AT, "2", stamps.glog("[E1125 09:36:46.844271395 x")),)),
        Sample("[rank3]:[E1125 09:36:46.848281025 ProcessGroupGloo.cpp:67] Rank 3 successfully reached "
               "monitoredBarrier, but received errors while waiting for send/recv from rank 0. Please check rank 0 "
               "logs for faulty rank.", f"{_MONITORED}/3/stderr.log:1",
               (GlooWait("monitored_barrier", None, AT, None, stamps.glog("[E1125 09:36:46.848281025 x")),)),
        Sample("ERROR:root:Application timeout caused pair closure",
               "tests/data/public_threads/309-elasticdl-1895-allreduce-worker-waits-barrier-times-out.log:7",
               (GlooWait("gloo_timeout", None, AT),)),
    ),
)
