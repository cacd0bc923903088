"""The one job model every verdict reasons over.

A job is global ranks and process groups.  A group is keyed by its ID *and* GUID (two
groups of a mesh can share an ID), with its members when some source tells them.  Each
rank has a position in each group it was seen in (last enqueued / started / completed, the
work it is stuck in) and an ending (timed out, NCCL error, exception, killed, exited,
still running, silent, or unknown when no input came from it).  The wait-for graph links a
rank stuck in a group to the members it waits for; its sinks are the roots.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from ncclcheck.evidence.formats.source import Console
from ncclcheck.evidence.frdump import Frame
from ncclcheck.evidence.types import (
    PG,
    Clue,
    CollectiveStack,
    DesyncReport,
    DumpSignal,
    ElasticFailure,
    Fact,
    FileScan,
    Heartbeat,
    InputProblem,
    LiveStack,
    Loc,
    Mismatch,
    PeerGone,
    RankError,
    SpiedProcess,
)
from ncclcheck.findings import Finding
from ncclcheck.job.causes import Diagnosis
from ncclcheck.job.hosts import Joined, PeerLost
from ncclcheck.job.live import LivePosition, StackGroup
from ncclcheck.job.lostnode import LostNode
from ncclcheck.job.reasons import Stated
from ncclcheck.job.returntrace import Chain, TestCheck
from ncclcheck.job.versions import Versions
from ncclcheck.job.world import WorldStatement

if TYPE_CHECKING:  # job/actions.py decides it from the model: imported here for its type only
    from ncclcheck.job.actions import Action

# Work.order's kinds, in the order they rank: a dump's record ids, then start stamps, then line numbers.
BY_RECORD, BY_START, BY_LINE = 0, 1, 2

# A world the inputs only state (an init line's size, NCCL's nranks, a launcher's task range, a dump's pg_config)
# gets one state per rank only while it is at most this many ranks, or twice the ranks the inputs hold: a number
# written in one line must not set the memory the answer takes. Beyond it the world is reported as stated and the
# ranks without input are kept as ranges (Job.unlisted); the wait-for graph takes such a group's members as ranges.
STATED_LIMIT = 1 << 17
# The op of a live rank blocked in a CUDA synchronisation (NCCL: behind GPU work), not in a call of its own.
HOST_SYNC = "CUDA_SYNCHRONIZE"


@dataclass(frozen=True)
class Record:
    """One distinct timeout event (rank, PG, SeqNum), merged over all its printings."""

    rank: int | None
    global_rank: int | None
    pg: PG | None
    seq: int | None
    op_type: str | None
    numel_in: int | None
    numel_out: int | None
    tensor_shape: str | None
    timeout_ms: int | None
    ran_for_ms: int | None
    last_enqueued: int | None
    last_completed: int | None
    evidence: tuple[str, ...]
    occurrences: int
    loc: Loc
    path_rank: int | None = None
    locs: tuple[Loc, ...] = ()
    started_s: float | None = None  # when the work started, a stamp: date and time (header's minus ran-for)
    group_rank: int | None = None  # from the status line's PG prefix; the watchdog's "[Rank N]" can be stale

    @property
    def who(self) -> int | None:
        """The best rank identity for cross-file correlation."""
        for r in (self.global_rank, self.path_rank, self.rank):
            if r is not None:
                return r
        return None


@dataclass(frozen=True)
class GroupId:
    """A process group's identity: ID and GUID (either may be unknown) and its description."""

    id: str | None = None
    guid: str | None = None
    desc: str | None = None

    def __post_init__(self) -> None:
        # The hash the dataclass would compute, once: a job's few group objects key the wait-for graph, its chain
        # and its findings some thirteen times a rank (1.3 M hashes at 100,000 ranks), each a call that built and
        # hashed the fields' tuple anew (issue 42). Not a field: the constructor's arguments stay the three above.
        object.__setattr__(self, "_hash", hash((self.id, self.guid, self.desc)))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined, no-any-return]  # set once in __post_init__

    @property
    def key(self) -> tuple[str | None, str | None]:
        return (self.id, self.guid)

    def label(self) -> str:
        """``PG 2 (dp, GUID 1f107ed8)``: short enough to read, precise enough to tell groups apart; a group whose ID
        no input printed is "a group with no ID in these inputs" (a watchdog line without its status line)."""
        name = f"PG {self.id}" if self.id is not None else "a group with no ID in these inputs"
        extra = [d for d in (self.desc,) if d and d != "default_pg"]
        if self.desc == "default_pg":
            extra.append("default")
        if self.guid and self.guid != self.id:
            extra.append(f"GUID {self.guid[:8]}" if len(self.guid) > 12 else f"GUID {self.guid}")
        return name + (f" ({', '.join(extra)})" if extra else "")

    def to_pg(self) -> PG:
        return PG(self.id, self.guid, self.desc)


class MemberSource(str, Enum):
    """Where a group's membership came from, strongest first."""

    PG_CONFIG = "pg_config"  # flight-recorder dumps list every member
    INIT_LINES = "init_lines"  # every member printed its "initialization options" line
    DEFAULT_GROUP = "default_group"  # the world group holds every rank
    ALL_RANKS = "all_ranks"  # every rank of the job printed in it: a group has no members outside the job
    LAYOUT = "layout"  # its size and some members' group ranks, laid out as its sibling groups are (a mesh)
    PARTIAL = "partial"  # some members are known (status or init lines), others are not
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Group:
    """A process group and who is in it."""

    id: GroupId
    members: Sequence[int]  # global ranks known to be members: a tuple, or a range (the world group: never expanded)
    size: int | None
    source: MemberSource

    @property
    def exact(self) -> bool:
        return self.source in (MemberSource.PG_CONFIG, MemberSource.INIT_LINES, MemberSource.DEFAULT_GROUP,
                               MemberSource.ALL_RANKS, MemberSource.LAYOUT)


@dataclass(frozen=True)
class Work:
    """One collective or p2p operation as one rank issued it; ``op`` in the WorkNCCL spelling (ALLREDUCE)."""

    group: GroupId
    seq: int | None
    op: str | None
    numel_in: int | None = None
    numel_out: int | None = None
    sizes: tuple[tuple[int, ...], ...] = ()
    dtypes: tuple[str, ...] = ()
    p2p: bool = False
    peer: int | None = None  # global rank of the p2p peer
    state: str = "scheduled"  # scheduled | started | completed | timed_out | failed
    frame: Frame | None = None
    timeout_ms: int | None = None
    ran_for_ms: int | None = None
    # Issue order on its rank, as (how it is known, value): a dump's record id, a log's start stamp (evidence/
    # stamps.py: date and time), or a log's line. Values of two kinds are never compared: the kind decides first.
    order: tuple[int, float] = (2, 0)
    loc: Loc | None = None
    out_sizes: tuple[tuple[int, ...], ...] = ()  # a dump's output tensors (job/frmatch.py compares them)
    out_dtypes: tuple[str, ...] = ()

    def signature(self) -> tuple[object, ...]:
        """What every member must agree on at one sequence number."""
        return (self.op, self.sizes or (self.numel_in,), self.dtypes)

    @property
    def number(self) -> str:
        """``#3`` for a collective, ``p2p #1`` for a send or receive: the two counters are apart."""
        if self.seq is None:
            return "(no sequence number printed)"
        return f"{'p2p ' if self.p2p else ''}#{self.seq}"

    def describe(self) -> str:
        what = self.op.lower() if self.op else "an unnamed collective"
        if self.numel_in is not None:
            what += f" of {self.numel_in:,} element{'' if self.numel_in == 1 else 's'}"
        if self.p2p and self.peer is not None:
            what += f" {'to' if (self.op or '').upper().startswith('SEND') else 'from'} rank {self.peer}"
        return what


@dataclass(frozen=True)
class Position:
    """Where one rank is in one group."""

    rank: int
    group: GroupId
    group_rank: int | None
    last_enqueued: int | None
    last_started: int | None
    last_completed: int | None
    stuck: Work | None  # the work of this group this rank timed out in, or that is still pending
    works: tuple[Work, ...] = ()  # every recorded work of this group (dumps), by sequence
    source: str = "logs"
    counted: Loc | None = None  # its latest line that states the group's counters alone (formats/pgnccl.py)


class EndKind(str, Enum):
    """How a rank ended, in the JSON contract's spelling."""

    TIMED_OUT = "timed_out"
    WAITING = "waiting"  # a dump or snapshot shows it inside a collective; no timeout line in the inputs
    NCCL_ERROR = "nccl_error"
    EXCEPTION = "exception"
    KILLED = "killed"
    EXITED = "exited"
    ABORTED = "aborted"  # ended by the watchdog's abort or the launcher after another rank's failure
    HUNG = "hung"  # its own watchdog reported itself stuck: the process is blocked (a CUDA call, the GIL)
    RUNNING = "running"
    SILENT = "silent"  # its input says nothing of a failure
    UNKNOWN = "unknown"  # no input from this rank


@dataclass(frozen=True)
class Ending:
    """A rank's ending, with the line that shows it."""

    kind: EndKind
    detail: str = ""
    loc: Loc | None = None
    # the signal that ended it: a KILLED ending's fatal one (SIGKILL, SIGSEGV, SIGBUS, ...), an ABORTED one's (the
    # watchdog's SIGABRT, the launcher's SIGTERM, SIGINT's KeyboardInterrupt), where its line names one
    signal: str | None = None
    gone: PeerGone | None = None  # the error it ends with says a peer went away (evidence/formats/nccl.py)


@dataclass(frozen=True)
class RankState:
    """Everything the inputs say about one global rank."""

    rank: int
    ending: Ending
    positions: tuple[Position, ...]
    stuck: Work | None  # the earliest work it is stuck in, over all its groups
    first_error: RankError | None
    files: tuple[str, ...]
    live: LiveStack | None = None

    @property
    def present(self) -> bool:
        return self.ending.kind is not EndKind.UNKNOWN


class EdgeReason(str, Enum):
    """Why a stuck rank waits for another."""

    NOT_REACHED = "not_reached"  # the target never issued this sequence number in this group
    BLOCKED_ELSEWHERE = "blocked_elsewhere"  # the target issued it but is itself stuck in earlier work
    DIFFERENT_COLLECTIVE = "different_collective"  # the target issued another collective at this number
    P2P_PEER = "p2p_peer"  # a send or receive waits for its one peer
    UNKNOWN = "unknown"  # the target's position in this group is not in the inputs


@dataclass(frozen=True)
class Edge:
    """``waiter`` is stuck in ``work`` and waits for ``target`` (None: members the inputs do not name)."""

    waiter: int
    work: Work
    target: int | None
    reason: EdgeReason
    detail: str


@dataclass(frozen=True)
class TextInput:
    """An input of text lines that holds a set-up mark, as job/stall.py reads where it stops: its line count and its
    facts of NCCL's set-up and of progress (``setup``, ``progress``, ``nccl_ready``, ``nccl_via``, ``nccl_end``), in
    line order."""

    lines: int
    facts: tuple[Fact, ...] = ()


@dataclass(frozen=True)
class ConsoleInput:
    """An input that is a launcher's console of its workers (job/ending.py): which launcher's, whether a line in it
    shows how the job ended there, its line count and the ranks its lines name."""

    file: str
    lines: int
    console: Console
    ended: bool
    ranks_seen: tuple[int, ...] = ()
    local_ranks: tuple[int, ...] = ()  # torchrun's local tags whose global rank no line states


@dataclass(frozen=True)
class RunSign:
    """A line that shows the job launched or running (job/ending.py's ``stalled``): a launcher's banner, a loop's bar
    or count; with its input's line count and whether that input is a flight-recorder dump."""

    fact: Fact
    lines: int
    dump: bool


@dataclass(frozen=True)
class TraceInput:
    """An input's lines of NCCL's collective trace (job/colltrace.py): its calls (``nccl_coll``) and its
    communicators' set-up lines (``nccl_comm``), in line order."""

    file: str
    calls: tuple[Fact, ...]
    comms: tuple[Fact, ...] = ()


@dataclass(frozen=True)
class JobFacts:
    """What the inputs say beyond the ranks' states, read once with the model (job/facts.py): the verdict decides
    from these and the ranks, never from the scans."""

    network: str | None = None  # the transport NCCL said it used ("IB", "Socket"): its first such line
    heartbeats: tuple[Heartbeat, ...] = ()  # the heartbeat monitor fired
    exit_teardown: tuple[Fact, ...] = ()  # "destroy_process_group() was not called" before a heartbeat failure
    work_done: tuple[Fact, ...] = ()  # the program said a rank's work, or its own training loop, was over
    mismatches: tuple[Mismatch, ...] = ()  # TORCH_DISTRIBUTED_DEBUG=DETAIL's reports
    elastic: tuple[ElasticFailure, ...] = ()  # torchrun's (or a launcher's) failure summary entries
    unnamed_failures: tuple[RankError, ...] = ()  # error lines that say something failed and name no rank
    relaunches: tuple[Clue, ...] = ()  # torchrun restarting the worker group
    dumped: frozenset[int | None] = frozenset()  # the ranks whose flight-recorder dump is in the inputs (None: unnamed)
    detail_seq: int | None = None  # the one sequence number DETAIL's fingerprints name
    hosts: Mapping[int, frozenset[str]] = field(default_factory=dict)  # each rank's host names and addresses
    peers_lost: tuple[PeerLost, ...] = ()  # the peers whose connection NCCL lost, with the ranks placed there
    host_records: tuple[Joined, ...] = ()  # every host and scheduler record, joined to its ranks
    busy: tuple[tuple[bool, Fact], ...] = ()  # busy lines (progress bars, "Evaluating"), each with "from a console"
    framework: tuple[str, Loc | None] = ("torch", None)  # the framework the lines show, with the line that shows it
    stated: tuple[Stated, ...] = ()  # every line of a known source that states a failure (job/reasons.py)
    versions: Versions = Versions()  # each rank's releases and settings, and what must agree across them (versions.py)
    lost_nodes: tuple[LostNode, ...] = ()  # consoles that stop mid-run with no word of their agent (lostnode.py)
    calls: tuple[Fact, ...] = ()  # each traceback's torch.distributed call and the user's line (formats/pycall.py)
    consoles: tuple[str, ...] = ()  # the inputs that are torchrun's console of a node (job/ending.py)
    launched: tuple[ConsoleInput, ...] = ()  # the inputs that are any launcher's console of its workers, and
    ended: bool = False  # whether any input shows how the job ended (job/ending.py)
    ran: tuple[RunSign, ...] = ()  # the lines that show the job launched or running, and the last line of each
    ran_ends: tuple[Loc, ...] = ()  # input that holds one (job/ending.py's stalled)
    reported_late: frozenset[int] = frozenset()  # ranks another rank's report names as not joining (job/absent.py)
    progress: tuple[Fact, ...] = ()  # each rank's latest count of each loop (formats/progress.py), for job/lonework.py
    rises: tuple[Fact, ...] = ()  # where each of those counts last changed, valued with the count before (job/slow.py)
    pipeline: tuple[Fact, ...] = ()  # lines that say the job runs pipeline parallelism (formats/pipeline.py)
    devices: tuple[Fact, ...] = ()  # the devices and process indexes Accelerate's state prints (job/dupgpu.py)
    returns: tuple[Chain, ...] = ()  # NCCL's return traces under its errors (job/returntrace.py)
    test_checks: tuple[TestCheck, ...] = ()  # nccl-tests' lines for its NCCL calls that failed (job/returntrace.py)
    api_calls: tuple[Fact, ...] = ()  # a binding's frames of NCCL's C API in a traceback (formats/ncclapi.py)
    errors: tuple[RankError, ...] = ()  # every error line of the inputs, ranked or not (rules for where none failed)
    launcher_kills: tuple[Fact, ...] = ()  # DeepSpeed's launcher's "Killing subprocess" lines (job/launcherkill.py)
    nccl_frames: tuple[Fact, ...] = ()  # native stack frames inside an NCCL call (job/nativestall.py)
    nccl_call_checks: tuple[Fact, ...] = ()  # NCCL errors in PyTorch's own NCCL calls' words (job/callphase.py)
    nccl_comm_checks: tuple[Fact, ...] = ()  # NCCL errors PyTorch raised making a communicator (job/worldview.py)
    program_ends: tuple[Fact, ...] = ()  # the program's work ended: a test framework's end, its word, a communicator
    # destroyed (job/afterend.py)
    p2p_calls: tuple[Fact, ...] = ()  # a traceback's point-to-point call (formats/p2pcall.py, job/idwait.py)
    lightning_starts: tuple[Fact, ...] = ()  # Lightning's 'GLOBAL_RANK: k, MEMBER: m/n' lines (job/launchgaps.py)
    error_files: tuple[Fact, ...] = ()  # Ray Tune's trials whose error is in a file, and its "Trials did not
    trials_failed: tuple[Fact, ...] = ()  # complete" (job/launchgaps.py)
    barrier_waits: tuple[Fact, ...] = ()  # the store-based barrier's waits, and the keys it completed
    barriers_done: frozenset[str] = frozenset()  # (formats/pgstart.py, job/storebarrier.py)
    local_only: tuple[Fact, ...] = ()  # DeepSpeed's runner launched on this node alone (job/localonly.py)
    wrapper_calls: tuple[Fact, ...] = ()  # the collectives the DETAIL wrapper logged (formats/pgwrapper.py)
    nccl_ready: tuple[Fact, ...] = ()  # NCCL's set-up complete (job/storewait.py: the job ran past its start)
    counts: tuple[Fact, ...] = ()  # each rank's own counters, "loop: rank N: count" (formats/progress.py, job/apart.py)
    native_frames: tuple[Fact, ...] = ()  # a native backtrace's frames (formats/backtrace.py, job/crashsite.py)
    python_frames: tuple[Fact, ...] = ()  # faulthandler's Python frames of a thread (job/crashsite.py)
    raises: tuple[Fact, ...] = ()  # each exception's name and frames, innermost first (formats/raisesite.py)
    desync: tuple[DesyncReport, ...] = ()  # PyTorch's desync reports (job/findings.py)
    unranked_stacks: tuple[SpiedProcess, ...] = ()  # py-spy's dumps of processes no line ranks (job/spied.py)
    barrier_missing: tuple[Fact, ...] = ()  # the ranks monitored_barrier says never reached it
    stacks: tuple[CollectiveStack, ...] = ()  # the stack of each rank's failed collective, where it has frames
    dump_signals: tuple[DumpSignal, ...] = ()  # the flight recorder's dump signals, which name who detected first
    networks: tuple[Fact, ...] = ()  # every line naming the network transport NCCL loaded (job/channels.py)
    via_whole: tuple[Fact, ...] = ()  # each connection's path ("via P2P"), from inputs read whole in their head
    text_inputs: int = 0  # how many inputs are of text lines, whether one holds any rank's state, and those that
    text_states: bool = False  # hold a set-up mark, where they stop (job/stall.py)
    texts: tuple[TextInput, ...] = ()
    net_facts: tuple[tuple[str, Fact], ...] = ()  # NCCL's network plugin, network and node count lines, each with
    # its input (job/netpath.py: a line that names no rank is its input's)
    traces: tuple[TraceInput, ...] = ()  # the inputs holding NCCL's collective trace, each with its lines
    events: tuple[RankError | Clue | Mismatch, ...] = ()  # every error line, clue and DETAIL mismatch report, input by
    # input (its errors, then its clues, then its reports): what the catalogue matches (job/causes.py)
    nccl_versions: tuple[Fact, ...] = ()  # each line of NCCL's that states its release, in the inputs' order
    timeouts: bool = False  # whether an input holds a work or a status of ProcessGroupNCCL's (a collective ran)
    settings: tuple[Fact, ...] = ()  # every NCCL_* and TORCH_NCCL_* variable's line (the versions table's settings,
    # job/versions.py) and NCCL DIAG's comparison of one, in the inputs' order (job/transport.py quotes them)


@dataclass(frozen=True)
class Job:
    """The whole job as the inputs describe it."""

    world: int | None
    ranks: tuple[RankState, ...]
    groups: tuple[Group, ...]
    edges: tuple[Edge, ...]
    roots: tuple[int, ...]
    records: tuple[Record, ...] = ()
    live: tuple[LivePosition, ...] = ()  # where each rank of a live job is (snapshot stacks, with their dumps)
    stack_groups: tuple[StackGroup, ...] = ()  # ranks whose main threads show the same stack
    world_stated: WorldStatement | None = None  # the line the world size comes from; None: nothing states it
    world_at: Loc | None = None  # the line that states the world size
    unlisted: tuple[range, ...] = ()  # ranks of a stated world far beyond the inputs: no input, no state, as ranges
    facts: JobFacts = JobFacts()  # what the inputs say beyond the ranks' states (job/facts.py)

    @property
    def unlisted_count(self) -> int:
        return sum(len(r) for r in self.unlisted)

    def rank(self, r: int) -> RankState | None:
        return self._by_rank.get(r)

    @functools.cached_property
    def _by_rank(self) -> dict[int, RankState]:
        """Built once: the verdict and the renderers look ranks up by number, at 100,000 ranks too."""
        return {s.rank: s for s in self.ranks}


class VerdictKind(str, Enum):
    """The verdict classes, in the JSON contract's spelling."""

    LAGGING_RANK = "lagging_rank"
    COLLECTIVE_MISMATCH = "collective_mismatch"
    DEADLOCK = "deadlock"  # ranks wait for each other in a ring across groups: no single culprit
    RANK_FAILED_FIRST = "rank_failed_first"
    NCCL_ERROR = "nccl_error"
    SETUP_FAILURE = "setup_failure"  # NCCL or the host could not set up the communicator (shm, interface, plugin)
    LAUNCHER_FAILURE = "launcher_failure"  # rendezvous, store or launcher: no rank is the culprit
    ALL_RANKS_STUCK = "all_ranks_stuck"
    WATCHDOG_STUCK = "watchdog_stuck"
    INCOMPLETE = "incomplete_evidence"
    NO_FAILURE = "no_failure"


@dataclass(frozen=True)
class Verdict:
    """The answer: what went wrong, who caused it, who was only waiting, and the chain between them."""

    kind: VerdictKind
    summary: str
    culprit_ranks: tuple[int, ...] = ()
    waiting_ranks: tuple[int, ...] = ()
    unknown_ranks: tuple[int, ...] = ()
    pg: PG | None = None
    seq: int | None = None
    chain: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    next_steps: tuple[str, ...] = ()
    cause: Diagnosis | None = None  # the catalogue's cause, when the inputs show one
    cycle: tuple[int, ...] = ()  # the ranks of a deadlock, each waiting for the next
    action: Action | None = None  # what to do next (job/actions.py); None only for a verdict built by hand
    stated: Stated | None = None  # the most specific line the job wrote about its failure (job/reasons.py)
    stopped_ranks: tuple[int, ...] = ()  # ended by the job's end, in no collective of their own (job/partition.py)


@dataclass(frozen=True)
class Analysis:
    """The whole result of ``analyze-log``."""

    scans: tuple[FileScan, ...]
    records: tuple[Record, ...]
    job: Job
    verdict: Verdict
    dtype: str
    problems: tuple[InputProblem, ...] = field(default=())  # every input that could not be read, or only in part
    attempt: int | None = None  # which attempt of a restarted job this is (None: the inputs show one attempt)
    attempt_count: int = 1  # how many attempts the inputs hold
    attempts: tuple[Analysis, ...] = ()  # with --attempt all: every attempt's own analysis, in order
