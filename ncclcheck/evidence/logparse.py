"""Turn the lines of one log into typed events.

The parser is a small state machine fed physical lines in order (with their line numbers; gaps are allowed, see
``reader``). Each line is first repaired (``repair``: CR, progress bars, ANSI colour codes; terminal hard-wraps are
joined until a record's terminator is seen); fields are then matched on the text with all whitespace removed, so
wraps that split a token (``Timeo|ut(ms)``, ``OpTy|pe=``) still match, and each field is extracted on its own, so
one corrupted field does not lose the others.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field, replace

from ncclcheck import signals
from ncclcheck.evidence import formats, stamps
from ncclcheck.evidence.formats.collectors import LABEL, NODE_LABEL
from ncclcheck.evidence.frdump import Frame
from ncclcheck.evidence.hostlog import RECORD_WORDS, HostLog, maybe_host_record
from ncclcheck.evidence.linear import then
from ncclcheck.evidence.repair import (
    DUMP_START,
    HEADER,
    MAX_JOIN,
    MISMATCH,
    MISMATCH_ONE,
    MISMATCH_START,
    OPEN_TAIL,
    STATUS_START,
    clean,
    incomplete,
    last_bar,
    squeeze,
    unprefixed,
    waits_for_digits,
)
from ncclcheck.evidence.types import (
    PG,
    AgentExit,
    Clue,
    CollectiveStack,
    DesyncReport,
    DumpEvent,
    DumpSignal,
    ElasticFailure,
    EndLine,
    ErrorKind,
    Fact,
    FileScan,
    GlooWait,
    GroupInit,
    Heartbeat,
    InputProblem,
    JobStop,
    Lagging,
    Loc,
    Mismatch,
    PidRank,
    RankError,
    Said,
    StatusMention,
    SystemEvent,
    Who,
    WorkerDied,
    WorkerEnd,
    WorkerStarted,
    WorkMention,
    is_default_group,
)

# "[rank3]:" as torchrun prints it; also with its "[" lost at the start of a paste, or "[rank3[]:" mangled.
# "[ rank3]:" or "rank3]:" at the start, after a space or after ":)|>" (a run of spaces is its own boundary)
_GLOBAL_RANK = re.compile(r"(?:\[\s*|(?<![^\s:)|>]))rank(\d+)\[?\]:")
_ROLE_RANK = re.compile(r"\[[A-Za-z_]+?(\d+)\]:")
# A rank prefix further along a line, right before the c10 header it belongs to.
_GLUED_RANK = re.compile(r"\[rank(\d+)\]:(?=\[[EWIF]\d)")
# What precedes a record's text: a collector's own prefix (pdsh's "worker-4: ", a CRI timestamp, "[time] node4 ")
# when a rank tag follows it, then the launcher's rank tags, Ray's actor prefix and quoting marks.
_PY_PREFIX = re.compile(
    r"^(?:.{0,160}?(?=\[[A-Za-z_]*\d+\]:))?"
    r"(?:\s*(?:\([\w.\[\]=]+ pid=\d+(?:, ip=[\d.]+)?\)|\[[A-Za-z_]*\d+\]:|\[rank: \d+\]|>|`+|\*\*|"
    + formats.RANK_TAG_TEXT + r"))+\s?"
)

# --- WorkNCCL(...) printings (on whitespace-free text) ---------------------------------
_WORK = re.compile(r"WorkNCCL\(")
_F_SEQ = re.compile(r"SeqNum=(\d+)")
_F_OP = re.compile(r"OpType=([A-Z0-9_]+)")
_F_SHAPE = re.compile(r"TensorShape=(\[[^\]]*\])")
_F_IN = re.compile(r"NumelIn=(\d+)")
_F_OUT = re.compile(r"NumelOut=(\d+)")
_F_TIMEOUT = re.compile(r"Timeout\(ms\)=(\d+)")
_F_RANFOR = re.compile(r"ranfor(\d+)milliseconds")
_MSG_RANK = re.compile(r"\[(?:PG[^\[\]]*?)?Rank(-?\d+)\](?=(?:Watchdogcaught|Work|Caught|CollectiveWork))")

# --- status lines ------------------------------------------------------------------
_PG_PREFIX = re.compile(r"\[(PG[^\[\]]*?)Rank(-?\d+)\]")
_PG_INNER = re.compile(
    r"^PG(?:ID(?P<id>\d+)PGGUID(?P<guid>[^()]+?)|GUID(?P<guid2>[^()]+?)|(?P<uid>\d+))?(?:\((?P<desc>[^)]*)\))?$"
)
_STATUS = (
    (
        "failure_detected",
        re.compile(
            r"failuredetectedbywatchdogatworksequenceid:(-?\d+)PGstatus:"
            r"lastenqueuedwork:(-?\d+),lastcompletedwork:(-?\d+)"
        ),
    ),
    (
        "exception_detected",
        re.compile(
            r"Exception\(eitheranerrorortimeout\)detectedbywatchdogatwork:(-?\d+),"
            r"lastenqueuedNCCLwork:(-?\d+),lastcompletedNCCLwork:(-?\d+)"
        ),
    ),
    (
        "timeout_at",
        re.compile(r"TimeoutatNCCLwork:(-?\d+),lastenqueuedNCCLwork:(-?\d+),lastcompletedNCCLwork:(-?\d+)"),
    ),
)
_DUMP = re.compile(
    r"Received(?:adumpsignal|atimeoutsignal|aglobaltimeout).*?from(thislocalrank|anotherrank|rank(\d+))"
    r".*?LastenqueuedNCCLwork:(-?\d+),lastcompletedNCCLwork:(-?\d+)",
    re.IGNORECASE,
)

# --- heartbeat, desync, mismatch --------------------------------------------------------
_HEARTBEAT = re.compile(r"Heartbeatmonitortimedout!")
_STUCK = re.compile(r"watchdoggotstuckfor(\d+)seconds")
_DESYNC_TIMEOUT = re.compile(r"\[(\d+)\]Timeoutatcollective:([A-Z0-9_]+),#(\d+)")
_DESYNC_LAG = re.compile(r"\[([\d,]+)\]finishedcollective#(\d+),butdidn.tjoincollective#(\d+)")
_DESYNC_UNFINISHED = re.compile(r"\[([\d,]+)\]joinedbutdidn.tfinishcollective#(\d+)")
_DESYNC_NEVER = re.compile(r"ranks\[([\d,]*)\]arethelaggingranks")
_DESYNC_SNAP_HEAD = re.compile(r"^-?#(\d+)(\w+)ranks:")
_DESYNC_SNAP_ROW = re.compile(r"^-?\[([\d,]+)\](finished|started|scheduled|joined)([A-Z0-9_]+)")
_DESYNC_BODY = re.compile(r"^-?(?:\[[\d,]+\]|#\d+|Toourbestknowledge|Snapshotofranks|-)")

# --- errors and launcher summary -----------------------------------------------------
_PY_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt))(?::\s?(.*))?$")
_NCCL_WARN = re.compile(r"NCCL WARN (.*)")
_WARN_SOURCE = re.compile(r"(?<!\S)(\S+\.cc:\d+) NCCL WARN")
# NCCL before 2.3 printed "host:pid:tid [cudaDev] include/socket.h:311 WARN <message>", without the word NCCL.
_OLD_WARN = re.compile(r"\[\d+\] [\w/.]+\.(?:cc|cu|h|c):\d+ WARN (.*)")
# NCCL's own line header, "host:pid:tid [cudaDev] " (after a rank tag or NCCL's timestamp, if any).
_NCCL_HEAD = re.compile(r"(?:^|[\]:] ?)([A-Za-z0-9][\w.-]*):(\d+):\d+ \[\d+\] (?=NCCL |[\w/.]+\.cc:\d+ NCCL )")
_CASCADE = re.compile(
    r"Watchdog caught|communicator was aborted|watchdog thread terminated|Some NCCL operations have failed"
    r"|ChildFailedError|Detected mismatch between collectives|" + then("DistBackendError", "watchdog|Watchdog", lazy=False)
)
_CONNECTION = re.compile(r"Connection (?:closed|reset|refused)|remote process exit|ncclRemoteError|Broken pipe", re.I)
_ELASTIC_KEY = re.compile(r"^\s+(time|host|rank|exitcode|error_file|traceback)\s*:\s?(.*)$")
_ELASTIC_ENTRY = re.compile(r"^\s*\[(\d+)\]:\s*$")
_ELASTIC_INT = re.compile(r"(-?\d+)(?:\s*\((?:local_rank|pid):\s*(\d+)\))?")
_SIGNAL = re.compile(r"Signal (\d+) \((SIG[A-Z]+)\)")

# --- NCCL / ProcessGroupNCCL facts -----------------------------------------------------
_FACTS = (  # (key, a word the line must hold, pattern): the word is a cheap test before the pattern
    ("nccl_version", "NCCL version", re.compile(r"NCCL version:? (\d+\.\d+\.\d+)")),
    ("bootstrap", "Bootstrap", re.compile(r"Bootstrap\s*:\s*Using\s+(.*)")),
    ("net_ib", "NET/IB", re.compile(r"NET/IB\s*:\s*(Using\s+.*|No device found\.?)")),
    ("net_socket", "NET/Socket", re.compile(r"NET/Socket\s*:\s*Using\s+(.*)")),
    ("network", "Using network", re.compile(r"NCCL INFO Using network (\S+)")),
    ("TIMEOUT(ms)", "TIMEOUT(ms)", re.compile(r"TIMEOUT\(ms\):\s*(\d+)")),
    ("world_size", "initialization options", re.compile(then(r"initialization options:", r"\bsize: (\d+)"))),
    # A communicator's size: the world's, or a sub-group's (the world is at least that large).
    ("nccl_nranks", "nranks", re.compile(r"NCCL INFO comm 0x[0-9a-f]+ rank \d+ nranks (\d+) ")),
    ("bus_id", "busId", re.compile(r"cudaDev \d+ (?:nvmlDev \d+ )?busId ([0-9a-fA-F]+)")),  # the rank's GPU
    # The world as launchers and frameworks echo it: an environment dump or a script's own print (WORLD_SIZE=8),
    # DeepSpeed's launcher (dist_world_size=16) and its comm (world_size=8), torchrun's agent's rendezvous result
    # (global_world_sizes=[8, 8, ...]), Accelerate's state ("Num processes: 8"), torch 1.x's store barrier.
    ("launcher_world", "WORLD_SIZE", re.compile(r"\bWORLD_SIZE['\"]?\s*[=:]\s*['\"]?(\d+)")),
    ("launcher_world", "world_size", re.compile(r"(?<![\w.])(?:dist_)?world_size['\"]?\s*[=:]\s*['\"]?(\d+)")),
    ("launcher_world", "global_world_sizes", re.compile(r"global_world_sizes=\[(\d+)")),
    ("accelerate_world", "Num processes", re.compile(r"\bNum processes: (\d+)")),
    ("launcher_world", "store-based barrier", re.compile(r"store-based barrier for key:\S+ with (\d+) nodes")),
    # torchrun's command line or its launch configs (LOGLEVEL=INFO): nodes times processes per node, when fixed.
    ("nnodes", "nnodes", re.compile(r"--nnodes[= ](\d+)(?![:\d])")),
    ("nnodes", "max_nodes", re.compile(r"(?:^|\])\s*max_nodes\s*:\s*(\d+)\s*$")),
    ("nproc_per_node", "nproc", re.compile(r"--nproc[-_]per[-_]node[= ](\d+)|(?:^|\])\s*nproc_per_node\s*:\s*(\d+)\s*$")),
    # ProcessGroupNCCL's destructor at interpreter exit (2.4+): the program has ended, its groups are being torn down.
    # The program's own word that a rank's work is over: "Rank 3 completed" (value: the rank it names), Lightning's
    # "`Trainer.fit` stopped: `max_epochs=N` reached", HF Trainer's "Training completed." (value: the words).
    ("work_done", "completed", re.compile(r"\b[Rr]ank (\d+) (?:has )?(?:completed|finished)\b")),
    ("work_done", "finished", re.compile(r"\b[Rr]ank (\d+) (?:has )?(?:completed|finished)\b")),
    ("work_done", "Training completed", re.compile(r"(Training completed)\. Do not forget")),
    ("exit_without_destroy", "destroy_process_group", re.compile(r"(destroy_process_group\(\) was not called before "
                                                                 r"program exit)")),
)
_GROUP_INIT = re.compile(
    r"initialization options:\s*size:\s*(\d+),\s*global rank:\s*(\d+)(?:,\s*TIMEOUT\(ms\):\s*(\d+))?"
)
_TERMINATING = re.compile(r"Terminating the process after attempting to dump debug info, due to ([^.]*)")
_ASYNC = re.compile(r"raised the following async exception:\s*(.*)")
# "NCCL error: <reason>, NCCL version ..." or the older "NCCL error in: <file>:<line>, <reason>, NCCL version ...";
# before PyTorch 1.8 "NCCL Error 2: <reason>", and nccl-tests' "Test NCCL failure common.cu:874 '<reason>'".
_NCCL_ERROR = re.compile(r"(?:NCCL error|NCCL Error)(?: \d+)?(?: in: \S+,)?:?\s*(.*)|NCCL failure \S+:\d+ '([^']*)'")
_NCCL_ERROR_WORDS = ("NCCL error", "NCCL Error", "NCCL failure")

# --- flight-recorder dump steps (2.4+) and the nccl2 backend ([TC] lines) ----------------
_DUMP_EVENTS = (
    ("pipe_opened", re.compile(r"Pipe file (\S+) has been opened")),
    ("first_pg", re.compile(r"First PG on this rank to signal dumping")),
    ("store_signal", re.compile(r"Observed flight recorder dump signal from another rank")),
    ("pipe_signal", re.compile(r"Dump signal received through pipe")),
    ("preparing", re.compile(
        r"preparing to dump debug info\.?(?:\s*Include stack trace:\s*(\d))?(?:,\s*only active collectives:\s*(\d))?")),
    ("broadcast", re.compile(r"Broadcasting signal (\w+) to other ranks via TCPStore")),
    ("writing", re.compile(r"dumping nccl trace to (\S+)")),
    ("written", re.compile(r"Finished writing Flight Recorder debug info to (\S+)")),
    ("dumped", re.compile(r"Flight Recorder trace successfully dumped")),
    ("finished", re.compile(r"Finished flight recorder successfully")),
    ("wait_timeout", re.compile(r"timed out after waiting for \d+\s*ms flight recorder dumps? to finish"
                                r"|[Ff]light recorder dump did not finish within")),
)
_DUMP_HINT = re.compile(r"[Dd]ump|[Ff]light [Rr]ecorder")
_TC = re.compile(r"\[TC\](?:\[rank=(-?\d+)\])?(?:\[name=([^\]]*)\])?\s*(.*)")
_TC_TIMEOUT = re.compile(r"Operation timed out after (\d+) ms")
_TC_ABORT = re.compile(r"Aborting process due to (timeout|error)(.*)")
_SETTING = re.compile(r"\b((?:TORCH_)?NCCL_[A-Z0-9_]+)(?::\s*| set by environment to )([^\s,]+)")
_SETTING_LINE = re.compile(r"ProcessGroupNCCL (?:environments|initialization options)|set by environment to")

# Cheap gates on the raw line, so that ordinary lines skip the expensive matching.
_MAY_START = re.compile(r"Rank|WorkNCCL|mismatch|Received|atchdog|Timeout at")
_RECORDISH = re.compile(
    r"WorkNCCL|NCCL work|work sequence|watchdog|Watchdog|Timeout at collective|Received a|Heartbeat|Detected mismatch"
)
# Words one of which a line with a fact (or an error) holds: plain substring tests, cheaper than one alternation.
_FACT_WORDS = ("initialization options", "Terminating the process", "NCCL version", "Bootstrap", "NET/",
               "Using network", "TIMEOUT(ms)", "nranks", "set by environment", "NCCL WARN",
               "WORLD_SIZE", "world_size", "Num processes", "store-based barrier", "nnodes", "max_nodes", "nproc",
               "destroy_process_group", "completed", "finished")
_ERROR_WORDS = ("Error", "Exception", "Interrupt", "terminate called")

# --- what a rank was busy with: work of its own that may outlast a collective timeout ----------------------
# A progress bar's description or a framework's line for evaluation, checkpoint saving, dataset preprocessing or
# compiling. The words are plain substring tests before the pattern; the rank's last such line is kept.
BUSY_WORDS = ("valuat", "alidat", "aving", "heckpoint", "okeniz", "Map", "Filter", "reprocess", "ompil", "utotun",
              "eval_runtime")
_BUSY = re.compile(
    r"(?i)(?P<eval>evaluat|validat|running evaluation|eval(?:uation)? loop)|"
    r"(?P<save>sav(?:ing|e)\b.{0,40}checkpoint|checkpoint.{0,40}(?:is about to be saved|saving)|saving model|"
    r"saving (?:to|the)\b)|"
    r"(?P<preprocess>running tokenizer|tokeniz(?:ing|ation)|\b(?:map|filter)(?: \(num_proc=\d+\))?:|grouping texts|"
    r"preprocess(?:ing)?\b)|"
    r"(?P<compile>compil(?:ing|e) |torch\.compile|autotun)"
)
# Where another line starts inside a progress bar's line: a launcher's tag, a rank prefix, a glog header.
_GLUED_LINE = re.compile(
    r"(?<=[\]s])(?:\[[A-Za-z_]+\d+\]:|\[rank\d+\]:|[EWIF]\d{4} \d\d:|\[[EWIF][\d ][^\]]{0,60}\.(?:cpp|cc|py):\d+\]"
    r"|Traceback \(most recent call last\))"
)
_BAR_AT_ZERO = re.compile(r"\b0%\|")
# Work that ended: "Checkpoint saved", a bar at 100%, the HF Trainer's metrics after an evaluation ('eval_runtime').
_BUSY_DONE = re.compile(r"(?i)\b(?:saved|finished|done|completed?)\b|\b100%\||eval_runtime")
_NOT_BUSY = re.compile(r"(?i)error|exception|traceback|failed|" + then(r"warning: ", r"deprecat"))
# Lower-case words one of which every match of ``_BUSY`` (``BUSY_GATE``) and of ``_BUSY_DONE`` (``DONE_GATE``) holds
# (tests/test_busy_gate.py holds every alternative to them). An ASCII line (the case-insensitive patterns may match
# other letters: the Kelvin sign is a k) holding none is not busy, and ends no work, without those patterns, which
# take ~0.1 ms a line: torch's checkpoint.py UserWarning, on every step of some jobs, holds a BUSY_WORDS word.
BUSY_GATE = ("eval", "validat", "sav", "tokeniz", "map", "filter", "grouping texts", "preprocess", "compil", "autotun")
DONE_GATE = ("saved", "finished", "done", "complete", "100%|", "eval_runtime")


def _gated(text: str, gate: tuple[str, ...]) -> bool:
    """Whether a case-insensitive pattern whose every match holds one of ``gate`` may match ``text``."""
    return not text.isascii() or any(map(text.lower().__contains__, gate))


# The framework a job runs under, from the paths of its tracebacks (lines every selection of a log keeps) and
# Lightning's start line: each sets the timeout its own way.
_FRAMEWORKS = (
    ("hf_trainer", re.compile(r"transformers[/\\](?:trainer|training_args)")),
    ("lightning", re.compile(r"lightning[/\\]")),  # and its start line (evidence/formats/lightning.py)
    ("deepspeed", re.compile(r"deepspeed[/\\]")),
    ("accelerate", re.compile(r"accelerate[/\\]")),
)


def busy_phase(text: str) -> str | None:
    """Which legitimate work a line says its rank is doing: ``eval``, ``save``, ``preprocess``, ``compile``."""
    if not any(map(text.__contains__, BUSY_WORDS)) or not _gated(text, BUSY_GATE) or _NOT_BUSY.search(text):
        return None
    m = _BUSY.search(text)
    return m.lastgroup if m else None


# --- clues: the lines that say why, beside the error line itself ---------------------------
# NCCL's own sentences for a failed set-up or transport, wherever they stand (a paste often keeps only them).
_NCCL_SAYS = re.compile(
    r"Error while creating shared memory segment|no socket interface found|neither AF_INET|Failed to initialize any "
    r"NET plugin|Got completion from peer|peer access is not supported|Call to \w+ failed"
)
_CLUE_GATE = re.compile(
    r"Last error|Assertion `|CUDA error|TCPStore|\[c10d\]|death signal|closing signal|[Rr]endezvous|clients joined"
    r"|CANCELLED AT|oom_kill|OOM ?Kill|Out Of Memory"
    r"|workers joined|will restart worker group|Restarting worker group|" + _NCCL_SAYS.pattern
)
# A process's own last words on a fatal signal: UCX's "Caught signal 7 (Bus error: …)", glog's "*** SIGSEGV (@0x0)
# received by PID …", Python's faulthandler "Fatal Python error: Segmentation fault", MPI's "Signal: Bus error (7)", a
# shell's "Bus error (core dumped)". SIGABRT is left out: the watchdog's abort after a timeout ends ranks with it.
_FATAL_SIGNAL = re.compile(
    r"Caught signal (\d+) \(|(SIG[A-Z]{1,12}) \(@0x[0-9a-f]+\) received by PID|"
    r"Fatal Python error: (Segmentation fault|Bus error|Illegal instruction|Floating point exception)|"
    r"Signal: [\w ]+ \((\d+)\)$|^(Segmentation fault|Bus error|Illegal instruction)(?: \(core dumped\))?$")
_SIGNAL_WORDS = ("ignal", "SIG", "Segmentation", "rror", "nstruction")
# Words one of which every clue line holds: plain substring tests first, the gate's regex only where one is there.
_CLUE_WORDS = ("rror", "Out Of Memory", "OOM", "oom_kill", "CANCELLED", "ssertion", "TCPStore", "c10d", "signal",
               "endezvous", "joined", "restart", "Restart", "interface", "AF_INET", "plugin", "peer", "Call to")
# NCCL's own error and the nccl2 backend's lines, each found behind one of these words (launchers' and gloo's lines:
# evidence/formats/).
_NCCL_LINE_WORDS = ("NCCL error", "Terminating the process", "[TC]")
# What the reader must keep wherever it stands: every line this parser reads into an error, a clue, a death by
# signal, a launcher's or a host's report, an ending or a setting holds one of the words its own cheap tests look
# for before any pattern.  The reader searches every block for them (``reader.WHOLE_WORDS`` is made from these), so
# a line read behind one of these tests is found at any offset; tests/test_keep.py checks that every alternative of
# every pattern read here holds one of them, and that every cause's example line is found deep in a long log.
# The settings a rank ran with (``NCCL_SOCKET_IFNAME set by environment to eth2``), which NCCL prints as each
# communicator is set up, however late: kept too.  Other set-up facts (``nranks``, ``NET/``) are read in the head
# only (reader.HEAD), as NCCL's INFO chatter repeats their words on every channel line.
_SETTING_WORDS = ("environment",)  # "set by environment to", "ProcessGroupNCCL environments:"
# The other lines read at any offset: a rank's last busy line (BUSY_WORDS), the launchers' own lines
# (evidence/formats/), the resolver's and NCCL's bare errors, torchrun's restarts, the program's word that its work or
# its process groups are over.
_OTHER_WORDS = ("gai error", "cannot be retrieved", "system error", "worker group", "destroy_process_group",
                "Training completed")
KEEP_WORDS = tuple(dict.fromkeys((*_ERROR_WORDS, *_CLUE_WORDS, *_SIGNAL_WORDS, *_NCCL_LINE_WORDS, *RECORD_WORDS,
                                  *_SETTING_WORDS, *_NCCL_ERROR_WORDS, *BUSY_WORDS,
                                  *formats.WORDS, *_OTHER_WORDS)))
_LAST_ERROR = re.compile(r"(?:^|[\s:])Last error:\s*(.*)$")
_CUDA_ASSERT = re.compile(r"(?<![\w.])([\w.]+\.cuh?):(\d+): ((?:(?!\.cuh?:\d+: ).)*?): block: \[[\d,]+\], "
                          r"thread: \[[\d,]+\] Assertion `((?:(?!Assertion `).)+)` failed")
_CUDA_ERROR = re.compile(r"CUDA error: (.+?)(?:\.?$|\. | Search for | CUDA kernel errors)")
_STORE_FAIL = re.compile(then(
    r"TCPStore|\[c10d\]|c10d store|[Ss]ocket",
    r"Failed to recv|Broken pipe|Connection (?:refused|reset by peer)|(?:client socket )?has timed out|failed to connect"
    r"|has failed to (?:listen|bind)|Timed out after \d+ seconds waiting for (?:clients|workers)"
    r"|The connection to the C10d store has failed|cannot be retrieved"))
_LAUNCHER = re.compile(
    r"Received (\S+) death signal|Sending process (\d+) closing signal (SIG\w+)|has failed to shutdown the rendezvous"
    r"|(Rendezvous(?:Timeout|Closed|Connection|GracefulExit)Error)|attempts left; will restart worker group"
    r"|Restarting worker group"
    r"|\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT|oom_kill event|OOM Killed|OOMKilled"
)
_LOG_HEAD = re.compile(r"^\[?[EWIF]\d{4} [\d:.]+ +\d*\s*[^\]]*\]\s*")

_FRAME = re.compile(r"^#(\d+) (\S+) from (.+):(\d+)$")
STACK_HEADER = "Stack trace of the failed collective:"

DETAIL_WITHIN = 200  # the line under "Last error:" is its process's next line; other ranks' lines may come between
MAX_MESSAGE = 2000  # an OOM message lists every process on the GPU; its own numbers come last






def _int(s: str | None) -> int | None:
    return int(s) if s not in (None, "") else None


@functools.lru_cache(maxsize=4096)
def parse_pg(inner: str) -> PG:
    """Parse the squeezed inside of a PG prefix, e.g. ``PGID0PGGUID0(default_pg)``; one object per group text."""
    m = _PG_INNER.match(inner)
    if not m:
        return PG()
    return PG(
        id=m["id"] if m["id"] is not None else m["uid"],
        guid=m["guid"] if m["guid"] is not None else m["guid2"],
        desc=m["desc"] or None,
    )


def _ranks(s: str) -> tuple[int, ...]:
    return tuple(int(x) for x in s.split(",") if x)














@dataclass
class _Desync:
    who: Who
    loc: Loc
    reporting_rank: int | None = None
    collective: str | None = None
    index: int | None = None
    lagging: list[Lagging] = field(default_factory=list)
    snapshot: list[tuple[int, str, str, tuple[int, ...]]] = field(default_factory=list)
    snap_head: tuple[int, str] | None = None
    last_line: int = 0


class LogParser:
    """Incremental parser for one input; feed lines, then call :meth:`finish`."""

    def __init__(self, file: str, path_rank: int | None) -> None:
        self.file = file
        self.path_rank = path_rank
        self._works: list[WorkMention] = []
        self._node_offset = 0  # where [defaultN]: is a node's rank: the first global rank of this file's node
        self._role_global: dict[int, int] = {}  # launcher tag N -> global rank, from lines that carry both
        # Behind a collector's node label ("node1: [default1]:", pdsh or srun -l running torchrun on each node): the
        # node's first global rank (-1 where its lines disagree), and the (label, local tag) pairs seen before it
        self._node_base: dict[str, int] = {}
        self._node_tags: set[tuple[str, int]] = set()
        self._node_agents: list[tuple[str, int]] = []  # (label, index in _elastic) of a node's agent lines
        self._pid_rank: dict[int, int] = {}  # a worker's PID -> its global rank, where the launcher pairs them
        # The PID the launcher names on the current line; each PID's last error; errors their process outlived
        self._line_pid: int | None = None
        self._pid_error: dict[int, int] = {}
        self._outlived: set[int] = set()
        self._whos: dict[tuple[int | None, int | None], Who] = {}
        self._async_errors: dict[tuple[Who, int | None], str | None] = {}  # latest async exception's error by (who, seq)
        self._statuses: list[StatusMention] = []
        self._dumps: list[DumpSignal] = []
        self._heartbeats: list[Heartbeat] = []
        self._desync: list[DesyncReport] = []
        self._mismatches: list[Mismatch] = []
        self._mismatch_one: tuple[Who, int, str, Loc] | None = None  # an older one-rank DETAIL message to pair
        self._errors: list[RankError] = []
        self._elastic: list[ElasticFailure] = []
        self._facts: dict[tuple[str, str, int | None], Fact] = {}
        self._ranks: set[int] = set()
        self._problems: list[InputProblem] = []
        self._replaced = False
        # pending logical line: (first line number, last line number, who, text parts)
        self._pend: tuple[int, int, Who, list[str]] | None = None
        self._carry: tuple[int, Who] | None = None  # the last physical line with a rank prefix, and whose it was
        self._dsync: _Desync | None = None
        self._stack: tuple[Who, Loc, list[Frame], int] | None = None
        self._stacks: list[CollectiveStack] = []
        self._inits: list[GroupInit] = []
        self._endings: list[EndLine] = []
        self._dump_events: list[DumpEvent] = []
        self._nccl_errors: set[tuple[int | None, str]] = set()
        self._table: dict[str, str] | None = None
        self._table_loc: Loc | None = None
        self._table_root = False
        self._last_error_line: dict[int | None, int] = {}
        self._clues: list[Clue] = []
        self._clue_keys: set[tuple[int | None, str, str]] = set()
        # "Last error:" lines whose text is on their process's next line, by process; and whether lines were left
        # out of the selection since (the one under it may be among them)
        self._await_detail: dict[Who, tuple[Loc, bool]] = {}
        self._prev_line = 0
        self._hostlog = HostLog()
        self._readers = formats.readers()  # each source's reader (evidence/formats/), with the words that gate it
        self._held: list[Said] = []  # what the sources read from the current line, to take with its errors and facts
        self._child: AgentExit | None = None  # the last CalledProcessError read as a worker's exit
        self._system: list[SystemEvent] = []

    # ------------------------------------------------------------------ feeding
    def feed(self, lineno: int, raw: bytes) -> None:
        """Take one physical line (without its newline)."""
        if self._await_detail and lineno != self._prev_line + 1:
            self._await_detail = {w: (loc, True) for w, (loc, _) in self._await_detail.items()}
        self._prev_line = lineno
        bar = last_bar(raw) if b"%|" in raw and b"\r" in raw else None
        text = clean(raw)
        if not self._replaced and "\ufffd" in text:
            self._replaced = True
        if self._pend is not None:
            first, last, who, parts = self._pend
            if lineno == last + 1 and len(parts) <= MAX_JOIN and text and not HEADER.search(text) and (
                    text[0].isdigit() or not waits_for_digits(squeeze("".join(parts)))):
                parts.append(unprefixed(parts[0], text))
                self._pend = (first, lineno, who, parts)
                if who.global_rank is not None:
                    self._carry = (lineno, who)
                if not incomplete(squeeze("".join(parts))):
                    self._pend = None
                    self._logical(first, who, "".join(parts), joined=True)
                return
            self._pend = None
            self._logical(first, who, "".join(parts), joined=True)
        said = [e for words, source in self._readers if any(map(text.__contains__, words))
                for e in source.feed(text, Loc(self.file, lineno))] if any(map(text.__contains__, formats.GATE)) else ()
        for e in said:
            if isinstance(e, PidRank):  # a PID paired with its rank names this very line's process
                self._pid_rank.setdefault(e.pid, e.rank)
            elif isinstance(e, WorkerStarted):
                self._spawned(e)
            elif isinstance(e, WorkerDied):
                self._died(e)
        self._line_pid = formats.pid_tag(text) if text.startswith("(") else None
        if self._line_pid in self._pid_error and _went_on(text):
            self._outlived.add(self._pid_error.pop(self._line_pid))
        who = self._who(text)
        if who.global_rank is None and self._carry is not None and self._carry[0] == lineno - 1 and text \
                and not HEADER.search(text) and not _ROLE_RANK.match(text) \
                and not (text.startswith("(") and formats.pid_tag(text) is not None):
            # A line with no prefix and no header of its own, right under a prefixed line: the rest of that line
            # (a terminal wraps it anywhere, also inside the prefix's record) or what the same process printed next.
            who = self._carry[1]
        self._carry = (lineno, who) if who.global_rank is not None and text else None
        # A rank named only through its PID (Ray's prefix) is seen where a line of it says something (a record, an
        # error): its ordinary lines reach the parser or not by the reader's choice, and what was seen must not.
        if who.global_rank is not None and not (self._line_pid is not None and self._line_pid in self._pid_rank):
            self._ranks.add(who.global_rank)
        if bar is not None:
            self._busy(who, bar, Loc(self.file, lineno))
        # The rest is taken where the line is read for errors and facts (not in a record, a table or a stack).
        self._held = [e for e in said if not isinstance(e, (PidRank, WorkerStarted, WorkerDied))]
        sq = squeeze(text) if _MAY_START.search(text) or OPEN_TAIL.search(text, max(0, len(text) - 100)) else None
        if sq is not None and incomplete(sq):
            self._pend = (lineno, lineno, who, [text])
            return
        self._logical(lineno, who, text, sq=sq)

    def finish(self, lines: int, bytes_read: int) -> FileScan:
        """Flush pending state and return what was found."""
        if self._pend is not None:
            first, _, who, parts = self._pend
            self._pend = None
            self._logical(first, who, "".join(parts), joined=True)
        self._close_desync()
        self._close_table()
        self._close_stack()
        if self._replaced:
            self._problems.append(
                InputProblem(self.file, "contains bytes that are not UTF-8 (shown as U+FFFD)", fatal=False)
            )
        for label, i in self._node_agents:  # a node's local rank, placed by its node's first rank, or unplaced
            base, e = self._node_base.get(label, -1), self._elastic[i]
            self._elastic[i] = replace(e, rank=base + e.local_rank if base >= 0 and e.local_rank is not None else None)
        if any(not e.agent_line for e in self._elastic):  # the failure table names global ranks: it speaks for them
            self._elastic = [e for e in self._elastic if not e.agent_line]
        node = self._node_ranks()
        if node:
            self._rewho(node)
        ranks = set(self._ranks) | {w.global_rank for w in node.values() if w.global_rank is not None}
        # A node's local tags seen before a line placed them: those processes wrote here.
        ranks |= {base + local for label, local in self._node_tags if (base := self._node_base.get(label, -1)) >= 0}
        if self.path_rank is not None:
            ranks.add(self.path_rank)
        elif bytes_read and not ranks and not self._problems and not any(
                (self._works, self._statuses, self._dumps, self._heartbeats, self._desync, self._mismatches,
                 self._errors, self._elastic, self._clues, self._facts, self._stacks, self._inits, self._endings,
                 self._dump_events, self._system)):
            # Said, so that a file nothing could be read from does not pass for a quiet rank.
            self._problems.append(InputProblem(self.file, "read, but holds nothing ncclcheck reads (no rank, record, "
                                                          "error, exit, setting or host record)", fatal=False))
        return FileScan(
            file=self.file,
            path_rank=self.path_rank,
            lines=lines,
            bytes_read=bytes_read,
            ranks_seen=tuple(sorted(ranks)),
            works=tuple(self._works),
            statuses=tuple(self._statuses),
            dump_signals=tuple(self._dumps),
            heartbeats=tuple(self._heartbeats),
            desync=tuple(self._desync),
            mismatches=tuple(self._mismatches),
            errors=tuple(e for i, e in enumerate(self._errors) if i not in self._outlived),
            elastic=tuple(self._elastic),
            clues=tuple(self._clues),
            facts=tuple(self._facts.values()),
            stacks=tuple(self._stacks),
            group_inits=tuple(self._inits),
            endings=tuple(self._endings),
            dump_events=tuple(self._dump_events),
            system=tuple(self._system),
            problems=tuple(self._problems),
        )

    def _node_ranks(self) -> dict[Who, Who]:
        """torchrun's ``[defaultN]:`` is the rank on its node, and torch 2.0-2.1 print no ``[rankN]:``: the job-wide
        rank is only the watchdog's ``[Rank K]``. Where every such process of this file names one K, and K is its
        node rank plus one offset for all of them (a node's ranks are consecutive), K is its global rank; a
        subgroup's ranks (every process naming the same few) do not fit that and are left alone."""
        if self.path_rank is not None:
            return {}
        named: dict[Who, set[int]] = {}
        for w in self._works:
            if w.who.global_rank is None and w.who.path_rank is not None and w.rank is not None:
                named.setdefault(w.who, set()).add(w.rank)
        offsets = {next(iter(ks)) - who.path_rank for who, ks in named.items() if len(ks) == 1}  # type: ignore[operator]
        if not named or any(len(ks) != 1 for ks in named.values()) or len(offsets) != 1:
            return {}
        offset = offsets.pop()
        if offset < 0:
            return {}
        self._node_offset = offset
        return {who: self._one_who(who.path_rank + offset, None) for who in list(self._whos.values())
                if who.global_rank is None and who.path_rank is not None}

    def _rewho(self, node: dict[Who, Who]) -> None:
        """Put the global ranks found by :meth:`_node_ranks` on everything this file read."""
        if self._node_offset:  # ranks past the first node: the [Rank K] printed is the world group's
            world = PG(id="0", desc="default_pg")
            self._works[:] = [replace(w, pg=world) if w.who in node and w.pg is None else w for w in self._works]
        for name in ("_works", "_statuses", "_dumps", "_heartbeats", "_desync", "_mismatches", "_errors", "_elastic",
                     "_clues", "_stacks", "_inits", "_endings", "_dump_events"):
            items = getattr(self, name)
            items[:] = [replace(x, who=node[x.who]) if getattr(x, "who", None) in node else x for x in items]
        for key, fact in list(self._facts.items()):
            if getattr(fact, "who", None) in node:
                self._facts[key] = replace(fact, who=node[fact.who])

    def problem(self, message: str, fatal: bool = False) -> None:
        """Record a reading problem for this input."""
        self._problems.append(InputProblem(self.file, message, fatal))

    # ------------------------------------------------------------------ helpers
    def _who(self, text: str) -> Who:
        ranks = _GLOBAL_RANK.findall(text, 0, 200) if text.find("rank", 0, 200) != -1 else None
        if not ranks and len(text) > 200 and (glued := _GLUED_RANK.search(text)):
            ranks = [glued[1]]  # a record glued after a long line (a progress bar without its carriage return)
        if not ranks and (mark := formats.rank_mark(text)) is not None:
            ranks = [mark]  # a framework's tag further along (Lightning's "[rank: 3] ")
        role = _ROLE_RANK.match(text)
        node = None
        if role is None and "]:" in text[:90] and text[:1] != "[" and (label := NODE_LABEL.match(text)) and (
                role := _ROLE_RANK.match(text, label.end())) is not None and not role[0].startswith("[rank"):
            node = label[0]  # a collector's node label before torchrun's tag: "node1: [default1]:"
        if ranks:
            if node is not None and role is not None and text.startswith("[rank", role.end()):
                self._node_tag(node, int(role[1]), int(ranks[-1]))
            elif role and not role[0].startswith("[rank") and text.startswith("[rank", role.end()):
                # torchrun's "[default3]:[rank3]:": the launcher's tag is that process's, on its lines without one
                self._role_global.setdefault(int(role[1]), int(ranks[-1]))
            return self._one_who(int(ranks[-1]), self.path_rank)
        if node is not None and role is not None:
            base = self._node_base.get(node)
            if base is not None and base >= 0:
                return self._one_who(base + int(role[1]), self.path_rank)
            self._node_tags.add((node, int(role[1])))
            return self._one_who(None, self.path_rank)
        if not ranks and text.startswith("[") and (tagged := formats.rank_tag(text)) is not None:
            return self._one_who(tagged, self.path_rank)  # a launcher's own tag of the global rank (Open MPI's)
        if not ranks and text.startswith("(") and (pid := formats.pid_tag(text)) in self._pid_rank:
            return self._one_who(self._pid_rank[pid], self.path_rank)  # Ray's worker, by its PID
        if role and int(role[1]) in self._role_global:
            return self._one_who(self._role_global[int(role[1])], self.path_rank)
        if self.path_rank is None and role:
            return self._one_who(None, int(role[1]))
        return self._one_who(None, self.path_rank)

    def _node_tag(self, node: str, local: int, rank: int) -> None:
        """torchrun gives the workers of one node consecutive global ranks (its first one plus the local rank), so
        one line that carries both tags behind a node's label places every local tag of that node."""
        base = self._node_base.setdefault(node, rank - local)
        if base != rank - local:
            self._node_base[node] = -1

    def _one_who(self, global_rank: int | None, path_rank: int | None) -> Who:
        """One shared object per process: every line of a log names one of a few, and a job has millions of lines."""
        key = (global_rank, path_rank)
        who = self._whos.get(key)
        if who is None:
            who = self._whos[key] = Who(global_rank, path_rank)
        return who

    def _logical(self, lineno: int, who: Who, text: str, joined: bool = False, sq: str | None = None) -> None:
        """One logical line (``sq``: its squeezed text when the caller has it)."""
        loc = Loc(self.file, lineno)
        if self._await_detail:
            # The same process's next line (other ranks' lines may come between); a line naming no process right
            # under it is its continuation.
            mine = who if who in self._await_detail else next(
                (w for w, (loc, _) in self._await_detail.items() if who.rank is None and loc.line == lineno - 1), None)
            if mine is not None:
                self._detail(mine, lineno, text)
        if self._stack is not None:
            frame = _FRAME.match(_PY_PREFIX.sub("", text).strip())
            if frame and lineno == self._stack[3] + 1:
                who0, loc0, frames, _ = self._stack
                frames.append(Frame(frame[2], frame[3], int(frame[4])))
                self._stack = (who0, loc0, frames, lineno)
                return
            self._close_stack()
        if text.rstrip().endswith(STACK_HEADER):
            self._stack = (who, loc, [], lineno)
            return
        if self._dsync is not None:
            if self._desync_line(lineno, squeeze(text)):
                return
            self._close_desync()
        if any(map(text.__contains__, BUSY_WORDS)):
            self._busy(who, text, loc)
        in_table = (self._table is not None or self._table_root or text.startswith("Root Cause")
                    or _ELASTIC_KEY.match(text) or _ELASTIC_ENTRY.match(text))
        if in_table and self._table_line(loc, text):
            return
        if "[TC]" in text and self._nccl2(who, text, loc):
            return
        if _DUMP_HINT.search(text) and self._dump_event(who, text, loc):
            return
        if not (joined or _RECORDISH.search(text)):
            self._error_or_fact(who, text, loc)
            return
        if sq is None:
            sq = squeeze(text)
        if "WorkNCCL(" in sq:
            self._work(who, sq, loc, text)
            if "Timeoutatcollective" in sq:
                self._start_desync(who, loc, sq, lineno)
            return
        if STATUS_START.search(sq):
            self._status(who, sq, loc)
            return
        if DUMP_START.search(sq):
            self._dump(who, sq, loc)
            return
        if "Timeoutatcollective:" in sq:
            self._start_desync(who, loc, sq, lineno)
            return
        if "Heartbeat" in sq or "gotstuck" in sq:
            self._heartbeat(who, sq, loc)
            return
        if MISMATCH_START.search(sq):
            m = MISMATCH.search(sq)
            if m:
                self._mismatches.append(Mismatch(who, int(m[1]), m[2], int(m[3]), m[4], loc))
            elif m := MISMATCH_ONE.search(sq):
                self._one_rank_mismatch(who, int(m[1]), m[2], loc)
            return
        self._error_or_fact(who, text, loc)

    def _one_rank_mismatch(self, who: Who, rank: int, fingerprint: str, loc: Loc) -> None:
        """Pair an older one-rank DETAIL message with the next one of another rank and another fingerprint."""
        first = self._mismatch_one
        if first is not None and first[1] != rank and first[2] != fingerprint:
            self._mismatches.append(Mismatch(first[0], first[1], first[2], rank, fingerprint, first[3]))
            self._mismatch_one = None
        elif first is None or first[1] == rank:
            self._mismatch_one = (who, rank, fingerprint, loc)

    def _work(self, who: Who, sq: str, loc: Loc, text: str) -> None:
        start = sq.find("WorkNCCL(")
        nxt = sq.find("WorkNCCL(", start + 1)
        body = sq[start: nxt if nxt != -1 else len(sq)]
        head = sq[:start]
        error = None
        if "raisedthefollowingasyncexception" in body:
            evidence = "async_exception"
            m = _ASYNC.search(text)
            error = m[1].strip()[:500] if m else None
        elif "threadterminatedwithexception" in head:
            evidence = "thread_terminated"
        elif "what():" in head:
            evidence = "what"
        elif "communicatorwasabortedonrank" in head:
            evidence = "communicator_aborted_runtimeerror"
        elif "Watchdogcaught" in head:
            evidence = "watchdog_timeout"
        elif "timedoutin" in body or "Caughtcollectiveoperationtimeout" in head:
            evidence = "blocking_wait"
        else:
            evidence = "work_mention"
        ranks = _MSG_RANK.findall(sq[: start + 1])
        shape = _F_SHAPE.search(body)
        pg, _ = self._prefix(sq, start)
        self._works.append(
            WorkMention(
                who=who,
                rank=int(ranks[-1]) if ranks else None,
                seq=_field(_F_SEQ, body),
                op_type=(m[1] if (m := _F_OP.search(body)) else None),
                numel_in=_field(_F_IN, body),
                numel_out=_field(_F_OUT, body),
                tensor_shape=shape[1] if shape else None,
                timeout_ms=_field(_F_TIMEOUT, body),
                ran_for_ms=_field(_F_RANFOR, body),
                evidence=evidence,
                loc=loc,
                error=error,
                clock_s=_clock(text),
                pg=pg,
            )
        )
        if evidence == "async_exception":
            self._async_errors[(who, self._works[-1].seq)] = error

    def _prefix(self, sq: str, before: int) -> tuple[PG | None, int | None]:
        # The last "[PG" that opens a prefix is the last prefix: a prefix holds no bracket, so none overlap.
        at = sq.rfind("[PG", 0, before)
        m = _PG_PREFIX.match(sq, at, before) if at != -1 else None
        if m is None:
            found = list(_PG_PREFIX.finditer(sq, 0, before))
            if not found:
                return None, None
            m = found[-1]
        return parse_pg(m[1]), int(m[2])

    def _status(self, who: Who, sq: str, loc: Loc) -> None:
        for evidence, pattern in _STATUS:
            m = pattern.search(sq)
            if m:
                pg, rank = self._prefix(sq, m.start())
                seq = int(m[1])
                error = self._async_errors.get((who, seq))
                self._statuses.append(
                    StatusMention(who, pg or PG(), rank, seq, int(m[2]), int(m[3]), evidence, loc, error)
                )
                return

    def _dump(self, who: Who, sq: str, loc: Loc) -> None:
        m = _DUMP.search(sq)
        if not m:
            return
        pg, _ = self._prefix(sq, m.start())
        self._dumps.append(DumpSignal(who, pg, _int(m[2]), int(m[3]), int(m[4]), loc))

    def _dump_event(self, who: Who, text: str, loc: Loc) -> bool:
        """A flight-recorder dump step ("First PG on this rank to signal dumping", ...); True if it was one."""
        for kind, pattern in _DUMP_EVENTS:
            m = pattern.search(text)
            if m:
                sq = squeeze(text[: m.start()])
                pg, _ = self._prefix(sq, len(sq))
                stack = active = detail = None
                if kind == "preparing":
                    stack = m[1] == "1" if m[1] else None
                    active = m[2] == "1" if m[2] else None
                elif m.groups():
                    detail = m[1]
                self._dump_events.append(DumpEvent(who, pg, kind, loc, stack, active, detail))
                return True
        return False

    def _nccl2(self, who: Who, text: str, loc: Loc) -> bool:
        """A line of the nccl2 backend ("[TC][rank=R][name=PG] ..."); True if it was one we read."""
        m = _TC.search(text)
        if not m:
            return False
        rank, comm, msg = _int(m[1]), m[2], m[3]
        if t := _TC_TIMEOUT.search(msg):
            self._works.append(WorkMention(
                who=who, rank=rank, seq=None, op_type=None, numel_in=None, numel_out=None, tensor_shape=None,
                timeout_ms=None, ran_for_ms=int(t[1]), evidence="nccl2_timeout", loc=loc, comm=comm))
            return True
        if a := _TC_ABORT.search(msg):
            detail = a[1] + a[2].rstrip(".")
            self._endings.append(EndLine(who, "aborting", detail.strip(), loc))
            if a[1] == "error":
                kind = ErrorKind.CONNECTION if _CONNECTION.search(a[2]) else ErrorKind.NCCL_ERROR
                self._error(who, kind, msg.strip(), loc)
            return True
        if _DUMP_HINT.search(msg):
            return self._dump_event(who, msg, loc)
        return False

    def _heartbeat(self, who: Who, sq: str, loc: Loc) -> None:
        stuck = _STUCK.search(sq)
        if stuck or _HEARTBEAT.search(sq):
            pg, _ = self._prefix(sq, len(sq))
            kind = "watchdog_stuck" if stuck else "heartbeat_timeout"
            self._heartbeats.append(Heartbeat(who, pg, kind, int(stuck[1]) if stuck else None, loc))

    # ------------------------------------------------------------------ desync report
    def _start_desync(self, who: Who, loc: Loc, sq: str, lineno: int) -> None:
        self._close_desync()
        self._dsync = _Desync(who=who, loc=loc, last_line=lineno)
        self._desync_fields(sq)

    def _desync_line(self, lineno: int, sq: str) -> bool:
        d = self._dsync
        assert d is not None
        if lineno != d.last_line + 1 or not _DESYNC_BODY.match(sq):
            return False
        d.last_line = lineno
        self._desync_fields(sq)
        return True

    def _desync_fields(self, sq: str) -> None:
        d = self._dsync
        assert d is not None
        if m := _DESYNC_TIMEOUT.search(sq):
            d.reporting_rank, d.collective, d.index = int(m[1]), m[2], int(m[3])
        for m in _DESYNC_LAG.finditer(sq):
            d.lagging.append(Lagging(_ranks(m[1]), finished=int(m[2]), did_not_join=int(m[3])))
        for m in _DESYNC_UNFINISHED.finditer(sq):
            d.lagging.append(Lagging(_ranks(m[1]), did_not_finish=int(m[2])))
        for m in _DESYNC_NEVER.finditer(sq):
            d.lagging.append(Lagging(_ranks(m[1]), never_joined=True))
        if m := _DESYNC_SNAP_HEAD.match(sq):
            d.snap_head = (int(m[1]), m[2])
        elif d.snap_head and (m := _DESYNC_SNAP_ROW.match(sq)):
            d.snapshot.append((d.snap_head[0], m[2], m[3], _ranks(m[1])))

    def _close_desync(self) -> None:
        d = self._dsync
        if d is None:
            return
        self._dsync = None
        self._desync.append(
            DesyncReport(d.who, d.reporting_rank, d.collective, d.index, tuple(d.lagging), tuple(d.snapshot), d.loc)
        )

    def _close_stack(self) -> None:
        if self._stack is not None:
            who, loc, frames, _ = self._stack
            if frames:
                self._stacks.append(CollectiveStack(who, tuple(frames), loc))
        self._stack = None

    # ------------------------------------------------------------------ torchrun summary
    def _table_line(self, loc: Loc, text: str) -> bool:
        if text.startswith("Root Cause"):
            self._close_table()
            self._table_root = True
            return True
        if _ELASTIC_ENTRY.match(text):
            self._close_table()
            self._table, self._table_loc = {}, loc
            return True
        key = _ELASTIC_KEY.match(text)
        if key:
            if self._table is None or key[1] in self._table:
                self._close_table()
                self._table, self._table_loc = {}, loc
            self._table[key[1]] = key[2].strip()
            return True
        self._close_table()
        self._table_root = False
        return False

    def _close_table(self) -> None:
        t, loc = self._table, self._table_loc
        self._table = None
        if not t or loc is None:
            return
        rank = _ELASTIC_INT.match(t.get("rank", ""))
        code = _ELASTIC_INT.match(t.get("exitcode", ""))
        sig = _SIGNAL.search(t.get("traceback", ""))
        self._elastic.append(
            ElasticFailure(
                rank=_int(rank[1]) if rank else None,
                local_rank=_int(rank[2]) if rank else None,
                exitcode=_int(code[1]) if code else None,
                pid=_int(code[2]) if code else None,
                signal=sig[2] if sig else None,
                host=t.get("host"),
                time=t.get("time"),
                root_cause=self._table_root,
                loc=loc,
            )
        )

    # ------------------------------------------------------------------ errors and facts
    def _error_or_fact(self, who: Who, text: str, loc: Loc) -> None:
        if maybe_host_record(text) and (event := self._hostlog.feed(text, loc)):
            self._system.append(event)
            return
        if self._held and self._held[0].loc.line == loc.line:
            held, self._held = self._held, []
            if any([self._said(who, e) for e in held]):
                return  # the line is wholly a launcher's or gloo's report
        if 'File "' in text:
            for name, pattern in _FRAMEWORKS:
                if pattern.search(text):
                    self._fact(who, "framework", name, loc)
        if any(map(text.__contains__, _SIGNAL_WORDS)) and self._fatal_signal(who, text, loc):
            return
        # Here, not on every line (a timeout record is never a clue), and behind plain substring tests.
        if any(map(text.__contains__, _CLUE_WORDS)) and _CLUE_GATE.search(text):
            self._clue(who, text, loc)
        if any(map(text.__contains__, _FACT_WORDS)):
            subgroup = False
            if m := _GROUP_INIT.search(text):
                sq = squeeze(text)
                pg, grank = self._prefix(sq, len(sq))
                self._inits.append(GroupInit(who, pg or PG(), grank, int(m[1]), int(m[2]), _int(m[3]), loc))
                subgroup = pg is not None and pg != PG() and not is_default_group(pg)
            if "Terminating" in text and (m := _TERMINATING.search(text)):
                self._endings.append(EndLine(who, "terminating", m[1].strip(), loc))
                return
            for key, word, pattern in _FACTS:
                # A sub-group's creation line gives its own size, not the world's (the group creation keeps it).
                if word in text and not (subgroup and key == "world_size") and (m := pattern.search(text)):
                    self._fact(who, key, next(g for g in m.groups() if g is not None).strip(), loc)
            if _SETTING_LINE.search(text):
                for m in _SETTING.finditer(text):
                    self._fact(who, m[1], m[2], loc)
            if who.rank is not None and " NCCL " in text and (head := _NCCL_HEAD.search(text, 0, 200)):
                self._fact(who, "host", head[1], loc)  # where the rank ran, for a peer's address to name it
                self._fact(who, "pid", head[2], loc)
            warn = _NCCL_WARN.search(text) if "NCCL WARN" in text else None
            if warn:
                msg = warn[1].strip()
                kind = ErrorKind.CONNECTION if _CONNECTION.search(msg) else ErrorKind.NCCL_WARN
                self._error(who, kind, msg, loc)
                if "nvls" in text and (src := _WARN_SOURCE.search(text)):
                    # NVLink SHARP's set-up fails with a bare CUDA error: only the source file says it was NVLS
                    self._add_clue(who, "nccl", f"{src[1]} NCCL WARN {msg}", loc)
                return
        if " WARN " in text and (warn := _OLD_WARN.search(text)):
            msg = warn[1].strip()
            self._error(who, ErrorKind.CONNECTION if _CONNECTION.search(msg) else ErrorKind.NCCL_WARN, msg, loc)
            return
        if any(map(text.__contains__, _NCCL_ERROR_WORDS)) and self._nccl_error(who, text, loc):
            return
        if not any(map(text.__contains__, _ERROR_WORDS)):
            return
        stripped = _PY_PREFIX.sub("", text).strip()
        m = _PY_ERROR.match(stripped)
        if m is None and (label := LABEL.match(stripped)):
            stripped = stripped[label.end():]
            m = _PY_ERROR.match(stripped)
        if m and m[1].startswith("nccl"):
            # "ncclRemoteError: A call failed ..." is the result code under an "NCCL error: ..." line.
            if not any(k[0] == who.rank for k in self._nccl_errors):
                self._nccl_error(who, "NCCL error: " + stripped, loc)
            return
        if m and "CalledProcessError" in m[1] and self._child is not None and self._child.loc.line == loc.line:
            self._agent_failed(self._child)  # the line's own exception is its launcher's report of a worker
            return
        if m and not _CASCADE.search(stripped):
            name, msg = m[1], (m[2] or "").strip()
            if "OutOfMemory" in name or "out of memory" in msg:
                kind = ErrorKind.OOM
            elif "CUDA error" in msg:
                kind = ErrorKind.CUDA
            elif _CONNECTION.search(msg):
                kind = ErrorKind.CONNECTION
            else:
                kind = ErrorKind.EXCEPTION
            self._error(who, kind, stripped, loc)
        elif stripped.startswith("terminate called after throwing") and "c10::" not in stripped:
            self._error(who, ErrorKind.EXCEPTION, stripped, loc)

    def _clue(self, who: Who, text: str, loc: Loc) -> None:
        """Keep a line that says why a process failed (see :class:`Clue`); each text once per rank."""
        body = _LOG_HEAD.sub("", _PY_PREFIX.sub("", text).strip())
        if (at := body.find("slurmstepd: ")) > 0:  # glued after a progress bar that ended without a newline
            body = body[at:]
        clock = _clock(text)
        if m := _LAST_ERROR.search(body):
            if m[1].strip():
                self._add_clue(who, "last_error", m[1].strip(), loc)
            else:
                self._await_detail[who] = (loc, False)
            return
        if m := _CUDA_ASSERT.search(body):
            self._add_clue(who, "cuda_assert", f"Assertion `{m[4]}` failed in {m[3]} ({m[1]}:{m[2]})", loc)
            return
        if m := _CUDA_ERROR.search(body):
            self._add_clue(who, "cuda", "CUDA error: " + m[1].strip(), loc)
        if m := _STORE_FAIL.search(body):
            self._add_clue(who, "store", body[:300], loc, clock)
        elif _LAUNCHER.search(body):
            self._add_clue(who, "launcher", body[:300], loc, clock)
        elif _NCCL_SAYS.search(body):
            self._add_clue(who, "nccl", body[:300], loc, clock)

    def _detail(self, who: Who, lineno: int, text: str) -> None:
        """The line under "Last error:" (its process's next line): NCCL's reason, or nothing when the next record
        starts at once."""
        loc, gap = self._await_detail.pop(who)
        if lineno - loc.line > DETAIL_WITHIN:
            return
        body = _PY_PREFIX.sub("", text).strip()
        empty = not body or bool(HEADER.search(body)) or body.startswith(("Exception raised from", "Traceback"))
        if empty and gap:
            return  # lines were left out since: the one under it may be among them; say nothing rather than "empty"
        self._add_clue(who, "last_error", "" if empty else body, loc if empty else Loc(loc.file, lineno))

    def _add_clue(self, who: Who, kind: str, text: str, loc: Loc, clock: float | None = None) -> None:
        key = (who.rank, kind, text[:120])
        if key not in self._clue_keys:
            self._clue_keys.add(key)
            self._clues.append(Clue(who, kind, text[:300], loc, clock))

    def _nccl_error(self, who: Who, text: str, loc: Loc) -> bool:
        """An "NCCL error: <reason>" raised on this rank (not on a named work); each text counted once per rank.

        The same error is printed by the watchdog, by ``what():`` and by the Python exception;
        it is one event. Remote exits and closed sockets are connection failures.
        """
        m = _NCCL_ERROR.search(text)
        if not m or "WorkNCCL(" in text:
            return False
        message = "NCCL error: " + (m[1] if m[1] is not None else m[2]).strip()
        key = (who.rank, message[:200])
        # Without a rank, a text some rank already printed is that rank's restatement (what(): ...).
        restated = who.rank is None and any(k[1] == key[1] for k in self._nccl_errors)
        if key not in self._nccl_errors and not restated:
            self._nccl_errors.add(key)
            kind = ErrorKind.CONNECTION if _CONNECTION.search(message) else ErrorKind.NCCL_ERROR
            self._error(who, kind, message, loc)
        return True

    def _agent_failed(self, said: AgentExit) -> None:
        """A launcher's line about one worker that exited, by its local rank: on one node that is the rank; a failure
        table in the same input, which names the global rank, is preferred (see :meth:`finish`). Behind a node's label
        (pdsh's "node1: ") it is that node's local rank: placed by the node's first rank where its lines give it
        (:meth:`_node_tag`), else left unplaced."""
        failure = ElasticFailure(rank=said.local_rank, local_rank=said.local_rank, exitcode=said.exitcode,
                                 pid=said.pid, signal=signals.of_exitcode(said.exitcode), host=None, time=None,
                                 root_cause=False, loc=said.loc, agent_line=True)
        if said.node is not None:
            self._node_agents.append((said.node, len(self._elastic)))
        self._elastic.append(failure)

    def _said(self, who: Who, said: Said) -> bool:
        """Take what a source's reader read from a line of ``who`` (evidence/formats/), joined to this input's ranks;
        True where the line is wholly that report (nothing else is read from it)."""
        if isinstance(said, AgentExit):
            if said.agent is None:  # a CalledProcessError: taken where it is the line's own exception
                self._child = said
                return False
            # Where an attempt of the worker group ended, and which agent said so.
            self._agent_failed(said)
            self._fact(Who(), "agent_failed", f"{said.agent}@{said.loc.line}", said.loc)
            return True
        if isinstance(said, Fact):
            self._fact(who, said.key, said.value, said.loc)
            return False
        if isinstance(said, GlooWait):
            self._gloo_wait(who, said)
            return True
        if isinstance(said, ElasticFailure):
            self._elastic.append(said)
            return True
        if isinstance(said, Clue):
            self._add_clue(self._one_who(said.who.global_rank, said.who.path_rank), said.kind, said.text, said.loc)
            return True
        if isinstance(said, WorkerEnd) and said.rank is not None:
            self._elastic.append(ElasticFailure(rank=said.rank, local_rank=None, exitcode=said.exitcode, pid=said.pid,
                                                signal=said.signal, host=said.host, time=None, root_cause=False,
                                                loc=said.loc))
        elif isinstance(said, (WorkerEnd, JobStop)):
            # A stop of the whole job, or a worker's end the line cannot place: the launcher's words are a clue (a
            # long command line in the middle is cut, its end, the exit code, kept).
            body = said.text
            self._add_clue(self._one_who(None, None), "launcher",
                           body if len(body) <= 300 else f"{body[:140]} … {body[-150:]}", said.loc)
        return False

    def _spawned(self, said: WorkerStarted) -> None:
        """A worker the launcher says it started: its PID (joins host records and rankless reports to it) and, where
        its output goes to this console, the rank is seen here (a rank that wrote nothing here wrote nothing)."""
        who = self._one_who(said.rank, None)
        self._fact(who, "pid", str(said.pid), said.loc)
        self._fact(who, "spawned", str(said.pid), said.loc)
        if not said.own_log:
            self._ranks.add(said.rank)

    def _died(self, said: WorkerDied) -> None:
        """A launcher's report that a worker's process died without an error of its own (Ray's actor error): that
        rank's death, by a signal it does not name. Its rank by the PID the report names, or the snippet's one rank."""
        rank = self._pid_rank.get(said.pid) if said.pid is not None else None
        if rank is None and len(said.snippet) == 1:
            rank = said.snippet[0]
        if rank is not None:
            self._error(self._one_who(rank, None), ErrorKind.KILLED, said.text, said.loc)

    def _fatal_signal(self, who: Who, text: str, loc: Loc) -> bool:
        """A line in which the process itself reports the fatal signal it dies of (a segfault or bus error in
        native code has no Python traceback)."""
        body = _PY_PREFIX.sub("", text).strip()
        if (label := LABEL.match(body)) and not body.startswith("Signal: "):
            body = body[label.end():]
        if fatal_signal(body) is None:
            return False
        self._error(who, ErrorKind.KILLED, body[:300], loc)
        return True

    def _gloo_wait(self, who: Who, said: GlooWait) -> None:
        """gloo's collective timeouts (evidence/formats/gloo.py): like NCCL's watchdog line, a wait, not the rank's
        own failure; each rank's wait is kept once (the log line and the exception repeat it)."""
        if said.missing is not None:
            self._fact(who, "monitored_barrier_missing", said.missing, said.loc)
        if not any(w.who == who and w.evidence in ("monitored_barrier", "gloo_timeout") for w in self._works[-8:]):
            op = "MONITORED_BARRIER" if said.evidence == "monitored_barrier" else None
            self._works.append(WorkMention(who=who, rank=None, seq=None, op_type=op, numel_in=None,
                                           numel_out=None, tensor_shape=None, timeout_ms=said.timeout_ms,
                                           ran_for_ms=None, evidence=said.evidence, loc=said.loc,
                                           clock_s=said.clock_s))

    def _busy(self, who: Who, text: str, loc: Loc) -> None:
        """The rank's last line about legitimate work of its own (evaluation, saving, preprocessing, compiling),
        quoted as printed without its prefixes; one per rank, the latest."""
        if (glued := _GLUED_LINE.search(text, 1)) is not None:
            text = text[:glued.start()]  # another process's line glued after a progress bar without its newline
            who = self._who(text)
        # the work finished ("Checkpoint saved", a bar at 100%): not what it is doing
        if _gated(text, DONE_GATE) and _BUSY_DONE.search(text):
            for k in [k for k in self._facts if k[0] == "busy" and k[2] == who.rank]:
                del self._facts[k]
            return
        if busy_phase(text) is None:
            return
        body = _LOG_HEAD.sub("", _PY_PREFIX.sub("", text).strip())
        body = " ".join(body.split())  # a bar's padding
        old = [k for k in self._facts if k[0] == "busy" and k[2] == who.rank]
        if old and _BAR_AT_ZERO.search(body):
            return  # a bar just (re)started says less than the one before it
        for k in old:
            del self._facts[k]
        self._facts[("busy", "", who.rank)] = Fact(who, "busy", body[:200], loc)

    def _error(self, who: Who, kind: ErrorKind, message: str, loc: Loc) -> None:
        if kind is ErrorKind.EXCEPTION and self._line_pid is not None and self._line_pid >= 0:
            self._pid_error[self._line_pid] = len(self._errors)  # a Python exception: did its process go on?
        if who.global_rank is not None:
            self._ranks.add(who.global_rank)  # an error shows its rank, however the line names it
        self._errors.append(RankError(who, kind, message[:MAX_MESSAGE], loc))

    def _fact(self, who: Who, key: str, value: str, loc: Loc) -> None:
        k = (key, value, who.rank)
        if k not in self._facts:
            self._facts[k] = Fact(who, key, value[:300], loc)


def _went_on(text: str) -> bool:
    """Whether a line a launcher tagged with its process's PID is that process going on with its work: not a part
    of a traceback, not an error line, not blank. An error its process outlived (a traceback logged with a warning,
    as Ray's controller does) is not how it ended."""
    body = _PY_PREFIX.sub("", text, count=1)
    line = body.strip()
    return bool(line) and not body[:1].isspace() and not line.startswith(_TRACEBACK_PARTS) and \
        _PY_ERROR.match(line) is None


_TRACEBACK_PARTS = ("Traceback", "File ", "During handling", "The above exception", "^", "~", "[")


def fatal_signal(line: str) -> str | None:
    """The fatal signal a process reports it dies of on this line (``SIGBUS``), or None; SIGABRT is not one."""
    m = _FATAL_SIGNAL.search(line)
    if m is None:
        return None
    number = m[1] or m[4]
    sig = signals.name(int(number)) if number else m[2] or signals.BY_WORDS[m[3] or m[5]]
    return sig if sig in signals.FATAL else None


def _clock(text: str) -> float | None:
    """The stamp (evidence/stamps.py: date and time) of a c10 log header (``[E1122 11:18:45.006097316 ...``)."""
    return stamps.glog(text)


def _field(pattern: re.Pattern[str], text: str) -> int | None:
    m = pattern.search(text)
    return int(m[1]) if m else None
