"""NCCL's return trace (``file:line -> N`` under an error, src/include/checks.h's NCCLCHECK) and what it says: the
layer an error came up through and its phase, the communicator's set-up or a call on one already made; nccl-tests'
own check of a call; the network plugin each host loaded (issue 41 sections 1-3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_text

from ncclcheck.evidence.formats import returntrace
from ncclcheck.evidence.types import Loc
from ncclcheck.job.returntrace import CALL, SETUP, Chain, chain_at

PUBLIC = Path(__file__).resolve().parent / "data" / "public_threads"


def _lines(case: str) -> str:
    return next(PUBLIC.glob(f"{case}-*.log")).read_text()


# NCCL 2.x before 2.3 under Horovod (the bootstrap over the IB transport): horovod/horovod#147.
HOROVOD_147 = _lines("186")
# NCCL 2.7's verbs set-up in a pod, its trace through the IB transport into init.cc (NVIDIA/nccl#799).
ROCE_799 = _lines("121")
# NCCL 2.26.2 under PyTorch's nightly: NVLS's set-up through init.cc, the async thread's frames among the caller's
# (https://github.com/pytorch/pytorch/issues/150852, the description's trace).
NVLS_150852 = """\
[2025-04-08 08:39:46] devgpu263:589012:591652 [0] transport/nvls.cc:254 NCCL WARN Cuda failure 1 'invalid argument'
devgpu263:589012:591652 [0] NCCL INFO transport/nvls.cc:409 -> 1
devgpu263:589012:591652 [0] NCCL INFO init.cc:1141 -> 1
devgpu263:589012:591652 [0] NCCL INFO init.cc:1409 -> 1
devgpu263:589012:591652 [0] NCCL INFO group.cc:75 -> 1 [Async thread]
devgpu263:589012:589012 [0] NCCL INFO group.cc:422 -> 1
devgpu263:589012:589012 [0] NCCL INFO group.cc:581 -> 1
devgpu263:589012:589012 [0] NCCL INFO init.cc:1836 -> 1
"""
# A socket transport's broken connection as the job ran (tests/data/corpus/07: socket.cc -> net_socket.cc -> proxy.cc).
SOCKET_07 = (Path(__file__).resolve().parent / "data" / "corpus" /
             "07-nccl-socket-warn-broken-pipe-negative.log").read_text()


def _chains(text: str) -> tuple[Chain, ...]:
    return run_text(text).job.facts.returns


def test_each_release_prints_its_frames_and_the_reader_takes_them_all():
    feed = returntrace.FORMAT.reader().feed
    at = Loc("x", 1)
    said = [f.value for line in (
        "node1:54573:54696 [1] INFO include/net.h:30 -> 2 [Net]",  # 2.0-2.2: no NCCL word, a [Net] tag
        "gpu1:311:311 [0] NCCL INFO misc/socket.cc:484 -> 2 (Connection refused)",  # 2.19+: SYSCHECK's strerror
        "gpu1:311:311 [0] NCCL INFO init.cc:1840 (ncclCommInitRankDev) -> 3",  # 2.30+: INFO_LOC's function
        "NCCL INFO group.cc:73 -> 3 [Async thread]",  # a paste without the header
    ) for f in feed(line, at)]
    assert said == ["include/net.h:30 -> 2 [Net] @node1:54573", "misc/socket.cc:484 -> 2 @gpu1:311",
                    "init.cc:1840 -> 3 @gpu1:311", "group.cc:73 -> 3 [Async thread]"]
    assert list(feed("def f(x) -> int:", at)) == [] and list(feed("a -> b", at)) == []


@pytest.mark.parametrize("text, layer, phase", [
    (HOROVOD_147, "net_ib", SETUP),  # the socket helper's caller is the IB transport; init.cu: the set-up
    (ROCE_799, "net_ib", SETUP),  # misc/ibvwrap.cc's own WARN, then net_ib.cc and init.cc
    (NVLS_150852, "nvls", SETUP),  # one process's async and main threads are one chain
    (SOCKET_07, "net_socket", ""),  # socket.cc's caller, the socket transport; the proxy's frames: no phase
    (_lines("189"), None, CALL),  # argcheck's WARN, enqueue.cc: a call's argument check
    (_lines("205"), "topology", SETUP),  # graph/xml.h's WARN through graph/topo.cc into init.cc
])
def test_the_chain_names_the_layer_and_the_phase(text, layer, phase):
    first = _chains(text)[0]
    assert (first.layer.id if first.layer is not None else None, first.phase) == (layer, phase)


def test_a_chain_follows_its_warn_and_stops_at_the_next():
    chains = _chains(_lines("189"))
    assert [(c.at.line, [str(f) for f in c.frames]) for c in chains] == [
        (8, ["enqueue.cc:447 -> 4"]), (11, ["group.cc:184 -> 4"])]
    assert chain_at(chains, chains[1].at) is chains[1]


def test_a_peers_reset_inside_the_ib_transports_set_up_is_that_transports_set_up_failure():
    v = run_text(HOROVOD_147).verdict
    assert (v.kind.value, v.cause.cause.kind, list(v.culprit_ranks)) == ("setup_failure", "stated_reason", [])
    assert "transport/net_ib.cu:537 -> 2" in v.summary and "InfiniBand/RoCE" in v.summary
    assert any("NCCL_IB_DISABLE=1" in f for f in v.cause.fix)


def test_an_argument_check_under_a_call_is_an_nccl_error_of_that_call():
    v = run_text(_lines("189")).verdict
    assert v.kind.value == "nccl_error"
    assert "enqueue.cc:447 -> 4" in v.summary and "communicator it was made on has no ranks" in v.summary
    assert any("group call of their own" in f for f in v.cause.fix)


def test_an_invalid_root_of_a_made_communicator_says_to_pass_the_groups_rank():
    # the format NCCL 2.30.7's src/misc/argcheck.cc:204 prints, a root beyond a four-rank sub-group's communicator
    v = run_text("gpu1:311:311 [0] misc/argcheck.cc:204 NCCL WARN Broadcast : invalid root 8 (root should be in the "
                 "0..4 range)\ngpu1:311:311 [0] NCCL INFO enqueue.cc:2930 -> 4\n"
                 "[rank8]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3356, invalid "
                 "argument (run with NCCL_DEBUG=WARN for details), NCCL version 2.30.7\n").verdict
    assert v.kind.value == "nccl_error"
    assert v.cause.said is not None and v.cause.said.id == "nccl_invalid_root"
    assert any("group_src" in f for f in v.cause.fix)


@pytest.mark.parametrize("line", [
    "graph/xml.h:77 NCCL WARN Attribute arch of node cpu not found",  # NCCL 2.7, NVIDIA/nccl#379
    "node7:52:52 [0] graph/xml.h:107 NCCL WARN Attribute busid of node nic not found",  # 2.30.7's xml.h:107 format
])
def test_a_topology_node_without_its_attribute_names_the_topology_file(line):
    v = run_text(line + "\nNCCL INFO graph/topo.cc:380 -> 3\nNCCL INFO init.cc:581 -> 3\n").verdict
    assert v.kind.value == "setup_failure"
    assert v.cause.said is not None and v.cause.said.id == "topo_xml_attr_missing"
    assert any("NCCL_TOPO_FILE" in f and "NCCL_TOPO_DUMP_FILE" in f for f in v.cause.fix)


def test_nccl_tests_check_is_the_tests_call_unless_its_lines_place_it_in_its_set_up():
    bare = run_text(_lines("193")).verdict  # no line of the test before it: the call is the test's
    assert (bare.kind.value, bare.cause.cause.kind) == ("nccl_error", "nccl_no_reason")
    assert "common.cu:1294" in bare.summary
    devices = run_text(_lines("124")).verdict  # its device table printed, no result header: in its set-up
    assert devices.kind.value == "setup_failure"
    system = run_text(_lines("13")).verdict  # a system error's mechanisms are the host's set-up
    assert system.kind.value == "setup_failure"


def test_nccl_tests_1x_check_is_read_too():
    feed = returntrace.FORMAT.reader().feed
    assert [f.value for f in feed("NCCL failure all_reduce.cu:95 'unhandled cuda error'", Loc("x", 1))] == [
        "all_reduce.cu:95"]


def test_two_hosts_on_different_network_plugins_is_a_finding_with_one_plugin_as_its_fix():
    v = run_text(_lines("192")).verdict
    found = [f for f in v.findings if f.code == "net-plugin-differs"]
    assert len(found) == 1
    assert found[0].evidence == ("/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so (HGX-H100-04)",
                                 "internal (HGX-H100-11)")
    assert "NCCL_NET_PLUGIN" in (found[0].fix or "")


def test_two_hosts_loading_the_same_plugin_agree():
    # NCCL 2.18's line on both hosts (src/net.cc, "NET/Plugin: Loaded net plugin %s (v%d)")
    text = ("a1:10:10 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v6 (v6)\n"
            "a2:10:10 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v6 (v6)\n")
    assert not [f for f in run_text(text).verdict.findings if f.code == "net-plugin-differs"]


STATED = Path(__file__).resolve().parent / "data" / "stated_formats"


@pytest.mark.parametrize("first, entry", [
    (0, "nccl_invalid_root"), (2, "nccl_invalid_type_or_op"), (4, "nccl_invalid_type_or_op"),
    (6, "nccl_invalid_type_or_op"), (7, "nccl_self_send_unmatched"),
])
def test_each_argument_check_is_an_nccl_error_of_the_call_with_its_meaning(first, entry):
    lines = (STATED / "nccl_argcheck.log").read_text().splitlines()
    block = [lines[first], *(x for x in lines[first + 1:first + 2] if " -> " in x)]
    v = run_text("\n".join(block) + "\n").verdict
    assert v.kind.value == "nccl_error"
    assert v.cause is not None and v.cause.said is not None and v.cause.said.id == entry


def test_send_and_recv_on_a_communicator_of_no_ranks_in_another_release():
    """NCCL 2.14.3's send and receive (NVIDIA/nccl#963): the same argument check under collectives/sendrecv.cc."""
    text = (STATED / "nccl-963-sendrecv-no-ranks.log").read_text()
    first = _chains(text)[0]
    assert (first.phase, [str(f) for f in first.frames]) == (
        CALL, ["enqueue.cc:1450 -> 4", "group.cc:106 -> 4", "collectives/sendrecv.cc:37 -> 4"])
    v = run_text(text).verdict
    assert v.kind.value == "nccl_error" and v.cause.said.id == "nccl_root_no_ranks"


def test_a_trace_deep_in_a_chatty_log_is_read_and_the_connection_lines_are_not_frames():
    """NCCL's connection lines hold an arrow too (`0[0] -> 1[1] via P2P/IPC`): 256 KiB of them before the trace, past
    the input's head, where the trace is found by its own shape (a return code after the arrow)."""
    chatter = "".join(f"node1:54573:54696 [1] NCCL INFO Channel {i % 32:02d}/0 : {i % 2}[0] -> 1[1] via P2P/IPC\n"
                      for i in range(4000))
    a = run_text(chatter + HOROVOD_147)
    assert a.verdict.kind.value == "setup_failure"
    assert [str(f) for f in a.job.facts.returns[0].frames][:2] == ["transport/net_ib.cu:537 -> 2",
                                                                    "transport/net_ib.cu:610 -> 2"]
    assert not any(f.key == "nccl_return" and "[1]" in f.value for s in a.scans for f in s.facts)
