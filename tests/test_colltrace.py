"""NCCL's collective trace and a hung process's native stacks (issue 41): evidence/formats/colltrace.py and
nativestack.py, job/colltrace.py and job/nativestall.py.

Recorded on two H200s (tests/data/gpu/colltrace, NCCL 2.28.9, torch 2.11; record.sh and tracejob.py beside them):
rank 1's all_gather where rank 0 all_reduces (PyTorch's watchdog names it first), and two groups' all_reduces issued
in opposite orders, each waited on (no timeout fired in 100 s; cuda-gdb's stacks of both processes taken while hung).
"""

from __future__ import annotations

from conftest import DATA, run
from hypothesis import given
from hypothesis import strategies as st

from ncclcheck.evidence.formats.colltrace import TRACE, Call, Lines
from ncclcheck.evidence.types import Loc
from ncclcheck.render.json_out import analysis_json

REC = DATA / "gpu" / "colltrace"
PUBLIC = DATA / "public_threads"


def _verdict(*paths) -> dict:
    return analysis_json(run(*paths))["verdict"]


def _cause(v: dict) -> str | None:
    return (v["cause"] or {}).get("kind")


def _line(proc: str, dev: int, op: str, opcount: int, count: int, comm: str, nranks: int, dtype: int = 7,
          root: int = 0) -> str:
    head = f"{proc}:{proc.rsplit(':', 1)[-1]} [{dev}] NCCL INFO " if proc else ""
    return (f"{head}{op}: opCount {opcount:x} sendbuff 0x7f00 recvbuff 0x7f00 count {count} datatype {dtype} op 0 "
            f"root {root} comm {comm} [nranks={nranks}] stream 0x55aa")


def _init(proc: str, dev: int, comm: str, rank: int, nranks: int, commid: str) -> str:
    return (f"{proc}:{proc.rsplit(':', 1)[-1]} [{dev}] NCCL INFO comm {comm} rank {rank} nranks {nranks} cudaDev {dev} "
            f"nvmlDev {dev} busId {dev}000 commId {commid} - Init COMPLETE")


def test_the_recorded_opposite_orders_are_an_order_deadlock_with_no_culprit():
    path = REC / "order" / "console.log"
    v = _verdict(path)
    assert (v["kind"], _cause(v), v["culprit_ranks"], v["action"]["kind"]) == (
        "deadlock", "comm_order_deadlock", [], "fix-code")
    assert f"({path}:361)" in v["summary"] and f"({path}:360)" in v["summary"]
    assert "vm:775 (GPU 0), rank 0 of that communicator's 2 issued AllReduce of 1,000 float32" in v["summary"]
    assert "neither printed a call after it" in v["summary"]


def test_the_recorded_mismatch_keeps_pytorchs_own_reading():
    """PyTorch's watchdog lines name the mismatch first: the trace does not replace that verdict."""
    v = _verdict(REC / "mismatch" / "console.log")
    assert v["kind"] == "collective_mismatch" and _cause(v) != "trace_mismatch"


def test_a_paste_of_two_processes_names_both_sides_by_host_pid_and_gpu_never_a_rank():
    path = next(PUBLIC.glob("167-*.log"))
    v = _verdict(path)
    assert (v["kind"], _cause(v), v["culprit_ranks"]) == ("collective_mismatch", "trace_mismatch", [])
    assert ("at its opCount 28c: h03r3n06:45006 (GPU 0) issued AllReduce of 9,984,512 float32 "
            f"({path}:1); h03r3n06:45012 (GPU 2) issued AllGather of 59,205,120 int8 ({path}:3)") in v["summary"]
    assert "either may be the one that is wrong" in v["summary"]


def test_runs_under_headings_are_processes_and_calls_match_their_communicators(write):
    """No NCCL header: each run of lines under its own heading is one process; communicators matched by their calls
    (the 168 layout, written here with other counts)."""
    a = [_line("", 0, "AllGather", 0, 8, "0x1a", 2, 0), _line("", 0, "AllReduce", 0, 5, "0x1b", 2),
         _line("", 0, "AllReduce", 0, 9, "0x1c", 2)]
    b = [_line("", 0, "AllGather", 0, 8, "0x2a", 2, 0), _line("", 0, "AllReduce", 0, 9, "0x2b", 2),
         _line("", 0, "AllReduce", 0, 5, "0x2c", 2)]
    v = _verdict(write("paste.log", "first node:", *a, "second node:", *b))
    assert (v["kind"], _cause(v), v["culprit_ranks"]) == ("deadlock", "comm_order_deadlock", [])
    assert "the process of lines 2-4" in v["summary"] and "each then issued the other's" in v["summary"]


def test_header_less_lines_in_one_run_conclude_nothing(write):
    """One run of lines with no header could be any mixture of processes: nothing is compared."""
    path = write("one.log", _line("", 0, "AllReduce", 1, 5, "0x1a", 2), _line("", 0, "AllGather", 1, 5, "0x2a", 2))
    v = _verdict(path)
    assert v["kind"] == "no_failure"
    (f,) = [f for f in v["findings"] if f["code"] == "trace-unplaced"]
    assert f["message"].startswith("NCCL's collective trace lines here (2, on 2 communicator addresses) carry no NCCL "
                                   "header") and f["evidence"] == [f"{path}:1", f"{path}:2"]


def _three(write, tags: bool):
    lines = []
    for r in range(3):
        tag = f"[rank{r}]:" if tags else ""
        lines.append(tag + _init(f"n{r}:10{r}", r, f"0x{r}f", r, 3, "0xabc"))
    for r in range(3):
        tag = f"[rank{r}]:" if tags else ""
        lines.append(tag + _line(f"n{r}:10{r}", r, "AllReduce", 4, 100, f"0x{r}f", 3))
        lines.append(tag + _line(f"n{r}:10{r}", r, "AllGather" if r == 2 else "AllReduce", 5, 100, f"0x{r}f", 3))
    return _verdict(write("three.log", *lines))


def test_a_majority_of_three_names_the_odd_one_a_culprit_only_where_its_global_rank_is_stated(write):
    v = _three(write, tags=True)
    assert (v["kind"], _cause(v), v["culprit_ranks"]) == ("collective_mismatch", "trace_mismatch", [2])
    assert "n2:102 (GPU 2) is the odd one" in v["summary"]


def test_a_communicators_rank_alone_is_said_but_names_no_culprit(write):
    v = _three(write, tags=False)
    assert (v["kind"], v["culprit_ranks"]) == ("collective_mismatch", [])
    assert "n2:102 (GPU 2), rank 2 of that communicator's 3 issued AllGather of 100 float32" in v["summary"]


def test_an_opcount_that_stays_put_lines_calls_up_by_their_order(write):
    lines = [_line("a:1", 0, "AllReduce", 0, 10, "0x1", 2), _line("b:2", 1, "AllReduce", 0, 10, "0x2", 2),
             _line("a:1", 0, "AllReduce", 0, 10, "0x1", 2), _line("b:2", 1, "Broadcast", 0, 10, "0x2", 2)]
    v = _verdict(write("zero.log", *lines))
    assert v["kind"] == "collective_mismatch" and "at its call 2 the inputs show" in v["summary"]


def test_point_to_point_calls_differ_by_design(write):
    lines = [_line("a:1", 0, "Send", 3, 10, "0x1", 2, root=1), _line("b:2", 1, "Recv", 3, 20, "0x2", 2, root=0)]
    assert _cause(_verdict(write("p2p.log", *lines))) != "trace_mismatch"


@given(op=st.sampled_from(["AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Send"]),
       opcount=st.integers(0, 2**40), count=st.integers(0, 2**40), dtype=st.integers(0, 11),
       root=st.integers(-1, 4096), nranks=st.integers(1, 100000), dev=st.integers(0, 15))
def test_every_traced_call_reads_back_its_fields(op, opcount, count, dtype, root, nranks, dev):
    text = _line("host-1.example:4242", dev, op, opcount, count, "0xdeadbeef", nranks, dtype, root)
    assert TRACE.search(text)
    (fact,) = Lines().feed(text, Loc("x", 1))
    assert Call.of(fact.value) == Call("host-1.example:4242", str(dev), op, opcount, count, dtype, 0, root,
                                       "0xdeadbeef", nranks, None, 0)


def test_a_thread_inside_ncclallreduce_with_no_error_is_a_stall_pointing_at_set_up_and_the_path():
    path = next(PUBLIC.glob("173-*.log"))
    v = _verdict(path)
    assert (v["kind"], _cause(v), v["culprit_ranks"], v["action"]["kind"]) == (
        "incomplete_evidence", "blocked_in_nccl", [], "collect-more")
    assert f"1 thread inside NCCL's ncclAllReduce ({path}:9)" in v["summary"]
    assert any("Init COMPLETE" in s and "ncclCommInitRank" in s for s in v["next_steps"])
    assert any("NCCL_P2P_DISABLE=1" in s for s in v["next_steps"])


def test_a_thread_inside_set_up_says_the_set_up_waits_for_a_member(write):
    v = _verdict(write("gdb.txt", "Thread 1 (Thread 0x7f00 (LWP 4242)):",
                       "#0  0x00007f01 in poll () from /lib/x86_64-linux-gnu/libc.so.6",
                       "#3  0x00007f2a1c0b2d1e in ncclCommInitRank (newcomm=0x7ffd, nranks=2) at init.cc:1450"))
    assert _cause(v) == "blocked_in_nccl" and "the communicator's set-up" in v["summary"]


def test_a_thread_in_nccls_host_path_never_launched_its_kernel_in_every_frame_form(write):
    # gdb's frame with an address, with none (the pc starts a source line), and eu-stack's (no "in"): src/proxy.cc
    # ncclLocalOpAppend and ncclProxySaveOp, src/enqueue.cc ncclEnqueueCheck.
    for frames in (("#1  0x00007f3c2a4b1c20 in ncclLocalOpAppend (comm=0x55d0, proxyConn=0x55e0, proxyOp=0x7ffe) at "
                    "proxy.cc:478",),
                   ("#3  ncclProxySaveOp (comm=0x55d0, op=0x7ffe, justInquire=0x0) at proxy.cc:612",),
                   ("#0  0x00007f3c29c1e0a7 __sched_yield",
                    "#1  0x00007f3c2a4b1c20 ncclLocalOpAppend(ncclComm*, ncclProxyConnector*, ncclProxyOp*)",
                    "#5  0x00007f3c2a4a0d11 ncclEnqueueCheck(ncclInfo*)")):
        v = _verdict(write("stack.txt", "Thread 1 (Thread 0x7f00 (LWP 4242)):", *frames))
        assert (v["kind"], _cause(v), v["culprit_ranks"]) == ("incomplete_evidence", "blocked_in_nccl", [])
        assert "1 thread inside NCCL's" in v["summary"] and "kernel was never launched" in v["summary"]
        assert any("upgrade NCCL" in s for s in v["next_steps"])


def test_a_frame_that_only_names_nccl_internals_elsewhere_is_not_read(write):
    v = _verdict(write("stack.txt", "#1  0x00007f3c2a4b1c20 in ncclProxyProgress (proxyState_=0x55d0) at proxy.cc:900"))
    assert _cause(v) != "blocked_in_nccl"


def test_a_fatal_signal_in_the_stacks_keeps_its_own_verdict(write):
    v = _verdict(write("gdb.txt", 'Thread 7 "python" received signal SIGSEGV, Segmentation fault.',
                       "#0  0x00007f01 in ncclAllReduce () from /usr/lib/libnccl.so.2"))
    assert _cause(v) != "blocked_in_nccl"


def test_the_recorded_stacks_waiting_in_cuda_outside_ncclS_calls_are_not_this_cause():
    v = _verdict(REC / "order" / "stacks.rank0.txt")
    assert _cause(v) != "blocked_in_nccl"


def test_a_long_trace_keeps_each_communicators_last_calls_counted_over_all():
    """A traced job prints a line a call: each process keeps its communicator's last TRACE_KEEP calls (the cheap path
    of evidence/parse.py), each still numbered among every call the input printed, so processes line up by it."""
    from conftest import run_text

    from ncclcheck.evidence.parse import TRACE_KEEP

    n = TRACE_KEEP + 500
    text = "".join(f"node1:7:7 [0] NCCL INFO AllReduce: opCount {i:x} sendbuff 0x7f00 recvbuff 0x7f00 count {i + 1} "
                   "datatype 7 op 0 root 0 comm 0x55aa [nranks=2] stream 0x55bb\n" for i in range(n))
    [scan] = run_text(text).scans
    calls = [Call.of(f.value) for f in scan.facts if f.key == "nccl_coll"]
    assert [c.index for c in calls] == list(range(n - TRACE_KEEP, n))
    assert [c.count for c in calls[-2:]] == [n - 1, n] and calls[0].opcount == n - TRACE_KEEP


def _grepped(proc: str, dev: int, count: int, dtype: int, n: int = 0) -> str:
    """One process's first Broadcast behind grep's file-name label (``grep -H``/``-r``: ``FILE:``; ``-n``:
    ``FILE:LINE:``), as NCCL's enqueue.cc prints the call at every release (v2.3 to v2.30)."""
    label = f"LOG.{dev}.txt:" + (f"{n}:" if n else "")
    return label + _line(proc, dev, "Broadcast", 0, count, f"0x7f{dev}05a260", 8, dtype)


def test_one_op_with_other_counts_and_types_on_one_communicator_is_calls_disagree(write):
    """Five processes of one 8-rank communicator (no set-up line: each shows one address of that size), their first
    Broadcast with another count and datatype on one of them, behind grep's labels: the calls disagree, both sides'
    op, count and type named (ncclDataType_t: 6 float16, 4 int64), no culprit where no line states a rank."""
    lines = [_grepped("h1:32615", 0, 25503912, 6), *(_grepped(f"h1:3261{k}", k, 53, 4, n=k) for k in range(1, 5))]
    v = _verdict(write("grep.log", *lines))
    assert (v["kind"], _cause(v), v["culprit_ranks"]) == ("collective_mismatch", "calls_disagree", [])
    assert "issuing one Broadcast with different arguments" in v["summary"]
    assert "h1:32615 (GPU 0) issued Broadcast of 25,503,912 float16 root 0" in v["summary"]
    assert "h1:32611 (GPU 1) issued Broadcast of 53 int64 root 0" in v["summary"]
    assert "Broadcast of 25,503,912 float16 root 0; Broadcast of 53 int64 root 0" in v["cause"]["detail"]


def test_two_communicators_of_one_size_are_not_joined_by_their_size(write):
    """Four processes, two 2-rank communicators (tensor-parallel pairs) with no set-up line, each pair's calls its
    own: more processes than the size is not one communicator, so the pairs' different calls are no mismatch."""
    lines = [_line("a:1", 0, "AllReduce", 0, 10, "0x1", 2), _line("b:2", 1, "AllReduce", 0, 10, "0x2", 2),
             _line("c:3", 2, "AllGather", 0, 40, "0x3", 2), _line("d:4", 3, "AllGather", 0, 40, "0x4", 2)]
    assert _verdict(write("pairs.log", *lines))["kind"] != "collective_mismatch"
