"""Which library a native crash struck in: the innermost frame of its backtrace that is not the signal handler's.

A fatal signal's handler (UCX's, glog's, CPython's faulthandler, Open MPI's) prints the native stack innermost first
(evidence/formats/backtrace.py reads each frame's library and symbol). Its first frames are the handler's own (UCX's
ucs_handle_error and its unsymbolized neighbours in the same library, glog's FailureSignalHandler) and the kernel's
return trampoline (glibc's __restore_rt, named __sigaction or killpg by a symbol lookup); the frame under them is where
the signal struck. A frame of the C library there (memcpy, free) is a call made by the frame below it, with the
pointer that frame passed: the library that crashed is the first frame outside it.

A crash inside NCCL (libnccl.so, or a symbol ``ncclX``/``pncclX``) is NCCL's own, not the program's: the steps are
NCCL's release (a regression is the common reason: the previous release, or the newest), the ``NCCL_*`` settings the
job set (each changes code paths NCCL runs: job/unexplained.py's settings step), and NCCL_DEBUG=INFO on the next run
so NCCL's last words before the crash are in the log (NCCL's environment documentation). Other libraries are named
with their own first step (``STEPS``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ncclcheck.evidence.types import Loc
from ncclcheck.findings import Finding, Severity
from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.model import Job
from ncclcheck.job.unexplained import settings_finding

# Frames that are not where the signal struck: the handler's, the C and C++ runtime's (a call made by the frame
# below), and frames no printer could place (glog's "(unknown)").
_PASS = frozenset({"handler", "system", "unknown"})
# How far under the crash's line its handler's frames are looked for: a backtrace of 64 frames (UCX's BACKTRACE_MAX),
# faulthandler's 100 Python frames, other processes' lines between them; frames further on are another report's.
WINDOW = 400
# The cause whose first step (get the native stack) a backtrace read here answers.
NATIVE = cause("native_crash")
# What to check first for a crash in each library, from its vendor's documentation.
STEPS = {
    "NCCL net plugin": "the network plugin NCCL loaded crashed: check its release against NCCL's (each plugin release "
                       "names the NCCL releases it supports) and rerun with NCCL_NET_PLUGIN=none, NCCL's own network "
                       "transports, to confirm it is the plugin",
    "CUDA": "the CUDA driver library crashed: check the driver's release (`nvidia-smi`) against the CUDA the job was "
            "built for, and the kernel log (`dmesg -T | grep -i xid`) for the GPU's errors at that time",
    "rdma-core": "the RDMA verbs library or the NIC's user-space driver crashed: check rdma-core's (or MLNX_OFED's) "
                 "release against the kernel's driver (`ibv_devinfo`, `ofed_info -s`), and rerun once with "
                 "NCCL_IB_DISABLE=1 to confirm the path",
}


@dataclass(frozen=True)
class Site:
    """The frame a native crash struck in: its library's family, file name and symbol (either may be unprinted)."""

    family: str
    library: str
    symbol: str
    loc: Loc

    @property
    def named(self) -> str:
        """The frame as the backtrace names it: ``libnccl.so``, ``pncclRedOpDestroy``, or both."""
        return " ".join(p for p in (self.library, f"{self.symbol}()" if self.symbol else "") if p)


def crash_site(job: Job, cause: Diagnosis | None) -> Site | None:
    """The innermost frame past the handler's of the backtrace under a native crash's line, or None."""
    if cause is None or cause.cause.kind != "native_crash":
        return None
    frames = sorted((f for f in job.facts.native_frames if f.loc.file == cause.loc.file
                     and 0 < f.loc.line - cause.loc.line <= WINDOW), key=lambda f: f.loc.line)
    handler = None
    for f in frames:
        family, library, symbol = f.value.split("|", 2)
        if family == "handler":
            handler = library or handler
            continue
        if family in _PASS or not symbol and library and library == handler:  # the handler's unsymbolized frames
            continue
        return Site(family, library, symbol, f.loc)
    return None


def _python_call(job: Job, cause: Diagnosis | None) -> list[Finding]:
    """Where no native frame is printed: the Python call the crashing thread was in, from faulthandler's frames of the
    thread that caught the signal (innermost first), and the frame that called it."""
    if cause is None or cause.cause.kind != "native_crash":
        return []
    frames = sorted((f for f in job.facts.python_frames if f.loc.file == cause.loc.file
                     and 0 < f.loc.line - cause.loc.line <= WINDOW), key=lambda f: f.loc.line)
    if not frames:
        return []
    at, _, call = frames[0].value.rpartition("|")
    caller = ""
    if len(frames) > 1 and frames[1].loc.line == frames[0].loc.line + 1:
        by, _, fn = frames[1].value.rpartition("|")
        caller = f", called from {fn} ({by})"
    return [Finding(Severity.INFO, "crash-call",
                    f"The thread that caught the signal was in the Python call {call} ({at}){caller}: the native code "
                    "that call entered crashed (faulthandler prints no native frame before Python 3.14).",
                    (frames[0].loc,), None)]


def crash_findings(job: Job, cause: Diagnosis | None) -> list[Finding]:
    """The library a native crash struck in and, for NCCL, its release, settings and logging as the steps."""
    site = crash_site(job, cause)
    if site is None:
        return _python_call(job, cause)
    if site.family != "NCCL":
        where = site.named if site.family == site.library else f"{site.family} ({site.named})"
        return [Finding(Severity.WARNING, "crash-site",
                        f"The fatal signal struck in {where}: the innermost frame of its backtrace past the signal "
                        "handler's own and the C library's.", (site.loc,), STEPS.get(site.family))]
    v = job.facts.versions
    row = v.row("NCCL version")
    runs = " and ".join(g.value for g in row.groups if g.value is not None) if row is not None else ""
    release = (f"the job runs NCCL {runs}: " if runs else "the log prints no NCCL release (NCCL_DEBUG=VERSION or "
               "`python -c 'import torch; print(torch.cuda.nccl.version())'` names it): ")
    return [
        Finding(Severity.WARNING, "crash-in-nccl",
                f"The fatal signal struck inside NCCL itself: the innermost frame under the signal handler's is "
                f"{site.named}. NCCL crashed, not the program's own code.", (site.loc,),
                f"{release}if the crash began after an NCCL upgrade, run the previous NCCL release, else upgrade to "
                "the newest NCCL release (a crash inside NCCL is a bug of that release or of a setting's code path); "
                "rerun with NCCL_DEBUG=INFO so NCCL's last lines before the crash are in the log, and report the "
                "backtrace with them to NVIDIA/nccl"),
        settings_finding(v),
    ]


def crash_steps(found: Sequence[Finding], cause: Diagnosis | None, steps: tuple[str, ...]) -> tuple[str, ...]:
    """A backtrace already read answers the native crash's first step (get the native stack): the step of the
    library it names goes first instead (its finding's fix), and the step that asks for the stack goes."""
    site = next((f for f in found if f.code in ("crash-in-nccl", "crash-site") and f.fix), None)
    if site is None or site.fix is None or cause is None or cause.cause.kind != NATIVE.kind:
        return steps
    first = site.fix[0].upper() + site.fix[1:]
    return (first if first.endswith(".") else first + ".", *(s for s in steps if s != NATIVE.fix[0]))
