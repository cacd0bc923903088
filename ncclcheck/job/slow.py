"""A slow rank is not a dead one: what a lagging rank was busy with, and the fixes that fit it.

"Raising the timeout will not help" is true of a rank that died or will never arrive. A rank that was only busy
with legitimate work of its own longer than the timeout (evaluation or validation on the main process only, a
checkpoint saved by rank 0, the dataset tokenised before the first collective, a first-step compile) would have
arrived: there the fixes are to spread or move that work, or to give that phase a longer timeout. The rank's own
last line tells the two apart (a progress bar, "Evaluating", "Saving checkpoint", "Running tokenizer"), with no
error and no fatal signal after it. Each framework sets the timeout its own way, so the fix is said in the
framework the log shows.

A loop's count that rose after the others timed out says the same of its process whatever the loop is: the ranks
that timed out were held in the collective until their watchdog took them down, so the process whose progress went
on was working, alive, while they waited. In a console whose lines name no rank, that process is the one member that
waited nowhere. The count must rise: a bar drawn again at the count it showed (tqdm's ``close()`` with ``leave=True``
redraws it as its process unwinds) says nothing of work. (A waiter that unwinds out of a bar of its own, on a gloo
timeout's exception, may redraw it at a count that throttled redraws had not shown; an NCCL watchdog's timeout ends
its process without unwinding Python, by ``std::terminate`` or ``abort``, and a waiter blocked in a collective after
its loop draws no bar.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ncclcheck.evidence.formats.busy import busy_phase
from ncclcheck.evidence.tables import as_fact, rows_with
from ncclcheck.evidence.types import Fact, FileScan, Loc
from ncclcheck.job.model import EndKind, Job, VerdictKind, Work
from ncclcheck.job.phrases import place
from ncclcheck.ranks import rank_phrase
from ncclcheck.transfer import human_seconds

# The order in which a framework's own setting wins: the HF Trainer passes its ddp_timeout to Accelerate and to
# DeepSpeed, so a Trainer job is fixed through the Trainer.
_PRECEDENCE = ("hf_trainer", "lightning", "deepspeed", "accelerate")
FRAMEWORK_NAMES = {"hf_trainer": "the Hugging Face Trainer", "lightning": "Lightning", "deepspeed": "DeepSpeed",
                   "accelerate": "Accelerate", "torch": "plain PyTorch"}
_LONGER = {
    "hf_trainer": "`TrainingArguments(ddp_timeout=7200)` (`--ddp_timeout 7200`; seconds, default 1800)",
    "lightning": "`Trainer(strategy=DDPStrategy(timeout=datetime.timedelta(hours=2)))`",
    "deepspeed": "`deepspeed.init_distributed(timeout=datetime.timedelta(hours=2))`",
    "accelerate": "`Accelerator(kwargs_handlers=[InitProcessGroupKwargs(timeout=datetime.timedelta(hours=2))])`",
    "torch": "`dist.init_process_group(backend, timeout=datetime.timedelta(hours=2))`, or a group of its own for "
             "that phase: `dist.new_group(timeout=...)`",
}
_PHASE = {"eval": "evaluation", "save": "checkpoint saving", "preprocess": "dataset preprocessing",
          "compile": "compiling", "loop": "a loop of its own"}
_SPREAD = {
    "eval": "Evaluate on every rank (a DistributedSampler over the eval set, the metrics reduced with all_reduce) "
            "instead of on one rank alone (usually rank 0) while the others go on to the next collective.",
    "save": "Save from every rank at once with the distributed checkpoint API (`torch.distributed.checkpoint.save`, "
            "each rank its own shard, or `async_save` to overlap the writing with training), instead of one rank "
            "(usually rank 0) writing while the others wait; where every rank already writes its own shard, find "
            "why this rank's write is the slow one (its storage, its shard's size).",
    "preprocess": "Tokenise and preprocess the dataset once before launching (a separate script, `dataset.map(...)` "
                  "then `save_to_disk`, or a warm cache), so no rank does it while the others wait in a barrier: "
                  "under `main_process_first` (the HF Trainer's) or `torch_distributed_zero_first` (YOLO's) the main "
                  "process builds it while the others wait in a barrier the timeout bounds, so build it once where "
                  "every rank finds it.",
    "compile": "Warm the compile cache before the timed run (the same job once, or TORCHINDUCTOR_CACHE_DIR on shared "
               "storage), so the first step does not compile on one rank while the others wait.",
    "loop": "Find the loop that rank ran alone (its progress line's description; most often evaluation, validation or "
            "a metric pass on the main process) and run it on every rank, each its share (a DistributedSampler, the "
            "results reduced with all_reduce), or where no collective waits for it, instead of on one rank while the "
            "others go on to the next collective.",
}


@dataclass(frozen=True)
class Busy:
    """A lagging rank's last line about legitimate work of its own."""

    rank: int | None  # None: a line no prefix names (a console of one node's processes, without [rankN]:)
    phase: str  # eval, save, preprocess, compile
    line: str
    loc: Loc
    framework: str  # hf_trainer, lightning, deepspeed, accelerate, torch
    framework_loc: Loc | None
    timeout_ms: int | None
    placed: bool = False  # the line names no rank: it is the culprit's as the one member that waited nowhere
    named_by: str = ""  # the line names no rank: why it is this rank's all the same, in words (job/storewait.py)
    rose: str = ""  # the count before, where a loop's count rose after the first timeout (:func:`progressed`)
    timed_out: int = 0  # that timeout's line in the same file

    def words(self) -> str:
        """``Rank 0 was busy, not dead: its last line is "Evaluating: 40%|…" (file:58), evaluation on it alone…``"""
        over = f" outlasted the {human_seconds(self.timeout_ms / 1000)} timeout" if self.timeout_ms else \
            " outlasted the timeout"
        if self.rose:
            return (f"Rank {self.rank} was busy, not dead: a loop's progress that names no rank went on counting "
                    f"after the others had timed out (its count was {self.rose}, then {self.line} at {self.loc}, after "
                    f"the first timeout at line {self.timed_out}): that process was "
                    "alive and working while the ranks that name themselves were held in the collective, and rank "
                    f"{self.rank} is the one member that waited nowhere; {_PHASE[self.phase]} on that rank alone{over} "
                    "while the others waited.")
        if self.named_by:
            return (f"Rank {self.rank} was busy, not dead: \"{self.line}\" ({self.loc}) names no rank, but "
                    f"{self.named_by}; {_PHASE[self.phase]} on that rank alone{over} while the others waited.")
        if self.placed:
            return (f"Rank {self.rank} was busy, not dead: \"{self.line}\" ({self.loc}) names no rank, but the ranks "
                    "that name themselves were waiting in the collective, and rank "
                    f"{self.rank} is the one member that waited nowhere (frameworks draw progress on the main process "
                    f"alone); {_PHASE[self.phase]} on that rank alone{over} while the others waited.")
        if self.rank is None:
            return (f"A process was busy: \"{self.line}\" ({self.loc}) names no rank, and frameworks draw progress "
                    "bars on the main process (rank 0) only. If that is the rank the others waited for, it was busy, "
                    f"not dead: {_PHASE[self.phase]} on that rank alone{over} while the others waited.")
        return (f"Rank {self.rank} was busy, not dead: its last line is \"{self.line}\" ({self.loc}), with no error or "
                f"fatal signal after it; {_PHASE[self.phase]} on that rank alone{over} while the others waited.")


def framework(scans: Sequence[FileScan]) -> tuple[str, Loc | None]:
    """The framework the job's lines show (its tracebacks' paths, its own lines), else plain PyTorch."""
    seen = {f.value: f.loc for s in scans for f in rows_with(s.facts, "key", "framework".__eq__)
            if f.key == "framework"}
    name = next((n for n in _PRECEDENCE if n in seen), "torch")
    return name, seen.get(name)


def busy_lines(scans: Sequence[FileScan]) -> tuple[tuple[bool, Fact], ...]:
    """Every rank's last busy lines, each with whether it was read from a console (a file of no rank)."""
    return tuple((s.path_rank is None, as_fact(f)) for s in scans for f in rows_with(s.facts, "key", "busy".__eq__)
                 if f.key == "busy")


def busy_rank(lines: Sequence[tuple[bool, Fact]], used: tuple[str, Loc | None], rank: int | None,
              timeout_ms: int | None) -> Busy | None:
    """What ``rank`` was busy with, from its last such line (its own file's before a console's); ``None``: a
    line that names no rank. ``lines``: :func:`busy_lines`; ``used``: the job's :func:`framework`."""
    mine = [(console, f) for console, f in lines if f.who.rank == rank]
    if not mine:
        return None
    _, f = min(mine, key=lambda x: x[0])
    phase = busy_phase(f.value)
    if phase is None:
        return None
    name, loc = used
    return Busy(rank, phase, f.value, f.loc, name, loc, timeout_ms)


def placed_busy(lines: Sequence[tuple[bool, Fact]], used: tuple[str, Loc | None], rank: int,
                timeout_ms: int | None) -> Busy | None:
    """The busy line that names no rank, as ``rank``'s: the caller has found ``rank`` the one member of the group
    that waited nowhere and left no input of its own, so the process that printed work while the others waited in
    the collective is that one."""
    b = busy_rank(lines, used, None, timeout_ms)
    return None if b is None else replace(b, rank=rank, placed=True)


def first_timeouts(job: Job) -> dict[str, int]:
    """Each file's first line of a timed-out work."""
    first: dict[str, int] = {}
    for s in job.ranks:
        w = s.stuck
        if w is not None and w.loc is not None:
            first[w.loc.file] = min(w.loc.line, first.get(w.loc.file, w.loc.line))
    return first


def _count(value: str) -> tuple[int, int]:
    """A progress fact's count and total (``label: i/n``)."""
    i, _, n = value.rpartition(": ")[2].partition("/")
    return int(i), int(n)


def progressed(job: Job) -> tuple[Fact, Fact, int] | None:
    """A loop of a process that names no rank whose count rose after the first timeout of its file: its latest
    progress fact, where its count rose (valued with the count before) and the first timeout's line. A rise after the
    launcher restarted the workers (torchrun's "will restart worker group") is another attempt's."""
    if not job.facts.rises:
        return None  # nothing rose: no walk over every rank for the files' first timeouts
    first = first_timeouts(job)
    latest = {(f.loc.file, f.value.rsplit(": ", 1)[0]): f for f in job.facts.progress if f.who.rank is None}
    for r in job.facts.rises:
        f = latest.get((r.loc.file, r.value.rsplit(": ", 1)[0]))
        if r.who.rank is not None or f is None or r.loc.file not in first or r.loc.line <= first[r.loc.file]:
            continue
        if any(c.loc.file == r.loc.file and first[r.loc.file] < c.loc.line < r.loc.line for c in job.facts.relaunches):
            continue
        (was, total), (now, now_total) = _count(r.value), _count(f.value)
        if total == now_total and now > was:
            return f, r, first[r.loc.file]
    return None


def progress_busy(job: Job, rank: int, used: tuple[str, Loc | None], timeout_ms: int | None) -> Busy | None:
    """The loop whose count rose after the others timed out (:func:`progressed`), as ``rank``'s: the caller has found
    ``rank`` the one member of the group that waited nowhere and left no input of its own."""
    seen = progressed(job)
    if seen is None:
        return None
    f, rise, timed_out = seen
    loop, _, count = f.value.rpartition(": ")
    name, loc = used
    return Busy(rank, busy_phase(loop) or "loop", count, f.loc, name, loc, timeout_ms, placed=True,
                rose=rise.value.rpartition(": ")[2], timed_out=timed_out)


# Endings of a lagging rank that say nothing of what it did: no input, a log that just stops, or the launcher's stop
# after the others failed. Its busy line says it; the words "never arrived" or "left nothing" would not be true.
_UNSEEN_AT_WORK = (EndKind.UNKNOWN, EndKind.SILENT, EndKind.ABORTED)


def busy_member(job: Job, kind: VerdictKind, culprits: Sequence[int], summary: str, primary: Work | None,
                lines: Sequence[tuple[bool, Fact]], used: tuple[str, Loc | None]) -> tuple[Busy, str] | None:
    """The one lagging member whose ending says nothing of what it did (no input, a log that stops, the launcher's
    stop), as busy: from its own last busy line, or from a line that names no rank where it says a process was doing
    work while the others waited (a console without rank prefixes, where the frameworks' progress is the main
    process's): that process is the member that waited nowhere. The rule's words "left nothing" or "never arrived"
    are then untrue: the summary says instead that it is the one member with no timeout of its own."""
    if kind is not VerdictKind.LAGGING_RANK or len(culprits) != 1 or primary is None:
        return None
    s = job.rank(culprits[0])
    if s is None or s.ending.kind not in _UNSEEN_AT_WORK:
        return None
    b = busy_rank(lines, used, culprits[0], primary.timeout_ms) or placed_busy(lines, used, culprits[0],
                                                                              primary.timeout_ms) \
        or progress_busy(job, culprits[0], used, primary.timeout_ms)
    if b is None:
        return None
    if s.ending.kind is EndKind.ABORTED:
        return b, summary  # "still running when the launcher stopped it": true of a busy rank too
    waiting = [r.rank for r in job.ranks if r.stuck is not None]
    limit = f" until the {human_seconds(primary.timeout_ms / 1000)} timeout" if primary.timeout_ms else ""
    return b, (f"{rank_phrase(waiting, job.world, culprits).capitalize()} waited{limit} in {place(primary)}; the trail "
               f"of who waits for whom ends at rank {culprits[0]}, the one member of the group with no timeout of its "
               "own.")


def _default(timeout_ms: int | None) -> str:
    """Whose default the timeout is, where it is one; any other was set by the job or its framework."""
    if timeout_ms == 600_000:
        return " 10 min is PyTorch's default for NCCL."
    if timeout_ms == 1_800_000:
        return " 30 min is the default of the HF Trainer's ddp_timeout, DeepSpeed, Lightning and gloo."
    if timeout_ms:
        return (f" {human_seconds(timeout_ms / 1000)} is no default (PyTorch's are 10 min for NCCL and 30 min for "
                "gloo): the job or its framework set it; raise it where it is set.")
    return ""


def slow_steps(b: Busy) -> tuple[str, ...]:
    """Both fixes, in the user's framework: spread or move the work; or a longer timeout for that phase."""
    via = FRAMEWORK_NAMES[b.framework] + (f", by {b.framework_loc}" if b.framework_loc is not None else "")
    who = f"Rank {b.rank}" if b.rank is not None else "A rank that was only busy"
    return (f"{who} would have arrived: raising the timeout does help here, as does moving the work. "
            f"{_SPREAD[b.phase]}",
            f"Or give that phase a longer timeout ({via}): {_LONGER[b.framework]}.{_default(b.timeout_ms)}",
            "If it should not take that long, profile that rank while it works (`py-spy dump --pid <pid>`).")


def longer_timeout(name: str) -> str:
    """How the framework ``name`` (:func:`framework`) sets a longer timeout, as the user writes it."""
    return _LONGER[name]
