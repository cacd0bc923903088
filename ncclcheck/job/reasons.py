"""The lines a job wrote about why it failed, each from a known source, what each means, and which says most.

job/stated.py quotes the best of them where no cause of the catalogue explains a failure better. The lines are
those the parser reads as a rank's errors and clues (evidence/parse.py, evidence/formats/); each comes from one
source, and the sources are ranked by how much their line says:

1. NCCL's own reason. NCCL logs at level WARN only "messages indicating a fatal error" (src/debug.cc), as
   ``host:pid:tid [dev] file.cc:N NCCL WARN <text>`` since 2.3 (``[YYYY-MM-DD HH:MM:SS]`` before it since 2.26, the
   function's name in brackets after the line number in its 2026 logging), ``host:pid:tid [dev] file.cc:N WARN
   <text>`` in 2.0-2.2. Whatever NCCL_DEBUG says, NCCL keeps the last WARN's text, which ncclGetLastError returns and
   PyTorch prints after "Last error:" (torch/csrc/distributed/c10d/NCCLUtils.cpp, getNcclErrorDetailStr). NCCL's
   failure sentences standing alone (a paste that kept only them) count the same.
2. CUDA's: a CUDA error string (cudaGetErrorString, as PyTorch's C10_CUDA_CHECK prints it, "CUDA error: <string>")
   and a device-side assertion (the kernel's file, line and condition).
3. A C++ exception's message: gloo's EnforceNotMet ("[enforce fail at file:line] condition. message",
   gloo/common/logging.cc), raised in Python or printed by the C++ runtime's terminate handler after ``what():``
   for an exception no code caught (evidence/formats/cxx.py); a library's fatal check behind its ``[FATAL ERROR]``
   tag (ROCm's RCCL at its set-up: evidence/formats/fataltag.py); oneCCL's error line or its exception's message
   (``|CCL_ERROR| file:line function: message``, ``oneCCL: ... EXCEPTION: message``: evidence/formats/oneccl.py);
   UCX's or UCC's record of level ERROR or FATAL (``[sec.usec] [host:pid:tid] file:line UCC  ERROR message``:
   evidence/formats/ucs.py; their WARN records rank with the notices of 7); libfabric's ``<warn>`` line under NCCL's
   OFI plugin (evidence/formats/libfabric.py) where job/statements.toml names its mechanism (libfabric warns of much
   that is no failure).
4. The type of that exception alone ("terminate called after throwing an instance of 'T'"), and NCCL's error code
   as PyTorch words it, "NCCL error: <ncclGetErrorString>" (src/init.cc): the class of failure, not which call
   failed.
5. A Python exception: the last line of its traceback, the exception's type and message; argparse's refusal of the
   command line (``prog: error: ...``, evidence/formats/cmdline.py), with which Python exits as it would on one; a
   launcher's echo of a launch that cannot work (DeepSpeed's runner giving every node an empty --master_addr,
   evidence/formats/dsrunner.py).
6. An error record a logging library wrote (Python's logging, loguru, spdlog, Rust's and Go's loggers, glog's
   FATAL) that nothing the process logged after it outlived (evidence/formats/loglevel.py): the program's own
   account, in words no table knows; C's ``assert()`` failing (glibc's "Assertion `x' failed.") ranks with 3, and
   so do glibc's own checks as it aborts a process (a corrupted heap, a buffer overrun: evidence/formats/glibc.py),
   an MPI library's fatal error and a container runtime's (Apptainer's FATAL line: evidence/formats/apptainer.py).

7. A line that states an error in words of no form above (evidence/formats/unread.py: an error word, near its
   input's end, read by no source): quoted only where nothing else failed (job/stated.py), never ranked against the
   others.

PyTorch's watchdog's teardown ("Some NCCL operations have failed or timed out", evidence/formats/errors.py) says a
work failed or timed out and the process is taken down, never which or why: it is kept below every source, never
ranked against their lines, and quoted only where nothing else is read (job/stated.py).

A few lines of these sources state no failure (evidence/formats/errors.py's NOT_FATAL: a WARN NCCL went on from, CUDA's
"driver shutting down" at the process's exit): they are kept as notices, never quoted as a reason.

Among the lines, those of the ranks the verdict names as culprits come first (the rank that failed first), then the
more specific source, then the earlier line: by the clock the lines carry where both carry one, else by their place
(line order is time order within a file).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ncclcheck.evidence.formats import loglevel
from ncclcheck.evidence.tables import rows_with
from ncclcheck.evidence.types import ErrorKind, FileScan, Loc, PeerGone, RankError, Stating
from ncclcheck.job.causes import one_line
from ncclcheck.job.statements import explained, placed_told, told


@dataclass(frozen=True)
class Source:
    """One source of stated reasons: its ``name`` (the JSON's ``verdict.stated.source``), ``tier`` (lower says more)
    and how a report names its line."""

    name: str
    tier: int
    label: str


SOURCES = (
    Source("nccl_warn", 1, "NCCL's WARN line"),
    Source("last_error", 1, "NCCL's 'Last error:'"),
    Source("nccl", 1, "NCCL's own sentence"),
    Source("cuda_assert", 2, "CUDA's device-side assertion"),
    Source("cuda", 2, "CUDA's error string"),
    Source("cuda_ipc", 2, "a CUDA IPC call's error"),
    Source("sanitizer", 2, "compute-sanitizer's report of a kernel's bad access"),
    Source("gloo_enforce", 3, "gloo's EnforceNotMet"),
    Source("c_assert", 3, "C's assert()"),
    Source("glibc", 3, "the C library's check (glibc)"),
    Source("mpi", 3, "the MPI library's fatal error"),
    Source("container", 3, "the container runtime's fatal error"),
    Source("fatal", 3, "a library's fatal check"),
    Source("rdma_qp", 3, "an RDMA verbs call's error"),
    Source("libfabric", 3, "libfabric's warning"),
    Source("ccl", 3, "oneCCL's error line"),
    Source("state_dict", 3, "PyTorch's load_state_dict check"),
    Source("ucs", 3, "UCX's or UCC's error record"),
    Source("what", 3, "a C++ exception's what()"),
    Source("terminate", 4, "a C++ exception nobody caught"),
    Source("nccl_error", 4, "NCCL's error code"),
    Source("argparse", 5, "the program's argument parser"),
    Source("runner", 5, "the launcher's echo of its launch"),
    Source("exception", 5, "a Python exception"),
    Source("logged", 6, "the last error it logged"),
    Source("raise_line", 6, "the raise in its traceback's source line"),
    Source("abort", 6, "Open MPI's report of the process's abort"),
    Source("nccl_notice", 7, "NCCL's WARN line"),
    Source("watchdog", 7, "PyTorch's watchdog"),
    Source("cuda_notice", 7, "CUDA's error string"),
    Source("ucs_warn", 7, "UCX's or UCC's warning"),
    Source("unread", 7, "a line of a form ncclcheck does not read"),
)
_BY_NAME = {s.name: s for s in SOURCES}
# The sources whose line says why NCCL failed (its own reason, or the CUDA error under it): where one is in the
# inputs, "NCCL failed without saying why" is false.
SAYS_WHY = frozenset(s.name for s in SOURCES if s.tier <= 2)
# The sources whose line states a failure (all but NCCL's notice of what was none).
FAILED = frozenset(s.name for s in SOURCES if s.tier <= 6)


@dataclass(frozen=True)
class Stated:
    """One line a process wrote about its failure: its source, its words, what they mean, whose and where."""

    source: str
    text: str
    meaning: str
    rank: int | None
    loc: Loc
    clock_s: float | None = None
    file: str | None = None  # the source file NCCL's WARN header printed (its layer: job/layers.py), where it did
    gone: PeerGone | None = None  # its word that a peer went away (evidence/formats/nccl.py)

    @property
    def label(self) -> str:
        return _BY_NAME[self.source].label

    @property
    def tier(self) -> int:
        return _BY_NAME[self.source].tier

    def quoted(self) -> str:
        """``NCCL's WARN line "Socket creation failed : ..." (log:3), that is ...``"""
        return f'{self.label} "{self.text}" ({self.loc}), that is {self.meaning}'


# What each ncclResult_t means (ncclGetErrorString's words, read into Stating.result by evidence/formats/nccl.py).
_RESULT_MEANS = {
    "ncclUnhandledCudaError": "ncclUnhandledCudaError: a CUDA call inside NCCL failed; the line does not say which",
    "ncclSystemError": "ncclSystemError: a system call inside NCCL (a socket, shared memory, memory) failed; the line "
                       "does not say which",
    "ncclInternalError": "ncclInternalError: an internal check of NCCL failed",
    "ncclInvalidArgument": "ncclInvalidArgument: NCCL refused an argument of the call",
    "ncclInvalidUsage": "ncclInvalidUsage: NCCL refused the call as made",
    "ncclRemoteError": "ncclRemoteError: a peer exited or the network between them failed",
}


def _notice(says: Stating | None) -> bool:
    """One of the lines that state no failure (evidence/formats/errors.py, NOT_FATAL): a WARN NCCL went on from,
    CUDA's driver unloaded at the process's exit."""
    return says is not None and says.notice


_OWN_WORDS = "NCCL's reason in its own words (NCCL logs a WARN line for a fatal error only)"


def _nccl_meaning(says: Stating | None) -> str:
    if says is None:
        return _OWN_WORDS
    if says.notice:
        return "a condition NCCL warned of and went on from (a fallback of its own): no failure by itself"
    if says.cuda is not None:
        return f"a CUDA call NCCL made failed with '{says.cuda}'"
    if says.call is not None:
        return f"the call {says.call} failed in NCCL" + (f": {says.call_error}" if says.call_error else "")
    if says.closed_by is not None:
        peer = f" {says.closed_by}" if says.closed_by else ""
        return f"the peer{peer} closed its connection: that process ended or failed first"
    return _OWN_WORDS


def _meaning(source: str, text: str, says: Stating | None, file: str | None = None) -> str:
    """What the line means, from its source and its words, never more than the line says: the mechanism its words
    name where the table of them (job/statements.toml) has it, else for NCCL's line its words and the layer under
    NCCL it comes from (job/layers.py; ``file``: the file its WARN header printed)."""
    if source not in ("nccl_notice", "cuda_notice") and (said := placed_told(text, file)) is not None:
        return said.means
    if source in ("nccl_warn", "last_error", "nccl", "nccl_notice"):
        own = _nccl_meaning(says)
        if source != "nccl_notice" and (layer := explained(text, file)) is not None:
            return layer.means if own == _OWN_WORDS else f"{own}; {layer.means}"
        return own
    if source == "unread":
        return ("an error the job reported in its own words, in a form no table of ncclcheck's knows: its words are "
                "all it says, and these inputs do not show whether it ended the job")
    if source == "cuda_notice":
        return "the CUDA driver was unloaded as the process exited: the process's end, not its cause"
    if source == "cuda":
        return ("a CUDA call failed with that error; CUDA reports a kernel's error at a later call, so the line that "
                "raised it may not be the one that caused it")
    if source == "cuda_assert":
        return "a kernel checked that condition on the GPU and stopped"
    if source == "gloo_enforce":
        site = says.enforce_at if says is not None else None
        return f"gloo checked a condition at {site} and it did not hold" if site else "a check of gloo's did not hold"
    if source == "logged":
        return _logged_meaning(text)
    if source == "c_assert":
        at = loglevel.assertion_place(text)
        where = f" in {at[0]} ({at[1]})" if at else ""
        return (f"the program checked a condition{where} with C's assert() and it did not hold: glibc printed this "
                "and aborted the process (SIGABRT)")
    if source == "argparse":
        return ("the program's argument parser (Python's argparse) refused its command line and exited with status 2 "
                "before the program began: the command that starts it, not the program's work, is wrong")
    if source == "runner":
        return "the launcher started the job's processes with that setting, as its own log line shows"
    if source == "fatal":
        return "a library checked a condition of its own and ended the process with that reason"
    if source == "ccl":
        return "oneCCL, the collective library, stated this error (its error log line or its exception's message)"
    if source == "state_dict":
        return ("PyTorch's load_state_dict found a tensor of the checkpoint whose shape is not the model's, and "
                "loaded none of it")
    if source in ("ucs", "ucs_warn"):
        return _ucs_meaning(text)
    if source == "what":
        return "the message of a C++ exception that reached no handler and ended the process"
    if source == "terminate":
        thrown = says.thrown if says is not None else None
        return (f"a C++ exception ({thrown}) reached no handler and ended the process; its what() line, next, says "
                "why" if thrown else "a C++ exception reached no handler and ended the process")
    if source == "nccl_error":
        result = says.result if says is not None else None
        return _RESULT_MEANS[result] if result else "NCCL returned an error"
    name = says.exception if says is not None else None
    return f"the program stopped on {name}" if name else "the program stopped on that exception"


def _ucs_meaning(text: str) -> str:
    """The component (UCX, UCC) and level of a UCX log record (evidence/formats/ucs.py puts them after its site)."""
    parts = text.split(" ", 3)
    comp, level = (parts[1], parts[2]) if len(parts) > 2 else ("UCX", "ERROR")
    lib = {"UCX": "UCX (the transport layer Open MPI and UCC run over)",
           "UCC": "UCC (the collective library of PyTorch's ucc backend and Open MPI's coll ucc)"}.get(comp, comp)
    if level == "WARN":
        return (f"{lib} logged this warning; a healthy job prints some too, so it says what went wrong only where no "
                "other line does")
    return f"{lib} logged this at level {level} at the site its record names: that library's own account of what failed"


def _logged_meaning(text: str) -> str:
    said = loglevel.library(text)
    lib, level, logger = said if said is not None else ("a logger", "ERROR", "")
    name = f", logger '{logger}'" if logger else ""
    return (f"a record {lib} wrote at level {level}{name}, the last error its process logged: nothing it logged "
            "after says it went on, so it is the program's own account of why it stopped")


def source_of(e: RankError) -> str | None:
    """Which source an error line is from (the parser reads every one of them into a ``RankError``); None for a line
    that states no failure of the process: its death by a signal (the catalogue reads it), or torchrun's
    SignalException, raised in a worker the agent stopped with SIGTERM or SIGINT
    (torch/distributed/elastic/multiprocessing/api.py): the agent's stop, after a failure elsewhere or from outside."""
    if e.says is not None and e.says.agent == "SignalException":
        return None
    if e.kind is ErrorKind.NCCL_WARN:
        return "nccl_notice" if _notice(e.says) else "nccl_warn"
    if e.kind is ErrorKind.NCCL_ERROR or e.message.startswith("NCCL error"):
        return "nccl_error"
    if e.says is not None and e.says.enforce_at is not None:
        return "gloo_enforce"
    if e.says is not None and e.says.thrown is not None:
        return "terminate"
    if e.kind is ErrorKind.CONNECTION:
        # the parser's connection errors are NCCL's WARN text, its error code (above) or a Python exception's line
        return "exception" if e.says is not None and e.says.exception else "nccl_warn"
    if e.kind in (ErrorKind.EXCEPTION, ErrorKind.CUDA, ErrorKind.OOM):
        return "exception"
    return None  # a death by a signal: no reason stated, the catalogue reads it


def stated_lines(scans: Sequence[FileScan]) -> tuple[Stated, ...]:
    """Every line of a known source that states a failure, in the inputs' order (one per rank, source and words)."""
    out: dict[tuple[int | None, str, str], Stated] = {}
    for s in scans:
        files = {f.loc: f.value for f in rows_with(s.facts, "key", "nccl_warn_file".__eq__)  # evidence/formats/nccl.py
                 if f.key == "nccl_warn_file"}
        for e in s.errors:
            source = source_of(e)
            if source is not None:
                text, file = one_line(e.message), files.get(e.loc)
                meaning = _meaning(source, e.message, e.says, file)
                out.setdefault((e.who.rank, source, text), Stated(source, text, meaning, e.who.rank, e.loc, file=file,
                                                                 gone=e.gone))
        for c in s.clues:
            source = {"last_error": "last_error", "nccl": "nccl", "cuda": "cuda", "cuda_assert": "cuda_assert",
                      "teardown": "watchdog", "logged": "logged", "c_assert": "c_assert", "glibc": "glibc",
                      "mpi": "mpi", "fatal": "fatal", "cuda_ipc": "cuda_ipc", "rdma_qp": "rdma_qp", "ccl": "ccl",
                      "state_dict": "state_dict", "ucs": "ucs", "ucs_warn": "ucs_warn",
                      "container": "container", "unread": "unread", "sanitizer": "sanitizer",
                      "abort": "abort", "argparse": "argparse", "runner": "runner", "raise_line": "raise_line",
                      "what": "gloo_enforce" if "[enforce fail at " in c.text else "what"}.get(c.kind)
            # libfabric warns at level warn of much that is no failure (an HMEM interface it could not start, a
            # provider with nothing to offer): its line is a reason only where job/statements.toml names its mechanism
            if c.kind == "libfabric" and told(c.text) is not None:
                source = "libfabric"
            if source is not None and _notice(c.says):
                source = "nccl_notice" if source in ("last_error", "nccl") else "cuda_notice"
            if source is not None and c.text:
                text = one_line(c.text)
                out.setdefault((c.who.rank, source, text),
                               Stated(source, text, _meaning(source, c.text, c.says), c.who.rank, c.loc, c.clock_s,
                                      gone=c.gone))
    return tuple(out.values())


def ranked(lines: Sequence[Stated], culprits: Sequence[int] = ()) -> list[Stated]:
    """The lines best first: the culprits' own, then the more specific source, then the earlier."""
    named = set(culprits)

    def key(x: Stated) -> tuple[bool, int, float, str, int]:
        clock = x.clock_s if x.clock_s is not None else math.inf
        return (x.rank not in named if named else False, x.tier, clock, x.loc.file, x.loc.line)

    return sorted(lines, key=key)
