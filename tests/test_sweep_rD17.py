"""The sweep of gloo's error texts (docs/data/sweep-rD17-2026-11-29.md): each message written from gloo's own
format strings (gloo/common/logging.h's GLOO_ENFORCE and GLOO_ERROR_MSG, as PyTorch raises them), alone and after
NCCL's set-up lines, read with its mechanism: the verdict's kind, cause and first step."""

from __future__ import annotations

import pytest
from conftest import run_text

from ncclcheck.render.json_out import analysis_json

_SETUP = ("node1:2001:2001 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
          "node1:2001:2001 [0] NCCL INFO cudaDriverVersion 12040\n"
          "NCCL version 2.21.5+cuda12.4\n")

# (message as printed, verdict kind, cause, words of the first step)
GLOO = [
    # gloo/common/linux.cc pciPath: readlink of /sys/bus/pci/devices/<bus id> (2017's line 103, today's 111)
    ("RuntimeError: [enforce fail at /home/u/pytorch/torch/lib/gloo/gloo/common/linux.cc:103] rv != -1. -1 vs -1. "
     "Invalid argument", "setup_failure", "stated_reason", "GLOO_USE_GPUDIRECT"),
    ("[rank0]: RuntimeError: [enforce fail at ../third_party/gloo/gloo/common/linux.cc:111] rv != -1. -1 vs -1. No "
     "such file or directory", "setup_failure", "stated_reason", "GLOO_USE_GPUDIRECT"),
    # linux.cc listDir: opendir of a device's folder
    ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/common/linux.cc:70] dirp != nullptr. Permission "
     "denied", "setup_failure", "stated_reason", "GLOO_USE_GPUDIRECT"),
    # device.cc lookupAddrForHostname: getaddrinfo's EAI_NONAME; no bindable address; sockaddrToInterfaceName
    ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:99] rv == 0. -2 vs 0. ",
     "setup_failure", "stated_reason", "GLOO_SOCKET_IFNAME"),
    ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:138] rp != nullptr. Unable "
     "to find address for: node7", "launcher_failure", "host_unresolvable", "getent hosts $(hostname)"),
    ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:217] ifa != nullptr. Unable "
     "to find interface for: [10.0.0.5]:0", "setup_failure", "stated_reason", "GLOO_SOCKET_IFNAME"),
    # uv/device.cc CreateDevice (Windows, macOS): the interface named by GLOO_SOCKET_IFNAME
    ("RuntimeError: [enforce fail at C:\\actions-runner\\_work\\pytorch\\pytorch\\third_party\\gloo\\gloo\\transport"
     "\\uv\\device.cc:165] false. Unable to find address for: eth0", "setup_failure", "no_socket_interface",
     "by its exact name"),
    # pair.cc prepareRead: the preamble's length against the posted buffer, with and without 2024's hint
    ("[rank1]: RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:459] "
     "op.preamble.length <= op.nbytes. 4096 vs 2048. Received data size doesn't match expected size. Is there a "
     "distributed collective mismatch in your code?", "rank_failed_first", "stated_reason",
     "TORCH_DISTRIBUTED_DEBUG=DETAIL"),
    ("RuntimeError: [enforce fail at /pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:446] op.preamble.length "
     "<= op.nbytes. 4096 vs 2048", "rank_failed_first", "stated_reason", "TORCH_DISTRIBUTED_DEBUG=DETAIL"),
    # pair.cc connect before 2023 (no connectFullMesh wrapper in PyTorch 1.x), socket.cc connect, uv/pair.cc
    ("RuntimeError: [/opt/conda/conda-bld/pytorch_1616554793803/work/third_party/gloo/gloo/transport/tcp/pair.cc:799]"
     " connect [10.0.0.2]:40123: Connection refused", "launcher_failure", "gloo_peer_refused", "fresh store"),
    ("RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:799] connect [10.0.0.2]:40123: No route "
     "to host", "setup_failure", "gloo_unreachable", "GLOO_SOCKET_IFNAME"),
    ("RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:799] connect [10.0.0.2]:40123: "
     "Connection timed out", "setup_failure", "gloo_unreachable", "GLOO_SOCKET_IFNAME"),
    ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/socket.cc:142] rv != -1. -1 vs -1. "
     "connect: Network is unreachable", "setup_failure", "gloo_unreachable", "GLOO_SOCKET_IFNAME"),
    ("RuntimeError: [C:\\actions-runner\\_work\\pytorch\\pytorch\\third_party\\gloo\\gloo\\transport\\uv\\pair.cc:100]"
     " Error connecting to [10.0.0.2]:40123: connection refused", "launcher_failure", "gloo_peer_refused",
     "fresh store"),
    ("RuntimeError: [C:\\actions-runner\\_work\\pytorch\\pytorch\\third_party\\gloo\\gloo\\transport\\uv\\pair.cc:100]"
     " Error connecting to [10.0.0.2]:40123: connection timed out", "setup_failure", "gloo_unreachable",
     "GLOO_SOCKET_IFNAME"),
    # a loopback peer address stays the loopback entry's (socket_address), before the refused connect
    ("RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:799] connect [127.0.1.1]:40123: "
     "Connection refused", "setup_failure", "socket_address", "127.0.1.1"),
]


@pytest.mark.parametrize("setup", ["", _SETUP], ids=["alone", "after-nccl-setup"])
@pytest.mark.parametrize(("line", "kind", "cause", "step"), GLOO, ids=[g[0][-40:] for g in GLOO])
def test_gloo_message_is_read_with_its_mechanism(line, kind, cause, step, setup):
    v = analysis_json(run_text(setup + line + "\n"))["verdict"]
    assert v["kind"] == kind
    assert (v["cause"] or {}).get("kind") == cause
    assert step in v["next_steps"][0]


# UCX's log format (src/ucs/debug/log.c UCS_LOG_FMT), UCC's records under it: (line, kind, stated source, first step)
UCS = [
    ("[1730117228.178968] [dgx1v-loki-23:3000 :0]   tl_cuda_cache.c:231  UCC  ERROR ipc-cache: failed to open ipc "
     "mem handle. addr:0x7f65a8000000 len:16777216 err:201", "rank_failed_first", "ucs", "UCC_TLS=^cuda"),
    ("[1732000000.123456] [node1:51234:0]    ucc_context.c:424  UCC  ERROR failed to create tl context for nccl",
     "setup_failure", "ucs", "UCC_TLS=^<tl>"),
    ("[1732000000.123456] [node1:51234:0]    ucc_context.c:891  UCC  ERROR ctx create epilog for mlx5 failed with "
     "status: Unhandled error", "setup_failure", "ucs", "UCC_CL_BASIC_TLS=^<tl>"),
    ("[1,0]<stderr>:[1732000000.000001] [node1:51234:0]          ucc_cl.c:59   UCC  ERROR no TLs are selected for "
     "basic", "setup_failure", "ucs", "UCC_TLS=^<tl>"),
    ("[1588000000.654321] [node2:4021 :0]      ib_iface.c:1377 UCX  ERROR mlx5_0: ibv_create_cq(cqe=4096) failed: "
     "Cannot allocate memory", "setup_failure", "ucs", "ulimit -l"),
]


@pytest.mark.parametrize("setup", ["", _SETUP], ids=["alone", "after-nccl-setup"])
@pytest.mark.parametrize(("line", "kind", "source", "step"), UCS, ids=[u[0][-40:] for u in UCS])
def test_ucx_and_ucc_errors_are_their_librarys_stated_reason(line, kind, source, step, setup):
    v = analysis_json(run_text(setup + line + "\n"))["verdict"]
    assert (v["kind"], v["stated"]["source"]) == (kind, source)
    assert step in v["next_steps"][0]


@pytest.mark.parametrize("line", [
    # DEBUG, INFO, DIAG: no failure stated (UCC logs an optional TL's failure at DEBUG and goes on)
    "[1730120424.285612] [dgx1v-loki-23:26352:0]     ucc_context.c:817  UCC  DEBUG ctx create epilog for mlx5 "
    "failed: Unhandled error",
    "[1732000000.000002] [node1:51234:0]     ucp_context.c:2090 UCX  INFO  Version 1.17.0 (loaded from /opt/ucx/lib)",
    # a WARN alone: healthy jobs print them
    "[1732000000.000001] [node1:51234:0]     ucp_context.c:1041 UCX  WARN  network device 'mlx5_9:1' is not "
    "available, please use one or more of: eth0, lo, mlx5_0:1",
])
def test_ucx_records_below_error_state_no_failure(line):
    assert analysis_json(run_text(line + "\n"))["verdict"]["kind"] == "no_failure"


def test_a_ucx_warning_is_quoted_only_where_nothing_says_more():
    """A process that failed with no line of its own saying why, after UCX's warning: the warning is the stated line;
    beside UCC's error record the error is."""
    warn = ("[1732000000.000001] [node1:51234:0]     ucp_context.c:1041 UCX  WARN  network device 'mlx5_9:1' is not "
            "available, please use one or more of: eth0, lo, mlx5_0:1\n")
    err = "[1732000000.123456] [node1:51234:0]    ucc_context.c:424  UCC  ERROR failed to create tl context for nccl\n"
    v = analysis_json(run_text(warn + err))["verdict"]
    assert v["stated"]["source"] == "ucs" and "tl context" in v["stated"]["text"]
