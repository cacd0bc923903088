"""Issue 41 §3-§5's mechanisms that earlier recordings lacked, each provoked in a real run (docs/recordings.md).

tests/data/gpu/mechanisms/ was recorded on 2 x H100 (torch 2.11.0+cu130, NCCL 2.28.9) by tools/record41/run_gpu.sh
(its nccl_* cases on 2 x H200 by tools/record41/run_gpu2.sh),
tests/data/gloo_mechanisms/ on the development VM (torch 2.13 CPU, gloo) by tools/record41/run_cpu.sh; their READMEs
say what each run did. Each expected verdict is written from what the run did, not from ncclcheck's answer; where
ncclcheck is wrong today the case is a strict xfail naming the mechanism it misses.
"""

from __future__ import annotations

import pytest
from conftest import DATA, run

GPU = DATA / "gpu" / "mechanisms"
GLOO = DATA / "gloo_mechanisms"


def _verdict(path):
    v = run(path).verdict
    return v.kind.value, v.cause.cause.kind if v.cause else None, list(v.culprit_ranks)


def _miss(reason):
    return pytest.mark.xfail(strict=True, reason=reason)


@pytest.mark.parametrize(("path", "kind", "cause", "culprits"), [
    # §3: NCCL_PROTO=Simple on rank 1 alone; the one-element first all_reduce never completed on either rank, no error.
    # At NCCL's default log level nothing names the setting: the transport or P2P path, with the isolating runs
    (GPU / "first", "all_ranks_stuck", "first_collective_hang", []),
    # the same at NCCL_DEBUG=INFO: NCCL's settings lines show the ranks disagree on NCCL_PROTO
    (GPU / "first_info", "all_ranks_stuck", "settings_differ_hang", []),
    # §3: rank 1 alone bootstraps on lo; one host, so the job ran (the cross-rank table names the interfaces)
    (GPU / "ifname_split", "no_failure", None, []),
    # §3: NCCL_P2P_LEVEL=LOC: NCCL takes SHM between the GPUs, the job runs
    (GPU / "p2p_level", "no_failure", None, []),
    # §5: rank 1's fourth all_reduce queued behind a long kernel: its dump says scheduled, rank 0's started
    (GPU / "scheduled", "lagging_rank", None, [1]),
    # §5: rank 1 sent rank 0 two elements where rank 0 expected four: rank 1 finished the all_to_all and waits in #4,
    # rank 0 is still inside #3 (an earlier sequence number: a mismatch, not a lagging rank); rank 1 completed #3, so
    # the two elements rank 0 lacks are its one peer's: rank 1's input was short (job/frmatch.py)
    (GPU / "a2a_short", "collective_mismatch", None, [1]),
    # §5: reduce_scatter_tensor's output as large as its input: PyTorch's ValueError on both ranks, each the rank
    # that made the wrong call (job/sizecheck.py)
    (GPU / "rs_size", "collective_mismatch", "collective_size", [0, 1]),
    # §4 over NCCL (tools/record41/run_gpu2.sh): rank 1 exits 0 after three all_reduces, rank 0 times out in the 4th
    (GPU / "nccl_early_exit", "collective_mismatch", None, [1]),
    # kill -TERM of rank 1 from outside: the agent's closing SIGTERM stopped rank 0
    (GPU / "nccl_outside_term", "rank_failed_first", "outside_stop", [1]),
    (GPU / "nccl_agent_term", "launcher_failure", "stopped_externally", []),  # kill -TERM of torchrun itself
    (GPU / "nccl_sigint", "launcher_failure", None, []),  # SIGINT to torchrun's process group: Ctrl-C
    # rank 0 holds 7 batches, rank 1 6: rank 0's 7th all_reduce against rank 1's barrier, "batch 7/7" against "6/6"
    (GPU / "nccl_uneven", "collective_mismatch", None, []),
    (GPU / "nccl_cut" / "torchrun", "incomplete_evidence", None, []),  # every process SIGKILLed mid-run
    (GPU / "nccl_cut", "incomplete_evidence", "console_cut", []),
    # §4: a torchrun console that stops mid-run ('step 7/400') with no failure report, closing signal or exit of its
    # agent is a job cut off, not no_failure (job/ending.py)
    (GPU / "nccl_cut" / "console.log", "incomplete_evidence", "console_cut", []),
    # §5: gloo: rank 0 (broadcast's root) sleeps in host code, rank 1 times out inside broadcast
    (GLOO / "gloo_bcast", "lagging_rank", None, [0]),
    (GLOO / "gloo_bcast" / "console.log", "lagging_rank", None, [0]),
    # gloo does not check all_to_all's splits against the peers': the short send completed, the job exited 0
    (GLOO / "gloo_a2a_short" / "console.log", "no_failure", None, []),
    # §4: the agent and both workers SIGKILLed mid-run: the per-rank folder stops without an ending
    (GLOO / "cut" / "logs", "incomplete_evidence", None, []),
    (GLOO / "cut", "incomplete_evidence", "console_cut", []),
    # §4: the same over gloo (the node or the container lost), with and without the per-rank folder
    (GLOO / "cut" / "console.log", "incomplete_evidence", "console_cut", []),
    # §4: a clean run: each rank's last line is its word that it is done ("job rank=0 done"), and torchrun's console is
    # among the inputs: no_failure, never a request for the console it was given
    (GLOO / "gloo_a2a_short", "no_failure", None, []),
    # §5: gloo's size check (ProcessGroupGloo 'Check failed: outputShape[0] * worldSize == inputShape[0]') is the
    # same size error as NCCL's ValueError: reduce_scatter's output is input / group size, each rank the one that
    # made the wrong call (job/sizecheck.py), as rs_size over NCCL
    (GLOO / "gloo_rs_size", "collective_mismatch", "collective_size", [0, 1]),
    (GLOO / "gloo_rs_size" / "console.log", "collective_mismatch", "collective_size", [0, 1]),
])
def test_each_mechanism_reads_as_it_ran(path, kind, cause, culprits):
    assert _verdict(path) == (kind, cause, culprits)


def test_the_short_all_to_all_sender_is_named():
    """§5: in a two-rank all_to_all the rank that finished received all it expected, so the elements the stuck rank 0
    lacks are its one peer's: rank 1's input was short."""
    v = run(GPU / "a2a_short").verdict
    assert list(v.culprit_ranks) == [1] and list(v.waiting_ranks) == [0]
    assert "rank 0 still waits for the 2 missing, and its only peer is rank 1" in v.summary


def test_restarts_over_nccl_are_found_at_the_default_log_level():
    """--max-restarts 2, rank 1 raising in each attempt: three attempts from the repeated fail/stop cycles."""
    a = run(GPU / "nccl_restarts" / "console.log")
    assert a.attempt_count == 3 and list(a.verdict.stopped_ranks) == [0]


def test_a_refused_nccl_bootstrap_connect_after_a_restart_is_not_the_store():
    """The last attempt's rank 1 failed in init_process_group inside NCCL's bootstrap (`socketPollConnect: connect to
    192.0.2.2<57551> returned Connection refused`, the root's address from the NCCL unique id it read; rank 0 of that
    attempt was still in init): a peer's NCCL listener refused, the store answered, like gloo's connectFullMesh
    refusal after a restart (world/restart_setup)."""
    v = run(GPU / "nccl_restarts" / "console.log").verdict
    assert v.cause is not None and v.cause.cause.kind == "nccl_peer_refused"


def test_the_bootstrap_interfaces_of_each_rank_are_a_finding():
    """Rank 0 bootstrapped on eth0, rank 1 (NCCL_SOCKET_IFNAME=lo) on lo: the report names both."""
    a = run(GPU / "ifname_split")
    (f,) = [f for f in a.verdict.findings if f.code == "bootstrap-interface-differs"]
    assert "eth0 (rank 0)" in f.evidence and "lo (rank 1)" in f.evidence


def test_the_transport_finding_names_the_path_the_channels_took():
    """NCCL_P2P_LEVEL=LOC put the GPUs' channels on SHM (`via SHM/direct/direct`); NCCL loaded network Socket, which no
    channel of this one-node job used (job/channels.py)."""
    a = run(GPU / "p2p_level")
    (f,) = [f for f in a.verdict.findings if f.code == "transport"]
    assert "via SHM/direct/direct" in f.message and "no connection in these inputs used" in f.message


def test_the_transport_finding_names_the_network_where_a_channel_took_it():
    a = run(GPU.parent / "layers" / "netplugin_sockets")
    (f,) = [f for f in a.verdict.findings if f.code == "transport"]
    assert "via NET/Socket/0" in f.message and "the network transport was Socket" in f.message


def test_the_gloo_timeout_names_broadcast_from_the_traceback():
    """gloo's timeout names no op; the traceback's `in broadcast` does."""
    a = run(GLOO / "gloo_bcast" / "console.log")
    assert "broadcast" in " ".join(a.verdict.chain)


def test_a_cut_console_with_its_folder_is_not_told_to_bring_the_console():
    """The per-rank files stop without an ending and the console is given: the console decides (job/ending.py), and
    the verdict never asks for the console it holds."""
    v = run(GLOO / "cut").verdict
    assert "which these inputs do not hold" not in v.summary and "cut/console.log" in v.summary


def test_a_console_whose_agent_says_its_workers_finished_is_no_cut(tmp_path):
    """LOGLEVEL=INFO: torchrun's agent says 'Local worker group finished (WorkerState.SUCCEEDED)' on success, and a
    worker's own 'rank=N done' is its end: either after the same lines reads no_failure."""
    lines = (GLOO / "cut" / "console.log").read_text()
    agent = tmp_path / "agent.log"
    agent.write_text(lines + "I1127 21:29:59.000000 628 torch/distributed/elastic/agent/server/api.py:932] Local "
                     "worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish\n")
    worker = tmp_path / "worker.log"
    worker.write_text(lines + "[default0]:job rank=0 done\n[default1]:job rank=1 done\n")
    assert [run(p).verdict.kind.value for p in (agent, worker)] == ["no_failure", "no_failure"]
