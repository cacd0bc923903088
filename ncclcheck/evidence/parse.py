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
from collections.abc import Iterable
from dataclasses import replace

from ncclcheck import signals
from ncclcheck.evidence import formats
from ncclcheck.evidence.formats import busy, errors, nccl, nccl2, pgnccl, world
from ncclcheck.evidence.formats.collectors import LABEL, NODE_LABEL
from ncclcheck.evidence.formats.elastic import Table
from ncclcheck.evidence.formats.host import Records as HostRecords
from ncclcheck.evidence.repair import (
    HEADER,
    MAX_JOIN,
    OPEN_TAIL,
    clean,
    incomplete,
    last_bar,
    squeeze,
    unprefixed,
    waits_for_digits,
)
from ncclcheck.evidence.stamps import glog
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
    Loc,
    Mismatch,
    PidRank,
    RankError,
    Read,
    StatusMention,
    SystemEvent,
    Who,
    WorkerDied,
    WorkerEnd,
    WorkerStarted,
    WorkMention,
)

# "[rank3]:" as torchrun prints it; also with its "[" lost at the start of a paste, or "[rank3[]:" mangled.
# "[ rank3]:" or "rank3]:" at the start, after a space or after ":)|>" (a run of spaces is its own boundary)
_GLOBAL_RANK = re.compile(r"(?:\[\s*|(?<![^\s:)|>]))rank(?P<rank>\d+)\[?\]:")
_ROLE_RANK = re.compile(r"\[[A-Za-z_]+?(?P<rank>\d+)\]:")
# A rank prefix further along a line, right before the c10 header it belongs to.
_GLUED_RANK = re.compile(r"\[rank(?P<rank>\d+)\]:(?=\[[EWIF]\d)")
# What precedes a record's text: a collector's own prefix (pdsh's "worker-4: ", a CRI timestamp, "[time] node4 ")
# when a rank tag follows it, then the launcher's rank tags, Ray's actor prefix and quoting marks.
_PY_PREFIX = re.compile(
    r"^(?:.{0,160}?(?=\[[A-Za-z_]*\d+\]:))?"
    r"(?:\s*(?:\([\w.\[\]=]+ pid=\d+(?:, ip=[\d.]+)?\)|\[[A-Za-z_]*\d+\]:|\[rank: \d+\]|>|`+|\*\*|"
    + formats.RANK_TAG_TEXT + r"))+\s?"
)
# Words one of which a line with a fact (or an error) holds: plain substring tests, cheaper than one alternation.
_FACT_WORDS = ("initialization options", "Terminating the process", "NCCL version", "Bootstrap", "NET/",
               "Using network", "TIMEOUT(ms)", "nranks", "set by environment", "NCCL WARN",
               "WORLD_SIZE", "world_size", "Num processes", "store-based barrier", "nnodes", "max_nodes", "nproc",
               "destroy_process_group", "completed", "finished")
_TRACEBACK_PARTS = ("Traceback", "File ", "During handling", "The above exception", "^", "~", "[")

DETAIL_WITHIN = 200  # the line under "Last error:" is its process's next line; other ranks' lines may come between
MAX_MESSAGE = 2000  # an OOM message lists every process on the GPU; its own numbers come last
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
        # "Last error:" lines whose text is on their process's next line, by process; and whether lines were left
        # out of the selection since (the one under it may be among them)
        self._await_detail: dict[Who, tuple[Loc, bool]] = {}
        self._prev_line = 0
        self._system: list[SystemEvent] = []
        # The sources read here on logical lines (formats.FORMATS' ``logical`` ones), each one input's reader
        self._records = pgnccl.Records()
        self._table = Table()
        self._host = HostRecords()
        self._readers = formats.readers()  # the launchers' and frameworks' readers, with the words that gate each
        self._held: list[Read] = []  # what the sources read from the current line, to take with its errors and facts
        self._child: AgentExit | None = None  # the last CalledProcessError read as a worker's exit

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
        sq = squeeze(text) if pgnccl.MAY_START.search(text) or OPEN_TAIL.search(text, max(0, len(text) - 100)) \
            else None
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
        self._take(self._records.close_desync())
        self._take(self._table.close())
        self._take(self._records.close_stack())
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

    # ------------------------------------------------------------------ whose line it is
    def _who(self, text: str) -> Who:
        ranks = _GLOBAL_RANK.findall(text, 0, 200) if text.find("rank", 0, 200) != -1 else None
        if not ranks and len(text) > 200 and (glued := _GLUED_RANK.search(text)):
            ranks = [glued["rank"]]  # a record glued after a long line (a progress bar without its carriage return)
        if not ranks and (mark := formats.rank_mark(text)) is not None:
            ranks = [mark]  # a framework's tag further along (Lightning's "[rank: 3] ")
        role = _ROLE_RANK.match(text)
        node = None
        if role is None and "]:" in text[:90] and text[:1] != "[" and (label := NODE_LABEL.match(text)) and (
                role := _ROLE_RANK.match(text, label.end())) is not None and not role[0].startswith("[rank"):
            node = label[0]  # a collector's node label before torchrun's tag: "node1: [default1]:"
        if ranks:
            if node is not None and role is not None and text.startswith("[rank", role.end()):
                self._node_tag(node, int(role["rank"]), int(ranks[-1]))
            elif role and not role[0].startswith("[rank") and text.startswith("[rank", role.end()):
                # torchrun's "[default3]:[rank3]:": the launcher's tag is that process's, on its lines without one
                self._role_global.setdefault(int(role["rank"]), int(ranks[-1]))
            return self._one_who(int(ranks[-1]), self.path_rank)
        if node is not None and role is not None:
            base = self._node_base.get(node)
            if base is not None and base >= 0:
                return self._one_who(base + int(role["rank"]), self.path_rank)
            self._node_tags.add((node, int(role["rank"])))
            return self._one_who(None, self.path_rank)
        if not ranks and text.startswith("[") and (tagged := formats.rank_tag(text)) is not None:
            return self._one_who(tagged, self.path_rank)  # a launcher's own tag of the global rank (Open MPI's)
        if not ranks and text.startswith("(") and (pid := formats.pid_tag(text)) in self._pid_rank:
            return self._one_who(self._pid_rank[pid], self.path_rank)  # Ray's worker, by its PID
        if role and int(role["rank"]) in self._role_global:
            return self._one_who(self._role_global[int(role["rank"])], self.path_rank)
        if self.path_rank is None and role:
            return self._one_who(None, int(role["rank"]))
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

    # ------------------------------------------------------------------ logical lines, through the sources
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
        records = self._records
        body = _PY_PREFIX.sub("", text).strip() if records.in_stack else text
        taken, closed = records.stack_line(who, text, loc, body)
        self._take(closed)
        if taken:
            return
        if records.in_desync:
            if records.desync_line(lineno, squeeze(text)):
                return
            self._take(records.close_desync())
        if any(map(text.__contains__, busy.WORDS)):
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

    def _take(self, said: Iterable[Read]) -> None:
        """Keep what a source read: each kind in its list, an error or a clue or a fact through its join."""
        for e in said:
            if isinstance(e, RankError):
                self._error(e.who, e.kind, e.message, e.loc)
            elif isinstance(e, Clue):
                self._add_clue(e.who, e.kind, e.text, e.loc, e.clock_s)
            elif isinstance(e, Fact):
                self._fact(e.who, e.key, e.value, e.loc)
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
        if 'File "' in text:
            self._take(busy.frameworks(who, text, loc))
        if any(map(text.__contains__, errors.SIGNAL_WORDS)) and self._fatal_signal(who, text, loc):
            return
        # Here, not on every line (a timeout record is never a clue), and behind plain substring tests.
        if any(map(text.__contains__, errors.CLUE_WORDS)) and errors.CLUE_GATE.search(text):
            self._clue(who, text, loc)
        if any(map(text.__contains__, _FACT_WORDS)):
            said, ended = self._records.start_up(who, text, loc)
            self._take(said)
            if ended:
                return
            self._take([*nccl.facts(who, text, loc), *world.facts(who, text, loc),
                        *pgnccl.settings(who, text, loc), *nccl.process(who, text, loc)])
            if (warned := nccl.warning(who, text, loc)) is not None:
                self._take(warned)
                return
        if (old := nccl.old_warning(who, text, loc)) is not None:
            self._take([old])
            return
        if any(map(text.__contains__, nccl.ERROR_WORDS)) and self._nccl_error(who, text, loc):
            return
        if not any(map(text.__contains__, errors.ERROR_WORDS)):
            return
        stripped = _PY_PREFIX.sub("", text).strip()
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

    def _clue(self, who: Who, text: str, loc: Loc) -> None:
        """Keep a line that says why a process failed (see :class:`Clue`); each text once per rank."""
        body = errors.LOG_HEAD.sub("", _PY_PREFIX.sub("", text).strip())
        if (at := body.find("slurmstepd: ")) > 0:  # glued after a progress bar that ended without a newline
            body = body[at:]
        if m := nccl.LAST_ERROR.search(body):
            if m["text"].strip():
                self._add_clue(who, "last_error", m["text"].strip(), loc)
            else:
                self._await_detail[who] = (loc, False)
            return
        self._take(errors.clues(who, body, loc, glog(text)))

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
        error = nccl.error(who, text, loc)
        if error is None:
            return False
        key = (who.rank, error.message[:200])
        # Without a rank, a text some rank already printed is that rank's restatement (what(): ...).
        restated = who.rank is None and any(k[1] == key[1] for k in self._nccl_errors)
        if key not in self._nccl_errors and not restated:
            self._nccl_errors.add(key)
            self._take([error])
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
        if errors.fatal_signal(body) is None:
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
        if (glued := busy.GLUED_LINE.search(text, 1)) is not None:
            text = text[:glued.start()]  # another process's line glued after a progress bar without its newline
            who = self._who(text)
        if busy.DONE.search(text):  # the work finished ("Checkpoint saved", a bar at 100%): not what it is doing
            for k in [k for k in self._facts if k[0] == "busy" and k[2] == who.rank]:
                del self._facts[k]
            return
        if busy.busy_phase(text) is None:
            return
        body = errors.LOG_HEAD.sub("", _PY_PREFIX.sub("", text).strip())
        body = " ".join(body.split())  # a bar's padding
        old = [k for k in self._facts if k[0] == "busy" and k[2] == who.rank]
        if old and busy.BAR_AT_ZERO.search(body):
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
        errors.PY_ERROR.match(line) is None
