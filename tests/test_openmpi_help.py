"""Open MPI's help texts (opal_show_help) read as one stated failure with their fields (evidence/formats/mpi.py):
the TCP BTL's [client connect fail] (opal/mca/btl/tcp/help-mpi-btl-tcp.txt, its Message field from
btl_tcp_endpoint.c's "connect() to %s:%d failed"), in each release's wording: "... peer MPI process.  This" / "should
not happen." in every release, the second 3.x-4.x entry's "... peer MPI process via" / "TCP.  This should not happen.",
"Your Open MPI job may now fail." before 4.0 and "... may now hang or fail." since. An address local to every host
(docker's bridge, virbr0, a loopback) is the catalogue's socket_address; any other is the set-up failure the block
states, with Open MPI's interface settings as the fix.
"""

from __future__ import annotations

import pytest
from conftest import run_text

from ncclcheck.evidence.formats import mpi
from ncclcheck.evidence.types import Loc

_DASHES = "-" * 74


def _block(title: tuple[str, str], address: str, may: str = "hang or fail") -> str:
    return "\n".join([_DASHES, *title, "", f"Your Open MPI job may now {may}.", "", "  Local host: gpu-b",
                      "  PID:        9008", f"  Message:    connect() to {address} failed",
                      "  Error:      Operation now in progress (115)", _DASHES, ""])


_TITLE = ("WARNING: Open MPI failed to TCP connect to a peer MPI process.  This", "should not happen.")
_TITLE_VIA = ("WARNING: Open MPI failed to TCP connect to a peer MPI process via", "TCP.  This should not happen.")


@pytest.mark.parametrize(("title", "may"), [(_TITLE, "hang or fail"), (_TITLE, "fail"), (_TITLE_VIA, "fail")])
@pytest.mark.parametrize("address", ["172.17.0.1:1024", "192.168.122.1:1040", "127.0.1.1:1024"])
def test_a_connect_to_an_address_every_host_has_is_the_socket_address(title, may, address):
    v = run_text(_block(title, address, may)).verdict
    assert (v.kind.value, v.cause.cause.kind if v.cause else None) == ("setup_failure", "socket_address"), v.summary
    assert f"connect() to {address} failed (on gpu-b)" in v.summary
    assert "btl_tcp_if_include" in v.next_steps[0] and "oob_tcp_if_include" in v.next_steps[0], v.next_steps


def test_a_connect_to_another_address_is_the_stated_set_up_failure():
    v = run_text(_block(_TITLE, "10.1.0.7:1024")).verdict
    assert v.kind.value == "setup_failure" and (v.cause is None or v.cause.cause.kind != "socket_address"), v.summary
    assert v.stated is not None and v.stated.text.endswith("connect() to 10.1.0.7:1024 failed (on gpu-b)")
    assert any("btl_tcp_if_include" in s for s in v.next_steps), v.next_steps


def test_the_fields_of_another_help_text_are_not_read():
    """A Message field with no TCP connect title above it (another help text's), or one far below the title."""
    reader = mpi.FORMAT.reader()
    assert list(reader.feed("  Message:    connect() to 10.1.0.7:1024 failed", Loc("c.log", 9))) == []
    assert list(reader.feed(_TITLE[0], Loc("c.log", 10))) == []
    assert list(reader.feed("  Message:    connect() to 10.1.0.7:1024 failed", Loc("c.log", 40))) == []


@pytest.mark.parametrize("text", [
    # [orterun:exe-not-accessible], the tool's name first (mpirun, mpiexec, orterun; prterun in 5.x)
    "mpiexec was unable to launch the specified application as it could not access\nor execute an executable:\n\n"
    "Executable: /home/u/train.sh\nNode: gpu-b\n\nwhile attempting to start process rank 3.\n",
    # [orterun:wdir-not-found]
    "mpirun was unable to launch the specified application as it could not\nchange to the specified working "
    "directory:\n\nWorking directory: /scratch/run7\nNode: gpu-b\n\nwhile attempting to start process rank 2.\n",
    # [orterun:exe-not-found]
    "mpirun was unable to find the specified executable file, and therefore\ndid not launch the job.  This error was "
    "first reported for process\nrank 0; it may have occurred for other processes as well.\n",
    # the daemon's [execve error]
    'Open MPI tried to fork a new process via the "execve" system call but\nfailed.  Open MPI checks many things '
    "before attempting to launch a\n",
])
def test_a_program_mpirun_could_not_start_is_the_launchers_failure(text):
    v = run_text(text).verdict
    assert (v.kind.value, v.culprit_ranks, v.cause.cause.kind if v.cause else None) == (
        "launcher_failure", (), "program_not_started"), v.summary
    assert "chmod +x" in v.next_steps[0] and "--wdir" in v.next_steps[0], v.next_steps


def test_a_sentence_quoting_part_of_the_help_text_is_not_it():
    v = run_text("the FAQ says mpirun was unable to launch the specified application as it could not access it\n").verdict
    assert v.cause is None or v.cause.cause.kind != "program_not_started", v.summary


def test_ortes_out_of_band_channel_reaching_no_peer_is_the_remote_launch():
    """orte/mca/oob/tcp/oob_tcp_connection.c's report, as opal_output prints it (2.x-4.x)."""
    text = ("-" * 60 + "\nA process or daemon was unable to complete a TCP connection\nto another process:\n"
            "  Local host:    gpu-b\n  Remote host:   gpu-a\nThis is usually caused by a firewall on the remote host. "
            "Please\ncheck that any firewall (e.g., iptables) has been disabled and\ntry again.\n" + "-" * 60 + "\n")
    v = run_text(text).verdict
    assert (v.kind.value, v.cause.cause.kind if v.cause else None) == ("launcher_failure", "remote_launch"), v.summary
    assert any("oob_tcp_if_include" in s for s in v.next_steps), v.next_steps
