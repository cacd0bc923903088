"""aws-ofi-nccl's own warnings read with their own meaning (issue 41, the sweep of the plugin's src/ for the lines a
failed job prints): each `NET/OFI` line alone, and after NCCL's set-up through the plugin, is the failure it states,
with the entry of job/statements.toml whose mechanism it names, and the first next step is that mechanism's, not the
plugin layer's generic one.

The lines are written from the plugin's format strings (tests/data/stated_formats/aws_ofi_nccl_sweep.log, its README
says which source prints each), with NCCL's logger's header and the plugin's function and line before `NCCL WARN`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_text

from ncclcheck.render.json_out import analysis_json

SWEEP = (Path(__file__).resolve().parent / "data" / "stated_formats" / "aws_ofi_nccl_sweep.log").read_text().splitlines()

# NCCL_DEBUG=INFO's set-up lines through the plugin before the failure: the stated line keeps its reading after them
SETUP = """ip-10-0-2-40:7311:7311 [3] NCCL INFO Bootstrap : Using ens32:10.0.2.40<0>
ip-10-0-2-40:7311:7311 [3] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v9)
NCCL version 2.23.4+cuda12.4
ip-10-0-2-40:7311:7402 [3] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.13.2-aws
ip-10-0-2-40:7311:7402 [3] NCCL INFO NET/OFI Using Libfabric version 1.22
ip-10-0-2-40:7311:7402 [3] NCCL INFO comm 0x55d0 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId 53000 commId 0x1a2b - Init START"""

GDR = ("ofi_gdr_unavailable", "setup_failure", "Check that libfabric can use CUDA where the job runs")
OLD = ("ofi_libfabric_too_old", "setup_failure", "Load the libfabric the plugin needs")
TOPO = ("ofi_hwloc_topology", "setup_failure", "Run hwloc's `lstopo`")
RDMA = ("ofi_rdma_write_unsupported", "setup_failure", "Where OFI_NCCL_PROTOCOL=RDMA is set, unset it")
DUP = ("ofi_nic_dup_conns_gdr", "setup_failure", "Unset OFI_NCCL_NIC_DUP_CONNS")
MR = ("ofi_mr_reg_failed", "nccl_error", "Read the error on the line")
EP = ("ofi_endpoint_resources", "setup_failure", "Check the locked-memory limit inside the job first")
CUDA = ("ofi_cuda_unavailable", "setup_failure", "Read the plugin's line that names the step")
TAGS = ("ofi_tags_exhausted", "nccl_error", "Count the communicators the program creates")
EXPECTED = [GDR] * 5 + [OLD] * 2 + [TOPO] * 4 + [RDMA, DUP] + [MR] * 5 + [EP] * 5 + [RDMA] * 3 + [CUDA] * 6 + [TAGS] * 2


def test_the_fixture_has_one_expectation_a_line():
    assert len(SWEEP) == len(EXPECTED)


@pytest.mark.parametrize("index", range(len(EXPECTED)))
@pytest.mark.parametrize("setup", [False, True], ids=["alone", "after_setup"])
def test_an_ofi_warning_is_read_with_its_mechanism(index, setup):
    line = SWEEP[index]
    entry, kind, step = EXPECTED[index]
    analysis = run_text((f"{SETUP}\n{line}" if setup else line) + "\n")
    v = analysis_json(analysis)["verdict"]
    assert (v["kind"], v["cause"]["kind"]) == (kind, "stated_reason"), line
    said = analysis.verdict.cause.said if analysis.verdict.cause is not None else None
    assert said is not None and said.id == entry, line
    assert v["next_steps"][0].startswith(step), line
    assert v["stated"]["text"] in line


def test_a_completion_queue_the_nic_cannot_make_is_not_a_full_disk():
    """ENOSPC from the provider's queue creation is the NIC's resources: never the disk's `df -h`."""
    line = next(x for x in SWEEP if "No space left on device" in x)
    v = analysis_json(run_text(line + "\n"))["verdict"]
    assert not any("df -h" in s for s in v["next_steps"])


def test_a_completion_queue_that_cannot_be_read_is_the_fabric():
    """fi_cq_read failing outright (not -FI_EAGAIN, not -FI_EAVAIL) is the transfer path's failure, as a completion
    error is: ofi_fabric, with the security group first."""
    line = ("ip-10-0-2-40:7311:7402 [3] ofi_process_cq_rail:1526 NCCL WARN NET/OFI Unable to retrieve completion queue "
            "entries. RC: -5, ERROR: Input/output error")
    v = analysis_json(run_text(line + "\n"))["verdict"]
    assert (v["kind"], v["cause"]["kind"]) == ("nccl_error", "ofi_fabric")


@pytest.mark.parametrize("words", [
    "Failed to open NCCL topology file using file descriptor. ERROR Bad file descriptor",
    "Failed to open device property file /sys/class/infiniband/rdmap16s27/device/numa_node. ERROR: No such file",
])
def test_a_plugin_line_is_the_plugins_whatever_nccl_format_it_resembles(words):
    """NCCL's gdrwrap prints "Failed to open %s" too: a text that begins NET/OFI is still the plugin's layer, not
    the GPU driver's."""
    line = f"ip-10-0-2-40:7311:7402 [3] nccl_ofi_topo_write:412 NCCL WARN NET/OFI {words}"
    analysis = run_text(line + "\n")
    said = analysis.verdict.cause.said if analysis.verdict.cause is not None else None
    assert said is not None and said.id == "layer_plugin_ofi"


LIBFABRIC = (Path(__file__).resolve().parent / "data" / "stated_formats" / "libfabric_efa_warn.log").read_text().splitlines()


@pytest.mark.parametrize("index, entry, kind", [
    (0, "ofi_mr_reg_failed", "rank_failed_first"),
    (1, "ofi_gdr_unavailable", "setup_failure"),
])
def test_a_libfabric_warning_of_a_known_mechanism_is_the_stated_reason(index, entry, kind):
    """libfabric's EFA provider's own <warn> line (FI_LOG_LEVEL=warn) is quoted with its mechanism where it is the
    only line that says why: never `no_failure`."""
    analysis = run_text(LIBFABRIC[index] + "\n")
    v = analysis_json(analysis)["verdict"]
    assert (v["kind"], v["cause"]["kind"], v["stated"]["source"]) == (kind, "stated_reason", "libfabric")
    assert analysis.verdict.cause is not None and analysis.verdict.cause.said is not None
    assert analysis.verdict.cause.said.id == entry


def test_the_plugins_line_is_quoted_before_libfabrics_own():
    """NCCL's logger's line of the plugin says more of what NCCL was doing: it ranks above libfabric's warning."""
    plugin = ("ip-10-0-2-40:7311:7402 [3] nccl_ofi_ofiutils_init_connection:376 NCCL WARN NET/OFI Failed to set "
              "FI_OPT_CUDA_API_PERMITTED. RC: -22, ERROR: Invalid argument")
    v = analysis_json(run_text(f"{LIBFABRIC[1]}\n{plugin}\n"))["verdict"]
    assert v["stated"]["source"] == "nccl_warn"
    assert v["next_steps"][0].startswith("Check that libfabric can use CUDA where the job runs")


def test_a_libfabric_warning_of_no_failure_stays_none():
    """libfabric warns at level warn of HMEM interfaces it could not start on every CUDA host: no reason."""
    line = ("libfabric:7311:1714043021::core:core:ofi_hmem_init():422<warn> Failed to initialize hmem iface "
            "FI_HMEM_ZE: No data available")
    assert analysis_json(run_text(line + "\n"))["verdict"]["kind"] == "no_failure"
