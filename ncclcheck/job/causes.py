"""The failure catalogue matched: which cause the lines and events of a job show, and in whose words.

The causes themselves are data (job/catalogue/, one TOML file each, read by causedata.py). Each is matched on what
the ranks and the launcher printed themselves (error lines, NCCL's ``Last error:`` text, NCCL WARN lines, CUDA
assertions, store and launcher lines) and on typed events (a host's or a scheduler's record by its kind,
TORCH_DISTRIBUTED_DEBUG=DETAIL's mismatch report), never on the cascade the other ranks print afterwards. The
patterns name the mechanism (a shared-memory segment that cannot grow, a socket that cannot reach the store), not
one file's wording, so a failure worded differently by another release still lands in its class. The catalogue is
read in its files' order: a device or memory error is the root of the NCCL and store errors it causes, a set-up
error comes before the timeouts that follow it, and a lost peer is the consequence of something else.
docs/failures.md, generated from the files, lists every cause with its lines, its fix and its source.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ncclcheck import signals
from ncclcheck.evidence import formats, stamps
from ncclcheck.evidence.types import Clue, ErrorKind, Loc, NcclWords, PeerGone, RankError, StoreWords, SystemEvent
from ncclcheck.job.causedata import DEVICE, HOST, LATE, LAUNCHER, MEMORY, NETWORK, PROGRAM, SETUP, Cause, read_catalogue
from ncclcheck.job.dupgpu import pair_words
from ncclcheck.job.hosts import Joined
from ncclcheck.job.rununsage import run_usage
from ncclcheck.job.statements import Statement, first_told, setting_told, told
from ncclcheck.job.unsaiddup import unsaid_duplicate
from ncclcheck.job.xids import fatal, meaning
from ncclcheck.ranks import rank_phrase

if TYPE_CHECKING:  # the job model holds a Diagnosis (job/model.py): imported here for its type only
    from ncclcheck.job.model import Job

__all__ = ["ALL_CAUSES", "CATALOGUE", "DEVICE", "HOST", "HOST_KILL", "LATE", "LAUNCHER", "MEMORY", "NETWORK", "NO_REASON",
           "PROBE", "PROGRAM", "RULED", "SETUP", "STOPPED", "SYSTEM_ERROR", "VERSIONS", "Cause", "Diagnosis",
           "awaited_rank", "awaiting_ranks", "cause", "describe", "diagnose", "one_line", "oom_line"]

PROBE = "Run `ncclcheck probe` inside the failing container on each node: it checks this setting and says what to set."


def _in_order(causes: tuple[Cause, ...]) -> tuple[tuple[Cause, ...], tuple[Cause, ...]]:
    return tuple(c for c in causes if c.order is not None), tuple(c for c in causes if c.order is None)


@dataclass(frozen=True)
class Diagnosis:
    """A cause found in the inputs: the ranks whose own lines show it, and the line that says it best."""

    cause: Cause
    ranks: tuple[int, ...]
    text: str
    loc: Loc
    locs: tuple[Loc, ...]
    detail: str  # one line, in the inputs' own numbers (the OOM's sizes, the assert's kernel)
    clock_s: float | None = None  # the earliest stamp (date and time) a line of it was printed, when lines carry one
    said: Statement | None = None  # the mechanism its line names (job/statements.py): its fix comes first
    store: StoreWords | None = None  # the store client's words on that line (evidence/formats/storeclient.py)
    nccl: NcclWords | None = None  # NCCL's words on that line (evidence/formats/nccl.py)

    @property
    def fix(self) -> tuple[str, ...]:
        """The fix: the line's mechanism's first where it says more than the cause (job/statements.py), else after
        the cause's own."""
        if self.said is None or self.cause.kind in self.said.defers:  # the cause reads the same words, fix and all
            return self.cause.fix
        own = self.said.fix
        rest = tuple(f for f in self.cause.fix if f not in own)
        return (*own, *rest) if self.said.first_for(self.cause.kind) else (*rest, *own)


# The causes matched in order, and those named by the rules of diagnose below.
CATALOGUE, RULED = _in_order(read_catalogue())
ALL_CAUSES = (*CATALOGUE, *RULED)
_BY_KIND = {c.kind: c for c in ALL_CAUSES}
VERSIONS, NO_REASON, SYSTEM_ERROR, HOST_KILL, STOPPED, HANGUP = (_BY_KIND[k] for k in (
    "nccl_version_mismatch", "nccl_no_reason", "nccl_system_error", "host_kill", "stopped_externally",
    "terminal_hangup"))
# The cause of a death by signal that the launcher reports without a line of the process's own.
_BY_SIGNAL = {sig: c for c in CATALOGUE for sig in c.signals}

_OOM = re.compile(r"Tried to allocate (?P<asked>[\d.]+ [KMGT]?i?B)")
_OOM_GPU = re.compile(r"GPU (?P<gpu>\d+) has a total capacity of (?P<total>[\d.]+ [KMGT]?i?B) of which "
                      r"(?P<free>[\d.]+ [KMGT]?i?B) is free")
_OOM_OLD = re.compile(r"GPU (?P<gpu>\d+); (?P<total>[\d.]+ [KMGT]?i?B) total capacity; .*?(?P<free>[\d.]+ [KMGT]?i?B) free")
_OOM_MINE = re.compile(r"this process has (?P<held>[\d.]+ [KMGT]?i?B) memory in use")
_OOM_FRAG = re.compile(r"(?<![\d.])(?P<reserved>[\d.]+ [KMGT]?i?B) is reserved by PyTorch but unallocated")
# What the asserting kernel usually means.
_KERNELS = (
    (re.compile(r"indexSelect|srcIndex < srcSelectDimSize"), "an index past the end of an embedding or index_select "
                                                             "(a token id >= the vocabulary size)"),
    (re.compile(r"nll_loss|n_classes|cur_target"), "a label outside [0, num_classes) in a loss"),
    (re.compile(r"ScatterGather|idx_dim"), "a gather/scatter index out of bounds"),
    (re.compile(r"IndexKernel|index out of bounds"), "an advanced-indexing index out of bounds"),
)


_CUDA_OOM = next(c.pattern for c in CATALOGUE if c.kind == "cuda_oom")


def one_line(message: str) -> str:
    """An error in one line: a GPU's OOM as its sizes, anything else cut at its first sentence that matters (a host's
    OOM, "srun: error: vm: task 1: Out Of Memory", is quoted as it stands: it is no CUDA allocation)."""
    if _CUDA_OOM.search(message):
        return oom_line(message)
    first = message.split(", NCCL version")[0].split(" Search for `")[0]
    if len(first) <= 200:
        return first
    # A variable the line says to set is its point: where it stands past the cut, the sentence naming it is kept.
    if (told_at := setting_told(first)) is None or told_at[1] <= 197:
        return first[:197] + "..."
    at = told_at[0]
    if at < 120:
        return first[:told_at[1]] + "..."
    end = first.find(". ", at) % (len(first) + 1)  # the sentence's end, or the line's
    tail = first[at:end + 1] if end < at + 120 else first[at:at + 117] + "..."
    return f"{first[:120]}... {tail}"


def oom_line(message: str) -> str:
    """``CUDA out of memory: asked 372.53 GiB on GPU 1 (139.80 GiB total, 123.46 GiB free)``, from whatever is printed."""
    parts = []
    if m := _OOM.search(message):
        parts.append(f"asked {m['asked']}")
    gpu = _OOM_GPU.search(message) or _OOM_OLD.search(message)
    if gpu:
        parts.append(f"on GPU {gpu['gpu']} ({gpu['total']} total, {gpu['free']} free)")
    if m := _OOM_MINE.search(message):
        parts.append(f"this process held {m['held']}")
    if m := _OOM_FRAG.search(message):
        parts.append(f"{m['reserved']} reserved but unallocated")
    return "CUDA out of memory" + (": " + ", ".join(parts) if parts else "")


@dataclass(frozen=True)
class _Said:
    """One thing a process printed that a cause may match: who, what, where."""

    rank: int | None
    text: str
    loc: Loc
    clue: str | None = None  # the Clue kind, None for an error line; "system" for a host's or scheduler's record
    clock_s: float | None = None
    joined: Joined | None = None
    store: StoreWords | None = None  # the store client's words in it (evidence/formats/storeclient.py)
    nccl: NcclWords | None = None  # NCCL's words in it (evidence/formats/nccl.py)
    gone: PeerGone | None = None  # its word that a peer went away (evidence/formats/nccl.py)
    system: bool = False  # it names ncclSystemError, in its words or by its name (evidence/formats/nccl.py)


def _said(job: Job) -> list[_Said]:
    """Every error line, clue and DETAIL mismatch report of the job's inputs (JobFacts.events, input by input), then
    every host or scheduler record joined to its ranks (JobFacts.host_records)."""
    out: list[_Said] = []
    # A traceback's raise line (formats/raiseline.py) stands for its exception only where that exception's own line
    # is not in the inputs: where it is, the exception's line is the one matched and cited.
    raised = {(x.loc.file, x.message) for x in job.facts.events if isinstance(x, RankError)}
    for x in job.facts.events:
        if isinstance(x, RankError):
            out.append(_Said(x.who.rank, x.message, x.loc, store=x.store, nccl=x.nccl, gone=x.gone,
                             system=x.says is not None and x.says.system))
        elif isinstance(x, Clue):
            if x.kind == "unread":  # no source's form: quoted as the last resort (job/unreadline.py), not matched
                continue
            if x.kind == "raise_line" and (x.loc.file, x.text) in raised:
                continue
            out.append(_Said(x.who.rank, x.text, x.loc, x.kind, x.clock_s, store=x.store, nccl=x.nccl))
        else:
            # TORCH_DISTRIBUTED_DEBUG=DETAIL's report, read into a Mismatch: a cause names it among its events (the
            # text is what the verdict quotes, never what is matched).
            ranks = f"{x.rank_a}" if x.rank_b is None else f"{x.rank_a} and {x.rank_b}"
            out.append(_Said(x.who.rank, f"Detected mismatch between collectives on ranks {ranks} "
                                         "(TORCH_DISTRIBUTED_DEBUG=DETAIL)", x.loc, "mismatch"))
    # A host's or a scheduler's record speaks for the job only where it joins a rank (a PID, a GPU, a host of it):
    # the rest of a node's kernel log is other processes' business.
    # Where the inputs place no rank at all, a record stands for itself, said to be joined to none.
    for j in job.facts.host_records:
        if j.event.kind in _NOT_A_CAUSE or j.event.xid is not None and not fatal(j.event.xid):
            continue
        if j.ranks:
            out += [_Said(r, j.event.text, j.event.loc, "system", None, j) for r in j.ranks]
        elif j.by == "none":
            out.append(_Said(None, j.event.text, j.event.loc, "system", None, j))
    return out


def _shows(cause: Cause, s: _Said) -> bool:
    """Whether this thing a process printed is the cause: a host's or a scheduler's record by its kind, a typed
    report by its kind, a line by the cause's pattern."""
    if s.joined is not None:
        return s.joined.event.kind in cause.records
    if s.clue == "mismatch":
        return "mismatch" in cause.events
    return cause.pattern.search(s.text) is not None


def _detail(cause: Cause, hits: Sequence[_Said], fired_s: float | None = None) -> str:
    texts = [h.text for h in hits]
    if joined := next((h.joined for h in hits if h.joined is not None), None):
        return describe(joined, fired_s)
    if cause.kind == "cuda_oom":
        return oom_line(max(texts, key=len))
    if cause.kind == "device_assert":
        where = next((h.text for h in hits if h.clue == "cuda_assert"), None)
        if where is None:
            return "CUDA error: device-side assert triggered (the assertion line itself is not in these inputs)"
        meaning = next((m for p, m in _KERNELS if p.search(where)), None)
        return f"device-side assert: {where}" + (f", that is {meaning}" if meaning else "")
    if cause.kind == "store_lost":
        addrs = sorted({a for h in hits if h.store is not None for a in h.store.remote})
        first = next((h.text for h in hits if h.clue == "store"), texts[0])
        at = f" (store at {', '.join(addrs)})" if addrs else ""
        return one_line(first.split("): ", 1)[-1]) + at
    if cause.kind in ("ib_error", "ib_setup"):
        # A completion's status number and a verbs call's errno each name their own mechanism: the table of stated
        # lines (job/statements.toml, from rdma-core's ibv_wc_status_str and NCCL's ibvwrap.cc) words them.
        best = (next((h for h in hits if told(h.text) is not None), None)
                or next((h for h in hits if h.clue == "last_error" and h.text), None) or hits[0])
        text = best.text.split("Last error:")[-1].strip()
        said = told(text)
        return one_line(text) + (f", that is {said.means}" if said is not None else "")
    if cause.kind == "store_unreachable":
        # the store client's errno or deadline names where the connection failed (job/statements.toml's store_ lines)
        best = next((h for h in hits if told(h.text) is not None), hits[0])
        said = told(best.text)
        text = one_line(best.text)
        text = text[:-1] if text.endswith(".") and not text.endswith("...") else text
        return text + (f", that is {said.means}" if said is not None else "")
    if cause.kind == "duplicate_gpu":
        best = next((h for h in hits if h.clue == "last_error" and h.text), None) or hits[0]
        pair = pair_words(best.nccl) if best.nccl is not None else ""  # its two ranks (evidence/formats/nccl.py)
        return one_line(best.text) + (f": {pair}" if pair else "")
    if cause.kind == "nccl_id_wait":
        root = hits[0].store.root if hits[0].store is not None else None
        return (f"the ranks waited for rank {root}'s NCCL id in the store until the timeout"
                if root is not None else "ranks waited for another rank's NCCL id in the store") + f": {one_line(hits[0].text)}"
    if cause.kind == "horovod_stall":  # one clue per missing rank (evidence/formats/horovod.py): said once, of them all
        named = sorted({h.rank for h in hits if h.rank is not None})
        return one_line(re.sub(r"\brank \d+", rank_phrase(named), hits[0].text, count=1)) if named else one_line(texts[0])
    if cause.kind in ("nccl_no_reason", "nccl_system_error"):
        error = next((h.text for h in hits if h.clue is None), None)
        empty = any(h.clue == "last_error" for h in hits)
        return (one_line(error) + "; " if error else "") + (
            "NCCL's 'Last error:' is empty" if empty else "no 'Last error:' text follows it in these inputs")
    best = next((h for h in hits if h.clue == "last_error" and h.text), None) or hits[0]
    return one_line(best.text)


def _found(cause: Cause, hits: Sequence[_Said], fired_s: float | None = None) -> Diagnosis:
    ranks = tuple(sorted({h.rank for h in hits if h.rank is not None}))
    first = min(hits, key=lambda h: (h.clue not in ("cuda_assert", "system"), h.loc.file, h.loc.line))
    locs = tuple(dict.fromkeys(h.loc for h in sorted(hits, key=lambda h: (h.rank is None, h.rank or 0))))[:8]
    clocks = [h.clock_s for h in hits if h.clock_s is not None]
    # CUDA's generic string (cuda_errors.toml's rows of no host's set-up) says less than another line's own entry for
    # the same failure (the path it was raised in, the library that returned it): that one first.
    known = [s for t in (first.text, *(h.text for h in hits)) if (s := told(t)) is not None]
    said = next((s for s in known if not s.general), known[0] if known else None)
    return Diagnosis(cause, ranks, first.text, first.loc, locs, _detail(cause, hits, fired_s),
                     min(clocks, default=None), said, first.store, first.nccl)


# The setting a cause is about: where the log prints the value the job ran with, the verdict quotes it.
_SETTING_OF = {"no_socket_interface": "NCCL_SOCKET_IFNAME", "net_plugin": "NCCL_NET"}


def _quoting_the_setting(d: Diagnosis, job: Job) -> Diagnosis:
    """The diagnosis with the value of its setting as the log printed it ("set by environment to eth2")."""
    name = _SETTING_OF.get(d.cause.kind)
    fact = next((f for f in job.facts.settings if name and f.key == name), None)
    if fact is None:
        return d
    return replace(d, detail=f"{d.detail}; the job ran with {name}={fact.value} ({fact.loc}), which named nothing "
                             "NCCL could use", locs=(*d.locs, fact.loc)[:8])


def diagnose(job: Job, killed: Sequence[tuple[int | None, Loc, str]] = (),
             fired_s: float | None = None, silent: Sequence[int] = ()) -> Diagnosis | None:
    """The first cause of the catalogue that the inputs show, or a cause read from what is missing.

    ``fired_s``: when the first collective timed out (seconds into the day, by the job's log clock), to set a host's
    record against.

    ``killed`` lists the ranks that died of a fatal signal (rank, where, signal; "" where the line that says so names
    none, as Ray's "its worker process has died"): SIGKILL with no traceback is the host-OOM cause, SIGBUS NCCL's
    shared memory, SIGSEGV and the like a native crash.

    ``silent`` lists the ranks whose input stops without a word while every other rank's error says a peer went
    away: a process that dies without a traceback (SIGKILL cannot be caught; Python prints nothing for it), read
    from the survivors' lines, since the dead rank wrote none.
    """
    said = _said(job)
    # A launcher's report of a kill it could not tie to a rank ("died with <Signals.SIGKILL: 9>", DeepSpeed's
    # "exits with return code = -9").
    unnamed = [(None, s.loc, sig) for s in said if (sig := formats.launcher_signal(s.text))][:1]
    for cause in CATALOGUE:
        if cause.kind == "rdzv_failed" and _worker_failed(job):
            continue  # the agent's rendezvous failed after a worker's own error ended the job: its echo
        hits = [s for s in said if _shows(cause, s)]
        # A killed rank is why its peers lost it (or read a cut message).
        if hits and not (cause.echo and (killed or unnamed or silent)):
            found = _quoting_the_setting(_found(cause, hits, fired_s), job)
            if (unsaid := run_usage(cause.kind, job, _BY_KIND["nccl_graph_capture"])  # job/rununsage.py
                    or unsaid_duplicate(cause.kind, job, _BY_KIND["duplicate_gpu"])) is not None:
                found = replace(found, cause=unsaid[0], detail=unsaid[1])  # job/unsaiddup.py
            return found
    if silent:
        lost = [s for s in said if s.rank not in silent and s.clue is None and s.gone is not None]
        if lost:
            return _silent_death(job, silent, lost, unnamed[0] if unnamed and len(silent) == 1 else None)
    nccl = [s for s in said if s.clue is None and (s.text.startswith("NCCL error") or s.system)]
    if nccl:
        empty = [s for s in said if s.clue == "last_error" and not s.text]
        said_why = {c.rank for c in said if c.clue == "last_error" and c.text}
        unexplained = [s for s in nccl if s.rank not in said_why]
        if empty or unexplained:
            system = any(s.system for s in unexplained)
            return _found(SYSTEM_ERROR if system else NO_REASON, unexplained + empty)
    versions = _versions(job)
    if versions is not None:
        return versions
    killed = killed or unnamed
    if killed:
        sig = killed[0][2]
        ranks = [r for r, _, s in killed if s == sig and r is not None]
        how = _BY_SIGNAL.get(sig, HOST_KILL)
        if not sig:  # a launcher's word that the process died without an error of its own, naming no signal
            words = next((s.text for s in said if s.loc == killed[0][1]), "")
            # the launcher's words may name where to look (Ray's worker lost its raylet: job/statements.toml)
            return Diagnosis(how, tuple(ranks), words or "died", killed[0][1],
                             tuple(loc for _, loc, s in killed if s == sig)[:8],
                             f"{rank_phrase(ranks) or 'a process'} died with no error of its own, by a signal no line "
                             f"names ({one_line(words)})" if words else
                             f"{rank_phrase(ranks) or 'a process'} died with no error of its own",
                             said=told(words) if words else None)
        return Diagnosis(how, tuple(ranks), f"killed by {sig}", killed[0][1],
                         tuple(loc for _, loc, s in killed if s == sig)[:8],
                         f"{rank_phrase(ranks)} died of {sig} with no traceback" if ranks else
                         f"killed by {sig} with no traceback (the launcher's line names no rank)")
    # Slurm's cancellations and mpirun's time limit are the launchers' stop lines (evidence/formats/).
    stops = [s for s in said if s.clue == "launcher" and ("death signal" in s.text or formats.is_stop(s.text))
             or s.joined is not None and s.joined.event.kind in ("time_limit", "cancelled")]
    errors = [e for e in job.facts.errors
              if e.kind is not ErrorKind.EXCEPTION or e.says is None or e.says.agent != "SignalException"]
    timeouts = job.facts.timeouts
    # a launcher's report that a worker exited with an error before the stop: the stop followed it (srun's
    # --kill-on-bad-exit: "task N: Exited with exit code C", then slurmstepd's CANCELLED line), no outside stop
    failed_first = bool(stops) and any(f.exitcode and f.signal is None and f.loc.file == stops[0].loc.file
                                       and f.loc.line < stops[0].loc.line for f in job.facts.elastic)
    if stops and not errors and not timeouts and not failed_first:
        # The agent passes on the signal it received: SIGHUP is a closed terminal, not a scheduler (signals.ORIGIN).
        hangup = any(signals.death_signal(s.text) == "SIGHUP" for s in stops)
        # the stop's own words may say why (Slurm's DUE TO TIME LIMIT, a requeue, scancel: job/statements.toml)
        return Diagnosis(HANGUP if hangup else STOPPED, (), stops[0].text, stops[0].loc,
                         tuple(s.loc for s in stops)[:8], stops[0].text, said=first_told(s.text for s in stops))
    return None


def _worker_failed(job: Job) -> bool:
    """Whether a worker (a rank) wrote an error of its own that is not the loss of a peer: torchrun's agent whose
    rendezvous failed after it then only echoes the job's end (the agent without restarts left, ending, closed the
    rendezvous or took its store with it: torch/distributed/launcher/api.py, launch_agent's rdzv_handler.shutdown()).
    An agent's own exception (its rendezvous, its failure table, a signal it received: ``says.agent``) is no worker's
    error, nor is a worker's lost store (``store.failed``) or peer (``gone``): the rendezvous' echo too."""
    return any(e.who.rank is not None and e.kind is not ErrorKind.CONNECTION and e.gone is None
               and (e.says is None or e.says.agent is None) and (e.store is None or not e.store.failed)
               for e in job.facts.errors)


def _silent_death(job: Job, silent: Sequence[int], lost: Sequence[_Said],
                  unnamed: tuple[None, Loc, str] | None) -> Diagnosis:
    """Ranks that wrote nothing while the others lost their peer: they died without a traceback. A launcher's report
    of a worker's death by a signal that names no worker is the one silent rank's: every other rank wrote an error of
    its own, and a process ends by its own error (an exit status, the watchdog's abort), not by that signal."""
    others = sorted({s.rank for s in lost if s.rank is not None})
    gone = lost[0].gone
    assert gone is not None
    words = gone.words
    host = "".join(f", the host of {rank_phrase(p.ranks)}" for p in job.facts.peers_lost[:1]
                   if p.ranks and p.peer.split("<")[0] in words)
    peers = (f"{rank_phrase(others) if others else 'the other ranks'} lost "
             f"{'its connection' if len(others) == 1 else 'their connections'} to a peer ({words}){host}")
    locs = tuple(s.loc for s in lost)
    if unnamed is not None:
        _, at, sig = unnamed
        return Diagnosis(_BY_SIGNAL.get(sig, HOST_KILL), tuple(silent), f"killed by {sig}", at, (at, *locs)[:8],
                         f"{rank_phrase(silent)} died of {sig} with no traceback: the launcher reports a worker dead "
                         f"of {sig} without naming it, and {rank_phrase(silent)} is the only rank that wrote no "
                         f"error of its own; {peers}")
    return Diagnosis(HOST_KILL, tuple(silent), lost[0].text, lost[0].loc, locs[:8],
                     f"{rank_phrase(silent)} stopped with no error, traceback or exit line while {peers}"
                     + ("; these inputs do not tell which of them died first" if len(silent) > 1 else ""))


def _versions(job: Job) -> Diagnosis | None:
    seen: dict[str, list[tuple[int | None, Loc]]] = {}
    for f in job.facts.nccl_versions:
        seen.setdefault(f.value, []).append((f.who.rank, f.loc))
    if len(seen) < 2:
        return None
    detail = "; ".join(f"{v} on {rank_phrase(r for r, _ in who if r is not None) or 'unnamed ranks'}"
                       for v, who in sorted(seen.items()))
    locs = tuple(who[0][1] for who in seen.values())
    ranks = tuple(sorted({r for who in seen.values() for r, _ in who if r is not None}))
    return Diagnosis(VERSIONS, ranks, detail, locs[0], locs, f"NCCL versions differ: {detail}")


# Records that say a process was slow or blocked, not why it died: findings, never the cause.
_NOT_A_CAUSE = {"hung_task"}
_WHAT = {"oom_killed": "was killed by the kernel's OOM killer", "scheduler_oom": "was ended by the scheduler for "
         "its memory (OUT_OF_MEMORY)", "segfault": "died of a segmentation fault", "evicted": "was evicted",
         "node_failure": "lost its node", "preempted": "was preempted", "time_limit": "reached the job's "
         "time limit", "cancelled": "was cancelled", "killed_by_scheduler": "was killed by the scheduler",
         "pcie_error": "lost its GPU to an uncorrected PCIe error"}


def _gib(kb: str) -> str:
    return f"{int(kb) / (1 << 20):.2f} GiB"


def _time_of_day(clock: str) -> float:
    h, m, sec = clock.rsplit(" ", 1)[-1].split(":")
    return int(h) * 3600 + int(m) * 60 + float(sec)


def _against(ev: SystemEvent, fired_s: float | None) -> str:
    """When the record was written against when the first collective timed out, as far as the clocks allow."""
    if fired_s is None:
        return ""
    if ev.clock is None:
        return (" (the kernel log's times count from its host's boot, dmesg without -T: they cannot be set against "
                "the job's clock)") if ev.monotonic_s is not None else ""
    when = stamps.of_clock(ev.clock)  # with its date: right across midnight
    gap = fired_s - when if when is not None else stamps.time_of_day(fired_s) - _time_of_day(ev.clock)
    if abs(gap) > 12 * 3600:
        return ""
    said = f"{abs(gap):.0f} s {'before' if gap >= 0 else 'after'} the first timeout"
    return f", {said} (by the two logs' clocks, which may disagree between hosts)"


def describe(j: Joined, fired_s: float | None = None) -> str:
    """One record in words, with the join: ``rank 1 (pid 506 on vm) was killed by the kernel's OOM killer at
    2026-11-25 11:37:29 (memory cgroup /ncclcheck_oom at its limit of 4.00 GiB; the process held 3.43 GiB)``."""
    ev = j.event
    who = (rank_phrase(j.ranks) if j.ranks else f"process {ev.pid}" if ev.pid is not None else
           f"pod {ev.pod}" if ev.pod else f"the ranks on {ev.host}" if ev.host else
           "the job" if ev.source == "slurm" else "a process")
    place = [f"pid {ev.pid}"] if ev.pid is not None and j.ranks else []
    if (ev.host or ev.pod) and j.ranks:
        place.append(f"on {ev.pod or ev.host}")
    elif ev.host and ev.pod:
        place.append(f"on {ev.host}")
    if ev.bus and ev.kind != "xid":
        place.append(f"GPU {ev.bus}")
    at = f" at {ev.clock}" if ev.clock else f" {ev.monotonic_s:.0f} s after its host booted" if ev.monotonic_s else ""
    at += _against(ev, fired_s)
    head = who + (f" ({' '.join(place)})" if place else "")
    d = dict(ev.details)
    if ev.kind == "xid" and ev.xid is not None:
        gpu = f"the GPU of {who}" if j.ranks or ev.pid is not None else "the GPU"
        text = f"{gpu} (bus {ev.bus}) reported Xid {ev.xid}{at}: {meaning(ev.xid)}"
    elif ev.source == "kubernetes" and ev.kind == "oom_killed":
        text = f"{head} was OOMKilled (its container's memory limit; Kubernetes: {ev.text}){at}"
    elif ev.source != "kernel":
        text = f"{head} {_WHAT.get(ev.kind, 'was ended')}{at} ({ev.source.capitalize()}: {ev.text})"
    else:
        text = f"{head} {_WHAT.get(ev.kind, 'was ended: ' + ev.text)}{at}"
    if ev.kind == "oom_killed":
        held = f"the process held {_gib(d['anon_rss_kb'])}" if "anon_rss_kb" in d else ""
        if "limit_kb" in d and d.get("scope") == "cgroup":
            limit = f"memory cgroup {d.get('memcg', '')} at its limit of {_gib(d['limit_kb'])}".replace("  ", " ")
            text += f" ({limit}{'; ' + held if held else ''})"
        elif held:
            text += f" (host memory; {held})"
    if ev.kind == "segfault" and "library" in d:
        text += f", in {d['library']}"
    if j.by == "none":
        text += ("; no input says which rank that was (torchrun's console or the ranks' NCCL lines give each "
                 "rank's PID, GPU and host)")
    elif j.by:
        by = {"pid": "PID", "bus": "GPU bus ID", "slurm_task": "the Slurm task its memory cgroup names"}
        text += f"; joined by {by.get(j.by, 'host')}"
    if j.caveat:
        text += f" ({j.caveat})"
    return text


def awaited_rank(d: Diagnosis) -> int | None:
    """The rank whose NCCL id the others waited for (``retrieving ncclUniqueId from [0]``)."""
    return d.store.root if d.store is not None else None


def awaiting_ranks(d: Diagnosis) -> list[int]:
    """The ranks that say they waited for it (``[1] is setting up NCCL communicator``), where no prefix names them."""
    return sorted(set(d.store.waiters)) if d.store is not None else []


def cause(kind: str) -> Cause:
    """A catalogue entry by its kind (for the docs and the tests)."""
    return _BY_KIND[kind]
