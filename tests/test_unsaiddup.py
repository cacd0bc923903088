"""An NCCL ``invalid usage`` at set-up that no WARN line explains reads as the duplicate GPU (job/unsaiddup.py)."""

from __future__ import annotations

import pytest
from conftest import run_text

# PyTorch's NCCL check with NCCL_DEBUG unset, as facebookresearch/fairseq#2924 posted it (NCCL 2.6.3)
_PLAIN = ("RuntimeError: NCCL error in: ../torch/lib/c10d/ProcessGroupNCCL.cpp:514, invalid usage, NCCL version "
          "2.6.3\n")




def test_an_unexplained_invalid_usage_at_set_up_is_the_duplicate_gpu():
    v = run_text(_PLAIN).verdict
    assert v.cause is not None and v.cause.cause.kind == "duplicate_gpu"
    assert "the most common reason NCCL 2.6.3 returns it at set-up" in v.cause.detail and "NCCL_DEBUG=WARN" in v.cause.detail
    assert v.culprit_ranks == ()  # which two ranks no line says


@pytest.mark.parametrize("text", [
    # NCCL said what it refused: its WARN decides (src/enqueue.cc)
    "host:1:1 [0] NCCL WARN Error : mixing different streams within a group call is not supported.\n" + _PLAIN,
    # a release before 2.5.6 had no such check
    _PLAIN.replace("2.6.3", "2.4.8"),
    # a topology file of the job's own: its version check returns invalid usage too (src/graph/xml.cc)
    "host:1:1 [0] NCCL INFO NCCL_TOPO_FILE set by environment to /opt/topo.xml\n" + _PLAIN,
])
def test_an_invalid_usage_with_another_reason_stays_what_it_is(text):
    v = run_text(text).verdict
    assert v.cause is not None and v.cause.cause.kind == "nccl_invalid_usage", v.summary
