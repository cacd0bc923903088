"""A connection to one of NCCL's listening sockets from something that is not a process of the job (NCCL's
socketFinalizeAccept finding the wrong magic, every release's form: src/misc/socket.cc): a set-up failure whose fix
names the foreign connection and the NCCL fix (job/statements.toml `nccl_socket_foreign_connection`); and NCCL's
warning that names no rank joined to the rank its process's own connection lines state (evidence/parse.py, by the
host and PID of NCCL's header). Lines written from NCCL's format strings (the magic `GET / HT` as a little-endian
uint64: an HTTP request's first bytes)."""

from __future__ import annotations

import pytest
from conftest import run_text

from ncclcheck.job.statements import told

WARN = "node3:2210:2290 [1] misc/socket.cc:484 NCCL WARN socketFinalizeAccept: wrong magic 5448202f20544547 != " \
       "3b1f9a6c22d0e871"
CHANNEL = "node3:2210:2305 [1] NCCL INFO Channel 00/0 : 9[1] -> 10[2] via P2P/CUMEM"


@pytest.mark.parametrize("line", [
    WARN,  # 2.x to 2.26: WARN
    "node3:2210:2290 [1] NCCL INFO socketFinalizeAccept: didn't receive a valid magic from 10.0.0.7<41022>",  # 2.27-2.29
    "node3:2210:2290 [1] NCCL INFO socketFinalizeAccept from 10.0.0.7<41022>: socket magic mismatch (peer "
    "0x5448202f20544547 != expected 0x3b1f9a6c22d0e871), discarding peer connection",  # 2.30
])
def test_every_releases_form_is_the_foreign_connection(line):
    said = told(line)
    assert said is not None and said.id == "nccl_socket_foreign_connection"


def test_the_warning_is_its_processs_rank_and_a_setup_failure():
    """The WARN names no rank; the same process's channel line, after it, states rank 9: the culprit is rank 9, and
    the steps name what connected and the NCCL fix."""
    v = run_text("\n".join([WARN, CHANNEL]) + "\n").verdict
    steps = " ".join(v.next_steps)
    assert (v.kind.value, v.culprit_ranks) == ("setup_failure", (9,))
    assert "NVIDIA/nccl#1808" in steps and "firewall" in steps


@pytest.mark.parametrize("others", [
    ["node4:2210:2305 [1] NCCL INFO Channel 00/0 : 9[1] -> 10[2] via P2P/CUMEM"],  # the same PID on another host
    [CHANNEL, "node3:2210:2305 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[2] via P2P/CUMEM"],  # two communicators' ranks
])
def test_no_join_where_the_lines_do_not_state_one_rank_of_that_process(others):
    """A PID is a process of one host only, and a process in two communicators states two ranks: neither is
    joined, and the warning stays a process's whose rank no line names."""
    v = run_text("\n".join([WARN, *others]) + "\n").verdict
    assert v.kind.value == "setup_failure" and v.culprit_ranks == ()
