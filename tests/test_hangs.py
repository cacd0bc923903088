"""How a hang happened, in words that are true: deadlocks across groups, send/receive pairs, ties.

Real incidents from tools/make_incidents_failures.sh on 2 x H200 (torch 2.11, NCCL 2.28.9), read as the
torchrun console, the per-rank logs and the flight-recorder dumps.
"""

from __future__ import annotations

import json
import re

import pytest
from analysed import analysed
from conftest import DATA, run
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.job.model import EndKind, VerdictKind

F = DATA / "failures"
runner = CliRunner()


@pytest.mark.parametrize("name", ["order_cycle", "order_cycle3", "order_cycle_info", "live_cycle"])
@pytest.mark.parametrize("way", ["dumps", ""])
def test_opposite_order_is_a_deadlock_from_dumps(name, way):
    """Dumps order each rank's works: the ring is named as a deadlock, with no culprit and both ranks in it."""
    v = run(F / name / way).verdict
    assert (v.kind, v.culprit_ranks, v.cycle, v.waiting_ranks) == (VerdictKind.DEADLOCK, (), (0, 1), (0, 1))
    assert "diverged" not in v.summary and "No single rank is the culprit" in v.summary
    assert any("same order on every rank" in s for s in v.next_steps)


def test_deadlock_sentence():
    v = run(F / "order_cycle" / "dumps").verdict
    assert v.summary == (
        "Deadlock across process groups: rank 0 runs PG 1 (dp) #2 (ALLREDUCE 1,048,576 Float) and waits there for "
        "rank 1; rank 1 runs PG 2 (cp) #2 (ALLREDUCE 786,432 Float) and waits there for rank 0. They issued the "
        "groups in different orders (rank 0: dp #2, then cp #2; rank 1: cp #2, then dp #2, all from "
        "incident_failures.py:81). No single rank is the culprit: every one of ranks 0-1 waits for another.")


@pytest.mark.parametrize("path", ["order_cycle3/console.log", "order_cycle3/torchrun", "order_cycle_info/console.log",
                                  "order_cycle/console.log", "order_cycle/torchrun"])
def test_text_cannot_tell_the_order(path):
    """Text logs order timeouts by the watchdog's polls: both explanations are given, no rank is blamed."""
    v = run(F / path).verdict
    assert (v.kind, v.culprit_ranks, v.cycle) == (VerdictKind.ALL_RANKS_STUCK, (), ())
    assert "Either the ranks issued these groups in different orders" in v.summary
    assert "flight-recorder dumps or a live snapshot do" in v.summary
    assert "not in these inputs (" not in v.summary  # both ranks of the job are there


@pytest.mark.parametrize("way", ["dumps", ""])
def test_send_and_receive_disagree(way):
    """Rank 0 sent 1,000 elements and completed; rank 1 waits to receive 1,024: both sides named, neither blamed."""
    v = run(F / "p2p_count" / way).verdict
    assert (v.kind, v.culprit_ranks) == (VerdictKind.COLLECTIVE_MISMATCH, ())
    assert v.summary == ("Rank 1 waits in recv of 1,024 elements from rank 0 (p2p #1) of PG 0 (default); rank 0's "
                         "matching send (p2p #1, completed) is 1,000 elements of Float, this recv is 1,024 elements of "
                         "Float: the two sides disagree.")


@pytest.mark.parametrize("path", ["p2p_count/dumps", "p2p_count/console.log", "pp_recv"])
def test_p2p_and_collective_counters_apart(path):
    """A send or receive is numbered 'p2p #N'; a collective '#N' never stands for it."""
    base = DATA / "real4" if path == "pp_recv" else F
    v = run(base / path).verdict
    text = " ".join((v.summary, *v.chain))
    assert "p2p #" in text
    assert not re.search(r"(?<!p2p )#\d+ \((?:recv|send)", text)


@pytest.mark.parametrize("way", ["dumps", "console.log", "torchrun"])
def test_uneven_all_gather_is_a_disagreement(way):
    """4,096 vs 4,000 elements on two ranks: no majority, nothing singles one out, so no culprit."""
    v = run(F / "uneven_gather" / way).verdict
    assert (v.kind, v.culprit_ranks) == (VerdictKind.COLLECTIVE_MISMATCH, ())
    assert "4,096" in v.summary and "4,000" in v.summary and "the ranks disagree" in v.summary


def test_rank0_only_collective_named_with_its_reason():
    """The dumps show #1 was the same 1,048,576-element all_reduce on both: rank 0's 1-element #2 broke it."""
    v = run(F / "rank0_only" / "dumps").verdict
    assert (v.kind, v.culprit_ranks) == (VerdictKind.COLLECTIVE_MISMATCH, (0,))
    assert "Rank 0 broke the pattern: every rank ran ALLREDUCE 1,048,576 Float at #1" in v.summary
    text = run(F / "rank0_only" / "console.log").verdict  # no earlier step in text: no reason, no culprit
    assert text.culprit_ranks == () and "the ranks disagree" in text.summary


def test_detail_mismatch_fills_seq():
    """The summary names seq 3; so does the JSON."""
    r = runner.invoke(app, ["analyze-log", "--json", str(DATA / "real4" / "detail" / "console.log")])
    v = json.loads(r.stdout)["verdict"]
    assert "seq 3" in v["summary"] and v["seq"] == 3


def _has_input(p) -> bool:
    """A file, or a folder with a non-empty file in it (a silent hang or a set-up failure leaves empty ones)."""
    return p.is_file() or any(f.is_file() and f.stat().st_size for f in p.rglob("*"))


_BASES = {F: ("console.log", "dumps", "torchrun"), DATA / "real4": ("console.log", "dumps", "attempt_0"),
          DATA / "real": ("console.log", "attempt_0")}
ALL_INPUTS = sorted(str(x) for base, ways in _BASES.items() for p in base.iterdir() if p.is_dir()
                    for x in (p, *(p / w for w in ways)) if x.exists() and _has_input(x))


@pytest.mark.parametrize("path", ALL_INPUTS, ids=lambda p: p.split("tests/data/")[-1])
def test_verdict_agrees_with_its_table(path):
    """On every real incident: no unknown stands in a sentence, and the verdict never contradicts the ranks' table."""
    a = analysed(path)  # run(path), shared with the other properties of every fixture (tests/analysed.py)
    v = a.verdict
    text = " ".join((v.summary, *v.chain, *v.next_steps))
    for unknown in ("None", "#?", "PG ?", "nan"):
        assert unknown not in text, (unknown, text)
    assert not set(v.culprit_ranks) & set(v.waiting_ranks)
    ranks = {s.rank for s in a.job.ranks}
    assert set(v.culprit_ranks) <= ranks and set(v.cycle) <= ranks
    if v.kind is VerdictKind.ALL_RANKS_STUCK:
        gone = [s.rank for s in a.job.ranks if s.ending.kind in (EndKind.EXITED, EndKind.KILLED, EndKind.EXCEPTION)]
        assert not gone, (gone, v.summary)
    if v.kind is VerdictKind.DEADLOCK:
        assert v.cycle and not v.culprit_ranks
    if v.kind is VerdictKind.INCOMPLETE:  # it says what is missing: ranks, the group's members, or the console
        assert v.unknown_ranks or "do not name the members" in v.summary or "torchrun's own console" in v.summary \
            or "the rest of this console" in v.summary


def test_live_deadlock_read_by_snapshot():
    """`ncclcheck snapshot` on the live 2 x H200 job (tools/live_snapshot.sh, 5.3 s): its archive reads as the deadlock,
    and the snapshot's verdict, the job model's over the archive as the command builds it, says the same; the
    verdict the snapshot stored then (its own engine's, schema 2) agreed."""
    from ncclcheck.evidence import archive as evidence_archive
    from ncclcheck.job.analyze import analyze_scans

    path = F / "live_cycle" / "snapshot" / "snapshot.tar.gz"
    a = run(path)
    assert (a.verdict.kind, a.verdict.cycle, a.verdict.culprit_ranks) == (VerdictKind.DEADLOCK, (0, 1), ())
    doc, _ = evidence_archive.load(str(path))
    v = analyze_scans(evidence_archive.read_archive(str(path))).verdict
    assert (v.kind.value, v.culprit_ranks, v.cycle, v.summary) == ("deadlock", (), (0, 1), a.verdict.summary)
    assert (doc["verdict"]["kind"], doc["verdict"]["cycle"]) == ("deadlock", [0, 1])


ORDER_CYCLE_TEXT = (
    "Ranks 0-1 each wait in PG 1 (dp) #2 and PG 2 (cp) #2 at once, with every member these inputs name of each group "
    "there and the same collective on every member. Either the ranks issued these groups in different orders (a "
    "deadlock: each runs one while the other waits behind it on its stream; no single rank is the culprit) or the "
    "first of them hung in the transport and the rest queued behind it. These logs do not show the order each rank "
    "issued them in; flight-recorder dumps or a live snapshot do. These inputs do not state the groups' full "
    "membership: if they have other members, one of them that never arrived would explain it too.")

# One real incident per sentence template, with the sentence as reviewed (the failure kinds' templates are in
# tests/data/expected_failures/, the deadlock's above).
TEMPLATES = {
    "real4/clean_exit/console.log": (
        "collective_mismatch",
        "Rank 1 exited with status 0 (real4/clean_exit/console.log:149) while ranks 0, 2-3 waited in ALLREDUCE "
        "NumelIn=4,096 (#4, PG 1 (GUID 4a2ad14e)): rank 1 ran fewer collectives than they did. Its training loop "
        "ended sooner (a smaller shard or an uneven last batch, a rank-dependent `break` or `return`), so the others "
        "called a collective it never would. Nothing crashed or lagged; the code must give every rank the same number "
        "of steps (DistributedSampler with drop_last=True, or the same step count on every rank)."),
    "real/exception/attempt_0": ("rank_failed_first", "Rank 1 failed: RuntimeError: simulated data error on rank 1 at step 3."),
    # No line of this 2-process console states the job's size (torchrun's failure table lists the processes that
    # failed, which bounds nothing): other ranks may be in its groups, so no explanation is given for them.
    # Both ranks wait in both groups at once, every member these inputs name there: the two-group ring is named
    # (hedged: text does not show the issue order), with the membership left open.
    "failures/order_cycle/console.log": ("all_ranks_stuck", ORDER_CYCLE_TEXT),
    "failures/order_cycle/torchrun": ("all_ranks_stuck", ORDER_CYCLE_TEXT),
    "real/sleep/attempt_0": (
        "lagging_rank",
        "Rank 0 waited until the 10 s timeout; the trail of who waits for whom ends at rank 1: rank 1 printed no "
        "timeout, error or exit: it never arrived."),
    "real4/detail/console.log": (
        "collective_mismatch",
        "TORCH_DISTRIBUTED_DEBUG=DETAIL found ranks running different collectives: ranks 0-1, 3: ALLREDUCE shape [8] "
        "Float seq 3; rank 2: ALLREDUCE shape [16] Float seq 3."),
    "failures/uneven_gather/dumps": (
        "collective_mismatch",
        "At #2 of PG 0 (default) the ranks issued different collectives (rank 0: _ALLGATHER_BASE 4,096 Float; rank 1: "
        "_ALLGATHER_BASE 4,000 Float). No majority and nothing else singles one side out: the ranks disagree, and "
        "either side may be the one that is wrong (a rank-dependent branch, an uneven last batch)."),
    # Ranks 1-2 wrote nothing at all (rank 2 was killed, rank 1 stopped by torchrun after it): the per-rank logs
    # cannot tell the two apart, only that they stopped while the others lost their peers.
    "real4/net_killed/attempt_0": (
        "rank_failed_first",
        "Ranks 1-2 failed first: ranks 1-2 stopped with no error, traceback or exit line while ranks 0, 3 lost their "
        "connections to a peer (ncclRemoteError: A call failed possibly due to a network error or a remote process "
        "exiting prematurely); these inputs do not tell which of them died first "
        "(real4/net_killed/attempt_0/0/stderr.log:2); the process was killed with no traceback: the kernel's OOM "
        "killer, the container's memory limit, or the scheduler."),
    "corpus/10-arctic-watchdog-stuck-plus-allgather-base.log": (
        "watchdog_stuck",
        "Rank 2 waited until the 30 min timeout; the trail of who waits for whom ends at rank 7: rank 7 reported its "
        "own watchdog stuck for 480 s (the heartbeat monitor): the process is blocked, in a CUDA call or holding the "
        "GIL, not waiting in a collective. It is named by elimination: the only rank in these inputs that waited "
        "nowhere, while the groups that lead there have members the inputs do not name."),
    # NCCL completed the mismatched send/recv and nothing after it shows the job's end: the console alone cannot tell
    # a finished job from a cut one (job/ending.py)
    "failures/p2p_dtype/console.log": (
        "incomplete_evidence",
        "The torchrun console of ranks 0-1 (failures/p2p_dtype/console.log) stops with no ending and no failure: its "
        "last line (failures/p2p_dtype/console.log:6) is its workers' own, and no line says how the job ended: no "
        "failure of torchrun's ('failed (exitcode: N) local_rank: …', its failure table, its closing SIGTERMs, "
        "'Received N death signal'), no worker's error, no word of a worker that the work was done, no NCCL "
        "communicator destroyed, and no line of torchrun's at a normal end (at LOGLEVEL=INFO only, 'worker group "
        "successfully finished', 'Local worker group finished (WorkerState.SUCCEEDED)' and 'Done waiting for other "
        "agents'; nothing at the default level). A node or container lost with its processes (power, a crash, a kill "
        "of the whole process tree) stops its console just so, and so does a console pasted only in part. These "
        "inputs cannot tell a finished job from a cut one: the rest of this console and the other nodes' consoles "
        "(or a run with LOGLEVEL=INFO, whose agent says it finished) would."),
}


@pytest.mark.parametrize("path", sorted(TEMPLATES))
def test_sentence_template(path, monkeypatch):
    monkeypatch.chdir(DATA)
    v = run(path).verdict
    assert (v.kind.value, v.summary) == TEMPLATES[path]


def _dump210(tmp_path, rank: int, entries: list[dict], enqueued: int, completed: int) -> str:
    """A format 2.10 dump (JSON, as torch 2.9+ writes it) of one rank of a 2-rank default group."""
    from test_frdump import _entry_210

    doc = {"version": "2.10", "comm_lib_version": "2.28.9",
           "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
           "pg_status": {"0": {"last_enqueued_collective": enqueued, "last_started_collective": -1,
                               "last_completed_collective": completed}},
           "entries": [_entry_210(*e) for e in entries]}
    path = tmp_path / f"comm_lib_trace_rank_{rank}"
    path.write_text(json.dumps(doc))
    return str(path)


def test_ring_through_a_send(tmp_path):
    """Rank 0 sends to rank 1, then all_reduces; rank 1 all_reduces, then receives: a ring of a p2p op and a
    collective, named as a deadlock with each rank's order."""
    r0 = _dump210(tmp_path, 0, [(1, 0, "nccl:all_reduce", "completed", 8), (0, 1, "nccl:send 0->1", "started", 64),
                                (2, 1, "nccl:all_reduce", "scheduled", 8)], 2, 1)
    r1 = _dump210(tmp_path, 1, [(1, 0, "nccl:all_reduce", "completed", 8), (2, 0, "nccl:all_reduce", "started", 8),
                                (2, 1, "nccl:recv 1<-0", "scheduled", 64)], 2, 1)
    v = run(r0, r1).verdict
    assert (v.kind, v.cycle, v.culprit_ranks) == (VerdictKind.DEADLOCK, (0, 1), ())
    assert ("They issued these operations in different orders (rank 0: PG 0 (default) p2p #1 (train.py:11), then "
            "PG 0 (default) #2 (train.py:13); rank 1: PG 0 (default) #2 (train.py:12), then PG 0 (default) p2p #1 "
            "(train.py:13))") in v.summary


def test_text_keeps_p2p_and_collective_counters_apart(tmp_path):
    """Rank 1 times out in RECV SeqNum=1 while its collectives are at #3: rank 0's wait in #4 is not 'its last was #1'."""
    head = "[rank{r}]:[E1122 11:18:4{s}.000000000 ProcessGroupNCCL.cpp:632] "
    log = tmp_path / "console.log"
    log.write_text(
        head.format(r=0, s=5) + "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, "
        "OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600083 milliseconds before "
        "timing out.\n"
        + head.format(r=0, s=5) + "[PG ID 0 PG GUID 0(default_pg) Rank 0]  failure detected by watchdog at work "
        "sequence id: 4 PG status: last enqueued work: 4, last completed work: 3\n"
        + head.format(r=1, s=6) + "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
        "OpType=RECV, NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for 600091 milliseconds before timing out.\n"
        + head.format(r=1, s=6) + "[PG ID 0 PG GUID 0(default_pg) Rank 1]  failure detected by watchdog at work "
        "sequence id: 1 PG status: last enqueued work: 3, last completed work: 3\n")
    a = run(log)
    text = " ".join((a.verdict.summary, *a.verdict.chain))
    assert "its last was #1" not in text
    assert "rank 1 never issued #4 there (its last was #3)" in text
    one = a.job.rank(1)
    assert one is not None and one.stuck is not None and (one.stuck.number, one.stuck.op) == ("p2p #1", "RECV")


@pytest.mark.parametrize("name", ["order_cycle", "order_cycle3", "order_cycle_info", "live_cycle", "p2p_count",
                                  "p2p_cycle", "p2p_dtype", "uneven_gather", "rank0_only"])
def test_hang_golden(name, monkeypatch):
    """All inputs of each incident together: the whole verdict equals the reviewed golden JSON."""
    from test_failures import _golden

    monkeypatch.chdir(F)
    assert _golden(run(name)) == json.loads((DATA / "expected_failures" / f"{name}.json").read_text())
