"""vLLM's engine core failing a utility call its client asked for (job/statements.toml's vllm_utility_call_failed):
collective_rpc runs a method on every worker (vLLM's own or a framework's, added with worker_extension_cls), and a
method that raises is logged as "Invocation of %s method failed" with its traceback, and returned to the client as
"Call to {method_name} method failed: {error}" (vllm/v1/engine/core.py). The lines are written from those format
strings behind vLLM's logger head ("%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s")."""

from __future__ import annotations

import pytest
from conftest import run_text

from ncclcheck.job.statements import told

ENGINE = "(EngineCore_DP0 pid=4242) ERROR 03-05 00:25:45 [core.py:1094] Invocation of collective_rpc method failed\n"
CLIENT = "Exception: Call to collective_rpc method failed: 'Worker' object has no attribute 'update_weight'\n"


@pytest.mark.parametrize("line", [ENGINE, CLIENT, "Invocation of reset_prefix_cache method failed"])
def test_the_engines_failed_call_is_read_with_the_methods_own_error_first(line: str) -> None:
    said = told(line)
    assert said is not None and said.id == "vllm_utility_call_failed"
    assert said.fix[0].startswith("Read the traceback logged after this line")


def test_nccls_failed_call_is_not_vllms() -> None:
    said = told("NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory")
    assert said is None or said.id != "vllm_utility_call_failed"


def test_a_cut_paste_of_the_engines_failure_names_the_release_pair_to_check() -> None:
    """The engine's line alone (a paste cut inside its traceback): its error record is the stated reason."""
    v = run_text(ENGINE).verdict
    assert v.cause is not None and v.stated is not None
    assert (v.kind.value, v.cause.cause.kind) == ("rank_failed_first", "stated_reason")
    assert any("pin vLLM to the release the framework supports" in step for step in v.next_steps)
