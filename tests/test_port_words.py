"""A port the job binds already in use, in every program's words (the OS's EADDRINUSE and Windows' WSAEADDRINUSE,
c10d's server socket, a server's own wait for its port, Ray's check of its components' ports): port_in_use, wherever
the line stands and whichever rank printed it; lines that name a port without saying it is taken are not it."""

from __future__ import annotations

import pytest
from conftest import run_text

# Lines written from each program's format string, under the prefixes a launcher puts before a worker's line.
TAKEN = [
    # SGLang python/sglang/srt/utils.py wait_port_available: the ValueError, before and after the holder's details.
    "ValueError: port_base at 30234 is not available in 30 seconds. port_base is used by a process already.\n",
    "[rank1]: ValueError: dist_init_port at 5757 is not available in 30 seconds. dist_init_port is used by a process "
    "already. process.name()='python3' process.cmdline()=['python3'] process.status()='sleeping' pid=4121\n",
    # Ray python/ray/_private/parameter.py: two components configured with one port.
    "ValueError: Ray component dashboard is trying to use a port number 8265 that is used by other components.\n",
    # Windows Sockets' WSAEADDRINUSE (10048), as Python's OSError and c10d's socket word it.
    "OSError: [WinError 10048] Only one usage of each socket address (protocol/network address/port) is normally "
    "permitted\n",
    # A server that says so in its own words ("Port N is already in use"), raised.
    "[default0]:RuntimeError: Port 8000 is already in use\n",
    # The OS's own words under c10d (errno 98, EADDRINUSE), whatever the release.
    "[rank0]: torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
    "address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use\n",
]


@pytest.mark.parametrize("line", TAKEN)
def test_a_port_taken_is_port_in_use(line):
    """Each form is the cause port_in_use, whose fix says to give each server or worker its own port."""
    v = run_text("Starting the job\n" + line).verdict
    assert v.cause is not None and v.cause.cause.kind == "port_in_use", v.summary
    assert "port" in " ".join((*v.cause.cause.fix, *v.next_steps))


@pytest.mark.parametrize("line", [
    "ValueError: port 8000 is available but the server did not start in 30 seconds\n",
    "RuntimeError: the dashboard is not available: a process already holds its lock file\n",
    "ValueError: master_port must be an integer, got 'abc'\n",
])
def test_a_port_named_without_being_taken_is_not(line):
    """A failure that names a port, or a process that is there already, without saying the port is taken."""
    v = run_text(line).verdict
    assert v.cause is None or v.cause.cause.kind != "port_in_use", v.summary
