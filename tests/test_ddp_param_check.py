"""DDP's construction-time check of the model across ranks (PyTorch reducer.cpp verify_params_across_processes,
called by torch/distributed/utils.py _verify_param_shape_across_processes from DistributedDataParallel.__init__):
each rank's parameter count is all-gathered into at::empty_like buffers and compared with its own, then rank 0's
sizes and strides are broadcast and compared. Counts that arrived and differ, or sizes that differ, are different
models (job/statements.toml `ddp_model_differs`); a peer's count of 0 is a buffer the exchange never filled, since
DDP refuses a module without trainable parameters before it checks (`ddp_param_count_nothing_arrived`): the network
path between the nodes, not the model. tests/data/gloo_counters/ddp_* were recorded on CPU (gloo) by
tools/record41/run_counters.sh; the zero-count lines are written from reducer.cpp's format string.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DATA, run, run_text

from ncclcheck.job.statements import told
from ncclcheck.render.json_out import analysis_json

REC = DATA / "gloo_counters"
_CHECK = "DDP expects same model across all ranks, but Rank {me} has {mine} params, while rank {peer} has " \
         "inconsistent {theirs} params."


def _verdict(tmp_path: Path, *lines: str) -> dict:
    return analysis_json(run_text("\n".join(lines) + "\n"))["verdict"]


def _steps(v: dict) -> str:
    return " ".join(v["next_steps"])


@pytest.mark.parametrize("prefix", ["", "[rank2]: ", "[default2]:", "2: "])
@pytest.mark.parametrize("theirs", ["0", "-1"])
def test_a_peers_count_of_nothing_is_the_network_not_the_model(tmp_path, prefix, theirs):
    line = prefix + "RuntimeError: " + _CHECK.format(me=2, mine=363, peer=0, theirs=theirs)
    assert told(line).id == "ddp_param_count_nothing_arrived"
    v = _verdict(tmp_path, line)
    assert v["kind"] == "setup_failure" and v["culprit_ranks"] == []  # the exchange, no rank's model
    steps = _steps(v)
    assert all(k in steps for k in ("NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_GID_INDEX"))
    assert "same model on every rank" not in steps


@pytest.mark.parametrize(("mine", "theirs"), [(363, 362), (2, 4), (4, 2), (10, 100)])
def test_counts_that_arrived_and_differ_are_different_models(tmp_path, mine, theirs):
    line = "[rank1]: RuntimeError: " + _CHECK.format(me=1, mine=mine, peer=0, theirs=theirs)
    assert told(line).id == "ddp_model_differs"
    v = _verdict(tmp_path, line)
    assert v["culprit_ranks"] == [1] and "same model on every rank" in _steps(v)
    assert "NCCL_IB_GID_INDEX" not in _steps(v)


@pytest.mark.parametrize("what", ["sizes", "strides"])
def test_a_parameters_sizes_against_rank_0s_are_a_different_model(what):
    line = (f"RuntimeError: [1]: params[3] in this process with sizes [5, 4] appears not to match {what} of the same "
            "param in process 0.")
    assert told(line).id == "ddp_model_differs"


@pytest.mark.parametrize(("case", "culprits"), [("ddp_count", [0, 1]), ("ddp_shape", [1])])
def test_the_recorded_checks_name_different_models(case, culprits):
    """Both recorded over gloo: ddp_count fails on both ranks (each saw the other's count), ddp_shape on rank 1
    (rank 0's sizes were the broadcast's) while rank 0 lost its peer."""
    v = run(REC / case / "console.log").verdict
    assert v.kind.value == "rank_failed_first" and list(v.culprit_ranks) == culprits
    assert "same model on every rank" in " ".join(v.next_steps)
