"""What the verdict reads of the inputs besides ranks, groups and the wait-for graph, read once into the model.

Some lines belong to no rank's state but still decide or word a verdict: the heartbeat monitor and the exit warnings
before it, DETAIL's mismatch reports, torchrun's failure summary and its restarts, the program's own "work done"
lines, an error line that names no rank, which ranks left a dump, where each rank ran and the peers NCCL lost, the
hosts' and the scheduler's records, the lines that show a rank was only busy and the framework the job used. They
are gathered here when the job is built (``Job.facts``), so that the verdict decides from the job model alone and
never walks the scans.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from ncclcheck.evidence.formats.deepspeed import KILLING_FACT
from ncclcheck.evidence.formats.pgstart import BARRIER_DONE, BARRIER_FACT
from ncclcheck.evidence.reader import HEAD
from ncclcheck.evidence.tables import as_fact, rows_with
from ncclcheck.evidence.types import Clue, ErrorKind, Fact, FileScan, Loc, Mismatch, RankError
from ncclcheck.job.ending import END_KEYS, LAUNCHED, RAN, consoles, read_consoles
from ncclcheck.job.hosts import join_events, peers_lost, rank_hosts
from ncclcheck.job.lostnode import lost_nodes
from ncclcheck.job.model import Job, JobFacts, RunSign, TextInput, TraceInput
from ncclcheck.job.netpath import KEYS as NET_KEYS
from ncclcheck.job.reasons import FAILED, source_of, stated_lines
from ncclcheck.job.returntrace import read_chains, read_test_checks
from ncclcheck.job.slow import busy_lines, framework
from ncclcheck.job.versions import is_setting, read_versions

_FP_SEQ = re.compile(r"SequenceNumber=(?P<seq>\d+)")


def with_facts(job: Job, scans: Sequence[FileScan]) -> Job:
    """The job with the facts of its inputs."""
    return replace(job, facts=read_facts(scans))


# The facts read_facts keeps by their key, each list in the scans' order: one walk over every fact (two a rank at
# 100,000 ranks), not one a key (issue 42). Both accelerate keys go to one list, in the order they were printed; the
# program's ends to one, which holds the work_done lines too. The names in _PER_INPUT are kept by input: the set-up
# stall's facts (job/stall.py), the network's (job/netpath.py), the collective trace's (job/colltrace.py). A setting's
# line (a variable NCCL or ProcessGroupNCCL printed, its name the key: job/versions.py) goes to "settings", with NCCL
# DIAG's comparison of one.
_KEPT = {"network": ("network", "net"), "work_done": ("work_done", "program_ends"),
         "collective_call": ("collective_call",), "progress": ("progress", "stall"), "progress_rise": ("progress_rise",),
         "pipeline": ("pipeline",), "accelerate_device": ("devices",), "accelerate_process": ("devices",),
         "nccl_api_call": ("nccl_api_call",), KILLING_FACT: ("launcher_kills",), "nccl_frame": ("nccl_frames",),
         "nccl_call_check": ("nccl_call_checks",), "nccl_comm_check": ("nccl_comm_checks",),
         "program_end": ("program_ends",), "nccl_end": ("program_ends", "stall"), "p2p_call": ("p2p_calls",),
         "lightning_world": ("lightning_starts",), "error_file": ("error_files",), "trials_failed": ("trials_failed",),
         BARRIER_FACT: ("barrier_waits",), BARRIER_DONE: ("barriers_done",), "deepspeed_local_only": ("local_only",),
         "wrapper_call": ("wrapper_calls",), "nccl_ready": ("nccl_ready", "stall"), "count": ("counts",),
         "native_frame": ("native_frames",), "python_frame": ("python_frames",), "raised": ("raises",),
         "monitored_barrier_missing": ("barrier_missing",), "setup": ("stall",), "nccl_via": ("stall",),
         **{k: ("net",) for k in NET_KEYS if k != "network"}, "nccl_coll": ("nccl_coll",), "nccl_comm": ("nccl_comm",),
         "nccl_diag_setting": ("settings",), "nccl_version": ("nccl_versions",)}
# a variable kept by its name for another list (job/netpath.py's NCCL_NET) is a setting too; the endings (job/ending.py):
# the facts that show an input's end, a launcher's mark of its console, the signs that the job launched or ran
_KEPT = {k: (*v, "settings") if is_setting(k) else v for k, v in _KEPT.items()}
for _key, _name in ((LAUNCHED, "launched"), *((k, "ends") for k in END_KEYS), *((k, "ran") for k in RAN)):
    _KEPT[_key] = (*_KEPT.get(_key, ()), _name)
_PER_INPUT = frozenset({"stall", "net", "nccl_coll", "nccl_comm", "launched", "ends", "ran"})


def _wanted(key: str) -> bool:
    """A key :func:`_kept` keeps."""
    return key in _KEPT or ("NCCL_" in key and is_setting(key))


def _kept(scans: Sequence[FileScan]) -> tuple[dict[str, list[Fact]], dict[str, list[int]]]:
    """The kept facts by name, in the scans' order, and for the names in _PER_INPUT each fact's input (its index in
    ``scans``): numbers, not a list an input, so that 100,000 inputs add no objects for the collector to walk."""
    kept: dict[str, list[Fact]] = {}
    at: dict[str, list[int]] = {}
    get = _KEPT.get
    settings = kept.setdefault("settings", [])
    for i, s in enumerate(scans):
        for f in rows_with(s.facts, "key", _wanted):  # a table's rows (evidence/tables.py); a kept one as its object
            if (names := get(key := f.key)) is not None:
                kept_f = as_fact(f)
                for name in names:
                    kept.setdefault(name, []).append(kept_f)
                    if name in _PER_INPUT:
                        at.setdefault(name, []).append(i)
            elif "NCCL_" in key and is_setting(key):
                settings.append(as_fact(f))
    return kept, at


def _by_input(kept: dict[str, list[Fact]], at: dict[str, list[int]], name: str) -> dict[int, list[Fact]]:
    """The facts kept under ``name``, by input."""
    out: dict[int, list[Fact]] = {}
    for i, f in zip(at.get(name, ()), kept.get(name, ()), strict=True):
        out.setdefault(i, []).append(f)
    return out


def _texts(scans: Sequence[FileScan], kept: dict[str, list[Fact]], at: dict[str, list[int]]) -> tuple[TextInput, ...]:
    """The inputs of text lines that hold a set-up mark, each with its set-up stall's facts (job/stall.py: an input
    without one stops nowhere in the set-up)."""
    stall = _by_input(kept, at, "stall")
    return tuple(TextInput(scans[i].lines, tuple(facts)) for i, facts in stall.items()
                 if scans[i].lines and any(f.key == "setup" for f in facts))


def _states(s: FileScan) -> bool:
    """Whether an input holds any rank's state: a dump, works, statuses, endings, stacks, a live snapshot, dump
    events, heartbeats."""
    return bool(s.dump is not None or s.works or s.statuses or s.endings or s.stacks or s.live or s.dump_events
                or s.heartbeats)


def read_facts(scans: Sequence[FileScan]) -> JobFacts:
    """Every fact the verdict needs beyond the ranks' states, from the scans in their order."""
    kept, at = _kept(scans)
    traces = _by_input(kept, at, "nccl_coll")
    comms = _by_input(kept, at, "nccl_comm")
    network = kept.get("network")
    launched, ended = read_consoles(scans, _by_input(kept, at, "launched"), frozenset(at.get("ends", ())))
    ran = tuple(zip(at.get("ran", ()), kept.get("ran", ()), strict=True))
    return JobFacts(
        network=network[0].value if network else None,
        heartbeats=tuple(h for s in scans for h in s.heartbeats),
        exit_teardown=tuple(exit_teardown(scans)),
        work_done=tuple(kept.get("work_done", ())),
        mismatches=tuple(m for s in scans for m in s.mismatches),
        elastic=tuple(f for s in scans for f in s.elastic),
        unnamed_failures=tuple(e for s in scans for e in s.errors if e.who.rank is None and is_failure(e)),
        relaunches=tuple(c for s in scans for c in s.clues
                         if c.kind == "launcher" and "will restart worker group" in c.text),
        dumped=frozenset(s.dump.rank for s in scans if s.dump is not None),
        detail_seq=detail_seq(scans),
        hosts=rank_hosts(scans),
        peers_lost=tuple(peers_lost(scans)),
        host_records=tuple(join_events(scans)),
        busy=busy_lines(scans),
        framework=framework(scans),
        stated=stated_lines(scans),
        versions=read_versions(scans),
        lost_nodes=lost_nodes(scans),
        calls=tuple(kept.get("collective_call", ())),
        consoles=consoles(launched),
        launched=launched,
        ended=ended,
        ran=tuple(RunSign(f, scans[i].lines, scans[i].dump is not None) for i, f in ran),
        ran_ends=tuple(Loc(scans[i].file, scans[i].lines) for i in dict.fromkeys(i for i, _ in ran)),
        reported_late=reported_late(scans),
        progress=tuple(kept.get("progress", ())),
        rises=tuple(kept.get("progress_rise", ())),
        pipeline=tuple(kept.get("pipeline", ())),
        devices=tuple(kept.get("devices", ())),
        returns=read_chains(scans),
        test_checks=read_test_checks(scans),
        api_calls=tuple(kept.get("nccl_api_call", ())),
        errors=tuple(e for s in scans for e in s.errors),
        launcher_kills=tuple(kept.get("launcher_kills", ())),
        nccl_frames=tuple(kept.get("nccl_frames", ())),
        nccl_call_checks=tuple(kept.get("nccl_call_checks", ())),
        nccl_comm_checks=tuple(kept.get("nccl_comm_checks", ())),
        program_ends=tuple(kept.get("program_ends", ())),
        p2p_calls=tuple(kept.get("p2p_calls", ())),
        lightning_starts=tuple(kept.get("lightning_starts", ())),
        error_files=tuple(kept.get("error_files", ())),
        trials_failed=tuple(kept.get("trials_failed", ())),
        barrier_waits=tuple(kept.get("barrier_waits", ())),
        barriers_done=frozenset(f.value for f in kept.get("barriers_done", ())),
        local_only=tuple(kept.get("local_only", ())),
        wrapper_calls=tuple(kept.get("wrapper_calls", ())),
        nccl_ready=tuple(kept.get("nccl_ready", ())),
        counts=tuple(kept.get("counts", ())),
        native_frames=tuple(kept.get("native_frames", ())),
        python_frames=tuple(kept.get("python_frames", ())),
        raises=tuple(kept.get("raises", ())),
        desync=tuple(d for s in scans for d in s.desync),
        unranked_stacks=tuple(u for s in scans for u in s.unranked),
        barrier_missing=tuple(kept.get("barrier_missing", ())),
        stacks=tuple(st for s in scans for st in s.stacks if st.who.rank is not None and st.frames),
        dump_signals=tuple(d for s in scans for d in s.dump_signals),
        networks=tuple(network or ()),
        # a connection line is read in an input's head only (job/channels.py): from inputs the head holds whole
        via_whole=tuple(f for i, f in zip(at.get("stall", ()), kept.get("stall", ()), strict=True)
                        if f.key == "nccl_via" and scans[i].bytes_read <= HEAD),
        text_inputs=sum(1 for s in scans if s.lines),
        text_states=any(_states(s) for s in scans if s.lines),
        texts=_texts(scans, kept, at),
        net_facts=tuple((scans[i].file, f) for i, f in zip(at.get("net", ()), kept.get("net", ()), strict=True)),
        traces=tuple(TraceInput(scans[i].file, tuple(calls), tuple(comms.get(i, ()))) for i, calls in traces.items()),
        events=_events(scans),
        nccl_versions=tuple(kept.get("nccl_versions", ())),
        timeouts=any(s.works or s.statuses for s in scans),
        settings=tuple(kept["settings"]),
    )


def _events(scans: Sequence[FileScan]) -> tuple[RankError | Clue | Mismatch, ...]:
    """Every error line, clue and DETAIL mismatch report, input by input: its errors, then its clues, then its reports
    (the order the catalogue reads them in: job/causes.py)."""
    out: list[RankError | Clue | Mismatch] = []
    for s in scans:
        out += s.errors
        out += s.clues
        out += s.mismatches
    return tuple(out)


def exit_teardown(scans: Sequence[FileScan]) -> list[Fact]:
    """ProcessGroupNCCL's exit warnings printed before a heartbeat failure (in its file, or by its rank): the
    watchdog fired while the groups were torn down at the interpreter's exit, not during the job's work."""
    last: dict[str, int] = {}  # each file's last heartbeat line
    ranks: set[int | None] = set()
    for s in scans:
        for h in s.heartbeats:
            last[h.loc.file] = max(h.loc.line, last.get(h.loc.file, h.loc.line))
            ranks.add(h.who.rank)
    return [as_fact(f) for s in scans for f in rows_with(s.facts, "key", "exit_without_destroy".__eq__)
                   if f.key == "exit_without_destroy" and (
        f.loc.line < last.get(f.loc.file, f.loc.line) or (f.who.rank is not None and f.who.rank in ranks))]


def detail_seq(scans: Sequence[FileScan]) -> int | None:
    """The sequence number TORCH_DISTRIBUTED_DEBUG=DETAIL's fingerprints name, when they all name the same."""
    seqs = {int(m["seq"]) for s in scans for x in s.mismatches for fp in (x.fingerprint_a, x.fingerprint_b)
            if (m := _FP_SEQ.search(fp))}
    return seqs.pop() if len(seqs) == 1 else None


def is_failure(e: RankError) -> bool:
    """An error line that says something failed: any exception, NCCL or CUDA error, lost connection, or an NCCL WARN
    but those NCCL printed for what was no failure (job/reasons.py)."""
    return e.kind is not ErrorKind.NCCL_WARN or source_of(e) in FAILED


def reported_late(scans: Sequence[FileScan]) -> frozenset[int]:
    """The ranks another rank's report names as not joining the collective: PyTorch's desync report's ranks that
    "didn't join" it or "never joined any collectives" (not those that "joined but didn't finish": they are in it),
    and the ranks monitored_barrier says never reached it."""
    late = {r for s in scans for d in s.desync for x in d.lagging if x.never_joined or x.did_not_join is not None
            for r in x.ranks}
    late |= {int(r) for s in scans for f in rows_with(s.facts, "key", "monitored_barrier_missing".__eq__)
             if f.key == "monitored_barrier_missing"
             for r in f.value.split(",") if r.isdigit()}
    return frozenset(late)
