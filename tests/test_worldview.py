"""NCCL's `invalid argument` where PyTorch makes a communicator (job/worldview.py), and NCCL's own words for a world
the processes disagree on (job/statements.toml's nccl_world_disagrees).

ncclCommInitRank refuses a rank outside 0..nranks-1 with ncclInvalidArgument (NVIDIA/nccl src/init.cc, "Invalid rank
requested : %d/%d", 2.0-2.30), and PyTorch's check of that call in its NCCLComm reads "NCCL error in:
<file>:<line>, <ncclGetErrorString>, NCCL version X" (torch/lib/c10d/NCCLUtils.hpp in 1.x; torch/csrc/distributed/
c10d/NCCLUtils.hpp, then NCCLUtils.cpp), the result's words "invalid argument" (with " (run with NCCL_DEBUG=WARN for
details)" from NCCL 2.18.1). No CPU run provokes it (gloo makes no NCCL communicator): the lines are written from
those format strings.
"""

from __future__ import annotations

import pytest
from conftest import DATA, run, run_text

from ncclcheck.job.statements import told

_OLD = ("Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.7/site-packages/torch/nn/parallel/distributed.py", line 549, in '
        "_distributed_broadcast_coalesced\n"
        "    dist._broadcast_coalesced(self.process_group, tensors, buffer_size)\n"
        "RuntimeError: NCCL error in: /opt/conda/conda-bld/pytorch_1595629403081/work/torch/lib/c10d/../c10d/"
        "NCCLUtils.hpp:{line}, {result}, NCCL version 2.4.8\n")
_NEW = ("[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/{file}:{line}, "
        "{result} (run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5\n"
        "[rank1]: ncclInvalidArgument: Invalid value for an argument.\n")


def _fix(v) -> str:
    return " ".join(v.next_steps)


@pytest.mark.parametrize("text", [
    _OLD.format(line=82, result="invalid argument"),
    _NEW.format(file="NCCLUtils.hpp", line=268, result="invalid argument"),
    _NEW.format(file="NCCLUtils.cpp", line=77, result="invalid argument"),
])
def test_invalid_argument_making_the_communicator_names_the_world(text):
    """An invalid argument with no reason where PyTorch's NCCLComm makes the communicator: the rank and world size
    the process was given disagree; the steps name WORLD_SIZE and the frameworks' node counts first."""
    v = run_text(text).verdict
    assert v.kind.value == "setup_failure"
    assert v.cause is not None and v.cause.cause.kind == "nccl_no_reason"
    assert "Invalid rank requested" in v.summary and "NCCLUtils" in v.summary
    fix = _fix(v)
    assert fix.index("WORLD_SIZE") < fix.index("NCCL_DEBUG=WARN")
    assert "Trainer(num_nodes=" in fix and "--num_machines" in fix


@pytest.mark.parametrize("text", [
    _OLD.format(line=82, result="unhandled system error"),  # another result at the same site: not the world's
    "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:825, invalid argument, "
    "NCCL version 2.7.8\n",  # a collective's own argument check on a communicator already made
])
def test_other_results_and_sites_do_not_name_the_world(text):
    v = run_text(text).verdict
    assert "WORLD_SIZE" not in _fix(v) and "Invalid rank requested" not in v.summary


def test_the_stated_reason_reads_as_the_world():
    """Newer PyTorch prints NCCL's own reason under 'Last error:': the stated line's meaning and fix."""
    text = _NEW.format(file="NCCLUtils.cpp", line=77, result="invalid argument") + \
        "[rank1]: Last error:\n[rank1]: Invalid rank requested : 1/1\n"
    v = run_text(text).verdict
    assert v.kind.value == "setup_failure"
    assert "views of the job's world disagree" in v.summary
    assert "WORLD_SIZE" in _fix(v)


@pytest.mark.parametrize("line", [
    "Invalid rank requested : 2/2",  # src/init.cc ncclCommInitRank, 2.0-2.30
    "rank 3 exceeds ndev=2",  # src/init.cc commAlloc
    "Bootstrap Root : mismatch in rank count from procs 4 : 2",  # src/bootstrap.cc to 2.22
    "Bootstrap Root : mismatch in info from procs, nranks 4 vs 2, nroots 1 vs 1, iroot 0 vs 0, offset 0 vs 0",  # 2.23+
    "Bootstrap Root : rank 0 of 2 ranks has already checked in",  # two processes asked for one rank
])
def test_nccl_words_for_the_world(line):
    said = told(line)
    assert said is not None and said.id == "nccl_world_disagrees"
    assert told(f"node1:4242:4242 [0] NCCL WARN {line}") == said


@pytest.mark.parametrize("pair", ["plain", "warn"])
def test_recorded_rank_beyond_the_world(pair):
    """Recorded (tests/data/worldview/README.md): rank 1 of a world of 1 beside a rank 0 that completed its
    all-reduce and exited. NCCL's own reason (under 'Last error:', or its WARN line) is a set-up failure of rank 1,
    whatever rank 0's log shows, with the world's fix."""
    files = sorted((DATA / "worldview" / "rank_beyond_world").glob(f"{pair}_rank*.log"))
    v = run(*files).verdict
    assert (v.kind.value, v.culprit_ranks) == ("setup_failure", (1,))
    assert v.cause is not None and v.cause.said is not None and v.cause.said.id == "nccl_world_disagrees"
    assert "Invalid rank requested : 1/1" in v.summary
    assert "WORLD_SIZE" in _fix(v)
