"""Catalogue causes read from how NCCL, Gloo and PyTorch word a mechanism, on lines worded as other releases and
ranks print them (not the public threads' own text, which tests/test_public_threads.py checks)."""

from __future__ import annotations

import pytest
from conftest import run

from ncclcheck.evidence.types import Loc, Mismatch, Who
from ncclcheck.job.findings import mismatch_summary


@pytest.mark.parametrize(("text", "kind", "cause", "fix"), [
    # Older NCCL's socket for an address of no family: no usable interface was found.
    ("[rank3]: node7:88:88 [3] include/socket.h:390 NCCL WARN Socket creation failed : Address family not supported "
     "by protocol\n", "setup_failure", "no_socket_interface", "NCCL_SOCKET_IFNAME"),
    # An address received from another rank with family 0: another NCCL laid the record out.
    ("[rank5]: node2:41:77 [5] NCCL WARN ncclSocketInit: connecting to address 0.0.0.0<0> with family 0 is neither "
     "AF_INET(2) nor AF_INET6(10)\n", "setup_failure", "nccl_version_mismatch", "same image or environment"),
    # The bootstrap's truncation is not a collective of the user's.
    ("[rank2]: node1:9:12 [2] bootstrap.cc:84 NCCL WARN Message truncated : received 512 bytes instead of 8\n",
     "setup_failure", "bootstrap_mismatch", "NCCL version"),
    ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, invalid usage (run with "
     "NCCL_DEBUG=WARN for details), NCCL version 2.21.5\n", "setup_failure", "duplicate_gpu", "set_device"),
    # The shape sglang#3226 posted (a peer's address the pair could not reach). "Connection refused" is not read
    # so: a peer listening nowhere, as a restarted attempt with a stale store shows (tests/data/world/restart_setup).
    ("[rank0]: RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/"
     "pair.cc:144] no error\n", "setup_failure", "gloo_unreachable", "GLOO_SOCKET_IFNAME"),
    ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"
     "RuntimeError: DataLoader worker (pid 31337) is killed by signal: Killed.\n", "rank_failed_first", "host_oom",
     "data-loader workers"),
    ("[rank0]: torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
     "address. port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use\n",
     "launcher_failure", "port_in_use", "started twice"),
    # A DataLoader worker's SIGBUS in PyTorch's words (torch/csrc/DataLoader.cpp: the worker's handler, then the
    # parent's _error_if_any_worker_fails): the narrower shm_bus_error, not shm_full's ENOSPC.
    ("[rank0]: ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory "
     "(shm).\n", "rank_failed_first", "shm_bus_error", "--shm-size"),
    ("RuntimeError: DataLoader worker (pid 4127) is killed by signal: Bus error. It is possible that dataloader's "
     "workers are out of shared memory. Please try to raise your shared memory limit.\n", "rank_failed_first",
     "shm_bus_error", "num_workers"),
    # NCCL's attach to its peer's /dev/shm segment that open() did not find (src/misc/shmutils.cc ncclShmOpen): ENOENT,
    # not a /dev/shm too small; 2.12-2.22 state the errno on SYSCHECK's line above the attach line, 2.23 on in it; a
    # size of 0 is a cuMem descriptor read as a path (src/include/shm.h's union), its fix NCCL_CUMEM_HOST_ENABLE.
    ("node2:311:402 [1] misc/shmutils.cc:71 NCCL WARN Call to open failed : No such file or directory\n"
     "node2:311:402 [1] misc/shmutils.cc:113 NCCL WARN Error while attaching to shared memory segment "
     "/dev/shm/nccl-a8Zk2Q (size 4194304)\n", "setup_failure", "shm_segment_missing", "--ipc=host"),
    ("[rank3]: node2:311:402 [3] misc/shmutils.cc:128 NCCL WARN Error while attaching to shared memory segment "
     "/dev/shm/nccl-a8Zk2Q (size 4194304), error: No such file or directory (2)\n", "setup_failure",
     "shm_segment_missing", "NCCL_SHM_DISABLE=1"),
    ("[rank0]: Error while attaching to shared memory segment /dev/shm/nccl-\u040c (size 0), error: No such file or "
     "directory (2)\n", "setup_failure", "shm_segment_missing", "NCCL_CUMEM_HOST_ENABLE=0"),
    # The CUDA driver refusing memory shared by fabric handle (CUDA_ERROR_NOT_PERMITTED, 800): no IMEX channel the
    # user can open (NVIDIA's IMEX guide); a library's CUDA-driver check naming the call (mscclpp's "Call to <call>
    # failed.<file>:<line> (Cu failure: <string>)"), and NCCL's own MNNVL check (src/mnnvl.cc, 2.27).
    ("[rank2]: RuntimeError: Call to cuMemExportToShareableHandle(&fh, handle, CU_MEM_HANDLE_TYPE_FABRIC, 0) failed."
     "/src/gpu_utils.cc:140 (Cu failure: operation not permitted)\n", "setup_failure", "stated_reason",
     "/dev/nvidia-caps-imex-channels"),
    ("gb200-n07:2211:2211 [0] NCCL INFO NCCL version 2.27.7+cuda12.9\n"
     "gb200-n07:2211:2211 [0] mnnvl.cc:63 NCCL WARN MNNVL (cliqueSize 8) is available but not working on this "
     "system. Check the IMEX channel configuration (/dev/nvidia-caps-imex-channels). Set NCCL_MNNVL_ENABLE=0 to "
     "ignore this issue.\n", "setup_failure", "stated_reason", "nvidia-imex-ctl -N"),
    # NCCL's NVLS multicast bind by its fixed words (src/transport/nvls.cc, 2.27 on), with its size and CUDA's string
    # or without them, with or without NCCL's WARN header
    ("[rank0]: Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation "
     "cannot be performed in the present state'.\n", "setup_failure", "nvls_fabric", "NCCL_NVLS_ENABLE=0"),
    # gloo's interface lookup (device.cc lookupAddrForIface, as gloo/common/logging.cc words an enforce): the narrower
    # no_socket_interface, not socket_address, whichever program raised it (PyTorch's RuntimeError, Horovod's
    # terminate), and the hostname lookup's `rp != nullptr` form is not it.
    ("[rank1]: RuntimeError: [enforce fail at /opt/pytorch/third_party/gloo/gloo/transport/tcp/device.cc:84] "
     "ifa != nullptr. Unable to find address for: ens5\n", "setup_failure", "no_socket_interface",
     "GLOO_SOCKET_IFNAME"),
    ("terminate called after throwing an instance of 'gloo::EnforceNotMet'\n  what():  [enforce fail at "
     "horovod/third_party/gloo/gloo/transport/tcp/device.cc:88] ifa != nullptr. Unable to find address for: eth0\n"
     "Aborted (core dumped)\n", "setup_failure", "no_socket_interface", "HOROVOD_GLOO_IFACE"),
    # The enforce wrapped after its header (a console's width): gloo/common/logging.cc writes "[enforce fail at
    # <file>:<line>] <condition>. <message>" on one line, so the indented line under a bare header is its rest.
    ("[rank0]: RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:84]\n"
     "  ifa != nullptr. Unable to find address for: ^lo,docker\n", "setup_failure", "no_socket_interface",
     "exclusion"),
])
def test_a_mechanism_names_its_cause(tmp_path, text, kind, cause, fix):
    """Each line is read as the cause of its mechanism, with the verdict kind and a fix that fits it."""
    log = tmp_path / "console.log"
    log.write_text(text)
    v = run(log).verdict
    assert v.cause is not None, v.summary
    assert (v.kind.value, v.cause.cause.kind) == (kind, cause), v.summary
    assert fix in " ".join((*v.cause.cause.fix, *v.next_steps))


def test_the_data_paths_truncation_is_still_a_disagreement(tmp_path):
    """NET/Socket's 'receiving N bytes instead of M' is the ranks' collectives disagreeing, not NCCL's set-up."""
    log = tmp_path / "console.log"
    log.write_text("[rank1]: node1:9:12 [1] transport/net_socket.cc:480 NCCL WARN NET/Socket : peer 10.0.0.2<4567> "
                   "message truncated : receiving 1048576 bytes instead of 65536.\n")
    v = run(log).verdict
    assert v.cause is not None and v.cause.cause.kind == "calls_disagree"


def _m(reporter: int, a: str, other: int, b: str) -> Mismatch:
    return Mismatch(Who(reporter), reporter, a, other, b, Loc("x.log", reporter + 1))


def test_a_detail_report_names_no_side_without_a_majority():
    """Each rank names itself and the first rank that differs: with one rank against one, neither is the culprit;
    with a majority, the ranks that differ from it are."""
    assert mismatch_summary([_m(1, "ALLREDUCE [8]", 0, "ALLREDUCE [4]")])[0] == []
    three = [_m(0, "ALLREDUCE [8]", 2, "BROADCAST [1]"), _m(1, "ALLREDUCE [8]", 2, "BROADCAST [1]")]
    assert mismatch_summary(three)[0] == [2]


def test_a_detail_report_carries_the_catalogue_cause(tmp_path):
    """TORCH_DISTRIBUTED_DEBUG=DETAIL's report is a collective mismatch whose cause is calls_disagree."""
    log = tmp_path / "console.log"
    fp = ("CollectiveFingerPrint(SequenceNumber=12, OpType=ALLGATHER, TensorShape=[{}], TensorDtypes=Float, "
          "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided (default), "
          "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt)))")
    log.write_text(f"[rank0]: RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running "
                   f"collective: {fp.format(7)}, but Rank 1 is running collective: {fp.format(6)}.Collectives differ "
                   "in the following aspects:   Tensor Tensor shapes: 7vs 6\n")
    v = run(log).verdict
    assert v.kind.value == "collective_mismatch" and v.culprit_ranks == ()
    assert v.cause is not None and v.cause.cause.kind == "calls_disagree"


def test_a_watchdog_stuck_at_exit_is_the_teardown(tmp_path):
    """A heartbeat failure after the ranks' exit warning is the groups' teardown at exit: no culprit, and
    destroy_process_group() is the fix; the same failure with no exit warning before it blames its rank."""
    exit_line = ("[rank{r}]:[W301 10:00:0{r}.000000000 ProcessGroupNCCL.cpp:1250] Warning: WARNING: "
                 "destroy_process_group() was not called before program exit, which can leak resources.\n")
    stuck = ("[rank1]:[E301 10:09:00.000000000 ProcessGroupNCCL.cpp:1600] [PG ID 3 PG GUID 7(TENSOR_MODEL_PARALLEL) "
             "Rank 1] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring "
             "enqueued collectives.\n")
    log = tmp_path / "console.log"
    log.write_text(exit_line.format(r=0) + exit_line.format(r=2) + stuck)
    v = run(log).verdict
    assert (v.kind.value, v.culprit_ranks) == ("watchdog_stuck", ())
    assert "destroy_process_group()" in v.next_steps[0]
    log.write_text(stuck + exit_line.format(r=0))
    v = run(log).verdict
    assert (v.kind.value, v.culprit_ranks) == ("watchdog_stuck", (1,))
    assert not any("destroy_process_group()" in s for s in v.next_steps)


@pytest.mark.parametrize(("prefix", "kind", "culprits"), [
    ("[Rank 0]", "all_ranks_stuck", ()),  # its own watchdog aborted it: it waited too
    ("[PG 0 Rank 0]", "lagging_rank", (1,)),  # a later monitor aborts a rank for another's timeout too
])
def test_a_rank_aborted_by_its_watchdog_was_waiting_too(tmp_path, prefix, kind, culprits):
    """A rank dead of SIGABRT with no line of its own is not a straggler where only its own watchdog could abort it
    (timeouts without a [PG ...] prefix): every rank waited, and the transport is suspected."""
    log = tmp_path / "console.log"
    log.write_text(f"[E ProcessGroupNCCL.cpp:821] {prefix} Watchdog caught collective operation timeout: "
                   "WorkNCCL(SeqNum=3, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800417 milliseconds before "
                   "timing out.\n"
                   "Global rank 1 (PID 4242) exited with code -6\n")
    v = run(log).verdict
    assert (v.kind.value, v.culprit_ranks) == (kind, culprits), v.summary
    if kind == "all_ranks_stuck":
        assert any("NCCL_P2P_DISABLE" in s for s in v.next_steps)


_LONE_TIMEOUT = ("[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: "
                 "WorkNCCL(SeqNum=40, OpType=BROADCAST, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600312 "
                 "milliseconds before timing out.\n")


@pytest.mark.parametrize("before", [
    "Rank 0 finished\nRank 2 has completed\n",  # the program's own word for the other ranks
    "Training completed. Do not forget to share your model on huggingface.co/models =)\n",  # its own loop ended
    "`Trainer.fit` stopped: `max_steps=5000` reached.\n",
])
def test_a_rank_alone_after_the_end_issued_an_extra_collective(tmp_path, before):
    """A rank that times out after the others completed, or after its own training ended, ran a collective the others
    never will: collective_mismatch naming it, with the rank-dependent branch to look for."""
    log = tmp_path / "console.log"
    log.write_text(before + _LONE_TIMEOUT)
    v = run(log).verdict
    assert (v.kind.value, v.culprit_ranks) == ("collective_mismatch", (1,)), v.summary
    assert "if rank == 0:" in v.summary


def test_a_lone_timeout_with_nothing_ended_is_not_a_rank_alone_after_the_end(tmp_path):
    """Without a word that the work was over, the rank waited for a member that never arrived: [Rank 1] of the world
    group (no [PG ...] prefix, no [rankN]:) makes rank 0 a member, the one with no input, named as the rank the
    trail ends at, what it did unknown: unknown, not guilty (job/absent.py)."""
    log = tmp_path / "console.log"
    log.write_text(_LONE_TIMEOUT + "Rank 1 completed\n")  # its own rank, after its timeout: not the others
    v = run(log).verdict
    assert (v.kind.value, v.culprit_ranks, v.unknown_ranks) == ("incomplete_evidence", (), (0,))
    assert "rank 0 left nothing in these inputs" in v.summary


def test_an_abort_reported_before_any_timeout_is_not_the_watchdogs(tmp_path):
    """SIGABRT reported before the others' timeout is a crash of that rank's own (an uncaught C++ exception), not
    its watchdog: it stays the rank the others waited for."""
    log = tmp_path / "console.log"
    log.write_text("Global rank 1 (PID 4242) exited with code -6\n"
                   "[E ProcessGroupNCCL.cpp:821] [Rank 0] Watchdog caught collective operation timeout: "
                   "WorkNCCL(SeqNum=3, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800417 milliseconds before "
                   "timing out.\n")
    assert run(log).verdict.culprit_ranks == (1,)


@pytest.mark.parametrize("pad", [0, 70_000], ids=["alone", "past-a-block"])
def test_an_enforce_wrapped_under_its_header_is_joined_deep_in_a_log(tmp_path, pad):
    """An enforce's header alone on its line brings the line under it, at any depth of a long log (the reader keeps
    it with its header, as it keeps NCCL's reason under `Last error:`), and nothing else is joined to it."""
    chatter = "".join(f"step {i} loss 0.{i:04d} lr 3e-4\n" for i in range(pad))
    log = tmp_path / "console.log"
    log.write_text(chatter + "RuntimeError: [enforce fail at /opt/gloo/gloo/transport/tcp/device.cc:84]\n"
                   "    ifa != nullptr. Unable to find address for: ib0\n" + chatter)
    v = run(log).verdict
    assert v.cause is not None and v.cause.cause.kind == "no_socket_interface", v.summary
    assert "Unable to find address for: ib0" in v.summary
