"""Two set-up lines read as what their source says: NCCL's remote error with no rank is the transport losing a peer
(job/remote.py), not a rank that failed first; "No space left on device" is shared memory where a line points at it
(cause shm_full), else the disk (job/statements.toml, no_space_left). The lines are written from the sources' own
words: ncclGetErrorString (NCCL src/init.cc), PyTorch's DataLoader SIGBUS handler (torch/csrc/DataLoader.cpp),
Python's OSError for ENOSPC.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from conftest import run_text
from typer.testing import CliRunner

from ncclcheck.cli import app

runner = CliRunner()
REMOTE = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, "
          "remote process exited or there was a network error, NCCL version 2.19.3\n")
LOADER = "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"
NOSPACE = "OSError: [Errno 28] No space left on device\n"




def test_a_remote_error_naming_no_rank_is_the_transport_losing_a_peer():
    """ncclRemoteError with no rank: nccl_error, no culprit, the peer's log first and the socket interface next."""
    v = run_text(REMOTE).verdict
    assert (v.kind.value, list(v.culprit_ranks), v.cause.cause.kind) == ("nccl_error", [], "remote_exited")
    assert v.summary.startswith("NCCL lost a peer:") and "A process failed" not in v.summary
    assert "peer's own log" in v.cause.fix[0] and "NCCL_SOCKET_IFNAME" in v.cause.fix[1]


def test_a_remote_error_beside_another_failure_is_not_read_alone():
    """Another failure that names no rank (an exception of the program's) is not NCCL's: that stays a failed process."""
    v = run_text("ValueError: bad batch\n" + REMOTE).verdict
    assert v.kind.value == "rank_failed_first" and not v.summary.startswith("NCCL lost a peer")


def test_the_remote_error_in_the_report():
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "console.log"
        log.write_text(REMOTE)
        r = runner.invoke(app, ["analyze-log", str(log)], catch_exceptions=False, env={"COLUMNS": "200", "NO_COLOR": "1"})
    out = " ".join(r.stdout.split())
    assert r.exit_code == 1 and "verdict: nccl_error" in out and "NCCL_SOCKET_IFNAME" in out
    assert "rank_failed_first" not in out


@pytest.mark.parametrize(("text", "kind"), [
    # the loader's workers' own SIGBUS lines name the shortage more narrowly than a bare ENOSPC beside them
    (LOADER * 2 + NOSPACE, "shm_bus_error"),
    ("OSError: [Errno 28] No space left on device: '/dev/shm/torch_2211_3912845801_0'\n", "shm_full"),
    ("RuntimeError: unable to write to file </torch_4021_2816523542_3>: No space left on device (28)\n", "shm_full"),
])
def test_no_space_where_shared_memory_is_used_is_dev_shm_first(text, kind):
    v = run_text(text).verdict
    assert v.cause.cause.kind == kind and v.kind.value == "rank_failed_first"
    assert "/dev/shm" in v.cause.fix[0] and "--shm-size" in v.next_steps[0]


def test_no_space_with_nothing_about_shared_memory_is_the_disk():
    """The same OSError alone names no shared memory: the disk the process wrote to comes first, /dev/shm after."""
    v = run_text(NOSPACE).verdict
    assert v.cause is None or v.cause.cause.kind != "shm_full"
    steps = " ".join(v.next_steps)
    assert steps.index("df -h` on the path") < steps.index("/dev/shm")


def test_nccls_own_shared_memory_stays_its_own():
    """NCCL's segment that cannot grow is NCCL's shared-memory transport (shm_exhausted), not a data loader's."""
    v = run_text("gpu-a:41:41 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment "
                 "/dev/shm/nccl-X1 (size 9637888), error: No space left on device (28)\n").verdict
    assert v.cause.cause.kind == "shm_exhausted" and "df -h` on the path" not in " ".join(v.cause.fix)
