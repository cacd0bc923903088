"""PyTorch's ProcessGroupNCCL: the watchdog's records and the reports around them.

ProcessGroupNCCL (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp) prints a ``WorkNCCL(SeqNum=…, OpType=…, …)``
for a collective that timed out or failed (the watchdog's line, ``what():``, the async exception), the status of a
group (``failure detected by watchdog at work sequence id: N PG status: last enqueued work: …``), the dump signal it
received, its heartbeat monitor's verdict, the desync report (``[2] Timeout at collective: ALLREDUCE, #315`` and the
lagging ranks under it), the stack of the failed collective, the flight recorder's dump steps (2.4+), its start-up
line (``initialization options: size: 8, global rank: 3, TIMEOUT(ms): 600000``) and settings, and the line it dies
with (``Terminating the process after attempting to dump debug info``). A record may be hard-wrapped anywhere: the
assembler (evidence/parse.py) joins the wraps (evidence/repair.py's rules) and hands this reader the joined line and
the text with all whitespace removed (``sq``), on which the record's fields are matched, each on its own.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ncclcheck.evidence.formats.nccl import gone
from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample, Trigger
from ncclcheck.evidence.frdump import Frame
from ncclcheck.evidence.linear import then
from ncclcheck.evidence.repair import OPEN_PREFIX, PREFIX_END, squeeze
from ncclcheck.evidence.stamps import glog
from ncclcheck.evidence.types import (
    PG,
    CollectiveStack,
    DesyncReport,
    DumpEvent,
    DumpSignal,
    EndLine,
    Fact,
    GroupInit,
    Heartbeat,
    Lagging,
    Loc,
    Mismatch,
    Read,
    StatusMention,
    Who,
    WorkMention,
    is_default_group,
)

# --- WorkNCCL(...) printings (on whitespace-free text) ---------------------------------
_F_SEQ = re.compile(r"SeqNum=(?P<n>\d+)")
_F_OP = re.compile(r"OpType=(?P<op>[A-Z0-9_]+)")
_F_SHAPE = re.compile(r"TensorShape=(?P<shape>\[[^\]]*\])")
_F_IN = re.compile(r"NumelIn=(?P<n>\d+)")
_F_OUT = re.compile(r"NumelOut=(?P<n>\d+)")
_F_TIMEOUT = re.compile(r"Timeout\(ms\)=(?P<n>\d+)")
_F_RANFOR = re.compile(r"ranfor(?P<n>\d+)milliseconds")
_MSG_RANK = re.compile(r"\[(?:PG[^\[\]]*?)?Rank(?P<rank>-?\d+)\](?=(?:Watchdogcaught|Work|Caught|CollectiveWork))")

# --- status lines ------------------------------------------------------------------
_PG_PREFIX = re.compile(r"\[(?P<inner>PG[^\[\]]*?)Rank(?P<rank>-?\d+)\]")
_PG_INNER = re.compile(
    r"^PG(?:ID(?P<id>\d+)PGGUID(?P<guid>[^()]+?)|GUID(?P<guid2>[^()]+?)|(?P<uid>\d+))?(?:\((?P<desc>[^)]*)\))?$"
)
# Each status line's opening words (squeezed), and its counters after them.
_STATUS_LINES = (
    ("failure_detected", "failuredetectedbywatchdogatworksequenceid:",
     r"(?P<seq>-?\d+)PGstatus:lastenqueuedwork:(?P<enq>-?\d+),lastcompletedwork:(?P<done>-?\d+)"),
    ("exception_detected", "Exception(eitheranerrorortimeout)detectedbywatchdogatwork:",
     r"(?P<seq>-?\d+),lastenqueuedNCCLwork:(?P<enq>-?\d+),lastcompletedNCCLwork:(?P<done>-?\d+)"),
    ("timeout_at", "TimeoutatNCCLwork:",
     r"(?P<seq>-?\d+),lastenqueuedNCCLwork:(?P<enq>-?\d+),lastcompletedNCCLwork:(?P<done>-?\d+)"),
)
_STATUS = tuple((kind, re.compile(re.escape(opening) + counters)) for kind, opening, counters in _STATUS_LINES)
# The signals a dump line says it received (2.3+: from this rank, another rank or the store).
_DUMP_SIGNALS = ("adumpsignal", "atimeoutsignal", "aglobaltimeout")
_DUMP_OPENING = f"Received(?:{'|'.join(_DUMP_SIGNALS)})"
_DUMP = re.compile(
    _DUMP_OPENING + r".*?from(?:thislocalrank|anotherrank|rank(?P<rank>\d+))"
    r".*?LastenqueuedNCCLwork:(?P<enq>-?\d+),lastcompletedNCCLwork:(?P<done>-?\d+)",
    re.IGNORECASE,
)
# A group's two counters stated alone, in any line the forms above did not read: the dump line's sentence
# ("Last enqueued NCCL work: E, last completed NCCL work: C.", 2.3-2.9) cut from its opening, the watchdog's periodic
# "NCCL Work update periodically: last enqueued NCCL work: E, last completed NCCL work: C." (C10_LOG_EVERY_MS, INFO),
# and the same pair quoted with its filler words shortened ("last enqueued: E, last completed C").
_COUNTERS = re.compile(r"[Ll]astenqueued(?:NCCL)?(?:work)?:(?P<enq>-?\d+),lastcompleted(?:NCCL)?(?:work)?:?"
                       r"(?P<done>-?\d+)")
_PREFIX_RANK = re.compile(r"\[Rank(?P<rank>-?\d+)\]")
# TORCH_DISTRIBUTED_DEBUG=DETAIL's report: both ranks' fingerprints (1.13+), or each rank its own (1.10-1.12).
_MISMATCH_OPENING = "Detectedmismatchbetweencollectives"
MISMATCH = re.compile(
    _MISMATCH_OPENING + r"onranks\.Rank(?P<rank_a>\d+)isrunningcollective:CollectiveFingerPrint\((?P<a>.*?)\),"
    r"butRank(?P<rank_b>\d+)isrunningcollective:CollectiveFingerPrint\((?P<b>.*?)\)(?:\.Collectivesdiffer|\Z)"
)
MISMATCH_ONE = re.compile(
    _MISMATCH_OPENING + r"onranks\.Rank(?P<rank>\d+)isrunninginconsistentcollective:"
    r"CollectiveFingerPrint\((?P<a>.*)\)\Z"
)
# Either report cut before its end (the second rank's fingerprint, or the closing parenthesis): the first rank's
# fingerprint as far as it goes. The wrapper raises only on a difference, so the cut report still states one.
MISMATCH_CUT = re.compile(
    _MISMATCH_OPENING + r"onranks\.Rank(?P<rank>\d+)isrunning(?:inconsistent)?collective:"
    r"CollectiveFingerPrint\((?P<a>.*)"
)

# --- where a record starts and ends (squeezed: a terminal may wrap anywhere in it) --------------------------------
# The openings of its records, made of the words the patterns above read them by: a line that ends inside one goes
# on on the next physical line (``cut_marker``).
STARTS = (
    "Watchdogcaughtcollectiveoperationtimeout:WorkNCCL(",
    "Processgroupwatchdogthreadterminatedwithexception:",
    *(opening for _, opening, _ in _STATUS_LINES),
    *("Received" + signal for signal in _DUMP_SIGNALS),
    _MISMATCH_OPENING,
)
# A status line or a dump line, by words looser than its opening (a wrap may cut the opening anywhere): it ends with
# its last counter.
STATUS_START = re.compile(r"failuredetectedbywatchdog|detectedbywatchdogatwork|TimeoutatNCCLwork")
DUMP_START = re.compile(_DUMP_OPENING)
COUNTERS_DONE = re.compile(r"lastcompleted(?:NCCL)?work:-?\d+")
MISMATCH_START = re.compile(_MISMATCH_OPENING)
# Where a WorkNCCL printing ends; an async exception's message runs to the end of its first line.
WORK_DONE = re.compile(r"beforetimingout|timedoutin(?:blockingwait|calltowait)|\)\Z|raisedthefollowingasyncexception:.")

# --- heartbeat, desync ----------------------------------------------------------------
_HEARTBEAT = re.compile(r"Heartbeatmonitortimedout!")
_STUCK = re.compile(r"watchdoggotstuckfor(?P<s>\d+)seconds")
_DESYNC_TIMEOUT = re.compile(r"\[(?P<rank>\d+)\]Timeoutatcollective:(?P<op>[A-Z0-9_]+),#(?P<index>\d+)")
_DESYNC_LAG = re.compile(r"\[(?P<ranks>[\d,]+)\]finishedcollective#(?P<done>\d+),butdidn.tjoincollective#(?P<next>\d+)")
_DESYNC_UNFINISHED = re.compile(r"\[(?P<ranks>[\d,]+)\]joinedbutdidn.tfinishcollective#(?P<index>\d+)")
_DESYNC_NEVER = re.compile(r"ranks\[(?P<ranks>[\d,]*)\]arethelaggingranks")
_DESYNC_SNAP_HEAD = re.compile(r"^-?#(?P<index>\d+)(?P<op>\w+)ranks:")
_DESYNC_SNAP_ROW = re.compile(r"^-?\[(?P<ranks>[\d,]+)\](?P<state>finished|started|scheduled|joined)(?P<op>[A-Z0-9_]+)")
_DESYNC_BODY = re.compile(r"^-?(?:\[[\d,]+\]|#\d+|Toourbestknowledge|Snapshotofranks|-)")

# --- start-up, settings, the end ------------------------------------------------------
_GROUP_INIT = re.compile(
    r"initialization options:\s*size:\s*(?P<size>\d+),\s*global rank:\s*(?P<rank>\d+)"
    r"(?:,\s*TIMEOUT\(ms\):\s*(?P<ms>\d+))?"
)
# c10's log header before its records ("[E1122 11:18:45.006097316 ProcessGroupNCCL.cpp:1895]"): a record begins
# there, never a wrap's continuation (formats.HEADER).
C10_HEADER = re.compile(r"\[[EWIF]\d{0,4}[ \d:.]*\S*\.(?:cpp|cc|h|hpp|py):\d+\]")
TERMINATING = re.compile(r"Terminating the process after attempting to dump debug info, due to (?P<why>[^.]*)")
_ASYNC = re.compile(r"raised the following async exception:\s*(?P<error>.*)")
_SETTING = re.compile(r"\b(?P<name>(?:TORCH_)?NCCL_[A-Z0-9_]+)(?::\s*| set by environment to )(?P<value>[^\s,\"'()]+)")
_SETTING_LINE = re.compile(r"ProcessGroupNCCL (?:environments|initialization options)|set by environment to")
# The facts of its start-up line: the timeout, and the world's size where the group is the world.
_FACTS = (
    ("TIMEOUT(ms)", "TIMEOUT(ms)", re.compile(r"TIMEOUT\(ms\):\s*(?P<value>\d+)")),
    ("world_size", "initialization options", re.compile(then(r"initialization options:", r"\bsize: (?P<value>\d+)"))),
)

# Words one of which its start-up, settings and end lines hold (the assembler's cheap test before them).
FACT_WORDS = ("initialization options", "Terminating the process", "TIMEOUT(ms)", "set by environment")

# --- flight-recorder dump steps (2.4+) ------------------------------------------------
_DUMP_EVENTS = (
    ("pipe_opened", re.compile(r"Pipe file (?P<detail>\S+) has been opened")),
    ("first_pg", re.compile(r"First PG on this rank to signal dumping")),
    ("store_signal", re.compile(r"Observed flight recorder dump signal from another rank")),
    ("pipe_signal", re.compile(r"Dump signal received through pipe")),
    ("preparing", re.compile(
        r"preparing to dump debug info\.?(?:\s*Include stack trace:\s*(?P<stack>\d))?"
        r"(?:,\s*only active collectives:\s*(?P<active>\d))?")),
    ("broadcast", re.compile(r"Broadcasting signal (?P<detail>\w+) to other ranks via TCPStore")),
    ("writing", re.compile(r"dumping nccl trace to (?P<detail>\S+)")),
    ("written", re.compile(r"Finished writing Flight Recorder debug info to (?P<detail>\S+)")),
    ("dumped", re.compile(r"Flight Recorder trace successfully dumped")),
    ("finished", re.compile(r"Finished flight recorder successfully")),
    ("wait_timeout", re.compile(r"timed out after waiting for \d+\s*ms flight recorder dumps? to finish"
                                r"|[Ff]light recorder dump did not finish within")),
)
DUMP_HINT = re.compile(r"[Dd]ump|[Ff]light [Rr]ecorder")



def cut_marker(sq: str) -> bool:
    """True when the line may end inside a record's opening: in its first words after a "[...]" prefix, right
    after a "[Rank N]" or "[PG ... Rank N]" prefix (the record follows on the next line), or inside such a prefix.

    A terminal wraps at its width wherever that falls; the next line, which carries no header, completes it.
    """
    close = sq.rfind("]")
    if sq.rfind("[") > close:
        return OPEN_PREFIX.fullmatch(sq, sq.rfind("[")) is not None
    tail = sq[close + 1:]
    if not tail:
        return PREFIX_END.search(sq) is not None
    if len(tail) < 3:
        return any(m.startswith(tail) for m in STARTS) and PREFIX_END.search(sq, 0, close + 1) is not None
    # The opening words may follow other text on the line (an exception's name, pytest's "E"): look for where
    # each opening would begin.
    for m in STARTS:
        at = tail.rfind(m[:3])
        if at != -1 and m.startswith(tail[at:]):
            return True
    return False


def waits_for_digits(sq: str) -> bool:
    """A status line whose last counter ends the line: a wrap may have cut its digits ("last completed work: 2|15"),
    so a next line that starts with a digit goes on with it."""
    if not (STATUS_START.search(sq) or DUMP_START.search(sq)):
        return False
    done = COUNTERS_DONE.search(sq)
    return done is not None and done.end() == len(sq)


def incomplete(sq: str) -> bool:
    """True when a squeezed logical line started a record but has not reached its end."""
    if "WorkNCCL(" in sq:
        last = sq.rfind("WorkNCCL(")
        done = WORK_DONE.search(sq, last)
        # A watchdog's timeout always goes on to "ran for N milliseconds before timing out": a wrap right after the
        # closing parenthesis has not reached the end yet.
        if done is not None and done.group() == ")" and "atchdogcaught" in sq[:last]:
            return True
        return done is None
    if STATUS_START.search(sq) or DUMP_START.search(sq):
        return not COUNTERS_DONE.search(sq) or waits_for_digits(sq)
    if MISMATCH_START.search(sq):
        return not MISMATCH.search(sq) and not MISMATCH_ONE.search(sq)
    return cut_marker(sq)


# --- a timeout stated in part (issue 41) ---------------------------------------------
# The watchdog's message cut after its opening words (a post or a terminal that kept only them), and the C++ frames of
# the error the watchdog builds for a timeout: ProcessGroupNCCL.cpp's WorkNCCL::checkTimeout builds it (2.1+: a
# c10::DistBackendError whose backtrace is printed as "frame #N: ..." under "Exception raised from checkTimeout"),
# called from the watchdog's loop, whose name changed across releases: workCleanupLoop (2.1-2.2), watchdogHandler
# (2.3-2.7), Watchdog::runLoop (2.8+), under the thread's entry ncclCommWatchdog (Watchdog::run from 2.8). The loop's
# frames alone are no timeout: the watchdog also rethrows NCCL and CUDA errors (isCompleted, checkAndSetException),
# whose own lines say what failed. Releases before 2.1 built the timeout as a std::runtime_error, with no frames.
# The place c10 names for it is its SourceLocation as c10/util/Exception.cpp prints one, "<function> at <file>:<line>"
# ("Exception raised from checkTimeout at .../ProcessGroupNCCL.cpp:733 (most recent call first):"), and a paste that
# keeps only that place, alone on its line (behind a rank's or a logger's tag) or under the message's opening words,
# states the timeout as much; a sentence that mentions the place (a note, a version's hint) does not.
_CUT_TIMEOUT = re.compile(r"Watchdogcaughtcollectiveoperationtimeout:?$")
_TIMEOUT_FRAME = re.compile(r"WorkNCCL::checkTimeout\(|Exceptionraisedfrom:?checkTimeoutat"
                            r"|(?:^|\]:?|timeout)checkTimeoutat[\w./-]{0,300}ProcessGroupNCCL\.cpp:\d{1,6}$")


def timeout_in_part(who: Who, sq: str, loc: Loc, text: str) -> WorkMention | None:
    """A collective timeout whose op and sequence number the line does not hold: the watchdog's message cut after
    its opening words, or a frame of the timeout's C++ backtrace."""
    if _CUT_TIMEOUT.search(sq):
        evidence = "watchdog_cut"
    elif _TIMEOUT_FRAME.search(sq):
        evidence = "watchdog_frames"
    else:
        return None
    ranks = _MSG_RANK.findall(sq)
    pg, _ = pg_prefix(sq, len(sq))
    return WorkMention(who=who, rank=int(ranks[-1]) if ranks else None, seq=None, op_type=None, numel_in=None,
                       numel_out=None, tensor_shape=None, timeout_ms=None, ran_for_ms=None, evidence=evidence,
                       loc=loc, error=None, clock_s=glog(text), pg=pg)


# Cheap gates on the raw line, so that ordinary lines skip the expensive matching.
MAY_START = re.compile(r"Rank|WorkNCCL|mismatch|Received|atchdog|Timeout at")
RECORDISH = re.compile(
    r"WorkNCCL|NCCL work|work sequence|watchdog|Watchdog|Timeout at collective|Received a|Heartbeat|Detected mismatch"
    r"|checkTimeout"
)
_FRAME = re.compile(r"^#(?P<index>\d+) (?P<function>\S+) from (?P<file>.+):(?P<line>\d+)$")
STACK_HEADER = "Stack trace of the failed collective:"
_NOBODY = Who()


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


def pg_prefix(sq: str, before: int) -> tuple[PG | None, int | None]:
    """The group and rank of the last ``[PG … Rank N]`` prefix of squeezed text before ``before``."""
    # The last "[PG" that opens a prefix is the last prefix: a prefix holds no bracket, so none overlap.
    at = sq.rfind("[PG", 0, before)
    m = _PG_PREFIX.match(sq, at, before) if at != -1 else None
    if m is None:
        found = list(_PG_PREFIX.finditer(sq, 0, before))
        if not found:
            return None, None
        m = found[-1]
    return parse_pg(m["inner"]), int(m["rank"])


def dump_event(who: Who, text: str, loc: Loc) -> DumpEvent | None:
    """A flight-recorder dump step ("First PG on this rank to signal dumping", ...), or None."""
    for kind, pattern in _DUMP_EVENTS:
        m = pattern.search(text)
        if m:
            sq = squeeze(text[: m.start()])
            pg, _ = pg_prefix(sq, len(sq))
            stack = active = detail = None
            if kind == "preparing":
                stack = m["stack"] == "1" if m["stack"] else None
                active = m["active"] == "1" if m["active"] else None
            elif m.groups():
                detail = m["detail"]
            return DumpEvent(who, pg, kind, loc, stack, active, detail)
    return None


def settings(who: Who, text: str, loc: Loc) -> list[Fact]:
    """The settings a rank ran with, as ProcessGroupNCCL lists them at start-up and NCCL echoes them
    (``NCCL_SOCKET_IFNAME set by environment to eth2``)."""
    if not _SETTING_LINE.search(text):
        return []
    return [Fact(who, m["name"], m["value"], loc) for m in _SETTING.finditer(text)]


def _int(s: str | None) -> int | None:
    return int(s) if s not in (None, "") else None


def _field(pattern: re.Pattern[str], text: str) -> int | None:
    m = pattern.search(text)
    return int(m["n"]) if m else None


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


class Records:
    """One input's ProcessGroupNCCL records, read in order: the reports that span lines (a desync report, the stack
    of a failed collective, a one-rank DETAIL message paired with the next) and the async exceptions a later status
    line is joined to live here. The assembler calls each part in its order, with the line's process (``who``)."""

    def __init__(self) -> None:
        self._async_errors: dict[tuple[Who, int | None], str | None] = {}  # latest async exception's error by (who, seq)
        self._mismatch_one: tuple[Who, int, str, Loc] | None = None  # an older one-rank DETAIL message to pair
        self._desync: _Desync | None = None
        self._stack: tuple[Who, Loc, list[Frame], int] | None = None
        self._whole = False  # a whole WorkNCCL printing was read in this input

    def feed(self, text: str, loc: Loc) -> Iterable[Read]:
        """One line alone, by a process not known: its record, dump step or start-up facts."""
        taken, out = self.stack_line(_NOBODY, text, loc, text.strip())
        if taken:
            return out
        if DUMP_HINT.search(text) and (event := dump_event(_NOBODY, text, loc)):
            return (event,)
        if RECORDISH.search(text) and (said := self.record(_NOBODY, squeeze(text), loc, text)) is not None:
            return out + said + self.close_desync()
        init, _ = self.start_up(_NOBODY, text, loc)
        return out + init + settings(_NOBODY, text, loc)

    # ------------------------------------------------------------------ the stack of the failed collective
    def stack_line(self, who: Who, text: str, loc: Loc, body: str) -> tuple[bool, list[Read]]:
        """Whether the line opens or goes on with the stack of the failed collective (``body``: the line without its
        prefixes, for a frame), and the stack the line closes."""
        closed: list[Read] = []
        if self._stack is not None:
            frame = _FRAME.match(body)
            if frame and loc.line == self._stack[3] + 1:
                who0, loc0, frames, _ = self._stack
                frames.append(Frame(frame["function"], frame["file"], int(frame["line"])))
                self._stack = (who0, loc0, frames, loc.line)
                return True, []
            closed += self.close_stack()
        if text.rstrip().endswith(STACK_HEADER):
            self._stack = (who, loc, [], loc.line)
            return True, closed
        return False, closed

    def close_stack(self) -> list[CollectiveStack]:
        stack, self._stack = self._stack, None
        return [CollectiveStack(stack[0], tuple(stack[2]), stack[1])] if stack is not None and stack[2] else []

    @property
    def in_stack(self) -> bool:
        return self._stack is not None

    # ------------------------------------------------------------------ the desync report
    @property
    def in_desync(self) -> bool:
        return self._desync is not None

    def desync_line(self, lineno: int, sq: str) -> bool:
        """Whether the line goes on with the open desync report (its next line, one of the report's shapes)."""
        d = self._desync
        if d is None or lineno != d.last_line + 1 or not _DESYNC_BODY.match(sq):
            return False
        d.last_line = lineno
        self._desync_fields(sq)
        return True

    def close_desync(self) -> list[DesyncReport]:
        d, self._desync = self._desync, None
        if d is None:
            return []
        return [DesyncReport(d.who, d.reporting_rank, d.collective, d.index, tuple(d.lagging), tuple(d.snapshot),
                             d.loc)]

    def _start_desync(self, who: Who, loc: Loc, sq: str) -> list[Read]:
        closed: list[Read] = [*self.close_desync()]
        self._desync = _Desync(who=who, loc=loc, last_line=loc.line)
        self._desync_fields(sq)
        return closed

    def _desync_fields(self, sq: str) -> None:
        d = self._desync
        assert d is not None
        if m := _DESYNC_TIMEOUT.search(sq):
            d.reporting_rank, d.collective, d.index = int(m["rank"]), m["op"], int(m["index"])
        for m in _DESYNC_LAG.finditer(sq):
            d.lagging.append(Lagging(_ranks(m["ranks"]), finished=int(m["done"]), did_not_join=int(m["next"])))
        for m in _DESYNC_UNFINISHED.finditer(sq):
            d.lagging.append(Lagging(_ranks(m["ranks"]), did_not_finish=int(m["index"])))
        for m in _DESYNC_NEVER.finditer(sq):
            d.lagging.append(Lagging(_ranks(m["ranks"]), never_joined=True))
        if m := _DESYNC_SNAP_HEAD.match(sq):
            d.snap_head = (int(m["index"]), m["op"])
        elif d.snap_head and (m := _DESYNC_SNAP_ROW.match(sq)):
            d.snapshot.append((d.snap_head[0], m["state"], m["op"], _ranks(m["ranks"])))

    # ------------------------------------------------------------------ records
    def record(self, who: Who, sq: str, loc: Loc, text: str) -> list[Read] | None:
        """What a record (squeezed: ``sq``) says, or None where the line is no record."""
        if "WorkNCCL(" in sq:
            said: list[Read] = [self._work(who, sq, loc, text)]
            self._whole = True
            return said + self._start_desync(who, loc, sq) if "Timeoutatcollective" in sq else said
        if (partial := timeout_in_part(who, sq, loc, text)) is not None:
            # the frames under a whole message restate its work (printed first, with another prefix or none): only an
            # input's lone ones count
            return [] if self._whole else [partial]
        if STATUS_START.search(sq):
            return self._status(who, sq, loc)
        if DUMP_START.search(sq):
            return self._dump(who, sq, loc)
        if "Timeoutatcollective:" in sq:
            return self._start_desync(who, loc, sq)
        if "Heartbeat" in sq or "gotstuck" in sq:
            return self._heartbeat(who, sq, loc)
        if "astenqueued" in sq and (m := _COUNTERS.search(sq)):
            return self._counters(who, sq, m, loc)
        if MISMATCH_START.search(sq):
            if m := MISMATCH.search(sq):
                return [Mismatch(who, int(m["rank_a"]), m["a"], int(m["rank_b"]), m["b"], loc)]
            if m := MISMATCH_ONE.search(sq):
                return self._one_rank_mismatch(who, int(m["rank"]), m["a"], loc)
            if m := MISMATCH_CUT.search(sq):
                return [Mismatch(who, int(m["rank"]), m["a"], None, "", loc)]
            return []
        return None

    def _one_rank_mismatch(self, who: Who, rank: int, fingerprint: str, loc: Loc) -> list[Read]:
        """Pair an older one-rank DETAIL message with the next one of another rank and another fingerprint."""
        first = self._mismatch_one
        if first is not None and first[1] != rank and first[2] != fingerprint:
            self._mismatch_one = None
            return [Mismatch(first[0], first[1], first[2], rank, fingerprint, first[3])]
        if first is None or first[1] == rank:
            self._mismatch_one = (who, rank, fingerprint, loc)
        return []

    def close_mismatch(self) -> list[Mismatch]:
        """A one-rank DETAIL message no other rank's followed in this input: a difference found, the partner unseen."""
        first, self._mismatch_one = self._mismatch_one, None
        return [] if first is None else [Mismatch(first[0], first[1], first[2], None, "", first[3])]

    def _work(self, who: Who, sq: str, loc: Loc, text: str) -> WorkMention:
        start = sq.find("WorkNCCL(")
        nxt = sq.find("WorkNCCL(", start + 1)
        body = sq[start: nxt if nxt != -1 else len(sq)]
        head = sq[:start]
        error = None
        if "raisedthefollowingasyncexception" in body:
            evidence = "async_exception"
            m = _ASYNC.search(text)
            error = m["error"].strip()[:500] if m else None
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
        op = _F_OP.search(body)
        pg, _ = pg_prefix(sq, start)
        work = WorkMention(
            who=who,
            rank=int(ranks[-1]) if ranks else None,
            seq=_field(_F_SEQ, body),
            op_type=op["op"] if op else None,
            numel_in=_field(_F_IN, body),
            numel_out=_field(_F_OUT, body),
            tensor_shape=shape["shape"] if shape else None,
            timeout_ms=_field(_F_TIMEOUT, body),
            ran_for_ms=_field(_F_RANFOR, body),
            evidence=evidence,
            loc=loc,
            error=error,
            clock_s=glog(text),
            pg=pg,
            gone=gone(error) if error else None,
        )
        if evidence == "async_exception":
            self._async_errors[(who, work.seq)] = error
        return work

    def _status(self, who: Who, sq: str, loc: Loc) -> list[Read]:
        for evidence, pattern in _STATUS:
            if m := pattern.search(sq):
                pg, rank = pg_prefix(sq, m.start())
                seq = int(m["seq"])
                error = self._async_errors.get((who, seq))
                return [StatusMention(who, pg or PG(), rank, seq, int(m["enq"]), int(m["done"]), evidence, loc, error)]
        return []

    def _dump(self, who: Who, sq: str, loc: Loc) -> list[Read]:
        m = _DUMP.search(sq)
        if not m:
            return []
        pg, _ = pg_prefix(sq, m.start())
        return [DumpSignal(who, pg, _int(m["rank"]), int(m["enq"]), int(m["done"]), loc)]

    def _counters(self, who: Who, sq: str, m: re.Match[str], loc: Loc) -> list[Read]:
        pg, rank = pg_prefix(sq, m.start())
        if rank is None and (plain := list(_PREFIX_RANK.finditer(sq, 0, m.start()))):
            rank = int(plain[-1]["rank"])  # the prefix before 2.3: "[Rank N] "
        return [DumpSignal(who, pg, None, int(m["enq"]), int(m["done"]), loc, alone=True, rank=rank)]

    def _heartbeat(self, who: Who, sq: str, loc: Loc) -> list[Read]:
        stuck = _STUCK.search(sq)
        if not (stuck or _HEARTBEAT.search(sq)):
            return []
        pg, _ = pg_prefix(sq, len(sq))
        kind = "watchdog_stuck" if stuck else "heartbeat_timeout"
        return [Heartbeat(who, pg, kind, int(stuck["s"]) if stuck else None, loc)]

    # ------------------------------------------------------------------ start-up and the end
    def start_up(self, who: Who, text: str, loc: Loc) -> tuple[list[Read], bool]:
        """A group's start-up line (its size, the rank, the timeout) with its facts, or the line the process dies
        with; and whether the line is wholly that end."""
        out: list[Read] = []
        subgroup = False
        if m := _GROUP_INIT.search(text):
            sq = squeeze(text)
            pg, grank = pg_prefix(sq, len(sq))
            out.append(GroupInit(who, pg or PG(), grank, int(m["size"]), int(m["rank"]), _int(m["ms"]), loc))
            subgroup = pg is not None and pg != PG() and not is_default_group(pg)
        if "Terminating" in text and (m := TERMINATING.search(text)):
            return [*out, EndLine(who, "terminating", m["why"].strip(), loc)], True
        for key, word, pattern in _FACTS:
            # A sub-group's creation line gives its own size, not the world's (the group creation keeps it).
            if word in text and not (subgroup and key == "world_size") and (m := pattern.search(text)):
                out.append(Fact(who, key, m["value"].strip(), loc))
        return out, False


_HEAD = "[rank0]:[I1125 09:36:06.123456789 ProcessGroupNCCL.cpp:936] [PG ID 0 PG GUID 0 Rank 0] "
_INIT_OPTIONS = ("[I1124 02:31:41.866301491 ProcessGroupNCCL.cpp:988] [PG ID 0 PG GUID 0 Rank 0] "
                 "ProcessGroupNCCL initialization options: size: 2, global rank: 0, TIMEOUT(ms): 20000, "
                 "USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: -2, PG Name: 0")
FORMAT = Format(
    name="PyTorch ProcessGroupNCCL",
    words=("Terminating the process", "environment"),
    head_words=("TIMEOUT(ms)", "set by environment", "environments", "initialization options",
                "Terminating the process", "Dump", "dump", "Flight Recorder", "Flight recorder", "flight Recorder",
                "flight recorder"),
    make=Records,
    headers=(C10_HEADER,),
    patterns=(TERMINATING, _GROUP_INIT, _SETTING_LINE, *(p for _, _, p in _FACTS)),
    # a record's words (a wrap may cut its line's other words off); the desync report's and a stack's "#315"; the
    # mismatch's fingerprint; the heartbeat monitor; the start-up line
    triggers=(Trigger("WorkNCCL", "W"), Trigger("Watchdog", "W"), Trigger("watchdog", "w"), Trigger("work", "w"),
              Trigger(r"#\d", "#", pattern=True), Trigger("SequenceNumber=", "q"), Trigger("Heartbeat", "H"),
              Trigger("initialization options", "z")),
    wanted=("WorkNCCL", "[Ww]atchdog", "NCCL work", "work sequence", "Timeout at collective", "best knowledge", r"#\d",
            "Heartbeat", "Received a", "Detected mismatch", "initialization options", "Terminating the process"),
    logical=True,
    behind=(
        # a record's, a desync report's and a stack's lines (squeezed): read only in a record a line MAY_START or
        # RECORDISH opened (evidence/parse.py)
        Behind((MAY_START, RECORDISH), (_F_SEQ, _F_OP, _F_SHAPE, _F_IN, _F_OUT, _F_TIMEOUT, _F_RANFOR, _MSG_RANK,
                                        _PG_PREFIX, *(p for _, p in _STATUS), _DUMP, _COUNTERS, _PREFIX_RANK,
                                        MISMATCH, MISMATCH_ONE, MISMATCH_CUT, STATUS_START, DUMP_START, COUNTERS_DONE,
                                        MISMATCH_START, WORK_DONE, _HEARTBEAT, _STUCK, _DESYNC_TIMEOUT, _DESYNC_LAG,
                                        _DESYNC_UNFINISHED, _DESYNC_NEVER, _DESYNC_SNAP_HEAD, _DESYNC_SNAP_ROW,
                                        _DESYNC_BODY, _ASYNC, _CUT_TIMEOUT, _TIMEOUT_FRAME, _FRAME)),
        # a process group's name inside its prefix
        Behind((_PG_PREFIX,), (_PG_INNER,)),
        # a flight recorder's dump steps
        Behind((DUMP_HINT,), (*(p for _, p in _DUMP_EVENTS),)),
        # the settings a start-up line lists
        Behind((_SETTING_LINE,), (_SETTING,)),
    ),
    # tested on any line the assembler reads: whether it may open a record, looks like one, or speaks of a dump
    shapes=(MAY_START, RECORDISH, DUMP_HINT),
    samples=(
        Sample("[rank1]:[E1122 11:18:45.006097316 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
               "Terminating the process after attempting to dump debug info, due to collective timeout or exception.",
               "ProcessGroupNCCL.cpp (2.5): the watchdog's last line before it aborts the process",
               (EndLine(_NOBODY, "terminating", "collective timeout or exception", AT),)),
        Sample(_HEAD + "ProcessGroupNCCL environments: NCCL version: 2.21.5, TORCH_NCCL_ASYNC_ERROR_HANDLING: 3, "
                       "TORCH_NCCL_DUMP_ON_TIMEOUT: 1", "ProcessGroupNCCL.cpp (2.5): the environment it read, at start",
               (Fact(_NOBODY, "TORCH_NCCL_ASYNC_ERROR_HANDLING", "3", AT),
                Fact(_NOBODY, "TORCH_NCCL_DUMP_ON_TIMEOUT", "1", AT))),
        Sample(_INIT_OPTIONS,
               "tests/data/failures/order_cycle_info/torchrun/0ef4676f-9515-4a02-9ab7-2b91a4ce3d84_b0nuz3r4/"
               "attempt_0/0/stderr.log:4",
               (GroupInit(_NOBODY, PG(id="0", guid="0"), 0, 2, 0, 20000, AT),
                Fact(_NOBODY, "TIMEOUT(ms)", "20000", AT), Fact(_NOBODY, "world_size", "2", AT))),
        Sample("TIMEOUT(ms): 1800000",
               "tests/data/corpus/08-nccl-init-options-old-format-negative.log:6",
               (Fact(_NOBODY, "TIMEOUT(ms)", "1800000", AT),)),
    ),
)
