"""The catalogue's coordinator_unreachable: a process's registration with JAX's (or TensorFlow's) coordination service
that never succeeded, read from the failed status that names the RPC (xla/tsl's coordination client:
/tensorflow.CoordinationService/RegisterTask, retried by the agent's Connect() until the register timeout)."""

from __future__ import annotations

import pytest
from conftest import run_text


@pytest.mark.parametrize("text", [
    # the status on one line, as jaxlib's exception prints it
    "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Deadline Exceeded RPC: "
    "/tensorflow.CoordinationService/RegisterTask\n",
    # its two lines as a console prints them (the method on the second), gRPC's UNAVAILABLE for a refused connection
    "jax.errors.JaxRuntimeError: UNAVAILABLE: failed to connect to all addresses\n"
    "RPC: /tensorflow.CoordinationService/RegisterTask\n",
    # XLA's client logging the same status
    "I0312 10:01:02.000000 1234 client.cc:101] Failed to connect to distributed JAX controller: DEADLINE_EXCEEDED: "
    "Deadline Exceeded\nRPC: /tensorflow.CoordinationService/RegisterTask\n",
])
def test_a_registration_that_never_succeeded_is_the_coordinator_unreachable(text):
    v = run_text(text).verdict
    assert (v.kind.value, v.culprit_ranks, v.cause.cause.kind) == ("launcher_failure", (), "coordinator_unreachable")
    assert any("coordinator_address" in step for step in v.next_steps)


def test_another_rpc_of_the_service_is_not_the_registration():
    # a heartbeat that failed after the process registered: the service was reached
    v = run_text("DEADLINE_EXCEEDED: Deadline Exceeded\nRPC: /tensorflow.CoordinationService/Heartbeat\n").verdict
    assert v.cause is None or v.cause.cause.kind != "coordinator_unreachable"
