"""c10d's store client retrying port 0 (socket.cpp's "No socket on (HOST, 0) is listening yet, will retry."): an
endpoint with no port, the cause store_no_port; the same retry to a real port is the client waiting for a server still
starting, no failure by itself."""

from __future__ import annotations

import pytest
from conftest import run_text

from ncclcheck.job.model import VerdictKind


@pytest.mark.parametrize("line", [
    "[I715 22:47:11.296780083 socket.cpp:872] [c10d] No socket on (localhost, 0) is listening yet, will retry.",
    "[default7]:[I715 22:47:11.296780083 socket.cpp:872] [c10d] No socket on (localhost, 0) is listening yet, will retry.",
    "[rank3]:[I1128 09:14:03.512004 20817 socket.cpp:872] [c10d] No socket on (10.0.0.2, 0) is listening yet, will retry.",
])
def test_a_client_retrying_port_zero_is_an_endpoint_with_no_port(line):
    v = run_text(f"{line}\n").verdict
    assert v.kind is VerdictKind.LAUNCHER_FAILURE
    assert v.cause is not None and v.cause.cause.kind == "store_no_port"
    assert any("--rdzv-endpoint HOST:PORT" in step for step in v.next_steps)


@pytest.mark.parametrize("port", ["29500", "10", "50"])
def test_a_client_retrying_a_real_port_is_no_failure(port):
    line = f"[I1128 09:14:03.512004 20817 socket.cpp:872] [c10d] No socket on (10.0.0.2, {port}) is listening yet, will retry."
    v = run_text(f"{line}\n").verdict
    assert v.kind is VerdictKind.NO_FAILURE and v.cause is None
