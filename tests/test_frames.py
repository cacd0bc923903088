"""The frameworks' and launchers' own lines that say something failed, never read as ``no_failure`` (issue 41 sections
1, 4, 5): the watchdog's timeout stated in part, Horovod's oldest stall layout, a framework's process-group start
with nothing after it, a serving engine's death, torch.distributed.elastic's ProcessFailure repr and c10d's
``does not support OP``.

Each rule is tried on the public thread's lines (tests/data/public_threads/188, 194, 202, 204, 206, 208) and on
another line of the same mechanism: another release's wording from the source that prints it, or a run recorded
here (tests/data/launchers/deepspeed/init_ports, tests/data/launchers/torchrun/procfailure_repr).
"""

from __future__ import annotations

import pytest
from conftest import DATA, run, run_text, thread_log

from ncclcheck.evidence.formats import errors, horovod, pgstart, procfailure
from ncclcheck.evidence.types import Loc, Who
from ncclcheck.evidence.whose import PREFIX
from ncclcheck.job.model import VerdictKind

THREADS = DATA / "public_threads"
LAUNCHERS = DATA / "launchers"


def _fix(v) -> str:
    return "\n".join([*v.next_steps, *(v.cause.fix if v.cause is not None else ())])


# --- the watchdog's timeout stated in part -------------------------------------------------------------------------

def test_the_watchdog_message_above_the_place_c10_names_is_a_timeout():
    """188 quotes the message's opening words and c10's place of the error (``checkTimeout at
    ProcessGroupNCCL.cpp:733``): a collective timed out, op and rank unknown: incomplete evidence, not no_failure."""
    v = run(thread_log("188")).verdict
    assert v.kind is VerdictKind.INCOMPLETE
    assert "spread that work over every rank" in " ".join(v.next_steps)


@pytest.mark.parametrize("place", [
    "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:565 (most recent call "
    "first):",  # c10's what() under a 2.1-2.2 timeout, whole
    "checkTimeout at /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1272",  # its place alone, a path
])
def test_the_place_of_the_timeout_alone_is_a_timeout_of_its_rank(place):
    v = run_text(f"[rank3]: {place}\n").verdict
    assert v.kind is not VerdictKind.NO_FAILURE
    assert 3 in (*v.waiting_ranks, *v.culprit_ranks, *v.unknown_ranks) or "rank 3" in v.summary.lower()


def test_a_sentence_that_mentions_the_place_is_no_timeout():
    """A note that names the place (a version's hint, tests/data/corpus/18's sidecar) states no timeout."""
    line = '  "pytorch_version_hint": "torch 2.6-2.7 (inferred: checkTimeout at ProcessGroupNCCL.cpp:632, PG prefix)",\n'
    assert run_text(line).verdict.kind is VerdictKind.NO_FAILURE


def test_another_function_at_that_file_is_no_timeout():
    """c10's place of another error of the same file (a CUDA error rethrown by the watchdog) is no timeout."""
    v = run_text("Exception raised from checkForNCCLErrorsInternal at ProcessGroupNCCL.cpp:1873\n").verdict
    assert v.kind is VerdictKind.NO_FAILURE


# --- Horovod's oldest stall layout -----------------------------------------------------------------------------

def test_horovods_ready_ranks_are_a_stall_with_no_culprit():
    """194: the 2017-2018 layout lists the ranks that DID submit each tensor: the same stall (horovod_stall), its
    fix the names and order of the calls, and no rank named a culprit (the others' numbers are not printed)."""
    v = run(thread_log("194")).verdict
    assert (v.kind, v.culprit_ranks, v.cause.cause.kind) == (VerdictKind.COLLECTIVE_MISMATCH, (), "horovod_stall")
    assert "same names" in _fix(v)


def test_the_oldest_layout_on_one_line_reads_every_tensor():
    """horovod/tensorflow/mpi_ops.cc (2017-08) printed the whole list on one line, ", " between tensors."""
    line = ("WARNING: One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and "
            "are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are "
            "trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause "
            "deadlock. Stalled ops: HorovodAllreduce_grad_0 [ready ranks: 0, 2], HorovodBroadcast_w_0 [ready ranks: 1]")
    said = list(horovod.Stalls().feed(line, Loc("x", 1)))
    assert [c.text for c in said] == [horovod.said_ready([0, 2], "HorovodAllreduce_grad_0"),
                                     horovod.said_ready([1], "HorovodBroadcast_w_0")]
    assert all(c.who.global_rank is None for c in said)


def test_the_newer_layout_reads_tensorflows_scoped_names():
    """stall_inspector.cc's rank lines name TensorFlow's ops under their scopes: still the missing rank's."""
    text = ("Missing ranks:\n"
            "1: [model/DistributedAdamOptimizer_Allreduce/HorovodAllreduce_gradients_AddN_4_0]\n")
    v = run_text(text).verdict
    assert v.cause is not None and v.cause.cause.kind == "horovod_stall" and v.culprit_ranks == (1,)


@pytest.mark.parametrize(("tag", "rank"), [("[0]<stderr>:", 0), ("Tue Feb  2 03:23:51 2021[3]<stderr>:", 3),
                                          ("[1,5]<stderr>:", 5), ("", None)])
def test_the_newer_layout_behind_a_launchers_tag_reads_its_rank_lines(tag, rank):
    """horovodrun's tag ('[rank]<stream>:', after time.asctime() with --prefix-output-with-timestamp) or Open MPI's
    before stall_inspector.cc's lines: the missing rank is the row's, not the tag's (the coordinator writes them)."""
    text = f"{tag}Missing ranks:\n{tag}2: [allreduce.fc1.weight]\n"
    v = run_text(text).verdict
    assert v.cause is not None and v.cause.cause.kind == "horovod_stall" and v.culprit_ranks == (2,), v.summary
    if rank is not None:
        assert horovod.RANK_TAG.match(tag) or tag.startswith("[1,")


def test_an_unnamed_tensor_names_no_culprit():
    """289: every rank row lists allreduce.noname.N, numbered by each process's count of its calls
    (mpi_ops_v2.cc GetOpName): the ranks' counts differ, which does not say which rank skipped or added a call."""
    v = run(thread_log("289")).verdict
    assert (v.kind, v.culprit_ranks, v.cause.cause.kind) == (VerdictKind.COLLECTIVE_MISMATCH, (), "horovod_stall")
    assert "noname" in v.cause.cause.why and "name=" in _fix(v)
    s = horovod.Stalls()
    s.feed("Missing ranks:", Loc("x", 1))
    rows = [c for line in ("4: [allreduce.noname.7, allreduce.fc1.bias]", "5: [allreduce.noname.7 ...]")
            for c in s.feed(line, Loc("x", 2))]
    assert [c.who.global_rank for c in rows] == [4, None]


# --- a framework's process-group start with nothing after ------------------------------------------------------

def test_inputs_that_stop_in_deepspeeds_init_distributed_never_met():
    """202: DeepSpeed's init_distributed lines and nothing after: the rendezvous never completed (or the log is cut):
    incomplete evidence with the rendezvous' step (the port every rank was given, and that it is not 0)."""
    v = run(thread_log("202")).verdict
    assert (v.kind, v.cause.cause.kind) == (VerdictKind.INCOMPLETE, "pg_start_unfinished")
    assert "MASTER_PORT" in _fix(v) and "not 0" in _fix(v)


def test_a_recorded_run_whose_ranks_were_given_different_ports():
    """Recorded: two ranks, each its own MASTER_PORT; DeepSpeed's CPU accelerator builds its shared-memory op between
    init_distributed and init_process_group, and the console stops there."""
    v = run(LAUNCHERS / "deepspeed" / "init_ports" / "console.log").verdict
    assert (v.kind, v.cause.cause.kind) == (VerdictKind.INCOMPLETE, "pg_start_unfinished")


@pytest.mark.parametrize("line", [
    "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2",
    "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/4",  # Lightning 1.x
    "INFO:torch.distributed.distributed_c10d:Added key: store_based_barrier_key:1 to store for rank: 0",
])
def test_every_frameworks_start_line_is_a_step_of_the_group_start(line):
    assert [f.value for f in pgstart.Lines().feed(line, Loc("x", 1))] == [pgstart.PG_STEP]


def test_a_log_that_goes_on_after_the_start_is_not_stopped_there():
    text = ("[2024-06-11 00:23:36,254] [INFO] [comm.py:668:init_distributed] Initializing TorchBackend in DeepSpeed "
            "with backend nccl\nepoch 0 step 10 loss 2.31\n")
    v = run_text(text).verdict
    assert v.cause is None or v.cause.cause.kind != "pg_start_unfinished"


# --- a serving engine's death ----------------------------------------------------------------------------------

def test_a_dead_engines_error_is_a_failure_though_the_server_answers_on():
    """204: vLLM's API server raises EngineDeadError and goes on answering (500s): the error is the news of the
    engine's death, kept as the failure; the step asks for the kernel log's Xid lines of the engine's GPUs."""
    v = run(thread_log("204")).verdict
    assert v.kind is VerdictKind.RANK_FAILED_FIRST
    assert "EngineDeadError" in v.summary and "Xid" in _fix(v)


def test_the_engine_death_of_the_release_before_v1():
    """vLLM before V1 raised AsyncEngineDeadError ("Background loop has errored already.") from its server."""
    text = ("ERROR 02-12 02:14:01 serving_chat.py:210] vllm.engine.async_llm_engine.AsyncEngineDeadError: "
            "Background loop has errored already.\n"
            "INFO:     127.0.0.1:40110 - \"POST /v1/chat/completions HTTP/1.1\" 500 Internal Server Error\n")
    v = run_text(text).verdict
    assert v.kind is VerdictKind.RANK_FAILED_FIRST and "dmesg" in _fix(v)


# --- torch.distributed.elastic's ProcessFailure repr -----------------------------------------------------------

def test_a_process_failure_repr_is_a_worker_killed_by_its_signal():
    """206: an agent built on torch.distributed.elastic logs its failures map: local rank 0 killed by SIGBUS, which in
    a container is most often a full /dev/shm; no global rank is named."""
    v = run(thread_log("206")).verdict
    assert (v.kind, v.culprit_ranks) == (VerdictKind.RANK_FAILED_FIRST, ())
    assert "/dev/shm" in _fix(v)


def test_a_recorded_failures_map_reads_each_record():
    """Recorded: the process context's own failures map, two records on one line (SIGBUS, then the closing
    SIGTERM)."""
    log = LAUNCHERS / "torchrun" / "procfailure_repr" / "console.log"
    line = log.read_text().splitlines()[-1]
    got = [(f.local_rank, f.exitcode, f.signal) for f in procfailure.records(line, Loc("x", 1))]
    assert got == [(0, -7, "SIGBUS"), (1, -15, "SIGTERM")]
    v = run(log).verdict
    assert v.kind is VerdictKind.RANK_FAILED_FIRST and v.cause.cause.kind == "shm_full"


# --- c10d's backend without the op -----------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    None,  # 208: PyTorch 1.0's NCCL backend without barrier
    "RuntimeError: ProcessGroupGloo does not support reduce_scatter",  # gloo before it had reduce_scatter
])
def test_a_backend_without_the_op_is_fixed_by_a_newer_release(line):
    v = (run(thread_log("208")) if line is None else run_text(line + "\n")).verdict
    assert v.kind is VerdictKind.RANK_FAILED_FIRST
    assert "newer PyTorch release" in _fix(v)


# --- a serving framework's own sentence that a process failed -------------------------------------------------

@pytest.mark.parametrize("text", [
    None,  # 77: the exception's message alone, as the thread quotes it
    "(EngineCore_DP0 pid=2201) ERROR 10-02 11:40:12 [core.py:710] TimeoutError: RPC call to execute_model timed out.\n",
])
def test_a_serving_executors_rpc_timeout_is_incomplete_evidence_of_a_hang(text):
    """vLLM's executor gave up on its workers' answer to a step (multiproc_executor.py, collective_rpc): a worker is
    stuck or dead, which one the line cannot say: incomplete evidence, never no_failure; its steps take the workers'
    stacks, --enforce-eager and another NCCL release."""
    v = (run(thread_log("77")) if text is None else run_text(text)).verdict
    assert v.kind is VerdictKind.INCOMPLETE
    assert "--enforce-eager" in _fix(v) and "py-spy dump" in _fix(v)


def test_sglangs_scheduler_exception_is_a_failure_whose_exception_is_not_posted():
    """112: the scheduler's words and the traceback's first line only: a failure, its exception not in the inputs."""
    v = run(thread_log("112")).verdict
    assert v.kind is VerdictKind.INCOMPLETE and "Scheduler hit an exception" in v.summary
    assert "whole traceback" in _fix(v)


# --- the rule itself over the corpus ---------------------------------------------------------------------------

def _error_class(line: str) -> bool:
    """A line of a known source that states a failure, by the sources' own patterns (evidence/formats/): a Python
    exception's last line or a framework's failure sentence, a process's fatal signal, the watchdog's timeout,
    torch.distributed.elastic's failure record."""
    body = errors.PY_LOG_HEAD.sub("", PREFIX.sub("", line).strip())
    return (errors.exception(Who(), body, Loc("x", 1)) is not None or errors.fatal_signal(body) is not None
            or "Watchdog caught collective operation timeout" in line or bool(procfailure.records(line, Loc("x", 1))))


@pytest.mark.parametrize("log", sorted(THREADS.glob("*.log")), ids=lambda p: p.name.split("-")[0])
def test_no_report_says_nothing_failed_beside_an_error_line_of_a_known_source(log):
    """Issue 41 section 1: where an input holds a line that states a failure, the verdict is never no_failure."""
    said = [line for line in log.read_text(errors="replace").splitlines() if _error_class(line)]
    if said:
        assert run(log).verdict.kind is not VerdictKind.NO_FAILURE, said[0]
