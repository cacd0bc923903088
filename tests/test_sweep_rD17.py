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
