"""libfabric's own lines (evidence/formats/libfabric.py) and the catalogue's ofi_provider_empty.

The lines are written from libfabric's format strings: src/log.c's ofi_log in its three eras (up to 1.13
`libfabric:PID:prov:subsys:func():line<level> `, the time after the PID from late 2021, a utility provider's prefix
after the time from 2022), src/fabric.c's "fi_getinfo: provider %s output empty list", prov/efa's "ibv_open_device
failed! errno: %d" and util/info.c's "fi_getinfo: %d (%s)"."""

from __future__ import annotations

import pytest
from conftest import run, run_text, thread_log

from ncclcheck.evidence.formats import libfabric
from ncclcheck.evidence.types import Loc
from ncclcheck.job.model import VerdictKind

EMPTY = "fi_getinfo: provider efa output empty list"
HEADS = [
    "libfabric:2317:efa:core:fi_getinfo_():1083<warn> ",  # up to 1.13
    "libfabric:2317:1634030000:efa:core:fi_getinfo_():1083<warn> ",  # late 2021
    "libfabric:2317:1714043021::core:core:fi_getinfo_():1391<warn> ",  # 2022 on, empty prefix
    "libfabric:2317:1714043021:ofi_rxm:verbs;ofi_rxm:core:fi_getinfo_():1391<warn> ",  # a utility provider's prefix
    "libfabric:...:core:core:fi_getinfo_():1391<warn> ",  # a paste that elided the PID and the time
]


@pytest.mark.parametrize("head", HEADS)
def test_every_eras_warn_line_is_a_clue_in_its_providers_words(head):
    [clue] = libfabric.Lines().feed(head + EMPTY, Loc("x", 1))
    assert clue.kind == "libfabric" and clue.text.endswith(f"fi_getinfo_(): {EMPTY}")


@pytest.mark.parametrize("level", ["info", "trace", "debug"])
def test_lines_below_warn_say_nothing_failed(level):
    line = f"libfabric:2317:1714043021::efa:core:efa_device_construct_gid():52<{level}> Opened ibv device"
    assert list(libfabric.Lines().feed(line, Loc("x", 1))) == []


@pytest.mark.parametrize("line", [
    HEADS[2] + EMPTY,
    "libfabric:2317:1714043021::efa:ep_data:efa_device_construct_gid():47<warn> ibv_open_device failed! errno: 2",
    "fi_getinfo: -61 (No data available)",
])
def test_a_provider_with_no_device_is_a_set_up_failure_with_the_devices_steps(line):
    v = run_text(f"{line}\n").verdict
    assert (v.kind, v.cause.cause.kind, v.culprit_ranks) == (VerdictKind.SETUP_FAILURE, "ofi_provider_empty", ())
    fix = "\n".join(v.cause.fix)
    assert "/dev/infiniband" in fix and "fi_info -p efa" in fix


def test_another_warning_of_libfabric_is_not_this_cause():
    line = "libfabric:2317:1714043021::efa:cq:efa_rdm_cq_poll():300<warn> a completion error of its own"
    v = run_text(f"{line}\n").verdict
    assert v.cause is None or v.cause.cause.kind != "ofi_provider_empty"


def test_the_public_thread_names_the_device_that_could_not_be_opened():
    """230: in a pod, the efa provider listed nothing after one verbs device failed to open (errno 2)."""
    v = run(thread_log("230")).verdict
    assert (v.kind, v.cause.cause.kind) == (VerdictKind.SETUP_FAILURE, "ofi_provider_empty")
    assert "ibv_open_device failed! errno: 2" in v.summary


@pytest.mark.parametrize("warn", [
    # aws-ofi-nccl's NCCL_OFI_WARN after fi_av_insert, behind NCCL's WARN header and the plugin's "NET/OFI " prefix:
    # fi_strerror's words (nccl_ofi_rdma.cpp, nccl_ofi_sendrecv.cpp), the count in older releases, the CM's own
    "NET/OFI Unable to insert remote address into address vector for device 0. RC: Invalid argument",
    "NET/OFI Unable to insert remote address into address vector for device 1. RC: 0",
    "NET/OFI CM: Unable to insert remote address into address vector for device.",
])
def test_an_address_vector_insert_names_efas_security_group_both_ways(warn):
    text = f"ip-10-0-1-5:2811:2890 [0] nccl_net_ofi_rdma.cpp:1998 NCCL WARN {warn}\n"
    v = run_text(text).verdict
    assert v.stated is not None and "fi_av_insert" in v.stated.meaning
    first = v.next_steps[0]
    assert "inbound traffic from the group itself AND all outbound traffic to the group itself" in first
    assert "FI_LOG_LEVEL=warn" in first


@pytest.mark.parametrize("warn", [
    # nccl_ofi_rdma.cpp's connect-response and accept checks of the peer's rail counts (since v1.10.0-aws)
    "NET/OFI Unexpected number of remote rails for dev 0. Expected 3 but got 2",
    "NET/OFI Unexpected number of remote control rails for dev 5. Expected 1 but got 2",
])
def test_peers_that_count_their_rails_differently_are_a_set_up_failure_with_the_forced_count(warn):
    text = (f"node-a:19817:19830 [0] NCCL WARN {warn}\n"
            "node-a:19817:19817 [0] NCCL INFO transport/net.cc:476 -> 2\n"
            "Test NCCL failure all_reduce.cu:471 'internal error - please report this issue to the NCCL developers'\n")
    v = run_text(text).verdict
    assert v.kind == VerdictKind.SETUP_FAILURE
    assert v.stated is not None and "different number of rails" in v.stated.meaning
    assert "OFI_NCCL_FORCE_NUM_RAILS" in v.next_steps[0]
