"""The reason the job stated itself, in the verdict: where no cause of the catalogue explains a failure better, the
report quotes the most specific line the job wrote about it (job/reasons.py ranks them) and says what it means.

A report never says that nothing failed while a rank wrote an error of a known source, nor that NCCL failed without
saying why while NCCL (or CUDA under it) said why. job/rules.py calls :func:`restate` once its own rules and the
catalogue have decided.
"""

from __future__ import annotations

from collections.abc import Sequence

from ncclcheck.job.behind import behind
from ncclcheck.job.causes import NO_REASON, SYSTEM_ERROR, Diagnosis, cause, one_line
from ncclcheck.job.model import EndKind, Job, VerdictKind
from ncclcheck.job.phrases import cap
from ncclcheck.job.reasons import FAILED, SAYS_WHY, Stated, ranked
from ncclcheck.job.statements import explained
from ncclcheck.ranks import rank_phrase

# The cause a stated line is, where it is quoted as the cause (job/catalogue/stated_reason.toml).
STATED = cause("stated_reason")


def best(job: Job, culprits: Sequence[int] = (), cause: Diagnosis | None = None) -> Stated | None:
    """The line the report quotes: the best of the job's stated lines, one the cause quotes first where it quotes
    one."""
    at = set(cause.locs) if cause is not None else set()
    # A logged error record (evidence/formats/loglevel.py) is quoted where the verdict stands on it alone: beside a
    # failure the rules read, it may be a launcher's record of that failure, not the program's reason.
    # An error line of no source's form (evidence/formats/unread.py) is quoted only where the cause is that line.
    lines = ranked([x for x in job.facts.stated if x.source in FAILED and (x.source != "logged" or x.loc in at)
                    or x.source == "unread" and x.loc in at], culprits)
    return next((x for x in lines if x.loc in at), lines[0] if lines else None)


def _diagnosis(line: Stated, lines: Sequence[Stated]) -> Diagnosis:
    same = [x for x in lines if x.source == line.source and x.text == line.text]
    ranks = tuple(sorted({x.rank for x in same if x.rank is not None}))
    locs = tuple(dict.fromkeys(x.loc for x in (line, *same)))[:8]
    said = explained(line.text, line.file)
    if said is not None and said.cause:  # a line of a layer the catalogue has a cause for is that cause, with its fix
        return Diagnosis(cause(said.cause), ranks, line.text, line.loc, locs,
                         f"{line.label}: {line.text}; {line.meaning}", line.clock_s)
    return Diagnosis(STATED, ranks, line.text, line.loc, locs, f"{line.label}: {line.text}; {line.meaning}",
                     line.clock_s, said)


# The verdicts that say something failed but not why (or, NO_FAILURE and the quiet INCOMPLETE, that nothing did).
# A lagging rank is among them: the others waited for it, and its own line may say why it never arrived.
_UNEXPLAINED = {VerdictKind.NO_FAILURE, VerdictKind.INCOMPLETE, VerdictKind.RANK_FAILED_FIRST, VerdictKind.NCCL_ERROR,
                VerdictKind.ALL_RANKS_STUCK, VerdictKind.SETUP_FAILURE, VerdictKind.LAGGING_RANK}


def restate(job: Job, kind: VerdictKind, culprits: list[int], summary: str, cause: Diagnosis | None,
            hung: bool) -> tuple[VerdictKind, list[int], str, Diagnosis | None]:
    """The verdict with the job's own stated reason where nothing better explains the failure (:func:`_restate`),
    and the verdict kind its line implies: a rank that failed first (or NCCL's failure) on a line whose mechanism is
    the communicator's set-up (job/statements.toml: an entry's ``kind``) is a set-up failure, whatever rank wrote it."""
    kind, culprits, summary, cause = _restate(job, kind, culprits, summary, cause, hung)
    said = cause.said if cause is not None and cause.cause is STATED else None
    if kind in (VerdictKind.RANK_FAILED_FIRST, VerdictKind.NCCL_ERROR) and said is not None and said.kind:
        kind = VerdictKind(said.kind)
        if said.host or said.waiter:  # the host's driver stack failed the process (job/statements.toml's `host`), or
            culprits = []             # the line's process waited for others that never came (`waiter`): no culprit
    return kind, culprits, summary, cause


def _restate(job: Job, kind: VerdictKind, culprits: list[int], summary: str, cause: Diagnosis | None,
             hung: bool) -> tuple[VerdictKind, list[int], str, Diagnosis | None]:
    """The verdict with the job's own stated reason where nothing better explains the failure.

    * Nothing failed, by the rules (``no_failure``, or ``incomplete_evidence`` with no rank stuck), yet a rank wrote an
      error of a known source: that rank failed first, as its line states.
    * The catalogue's cause is that NCCL failed without saying why, yet NCCL (or CUDA under it) said why: the cause is
      the line that says it.
    * A failure named without a cause: its line is added where the summary does not quote it already.
    """
    lines = [x for x in job.facts.stated if x.source in FAILED]
    why = [x for x in ranked(lines, cause.ranks) if x.source in SAYS_WHY] if cause is not None else []
    if cause is not None and cause.cause in (NO_REASON, SYSTEM_ERROR) and why:
        said = why[0]
        whose = f"{rank_phrase(cause.ranks).capitalize()}'s NCCL" if cause.ranks else "NCCL"
        return (kind, culprits, f"{whose} failed: {one_line(cause.text)} ({cause.loc}), and {said.label} says why: "
                f'"{said.text}" ({said.loc}), that is {said.meaning}.', _diagnosis(said, lines))
    if kind not in _UNEXPLAINED:
        return kind, culprits, summary, cause
    quiet = kind is VerdictKind.NO_FAILURE or (kind is VerdictKind.INCOMPLETE and not hung)
    if quiet and not lines:
        timed = _timed_out(job, kind, culprits, summary, cause)
        down = [x for x in job.facts.stated if x.source == "watchdog"]
        return _torn_down(down, cause) if timed[0] is VerdictKind.NO_FAILURE and down else timed
    if quiet:
        first = ranked(lines)[0]
        who = [first.rank] if first.rank is not None else []
        launch = first.source == "runner"  # the launcher's own line: no process of the job wrote it
        whom = (f"Rank {first.rank} failed" if first.rank is not None else
                "The launch failed" if launch else "A process failed")
        tail = "" if first.rank is not None or launch else \
            " The line names no rank; a [rankN]: prefix or the per-rank logs would."
        # A cause of the catalogue the rules found stays the cause: its line explains better than the line alone.
        return (VerdictKind.RANK_FAILED_FIRST, who, f"{whom}, as its own line states: {first.quoted()}.{tail}",
                cause if cause is not None else _diagnosis(first, lines))
    if cause is not None or not lines:
        return kind, culprits, summary, cause
    # The culprits' own line (anyone's where none is named) that says more than an error code or an exception.
    says = [x for x in ranked(lines, culprits) if x.tier <= 3 or explained(x.text, x.file) is not None]
    own = [x for x in says if not culprits or x.rank in culprits]
    if not own and culprits and {r.rank for r in job.ranks} <= set(culprits):
        # the culprits wrote none, and they are every rank the inputs know (one task, a line under a host's prefix):
        # a line that names no process is theirs
        own = [x for x in says if x.rank is None]
    if not own and culprits and kind is VerdictKind.RANK_FAILED_FIRST and not any(x.rank is not None for x in says) \
            and len({x.text for x in says}) == 1 \
            and all((s := job.rank(c)) is None or s.first_error is None for c in culprits):
        # a rank failed first with no error line of its own (a launcher's exit status alone), no line names its
        # process, and every one says the same (torchrun's console without --tee, where an error raised before
        # init_process_group set the [rankN]: prefix is printed bare by each worker): the culprit's line is that one
        own = says
    if not own and len(culprits) == 1 and _self_aborted(job, culprits[0]):
        # glibc's abort names no process: the launcher's report of the culprit's SIGABRT placed it (job/build.py)
        own = [x for x in says if x.rank is None and x.source == "glibc"]
    line = own[0] if own else None
    if line is None or line.text in summary and explained(line.text, line.file) is None:
        return kind, culprits, summary, cause
    if line.text in summary:  # quoted already: the cause is its mechanism (job/statements.toml), with its fix
        return kind, culprits, summary, _diagnosis(line, lines)
    return kind, culprits, f"{summary} {cap(line.label)} says why: \"{line.text}\" ({line.loc}), that is " \
                           f"{line.meaning}.", _diagnosis(line, lines)


def _self_aborted(job: Job, rank: int) -> bool:
    """Whether the rank ended by a SIGABRT of its own process (glibc's check before it: job/build.py), not the
    watchdog's abort: the one ending that is an exception carrying a signal."""
    return any(s.rank == rank and s.ending.kind is EndKind.EXCEPTION and s.ending.signal == "SIGABRT"
               for s in job.ranks)


def _torn_down(down: Sequence[Stated], cause: Diagnosis | None) -> tuple[VerdictKind, list[int], str, Diagnosis]:
    """Nothing but PyTorch's watchdog taking a process down (its "Some NCCL operations have failed or timed out"):
    NCCL failed as it ran, and no line says which collective or why. The rank that printed it is not named a culprit:
    a peer's failure ends every rank's collectives the same way."""
    first = ranked(down)[0]
    ranks = tuple(sorted({x.rank for x in down if x.rank is not None}))
    who = f" ({rank_phrase(ranks)})" if ranks else ""
    found = cause if cause is not None else Diagnosis(
        NO_REASON, ranks, first.text, first.loc, tuple(x.loc for x in down)[:8],
        f"{first.label}: {first.text}", first.clock_s, explained(first.text, first.file))
    return (VerdictKind.NCCL_ERROR, [], f"NCCL failed, as {first.label} states{who}: \"{first.text}\" ({first.loc}), "
            f"that is {first.meaning}.", found)


def _timed_out(job: Job, kind: VerdictKind, culprits: list[int], summary: str,
               cause: Diagnosis | None) -> tuple[VerdictKind, list[int], str, Diagnosis | None]:
    """A collective timeout whose line places no rank of the job (its rank within a sub-group only, as the watchdog's
    ``what():`` names it): a rank timed out, so something failed, but the inputs hold nothing of the others."""
    # A line with no sequence number (a paste that elides it, the watchdog's C++ frames) times out all the same where
    # it says so: a bare ``WorkNCCL(...)`` with neither number nor timeout words is only a mention (a quote, a note).
    placed = [r for r in job.records if r.global_rank is None and kind is VerdictKind.NO_FAILURE
              and (r.seq is not None or set(r.evidence) - {"work_mention"})]
    if not placed:
        return kind, culprits, summary, cause
    r = placed[0]
    group = r.pg.label() if r.pg is not None and (r.pg.id is not None or r.pg.guid) else "its group"
    who = (f"rank {r.rank} of {group} (its rank within that group: no line gives its rank in the job)"
           if r.rank is not None else "a rank no line names")
    ran = f" for {r.ran_for_ms:,} ms" if r.ran_for_ms is not None else ""
    limit = f" against a timeout of {r.timeout_ms:,} ms" if r.timeout_ms is not None else ""
    number = f" #{r.seq}" if r.seq is not None else ""
    said = (f"A collective timed out, as its own line states: {who} waited{ran} in {r.op_type or 'a collective'}"
            f"{number}{limit} ({r.loc}).")
    if late := behind(job, r):
        ranks = [b.rank for b in late]
        return (VerdictKind.LAGGING_RANK, ranks, f"{said} The ranks' own counters say who it waited for: "
                f"{'; '.join(b.words(r.seq) for b in late)}. So {rank_phrase(ranks)} had not issued the "
                f"{r.op_type or 'collective'} the timed-out rank waited in: behind, the rank the others waited for.",
                cause)
    return (VerdictKind.INCOMPLETE, [], f"{said} These inputs hold no line of the ranks it waited for: give every "
            "rank's log (or its flight-recorder dump) to name them.", cause)

