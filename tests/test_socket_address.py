"""The catalogue's socket_address: an address or interface that does not fit the hosts, in every library's words.

The recorded runs (tests/data/net_setup/README.md) and each line form written from its source's format string: gloo's
enforce checks (gloo/transport/tcp/device.cc, gloo/common/logging.h), its pair's connect error before and after 2023
(pair.cc, helpers.h), PyTorch's gloo device check (ProcessGroupGloo.cpp) and c10d's server socket (socket.cpp), NCCL's
SYSCHECK, pyzmq's bind and Open MPI's TCP BTL (btl_tcp_endpoint.c). No rank is a culprit: every rank of a host with
the setting fails alike. The neighbours that are not it stay theirs.
"""

from __future__ import annotations

import pytest
from conftest import DATA, run, run_text

NET = DATA / "net_setup"


def _verdict(analysis):
    v = analysis.verdict
    return v.kind.value, v.cause.cause.kind if v.cause else None, list(v.culprit_ranks)


@pytest.mark.parametrize(("case", "cause"), [
    # gloo's interface lookup is the narrower no_socket_interface (an interface this host lacks), whichever name
    ("gloo_ifname_missing", "no_socket_interface"), ("gloo_ifname_exclusion", "no_socket_interface"),
    ("gloo_address_not_local", "socket_address"),
])
def test_recorded_runs_are_the_hosts_address(case, cause):
    analysis = run(NET / case / "console.log")
    assert _verdict(analysis) == ("setup_failure", cause, [])
    assert any("GLOO_SOCKET_IFNAME" in f for f in (*analysis.verdict.cause.fix, *analysis.verdict.next_steps))


def test_nccls_exclusion_syntax_given_to_gloo_is_named():
    """`GLOO_SOCKET_IFNAME=^lo` (recorded): gloo looks for an interface called `^lo`; the first step says the `^`
    exclusion is NCCL_SOCKET_IFNAME's syntax, which gloo does not read."""
    steps = run(NET / "gloo_ifname_exclusion" / "console.log").verdict.next_steps
    assert "GLOO_SOCKET_IFNAME" in steps[0] and "exclusion syntax are NCCL_SOCKET_IFNAME's, not gloo's" in steps[0]


def test_gloos_interface_lookup_on_every_rank_is_no_rank_fault():
    """gloo's lookupAddrForIface on both ranks (an interface name the host lacks): the narrower no_socket_interface."""
    lines = ["[rank0]: RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != "
             "nullptr. Unable to find address for: ens9f0",
             "[rank1]: RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != "
             "nullptr. Unable to find address for: ens9f0"]
    assert _verdict(run_text("\n".join(lines) + "\n")) == ("setup_failure", "no_socket_interface", [])


@pytest.mark.parametrize("lines", [
    # gloo's Device::isInitiator: each side names its own family first (GLOO_ENFORCE_EQ's "x vs y")
    ["[rank0]: RuntimeError: [enforce fail at /opt/gloo/gloo/transport/tcp/device.cc:288] ss1.ss_family == "
     "ss2.ss_family. 2 vs 10",
     "[rank1]: RuntimeError: [enforce fail at /opt/gloo/gloo/transport/tcp/device.cc:288] ss1.ss_family == "
     "ss2.ss_family. 10 vs 2"],
    # gloo's lookupAddrForHostname: the host name's address is not this host's
    ["[rank3]: RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:152] bind_rv == 0. "
     "Unable to find address for gpu-12; bind(2) for 10.1.0.12 failed with: Cannot assign requested address"],
    # c10d's server socket, before 2.4 and since
    ["[rank0]: torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
     "address. The server socket has failed to bind to 10.1.0.12:29500 (errno: 99 - Cannot assign requested address)."],
    ["torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: "
     "29500, useIpv6: false, code: -99, name: EADDRNOTAVAIL, message: cannot assign requested address"],
    # NCCL's SYSCHECK over bind (its bootstrap's or a transport's listen address)
    ["node1:2240:2240 [0] misc/socket.cc:433 NCCL WARN Call to bind failed : Cannot assign requested address"],
    # pyzmq's bind over zmq_bind's EADDRNOTAVAIL
    ["zmq.error.ZMQError: Cannot assign requested address (addr='tcp://10.1.0.12:5600')"],
    # gloo's pair before 2023 and since, to a peer's loopback address that is not 127.0.0.1
    ["[/opt/gloo/gloo/transport/tcp/pair.cc:799] connect [127.0.1.1]:45325: Connection refused"],
    ["[rank1]: RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] "
     "timed out connecting: SO_ERROR: Connection refused, remote=[127.0.1.1]:36811"],
    # NVSHMEM's UID bootstrap finding no interface by its settings, and Triton-distributed's launcher's warning that
    # the one it gives the bootstrap does not exist (its colour codes left off)
    ["/opt/nvshmem/src/modules/bootstrap/uid/bootstrap_uid.cpp:bootstrap_net_init:160: No socket interface found"],
    ["WARNING:  NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=ens3 does not exist...",
     "WARNING:  NVSHMEM_BOOTSTRAP_UID_SOCK_FAMILY=AF_INET does not support IPv4, force set "
     "NVSHMEM_BOOTSTRAP_UID_SOCK_FAMILY to AF_INET6..."],
    # Open MPI's TCP BTL, 4.0 on and before
    ["[node2][[4711,1],3][btl_tcp_endpoint.c:676:mca_btl_tcp_endpoint_recv_connect_ack] received unexpected process "
     "identifier: got [[4711,1],0] expected [[4711,1],5]"],
    ["[node2][[4711,1],3][btl_tcp_endpoint.c:626:mca_btl_tcp_endpoint_recv_connect_ack] received unexpected process "
     "identifier [[4711,1],5]"],
])
def test_line_forms_are_the_hosts_address_and_no_ranks_fault(lines):
    assert _verdict(run_text("\n".join(lines) + "\n")) == ("setup_failure", "socket_address", [])


@pytest.mark.parametrize(("line", "cause"), [
    # a host name gloo cannot find at all is the resolver's, not an interface's
    ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:138] rp != nullptr. "
     "Unable to find address for: node-7", "host_unresolvable"),
    # a refused pair on 127.0.0.1: a one-host job's peer that is gone (a reused store), not a loopback across hosts
    ("RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:152] timed out "
     "connecting: SO_ERROR: Connection refused, remote=[127.0.0.1]:6047", "gloo_peer_refused"),
    # the store's client on an IPv6 localhost without IPv6: connect's EADDRNOTAVAIL, not a bind
    ("[W socket.cpp:601] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 99 - Cannot "
     "assign requested address).", "store_unreachable"),
    # NCCL's own bootstrap finding no interface is NCCL's setting (no_socket_interface), not NVSHMEM's
    ("node1:1958:1958 [3] NCCL WARN Bootstrap : no socket interface found", "no_socket_interface"),
    # the port is taken: the address is this host's
    ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. The "
     "server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).", "port_in_use"),
])
def test_neighbours_stay_theirs(line, cause):
    _, got, _ = _verdict(run_text(line + "\n"))
    assert got == cause


@pytest.mark.parametrize(("line", "setting"), [
    ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. Unable to "
     "find address for: ens9f0", "GLOO_SOCKET_IFNAME"),
    ("RuntimeError: [enforce fail at /opt/gloo/gloo/transport/tcp/device.cc:288] ss1.ss_family == ss2.ss_family. "
     "10 vs 2", "IPv4"),
    ("zmq.error.ZMQError: Cannot assign requested address (addr='tcp://10.1.0.12:5600')", "hostname -I"),
    ("[/opt/gloo/gloo/transport/tcp/pair.cc:799] connect [127.0.1.1]:45325: Connection refused", "/etc/hosts"),
    ("[node2][[4711,1],3][btl_tcp_endpoint.c:626:mca_btl_tcp_endpoint_recv_connect_ack] received unexpected process "
     "identifier [[4711,1],5]", "btl_tcp_if_include"),
    ("WARNING:  NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=ens3 does not exist...", "NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME"),
])
def test_each_form_leads_with_the_setting_of_the_library_that_printed_it(line, setting):
    # job/statements.toml's entry for the form puts its fix before the cause's general one
    assert setting in run_text(line + "\n").verdict.next_steps[0]


def test_the_summary_names_what_could_not_be_set_up_not_nccl():
    """gloo, MPI and ZeroMQ print this cause's lines: the summary says the ranks' connections, never NCCL's set-up."""
    line = ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:152] bind_rv == 0. "
            "Unable to find address for gpu-12; bind(2) for 10.1.0.12 failed with: Cannot assign requested address")
    summary = run_text(line + "\n").verdict.summary
    assert summary.startswith("The job could not set up the connections between its ranks, a socket's address")
    assert "NCCL" not in summary
    line = ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. "
            "Unable to find address for: ib0")
    summary = run_text(line + "\n").verdict.summary
    assert summary.startswith("The job could not set up the connections between its ranks, no usable network "
                              "interface")
