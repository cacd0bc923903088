"""The job model on real 4-GPU incidents (torch 2.11, NCCL 2.28.9, 4 x H200; tools/incident_groups.py).

The 4 ranks form a 2 x 2 mesh (tp {0,1} {2,3}, dp {0,2} {1,3}; the two dp groups share PG ID 2 and differ
in their GUID), or a 4-stage pipeline.  Each incident is read four ways: torchrun's console (``--tee``),
its per-rank log directory, the flight-recorder dumps alone, and everything together.  The expected
verdict, chain, groups and edges are in tests/data/expected4/ (reviewed by hand); the table below states
the ground truth of each scenario independently of those files.
"""

from __future__ import annotations

import importlib.util
import json
import time

import pytest
from conftest import DATA, REAL, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.job.model import EdgeReason, EndKind, VerdictKind
from ncclcheck.ranks import compact, ranges, rank_phrase
from ncclcheck.render.json_out import analysis_json

REAL4 = DATA / "real4"
EXPECTED4 = DATA / "expected4"
LAYOUTS = ("console.log", "attempt_0", "dumps", "")
CASES = [(s.name, layout) for s in sorted(REAL4.iterdir()) for layout in LAYOUTS
         if layout == "" or (s / layout).exists()]


def golden(a) -> dict:
    v = a.verdict
    return {
        "verdict": {"kind": v.kind.value, "culprit_ranks": list(v.culprit_ranks), "waiting_ranks": list(v.waiting_ranks),
                    "unknown_ranks": list(v.unknown_ranks), "pg": None if v.pg is None else [v.pg.id, v.pg.guid],
                    "seq": v.seq, "chain": list(v.chain)},
        "roots": list(a.job.roots),
        "groups": [[g.id.id, g.id.guid, g.id.desc, list(g.members), g.source.value] for g in a.job.groups],
        "endings": {str(s.rank): s.ending.kind.value for s in a.job.ranks},
        "edges": sorted([e.waiter, e.target, e.reason.value, e.work.group.guid, e.work.seq] for e in a.job.edges),
    }


@pytest.mark.parametrize(("scenario", "layout"), CASES)
def test_real_incident_golden(scenario, layout, monkeypatch):
    """Verdict, chain, groups, endings and edges equal the reviewed golden JSON exactly."""
    monkeypatch.chdir(REAL4)
    got = golden(run(f"{scenario}/{layout}" if layout else scenario))
    expected = json.loads((EXPECTED4 / f"{scenario}.{layout or 'all'}.json").read_text())
    assert got == expected


# (scenario, layout) -> (verdict kind, culprit ranks): what the scenario did, stated by hand.
TRUTH = {
    ("tp_straggler", ""): ("lagging_rank", [3]),
    ("tp_straggler", "console.log"): ("lagging_rank", [3]),
    ("tp_straggler", "attempt_0"): ("lagging_rank", [3]),
    ("tp_straggler", "dumps"): ("lagging_rank", [3]),
    ("tp_straggler_info", "console.log"): ("lagging_rank", [3]),
    ("pp_recv", "dumps"): ("lagging_rank", [1]),
    ("pp_recv", ""): ("lagging_rank", [1]),
    ("clean_exit", ""): ("collective_mismatch", [1]),  # it exited 0 while the others waited: fewer collectives
    # rank 1 exited and left no dump: the others' dumps say whom they waited for, nothing of what it did (unknown)
    ("clean_exit", "dumps"): ("incomplete_evidence", []),
    ("exception", ""): ("rank_failed_first", [1]),
    ("killed", ""): ("rank_failed_first", [2]),
    ("net_killed", ""): ("rank_failed_first", [2]),
    ("detail", ""): ("collective_mismatch", [2]),
    ("uneven_ddp", ""): ("collective_mismatch", [3]),
    ("uneven_ddp", "attempt_0"): ("collective_mismatch", [3]),
    ("uneven_fsdp", ""): ("collective_mismatch", [3]),
}


@pytest.mark.parametrize(("scenario", "layout"), sorted(TRUTH))
def test_real_incident_names_the_rank_that_misbehaved(scenario, layout):
    a = run(REAL4 / scenario / layout)
    assert (a.verdict.kind.value, list(a.verdict.culprit_ranks)) == TRUTH[(scenario, layout)]


def test_the_chain_crosses_groups():
    """Rank 0 waits in dp for rank 2, which is itself stuck in tp waiting for rank 3: the root."""
    a = run(REAL4 / "tp_straggler" / "dumps")
    edges = {(e.waiter, e.target): e for e in a.job.edges}
    assert edges[(0, 2)].reason is EdgeReason.BLOCKED_ELSEWHERE and edges[(0, 2)].work.group.desc == "dp"
    assert edges[(2, 3)].reason is EdgeReason.NOT_REACHED and edges[(2, 3)].work.group.desc == "tp"
    assert edges[(1, 3)].reason is EdgeReason.NOT_REACHED
    assert a.job.roots == (3,)
    assert a.verdict.chain[-1] == "All 3 other ranks are only waiting."


def test_groups_that_share_an_id_stay_apart():
    """Both dp groups print PG ID 2; their GUIDs tell them apart, and the dumps give their members."""
    a = run(REAL4 / "tp_straggler" / "dumps")
    dp = sorted((g.members, g.id.guid) for g in a.job.groups if g.id.id == "2")
    assert [m for m, _ in dp] == [(0, 2), (1, 3)]
    assert dp[0][1] != dp[1][1]


def test_global_and_group_ranks_are_kept_apart():
    """Rank 2 is rank 0 of its tp group and rank 1 of its dp group; it timed out in both."""
    a = run(REAL4 / "tp_straggler" / "console.log")
    s = a.job.rank(2)
    assert s.ending.kind is EndKind.TIMED_OUT
    assert sorted((p.group.id, p.group_rank) for p in s.positions if p.stuck) == [("1", 0), ("2", 1)]
    # The two timeouts started within a millisecond of each other; the dump's issue order settles it: tp first.
    assert run(REAL4 / "tp_straggler" / "dumps").job.rank(2).stuck.numel_in == 4096


def test_p2p_waits_for_its_one_peer():
    a = run(REAL4 / "pp_recv" / "dumps")
    edges = {(e.waiter, e.target): e.reason for e in a.job.edges}
    assert edges == {(2, 1): EdgeReason.P2P_PEER, (3, 2): EdgeReason.BLOCKED_ELSEWHERE}


def test_nccl_error_is_not_a_timeout():
    """Ranks that saw 'remote process exited' have an NCCL error, never a timeout; the killed rank is the root."""
    a = run(REAL4 / "net_killed")
    assert {s.rank: s.ending.kind for s in a.job.ranks if s.rank in (0, 3)} == {0: EndKind.NCCL_ERROR,
                                                                              3: EndKind.NCCL_ERROR}
    assert "waited until" not in a.verdict.summary and "timed out" not in a.verdict.summary
    assert a.job.rank(2).ending.kind is EndKind.KILLED
    assert any("dmesg" in step for step in a.verdict.next_steps)


def test_detail_mismatch_is_summarised():
    a = run(REAL4 / "detail" / "console.log")
    assert a.verdict.summary == ("TORCH_DISTRIBUTED_DEBUG=DETAIL found ranks running different collectives: "
                                 "ranks 0-1, 3: ALLREDUCE shape [8] Float seq 3; rank 2: ALLREDUCE shape [16] Float "
                                 "seq 3.")


@pytest.mark.parametrize(("path", "culprits", "waiting"), [
    ("detail/console.log", (2,), (0, 1, 3)),
    ("detail/attempt_0/2/stderr.log", (), (0, 2)),  # rank 2's report names itself and rank 0: no majority
])
def test_detail_report_lists_its_ranks_and_is_not_advised_again(path, culprits, waiting):
    """DETAIL's report names the ranks it compared and has already told different calls from different settings:
    every rank it names is listed, and neither running with DETAIL nor aligning NCCL settings is advised."""
    v = run(REAL4 / path).verdict
    assert (v.kind.value, v.culprit_ranks, v.waiting_ranks) == ("collective_mismatch", culprits, waiting)
    assert v.next_steps[0].startswith("Make every rank issue the same collectives in the same order")
    assert not any("TORCH_DISTRIBUTED_DEBUG" in s or "NCCL_PROTO" in s for s in v.next_steps), v.next_steps


def test_one_log_of_four_names_no_culprit(tmp_path):
    """One rank's log: what it establishes, and which ranks are unknown rather than guilty."""
    log = REAL4 / "tp_straggler" / "attempt_0" / "1" / "stderr.log"
    a = run(log)
    v = a.verdict
    assert (v.kind.value, v.culprit_ranks, v.waiting_ranks) == ("incomplete_evidence", (), (1,))
    assert "waited for 15.1 s in ALLREDUCE NumelIn=1,048,576 (#4" in v.summary
    assert "after completing #3" in v.summary
    assert any(f.code == "size-not-the-cause" for f in v.findings)
    assert "Collect the logs" in v.next_steps[0]


def test_one_log_of_the_eight_rank_example():
    """The usage line's case: rank6.log alone names ranks 0-5 and 7 unknown, not culprits."""
    a = run(DATA.parent.parent / "examples" / "incident-8rank" / "rank6.log")
    v = a.verdict
    assert (v.kind.value, v.culprit_ranks, v.unknown_ranks) == ("incomplete_evidence", (), (0, 1, 2, 3, 4, 5, 7))
    assert v.next_steps[0].startswith("Collect the logs (or flight-recorder dumps) of ranks 0-5, 7")


def test_missing_dumps_are_named_not_blamed(tmp_path):
    """Dumps of ranks 0-2 only: every waiter waits for rank 3, which left nothing; it is named as the one waited
    for and the log to bring, not blamed: it is unknown (job/absent.py)."""
    for r in (0, 1, 2):
        (tmp_path / f"nccl_trace_rank_{r}").write_bytes((REAL4 / "tp_straggler" / "dumps" /
                                                         f"nccl_trace_rank_{r}").read_bytes())
    a = run(tmp_path)
    assert a.verdict.kind is VerdictKind.INCOMPLETE
    assert a.verdict.culprit_ranks == () and a.verdict.unknown_ranks == (3,)
    assert "the one they waited for is rank 3, and rank 3 left nothing in these inputs" in a.verdict.summary
    assert a.verdict.next_steps[0].startswith("Bring rank 3's log")
    assert any(f.code == "fr-missing-dumps" and "rank 3" in f.message for f in a.verdict.findings)


def test_a_4096_rank_job_fits_on_one_screen(tmp_path, monkeypatch):
    """One straggler in a 8 x 512 mesh: at most 40 lines at 120 columns; the JSON folds the ranks into classes and
    keeps every rank with --per-rank. The three runs of the command render one analysis of the 4.8 MB console (its
    reading is most of a run's time, and each would read the same file alike): the first run makes it."""
    import ncclcheck.job.analyze

    made: list = []
    real = ncclcheck.job.analyze.analyze

    def once(*args, **kwargs):
        if not made:
            made.append(real(*args, **kwargs))
        return made[0]

    monkeypatch.setattr(ncclcheck.job.analyze, "analyze", once)
    spec = importlib.util.spec_from_file_location("synth_job", DATA.parent.parent / "tools" / "synth_job.py")
    synth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synth)
    log = tmp_path / "console.log"
    synth.write(str(log), tp=8, dp=512, straggler=517, step=40)
    runner = CliRunner()
    r = runner.invoke(app, ["analyze-log", str(log)], env={"COLUMNS": "120"}, catch_exceptions=False)
    assert r.exit_code == 1
    assert len(r.stdout.splitlines()) <= 40, r.stdout
    assert "culprit rank(s): 517" in r.stdout
    r = runner.invoke(app, ["analyze-log", str(log), "--json"], catch_exceptions=False)
    j = json.loads(r.stdout)
    assert j["verdict"]["culprit_ranks"] == [517] and len(j["verdict"]["waiting_ranks"]) == 4095
    assert [(c["ranks"], c["ending"]["kind"]) for c in j["job"]["ranks"]] == [
        ("0-511, 520-4095", "timed_out"), ("512-516, 518-519", "timed_out"), ("517", "silent")]
    assert j["job"]["roots"] == [517] and len(r.stdout) < 100 * 4096
    r = runner.invoke(app, ["analyze-log", str(log), "--json", "--per-rank"], catch_exceptions=False)
    assert len(json.loads(r.stdout)["per_rank"]["ranks"]) == 4096
    assert len(made) == 1 and len(made[0].job.ranks) == 4096  # the three runs rendered the one analysis


def test_rank_sets_print_as_ranges():
    assert ranges([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"
    assert ranges(list(range(0, 512, 8)) + list(range(520, 4096, 8))) == "0-504 by 8, 520-4088 by 8"
    assert ranges([]) == "none"
    assert compact(set(range(4096)) - {517}, 4096) == "all but 517"
    assert rank_phrase(set(range(1024)) - {517}, 1024, [517]) == "all 1023 other ranks"
    assert rank_phrase([3]) == "rank 3"


def test_mixed_collectives_in_one_console_do_not_crash(write):
    """A combined log whose ranks ran different collectives, one of them in a one-rank group: no traceback."""
    p = write("mixed.log",
              "[rank0]:[E1122 10:00:00.0 ProcessGroupNCCL.cpp:1] [Rank 0] Watchdog caught collective operation "
              "timeout: WorkNCCL(SeqNum=3, OpType=_ALLGATHER_BASE, NumelIn=8, NumelOut=8, Timeout(ms)=1000) ran for "
              "1001 milliseconds before timing out.",
              "[rank1]:[E1122 10:00:00.0 ProcessGroupNCCL.cpp:1] [Rank 1] Watchdog caught collective operation "
              "timeout: WorkNCCL(SeqNum=3, OpType=BROADCAST, NumelIn=0, NumelOut=0, Timeout(ms)=1000) ran for "
              "1001 milliseconds before timing out.")
    t = time.perf_counter()
    a = run(p)
    assert time.perf_counter() - t < 30
    assert a.verdict.kind.value == "collective_mismatch"


def test_a_restart_appending_to_the_same_log_is_a_separate_run(tmp_path):
    """Two runs in one file: the last is analysed, the earlier mentioned, never a mismatch of a rank with itself."""
    first = (REAL / "sleep" / "attempt_0" / "0" / "stderr.log").read_text()
    second = (first.replace("SeqNum=4", "SeqNum=7").replace("sequence id: 4", "sequence id: 7")
              .replace("enqueued work: 4", "enqueued work: 7").replace("completed work: 3", "completed work: 6"))
    log = tmp_path / "rank0.log"
    log.write_text(first + second)
    a = run(log, REAL / "sleep" / "attempt_0" / "1" / "stderr.log")
    assert (a.verdict.kind.value, a.verdict.culprit_ranks, a.verdict.seq) == ("lagging_rank", (1,), 7)
    note = next(f for f in a.verdict.findings if f.code == "earlier-runs")
    # No start marker (init lines need TORCH_CPP_LOG_LEVEL=INFO): the run starts after the first run's last evidence.
    assert "the last run, from line 28, is analysed" in note.message
    assert "rank 0 ALLREDUCE #4" in note.message


def test_torchrun_attempts_are_separate_runs(tmp_path):
    """attempt_0 and attempt_1 of one log directory: the latest attempt is the incident."""
    import shutil

    shutil.copytree(REAL / "sleep" / "attempt_0", tmp_path / "run" / "attempt_0")
    shutil.copytree(REAL4 / "uneven_ddp" / "attempt_0", tmp_path / "run" / "attempt_1")
    a = run(tmp_path / "run")
    assert (a.verdict.kind.value, a.verdict.culprit_ranks) == ("collective_mismatch", (3,))
    earlier = [f for f in a.verdict.findings if f.code == "earlier-attempt"]
    assert len(earlier) == 1 and earlier[0].message.startswith("Attempt 0 of 2 (an earlier attempt: torchrun "
                                                                "restarted the workers after it) ended in lagging_rank")
    assert (a.attempt, a.attempt_count) == (1, 2)


_OPS = ("ALLREDUCE", "_ALLGATHER_BASE", "_REDUCE_SCATTER_BASE", "BROADCAST", "SEND", "RECV", "ALLTOALL_BASE")


@st.composite
def _job_lines(draw):
    """Watchdog, status, async-error and init lines of random ranks, groups, numbers and sizes."""
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        g = draw(st.integers(0, 5))
        pg = draw(st.sampled_from([f"[PG ID {g} PG GUID {g}{'(default_pg)' if g == 0 else ''}", f"[PG ID {g} PG GUID "
                                   f"{'ab' * g}", f"[PG {g}"]))
        r, gr = draw(st.integers(0, 9)), draw(st.integers(-1, 9))
        seq, numel = draw(st.integers(-1, 50)), draw(st.integers(0, 2**40))
        op = draw(st.sampled_from(_OPS))
        kind = draw(st.sampled_from(["timeout", "status", "async", "init", "signal"]))
        prefix = draw(st.sampled_from([f"[rank{r}]:", ""]))
        if kind == "timeout":
            lines.append(f"{prefix}[E1122 10:00:{seq % 60:02d}.0 X.cpp:1] [Rank {gr}] Watchdog caught collective "
                         f"operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut="
                         f"{draw(st.integers(0, 2**40))}, Timeout(ms)={draw(st.integers(0, 10**7))}) ran for "
                         f"{draw(st.integers(0, 10**7))} milliseconds before timing out.")
        elif kind == "status":
            lines.append(f"{prefix}[E1122 10:00:00.0 X.cpp:1] {pg} Rank {gr}]  failure detected by watchdog at work "
                         f"sequence id: {seq} PG status: last enqueued work: {draw(st.integers(-1, 60))}, last "
                         f"completed work: {draw(st.integers(-1, 60))}")
        elif kind == "async":
            lines.append(f"{prefix}[E1122 10:00:00.0 X.cpp:1] [Rank {gr}] Collective WorkNCCL(SeqNum={seq}, OpType="
                         f"{op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) raised the following async "
                         "exception: NCCL error: remote process exited or there was a network error")
        elif kind == "init":
            lines.append(f"{prefix}[I1122 10:00:00.0 X.cpp:1] {pg} Rank {gr}] ProcessGroupNCCL initialization "
                         f"options: size: {draw(st.integers(0, 12))}, global rank: {r}, TIMEOUT(ms): 600000")
        else:
            lines.append(f"{prefix}[E1122 10:00:00.0 X.cpp:1] {pg} Rank {gr}] Received a dump signal due to a "
                         f"collective timeout from  rank {draw(st.integers(0, 9))} and we will try our best to dump "
                         f"the debug info. Last enqueued NCCL work: {seq}, last completed NCCL work: "
                         f"{draw(st.integers(-1, 60))}.")
    return lines


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_job_lines())
def test_any_mix_of_evidence_gives_a_verdict_and_never_a_traceback(tmp_path, lines):
    """Whatever ranks, groups and numbers the lines carry, the model builds, and culprits are ranks it knows."""
    p = tmp_path / "mixed.log"
    p.write_text("\n".join(lines) + "\n")
    a = run(p)
    known = {s.rank for s in a.job.ranks}
    assert set(a.verdict.culprit_ranks) <= known and set(a.verdict.waiting_ranks) <= known
    assert not set(a.verdict.culprit_ranks) & set(a.verdict.waiting_ranks)
    json.dumps(analysis_json(a))


def test_live_stacks_name_the_rank_in_host_code():
    """A snapshot: ranks 0-1 inside all_reduce, rank 2 sleeping in its own code: rank 2 is the root, with its line."""
    from ncclcheck.evidence.frdump import Frame
    from ncclcheck.evidence.types import FileScan, LiveStack, LiveThread, Loc
    from ncclcheck.job.records import merge_records
    from ncclcheck.job.verdict import decide

    def stack(rank, frames, collective):
        thread = LiveThread("MainThread", tuple(Frame(*f) for f in frames))
        live = LiveStack(rank, 1000 + rank, "node1", (thread,), collective, 0 if collective is None else 100,
                         Loc(f"snapshot/rank{rank}.json", 0))
        return FileScan(f"snapshot/rank{rank}.json", rank, 0, 0, (rank,), live=(live,))

    waiting = [("all_reduce", "/x/torch/distributed/distributed_c10d.py", 2800), ("step", "train.py", 52)]
    scans = [stack(0, waiting, "all_reduce"), stack(1, waiting, "all_reduce"),
             stack(2, [("sleep", "<built-in>", 0), ("load_batch", "train.py", 47)], None)]
    a = decide(scans, merge_records(scans))
    assert (a.verdict.kind.value, a.verdict.culprit_ranks, a.verdict.waiting_ranks) == ("lagging_rank", (2,), (0, 1))
    assert a.verdict.summary == ("Rank 2 is in host code at train.py:47 (load_batch), inside sleep, GPU idle; ranks 0-1 "
                                 "wait in all_reduce (train.py:52 (step)).")


def test_an_impossible_element_count_is_called_so(write):
    p = write("rank0.log", "[rank0]:[E1122 10:00:00.0 X.cpp:1] [Rank 0] Watchdog caught collective operation timeout: "
                           "WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=99999999999999999999, NumelOut=8, "
                           "Timeout(ms)=1000) ran for 1001 milliseconds before timing out.")
    codes = [f.code for f in run(p).verdict.findings]
    assert "impossible-count" in codes and "size-plausible" not in codes


def test_on_infiniband_the_slow_ethernet_rows_do_not_make_the_size_plausible(tmp_path):
    """8 GB all-reduced against a 60 s timeout: 14.5 s on 10 GbE would come close, but NCCL said it used IB
    (0.35 s there), so the size is not the cause; without that line the slow network is still named."""
    line = ("[rank0]:[E1122 00:31:17.418552033 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=2000000000, NumelOut=2000000000, Timeout(ms)=60000) "
            "ran for 60031 milliseconds before timing out.\n")
    ib = tmp_path / "ib" / "rank0.log"
    ib.parent.mkdir()
    ib.write_text("host:123:456 [0] NCCL INFO Using network IB\n" + line)
    codes = [f.code for f in run(ib).verdict.findings]
    assert "size-not-the-cause" in codes and "size-plausible" not in codes
    assert "on the InfiniBand NCCL used" in next(f.message for f in run(ib).verdict.findings
                                                   if f.code == "size-not-the-cause")
    plain = tmp_path / "plain" / "rank0.log"
    plain.parent.mkdir()
    plain.write_text(line)
    assert "size-plausible" in [f.code for f in run(plain).verdict.findings]


def test_the_verdicts_collective_is_in_a_group_the_culprit_belongs_to(monkeypatch):
    """tp_straggler: rank 0 waits in dp group {0, 2} (GUID 1f107ed8) for rank 2, which waits in tp for rank 3; the
    verdict names the dp group {1, 3} (GUID 498e0e03) where rank 3 never issued #4, not a group rank 3 is not in."""
    monkeypatch.chdir(REAL4)
    a = run("tp_straggler")
    assert a.verdict.culprit_ranks == (3,)
    group = next(g for g in a.job.groups if g.id.guid == a.verdict.pg.guid)
    assert (a.verdict.pg.guid[:8], a.verdict.seq) == ("498e0e03", 4) and 3 in group.members
