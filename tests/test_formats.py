"""Golden tests for every watchdog format generation and the manglings real logs suffer."""

from __future__ import annotations

import bz2
import gzip
import lzma

import pytest
from conftest import REAL, run

from ncclcheck.render.json_out import record_json

V18 = "[E ProcessGroupNCCL.cpp:566] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800419 milliseconds before timing out."
V110_SHAPE = "[E ProcessGroupNCCL.cpp:587] [Rank 0] Caught collective operation timeout: WorkNCCL(OpType=BROADCAST, TensorShape=[1024, 4096], Timeout(ms)=1800000) ran for 1800101 milliseconds before timing out."
V113 = "[E ProcessGroupNCCL.cpp:737] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLGATHER, Timeout(ms)=1800000) ran for 1800935 milliseconds before timing out."
V113_WAIT = "[E ProcessGroupNCCL.cpp:1200] [Rank 1] Work WorkNCCL(SeqNum=12, OpType=ALLREDUCE, TensorShape=[8], Timeout(ms)=60000) timed out in call to wait()."
V24 = "[rank5]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=_REDUCE_SCATTER_BASE, NumelIn=800, NumelOut=100, Timeout(ms)=600000) ran for 600061 milliseconds before timing out."
STATUS_26 = "[rank5]:[E1206 18:44:12.715588844 ProcessGroupNCCL.cpp:2168] [PG ID 3 PG GUID 7(tp_group) Rank 5]  failure detected by watchdog at work sequence id: 9 PG status: last enqueued work: 10, last completed work: 8"


def one(path):
    recs = [record_json(r) for r in run(path).records]
    assert len(recs) == 1, recs
    return recs[0]


@pytest.mark.parametrize(
    ("line", "expect"),
    [
        (V18, {"rank": 2, "seq": None, "op_type": "ALLREDUCE", "timeout_ms": 1800000, "ran_for_ms": 1800419,
               "evidence": ["watchdog_timeout"]}),
        (V110_SHAPE, {"rank": 0, "op_type": "BROADCAST", "tensor_shape": "[1024,4096]", "evidence": ["blocking_wait"]}),
        (V113, {"rank": 3, "seq": 77, "op_type": "ALLGATHER", "numel_in": None, "ran_for_ms": 1800935}),
        (V113_WAIT, {"rank": 1, "seq": 12, "tensor_shape": "[8]", "ran_for_ms": None, "evidence": ["blocking_wait"]}),
        (V24, {"rank": 5, "global_rank": 5, "seq": 9, "numel_in": 800, "numel_out": 100}),
    ],
    ids=["1.8", "1.10-blocking-shape", "1.13", "1.13-wait", "2.4"],
)
def test_generations(write, line, expect):
    """Each generation of the watchdog line yields its fields."""
    rec = one(write("r.log", line))
    assert {k: rec[k] for k in expect} == expect


def test_status_line_joins_record_and_names_pg(write):
    """A 2.6+ status line adds the PG and counters to the same record."""
    rec = one(write("r.log", V24, STATUS_26))
    assert rec["pg"] == {"id": "3", "guid": "7", "desc": "tp_group"}
    assert (rec["last_enqueued"], rec["last_completed"]) == (10, 8)
    assert rec["evidence"] == ["watchdog_timeout", "failure_detected"]


@pytest.mark.parametrize(
    "mangle",
    [
        lambda s: s + "\r",  # CRLF
        lambda s: "\x1b[36m(RayWorkerWrapper pid=42)\x1b[0m " + s,  # ANSI + Ray prefix
        lambda s: " [36m(RayWorkerVllm pid=5085) [0m " + s,  # ESC-stripped ANSI remnants
        lambda s: "> " + s,  # markdown quote
        lambda s: "[default5]:" + s,  # torchrun --tee prefix
        lambda s: " 45%|████▌     | 90/200 [01:23<02:34,  1.23it/s]" + s,  # tqdm bar without newline
        lambda s: s[:150] + "\n" + s[150:],  # hard wrap inside a token
        lambda s: s[:60] + "   \n" + s[60:],  # tmux-style padded wrap
    ],
    ids=["crlf", "ansi-ray", "ansi-remnant", "markdown", "tee", "tqdm", "wrap", "tmux-wrap"],
)
def test_manglings(write, mangle):
    """The record survives every mangling seen in real pastes."""
    rec = one(write("r.log", mangle(V24)))
    assert (rec["rank"], rec["seq"], rec["numel_in"], rec["timeout_ms"], rec["ran_for_ms"]) == (5, 9, 800, 600000, 600061)


@pytest.mark.parametrize(("suffix", "pack"), [(".gz", gzip.compress), (".bz2", bz2.compress), (".xz", lzma.compress)])
def test_compressed(write, suffix, pack):
    """Compressed logs are read by content."""
    rec = one(write("rank5.log" + suffix, data=pack((V24 + "\n").encode())))
    assert rec["seq"] == 9


def test_restatements_count_once(write):
    """Watchdog line, thread-terminated and what() restatements are one record."""
    restated = f"[rank5]:[E ProcessGroupNCCL.cpp:1182] [PG 0 Rank 5] Process group watchdog thread terminated with exception: {V24.split('] ', 2)[2]}"
    what = "  what():  " + restated.split("] ", 2)[2]
    rec = one(write("r.log", V24, restated, what))
    assert rec["occurrences"] == 3
    assert rec["evidence"] == ["watchdog_timeout", "thread_terminated"]


def test_path_rank_and_missing_rank(write, tmp_path):
    """A rank whose file has no timeout line is named, using the rank in the file name."""
    write("logs/rank0.log", V113.replace("[Rank 3]", "[Rank 0]"))
    write("logs/rank1.log", "[I ProcessGroupNCCL.cpp:1] nothing wrong here")
    v = run(tmp_path / "logs").verdict
    assert (v.kind.value, v.culprit_ranks, v.waiting_ranks) == ("lagging_rank", (1,), (0,))


def test_oom_rank_failed_first(write, tmp_path):
    """An OOM on a rank that never timed out is the root cause; the others are the cascade."""
    write("job/attempt_0/0/stderr.log", V24.replace("rank5", "rank0").replace("Rank 5", "Rank 0"))
    write("job/attempt_0/1/stderr.log",
          "[rank1]: Traceback (most recent call last):",
          '[rank1]:   File "train.py", line 10, in <module>',
          "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    v = run(tmp_path / "job").verdict
    assert (v.kind.value, v.culprit_ranks, v.waiting_ranks) == ("rank_failed_first", (1,), (0,))


def test_all_ranks_stuck(write):
    """Every rank in the same collective and none missing: transport suspicion."""
    lines = [V24.replace("rank5", f"rank{r}").replace("Rank 5", f"Rank {r}") for r in range(2)]
    lines.append("[rank0]:[I ProcessGroupNCCL.cpp:905] [PG ID 0 PG GUID 0 Rank 0] ProcessGroupNCCL initialization options: size: 2, global rank: 0, TIMEOUT(ms): 600000")
    v = run(write("all.log", *lines)).verdict
    assert (v.kind.value, v.waiting_ranks) == ("all_ranks_stuck", (0, 1))


def test_heartbeat_is_not_a_timeout(write):
    """A heartbeat-monitor line gives watchdog_stuck and no record."""
    a = run(write("hb.log", "[rank3]:[F ProcessGroupNCCL.cpp:1306] [PG 0 Rank 3] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives."))
    assert (a.records, a.verdict.kind.value, a.verdict.culprit_ranks) == ((), "watchdog_stuck", (3,))


def test_fingerprint_mismatch(write):
    """TORCH_DISTRIBUTED_DEBUG=DETAIL mismatch names both ranks; one against one, neither is the culprit (the reporter
    names itself and the first rank that differs, whichever is wrong), and both are listed: the report's ranks are
    accounted for (issue 41), as waiting on each other."""
    a = run(write("m.log", "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=5, OpType=BARRIER), but Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=5, OpType=ALLREDUCE, TensorShape=[10]).Collectives differ in the following aspects: Op type: BARRIERvs ALLREDUCE"))
    assert (a.verdict.kind.value, a.verdict.culprit_ranks, a.verdict.waiting_ranks) == ("collective_mismatch", (), (0, 1))


def test_clean_log(write):
    """A log with no failure gives no_failure."""
    a = run(write("ok.log", "host:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4", "epoch 1 done"))
    assert (a.records, a.verdict.kind.value) == ((), "no_failure")
    assert [(f.key, f.value) for f in a.scans[0].facts] == [  # "setup": where NCCL's set-up stood (job/stall.py)
        ("nccl_cuda", "12.4"), ("setup", "NCCL INFO"), ("nccl_version", "2.21.5")]


# --- PyTorch 2.8-2.13 and the nccl2 backend (line shapes from ProcessGroupNCCL.cpp and nccl2/*.cpp) -------------
P = "[PG ID 0 PG GUID 0(default_pg) Rank 0] "
ASYNC_28 = ("[rank0]:[E1122 12:00:01.000000001 ProcessGroupNCCL.cpp:2061] [Rank 0] Collective WorkNCCL(SeqNum=5, "
            "OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=30000) raised the following async "
            "exception: NCCL error: remote process exited or there was a network error, NCCL version 2.28.9")
TERMINATED_28 = ("[rank0]:[E1122 12:00:01.000000002 ProcessGroupNCCL.cpp:2113] " + P + "Process group watchdog thread "
                 "terminated with exception: NCCL error: remote process exited or there was a network error, "
                 "NCCL version 2.28.9")
WHAT_28 = ("  what():  " + P + "Process group watchdog thread terminated with exception: NCCL error: remote process "
           "exited or there was a network error, NCCL version 2.28.9")


def scan_of(path):
    a = run(path)
    assert len(a.scans) == 1
    return a, a.scans[0]


def test_async_exception_is_an_error_event_not_a_timeout(write):
    """2.8+: an NCCL error raised on a work names the work but makes no timeout record; the error counts once."""
    a, s = scan_of(write("r.log", ASYNC_28, TERMINATED_28, WHAT_28))
    assert a.records == ()
    (w,) = s.works
    assert (w.evidence, w.seq, w.op_type, w.timeout_ms) == ("async_exception", 5, "ALLREDUCE", 30000)
    assert w.error.startswith("NCCL error: remote process exited")
    assert [(e.kind.value, e.who.global_rank) for e in s.errors] == [("connection_closed", 0)]


def test_older_nccl_error_spelling_is_an_nccl_error(write):
    """"NCCL error in: <file>:<line>, <reason>" (2.0 and before) is an NCCL error event of its own kind."""
    _, s = scan_of(write("r.log", "RuntimeError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/"
                         "ProcessGroupNCCL.cpp:1287, invalid usage, NCCL version 2.17.1"))
    assert [(e.kind.value, e.message) for e in s.errors] == [
        ("nccl_error", "NCCL error: invalid usage, NCCL version 2.17.1")]


def test_watchdog_class_frames_keep_one_record(write):
    """2.8+ frames name c10d::ProcessGroupNCCL::Watchdog::run(); the restated timeout is still one record."""
    rec = one(write(
        "r.log",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        "  what():  " + P.replace("Rank 0", "Rank 1") + "Process group watchdog thread terminated with exception: "
        "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=BROADCAST, NumelIn=4, "
        "NumelOut=4, Timeout(ms)=10000) ran for 10042 milliseconds before timing out.",
        "Exception raised from run at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2098 (most recent "
        "call first):",
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x9d (0x7f in /x/torch/lib/libc10.so)",
        "frame #1: c10d::ProcessGroupNCCL::Watchdog::run() + 0x1a4 (0x7f in /x/torch/lib/libtorch_cuda.so)",
    ))
    assert (rec["rank"], rec["seq"], rec["op_type"], rec["ran_for_ms"], rec["evidence"]) == (
        1, 7, "BROADCAST", 10042, ["thread_terminated"])


def test_dump_steps_are_dump_events(write):
    """Each flight-recorder dump step is an event with its PG; the dump-signal line stays a DumpSignal."""
    pre = "[rank1]:[E1122 12:00:02.000000003 ProcessGroupNCCL.cpp:1900] " + P.replace("Rank 0", "Rank 1")
    _, s = scan_of(write(
        "r.log",
        pre + "Observed flight recorder dump signal from another rank via TCPStore.",
        pre + "Received a dump signal due to a collective timeout from  rank 0 and we will try our best to dump the "
        "debug info. Last enqueued NCCL work: 6, last completed NCCL work: 5.This is most likely caused by ...",
        pre + "ProcessGroupNCCL preparing to dump debug info. Include stack trace: 1, only active collectives: 0",
        pre + "First PG on this rank to signal dumping.",
        pre + "Dump signal received through pipe, triggering FR dump.",
        pre + "timed out after waiting for 60000ms flight recorder dumps to finish.",
        "[rank1]:[I1122 12:00:02.000000004 FlightRecorder.cpp:40] Finished writing Flight Recorder debug info to "
        "/root/.cache/torch/comm_lib_trace_rank_1",
        "[rank1]:[I1122 12:00:03.000000004 ProcessGroupNCCL.cpp:1300] [PG ID 0 PG GUID 0 Rank 1] ProcessGroupNCCL "
        "preparing to dump debug info. Include stack trace: 0",
    ))
    kinds = [(e.kind, e.who.global_rank, e.pg.desc if e.pg else None, e.include_stack, e.only_active)
             for e in s.dump_events]
    assert kinds == [
        ("store_signal", 1, "default_pg", None, None),
        ("preparing", 1, "default_pg", True, False),
        ("first_pg", 1, "default_pg", None, None),
        ("pipe_signal", 1, "default_pg", None, None),
        ("wait_timeout", 1, "default_pg", None, None),
        ("written", 1, None, None, None),
        ("preparing", 1, None, False, None),
    ]
    assert [(d.from_rank, d.last_enqueued, d.last_completed) for d in s.dump_signals] == [(0, 6, 5)]


def test_terminating_line_with_its_prefix_twice(write):
    """The FATAL line prints the PG prefix twice; the reason is read once."""
    _, s = scan_of(write("r.log", "[rank1]:[F1122 12:00:09.000000005 ProcessGroupNCCL.cpp:1700] " + P + P +
                         "Terminating the process after attempting to dump debug info, due to collective timeout or "
                         "exception."))
    assert [(e.kind, e.detail, e.who.global_rank) for e in s.endings] == [
        ("terminating", "collective timeout or exception", 1)]


NCCL2_TIMEOUT = "[rank1]:[E1122 12:00:10.000000006 WorkNCCL.cpp:231] [TC][rank=1][name=0] Operation timed out after 10007 ms"
NCCL2_ABORT = "[rank1]:[E1122 12:00:11.000000007 ProcessGroupNCCL.cpp:612] [TC][rank=1][name=0] Aborting process due to timeout"


def test_nccl2_timeout_is_a_record_without_seqnum(write):
    """nccl2 prints no WorkNCCL line: "[TC][rank=R][name=PG] Operation timed out after N ms" is the record."""
    a, s = scan_of(write("r.log", NCCL2_TIMEOUT, NCCL2_ABORT))
    (rec,) = [record_json(r) for r in a.records]
    assert (rec["rank"], rec["global_rank"], rec["seq"], rec["op_type"], rec["ran_for_ms"], rec["evidence"]) == (
        1, 1, None, None, 10007, ["nccl2_timeout"])
    assert s.works[0].comm == "0"
    assert [(e.kind, e.detail) for e in s.endings] == [("aborting", "timeout")]


def test_nccl2_async_error_abort_is_an_error(write):
    """"Aborting process due to error ... nccl hit async error: X" is an ending and an error event, not a timeout."""
    a, s = scan_of(write("r.log", "[TC][rank=0][name=default_pg] Aborting process due to error on rank 0 - nccl hit "
                         "async error: remote process exited or there was a network error"))
    assert a.records == ()
    assert [e.kind for e in s.endings] == ["aborting"]
    assert [e.kind.value for e in s.errors] == ["connection_closed"]


def test_prefix_that_lost_its_bracket(write):
    """A paste that starts one character late ("rank7]:[E...") still names global rank 7."""
    rec = one(write("r.log", V24.replace("[rank5]:", "rank7]:")))
    assert (rec["rank"], rec["global_rank"]) == (5, 7)


def test_real_2_11_dump_steps_with_paths():
    """torch 2.11's own INFO output: who broadcast the signal, who heard it, and where each dump was written."""
    a = run(REAL / "sleep-info" / "console.log")
    events = [(e.kind, e.who.global_rank, e.detail) for s in a.scans for e in s.dump_events]
    assert ("broadcast", 0, "exception_dump") in events
    assert ("store_signal", 1, None) in events
    assert ("first_pg", 0, None) in events
    for r in (0, 1):
        path = f"/tmp/inc/sleep-info/dumps/nccl_trace_rank_{r}"
        assert [k for k, g, _ in events if g == r and k in ("preparing", "writing", "written", "dumped", "finished")] == [
            "preparing", "writing", "written", "dumped", "finished"]
        assert ("written", r, path) in events and ("writing", r, path) in events


def test_a_bare_record_takes_its_rank_from_the_status_line_under_it(write):
    """A record line with no rank anywhere (its prefix cut off by a paste), and the status line under it that
    names "[PG 0 Rank 3]": the default group's rank is the global rank, so the record is rank 3's."""
    p = write("bare.log",
              "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1024, "
              "NumelOut=1024, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.",
              "[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 3] Timeout at NCCL work: 12, last enqueued NCCL work: 12, "
              "last completed NCCL work: 11.")
    r = one(p)
    assert (r["rank"], r["seq"], r["op_type"], r["last_completed"]) == (3, 12, "ALLREDUCE", 11)
