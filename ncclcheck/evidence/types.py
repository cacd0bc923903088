"""Typed evidence read from the inputs: what each log line or dump said, and where.

Everything here is a frozen dataclass so results can cross process boundaries
(files are parsed in worker processes) and be compared in tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from ncclcheck.evidence.frdump import Dump, Frame


@dataclass(frozen=True)
class Loc:
    """Where a fact was read: the input's display name and its 1-based line."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class PG:
    """A process group as PyTorch names it in a log prefix; every part may be missing."""

    id: str | None = None
    guid: str | None = None
    desc: str | None = None

    def label(self) -> str:
        name = self.id if self.id is not None else (f"GUID {self.guid}" if self.guid else "?")
        return f"PG {name}" + (f" ({self.desc})" if self.desc else "")


class Named(Protocol):
    """A group's name as a log or a dump gives it (a ``PG`` here, the job model's ``GroupId``)."""

    # read-only members, so that frozen dataclasses match
    @property
    def id(self) -> str | None: ...
    @property
    def guid(self) -> str | None: ...
    @property
    def desc(self) -> str | None: ...


def is_default_group(pg: Named | None) -> bool:
    """The world group: described as default_pg, GUID 0, or (with no GUID printed) ID 0."""
    return pg is not None and (pg.desc == "default_pg" or pg.guid == "0" or (pg.guid is None and pg.id == "0"))


@dataclass(frozen=True)
class Who:
    """Which process printed a line, from the strongest evidence available.

    ``global_rank`` comes from a ``[rankN]:`` prefix, ``path_rank`` from the file
    name (``rank6.log``, ``attempt_0/6/stderr.log``). ``local_rank`` and ``node``: torchrun's ``[default3]:`` where
    no line of the input states its global rank (evidence/localranks.py): the rank on that node (the input, or a
    collector's label), the global rank unknown.
    """

    global_rank: int | None = None
    path_rank: int | None = None
    local_rank: int | None = None
    node: str | None = None

    @property
    def rank(self) -> int | None:
        return self.global_rank if self.global_rank is not None else self.path_rank


@dataclass(frozen=True)
class WorkMention:
    """One printing of a ``WorkNCCL(...)`` timeout (watchdog line or a restatement)."""

    who: Who
    rank: int | None  # the "[Rank N]" of the message (group rank, possibly stale)
    seq: int | None
    op_type: str | None
    numel_in: int | None
    numel_out: int | None
    tensor_shape: str | None
    timeout_ms: int | None
    ran_for_ms: int | None
    evidence: str  # watchdog_timeout | thread_terminated | what | blocking_wait | async_exception | ...
    loc: Loc
    error: str | None = None  # async_exception: the NCCL error raised on this work (not a timeout)
    clock_s: float | None = None  # the glog header's date and time as a stamp (evidence/stamps.py)
    comm: str | None = None  # nccl2_timeout: the communicator's name from "[name=...]" (the group's name)
    pg: PG | None = None  # the "[PG ... Rank N]" prefix before it (a restatement's own group, when printed)
    gone: PeerGone | None = None  # async_exception: its error's word that a peer went away (formats/pgnccl.py)


@dataclass(frozen=True)
class StatusMention:
    """A progress line: the timed-out sequence number and the PG's counters."""

    who: Who
    pg: PG
    rank: int | None  # the rank inside "[PG ... Rank N]"
    seq: int | None
    last_enqueued: int | None
    last_completed: int | None
    evidence: str  # timeout_at | exception_detected | failure_detected
    loc: Loc
    # Set when this line reports an NCCL error raised on that same work in this process (the
    # "raised the following async exception" line before it): an error's status, not a timeout's.
    error: str | None = None


@dataclass(frozen=True)
class DumpSignal:
    """"Received a dump signal ... from rank R": names the rank that noticed first. With ``alone``, a line that
    states only the group's counters (``Last enqueued NCCL work: E, last completed NCCL work: C``): the dump line's
    sentence cut from its opening, or the watchdog's periodic ``NCCL Work update periodically`` line; no signal."""

    who: Who
    pg: PG | None
    from_rank: int | None  # None means "this local rank"
    last_enqueued: int | None
    last_completed: int | None
    loc: Loc
    alone: bool = False
    rank: int | None = None  # the "[Rank N]" of its prefix (the rank within its group), where ``alone``


@dataclass(frozen=True)
class DumpEvent:
    """A step of the flight-recorder dump a rank logged, other than the dump-signal line itself.

    ``kind`` is ``first_pg`` (this process group noticed the timeout first on this rank),
    ``store_signal`` (another rank's signal arrived through the TCPStore), ``broadcast`` (this
    rank asks the others to dump; ``detail`` names the signal, e.g. ``exception_dump``),
    ``pipe_opened`` (``detail``: the FIFO to write to for a dump of the live job),
    ``pipe_signal`` (someone wrote to the debug pipe: a manual dump, not a failure),
    ``preparing`` (the dump starts; ``include_stack``/``only_active`` as printed), ``writing``
    and ``written`` (``detail``: the dump file's path), ``dumped`` (this group's trace is out),
    ``finished`` (the monitor's dump is complete) or ``wait_timeout`` (the dump did not finish
    in time).
    """

    who: Who
    pg: PG | None
    kind: str
    loc: Loc
    include_stack: bool | None = None
    only_active: bool | None = None
    detail: str | None = None


@dataclass(frozen=True)
class Heartbeat:
    """The heartbeat monitor fired: the watchdog itself was stuck (CUDA/GIL hang)."""

    who: Who
    pg: PG | None
    kind: str  # heartbeat_timeout | watchdog_stuck
    seconds: int | None
    loc: Loc


@dataclass(frozen=True)
class Lagging:
    """One culprit line of a desync report."""

    ranks: tuple[int, ...]
    finished: int | None = None
    did_not_join: int | None = None
    did_not_finish: int | None = None
    never_joined: bool = False


@dataclass(frozen=True)
class DesyncReport:
    """PyTorch's own TORCH_NCCL_DESYNC_DEBUG verdict, as printed."""

    who: Who
    reporting_rank: int | None
    timeout_collective: str | None
    timeout_index: int | None
    lagging: tuple[Lagging, ...]
    snapshot: tuple[tuple[int, str, str, tuple[int, ...]], ...]  # (index, state, op, ranks)
    loc: Loc


@dataclass(frozen=True)
class CollectiveStack:
    """PyTorch 2.6+: "Stack trace of the failed collective:" and its frames (innermost first)."""

    who: Who
    frames: tuple[Frame, ...]
    loc: Loc


@dataclass(frozen=True)
class Mismatch:
    """TORCH_DISTRIBUTED_DEBUG=DETAIL: two ranks ran different collectives. ``rank_b`` is None (and
    ``fingerprint_b`` empty) where the report names one rank only: its line cut before the second fingerprint (a
    terminal, a paste), or a one-rank report of 1.10-1.12 whose partner is not in the input. The check still found
    a difference: the wrapper raises only then."""

    who: Who
    rank_a: int
    fingerprint_a: str
    rank_b: int | None
    fingerprint_b: str
    loc: Loc


class ErrorKind(str, Enum):
    """What kind of first error a rank printed."""

    OOM = "oom"
    CUDA = "cuda_error"
    EXCEPTION = "exception"
    NCCL_WARN = "nccl_warn"
    CONNECTION = "connection_closed"
    KILLED = "killed"
    NCCL_ERROR = "nccl_error"  # "NCCL error: ..." raised by NCCL itself (not a socket/remote failure)


@dataclass(frozen=True)
class StoreWords:
    """What PyTorch's TCPStore client says of its store on a line (evidence/formats/storeclient.py): the host and
    port it tried to reach, and whether its wait for a key gave up (TCPStore::doWait), with that wait's deadline
    where the line prints one; the peers its socket's errors name; and ProcessGroupNCCL's words around a get of a
    communicator's ncclUniqueId (the ranks that waited, the rank they waited for, the store's key); and whether the
    line is the store's failure itself (``failed``: c10d's exception for it, the TCPStore's words, a failed recv)."""

    host: str | None = None
    port: int | None = None
    waited: bool = False
    wait_ms: int | None = None
    remote: tuple[str, ...] = ()  # "host:port" of each ``remote=[host]:port)`` of a socket's error, in line order
    key: str | None = None  # "by key 'K'"
    root: int | None = None  # "retrieving ncclUniqueId from [R]"
    waiters: tuple[int, ...] = ()  # "[W] is setting up NCCL communicator", each
    failed: bool = False


@dataclass(frozen=True)
class PeerGone:
    """A line's word that a peer went away (evidence/formats/nccl.py, PEER_GONE): the words from the first such word
    to the end of its sentence, and whether they are NCCL's ncclRemoteError result (its own words for it)."""

    words: str
    remote: bool = False


@dataclass(frozen=True)
class NcclWords:
    """What NCCL says on a line that job/ matches on, read once where the line is kept (evidence/formats/nccl.py):
    the peer its transport names ("peer host<port>": its host or address as printed, and its port), and the two
    ranks of one communicator its duplicate-GPU check names, with their GPU's PCI address where the line keeps it."""

    peer: str | None = None
    peer_port: int | None = None
    shared: tuple[int, int] | None = None
    bus: str | None = None  # 0000:53:00.0


@dataclass(frozen=True)
class Stating:
    """What a kept failure line states of its failure, read once where it is kept (evidence/formats/errors.py,
    :func:`stating`), for job/reasons.py to word its meaning: NCCL's checks (the CUDA error CUDACHECK names, the call
    SYSCHECK names and its error, the peer its socket says closed the connection, "" where it names no address),
    the result ncclGetErrorString words, gloo's enforce site, the type of a C++ exception nothing caught, the Python
    exception the line starts with, whether it is one of the lines that state no failure (``notice``), and whether it
    names ncclSystemError anywhere, in its words or by its name (``system``: evidence/formats/nccl.py), and the first
    exception of torchrun's agent itself it names (``agent``: evidence/formats/torchrun.py)."""

    notice: bool = False
    cuda: str | None = None
    call: str | None = None
    call_error: str = ""
    closed_by: str | None = None
    result: str | None = None  # the ncclResult_t: ncclSystemError, ncclRemoteError, ...
    enforce_at: str | None = None
    thrown: str | None = None
    exception: str | None = None
    system: bool = False
    agent: str | None = None


@dataclass(frozen=True)
class Closing:
    """torchrun's agent stopping one of its workers (evidence/formats/torchrun.py): "Sending process <pid> closing
    signal <SIG…>", the worker's PID and the signal sent."""

    pid: int
    signal: str


@dataclass(frozen=True)
class RankError:
    """An error a rank printed itself (not the watchdog's cascade)."""

    who: Who
    kind: ErrorKind
    message: str
    loc: Loc
    store: StoreWords | None = None  # the store client's words in it, read where it is kept (evidence/parse.py)
    nccl: NcclWords | None = None  # NCCL's words in it, read where it is kept (evidence/parse.py)
    gone: PeerGone | None = None  # its word that a peer went away, read where it is kept (evidence/parse.py)
    says: Stating | None = None  # what it states of its failure, read where it is kept (evidence/parse.py)


@dataclass(frozen=True)
class Clue:
    """A line that says why a process failed, beside its error line.

    ``kind`` is ``last_error`` (the text under NCCL's "Last error:", empty when NCCL printed none),
    ``cuda_assert`` (a device-side assertion: kernel and condition), ``cuda`` (a CUDA error named in any
    line, the watchdog's restatements included), ``store`` (a TCPStore or rendezvous-store failure seen by
    a worker or an agent), ``launcher`` (the launcher's own words: a signal it received, a worker it
    stopped, a rendezvous it could not complete), ``nccl`` (one of NCCL's own failure sentences standing
    on its own, without its WARN or "Last error:" line), ``shm`` (PyTorch's word that a data loader worker's
    shared memory ran out), ``ucx`` (a backtrace's frame in UCX or UCC, Open MPI's transport), ``verbs`` (a work
    completion's error status with rdma-core's words, any program's: evidence/wcstatus.py), ``socket`` (a socket
    layer's own words on the peer it reached or did not: gloo's pair, Open MPI's TCP BTL; formats/errors.py) or
    ``ucs`` (a UCX or UCC log record of level ERROR or FATAL; ``ucs_warn`` its WARN: formats/ucs.py).
    """

    who: Who
    kind: str
    text: str
    loc: Loc
    clock_s: float | None = None  # the line's header date and time as a stamp (evidence/stamps.py), when it has one
    store: StoreWords | None = None  # the store client's words in it, read where it is kept (evidence/parse.py)
    closing: Closing | None = None  # the worker torchrun's agent stopped, on a launcher clue (formats/torchrun.py)
    nccl: NcclWords | None = None  # NCCL's words in it, read where it is kept (evidence/parse.py)
    gone: PeerGone | None = None  # its word that a peer went away, read where it is kept (evidence/parse.py)
    says: Stating | None = None  # what it states of its failure, read where it is kept (evidence/parse.py)


@dataclass(frozen=True)
class ElasticFailure:
    """One entry of torchrun's ChildFailedError summary."""

    rank: int | None
    local_rank: int | None
    exitcode: int | None
    pid: int | None
    signal: str | None
    host: str | None
    time: str | None
    root_cause: bool
    loc: Loc
    agent_line: bool = False  # from the agent's "failed (exitcode: …) local_rank: …" line: ``rank`` is the local rank
    last_rank: int | None = None  # a launcher's task range (srun's ``tasks 0-7``): ranks ``rank`` to this, one entry


@dataclass(frozen=True)
class Fact:
    """An environment fact printed by NCCL or ProcessGroupNCCL (version, transport, setting)."""

    who: Who
    key: str
    value: str
    loc: Loc


@dataclass(frozen=True)
class GroupInit:
    """ProcessGroupNCCL's initialization line: this process is ``group_rank`` of ``size`` in ``pg``.

    Printed once per process group and process (``TORCH_CPP_LOG_LEVEL=INFO``); the
    one source in a text log that ties a group rank to a global rank and sizes the group.
    """

    who: Who
    pg: PG
    group_rank: int | None
    size: int | None
    global_rank: int | None
    timeout_ms: int | None
    loc: Loc


@dataclass(frozen=True)
class EndLine:
    """A line that says how a process ended or is about to (abort after the dump, exit by signal)."""

    who: Who
    kind: str  # terminating | signal | aborting (nccl2: "Aborting process due to timeout|error")
    detail: str
    loc: Loc


@dataclass(frozen=True)
class LiveThread:
    """One thread of a live process: its name and frames, innermost first."""

    name: str
    frames: tuple[Frame, ...]


@dataclass(frozen=True)
class LiveStack:
    """One rank's Python stacks taken while the job ran (``ncclcheck snapshot``).

    ``collective`` names the torch.distributed call the main thread is inside (all_reduce,
    barrier, recv, ...), or is None when the rank is in its own code; ``gpu_util`` is the
    utilisation in percent of the GPU the process uses, when known.
    """

    global_rank: int
    pid: int
    host: str | None
    threads: tuple[LiveThread, ...]
    collective: str | None
    gpu_util: int | None
    loc: Loc
    sources: tuple[tuple[str, int, str], ...] = ()  # (file, line, text) of its frames, where the snapshot read them
    children: tuple[LiveThread, ...] = ()  # its child processes' main threads dumped with it (py-spy --subprocesses:
    # a data loader's workers), each named by its PID


@dataclass(frozen=True)
class SpiedProcess:
    """One process's dump by ``py-spy dump`` (evidence/formats/pyspy.py) or Python's faulthandler
    (evidence/formats/faulthandler.py, its ``tool``) as read so far: the ``index``-th dump of its tool in its input (a
    later event of one index replaces an earlier: a dump has no line that ends it), its PID and command line where
    its ``Process`` line was read (faulthandler prints neither: its timer's ``Timeout (H:MM:SS)!`` line stands for
    the command), its parent's PID (``--subprocesses``: a child, such as a data loader's worker), its threads in
    py-spy's order (faulthandler's: the main thread first), frames innermost first; ``loc``: the line that opened
    it."""

    index: int
    pid: int | None
    parent: int | None
    command: str
    threads: tuple[LiveThread, ...]
    loc: Loc
    tool: str = "py-spy"


@dataclass(frozen=True)
class InputProblem:
    """An input that could not be read, or only in part; reported on stderr, never fatal."""

    file: str
    message: str
    fatal: bool  # True when nothing at all could be read from this input


@dataclass(frozen=True)
class SystemEvent:
    """What a host's kernel or a scheduler recorded about a process, a GPU or a node (see ``evidence/hostlog``)."""

    kind: str  # oom_killed | xid | segfault | hung_task | pcie_error | evicted | node_failure | preempted | ...
    source: str  # kernel | kubernetes | slurm
    loc: Loc
    text: str  # the line, as printed (its time stamp left off)
    pid: int | None = None
    process: str | None = None
    bus: str | None = None  # a GPU's PCI place, domain:bus:device (0000:3b:00)
    xid: int | None = None
    host: str | None = None
    pod: str | None = None
    clock: str | None = None  # the time of day the line was written, as its host's clock said
    monotonic_s: float | None = None  # seconds since that host booted (dmesg without -T)
    details: tuple[tuple[str, str], ...] = ()


# --- what a source of lines says about its workers (evidence/formats/), before the parser joins it to ranks ------
@dataclass(frozen=True)
class WorkerEnd:
    """A launcher's report that one of its workers ended: which (its global rank; None where the line cannot say),
    how and where, and the launcher's words, quoted from their start."""

    source: str
    rank: int | None
    text: str
    loc: Loc
    exitcode: int | None = None
    signal: str | None = None
    pid: int | None = None
    host: str | None = None


@dataclass(frozen=True)
class JobStop:
    """A launcher's or a scheduler's word that it stopped the whole job (a time limit, a cancellation), naming no
    worker; its words quoted from their start."""

    source: str
    text: str
    loc: Loc


@dataclass(frozen=True)
class WorkerStarted:
    """A worker the launcher says it started, with its PID and global rank. ``own_log``: the launcher writes each
    worker's output to a file of its own, so this console not holding a worker's lines says nothing of it."""

    pid: int
    rank: int
    loc: Loc
    own_log: bool = False


@dataclass(frozen=True)
class PidRank:
    """A launcher's line that pairs a worker's PID with its global rank (Ray Train's worker table)."""

    pid: int
    rank: int
    loc: Loc


@dataclass(frozen=True)
class WorkerDied:
    """A launcher's report that a worker's process died without an error of its own: the PID it names, else the
    ranks of the error snippet it stands in (one rank places it), and the launcher's words."""

    pid: int | None
    snippet: tuple[int, ...]
    text: str
    loc: Loc


@dataclass(frozen=True)
class AgentExit:
    """A launcher's line about one of its workers that exited, naming its local rank only (torchrun's agent, a
    CalledProcessError's ``--local_rank``). ``node``: the collector's label the line stands behind (pdsh's "node1: "),
    whose node the local rank is of; ``agent``: which agent said it (that label and its glog PID), None where the
    line is no agent's."""

    local_rank: int
    exitcode: int
    pid: int | None
    loc: Loc
    node: str | None = None
    agent: str | None = None


@dataclass(frozen=True)
class GlooWait:
    """gloo's collective timeout on the line's rank: a wait for a peer's send or receive (``gloo_timeout``), or in
    ``monitored_barrier`` (``missing``: the ranks rank 0 names as never arriving)."""

    evidence: str
    timeout_ms: int | None
    loc: Loc
    missing: str | None = None
    clock_s: float | None = None


# What a source's reader yields for one line (evidence/formats/source.py).
# A Fact's ``who`` is the line's process, put on it by the parser.
Said = (WorkerEnd | JobStop | WorkerStarted | PidRank | WorkerDied | AgentExit | GlooWait | ElasticFailure | Clue | Fact
        | SpiedProcess)
# What any source's reader yields (evidence/formats/): the above, and the records, errors and host records the
# assembler (evidence/parse.py) reads through the sources of logical lines.
Read = (Said | WorkMention | StatusMention | DumpSignal | DumpEvent | Heartbeat | DesyncReport | CollectiveStack
        | Mismatch | RankError | GroupInit | EndLine | SystemEvent)


@dataclass(frozen=True)
class FileScan:
    """Everything extracted from one input, in line order."""

    file: str
    path_rank: int | None
    lines: int
    bytes_read: int
    ranks_seen: tuple[int, ...]
    works: Sequence[WorkMention] = ()  # a tuple, or its columns (evidence/tables.py); so are statuses, facts
    statuses: Sequence[StatusMention] = ()
    dump_signals: tuple[DumpSignal, ...] = ()
    heartbeats: tuple[Heartbeat, ...] = ()
    desync: tuple[DesyncReport, ...] = ()
    mismatches: tuple[Mismatch, ...] = ()
    errors: tuple[RankError, ...] = ()
    elastic: tuple[ElasticFailure, ...] = ()
    clues: tuple[Clue, ...] = ()
    facts: Sequence[Fact] = ()  # a tuple, or its columns (evidence/tables.py)
    stacks: tuple[CollectiveStack, ...] = ()
    group_inits: Sequence[GroupInit] = ()  # a tuple, or its columns (evidence/tables.py)
    endings: tuple[EndLine, ...] = ()
    live: tuple[LiveStack, ...] = ()
    unranked: tuple[SpiedProcess, ...] = ()  # py-spy's dumps of processes no line names the rank of (formats/pyspy.py)
    dump_events: tuple[DumpEvent, ...] = ()
    system: tuple[SystemEvent, ...] = ()
    problems: tuple[InputProblem, ...] = ()
    dump: Dump | None = None  # set when the input is a flight-recorder dump, not a text log
    local_ranks: tuple[int, ...] = ()  # torchrun's local tags here whose global rank no line states (localranks.py)
    tagged: bool = False  # its lines carry torchrun's local tags ([default3]:): an agent's console
