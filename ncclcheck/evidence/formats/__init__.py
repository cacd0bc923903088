"""Every source of lines ncclcheck reads, one module each, registered in :data:`FORMATS`.

Each module exports one :class:`~ncclcheck.evidence.formats.source.LineSource`: the words that gate it, the tags
and file names that name a rank or a process, real sample lines, and a reader whose ``feed(text, loc)`` yields
typed events. Everything else here is derived from the one list: the words the block reader keeps wherever they
stand (:data:`WORDS`), the tags the parser strips and reads, the per-rank file names. Adding a source is one module
and its fixtures (docs/layout.md).
"""

from __future__ import annotations

import re

from ncclcheck import signals
from ncclcheck.evidence.formats import (
    accelerate,
    apptainer,
    backtrace,
    busy,
    cmdline,
    collectors,
    colltrace,
    composer,
    cxx,
    deepspeed,
    dsrunner,
    elastic,
    envreport,
    errors,
    fataltag,
    faulthandler,
    glibc,
    gloo,
    horovod,
    host,
    hydra,
    icefall,
    libfabric,
    lightning,
    loglevel,
    mpi,
    mpifatal,
    msmpi,
    nativestack,
    nccl,
    nccl2,
    nccl_release,
    ncclapi,
    nccldiag,
    ncclras,
    ncclsetup,
    oneccl,
    p2pcall,
    pgnccl,
    pgstart,
    pgwrapper,
    pipeline,
    procfailure,
    progress,
    pycall,
    pyspy,
    raiseline,
    raisesite,
    ray,
    rendezvous,
    returntrace,
    sanitizer,
    slurm,
    spawn,
    statedict,
    testends,
    torchrun,
    ucs,
    unread,
    verbsqp,
    world,
)
from ncclcheck.evidence.formats.source import AT, Console, LineSource, Reader, Sample, Trigger, unnamed
from ncclcheck.evidence.types import AgentExit, JobStop, WorkerEnd

__all__ = ["CONSOLES", "FED_WORDS", "FORMATS", "GATE", "HEADER", "HEADERS", "HEAD_WORDS", "KEEP_WORDS", "PATH_RANKS",
           "PID_TAGS", "PREFIXES", "PREFIX_TEXT", "RANK_MARKS", "RANK_TAGS", "TRIGGERS", "WANTED", "WORDS", "Console",
           "LineSource", "Reader", "Sample", "Trigger", "fed_bit", "is_stop", "launcher_signal", "path_rank", "pid_tag",
           "rank_mark", "rank_tag", "readers"]

FORMATS: tuple[LineSource, ...] = (
    # fed each physical line holding one of their words, first (launchers and frameworks)
    torchrun.FORMAT, slurm.FORMAT, accelerate.FORMAT, composer.FORMAT, gloo.FORMAT, mpi.FORMAT, deepspeed.FORMAT,
    ray.FORMAT, lightning.FORMAT, icefall.FORMAT, spawn.FORMAT, nccl_release.FORMAT, envreport.FORMAT, cxx.FORMAT,
    pycall.FORMAT, nccldiag.FORMAT, ncclras.FORMAT,
    progress.FORMAT,  # a rank's count through a loop (job/uneven.py)
    pipeline.FORMAT,  # lines that say the job runs pipeline parallelism (job/pipeline.py)
    ncclapi.FORMAT,  # a traceback's frame of NCCL's C API called from a binding (job/rununsage.py)
    ncclsetup.FORMAT,  # how far NCCL's set-up got (job/stall.py)
    horovod.FORMAT,  # Horovod's stall report: the ranks that never submitted a collective
    rendezvous.FORMAT,  # torchrun's agent failing in its own rendezvous (the catalogue's rdzv_failed)
    testends.FORMAT,  # a test framework's own end before a tear-down (job/afterend.py)
    pgwrapper.FORMAT,  # the collective each rank was about to run, under DETAIL (job/storewait.py)
    colltrace.FORMAT,  # NCCL's collective trace and its communicators' set-up lines (job/colltrace.py)
    nativestack.FORMAT,  # gdb's native stacks: a thread inside an NCCL call (job/nativestall.py)
    pyspy.FORMAT,  # py-spy's dumps: each process's threads and frames, read as its rank's live stack (job/live.py)
    faulthandler.FORMAT,  # Python's faulthandler dumps, read as py-spy's (a crash's dump is no live stack)
    backtrace.FORMAT,  # a fatal signal's native backtrace, frame by frame (job/crashsite.py)
    raisesite.FORMAT,  # where a Python exception was raised: its traceback's frames (job/raisesite.py)
    p2pcall.FORMAT,  # a traceback through a send or a recv (job/idwait.py)
    dsrunner.FORMAT,  # DeepSpeed's runner launching on this node's GPUs alone (job/localonly.py)
    procfailure.FORMAT,  # torch.distributed.elastic's ProcessFailure records as their repr prints them
    pgstart.FORMAT,  # a framework's last words before its process group's rendezvous (job/pgstart.py)
    returntrace.FORMAT,  # NCCL's `file:line -> N` return trace under an error (job/returntrace.py)
    libfabric.FORMAT,  # libfabric's own warnings and fi_info's failure (the catalogue's ofi_provider_empty)
    mpifatal.FORMAT,  # an MPI library's fatal error report and a GPU-aware MPI's CUDA IPC failure (job/reasons.py)
    sanitizer.FORMAT,  # compute-sanitizer's memcheck report: the kernel that made a bad access (illegal_access)
    hydra.FORMAT,  # MPICH's Hydra (mpiexec and its proxies): its error lines, the launcher's clues
    msmpi.FORMAT,  # Microsoft MPI's mpiexec: the ranks its error analysis names, with their exit codes
    apptainer.FORMAT,  # Apptainer's and Singularity's FATAL line: the container never ran the program (job/reasons.py)
    verbsqp.FORMAT,  # a program's report that creating an RDMA queue pair failed, with its errno (job/reasons.py)
    cmdline.FORMAT,  # argparse refusing a program's command line: exit 2 before any work (job/reasons.py)
    glibc.FORMAT,  # glibc's heap checks and fortify failures: the process aborted itself (job/reasons.py)
    raiseline.FORMAT,  # a traceback's raise source line with its message written out: the exception raised
    fataltag.FORMAT,  # a library's fatal check behind its "[FATAL ERROR]" tag (job/reasons.py)
    oneccl.FORMAT,  # oneCCL's error lines and its exceptions' what() (job/reasons.py, job/statements.toml)
    statedict.FORMAT,  # load_state_dict's shapes of a checkpoint's tensor against the model's (job/statements.toml)
    ucs.FORMAT,  # UCX's and UCC's log records of level WARN and above (job/reasons.py, job/statements.toml)
    # read by the assembler (evidence/parse.py) on logical lines, in its order (``logical``)
    host.FORMAT, pgnccl.FORMAT, elastic.FORMAT, nccl2.FORMAT, nccl.FORMAT, errors.FORMAT, busy.FORMAT, world.FORMAT,
    loglevel.FORMAT,  # a logger's error records and C's failed assertions, where no source above read the line
    unread.FORMAT,  # a line stating an error in no form above, near its input's end (job/stated.py's last resort)
)
_FED = tuple(f for f in FORMATS if not f.logical)
# How each launcher's console shows the job's end (job/ending.py), by the name its ``launched`` facts give.
CONSOLES: dict[str, Console] = {c.name: c for c in (torchrun.CONSOLE, slurm.CONSOLE, mpi.CONSOLE, deepspeed.CONSOLE,
                                                     accelerate.CONSOLE, lightning.CONSOLE, ray.CONSOLE)}

RANK_TAGS: tuple[re.Pattern[str], ...] = tuple(t for f in FORMATS for t in f.rank_tags)
RANK_MARKS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(m for f in FORMATS for m in f.rank_marks)
PID_TAGS: tuple[re.Pattern[str], ...] = tuple(t for f in FORMATS for t in f.pid_tags)
PATH_RANKS: tuple[re.Pattern[str], ...] = tuple(p for f in FORMATS for p in f.path_ranks)
# The tags the sources and the collectors' wrappers put before a line, as one alternation's text (their groups
# unnamed), for evidence/whose.py's prefix pattern to take them off; no two begin alike at one place (a bracket and a
# word, a parenthesis), so their order changes no match.
PREFIXES: tuple[re.Pattern[str], ...] = (*(p for f in FORMATS for p in f.prefixes), *collectors.PREFIXES)
PREFIX_TEXT = "|".join(unnamed(p) for p in PREFIXES)
# A line that begins a new record of some source (a rank's tag, a logger's header, a traceback's start): a hard wrap's
# continuation never looks like this (evidence/parse.py joins wraps; formats/nccl.py's "Last error:" reason).
HEADERS: tuple[re.Pattern[str], ...] = tuple(h for f in FORMATS for h in f.headers)
HEADER = re.compile("|".join(h.pattern for h in HEADERS))
# The literal words the block reader must keep whole, wherever they stand; and those it hands over in a head only.
WORDS: tuple[str, ...] = tuple(dict.fromkeys(w for f in FORMATS for w in f.words))
HEAD_WORDS: tuple[str, ...] = tuple(dict.fromkeys(w for f in FORMATS for w in f.head_words))
# Every line the assembler reads into an error, a clue, a death by signal, a launcher's or a host's report, an ending
# or a setting holds one of the words its sources' cheap tests look for before any pattern: the block reader searches
# every block for them (``reader.WHOLE_WORDS``), so such a line is kept at any offset; tests/test_keep.py checks that
# every alternative of every pattern a source declares holds one of its words. NCCL's other set-up facts
# (``nranks``, ``NET/``) are read in the head only (reader.HEAD): its INFO chatter repeats their words on every line.
KEEP_WORDS: tuple[str, ...] = WORDS
# The words the block reader finds by an anchor byte, and what a line holding one must name to be handed over.
TRIGGERS: tuple[Trigger, ...] = tuple(t for f in FORMATS for t in f.triggers)
WANTED: tuple[str, ...] = tuple(dict.fromkeys(w for f in FORMATS for w in f.wanted))
# What a line must hold to be fed to the reader of each source that is fed physical lines, in ``readers()``'s order;
# and to be fed to some one of them.
FED_WORDS: tuple[tuple[str, ...], ...] = tuple((*f.words, *f.head_words) for f in _FED)
GATE: tuple[str, ...] = tuple(dict.fromkeys(w for words in FED_WORDS for w in words))


def fed_bit(source: LineSource) -> int:
    """The bit of ``source`` in the mask of the fed sources' word lists (its place in the registry)."""
    return 1 << next(i for i, f in enumerate(_FED) if f is source)


def readers() -> list[tuple[tuple[str, ...], Reader]]:
    """A fresh reader of every source fed physical lines, for one input, each with the words a line must hold to be
    fed to it (the assembler reads the ``logical`` sources itself)."""
    return [(words, f.reader()) for words, f in zip(FED_WORDS, _FED, strict=True)]


def rank_tag(text: str, pos: int = 0) -> int | None:
    """The global rank a launcher's tag at the start of a line (or at ``pos``, past a collector's header) names (Open
    MPI's ``[1,3]<stderr>:``, horovodrun's ``[1]<stderr>:`` behind its time stamp)."""
    for tag in RANK_TAGS:
        if m := tag.match(text, pos):
            return int(m["rank"])
    return None


def rank_mark(text: str) -> int | None:
    """The global rank a framework's tag further along a line names (Lightning's ``[rank: 3] ``)."""
    for word, mark in RANK_MARKS:
        if word in text[:200] and (m := mark.search(text, 0, 200)):
            return int(m["rank"])
    return None


def path_rank(path: str) -> int | None:
    """The rank a launcher's per-rank output path names (``rank.3/stderr``, Slurm's ``%t`` in ``3.log``)."""
    for pattern in PATH_RANKS:
        if m := pattern.search(path):
            return int(m["rank"])
    return None


def pid_tag(text: str) -> int | None:
    """The PID a launcher's prefix names as the line's process (Ray's "(RayTrainWorker pid=5665)"); -1 for a
    line the launcher merged across processes (it is no one process's), None for a line without such a prefix."""
    for tag in PID_TAGS:
        if m := tag.match(text):
            return -1 if m["merged"] else int(m["pid"])
    return None


def _said(text: str) -> list[object]:
    """What a fresh reader of each source reads from one line alone."""
    return [e for f in _FED if any(w in text for w in f.words) for e in f.reader().feed(text, AT)]


def is_stop(text: str) -> bool:
    """Whether a launcher's line says it stopped the whole job (a time limit, a cancellation), naming no rank."""
    return any(isinstance(e, JobStop) for e in _said(text))


def launcher_signal(text: str) -> str | None:
    """The signal a launcher's line says a child died of, where the line names no global rank: a CalledProcessError's
    ``died with <Signals.SIGKILL: 9>`` (with its ``--local_rank`` or without), DeepSpeed's ``exits with return code =
    -9``."""
    return next((e.signal if isinstance(e, WorkerEnd) else signals.of_exitcode(e.exitcode) for e in _said(text)
                 if isinstance(e, WorkerEnd) and e.rank is None or isinstance(e, AgentExit) and e.agent is None), None)
