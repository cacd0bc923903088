"""A check at set-up whose line says what to set (job/statements.toml's names_setting) and a library's fatal check
behind its ``[FATAL ERROR]`` tag (evidence/formats/fataltag.py): the line is the stated reason, the verdict a set-up
failure, and the fix the setting itself, quoted as an ``export`` line.

The lines are written from the sources' format strings: Accelerate's PartialState.__init__ (src/accelerate/state.py,
v0.25.0 to v1.14.0, the same words), its Accelerator's HPU check (src/accelerate/accelerator.py), and RCCL's set-up
check on ROCm as its tag prints it. Accelerate's check fires only on a CUDA device (check_cuda_p2p_ib_support), so it
cannot be provoked on this CPU host.
"""

from __future__ import annotations

import pytest
from conftest import run_text

from ncclcheck.job.statements import settings, told

# Accelerate's message, as its three string literals join (the second's backticks and quotes unbalanced as written).
ACCELERATE = ("NotImplementedError: Using RTX 4000 series doesn't support faster communication broadband via P2P or "
              'IB. Please set `NCCL_P2P_DISABLE="1"` and `NCCL_IB_DISABLE="1" or use `accelerate launch` which will '
              "do this automatically.")
RCCL = ("[FATAL ERROR]: HSA_NO_SCRATCH_RECLAIM=1 must be set to avoid performance\n"
        "degradation with the current HIP configuration.\n"
        "(Runtime version:70253211, GPU Firmware version:14)\n"
        "[FATAL ERROR]: Please set HSA_NO_SCRATCH_RECLAIM=1 and rerun.\n")


@pytest.mark.parametrize(("line", "named"), [
    (ACCELERATE, (("NCCL_P2P_DISABLE", "1"), ("NCCL_IB_DISABLE", "1"))),
    ("HSA_NO_SCRATCH_RECLAIM=1 must be set to avoid performance", (("HSA_NO_SCRATCH_RECLAIM", "1"),)),
    ("Please set HSA_NO_SCRATCH_RECLAIM=1 and rerun.", (("HSA_NO_SCRATCH_RECLAIM", "1"),)),
    ("RuntimeError: Please set the environment variable `PT_HPU_LAZY_MODE` to `0`.", (("PT_HPU_LAZY_MODE", "0"),)),
    ("ValueError: Please set VLLM_WORKER_MULTIPROC_METHOD=spawn before starting the engine",
     (("VLLM_WORKER_MULTIPROC_METHOD", "spawn"),)),
    # the variable named without a value: the check's entry, but nothing to quote
    ("RuntimeError: MASTER_ADDR environment variable must be set", ()),
    ("ValueError: please set NCCL_SOCKET_IFNAME to the interface the nodes share", ()),
])
def test_a_line_that_says_what_to_set_is_a_setup_check_with_its_setting(line: str, named: tuple) -> None:
    said = told(line)
    assert said is not None and said.id == "names_setting"
    assert (said.kind, said.action) == ("setup_failure", "fix-config")
    assert settings(line) == named
    quoted = [step for step in said.fix if "rerun: export " in step]
    if named:
        assert quoted == [quoted[0]] and quoted[0].endswith("export " + " ".join(f"{n}={v}" for n, v in named))
    else:
        assert not quoted


@pytest.mark.parametrize("line", [
    # torchrun's own notice of the value it chose: no check refused anything
    "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being "
    "overloaded, please further tune the variable for optimal performance in your application as needed.",
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
    "ValueError: Please set dp_shard_size > 1 and dp_replicate_size == 1 to compose FSDP + TP/CP for 2D parallel",
])
def test_a_line_that_names_no_variable_to_set_is_not_the_check(line: str) -> None:
    said = told(line)
    assert said is None or said.id != "names_setting"


def test_accelerates_refusal_at_set_up_is_a_setup_failure_whose_fix_is_the_two_settings() -> None:
    """Accelerate's PartialState refuses a multi-GPU run on GPUs without P2P/IB unless both variables are set: each
    rank raises it at set-up, before any collective."""
    text = "".join(f"[rank{r}]: Traceback (most recent call last):\n"
                   f'[rank{r}]:   File "/x/accelerate/state.py", line 292, in __init__\n'
                   f"[rank{r}]:     raise NotImplementedError(\n[rank{r}]: {ACCELERATE}\n" for r in range(2))
    v = run_text(text).verdict
    assert v.cause is not None and v.stated is not None
    assert (v.kind.value, v.cause.cause.kind, v.stated.source) == ("setup_failure", "stated_reason", "exception")
    assert v.next_steps[0].endswith("export NCCL_P2P_DISABLE=1 NCCL_IB_DISABLE=1"), v.next_steps[0]


def test_rcclss_fatal_check_is_the_stated_reason_before_the_engines_shutdown() -> None:
    """The library's tagged line says why; the engine's error after it only that a worker went away."""
    text = RCCL + ("RuntimeError: Engine Core Mgr: Received unexpected SHUTDOWN signal from DP rank 0 during "
                   "initialization\n")
    v = run_text(text).verdict
    assert v.stated is not None and v.cause is not None
    assert (v.kind.value, v.stated.source, v.cause.cause.kind) == ("setup_failure", "fatal", "stated_reason")
    assert v.stated.text == "HSA_NO_SCRATCH_RECLAIM=1 must be set to avoid performance"
    assert 'A library\'s fatal check says why: "HSA_NO_SCRATCH_RECLAIM=1 must be set' in v.summary
    assert v.next_steps[0].endswith("export HSA_NO_SCRATCH_RECLAIM=1")


def test_the_fatal_tag_alone_is_a_failure_stated_by_its_line() -> None:
    """A tagged line with no other error is no longer read as nothing; one that names no setting quotes none."""
    v = run_text(RCCL).verdict
    assert v.stated is not None
    assert (v.kind.value, v.stated.source) == ("setup_failure", "fatal")
    other = run_text("[FATAL ERROR]: failed to open the device\n").verdict
    assert other.stated is not None
    assert (other.kind.value, other.stated.source) == ("rank_failed_first", "fatal")
    assert not any("rerun: export " in step for step in other.next_steps)
    lower = run_text("[fatal error] nothing to see\n").verdict  # no tag: at most a line of no known form
    assert lower.stated is None or lower.stated.source == "unread"
