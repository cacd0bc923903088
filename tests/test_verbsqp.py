"""A program's report that creating an RDMA queue pair failed (evidence/formats/verbsqp.py): the device's verbs
provider refused the QP type or extension the program asked for. The lines are written from the callers' forms of
errno (C's perror and strerror, Rust's io::Error) after rdma-core's calls, whose providers say what they refuse
(providers/efa/verbs.c: UD QPs only through ibv_create_qp(_ex), EOPNOTSUPP otherwise; providers/mlx5/verbs.c:
mlx5dv_create_qp's EOPNOTSUPP on a device that is not mlx5).
"""

from __future__ import annotations

import pytest
from conftest import run_text


@pytest.mark.parametrize(("line", "said"), [
    ("failed to create extended queue pair (QP): Operation not supported",
     "create extended queue pair (QP): Operation not supported"),
    ("[rank2]:ibv_create_qp_ex failed: Operation not supported", "ibv_create_qp_ex failed: Operation not supported"),
    ("E1022 23:21:36.634458 2876 rdma/manager.rs:88] could not create loopback QP for device rdmap0s6: failed to "
     "create queue pair (QP): Invalid argument (os error 22)", "create queue pair (QP): Invalid argument (os error 22)"),
    ("mlx5dv_create_qp() returned NULL: Operation not supported", "mlx5dv_create_qp() returned NULL: Operation not "
     "supported"),
])
def test_a_queue_pair_the_provider_refused_names_the_devices_rdma_features(line, said):
    v = run_text(f"{line}\n").verdict
    assert v.kind.value == "rank_failed_first"
    assert v.stated is not None and v.stated.source == "rdma_qp" and v.stated.text == said
    assert "EFA" in v.stated.meaning and "ibv_devinfo" in v.next_steps[0]


def test_a_ranks_prefix_names_it():
    v = run_text("[rank2]:ibv_create_qp_ex failed: Operation not supported\n").verdict
    assert v.culprit_ranks == (2,)


def test_nccls_own_verbs_wrapper_stays_nccls():
    """NCCL's `Call to ibv_create_qp failed with error ...` (src/misc/ibvwrap.cc) is NCCL's line, its own entry."""
    v = run_text("node1:77:99 [0] NCCL WARN Call to ibv_create_qp failed with error Operation not supported\n").verdict
    assert v.stated is not None and v.stated.source != "rdma_qp"
    assert "program's own RDMA path" not in v.stated.meaning


@pytest.mark.parametrize("line", [
    "created queue pair 0x1a2b on mlx5_0",
    "ibv_create_qp: 128 queue pairs created",
])
def test_a_queue_pair_created_is_no_failure(line):
    assert run_text(f"{line}\n").verdict.kind.value == "no_failure"
