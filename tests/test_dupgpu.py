"""NCCL's duplicate-GPU line in every form it has printed (src/init.cc: 2.5.6-2.29's "Duplicate GPU detected : rank %d
and rank %d both on CUDA device %lx", pastes without its opening or with the bus id cut off, 2.30's "Multiple ranks
detected using the same GPU"), and whose ranks the two are: the failing communicator's, the job's culprits only where
that communicator is known to be the world (job/dupgpu.py). The lines are written from those format strings.
"""

from __future__ import annotations

import pytest
from conftest import run_text
from hypothesis import given
from hypothesis import strategies as st

from ncclcheck.evidence.formats.nccl import pci, words
from ncclcheck.job.dupgpu import pair_words

WARN = "[rank3]:gpu-a:410:470 [1] init.cc:871 NCCL WARN Duplicate GPU detected : rank 3 and rank 1 both on CUDA device 53000\n"
INIT = ("[rank3]:[I1122 11:30:18.464602239 ProcessGroupNCCL.cpp:988] [PG ID {pg} PG GUID {pg} Rank {r}] ProcessGroupNCCL "
        "initialization options: size: {size}, global rank: 3, TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0, "
        "SPLIT_FROM: 0, SPLIT_COLOR: -2, PG Name: {pg}\n")




def _bus_int(bus: str) -> int:
    """NCCL's busIdToInt64: the hex digits of the PCI address, ':' and '.' skipped."""
    return int(bus.replace(":", "").replace(".", ""), 16)


@given(st.integers(0, 100_000), st.integers(0, 100_000), st.integers(0, 0xFFFF), st.integers(0, 0xFF),
       st.integers(0, 0xFF), st.integers(0, 0xF), st.sampled_from(["Duplicate GPU detected : ", "NCCL WARN Duplicate "
                                                                    "GPU detected: ", "Error: ", ""]))
def test_any_pair_and_bus_id_read_back(a, b, dom, bus, dev, fn, opening):
    """Whatever the two ranks, the bus id NCCL printed (its integer in hex) and the line's opening, the pair reads
    back, and the PCI address it is worded as is the one NCCL made the integer from."""
    n = (dom << 20) | (bus << 12) | (dev << 4) | fn
    got = words(f"{opening}rank {a} and rank {b} both on CUDA device {n:x}")
    assert got is not None and got.shared == (a, b) and got.bus == pci(f"{n:x}") and _bus_int(got.bus) == n


def test_a_cut_off_bus_id_keeps_the_pair():
    got = words("Duplicate GPU detected : rank 7 and rank 5 both on CUDA device")
    assert got is not None and got.shared == (7, 5) and got.bus is None
    assert "bus id is cut off" in pair_words(got) and "ranks 5 and 7 of the failing communicator" in pair_words(got)


@pytest.mark.parametrize("line", [
    "gpu-a:410:470 [1] init.cc:871 NCCL WARN Duplicate GPU detected : rank 3 and rank 1 both on CUDA device 53000",
    "Duplicate GPU detected : rank 3 and rank 1 both on CUDA device 53000",
    "rank 3 and rank 1 both on CUDA device 53000",
    "Duplicate GPU detected : rank 3 and rank 1 both on CUDA device",
    "gpu-a:410:470 [1] init.cc:1190 NCCL WARN Multiple ranks detected using the same GPU on this node. Set "
    "NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this configuration.",
])
def test_every_form_is_two_ranks_on_one_gpu(line):
    """Each form alone is the set-up failure duplicate_gpu, with one process per GPU and the device order in its fix."""
    v = run_text(line + "\n").verdict
    assert (v.kind.value, v.cause.cause.kind) == ("setup_failure", "duplicate_gpu")
    fix = " ".join(v.cause.fix)
    assert "One process per GPU" in fix and "CUDA_DEVICE_ORDER=PCI_BUS_ID" in fix and "LOCAL_RANK" in fix


def test_the_pair_is_global_only_where_the_communicator_is_the_world():
    """The default group's initialization line states the world (4) and no other group is seen: ranks 1 and 3 of
    the communicator are the job's culprits. Without that line, the rank that printed it (its [rank3]: prefix) is
    one of a pair that share a GPU, named as such and not as the culprit (each rank of the pair prints its own line:
    which one picked the wrong device, or whether every process did, is not in it); from a sub-group's communicator
    (PG 1, size 2), the pair is not the job's either."""
    world = run_text(INIT.format(pg=0, r=3, size=4) + WARN).verdict
    assert (world.kind.value, list(world.culprit_ranks)) == ("setup_failure", [1, 3])
    assert "ranks 1 and 3 of the failing communicator share one GPU (PCI 0000:53:00.0)" in world.summary
    alone = run_text(WARN).verdict
    assert list(alone.culprit_ranks) == [] and "Rank 3 reported it: one of the ranks that share a GPU" in alone.summary
    sub = run_text(INIT.format(pg=0, r=3, size=4) + INIT.format(pg=1, r=1, size=2) + WARN).verdict
    assert list(sub.culprit_ranks) == []


def test_a_line_naming_no_rank_names_no_culprit():
    """No stated world: the pair stays the communicator's, and no global rank is named."""
    v = run_text("Duplicate GPU detected : rank 7 and rank 5 both on CUDA device\n").verdict
    assert list(v.culprit_ranks) == [] and "ranks 5 and 7 of the failing communicator" in v.summary


def _accelerate_state(n: int, devices: list[str]) -> str:
    """Accelerate's state as each process prints it (PartialState.__repr__, src/accelerate/state.py)."""
    return "".join(f"Distributed environment: MULTI_GPU  Backend: nccl\nNum processes: {n}\nProcess index: {i}\n"
                   f"Local process index: {i}\nDevice: {d}\n\n" for i, d in enumerate(devices))


DUP = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, "
       "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.19.3\n"
       "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\n"
       "Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 1000\n")


def test_every_process_on_one_device_is_the_launchs_not_two_ranks():
    """Four processes each state 'Device: cuda:0': every rank shares the GPU, so the pair is no culprit and the
    launch (one process per GPU) is named; where the processes state their own devices, the pair of the world is."""
    v = run_text(_accelerate_state(4, ["cuda:0"] * 4) + DUP).verdict
    assert (v.kind.value, v.cause.cause.kind, list(v.culprit_ranks)) == ("setup_failure", "duplicate_gpu", [])
    assert "Every process of the job states the same device (Accelerate's 'Device: cuda:0'" in v.summary
    assert "no rank is the culprit" in v.summary
    own = run_text(_accelerate_state(4, ["cuda:0", "cuda:0", "cuda:2", "cuda:3"]) + DUP).verdict
    assert list(own.culprit_ranks) == [0, 1] and "Every process" not in own.summary
    cut = run_text(_accelerate_state(4, ["cuda:0"] * 4)[:120] + DUP).verdict  # one block only: not every process
    assert list(cut.culprit_ranks) == [0, 1]
