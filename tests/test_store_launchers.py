"""What the rendezvous store's client, the launchers' own failures and their stop lines state (issue 41): the store's
client lines with or without an exception's name, their errno's meaning, torchrun's agent failing itself, the
ncclUniqueId wait in a send or recv, DeepSpeed's runner without a hostfile and Slurm's stop after a task's failure.
Each reads a recording (tests/data/launchers/, tools/launchers/torchrun_store.sh and slurm.sh) or the words of the
source that prints them."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run, run_text

from ncclcheck.evidence import formats
from ncclcheck.job.statements import told

LAUNCHERS = Path(__file__).parent / "data" / "launchers"
WRONG_PORT = LAUNCHERS / "torchrun" / "store_wrong_port" / "console.log"
NOT_A_STORE = LAUNCHERS / "torchrun" / "store_not_a_store" / "console.log"


def _line(path: Path, words: str) -> str:
    return next(x for x in path.read_text().splitlines() if words in x)


def test_the_store_clients_own_line_without_an_exceptions_name_is_a_store_that_could_not_be_reached():
    # the recorded client's line, its glog head and c10d's tag left off, as a console quotes it alone
    line = _line(WRONG_PORT, "[c10d] The client socket has timed out").split("[c10d] ", 1)[1]
    assert line == "The client socket has timed out after 8000ms while trying to connect to (localhost, 9)."
    v = run_text(line + "\n").verdict
    assert (v.kind.value, v.culprit_ranks, v.cause.cause.kind) == ("launcher_failure", (), "store_unreachable")
    assert "that is the store's client kept trying to connect" in v.summary
    assert "ss -ltnp" in v.next_steps[0]


@pytest.mark.parametrize("text", [
    # socket.cpp's SocketConnectOp::throwTimeoutError, 2.x ("... after {} while trying to connect to ({}, {}).") and
    # 1.x-2.0 ("... to {}:{}"), each hard-wrapped before its address as a console or a paste wraps it: the first
    # line alone is the connect timeout (c10d prints "client socket has timed out after" for nothing else)
    "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms\nwhile trying to connect to "
    "(10.0.0.7, 29500).\n",
    "RuntimeError: The client socket has timed out after 1800s\n while trying to connect to 10.0.0.7:29500\n",
])
def test_a_store_client_timeout_wrapped_before_its_address_is_still_the_store(text):
    v = run_text(text).verdict
    assert (v.kind.value, v.culprit_ranks, v.cause.cause.kind) == ("launcher_failure", (), "store_unreachable")
    assert "that is the store's client kept trying to connect" in v.summary


def test_each_errno_the_store_client_prints_names_where_the_connection_failed():
    # socket.cpp's "The client socket has failed to connect to {} {}." with the errno as c10d formats it
    said = {n: told(f"The client socket has failed to connect to [node0]:29500 (errno: {n} - {text}).")
            for n, text in ((110, "Connection timed out"), (111, "Connection refused"), (113, "No route to host"))}
    assert {n: s.id for n, s in said.items() if s} == {110: "store_connect_timed_out", 111: "store_connect_refused",
                                                      113: "store_no_route"}
    assert "firewall" in said[110].means and "nothing listens" in said[111].means
    assert told("The client socket has failed to connect to [node0]:29500 (errno: 99 - Cannot assign requested "
                "address).") is None  # the IPv6 loopback's warning, no failure of its own


def test_the_refused_connections_fix_comes_before_the_stores_own(write):
    v = run(write("c.log", "[rank1]: torch.distributed.DistNetworkError: The client socket has failed to connect to "
                           "any network address of (node0, 29500). The client socket has failed to connect to "
                           "node0:29500 (errno: 111 - Connection refused).")).verdict
    assert v.cause.cause.kind == "store_unreachable"
    assert v.next_steps[0].startswith("On the store's node, `ss -ltnp | grep PORT`")


def test_a_one_node_job_whose_store_is_its_own_host_name_is_told_the_loopback_address(write):
    placed = ["vm:2001:2001 [0] NCCL INFO Bootstrap : Using eth0:192.0.2.2<0>",
              "vm:2002:2002 [1] NCCL INFO Bootstrap : Using eth0:192.0.2.2<0>"]
    fail = ("[rank1]: torch.distributed.DistNetworkError: The client socket has failed to connect to any network "
            "address of (vm, 29500). The client socket has failed to connect to vm:29500 (errno: 110 - Connection "
            "timed out).")
    one = run(write("r0.log", "[rank0]: " + placed[0]), write("r1.log", "[rank1]: " + placed[1], fail)).verdict
    assert one.next_steps[0].startswith("Every rank these inputs place ran on vm, the store's own host")
    two = run(write("s0.log", "[rank0]: " + placed[0]),
              write("s1.log", "[rank1]: " + placed[1].replace("vm:", "node7:"), fail)).verdict
    assert not any("loopback address" in s and "Every rank" in s for s in two.next_steps)


def test_another_program_at_the_stores_address_is_no_store():
    v = run(NOT_A_STORE).verdict
    assert v.cause.cause.kind == "store_unreachable"
    assert "not PyTorch's store" in v.summary


def test_torchruns_agent_failing_in_agent_run_is_read_from_its_traceback_alone(write):
    """The recorded agent's traceback with its log lines gone and cut before its exception: launch_agent's frame
    stands over `result = agent.run()`, so the agent failed itself, not a worker."""
    lines = NOT_A_STORE.read_text().splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("Traceback"))
    cut = next(i for i, x in enumerate(lines) if "self._rendezvous(worker_group)" in x)
    v = run(write("agent.log", *(f"(CommandActor pid=2809) {x}" for x in lines[start:cut + 1]))).verdict
    assert (v.kind.value, v.cause.cause.kind) == ("launcher_failure", "rdzv_failed")
    assert "runs out of launch_agent's agent.run()" in v.summary
    assert any("--rdzv-endpoint HOST:PORT" in s for s in v.next_steps)


def test_a_workers_failure_raised_by_launch_agent_is_not_the_agents_own():
    v = run(LAUNCHERS / "torchrun" / "busy_store_console" / "console.log").verdict
    assert v.cause is None or v.cause.cause.kind != "rdzv_failed"
    said = formats.rendezvous.FORMAT.reader()
    out = [*said.feed('  File "/x/torch/distributed/launcher/api.py", line 383, in launch_agent', formats.AT),
           *said.feed("    raise ChildFailedError(", formats.AT)]
    assert out == []


def test_the_nccl_id_wait_in_a_collective_names_the_group_rank_zero_and_in_a_pair_no_one(write):
    # ProcessGroupNCCL::broadcastUniqueNCCLID's words: the key is the group's n-th communicator, or a pair's
    head = "[rank2]: torch.distributed.DistBackendError: [2] is setting up NCCL communicator and retrieving ncclUniqueId "
    tail = "but store->get('{k}') got error: wait timeout after 600000ms"
    collective = run(write("c.log", f"{head}from [0] via c10d key-value store by key '0', {tail.format(k='0')}")).verdict
    assert (collective.kind.value, collective.culprit_ranks) == ("lagging_rank", (0,))
    pair = run(write("p.log", f"{head}from [0] via c10d key-value store by key '0:2', {tail.format(k='0:2')}")).verdict
    assert (pair.kind.value, pair.culprit_ranks, pair.cause.cause.kind) == ("setup_failure", (), "lazy_p2p_setup")
    assert "device_id=" in pair.next_steps[0] and "LOCAL_RANK" in pair.next_steps[0]


def test_the_nccl_id_wait_under_a_recv_in_its_traceback_names_no_culprit(write):
    frame = ('[rank2]:   File "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py", line 2529, '
             'in recv')
    wait = ("[rank2]: torch.distributed.DistBackendError: [2] is setting up NCCL communicator and retrieving "
            "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: wait timeout "
            "after 600000ms")
    v = run(write("r.log", frame, "[rank2]:     pg.recv([tensor], group_src_rank, tag).wait()", wait)).verdict
    assert (v.kind.value, v.culprit_ranks, v.cause.cause.kind) == ("setup_failure", (), "lazy_p2p_setup")
    assert "waited in a recv" in v.summary


def test_deepspeeds_runner_without_a_hostfile_says_each_node_trained_alone():
    clean = run(LAUNCHERS / "deepspeed" / "clean" / "console.log").verdict
    assert clean.kind.value == "no_failure"
    assert [f.code for f in clean.findings if f.code == "deepspeed-local-only"] == ["deepspeed-local-only"]
    assert any("--deepspeed_multinode_launcher standard" in s for s in clean.next_steps)
    killed = run(LAUNCHERS / "deepspeed" / "kill" / "console.log").verdict  # a rank's own failure says why it ended
    assert not any("hostfile" in s for s in killed.next_steps)


def test_deepspeeds_runner_refusals_state_their_fix():
    said = told("RuntimeError: Using hostfile at /job/hostfile but host=worker-1 was not reachable via ssh. If you "
                "are running with a single node please remove /job/hostfile or setup passwordless ssh.")
    assert said is not None and said.id == "deepspeed_hostfile_ssh"
    assert told("RuntimeError: launcher 'pdsh' not installed.").id == "deepspeed_launcher_missing"


def test_slurms_cancel_after_a_tasks_failure_is_the_launchers_stop_not_an_outside_one():
    # src/slurmd/slurmstepd/req.c: SIG_TERM_KILL (srun's --kill-on-bad-exit) against a time limit
    assert not formats.is_stop("slurmstepd: error: *** STEP 11.0 ON vm CANCELLED AT 2026-11-25T15:05:34 DUE TO TASK "
                               "FAILURE ***")
    assert formats.is_stop("slurmstepd: error: *** STEP 11.0 ON vm CANCELLED AT 2026-11-25T15:05:34 DUE TO TIME "
                           "LIMIT ***")
    v = run(LAUNCHERS / "slurm" / "killbad" / "console.log").verdict
    assert (v.kind.value, v.culprit_ranks, v.stopped_ranks) == ("rank_failed_first", (2,), (0,))


def test_each_recorded_refusal_of_deepspeeds_runner_is_the_launchers_failure_with_its_fix():
    """tools/launchers/deepspeed_runner.sh: the runner raised before any worker started."""
    first = {"no_ssh": "Set up passwordless ssh", "launcher_missing": "Install the launcher the runner uses",
             "bad_hostfile": "Write the hostfile", "num_nodes": "Give the runner a hostfile",
             "node_rank": "Start the runner on every node with its own `--node_rank`"}
    for case, step in first.items():
        v = run(LAUNCHERS / "deepspeed_runner" / f"{case}.log").verdict
        assert (v.kind.value, v.culprit_ranks) == ("launcher_failure", ()), case
        # num_nodes' runner also said it found no hostfile: how to start a multi-node job comes first there
        assert any(s.startswith(step) for s in v.next_steps[:2]), case
