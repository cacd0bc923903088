"""The layers under NCCL's collectives (issue 41 section 3): a WARN line's layer from the file NCCL printed, from its
format string (job/warn_sites.json, derived from NCCL's source by tools/nccl_warn_sites.py) or from a network
plugin's prefix, and each layer's knob and isolating step in the verdict; rdma-core's work-completion statuses from
any program's line; nccl-tests' CUDA failure.

Every line is written as its source prints it; each cites the release and file:line it is taken from.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from conftest import DATA

from ncclcheck.evidence.reader import resolve
from ncclcheck.evidence.wcstatus import WC_STATUS, completion_error
from ncclcheck.job.analyze import analyze
from ncclcheck.job.layers import LAYERS, LayerTableError, file_layer, layer_of, read_layers, sites
from ncclcheck.job.statements import explained
from ncclcheck.render.json_out import analysis_json

try:
    import re._parser as sre_parse  # type: ignore[import-not-found]
except ImportError:  # Python 3.10
    import sre_parse  # type: ignore[no-redef]

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import nccl_warn_sites  # noqa: E402

LAYERS_GPU = DATA / "gpu" / "layers"


def _verdict(tmp_path: Path, *lines: str) -> dict:
    log = tmp_path / "console.log"
    log.write_text("".join(x + "\n" for x in lines))
    problems: list[str] = []
    sources = resolve([str(log)], lambda e: problems.append(str(e)))
    assert not problems
    return analysis_json(analyze(sources, workers=1))["verdict"]


def _fix(v: dict) -> str:
    return "\n".join([*v["next_steps"], *(v["cause"] or {}).get("fix", [])])


def _id(name: str) -> str:
    return next(x.id for x in LAYERS if x.id == name)


# ----------------------------------------------------------------------------------------- the derivation from source


def test_a_warn_calls_format_is_its_joined_literals():
    """Adjacent literals join, an inttypes macro between them is its conversion, escapes resolve (C's rules), and
    the call's line is the WARN's."""
    src = ('int f() {\n  WARN("Bootstrap Root : rank %d of %d ranks "\n       "has already checked in", r, n);\n'
           '  WARN("id %" PRIx64 " \\"x\\"", id);\n  WARN(msg);\n}\n')
    assert list(nccl_warn_sites.sites(src)) == [
        (2, "Bootstrap Root : rank %d of %d ranks has already checked in"), (4, 'id %x "x"')]


def test_a_format_becomes_a_bounded_regex_of_its_first_line():
    """NCCL 2.27's NVLS bind failure (src/transport/nvls.cc:376 in 2.30.7) prints two lines: its first is kept, each
    conversion a bounded class, its longest literal run the key a line must hold."""
    fmt = ("Failed to bind NVLink SHARP (NVLS) Multicast memory of size %ld : CUDA error %d '%s'.\n"
           "This is usually caused by a system or configuration error in the Fabric Manager or NVSwitches.")
    pattern, key = nccl_warn_sites.to_regex(fmt)
    assert key == "Failed to bind NVLink SHARP (NVLS) Multicast memory of size"
    assert re.search(pattern, "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 "
                              "'the operation cannot be performed in the present state'.")
    assert not re.search(pattern, "Failed to bind NVLink SHARP (NVLS) Multicast memory of size big : CUDA error")


def test_the_derived_sites_hold_nccls_own_formats_with_their_files():
    """job/warn_sites.json, as tools/nccl_warn_sites.py derived it from NVIDIA/nccl's releases 2.3.7-2.30.7."""
    data = json.loads((Path(nccl_warn_sites.OUT)).read_text())
    assert data["releases"][0] == "2.3.7" and data["releases"][-1] == "2.30.7"
    by_key = {s["key"]: s for s in data["sites"]}  # one format's conversions may differ between releases (%d, %ld)
    assert by_key["socketStartConnect: Connect to"]["files"] == {"misc/socket.cc": 485}
    assert by_key["XML Import Channel : dev"]["files"] == {"graph/search.cc": 919}
    assert by_key["Bootstrap : no socket interface found"]["first"] == "2.4.8"


def test_every_site_pattern_is_bounded():
    """Each derived regex repeats nothing without a bound: linear on a hostile line (tests/test_linear_patterns.py
    walks module-level patterns only; these are compiled on the first line that needs them)."""
    def bounded(parsed) -> bool:
        for op, av in parsed:
            if op in (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT):
                lo, hi, sub = av
                if hi == sre_parse.MAXREPEAT or hi > 300 or not bounded(sub):
                    return False
            elif op is sre_parse.SUBPATTERN:
                if not bounded(av[-1]):
                    return False
            elif op is sre_parse.BRANCH and not all(bounded(b) for b in av[1]):
                return False
        return True
    for s in sites():
        assert bounded(sre_parse.parse(s.pattern)), s.format


# ------------------------------------------------------------------------------------------------------ the layers


@pytest.mark.parametrize(("path", "layer"), [
    ("misc/socket.cc", "bootstrap"), ("include/socket.h", "bootstrap"), ("bootstrap.cc", "bootstrap"),
    ("transport/net_ib.cc", "net_ib"), ("transport/net_ib/p2p.cc", "net_ib"), ("misc/ibvwrap.cc", "net_ib"),
    ("include/ibvwrap.h", "net_ib"), ("transport/net_socket.cc", "net_socket"), ("plugin/net.cc", "net_plugin"),
    ("transport/nvls.cc", "nvls"), ("graph/xml.cc", "topology"), ("graph/search.cc", "topology"),
    ("transport/shm.cc", "shm"), ("misc/shmutils.cc", "shm"), ("transport/p2p.cc", "p2p"), ("proxy.cc", "proxy"),
    ("misc/cudawrap.cc", "driver"), ("init.cc", "api"), ("enqueue.cc", "api"),
    ("/build/nccl/src/misc/socket.cc", "bootstrap"),  # an absolute __FILE__ of another build
])
def test_a_printed_file_is_its_layer(path, layer):
    found = file_layer(path)
    assert found is not None and found.id == _id(layer)


def test_a_header_macros_file_is_no_layer():
    """include/checks.h's CUDACHECK: its __FILE__ is where the macro is used in a release, not a layer."""
    assert file_layer("include/checks.h") is None and file_layer("debug.cc") is None


def test_every_layer_of_files_has_a_site_of_nccl():
    """A layer whose files print no WARN in any release is none."""
    files = {f for s in sites() for f, _ in s.files}
    for x in LAYERS:
        if x.files:
            assert any(file_layer(f) is x for f in files), x.id


@pytest.mark.parametrize(("text", "layer", "how"), [
    # NCCL 2.18.6, src/misc/socket.cc:485 (public_threads/122's Last error)
    ("socketStartConnect: Connect to 192.168.19.14<52822> failed : No route to host", "bootstrap", "format"),
    # NCCL 2.28.9, src/misc/socket.cc:596 ("%s: connect to %s failed : %s", __func__ of socketStartConnect)
    ("socketStartConnect: connect to 10.1.0.7<39921> failed : No route to host", "bootstrap", "format"),
    # NCCL 2.30.7, src/graph/search.cc:919
    ("XML Import Channel : dev 1 not found.", "topology", "format"),
    # NCCL 2.30.7, src/plugin/net.cc:349
    ("Failed to initialize any NET plugin", "net_plugin", "format"),
    # aws/aws-ofi-nccl: every warning of the plugin starts NET/OFI (include/nccl_ofi_log.h)
    ("NET/OFI Unable to register memory (type = 2) for device 4. RC: -22, Error: Invalid argument", "plugin_ofi",
     "plugin"),
])
def test_a_text_without_its_header_is_read_by_its_format(text, layer, how):
    found = layer_of(text)
    assert found is not None and (found.layer.id, found.how) == (_id(layer), how)


def test_the_printed_file_decides_before_the_words():
    """transport/p2p.cc's CUDACHECK prints only CUDA's words: the file says it was the P2P transport."""
    found = layer_of("Cuda failure 'operation not supported'", "transport/p2p.cc")
    assert found is not None and (found.layer.id, found.how) == ("p2p", "printed file")
    assert layer_of("Cuda failure 'operation not supported'") is None  # include/checks.h's words alone


def test_a_peer_that_went_away_takes_no_layers_fix():
    """NCCL 2.16-2.23 src/misc/socket.cc: "socketProgress: Connection closed by remote peer %s": the peer failed
    first; the socket layer's knob does not fix that."""
    assert explained("socketProgress: Connection closed by remote peer node2<51234>") is None


def test_a_bad_layer_is_one_error_naming_it(tmp_path):
    bad = tmp_path / "layers.toml"
    bad.write_text('[[layer]]\nid = "x"\nname = "n"\nmeans = "m"\nclass = "reboot"\nfix = ["f"]\nsource = "s"\n'
                   'files = ["^a"]\n')
    with pytest.raises(LayerTableError, match=r"entry 1 \(x\).*reboot"):
        read_layers(bad)
    bad.write_text('[[layer]]\nid = "x"\nname = "n"\nmeans = "m"\nclass = "fix-config"\nfix = ["f"]\nsource = "s"\n')
    with pytest.raises(LayerTableError, match=r"entry 1 \(x\)"):
        read_layers(bad)


# ----------------------------------------------------------------------------------------------------- in verdicts

_SYSTEM = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, "
           "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.28.9")


def test_nccls_own_socket_is_not_the_store(tmp_path):
    """A peer's NCCL socket that cannot be reached (NCCL 2.28.9 src/misc/socket.cc:596, under PyTorch's Last error)
    is the bootstrap's interface or route, not the rendezvous store."""
    v = _verdict(tmp_path, _SYSTEM, "ncclSystemError: System call (e.g. socket, malloc) or external library call "
                 "failed or device error. ", "Last error:",
                 "socketStartConnect: connect to 10.1.0.7<39921> failed : No route to host")
    assert v["kind"] != "launcher_failure" and (v["cause"] or {}).get("kind") != "store_unreachable"
    assert "NCCL_SOCKET_IFNAME" in _fix(v)
    assert "misc/socket.cc:596" in v["stated"]["meaning"]


def test_a_topology_warn_names_the_topology_files(tmp_path):
    """NCCL 2.21.5 src/graph/xml.cc:26 with its header: NCCL_TOPO_FILE / NCCL_GRAPH_FILE."""
    v = _verdict(tmp_path, "node1:16674:17023 [0] graph/xml.cc:26 NCCL WARN XML Parse : Unexpected EOF",
                 "node1:16674:17023 [0] NCCL INFO graph/xml.cc:538 -> 3")
    assert "NCCL_TOPO_FILE" in _fix(v) and "NCCL_GRAPH_FILE" in _fix(v)
    assert v["stated"]["meaning"].endswith("(known by the file NCCL printed)")
    # the layer says where, not why: the action says so, and the releases to rule out stay (job/unexplained.py)
    assert (v["action"]["kind"], v["action"]["reason"]) == ("fix-config", "stated_layer")


def test_an_nvls_line_without_its_file_is_the_fabric_cause(tmp_path):
    """NCCL 2.29.3 src/transport/nvls.cc's bind failure, kept by PyTorch after Last error: the NVLS cause."""
    v = _verdict(tmp_path, _SYSTEM.replace("system", "cuda"), "Last error:",
                 "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation "
                 "cannot be performed in the present state'.")
    assert v["cause"]["kind"] == "nvls_fabric" and "NCCL_NVLS_ENABLE=0" in _fix(v)


def test_a_plugins_line_names_its_fabric_library(tmp_path):
    """aws-ofi-nccl's registration failure through NCCL's logger (function:line where NCCL prints its file)."""
    v = _verdict(tmp_path, "ip-10-0-2-40:7311:7402 [3] register_rail_mr_buffer:617 NCCL WARN NET/OFI Unable to "
                           "register memory (type = 2) for device 4. RC: -22, Error: Invalid argument")
    assert "libfabric" in _fix(v) and "EFA installer" in _fix(v)


# ------------------------------------------------------------------------------------ rdma-core's completion status


def test_the_status_table_is_rdma_cores():
    """libibverbs/verbs.h's enum ibv_wc_status, worded by enum_strs.c's ibv_wc_status_str: 0 to 21."""
    assert sorted(WC_STATUS) == list(range(22)) and WC_STATUS[12] == ("IBV_WC_RETRY_EXC_ERR",
                                                                       "transport retry counter exceeded")


def test_a_status_is_read_only_with_its_own_words():
    assert completion_error("CQE ERROR wr_id=3 status=12(transport retry counter exceeded) opcode=1") == (
        12, "IBV_WC_RETRY_EXC_ERR")
    assert completion_error("status=12(local length error)") is None  # the words of another status
    assert completion_error("status=0(success)") is None


def test_any_programs_completion_error_is_the_ib_transport(tmp_path):
    """A plugin's own verbs code printing the status with rdma-core's words (uccl's CQE lines, public_threads/127):
    the InfiniBand/RoCE transport failed, worded by its status."""
    v = _verdict(tmp_path, "CQE ERROR wr_id=4 status=13(RNR retry counter exceeded) opcode=1 byte_len=0 "
                           "vendor_err=0x0 qp_num=0x2c10")
    assert v["cause"]["kind"] == "ib_error" and "RNR retry counter exceeded (IBV_WC_RNR_RETRY_EXC_ERR)" in \
        v["cause"]["detail"]


# ------------------------------------------------------------------------------------------------------- the driver


def test_nccl_tests_cuda_unknown_error_is_the_hosts(tmp_path):
    """nccl-tests' CUDACHECK (src/common.h: "%s: Test CUDA failure %s:%d '%s'") with cudaErrorUnknown: the host's
    driver stack, no rank's fault."""
    v = _verdict(tmp_path, "node7: Test CUDA failure common.cu:1045 'unknown error'",
                 " .. node7 pid 8575: Test failure common.cu:1007",
                 "srun: error: node7: task 0: Exited with exit code 2")
    assert (v["kind"], v["culprit_ranks"]) == ("setup_failure", [])
    assert "modprobe nvidia-uvm" in _fix(v)


# ------------------------------------------------------------------------------------------ recorded GPU consoles


@pytest.mark.parametrize(("case", "layer"), [("ifname", "bootstrap"), ("net_bogus", "net_plugin"),
                                             ("ibhca_netib", "net_plugin")])
def test_recorded_consoles_state_their_layer(case, layer):
    """tests/data/gpu/layers (2 x H200, NCCL 2.28.9): NCCL_SOCKET_IFNAME=bogus0 fails in bootstrap.cc, NCCL_NET=bogus
    and an IB HCA that is not there with NCCL_NET=IB in plugin/net.cc."""
    problems: list[str] = []
    v = analysis_json(analyze(resolve([str(LAYERS_GPU / case / "console.log")], problems.append), workers=1))["verdict"]
    name = next(x.means for x in LAYERS if x.id == layer)
    assert v["stated"]["meaning"].startswith(name)
