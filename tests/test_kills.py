"""A kill by signal and a launch that never started ranks, in every launcher's words, each line alone.

Each line is as its source prints it (the source named beside it): a worker's death by SIGKILL that no launcher
sent first reads as host_kill (most often the kernel's OOM killer), whatever launcher reported it and however much of
its report survived the paste; a launcher that could not reach its daemon or its node reads as remote_launch; older
releases' words of a CUDA error read as the error they name.
"""

from __future__ import annotations

import pytest
from conftest import run_text

from ncclcheck.job.model import VerdictKind

# torch/distributed/elastic/multiprocessing/errors/__init__.py: the failure table's rows (2.x, indented; 1.9-1.10's
# "msg:" row), ProcessFailure's message for a worker dead of a signal, pasted with or without its indentation.
TORCHRUN = [
    "exitcode: -9\n",
    "  exitcode  : -9 (pid: 1234)\n",
    "  exitcode: -9 (pid: 1234)\n",
    '  msg: "Signal 9 (SIGKILL) received by PID 1234"\n',
    "  traceback : Signal 9 (SIGKILL) received by PID 1234\n",
    "Signal 9 (SIGKILL) received by PID 1234\n",
    "exitcode: -9\nSignal 9 (SIGKILL)\nexitcode  : -9 (SIGKILL)\nerror_file: <N/A>\n"
    "traceback : Signal 9 (SIGKILL) received by PID xxx\n",  # nvidia-cosmos/cosmos-predict2.5#72, as posted
    # torch/distributed/elastic/multiprocessing/api.py: the agent's own line for the worker
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 (pid: 1234) of binary: "
    "/usr/bin/python3\n",
]
# deepspeed/launcher/launch.py, sigkill_handler: "{cmd} exits with return code = {last_return_code}" (the first
# worker that failed), with the logger's head, without it, and as the tail of a command that wrapped.
DEEPSPEED = [
    "[2023-11-13 16:59:55,650] [ERROR] [launch.py:320:sigkill_handler] ['/opt/conda/bin/python', '-u', 'train.py', "
    "'--local_rank=1'] exits with return code = -9\n",
    "exits with return code = -9\n",
    "[2023-11-13 16:59:54,760] [INFO] [launch.py:314:sigkill_handler] Killing subprocess 9439\n"
    "[2023-11-13 16:59:55,650] [ERROR] [launch.py:320:sigkill_handler] ['/opt/conda/bin/python', '-u', 'train.py',\n"
    "'--data_path', '../data/x.json'\n] exits with return code = -9\n",
    # deepspeed before its logger: Python's CalledProcessError from the same handler
    "subprocess.CalledProcessError: Command '['/usr/bin/python', '-u', 'train.py']' died with <Signals.SIGKILL: 9>.\n",
]
# Open MPI 4.x (ORTE) in one line; PRTE (Open MPI 5) in two (openpmix/prrte help-prun.txt
# [prun:proc-aborted-strsignal]), with the tool's name it was started by.
MPI = [
    "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).\n",
    "prterun noticed that process rank 1 with PID 1234 on node n1 exited on signal 9 (Killed).\n",
    "prterun noticed that process rank 3 with PID 2812 on node gpu-b exited on\nsignal 9 (Killed).\n",
]
# torch/multiprocessing/spawn.py, ProcessContext.join (ProcessExitedException since 1.6, Exception before)
SPAWN = [
    "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL\n",
    "Exception: process 0 terminated with signal SIGKILL\n",
]


@pytest.mark.parametrize("text", TORCHRUN + DEEPSPEED + MPI + SPAWN)
def test_a_sigkill_no_launcher_sent_is_a_host_kill(text):
    v = run_text(text).verdict
    assert v.kind is VerdictKind.RANK_FAILED_FIRST, v.summary
    assert v.cause is not None and v.cause.cause.kind == "host_kill", v.summary
    assert any("journalctl -k" in f for f in v.cause.fix) and any("CPU offload" in f for f in v.cause.fix)


def test_a_table_without_its_rank_rows_names_no_rank():
    """The worker failed; which rank it was no row says: no culprit is made up."""
    v = run_text("exitcode: -9\n").verdict
    assert v.culprit_ranks == ()


def test_prte_names_the_rank_of_its_two_line_report():
    v = run_text("prterun noticed that process rank 3 with PID 2812 on node gpu-b exited on\nsignal 9 (Killed).\n").verdict
    assert v.culprit_ranks == (3,) and v.cause is not None and v.cause.cause.kind == "host_kill"


def test_a_signal_line_alone_is_no_worker():
    """PRTE's second line means nothing without its first."""
    assert run_text("signal 9 (Killed).\n").verdict.kind is VerdictKind.NO_FAILURE


def test_the_agents_closing_kills_after_a_root_cause_are_not_the_cause():
    """A table whose root cause exited 1 (an exception) and whose other entry was killed: the kill is the agent's
    closing one, not a host kill."""
    table = ("Failures:\n[1]:\n  exitcode  : -9 (pid: 1235)\n  error_file: <N/A>\n"
             "  traceback : Signal 9 (SIGKILL) received by PID 1235\n"
             "Root Cause (first observed failure):\n[0]:\n  exitcode  : 1 (pid: 1234)\n  error_file: <N/A>\n"
             "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n")
    v = run_text(table).verdict
    assert v.cause is None or v.cause.cause.kind != "host_kill", v.summary


@pytest.mark.parametrize("text", [
    # Slurm's task/cgroup plugin: older releases' "oom-kill event(s) in step N cgroup", newer "in StepId=N"
    "slurmstepd: error: Detected 1 oom-kill event(s) in step 370626.batch cgroup. Some of your processes may have "
    "been killed by the cgroup out-of-memory handler.\n",
    "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=1234.0. Some of your processes may have been killed "
    "by the cgroup out-of-memory handler.\n",
    "slurmstepd: error: Detected 1 oom_kill event in StepId=11300781.0. Some of the step tasks have been OOM Killed.\n",
])
def test_slurms_oom_kill_in_each_release_is_host_oom(text):
    v = run_text(text).verdict
    assert v.cause is not None and v.cause.cause.kind == "host_oom", v.summary


@pytest.mark.parametrize("text", [
    # aten/src/THC/THCGeneral.cpp (PyTorch <= 1.10); NVIDIA/semantic-segmentation#68
    "THCudaCheck FAIL file=/opt/conda/conda-bld/pytorch_1595629403081/work/torch/csrc/cuda/Module.cpp line=59 "
    "error=101 : invalid device ordinal\n",
    # THError's exception for a failed CUDA call (PyTorch <= 1.10)
    "RuntimeError: cuda runtime error (101) : invalid device ordinal at /pytorch/torch/csrc/cuda/Module.cpp:37\n",
    # c10/cuda/driver_api.h
    "RuntimeError: CUDA driver error: invalid device ordinal\n",
])
def test_older_words_of_a_cuda_error_name_it(text):
    v = run_text(text).verdict
    assert v.cause is not None and v.cause.cause.kind == "invalid_device", v.summary
    assert v.cause.detail == "CUDA error: invalid device ordinal" or "invalid device ordinal" in v.cause.detail


def test_thc_names_an_illegal_access_too():
    v = run_text("THCudaCheck FAIL file=/pytorch/aten/src/THC/THCCachingHostAllocator.cpp line=278 error=700 : an "
                 "illegal memory access was encountered\n").verdict
    assert v.cause is not None and v.cause.cause.kind == "illegal_access"


@pytest.mark.parametrize("text", [
    "ssh: connect to host 10.0.0.12 port 22: Connection refused\n",  # OpenSSH sshconnect.c
    "ssh: Could not resolve hostname worker-1: Name or service not known\n",
    "Host key verification failed.\n",
    "Permission denied (publickey,password).\n",
    # openpmix/prrte src/mca/errmgr/base/help-errmgr-base.txt; ORTE's the same with its own name
    "--------------------------------------------------------------------------\n"
    "PRTE has lost communication with a remote daemon.\n\n"
    "  HNP daemon   : [prterun-master-0-34@0,0] on node master-0\n"
    "  Remote daemon: [prterun-master-0-34@0,1] on node worker-0\n",
    "ORTE has lost communication with a remote daemon.\n",
    "mpirun was unable to reliably start one or more daemons.\n",
    "An ORTE daemon has unexpectedly failed after launch and before communicating back to mpirun.\n",
    "ORTE does not know how to route a message to the specified daemon\n",
    "bash: orted: command not found\n",
])
def test_a_launcher_that_never_started_ranks_is_remote_launch(text):
    v = run_text(text).verdict
    assert v.kind is VerdictKind.LAUNCHER_FAILURE, v.summary
    assert v.cause is not None and v.cause.cause.kind == "remote_launch"
    assert any("ssh <node> hostname" in f for f in v.cause.fix)


def test_kubernetes_start_order_is_named_for_an_unresolved_master():
    v = run_text("ValueError: host not found: Name or service not known\n").verdict
    assert v.cause is not None and v.cause.cause.kind == "host_unresolvable"
    assert any("master pod runs" in f and "init container" in f for f in v.cause.fix)


@pytest.mark.parametrize("text", [
    # NVIDIA/nccl-tests#218: Open MPI's signal report, then UCX's own backtrace (ucs/debug/debug.c)
    "[a1eb0914a5e2:01167] Signal: Segmentation fault (11)\n==== backtrace (tid:   1139) ====\n"
    " 1 0x0000000000045834 ucp_request_cancel()  /build-result/src/ucx/src/ucp/core/ucp_request.c:252\n",
    # Open MPI's opal backtrace (glibc's backtrace_symbols)
    "[host:01167] Signal: Segmentation fault (11)\n"
    "[host:01167] [ 3] /opt/hpcx/ucx/lib/libucp.so.0(ucp_worker_progress+0x5a)[0x7f1c2a3b4c5d]\n",
    # gdb's frame
    "Segmentation fault (core dumped)\n#5  0x00007f1c2a3b4c5d in ucc_tl_ucp_send_nb () from /opt/hpcx/ucc/lib/libucc.so.1\n",
])
def test_a_crash_in_ucx_names_its_transports(text):
    v = run_text(text).verdict
    assert v.cause is not None and v.cause.cause.kind == "native_crash"
    assert "UCX_TLS" in v.cause.fix[0] and "UCX_NET_DEVICES" in v.cause.fix[0]


def test_a_loader_error_naming_ucx_is_no_crash_in_it():
    v = run_text("error while loading shared libraries: libucp.so.0: cannot open shared object file: No such file or "
                 "directory\n").verdict
    assert v.cause is None or v.cause.cause.kind != "native_crash"


@pytest.mark.parametrize("text", [
    # Open MPI 4's (mpirun) and 5's (prterun) notice of a process that a signal ended, here SIGABRT
    "mpirun noticed that process rank 1 with PID 4242 on node n1 exited on signal 6 (Aborted).\n",
    "prterun noticed that process rank 1 with PID 4242 on node n1 exited on signal 6 (Aborted).\n",
])
def test_an_abort_a_launcher_reports_cites_its_line_and_names_every_abort(text):
    """A SIGABRT is the NCCL watchdog's abort after a timeout and every other abort() alike: the summary says so and
    cites the launcher's own line, whichever launcher wrote it, never another launcher's name."""
    v = run_text(text).verdict
    assert v.kind == VerdictKind.ALL_RANKS_STUCK
    assert "the launcher reports (" in v.summary and "uncaught C++ exception" in v.summary
    assert "torchrun" not in v.summary
