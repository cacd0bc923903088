"""MPICH's Hydra (the mpiexec of MPICH, Intel MPI and MVAPICH; evidence/formats/hydra.py): its error lines are the
launcher's own, with the host that printed them, and a proxy that could not reach mpiexec is the catalogue's
remote_launch, its fix Hydra's own (-iface, /etc/hosts, the ports). Lines written from MPICH's format strings
(src/pm/hydra: HYDU_error_printf's "[%s] " and "%s (%s:%d): ", HYDU_dbg_init's names) in each release's form: the
source paths of 3.x-4.0 (utils/sock/sock.c, pm/pmiserv/pmip.c) and of 4.1 on (lib/utils/sock.c, proxy/pmip.c), the
proxy's "proxy:<pg>:<id>" through 4.1 and "proxy:<id>" since 4.2, and an out-of-tree build's "./"- or "../"-led path.
"""

from __future__ import annotations

import pytest
from conftest import DATA, run, run_text

from ncclcheck.evidence.formats import hydra
from ncclcheck.evidence.types import Clue, Loc

LAUNCHERS = DATA / "launchers" / "hydra"


def _cause(text: str):
    v = run_text(text).verdict
    return v, (v.cause.cause.kind if v.cause is not None else None)


@pytest.mark.parametrize("text", [
    # MPICH 4.1: the proxy cannot resolve its own host's name, then gives up on mpiexec; mpiexec sees the launch end
    "[proxy:0:0@gpu-b] HYDU_sock_connect (lib/utils/sock.c:110): unable to get host address for gpu-b\n"
    "[proxy:0:0@gpu-b] main (proxy/pmip.c:105): unable to connect to server gpu-a at port 39647 (check for firewalls!)\n"
    "[mpiexec@gpu-a] ui_cmd_cb (mpiexec/pmiserv_pmci.c:51): Launch proxy failed.\n",
    # MPICH 3.3: connect() refused at the address the name resolved to
    '[proxy:0:1@node7.local] HYDU_sock_connect (utils/sock/sock.c:145): unable to connect from "node7.local" to '
    '"node1.local" (Connection refused)\n'
    "[proxy:0:1@node7.local] main (pm/pmiserv/pmip.c:183): unable to connect to server node1.local at port 54762 "
    "(check for firewalls!)\n",
    # MPICH 4.2 on: one number in the proxy's name; a connect that timed out (a firewall dropping it)
    '[proxy:1@n2] HYDU_sock_connect (lib/utils/sock.c:141): unable to connect from "n2" to "n1" (Connection timed out)\n',
    # an out-of-tree build's path, the proxy's line alone
    "[proxy:0:1@cn12] main (../../../../src/pm/hydra/pm/pmiserv/pmip.c:150): unable to connect to server cn01 at port "
    "40113 (check for firewalls!)\n",
    # mpiexec alone: the proxy's launch (ssh) ended before the proxy connected back
    "[mpiexec@login1] ui_cmd_cb (mpiexec/pmiserv_pmci.c:51): Launch proxy failed.\n",
])
def test_a_proxy_that_cannot_reach_mpiexec_is_the_remote_launch_with_hydras_fix(text):
    v, cause = _cause(text)
    assert (v.kind.value, v.culprit_ranks, cause) == ("launcher_failure", (), "remote_launch"), v.summary
    assert v.summary.count("[proxy:") + v.summary.count("[mpiexec@") == 1  # the first line, quoted with its host
    if "Launch proxy failed" not in text:  # the proxy's own words: Hydra's fix first
        assert "-iface" in v.next_steps[0] and "/etc/hosts" in v.next_steps[0], v.next_steps


def test_each_error_line_is_the_launchers_clue_quoted_from_its_prefix():
    line = "  [proxy:0:0@gpu-b] main (proxy/pmip.c:105): unable to connect to server gpu-a at port 39647 (check for firewalls!)"
    got = list(hydra.FORMAT.reader().feed(line, Loc("c.log", 3)))
    assert got == [Clue(got[0].who, "launcher", line.strip(), Loc("c.log", 3))]


@pytest.mark.parametrize("line", [
    # Hydra's callers' lines after a process died: the launcher's words, no launch failure
    "[mpiexec@IIPLab] HYDT_bscu_wait_for_completion (tools/bootstrap/utils/bscu_wait.c:75): one of the processes "
    "terminated badly; aborting",
    "[proxy:0:1@cn2] main (pm/pmiserv/pmip.c:200): demux engine error waiting for event",
    # Hydra's verbose chatter has no function and source: not an error line
    "[proxy:0:0@cn1] got pmi command (from 0): init",
    # prose naming the words
    "the proxy said unable to connect to server cn01 at port 40113 (check for firewalls!)",
])
def test_other_hydra_lines_are_no_remote_launch(line):
    v, cause = _cause(line + "\n")
    assert cause != "remote_launch", v.summary


def test_verbose_chatter_is_no_clue():
    assert list(hydra.FORMAT.reader().feed("[proxy:0:0@cn1] got pmi command (from 0): init", Loc("c.log", 1))) == []


_BAR = "=" * 83
_BLOCK = "\n".join([_BAR, "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES", "{running}", "{status}",
                    "=   CLEANING UP REMAINING PROCESSES", "=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES", _BAR, ""])


@pytest.mark.parametrize(("running", "status", "cause", "culprits"), [
    # MPICH 3.2+: the wait status of a process a signal ended, 128 more where it dumped core
    ("=   PID 4774 RUNNING AT ws1", "=   EXIT CODE: 139", "native_crash", ()),
    # SIGKILL may be the proxy's clean-up of a process that did not fail: a process died, none named
    ("=   PID 9665 RUNNING AT box", "=   EXIT CODE: 9", "host_kill", ()),
    # Intel MPI's Hydra names the rank and the signal; the rank stands where the signal is not the clean-up's
    ("=   RANK 6 PID 2447372 RUNNING AT node0009", "=   KILLED BY SIGNAL: 11 (Segmentation fault)", "native_crash",
     (6,)),
    ("=   RANK 6 PID 2447372 RUNNING AT node0009", "=   KILLED BY SIGNAL: 9 (Killed)", "host_kill", ()),
])
def test_mpiexecs_bad_termination_block_is_a_process_a_signal_ended(running, status, cause, culprits):
    v, got = _cause(_BLOCK.format(running=running, status=status))
    assert (v.kind.value, got, v.culprit_ranks) == ("rank_failed_first", cause, culprits), v.summary


def test_mpiexecs_exit_string_is_not_one_processs_signal():
    """mpiexec ORs every process's wait status: SIGABRT's 134 with the clean-up's 9 prints signal 15."""
    v, got = _cause("YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Terminated (signal 15)\n"
                    "This typically refers to a problem with your application.\n")
    assert got is None and v.kind.value == "no_failure", v.summary


def test_the_blocks_status_names_the_process_of_the_line_before():
    reader = hydra.FORMAT.reader()
    assert list(reader.feed("=   PID 812 RUNNING AT gpu-a", Loc("c.log", 3))) == []
    (end,) = reader.feed("=   EXIT CODE: 134", Loc("c.log", 4))
    assert (end.rank, end.pid, end.host, end.signal, end.exitcode) == (None, 812, "gpu-a", "SIGABRT", -6)


@pytest.mark.parametrize(("case", "cause"), [("proxy_unresolved", "remote_launch"), ("proxy_unreachable", "remote_launch"),
                                             ("ssh_unresolved", "remote_launch")])
def test_the_recorded_launch_failures_are_the_remote_launch_with_hydras_fix(case, cause):
    """MPICH 4.0.2's mpiexec whose proxy could not connect back (tools/launchers/hydra.sh), and its ssh failing."""
    v = run(LAUNCHERS / case / "console.log").verdict
    assert (v.kind.value, v.culprit_ranks, v.cause.cause.kind if v.cause else None) == ("launcher_failure", (), cause)
    if case.startswith("proxy"):
        assert "-iface" in v.next_steps[0], v.next_steps


@pytest.mark.parametrize("line", [
    # MPICH2 1.x-3.0: the resolver's failure without the name
    "[proxy:0:0@lap] HYDU_sock_connect (./utils/sock/sock.c:138): unable to get host address (Connection timed out)",
    # MPICH 3.1-3.2: the name and the resolver's error
    "[proxy:0:1@n2] HYDU_sock_connect (utils/sock/sock.c:139): unable to get host address for n1 (1)",
    # Intel MPI 2019+'s bootstrap proxy whose launch ended, with and without its function
    "[mpiexec@login] check_exit_codes (../../../../../src/pm/i_hydra/libhydra/demux/hydra_demux_poll.c:117): unable to "
    "run bstrap_proxy on cn7 (pid 247, exit code 65280)",
    "[mpiexec@login] check_exit_codes (../../../../../src/pm/i_hydra/libhydra/demux/hydra_demux_poll.c:114): unable to "
    "run proxy on cn7 (pid 39814)",
    "[mpiexec@login] Error: Unable to run bstrap_proxy on cn7 (pid 13546, exit code 65280)",
])
def test_each_releases_launch_failure_is_the_remote_launch(line):
    v, cause = _cause(line + "\n")
    assert (v.kind.value, cause) == ("launcher_failure", "remote_launch"), v.summary
