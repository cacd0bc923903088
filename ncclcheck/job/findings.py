"""Findings attached to a verdict: size arithmetic, counters, detectors, stacks, and next steps."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ncclcheck.evidence.frdump import C10_BYTES, user_frame
from ncclcheck.evidence.types import ErrorKind, Mismatch
from ncclcheck.findings import Finding, Severity
from ncclcheck.frsettings import export
from ncclcheck.job.channels import transport_finding
from ncclcheck.job.model import Group, Job, MemberSource, Record, VerdictKind, Work
from ncclcheck.ranks import ranges, ranges_of, rank_phrase
from ncclcheck.transfer import DTYPE_BYTES, FABRICS, collective_bytes, human_bytes, human_seconds, transfer_seconds

MAX_NUMEL = 2**63 - 1  # a tensor's element count is an int64

FR_EXPORT = export()
RECORD_NEXT = f"Next time, capture flight-recorder dumps of every rank: {FR_EXPORT}"


def size_finding(w: Work, dtype: str, group: Group | None, model_given: bool = False,
                 network: str | None = None) -> Finding | None:
    """Is the size the cause? Almost never: the arithmetic on four fabrics says so. ``network`` is the transport
    NCCL said it used ("IB", "Socket"): on InfiniBand, the slow Ethernet rows do not apply."""
    stated = w.dtypes[0] if w.dtypes and w.dtypes[0] in C10_BYTES else None  # a dump states it
    item = C10_BYTES[stated] if stated else DTYPE_BYTES.get(dtype, 4)
    nbytes = collective_bytes(w.op, w.numel_in, w.numel_out, item)
    if not nbytes:
        return None
    n = group.size if group is not None and group.size and group.size > 1 else None
    times = [(f.name, transfer_seconds(nbytes, w.op, n, f)) for f in FABRICS]
    slowest = max(t for _, t in times)
    if slowest <= 0:
        return None
    timeout = (w.timeout_ms or 600_000) / 1000
    table = ", ".join(f"{human_seconds(t)} on {name}" for name, t in times)
    ranks = f"{n} ranks" if n else "any number of ranks (upper bound)"
    count = max(c for c in (w.numel_in, w.numel_out) if c is not None)
    if count > MAX_NUMEL:
        return Finding(Severity.WARNING, "impossible-count",
                       f"{w.op or 'The collective'} claims {count:,} elements, more than any tensor can hold "
                       f"({MAX_NUMEL:,}): the line is garbled or the counter corrupt; no size arithmetic on it.",
                       (w.loc,) if w.loc is not None else ())
    how = f"{stated}, as the dump states" if stated else f"{dtype} assumed: the log does not print the dtype"
    msg = (f"{w.op or 'The collective'} of {count:,} element{'' if count == 1 else 's'} is {human_bytes(nbytes)} "
           f"({how}) and takes {table} (bus factor for {ranks}).")
    loc = (w.loc,) if w.loc is not None else ()
    ib = network is not None and network.upper().startswith("IB")
    judged = times[1][1] if ib else slowest  # FABRICS[1] is InfiniBand
    where = "on the InfiniBand NCCL used" if ib else "on the slowest"
    if judged * 10 < timeout:
        ratio = timeout / judged
        times_shorter = f"{ratio:,.0f}x" if ratio < 1e6 else "over a million times"
        msg += (f" Even {where} that is {times_shorter} shorter than the {human_seconds(timeout)} timeout: the "
                "size cannot explain it. A rank never arrived, or the transport hung.")
        advice = "Shrinking the tensor will not help; a longer timeout helps only a rank busy with legitimate work."
        if count == 1:  # barrier() on NCCL is a one-element all_reduce: there is no tensor of the model to name
            msg += " One element is what barrier() issues on NCCL, or a scalar (a loss, a flag): no model tensor."
            return Finding(Severity.INFO, "size-not-the-cause", msg, loc, advice)
        explain = f"ncclcheck explain --numel {w.numel_in or w.numel_out} --config config.json"
        tail = "" if model_given else f" What tensor it is: {explain}"
        return Finding(Severity.INFO, "size-not-the-cause", msg, loc, f"{advice}{tail}")
    return Finding(Severity.WARNING, "size-plausible", msg + " On a slow network the size alone comes close to the "
                   "timeout.", loc, "Check which fabric NCCL used (NCCL_DEBUG=INFO: 'Using network ...').")


# A first collective that never completed with no error and no rank at fault (issue 41, section 3): ProcessGroupNCCL
# counts a group's works from 1 and its last completed work is -1 until one completes (ProcessGroupNCCL.hpp,
# ProcessGroupStatus), so no data ever moved through the group's communicator: the path between the ranks or the
# libraries that drive it, until a run shows otherwise.
FIRST_UNEXPLAINED = (
    " Where no rank failed first, isolate the path, one run each on the same nodes: NCCL_P2P_DISABLE=1 (no GPU "
    "peer-to-peer), NCCL_SHM_DISABLE=1 (no shared memory), NCCL_NET_GDR_LEVEL=0 (no GPUDirect RDMA), NCCL_IB_DISABLE=1 "
    "(sockets instead of InfiniBand/RoCE): the run that completes names the failing path; and nccl-tests' "
    "all_reduce_perf between the same hosts. If it began after an upgrade (a new container image, driver, CUDA or NCCL "
    "release), run the previous release: the driver must support the CUDA the image was built for.")


def counter_findings(records: Sequence[Record], unexplained: bool = False) -> list[Finding]:
    """What the watchdog's own numbers say: a late watchdog, garbage counters, a first collective (``unexplained``:
    no rank failed first and no cause was found, so the first collective's fix isolates the path)."""
    out: list[Finding] = []
    for r in records:
        if r.ran_for_ms and r.timeout_ms and r.ran_for_ms > r.timeout_ms * 1.05:
            late = (r.ran_for_ms - r.timeout_ms) / 1000
            out.append(Finding(Severity.INFO, "watchdog-late",
                               f"Rank {r.who}'s watchdog reported {human_seconds(late)} after the timeout expired: that "
                               "process was itself stalled (busy GIL, blocked CUDA call) while waiting.", (r.loc,)))
            break
    for r in records:
        if r.last_completed is not None and r.last_enqueued is not None and r.last_completed > r.last_enqueued:
            out.append(Finding(Severity.INFO, "garbage-counter",
                               f"Rank {r.who} printed last completed work {r.last_completed}, above last enqueued "
                               f"{r.last_enqueued}: an uninitialised counter, ignored.", (r.loc,)))
            break
    never = [r for r in records if r.last_completed == -1]
    if never:
        out.append(Finding(
            Severity.WARNING, "first-collective",
            f"Nothing ever completed on this process group (last completed work -1 on "
            f"{rank_phrase(r.who for r in never if r.who is not None)}): the hang is on its first collective, which "
            "points at communicator set-up: interfaces, firewall, a rank that never created the group.",
            tuple(r.loc for r in never)[:8], "Run `ncclcheck probe` on every node and compare the results."
            + (FIRST_UNEXPLAINED if unexplained else "")))
    return out


def detector_findings(job: Job) -> list[Finding]:
    """Who noticed first, NCCL's own warnings, the transport it used."""
    out: list[Finding] = []
    d = next((d for d in job.facts.dump_signals if d.from_rank is not None), None)
    if d is not None:
        out.append(Finding(Severity.INFO, "first-detector",
                           f"Rank {d.from_rank} was the first to detect the timeout (dump signal received by rank "
                           f"{d.who.rank}).", (d.loc,)))
    warns = [e for e in job.facts.errors if e.kind in (ErrorKind.NCCL_WARN, ErrorKind.CONNECTION)]
    for e in warns[:3]:
        who = f"Rank {e.who.rank}" if e.who.rank is not None else "A rank the line does not name"
        out.append(Finding(Severity.WARNING, "nccl-warn", f"{who}: {e.message}", (e.loc,)))
    if (paths := transport_finding(job)) is not None:  # the paths the channels took (job/channels.py)
        out.append(paths)
    return out


def report_findings(job: Job) -> list[Finding]:
    """PyTorch's own desync report and the stack of each rank's failed collective."""
    out: list[Finding] = []
    for d in job.facts.desync:
        lag = "; ".join(
            f"{rank_phrase(x.ranks)} "
            + ("never joined any collective" if x.never_joined else
               f"finished #{x.finished} but did not join #{x.did_not_join}" if x.did_not_join is not None else
               f"joined but did not finish #{x.did_not_finish}")
            for x in d.lagging) or "no lagging rank named"
        out.append(Finding(Severity.INFO, "desync-report",
                           f"PyTorch's desync report (rank {d.reporting_rank}, timed out in {d.timeout_collective} "
                           f"#{d.timeout_index}): {lag}. Its # counts differ from SeqNum.", (d.loc,)))
    for f in job.facts.barrier_missing:
        missing = [int(x) for x in f.value.split(",")]
        out.append(Finding(Severity.INFO, "monitored-barrier",
                           f"Rank {f.who.rank}'s monitored_barrier names the rank{'s' if len(missing) > 1 else ''}"
                           f" that never reached it: {rank_phrase(missing)}.", (f.loc,)))
    stacks = {st.who.rank: st for st in job.facts.stacks}
    if stacks:
        where = "; ".join(f"rank {r}: {st.frames[0].name} from {user_frame(st.frames)}" for r, st in
                          sorted(stacks.items()))
        out.append(Finding(Severity.INFO, "collective-stack",
                           f"Where each rank issued its failed collective (PyTorch's stack trace): {where}.",
                           tuple(st.loc for _, st in sorted(stacks.items()))[:8]))
    return out


def membership_findings(job: Job) -> list[Finding]:
    """Say where the inputs do not tell who is in a group, or which dumps are missing, or that the world is only
    stated."""
    out: list[Finding] = []
    if job.unlisted and job.world:
        at = f" as stated by {job.world_at}" if job.world_at is not None else ""
        held = job.world - job.unlisted_count
        out.append(Finding(
            Severity.INFO, "world-as-stated",
            f"World {job.world:,}{at}; these inputs hold {held:,} of its ranks. The other "
            f"{job.unlisted_count:,} (ranks {ranges_of(job.unlisted)}) left no input: unknown, not guilty, and kept "
            "as ranges, not one by one.", (job.world_at,) if job.world_at is not None else (),
            "If the job is not this large, the line is damaged or from another run; otherwise collect the logs of "
            "the ranks the verdict waits for."))
    stuck_groups = {s.stuck.group for s in job.ranks if s.stuck is not None}
    for g in job.groups:
        if g.id in stuck_groups and not g.exact:
            known = f" (known: {ranges(g.members)})" if g.members else ""
            out.append(Finding(
                Severity.WARNING, "members-unknown",
                f"The members of {g.id.label()} are not in these inputs{known}: who its waiters wait for is partly "
                "inferred.", (), "Flight-recorder dumps (pg_config) or TORCH_CPP_LOG_LEVEL=INFO ('initialization "
                "options' lines) name every member."))
        if g.id in stuck_groups and g.source is MemberSource.LAYOUT:
            silent = [m for m in g.members if (s := job.rank(m)) is None or not s.present]
            out.append(Finding(
                Severity.INFO, "members-from-layout",
                f"The members of {g.id.label()}, {ranges(g.members)}, are placed from its size ({g.size}) and the group "
                "ranks its members printed, laid out as the other groups of its kind"
                + (f": {rank_phrase(silent)}, with no input, is a member by its place" if silent else "") + ".", (),
                "Flight-recorder dumps (pg_config) name every member exactly."))
    dumped = {s.rank for s in job.ranks for p in s.positions if p.source == "dump"}
    if dumped:
        expected = {m for g in job.groups if g.exact and not isinstance(g.members, range) for m in g.members}
        missing = sorted(expected - dumped)
        if missing:
            out.append(Finding(Severity.WARNING, "fr-missing-dumps",
                               f"No flight-recorder dump from {rank_phrase(missing)} (the dumps' pg_config lists them): "
                               "their positions come from text logs, or are unknown.", (),
                               "Collect every rank's dump file (TORCH_FR_DUMP_TEMP_FILE prefix followed by the rank)."))
    return out


_FP_FIELD = re.compile(r"(?P<field>OpType|TensorShape|TensorDtypes|SequenceNumber)=(?P<value>\[[^\]]*\]|[^,)]*)")


def fingerprint(text: str) -> str:
    """``CollectiveFingerPrint(...)`` as op, shape and dtype (and sequence number when printed)."""
    fields = {m["field"]: m["value"] for m in _FP_FIELD.finditer(text)}
    if not fields:
        return text[:120]
    parts = [fields.get("OpType", "an unnamed collective"), f"shape {fields['TensorShape']}" if "TensorShape" in fields else "",
             fields.get("TensorDtypes", ""), f"seq {fields['SequenceNumber']}" if "SequenceNumber" in fields else ""]
    return " ".join(p for p in parts if p)


def mismatch_summary(ms: Sequence[Mismatch]) -> tuple[list[int], list[int], str]:
    """TORCH_DISTRIBUTED_DEBUG=DETAIL's reports: each rank's collective, and who differs from the majority."""
    ran: dict[int, str] = {}
    for m in ms:
        ran.setdefault(m.rank_a, fingerprint(m.fingerprint_a))
        if m.rank_b is not None:
            ran.setdefault(m.rank_b, fingerprint(m.fingerprint_b))
    counts: dict[str, int] = {}
    for fp in ran.values():
        counts[fp] = counts.get(fp, 0) + 1
    top = max(counts, key=lambda k: counts[k])
    # Each rank compares its own fingerprint with every rank's and names itself and the first that differs: being
    # named second says nothing. With no majority (two ranks, one report) neither side is shown to be wrong.
    tie = list(counts.values()).count(counts[top]) > 1
    culprit = [] if tie else sorted(r for r, fp in ran.items() if fp != top)
    differ = set(culprit)
    # Every rank named waited at DETAIL's check for the others' fingerprints; with no majority all of them are
    # listed as waiting (as a tie in the dumps is), none as the culprit.
    waiting = sorted(r for r in ran if r not in differ)
    by_fp: dict[str, list[int]] = {}
    for r, fp in ran.items():
        by_fp.setdefault(fp, []).append(r)
    where = "; ".join(f"{rank_phrase(rs)}: {fp}" for fp, rs in by_fp.items())
    said = f"TORCH_DISTRIBUTED_DEBUG=DETAIL found ranks running different collectives: {where}."
    if len(ran) == 1:
        # The wrapper raises only on a difference: one side is enough to know there was one, not which rank differs.
        said += (" The report names no second rank (its line is cut, or the other rank's report is not in these "
                 "inputs): each rank's `Running collective: CollectiveFingerPrint(...)` lines (INFO, under DETAIL) "
                 "show the collective it reached.")
    return culprit, waiting, said


# A collective completes only once every member of its group has called it (NCCL's collectives, and the watchdog
# that times them out in ProcessGroupNCCL): a member that never calls it holds the others as surely as one that died.
SKIPPED_STEP = ("A collective completes only when every member of its group calls it: a missing rank that died, is "
                "still busy elsewhere, or skipped this collective (a rank-dependent branch or an early return, so it "
                "issued fewer collectives than the others) leaves the others waiting in it.")


# Where the heartbeat fired on several ranks alike and no line says when: the groups left to the processes' exit.
EXIT_IF_DONE = ("If it fired once the work was done (after the last step, as the processes exit), the process groups "
                "were left to each process's exit, which tears them down in its own order and can block the other "
                "members: call `torch.distributed.destroy_process_group()` at the end of the program on every rank "
                "(https://pytorch.org/docs/stable/distributed.html#shutdown).")


def next_steps(kind: VerdictKind, culprits: Sequence[int], killed: bool = False,
               missing: Sequence[int] = (), dumped: bool = False, waited: str = "timeouts",
               slow: Sequence[str] = (), detail: bool = False, alone: bool = False) -> tuple[str, ...]:
    """What to do, by verdict kind; ``dumped``: every rank's flight-recorder dump is already in the inputs, so
    advice to capture them next time is left out; ``waited``: what the other ranks printed after the culprit failed
    ("timeouts", "NCCL errors"; empty: nothing, so there is no cascade to speak of); ``slow``: the steps for a
    lagging rank that was only busy (job/slow.py); ``detail``: TORCH_DISTRIBUTED_DEBUG=DETAIL's mismatch report is in
    the inputs, so advice to run with it is left out; ``alone``: the inputs hold no rank but the failed ones and none
    waited, so a timeout, which only the waiting ranks have, is not the user's question."""
    who = rank_phrase(culprits) if culprits else "the culprit rank"
    record_next = () if dumped else (RECORD_NEXT,)
    if kind is VerdictKind.INCOMPLETE:
        whose = rank_phrase(missing) if missing else "every rank of the group (these inputs do not say which)"
        return (f"Collect the logs (or flight-recorder dumps) of {whose} and run again with all of them: the culprit "
                "is among the ranks whose input is missing.",
                *((SKIPPED_STEP,) if missing else ()),
                "With torchrun: `--log-dir DIR --redirects 3 --tee 3` keeps one file per rank (DIR/attempt_0/<rank>/).",
                *record_next)
    if kind is VerdictKind.RANK_FAILED_FIRST:
        steps = [f"Fix the first error on {who}; the other ranks' {waited} are only its cascade." if waited else
                 f"Fix the error on {who}.",
                 *(() if alone else ("Raising the timeout will not help: the failed rank will never arrive.",))]
        if killed:
            steps.insert(0, "A kill by SIGKILL with no traceback is most often the kernel's OOM killer: on that host "
                            "run `dmesg -T | grep -i -E 'killed process|out of memory'` (or check the container's "
                            "memory limit and the job scheduler's log).")
        return (*steps, *record_next)
    if kind is VerdictKind.NCCL_ERROR:
        return ("An NCCL error is not a timeout: a peer went away or the network failed. Find the rank that died "
                "first (its log ends early, or the launcher reports its exit) and the host's kernel log (`dmesg -T`).",
                "Re-run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET and run `ncclcheck probe` on every node.",
                *record_next)
    if kind is VerdictKind.COLLECTIVE_MISMATCH:
        return ("Make every rank issue the same collectives in the same order: look for collectives inside "
                "rank-dependent branches (if rank == 0, early exits, uneven batches per rank, eval/logging/"
                "checkpoint code).",
                *(() if detail else ("Reproduce with TORCH_DISTRIBUTED_DEBUG=DETAIL: the mismatch becomes an immediate "
                                     "error that names both collectives.",)), *record_next)
    if kind is VerdictKind.LAGGING_RANK and slow:
        return (*slow, *record_next)
    if kind is VerdictKind.LAGGING_RANK:
        # The most common reason is work one rank does alone (job/lonework.py): spread it, or time that phase longer.
        return (f"Look at what {who} did instead of joining, most often work the others skip (evaluation, a "
                "checkpoint save, end-of-epoch tests, tokenising), a slow data loader, uneven data or a crash whose log "
                "is missing: `ncclcheck snapshot` on its node shows its stack while it hangs. If it was working, spread "
                "that work over every rank or give that phase a longer timeout (`init_process_group(timeout=...)`, or "
                "`new_group(timeout=...)`); if it died, no timeout helps.",
                *record_next)
    if kind is VerdictKind.ALL_RANKS_STUCK:
        return ("If every rank waits in several groups at once, first make sure each rank issues the groups' "
                "collectives in the same order (the dumps' order shows it); otherwise suspect the transport.",
                "Every rank waits in the same collective: suspect the transport. Run NCCL's own test on the same "
                "GPUs (all_reduce_perf from nccl-tests) or `torchrun -m ncclcheck.bench`.",
                "Re-run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_DEBUG_FILE=/tmp/nccl.%h.%p.log and check "
                "the interfaces NCCL picked; run `ncclcheck probe` on every node.",
                "Try NCCL_P2P_DISABLE=1 or NCCL_IB_DISABLE=1 once, only to bisect a hardware path.", *record_next)
    if kind is VerdictKind.DEADLOCK:
        return ("Issue the collectives of every process group in the same order on every rank: a rank-dependent "
                "branch, or a loop over groups whose order differs between ranks, lets two ranks each wait for a "
                "collective the other has queued behind its own.",
                "Raising the timeout will not help: no rank can make progress.", *record_next)
    if kind is VerdictKind.SETUP_FAILURE:
        return ("This failed while NCCL set up its communicators, before any collective ran: no timeout or "
                "flight-recorder dump applies, and raising the timeout changes nothing. The fix is a setting or the "
                "host.",)
    if kind is VerdictKind.LAUNCHER_FAILURE:
        steps = ["The launcher (torchrun's agents and their rendezvous store) failed or was stopped, not a "
                 "collective: no rank in these inputs is the culprit."]
        if missing:
            steps.append(f"Collect the logs of {rank_phrase(missing)} (their nodes' torchrun output and "
                         "`dmesg -T`): what happened there is not in these inputs.")
        steps.append("Keep every node's agent output next time: `torchrun --log-dir DIR --redirects 3 --tee 3` and "
                     "the launcher's own stderr.")
        return tuple(steps)
    if kind is VerdictKind.WATCHDOG_STUCK:
        own = ("The watchdog thread itself stopped making progress: a CUDA call or the GIL is blocked. Dump the "
               "stacks of the stuck process (`py-spy dump --native --pid <pid>`).",
               "Check `nvidia-smi` and `dmesg` for Xid errors on that host.")
        if culprits:  # one rank's own process blocked
            return own
        # Stuck alike on several ranks (job/rules.py): ProcessGroupNCCL's destructor warns of one such block (2.4+): a
        # process that exits with its groups alive can block the other members' progress (ProcessGroupNCCL.cpp).
        return (*own, EXIT_IF_DONE)
    return ()
