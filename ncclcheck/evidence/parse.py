"""The assembler: the lines of one input, fed to every registered source's reader, joined to ranks.

What a line says is read by the sources of lines (evidence/formats/, one module each, listed once in ``FORMATS``);
this module knows no line shape of its own beyond the rank tags that name a line's process. It is a small state
machine fed physical lines in order (with their line numbers; gaps are allowed, see ``reader``): each line is
repaired (``repair``: CR, progress bars, ANSI colour codes), the launchers' and frameworks' readers read it, hard
wraps of a record are joined until the record's terminator is seen (``repair``'s rules), and the logical line is
handed to the sources read in order (ProcessGroupNCCL's records, torchrun's failure table, nccl2, NCCL, errors,
busy phases, the world's size, host records). It then joins what they say to the input's processes: the rank a
prefix, a launcher's tag, a node's label or a PID names, an error counted once per rank, the line under NCCL's
"Last error:", an exception its process outlived.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import replace

from ncclcheck import signals
from ncclcheck.evidence import formats
from ncclcheck.evidence.formats import (
    HEADER,
    busy,
    colltrace,
    errors,
    faulthandler,
    loglevel,
    mpifatal,
    nccl,
    nccl2,
    pgnccl,
    progress,
    pyspy,
    raisesite,
    torchrun,
    unread,
    world,
)
from ncclcheck.evidence.formats.collectors import LABEL, MARGIN
from ncclcheck.evidence.formats.elastic import OPENS, Table
from ncclcheck.evidence.formats.host import Records as HostRecords
from ncclcheck.evidence.formats.pgnccl import incomplete, waits_for_digits
from ncclcheck.evidence.formats.storeclient import read as store_words
from ncclcheck.evidence.formats.torchrun import LOCAL_TAG
from ncclcheck.evidence.repair import MAX_JOIN, OPEN_TAIL, clean, last_bar, open_header, squeeze, unprefixed
from ncclcheck.evidence.stamps import glog
from ncclcheck.evidence.tables import FactTable, InitTable, StatusTable, WorkTable, table
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
    LiveStack,
    LiveThread,
    Loc,
    Mismatch,
    PidRank,
    RankError,
    Read,
    SpiedProcess,
    StatusMention,
    SystemEvent,
    Who,
    WorkerDied,
    WorkerEnd,
    WorkerStarted,
    WorkMention,
)
from ncclcheck.evidence.whose import PREFIX, Processes, went_on
from ncclcheck.evidence.wordsets import WordSets

# Words one of which a line with a set-up fact, a setting, an end or an NCCL warning holds (each source's own list):
# plain substring tests, cheaper than one alternation.
_FACT_WORDS = (*pgnccl.FACT_WORDS, *nccl.FACT_WORDS, *world.FACT_WORDS)
# Every word list the assembler tests a line for, found in one pass (evidence/wordsets.py): the launchers' and
# frameworks' readers' (``formats.FED_WORDS``, bits 0 to _FED - 1), then its own sources' cheap tests.
_FED = len(formats.FED_WORDS)
# The clues a process prints about itself (formats/cxx.py, glibc.py, mpifatal.py, verbsqp.py, cmdline.py,
# sanitizer.py, oneccl.py, statedict.py, ucs.py): the line's rank.
_OWN_CLUES = frozenset({"what", "glibc", "argparse", "mpi", "cuda_ipc", "rdma_qp", "abort", "sanitizer", "ccl",
                        "state_dict", "ucs", "ucs_warn"})
_FED_ANY = (1 << _FED) - 1
_BUSY, _SIGNAL, _CLUE, _FACT, _NCCL_ERROR, _ERROR, _LOGGED, _UNREAD = (1 << (_FED + i) for i in range(8))
_WORDS = WordSets((*formats.FED_WORDS, busy.WORDS, errors.SIGNAL_WORDS, errors.CLUE_WORDS, _FACT_WORDS,
                   nccl.ERROR_WORDS, errors.ERROR_WORDS, loglevel.WORDS, unread.WORDS))
# A traced collective's line (formats/colltrace.py) is wholly NCCL's: read by its own source alone, not by the rest of
# the assembler (a job traced with NCCL_DEBUG_SUBSYS=COLL prints a line a call, millions), whatever other source's
# gate words its fields happen to hold ("recv" in recvbuff); a line holding a word of an error, a signal, a clue, a
# logger's record or busy work goes the whole way.
_TRACE = formats.fed_bit(colltrace.FORMAT)
_RAISED = formats.fed_bit(raisesite.FORMAT)  # tracebacks' frames: one the input ends inside is its process's error
_MPI = formats.fed_bit(mpifatal.FORMAT)  # MPI's reports: a signal banner the input ends before its Signal line
_NOT_TRACE = _BUSY | _SIGNAL | _CLUE | _NCCL_ERROR | _ERROR | _LOGGED
# py-spy's dumps (formats/pyspy.py): a frame's line holds no word of its source, so an open dump's reader is fed every
# line until one that is no part of a dump closes it.
_SPY = formats.fed_bit(pyspy.FORMAT)
_FAULT = formats.fed_bit(faulthandler.FORMAT)  # faulthandler's dumps (formats/faulthandler.py): read the same way
# The calls kept of each process on each communicator: the last ones. Where processes part (a different call at one
# position, calls in opposite orders), a collective hangs, and the trace stops within NCCL's queue of that call; each
# call keeps its index among all the input printed, so processes are still lined up by it (job/colltrace.py).
TRACE_KEEP = 1024
# What precedes a line of torchrun's failure table that a collector or a launcher labelled (a CRI log's stamp, pdsh's
# node, Ray's actor, a launcher's tag), if anything, up to where one of its lines starts: one test for a line that
# may be the table's, as it stands or behind its margin (formats/elastic.py reads it behind it).
_TABLE_MARGIN = re.compile(rf"^(?:{MARGIN}|(?:{formats.PREFIX_TEXT}) ?)*(?={OPENS})")
MAX_MESSAGE = 2000  # an OOM message lists every process on the GPU; its own numbers come last
MAX_FACT = 300
# What the assembler keeps of what the sources read, by kind (each is one field of the FileScan).
_KEPT = ((WorkMention, "_works"), (StatusMention, "_statuses"), (DumpSignal, "_dumps"), (Heartbeat, "_heartbeats"),
         (DesyncReport, "_desync"), (Mismatch, "_mismatches"), (CollectiveStack, "_stacks"), (GroupInit, "_inits"),
         (EndLine, "_endings"), (DumpEvent, "_dump_events"), (ElasticFailure, "_elastic"), (SystemEvent, "_system"))


class LogParser:
    """Incremental reader of one input; feed lines, then call :meth:`finish`."""

    def __init__(self, file: str, path_rank: int | None) -> None:
        self.file = file
        self.path_rank = path_rank
        self._works: list[WorkMention] = []
        self._procs = Processes(path_rank)  # whose each line is
        self._node_agents: list[tuple[str, int]] = []  # (label, index in _elastic) of a node's agent lines
        # The PID the launcher names on the current line; each PID's last error; errors their process outlived
        self._line_pid: int | None = None
        self._pid_error: dict[int, int] = {}
        self._outlived: set[int] = set()
        # Each process's error records not yet followed by a record of its below the error level (formats/loglevel.py)
        self._logged: dict[Who, dict[int, Clue]] = {}
        self._logged_n = 0
        # The last lines that state an error in no known source's form (formats/unread.py): kept at the end where
        # they stand among the input's last lines and nothing else read them
        self._unread: deque[tuple[Who, str, Loc]] = deque(maxlen=unread.TAIL)
        self._statuses: list[StatusMention] = []
        self._dumps: list[DumpSignal] = []
        self._heartbeats: list[Heartbeat] = []
        self._desync: list[DesyncReport] = []
        self._mismatches: list[Mismatch] = []
        self._errors: list[RankError] = []
        self._elastic: list[ElasticFailure] = []
        self._facts: dict[tuple[str, str, int | None], Fact] = {}
        self._ranks: set[int] = set()
        self._problems: list[InputProblem] = []
        self._replaced = False
        # pending logical line: (first line number, last line number, who, text parts)
        self._pend: tuple[int, int, Who, list[str]] | None = None
        self._carry: tuple[int, Who] | None = None  # the last physical line with a rank prefix, and whose it was
        self._stacks: list[CollectiveStack] = []
        self._inits: list[GroupInit] = []
        self._endings: list[EndLine] = []
        self._dump_events: list[DumpEvent] = []
        self._nccl_errors: set[tuple[int | None, str]] = set()
        self._clues: list[Clue] = []
        self._clue_keys: set[tuple[int | None, str, str]] = set()
        self._nccl_ranks: dict[tuple[str, int], set[int]] = {}  # NCCL's process (host, PID) -> the ranks it states
        self._unranked_warns: dict[int, tuple[str, int]] = {}  # line -> the process of a WARN naming no rank
        self._last_errors = nccl.LastErrors(HEADER)  # "Last error:" lines whose text is on their process's next line
        self._trace: dict[tuple[int | None, str, str], deque[tuple[int, str, Who, int]]] = {}  # each process's and
        # communicator's last trace lines: (line number, text, whose, index among their calls)
        self._system: list[SystemEvent] = []
        # The sources read here on logical lines (formats.FORMATS' ``logical`` ones), each one input's reader
        self._records = pgnccl.Records()
        self._table = Table(_TABLE_MARGIN)
        self._host = HostRecords()
        self._readers = formats.readers()  # the launchers' and frameworks' readers, with the words that gate each
        trace = self._readers[_TRACE.bit_length() - 1][1]
        assert isinstance(trace, colltrace.Lines)  # the collective trace's reader: its lines' cheap path uses it
        self._trace_reader = trace
        spy = self._readers[_SPY.bit_length() - 1][1]
        assert isinstance(spy, pyspy.Dumps)
        self._spy = spy
        fault = self._readers[_FAULT.bit_length() - 1][1]
        assert isinstance(fault, faulthandler.Dumps)
        self._fault = fault
        # each py-spy or faulthandler dump (by its tool and index), as read so far, and whose line opened it
        self._spied: dict[tuple[str, int], tuple[Who, SpiedProcess]] = {}
        mpi = self._readers[_MPI.bit_length() - 1][1]
        assert isinstance(mpi, mpifatal.Lines)
        self._mpi = mpi  # MPI's reports: Open MPI's signal banners cut off before their Signal line (_cut_banners)
        frames = self._readers[_RAISED.bit_length() - 1][1]
        assert isinstance(frames, raisesite.Frames)
        self._frames = frames
        self._held: list[Read] = []  # what the sources read from the current line, to take with its errors and facts
        self._child: AgentExit | None = None  # the last CalledProcessError read as a worker's exit
        self._held_words: tuple[str, int] = ("", 0)  # the last text tested for _WORDS, and what it holds

    # ------------------------------------------------------------------ feeding
    def feed(self, lineno: int, raw: bytes) -> None:
        """Take one physical line (without its newline)."""
        self._last_errors.line(lineno)
        bar = last_bar(raw) if b"\r" in raw and (b"%|" in raw or b"it/s" in raw or b"s/it" in raw) else None
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
        holds = self._holds(text)
        if holds & _TRACE and not holds & _NOT_TRACE and bar is None and self._traced(lineno, text):
            return
        said: list[Read] = []
        fed = holds & _FED_ANY  # the readers whose words the line holds, lowest bit first (not a test per reader)
        if self._spy.open:
            fed |= _SPY
        if self._fault.open:
            fed |= _FAULT
        while fed:
            said += self._readers[(fed & -fed).bit_length() - 1][1].feed(text, Loc(self.file, lineno))
            fed &= fed - 1
        if self._spy.inside or self._fault.inside:  # a dump's own line (its frames, --locals' values): no other's
            self._spied_line(text, said)
            return
        for e in said:
            if isinstance(e, PidRank):  # a PID paired with its rank names this very line's process
                self._procs.pid_rank.setdefault(e.pid, e.rank)
            elif isinstance(e, Fact) and e.key == "nccl_via" and (proc := nccl.process_of(text)) is not None:
                # NCCL's connection line names its process's rank first (formats/ncclsetup.py): the join of that
                # process's lines that name none (``finish``)
                self._nccl_ranks.setdefault(proc, set()).add(int(e.value.split(" ", 1)[0]))
            elif isinstance(e, WorkerStarted):
                self._spawned(e)
            elif isinstance(e, WorkerDied):
                self._died(e, text)
        self._line_pid = formats.pid_tag(text) if text.startswith("(") else None
        if self._line_pid in self._pid_error and went_on(text):
            self._outlived.add(self._pid_error.pop(self._line_pid))
        who = self._procs.who(text)
        if who.global_rank is None and self._carry is not None and self._carry[0] == lineno - 1 and text \
                and not raw.startswith(b"\r") \
                and not HEADER.search(text) and not LOCAL_TAG.match(text) \
                and not (text.startswith("(") and formats.pid_tag(text) is not None):
            # A line with no prefix and no header of its own, right under a prefixed line: the rest of that line
            # (a terminal wraps it anywhere, also inside the prefix's record) or what the same process printed next.
            # A line that starts with a carriage return is neither: a process redrawing its progress bar.
            who = self._carry[1]
        self._carry = (lineno, who) if who.global_rank is not None and text else None
        if who in self._logged and loglevel.went_on(text):
            del self._logged[who]  # the process logged on after its error records: it outlived them
        if self._unread:  # error lines of no known form (formats/unread.py): past the input's tail, or gone on from
            if lineno - self._unread[-1][2].line > unread.TAIL:
                self._unread.clear()
            elif loglevel.went_on(text):
                self._unread = deque((c for c in self._unread if c[0] != who), maxlen=unread.TAIL)
        # A rank named only through its PID (Ray's prefix) is seen where a line of it says something (a record, an
        # error): its ordinary lines reach the parser or not by the reader's choice, and what was seen must not.
        if who.global_rank is not None and not (self._line_pid is not None and self._line_pid in self._procs.pid_rank):
            self._ranks.add(who.global_rank)
        if bar is not None:
            bar_who = who
            if (glued := busy.GLUED_LINE.search(bar, 1)) is not None:
                bar = bar[:glued.start()]  # another process's line glued after the bar without its newline
                bar_who = self._procs.who(bar)
            self._busy(bar_who, bar, Loc(self.file, lineno))
            for e in progress.Lines().feed(bar, Loc(self.file, lineno)):  # the bar's last count (formats/progress.py)
                if isinstance(e, Fact):
                    self._fact(bar_who, e.key, e.value, e.loc)
        # The rest is taken where the line is read for errors and facts (not in a record, a table or a stack).
        self._held = [e for e in said if not isinstance(e, (PidRank, WorkerStarted, WorkerDied))]
        sq = squeeze(text) if pgnccl.MAY_START.search(text) or OPEN_TAIL.search(text, max(0, len(text) - 100)) \
            else None
        if sq is not None and (incomplete(sq) or open_header(sq)):
            self._pend = (lineno, lineno, who, [text])
            return
        self._logical(lineno, who, text, sq=sq)

    def _spied_line(self, text: str, said: list[Read]) -> None:
        """A line of a py-spy or faulthandler dump: the dump as read so far, with whose line opened it (a launcher's
        tag on it)."""
        for e in said:
            if isinstance(e, SpiedProcess):
                key = (e.tool, e.index)
                self._spied[key] = (self._spied[key][0] if key in self._spied else self._procs.who(text), e)

    def _traced(self, lineno: int, text: str) -> bool:
        """A traced collective's line, counted by its source and kept among its communicator's last lines (read into
        calls at the end); False for any other line, or where the assembler is inside a block of lines (a record, a
        stack, a table)."""
        records = self._records
        if "opCount " not in text or text.startswith("(") or records.in_stack or records.in_desync \
                or self._last_errors.waiting or self._table.may_hold(text):
            return False
        counted = self._trace_reader.counted(text)
        if counted is None:
            return False
        who = self._procs.who(text)
        self._carry = (lineno, who) if who.global_rank is not None else None
        if who.global_rank is not None:
            self._ranks.add(who.global_rank)
        proc, comm, index = counted
        if (kept := self._trace.get((who.rank, proc, comm))) is None:
            kept = self._trace[(who.rank, proc, comm)] = deque(maxlen=TRACE_KEEP)
        kept.append((lineno, text, who, index))
        return True

    def _holds(self, text: str) -> int:
        """Which of ``_WORDS``' lists the text holds a word of: found once a line (the physical line is most often
        its logical line too)."""
        if text is not self._held_words[0]:
            self._held_words = (text, _WORDS.mask(text))
        return self._held_words[1]

    def finish(self, lines: int, bytes_read: int) -> FileScan:
        """Flush pending state and return what was found."""
        if self._pend is not None:
            first, _, who, parts = self._pend
            self._pend = None
            self._logical(first, who, "".join(parts), joined=True)
        self._take(self._records.close_desync())
        self._take(self._table.close())
        self._take(self._records.close_stack())
        self._take(self._records.close_mismatch())
        self._cut_tracebacks(lines)
        self._cut_banners()
        self._keep_unread(lines)
        self._join_warns()
        for kept in self._trace.values():  # each communicator's last calls (job/colltrace.py orders them by line)
            for lineno, text, who, index in kept:
                call = colltrace.call_of(text, index)
                assert call is not None  # a line kept is a trace line
                value = call.value()
                self._facts[("nccl_coll", value, who.rank)] = Fact(who, "nccl_coll", value, Loc(self.file, lineno))
        if self._replaced:
            self._problems.append(
                InputProblem(self.file, "contains bytes that are not UTF-8 (shown as U+FFFD)", fatal=False)
            )
        for label, i in self._node_agents:  # a node's local rank, placed by its node's first rank, or unplaced
            self._elastic[i] = replace(self._elastic[i], rank=self._procs.node_rank(label, self._elastic[i].local_rank))
        if any(not e.agent_line for e in self._elastic):  # the failure table names global ranks: it speaks for them
            self._elastic = [e for e in self._elastic if not e.agent_line]
        node, offset = self._local_ranks()
        live, unranked = self._live(node)
        unplaced = tuple(sorted({w.local_rank for w in node.values() if w.local_rank is not None}))
        ranks = set(self._ranks) | {w.global_rank for w in node.values() if w.global_rank is not None}
        ranks |= self._procs.placed() | {st.global_rank for st in live}
        if self.path_rank is not None:
            ranks.add(self.path_rank)
        elif bytes_read and not ranks and not unplaced and not self._problems and not any(
                (self._works, self._statuses, self._dumps, self._heartbeats, self._desync, self._mismatches,
                 self._errors, self._elastic, self._clues, self._facts, self._stacks, self._inits, self._endings,
                 self._dump_events, self._system, live, unranked)):
            # Said, so that a file nothing could be read from does not pass for a quiet rank.
            self._problems.append(InputProblem(self.file, "read, but holds nothing ncclcheck reads (no rank, record, "
                                                          "error, exit, setting or host record)", fatal=False))
        return FileScan(
            file=self.file,
            path_rank=self.path_rank,
            lines=lines,
            bytes_read=bytes_read,
            ranks_seen=tuple(sorted(ranks)),
            works=table(WorkTable, self._works, self.file),
            statuses=table(StatusTable, self._statuses, self.file),
            dump_signals=tuple(self._dumps),
            heartbeats=tuple(self._heartbeats),
            desync=tuple(self._desync),
            mismatches=tuple(self._mismatches),
            errors=tuple(e for i, e in enumerate(self._errors) if i not in self._outlived),
            elastic=tuple(self._elastic),
            clues=tuple(self._clues) + self._open_records(),
            facts=table(FactTable, tuple(self._facts.values()), self.file),
            stacks=tuple(self._stacks),
            group_inits=table(InitTable, self._inits, self.file),
            endings=tuple(self._endings),
            dump_events=tuple(self._dump_events),
            system=tuple(self._system),
            problems=tuple(self._problems),
            live=live,
            unranked=unranked,
            local_ranks=unplaced,
            # an agent's console: a rank's own file is none, whatever its chatter carries (its tagged lines may all
            # be lines no reading keeps, so the file's fast and full readings agree)
            tagged=bool(self._procs.tags) and self._procs.path_rank is None,
        )

    def _maybe_unread(self, who: Who, text: str, loc: Loc) -> None:
        """Hold a line that states an error in words (formats/unread.py), its prefixes and a collector's label left
        off, unless a logger wrote it (formats/loglevel.py reads its records and when their process went on)."""
        line = PREFIX.sub("", text).strip()
        if label := LABEL.match(line):
            line = line[label.end():]
        if unread.says_error(line) and loglevel.record(line) is None:
            self._unread.append((who, line, loc))

    def _keep_unread(self, lines: int) -> None:
        """The error lines no source read, among the input's last lines, as clues of their processes
        (formats/unread.py), in an input where no error, clue or launcher's report of a known form was read: a line a
        source read says more through it, an error followed by more of the input than that was gone on from, and
        beside a failure of a known form the other error lines are that failure's (its table, its frames)."""
        if not self._unread or self._errors or self._clues or self._elastic or self._works or self._desync \
                or self._mismatches or self._dumps or self._spied or self._open_records():
            self._unread.clear()  # a failure of a known form is read here: its other lines are its own, not unread
            return
        # what else a source read (the failures' lists are empty here)
        read = {x.loc for kept in (self._endings, self._statuses, self._heartbeats, self._stacks, self._inits,
                                   self._dump_events, self._system, self._facts.values()) for x in kept}
        for who, text, loc in self._unread:
            if loc.line > lines - unread.TAIL and loc not in read:
                self._clues.append(Clue(who, "unread", text[:300], loc))
        self._unread.clear()

    def _live(self, node: dict[Who, Who]) -> tuple[tuple[LiveStack, ...], tuple[SpiedProcess, ...]]:
        """Each py-spy dump of a process of the job (not a child's: a data loader's worker) as its rank's live stack:
        the rank its opening line's tag names (torchrun's local tag placed by ``node``), else the one this input's
        launcher lines pair with its PID, else the input's own rank (its path), else the rank the file's name gives
        where it holds one process's dump. The dumps no rank is named for, apart: their stacks are no rank's
        (job/spied.py)."""
        mains = [(who, e) for who, e in self._spied.values() if e.parent is None and e.threads]
        named = pyspy.file_rank(self.file) if len(mains) == 1 else None
        out: dict[int, LiveStack] = {}
        unranked: list[SpiedProcess] = []
        for who, e in mains:
            rank = node.get(who, who).global_rank
            if rank is None and e.pid is not None:
                rank = self._procs.pid_rank.get(e.pid)
            rank = next((r for r in (rank, self.path_rank, named) if r is not None), None)
            threads = pyspy.main_first(e.threads, e.pid)
            if rank is None:
                unranked.append(replace(e, threads=threads))
                continue
            children = tuple(LiveThread(str(c.pid), pyspy.main_first(c.threads, c.pid)[0].frames)
                             for _, c in self._spied.values() if e.pid is not None and c.parent == e.pid and c.threads)
            out.setdefault(rank, LiveStack(rank, e.pid or 0, None, threads, pyspy.collective_of(threads[0].frames),
                                           None, e.loc, children=children))
        return tuple(out.values()), tuple(unranked)
    def _cut_tracebacks(self, lines: int) -> None:
        """A traceback the input ends inside (formats/raisesite.py) is its process's error, its exception's line cut
        off, where a prefix or the input's name says whose it is (with its exception unknown, a process no line names
        adds nothing to a console that stops: a Ctrl-C of a hung job prints one too), and no error of that process
        follows its last frame (an exception raisesite does not close, as KeyboardInterrupt)."""
        for text, said, raised in self._frames.cut(lines):
            who = self._procs.who(text)
            if who.rank is None and who.local_rank is None or any(
                    e.who == who and e.loc.line > raised.loc.line for e in self._errors):
                continue
            self._error(who, ErrorKind.EXCEPTION, said, raised.loc)
            self._fact(who, raised.key, raised.value, raised.loc)

    def _cut_banners(self) -> None:
        """Open MPI's signal banner whose ``Signal:`` line the input does not hold (formats/mpifatal.py): the
        process died of a fatal signal the input does not name, its error the banner's line (prefixes left off)."""
        for text, loc in self._mpi.unanswered():
            self._error(self._procs.who(text), ErrorKind.KILLED, PREFIX.sub("", text).strip(), loc)

    def _local_ranks(self) -> tuple[dict[Who, Who], int]:
        """torchrun's local tags placed where this input's lines state their global ranks (evidence/localranks.py):
        a launcher's statement, else the watchdog's ``[Rank K]`` (``Processes.node_ranks``); else each stays a local
        rank on this input's node, its global rank unknown. The agent's own exit lines follow."""
        if self.path_rank is not None:
            return {}, 0
        procs = self._procs
        procs.placement.pairs |= {(e.local_rank, e.rank) for e in self._elastic  # the failure table's entries
                                  if not e.agent_line and e.rank is not None and e.local_rank is not None}
        values: dict[str, set[int]] = {}
        for f in self._facts.values():
            if f.key in ("nnodes", "launcher_world") and f.value.isdigit():
                values.setdefault(f.key, set()).add(int(f.value))
        first = procs.placement.offset(procs.tags, values.get("nnodes", set()), values.get("launcher_world", set()))
        node, offset = (procs.place(first, self.file), 0) if first is not None else procs.node_ranks(self._works)
        if first is None and not node:
            node = procs.place(None, self.file)
        else:
            first = offset if first is None else first
        if node:
            self._rewho(node, offset)
        if first is not None:  # the agent's exit lines name the local rank: placed where the node's first is known
            labelled = {i for _, i in self._node_agents}  # placed by their node's label (see finish)
            self._elastic[:] = [replace(e, rank=e.local_rank + first)
                                if e.agent_line and e.local_rank is not None and i not in labelled else e
                                for i, e in enumerate(self._elastic)]
        return node, offset

    def _rewho(self, node: dict[Who, Who], offset: int) -> None:
        """Put the global ranks found by ``Processes.node_ranks`` on everything this file read."""
        if offset:  # ranks past the first node: the [Rank K] printed is the world group's
            world_pg = PG(id="0", desc="default_pg")
            self._works[:] = [replace(w, pg=world_pg) if w.who in node and w.pg is None else w for w in self._works]
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

    # ------------------------------------------------------------------ logical lines, through the sources
    def _logical(self, lineno: int, who: Who, text: str, joined: bool = False, sq: str | None = None) -> None:
        """One logical line (``sq``: its squeezed text when the caller has it)."""
        loc = Loc(self.file, lineno)
        if self._last_errors.waiting:
            self._take(self._last_errors.reason(who, lineno, lambda: PREFIX.sub("", text).strip()))
        records = self._records
        body = PREFIX.sub("", text).strip() if records.in_stack else text
        taken, closed = records.stack_line(who, text, loc, body)
        if closed:
            self._take(closed)
        if taken:
            return
        if records.in_desync:
            if records.desync_line(lineno, squeeze(text)):
                return
            self._take(records.close_desync())
        if self._holds(text) & _BUSY:
            self._busy(who, text, loc)
        if self._table.may_hold(text):
            taken, closed = self._table.line(text, loc)
            self._take(closed)
            if taken:
                return
        if "[TC]" in text and (said := nccl2.read(who, text, loc)) is not None:
            self._take(said)
            return
        if pgnccl.DUMP_HINT.search(text) and (event := pgnccl.dump_event(who, text, loc)) is not None:
            self._take([event])
            return
        if not (joined or pgnccl.RECORDISH.search(text)):
            self._error_or_fact(who, text, loc)
            return
        if (said := records.record(who, sq if sq is not None else squeeze(text), loc, text)) is not None:
            self._take(said)
            return
        self._error_or_fact(who, text, loc)

    def _join_warns(self) -> None:
        """NCCL's warnings that name no rank, joined to the rank their process's own connection lines state (its
        host and PID in NCCL's header; ``Channel 00/0 : 80[0] -> 87[7]``: the sender, rank 80): only where that
        process's lines state one rank (a process in two communicators of other sizes states two, and is not
        joined)."""
        if not self._unranked_warns:
            return
        rank_of = {proc: next(iter(ranks)) for proc, ranks in self._nccl_ranks.items() if len(ranks) == 1}
        for i, e in enumerate(self._errors):
            if e.who.global_rank is None and (proc := self._unranked_warns.get(e.loc.line)) in rank_of:
                rank = rank_of[proc]
                self._ranks.add(rank)
                self._errors[i] = replace(e, who=self._procs.one(rank, self.path_rank))

    def _take(self, said: Iterable[Read]) -> None:
        """Keep what a source read: each kind in its list, an error or a clue or a fact through its join."""
        for e in said:
            if isinstance(e, Fact):  # the most frequent: every set-up line of NCCL's says two to four
                k = (e.key, e.value, e.who.rank)
                if k not in self._facts:
                    self._facts[k] = e if len(e.value) <= MAX_FACT else replace(e, value=e.value[:MAX_FACT])
            elif isinstance(e, RankError):
                self._error(e.who, e.kind, e.message, e.loc)
            elif isinstance(e, Clue):
                self._add_clue(e.who, e.kind, e.text, e.loc, e.clock_s)
            else:
                getattr(self, next(name for kind, name in _KEPT if isinstance(e, kind))).append(e)

    def _error_or_fact(self, who: Who, text: str, loc: Loc) -> None:
        if (host := self._host.feed(text, loc)):
            self._take(host)
            return
        if self._held and self._held[0].loc.line == loc.line:
            held, self._held = self._held, []
            if any([self._said(who, e) for e in held]):
                return  # the line is wholly a launcher's or gloo's report
        holds = self._holds(text)
        if holds & _UNREAD:
            self._maybe_unread(who, text, loc)
        if holds & _LOGGED:
            self._log_record(who, PREFIX.sub("", text).strip(), loc)
        if 'File "' in text:
            self._take(busy.frameworks(who, text, loc))
        if holds & _SIGNAL and (
                killed := errors.killed(who, PREFIX.sub("", text).strip(), loc)) is not None:
            self._take([killed])  # the process itself reports the fatal signal it dies of
            return
        # Here, not on every line (a timeout record is never a clue), and behind plain substring tests.
        if holds & _CLUE and errors.CLUE_GATE.search(text):
            self._clue(who, text, loc)
        if holds & _FACT:
            said, ended = self._records.start_up(who, text, loc)
            self._take(said)
            if ended:
                return
            self._take([*nccl.facts(who, text, loc), *world.facts(who, text, loc),
                        *pgnccl.settings(who, text, loc), *nccl.process(who, text, loc)])
            if (warned := nccl.warning(who, text, loc)) is not None:
                if who.global_rank is None and (proc := nccl.process_of(text)) is not None:
                    self._unranked_warns[loc.line] = proc  # its rank, where its process's lines state it (``finish``)
                self._take(warned)
                return
        if (old := nccl.old_warning(who, text, loc)) is not None:
            self._take(old)
            return
        if holds & _NCCL_ERROR and self._nccl_error(who, text, loc):
            return
        if not holds & _ERROR:
            return
        stripped = PREFIX.sub("", text).strip()
        if stripped.startswith(("ERROR ", "WARNING ", "CRITICAL ")):  # a Python logger's header (errors.PY_LOG_HEAD)
            stripped = errors.PY_LOG_HEAD.sub("", stripped)
        m = errors.PY_ERROR.match(stripped)
        if m is None and (label := LABEL.match(stripped)):
            stripped = stripped[label.end():]
            m = errors.PY_ERROR.match(stripped)
        if m and m["name"].startswith("nccl"):
            # "ncclRemoteError: A call failed ..." is the result code under an "NCCL error: ..." line.
            if not any(k[0] == who.rank for k in self._nccl_errors):
                self._nccl_error(who, "NCCL error: " + stripped, loc)
            return
        if m and "CalledProcessError" in m["name"] and self._child is not None and self._child.loc.line == loc.line:
            self._agent_failed(self._child)  # the line's own exception is its launcher's report of a worker
            return
        if (error := errors.exception(who, stripped, loc)) is not None:
            self._take([error])

    def _open_records(self) -> tuple[Clue, ...]:
        """The error records no later record of their process followed, in the order written, save those of a line
        a more specific source read (an exception, NCCL's words, a launcher's report of a worker, a wait)."""
        read = {e.loc for e in self._errors} | {c.loc for c in self._clues} | {e.loc for e in self._elastic} | {
            w.loc for w in self._works}  # a wait's record (gloo's timeout, logged) is the wait, not an error
        return tuple(c for _, c in sorted((i, c) for open_ in self._logged.values() for i, c in open_.items())
                     if c.loc not in read)

    def _log_record(self, who: Who, line: str, loc: Loc) -> None:
        """An error record a logger wrote, or a failed assertion (formats/loglevel.py), held as the process's open
        error until it logs on; one of each text while it stays open."""
        for c in loglevel.read(who, line, loc):
            if c.kind == "c_assert":  # assert() aborts the process: nothing of it follows
                self._add_clue(who, c.kind, c.text, loc)
                continue
            open_ = self._logged.setdefault(who, {})
            if all(x.text != c.text for x in open_.values()):
                open_[self._logged_n] = c
                self._logged_n += 1

    def _clue(self, who: Who, text: str, loc: Loc) -> None:
        """Keep a line that says why a process failed (see :class:`Clue`); each text once per rank."""
        body = errors.LOG_HEAD.sub("", PREFIX.sub("", text).strip())
        if (at := body.find("slurmstepd: ")) > 0:  # glued after a progress bar that ended without a newline
            body = body[at:]
        if m := nccl.LAST_ERROR.search(body):
            if m["text"].strip():
                self._add_clue(who, "last_error", m["text"].strip(), loc)
            else:
                self._last_errors.wait(who, loc)
            return
        self._take(errors.clues(who, body, loc, glog(text)))

    def _add_clue(self, who: Who, kind: str, text: str, loc: Loc, clock: float | None = None) -> None:
        key = (who.rank, kind, text[:120])
        if kind == "nccl" and (who.rank, "last_error", text[:120]) in self._clue_keys:
            return  # NCCL's sentence read already as the reason under its "Last error:": one statement, not two
        if key not in self._clue_keys:
            self._clue_keys.add(key)
            text = text[:300]
            self._clues.append(Clue(who, kind, text, loc, clock, store_words(text),
                                    torchrun.closing(text) if kind == "launcher" else None, nccl.words(text),
                                    nccl.gone(text), errors.stating(text)))

    def _nccl_error(self, who: Who, text: str, loc: Loc) -> bool:
        """An "NCCL error: <reason>" raised on this rank (not on a named work); each text counted once per rank.

        The same error is printed by the watchdog, by ``what():`` and by the Python exception;
        it is one event. Remote exits and closed sockets are connection failures.
        """
        error = nccl.error(who, text, loc)
        if error is None:
            return False
        key = (who.rank, error.message[:200])
        # Without a rank, a text some rank already printed is that rank's restatement (what(): ...).
        restated = who.rank is None and any(k[1] == key[1] for k in self._nccl_errors)
        if key not in self._nccl_errors and not restated:
            self._nccl_errors.add(key)
            self._take([error, *nccl.call_check(who, text, loc), *nccl.comm_check(who, text, loc)])
        return True

    def _agent_failed(self, said: AgentExit) -> None:
        """A launcher's line about one worker that exited, by its local rank: a failure table in the same input, which
        names the global rank, is preferred (see :meth:`finish`). A local rank is a global rank only where the node's
        first global rank is known: its lines' tags beside [rankN]:, the table's pairs, one node stated (``--nnodes
        1``; :meth:`_local_ranks`), or behind a node's label (pdsh's "node1: ") that node's first rank
        (``Processes._node_tag``); else the worker stays unplaced, its global rank unknown."""
        failure = ElasticFailure(rank=None, local_rank=said.local_rank, exitcode=said.exitcode,
                                 pid=said.pid, signal=signals.of_exitcode(said.exitcode), host=None, time=None,
                                 root_cause=False, loc=said.loc, agent_line=True)
        if said.node is not None:
            self._node_agents.append((said.node, len(self._elastic)))
        self._elastic.append(failure)

    def _said(self, who: Who, said: Read) -> bool:
        """Take what a launcher's or framework's reader read from a line of ``who``, joined to this input's ranks;
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
            # a line the process itself printed (a C++ runtime's what(), glibc's abort, a native library's error)
            # is its prefix's rank's, where its own words name none
            mine = said.kind in _OWN_CLUES and said.who.global_rank is None
            self._add_clue(who if mine else self._procs.one(said.who.global_rank, said.who.path_rank),
                           said.kind, said.text, said.loc)
            # a terminate's what() (formats/cxx.py): its line may hold an NCCL error too; oneCCL's exception
            # (formats/oneccl.py) is a binding's Python exception's message too
            return said.kind not in ("what", "ccl")
        if isinstance(said, WorkerEnd) and said.rank is not None:
            self._elastic.append(ElasticFailure(rank=said.rank, local_rank=None, exitcode=said.exitcode, pid=said.pid,
                                                signal=said.signal, host=said.host, time=None, root_cause=False,
                                                loc=said.loc))
        elif isinstance(said, (WorkerEnd, JobStop)):
            # A stop of the whole job, or a worker's end the line cannot place: the launcher's words are a clue (a
            # long command line in the middle is cut, its end, the exit code, kept).
            body = said.text
            self._add_clue(self._procs.one(None, None), "launcher",
                           body if len(body) <= 300 else f"{body[:140]} … {body[-150:]}", said.loc)
        return False

    def _spawned(self, said: WorkerStarted) -> None:
        """A worker the launcher says it started: its PID (joins host records and rankless reports to it) and, where
        its output goes to this console, the rank is seen here (a rank that wrote nothing here wrote nothing)."""
        who = self._procs.one(said.rank, None)
        self._fact(who, "pid", str(said.pid), said.loc)
        self._fact(who, "spawned", str(said.pid), said.loc)
        if not said.own_log:
            self._ranks.add(said.rank)

    def _died(self, said: WorkerDied, text: str) -> None:
        """A launcher's report that a worker's process died without an error of its own (Ray's actor error): that
        rank's death, by a signal it does not name. Its rank by the PID the report names, or the snippet's one rank;
        where neither names one, the death of a process no line ranks (the report's own line's), never dropped: a
        process of the job died."""
        rank = self._procs.pid_rank.get(said.pid) if said.pid is not None else None
        if rank is None and len(said.snippet) == 1:
            rank = said.snippet[0]
        self._error(self._procs.one(rank, None) if rank is not None else self._procs.who(text), ErrorKind.KILLED,
                    said.text, said.loc)

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
        if (glued := busy.GLUED_LINE.search(text, 1)) is not None:
            text = text[:glued.start()]  # another process's line glued after a progress bar without its newline
            who = self._procs.who(text)
        if busy.work_done(text):  # the work finished ("Checkpoint saved", a bar at 100%): not what it is doing
            for k in [k for k in self._facts if k[0] == "busy" and k[2] == who.rank]:
                del self._facts[k]
            return
        if busy.busy_phase(text) is None:
            return
        body = errors.LOG_HEAD.sub("", PREFIX.sub("", text).strip())
        body = " ".join(body.split())  # a bar's padding
        old = [k for k in self._facts if k[0] == "busy" and k[2] == who.rank]
        if old and busy.BAR_AT_ZERO.search(body):
            return  # a bar just (re)started says less than the one before it
        for k in old:
            del self._facts[k]
        self._facts[("busy", "", who.rank)] = Fact(who, "busy", body[:200], loc)

    def _error(self, who: Who, kind: ErrorKind, message: str, loc: Loc) -> None:
        if kind is ErrorKind.EXCEPTION and self._line_pid is not None and self._line_pid >= 0 \
                and not errors.DEATH_NEWS.search(message):  # the news of another's death is kept (formats/errors.py)
            self._pid_error[self._line_pid] = len(self._errors)  # a Python exception: did its process go on?
        if who.global_rank is not None:
            self._ranks.add(who.global_rank)  # an error shows its rank, however the line names it
        message = message[:MAX_MESSAGE]
        self._errors.append(RankError(who, kind, message, loc, store_words(message), nccl.words(message),
                                      nccl.gone(message), errors.stating(message)))

    def _fact(self, who: Who, key: str, value: str, loc: Loc) -> None:
        if key == "progress":  # a loop's latest count on a rank replaces its earlier ones (formats/progress.py)
            self._logged.pop(who, None)  # and says it went on past any error it logged
            loop = value.rsplit(": ", 1)[0]
            was = self._facts.get((key, loop, who.rank))
            if was is not None and was.value != value[:300]:  # where the count last changed, and from what
                self._facts[("progress_rise", loop, who.rank)] = Fact(who, "progress_rise", was.value, loc)
            self._facts[(key, loop, who.rank)] = Fact(who, key, value[:300], loc)
            return
        if key == "count":  # a rank's latest count of a loop, by the rank its words name (formats/progress.py)
            self._facts[(key, value.rsplit(": ", 1)[0], who.rank)] = Fact(who, key, value[:300], loc)
            return
        if key == "setup":  # a process's latest step of NCCL's set-up: where its lines stop (formats/ncclsetup.py)
            self._facts.pop((key, "", who.rank), None)  # re-inserted last: the dict's order stays the lines' order
            self._facts[(key, "", who.rank)] = Fact(who, key, value, loc)
            return
        k = (key, value, who.rank)
        if k not in self._facts:
            self._facts[k] = Fact(who, key, value[:MAX_FACT], loc)
