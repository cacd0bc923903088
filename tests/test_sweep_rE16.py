"""torch.distributed's own checks of a call's arguments and environment (PyTorch's distributed_c10d.py,
rendezvous.py, ProcessGroup.hpp, ProcessGroupNCCL.cpp, c10d/Utils.hpp) read by the mechanism each line states, with
the fix that follows from it: job/statements.toml's `rendezvous_env_unset`, `pg_*` entries and the catalogue's
invalid_device. Recorded on CPU: tests/data/pg_checks (README there); the forms a CPU build cannot provoke are
written from the source's format strings: tests/data/stated_formats/torch_distributed_checks.log (README there).
The sweep that found them: docs/data/sweep-rE16-2026-11-29.md."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run, run_text

from ncclcheck.job.statements import told

DATA = Path(__file__).parent / "data"
WRITTEN = (DATA / "stated_formats" / "torch_distributed_checks.log").read_text().splitlines()

RECORDED = {
    # case: (verdict kind, culprit ranks, the entry its line is, the first step's start)
    "env_unset": ("setup_failure", (), "rendezvous_env_unset", "Start the script with a launcher that sets these"),
    "init_twice": ("setup_failure", (0, 1), "pg_init_twice", "Initialise once"),
    "no_default_pg": ("rank_failed_first", (0, 1), "pg_not_initialized",
                      "Call torch.distributed.init_process_group in every process"),
    "device_id": ("setup_failure", (0,), "pg_device_id_not_accelerator", "Pass the rank's own GPU with its index"),
    "cpu_on_cuda_group": ("rank_failed_first", (0, 1), "pg_tensor_device", "Put the tensor on the rank's own GPU"),
    "dtype": ("rank_failed_first", (0, 1), "pg_tensor_dtype", "Make the call's tensors one dtype"),
    "src_not_in_group": ("rank_failed_first", (0,), "pg_rank_not_in_group", "Pass a rank of the group"),
    "list_length": ("rank_failed_first", (0, 1), "pg_tensor_list_length", "Give the list one tensor for each member"),
    "gather_length": ("rank_failed_first", (0,), "pg_tensor_list_length", "Give the list one tensor for each member"),
}


@pytest.mark.parametrize("case", sorted(RECORDED))
def test_a_recorded_check_is_read_by_its_mechanism(case):
    """Each recorded check's line is quoted as the job's stated reason, read by its entry, and the first step is that
    entry's fix (torchrun's plain console, where a line raised before init_process_group names no rank, included)."""
    kind, culprits, entry, step = RECORDED[case]
    v = run(DATA / "pg_checks" / case / "console.log").verdict
    assert (v.kind.value, v.culprit_ranks) == (kind, culprits)
    assert v.cause is not None and v.cause.cause.kind == "stated_reason"
    said = told(v.cause.text)
    assert said is not None and said.id == entry
    assert v.next_steps[0].startswith(step)


@pytest.mark.parametrize(("line", "entry", "kind", "step"), list(zip(WRITTEN, [
    "pg_tensor_device", "pg_tensor_device", "pg_tensor_layout", "pg_tensor_layout", "pg_tensor_dtype",
    "pg_tensor_dtype", "pg_tensor_dtype", None, "rendezvous_env_unset", "pg_not_initialized",
    "pg_rank_not_in_group", "store_libuv_missing", "store_libuv_missing", None, "pg_tensor_list_length",
    "pg_tensor_list_length",
], [
    "rank_failed_first", "rank_failed_first", "rank_failed_first", "rank_failed_first", "rank_failed_first",
    "rank_failed_first", "rank_failed_first", "rank_failed_first", "setup_failure", "rank_failed_first",
    "rank_failed_first", "setup_failure", "setup_failure", "rank_failed_first", "rank_failed_first",
    "rank_failed_first",
], [
    "Put the tensor on the rank's own GPU", "Put the tensor on the rank's own GPU", "Call `.contiguous()`",
    "Call `.contiguous()`", "Make the call's tensors one dtype", "Make the call's tensors one dtype",
    "Make the call's tensors one dtype", "Start as many processes per node as it has GPUs",
    "Start the script with a launcher", "Call torch.distributed.init_process_group", "Pass a rank of the group",
    "Set USE_LIBUV=0", "Set USE_LIBUV=0", "Start as many processes per node as it has GPUs",
    "Give the list one tensor for each member", "Give the list one tensor for each member",
], strict=True)))
def test_each_written_form_is_its_mechanism(line, entry, kind, step):
    """Every release's form of each check (1.x's RuntimeError and 2.x's ValueError/TypeError, the 1.0-1.7 assertion)
    is its entry, alone and as the last line of a torchrun worker's traceback; an index out of range is the catalogue's
    invalid_device, whose first step is the processes per node."""
    said = told(line)
    assert (said.id if said is not None else None) == entry
    console = ("[default0]:Traceback (most recent call last):\n"
               '[default0]:  File "/work/train.py", line 52, in <module>\n'
               f"[default0]:{line}\n"
               "E1129 06:21:00.441000 27345 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
               "(exitcode: 1) local_rank: 0 (pid: 27349) of binary: /usr/bin/python\n")
    for text in (line + "\n", console):
        v = run_text(text).verdict
        assert v.kind.value == kind
        assert v.next_steps[0].startswith(step), v.next_steps[0]


def test_bare_lines_that_differ_are_not_given_to_the_culprit():
    """The bare line goes to the culprit only where every bare line says the same: two different errors that name no
    process leave the culprit's own reason unsaid rather than guessed."""
    text = (DATA / "pg_checks" / "device_id" / "console.log").read_text()
    text = text.replace("ValueError: init_process_group device_id parameter must be an accelerator with an index",
                        "ValueError: trying to initialize the default process group twice!", 1)
    v = run_text(text).verdict
    assert v.kind.value == "rank_failed_first" and v.cause is None


def test_torchruns_own_refusal_of_nproc_gpu_without_cuda_is_the_launchers_setup():
    """torchrun's --nproc-per-node gpu on a host without CUDA (recorded): a set-up failure with no culprit rank (no
    worker started), whose first step checks CUDA in torchrun's environment; the line alone reads the same."""
    v = run(DATA / "pg_checks" / "nproc_gpu" / "console.log").verdict
    assert (v.kind.value, v.culprit_ranks) == ("setup_failure", ())
    assert v.next_steps[0].startswith("Run `python -c 'import torch; print(torch.__version__, torch.version.cuda")
    said = told("ValueError: Cuda is not available.")
    assert said is not None and said.id == "torchrun_device_count_unavailable"
    assert told("print('Cuda is not available. Falling back to CPU')") is None


def test_a_culprits_own_exception_is_not_replaced_by_another_processs_bare_line():
    """Recorded (tests/data/launchers/torchrun/rdzv_closed): rank 1 raised its own exception; node0's agent then printed
    RendezvousClosedError with no rank. The bare line is not the culprit's: its own exception stays the failure."""
    v = run(*sorted((DATA / "launchers" / "torchrun" / "rdzv_closed").glob("*.log"))).verdict
    assert (v.kind.value, v.culprit_ranks) == ("rank_failed_first", (1,))
    assert v.cause is None or v.cause.cause.name != "stated_reason"
    assert v.summary.startswith("Rank 1 failed: RuntimeError: rank 1: a bad batch at step 3.")
