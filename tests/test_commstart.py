"""A framework's start of its own NCCL communicator with nothing after it (job/pgstart.py, comm_init_unfinished).

The lines are written from the frameworks' format strings: vLLM's and SGLang's PyNcclCommunicator
(`logger.info("vLLM is using nccl==%s", ...)`, `(via nccl4py)` in the newest) and Paddle's NCCLParallelContext::Init
(`VLOG(0) << "init nccl context nranks: " ... " ring id: "`, without the ring in older releases)."""

from __future__ import annotations

import pytest
from conftest import run, run_text, thread_log

from ncclcheck.evidence.formats import pgstart
from ncclcheck.evidence.types import Loc
from ncclcheck.job.model import VerdictKind

STARTS = [
    "INFO 07-23 20:47:08 pynccl.py:69] vLLM is using nccl==2.21.5",
    "(Worker_TP1 pid=812) INFO 10-02 11:00:01 [pynccl.py:103] vLLM is using nccl==2.27.3 (via nccl4py)",
    "[2025-03-02 10:11:12 TP0] sglang is using nccl==2.21.5",
    "I0302 09:24:11.613677 15692 nccl_context.cc:189] init nccl context nranks: 2 local rank: 0 gpu id: 0 ring id: 0",
    "I0318 17:04:25.652648 31603 nccl_context.cc:127] init nccl context nranks: 2 local rank: 0 gpu id: 0",
]


@pytest.mark.parametrize("line", STARTS)
def test_every_frameworks_communicator_start_is_a_step_of_its_own(line):
    assert [f.value for f in pgstart.Lines().feed(line, Loc("x", 1))] == [pgstart.COMM_STEP]


@pytest.mark.parametrize("line", STARTS)
def test_inputs_that_stop_there_never_finished_nccls_set_up(line):
    v = run_text(f"{line}\n").verdict
    assert (v.kind, v.cause.cause.kind) == (VerdictKind.INCOMPLETE, "comm_init_unfinished")
    fix = "\n".join(v.cause.fix)
    assert "NCCL_DEBUG=INFO" in fix and "NCCL_SOCKET_IFNAME" in fix and "NCCL_CUMEM_ENABLE=0" in fix


def test_a_process_group_start_in_one_input_and_the_communicators_in_another_stop_in_the_communicator(tmp_path):
    (tmp_path / "a.log").write_text("[2024-06-11 00:23:36,254] [INFO] [comm.py:668:init_distributed] Initializing "
                                    "TorchBackend in DeepSpeed with backend nccl\n")
    (tmp_path / "b.log").write_text(f"{STARTS[0]}\n")
    v = run(tmp_path / "a.log", tmp_path / "b.log").verdict
    assert v.cause.cause.kind == "comm_init_unfinished"


@pytest.mark.parametrize("after", [
    "INFO 07-23 20:47:12 custom_all_reduce_utils.py:232] reading GPU P2P access cache",
    "epoch 0, batch 0, loss: 155.009735",
])
def test_a_log_that_goes_on_after_the_start_is_not_stopped_there(after):
    v = run_text(f"{STARTS[0]}\n{after}\n").verdict
    assert v.cause is None or v.cause.cause.kind != "comm_init_unfinished"


@pytest.mark.parametrize("case", ["221", "222"])
def test_the_public_threads_stop_in_the_communicators_set_up(case):
    """221: vLLM's pynccl under a preloaded CUDA-intercepting library; 222: Paddle's two nodes (NCCL_SOCKET_IFNAME)."""
    v = run(thread_log(case)).verdict
    assert (v.kind, v.cause.cause.kind) == (VerdictKind.INCOMPLETE, "comm_init_unfinished")
