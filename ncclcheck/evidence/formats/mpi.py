"""Open MPI's mpirun (4.x; 5.x runs on PRTE): its rank tags, per-rank output files, and its reports of a worker's end.

Recorded with tools/launchers/mpi.sh (tests/data/launchers/mpi/). mpirun numbers its processes with the job's
global rank (``OMPI_COMM_WORLD_RANK``), which is the rank PyTorch uses when the script reads it.

The report of a worker's death by a signal is one help text in ORTE (Open MPI 4.x: "%s noticed that process rank %s
with PID %s on node %s exited on signal %d (%s).") and two lines in PRTE (openpmix/prrte
src/mca/schizo/prte/help-prun.txt, [prun:proc-aborted-strsignal]: "exited on" ends the first, "signal %d (%s)." is
the second); the tool's name leads it (mpirun, mpiexec, prterun, prun).

How mpirun's console ends (job/ending.py): with ``--tag-output`` each line carries its rank's tag, so a console of
such lines is mpirun's, holding its processes' output. At a normal end mpirun prints nothing: it exits 0 once every
process did. A failure it reports as above (a process that exited on a signal, "mpirun detected that one or more
processes exited with non-zero status" with the first one's name and exit code, the time limit of ``--timeout``).
A tagged console that stops with none of these, while its processes said nothing of their end, stops mid-run.

Open MPI prints its warnings and errors as help texts (opal_show_help: a line of dashes, the text of the help file's
entry with its fields filled in, a line of dashes). The TCP BTL's [client connect fail] (opal/mca/btl/tcp/
help-mpi-btl-tcp.txt, from btl_tcp_endpoint.c's mca_btl_tcp_endpoint_complete_connect) says a process could not
connect to an address a peer published: "WARNING: Open MPI failed to TCP connect to a peer MPI process.  This" (a
second entry of 3.x-4.x words it "... peer MPI process via" / "TCP."), then the fields "Local host:", "PID:",
"Message:    connect() to <address>:<port> failed" and "Error:" (strerror of opal_socket_errno, which is not the
connection's own error, so-error: often a stale "Operation now in progress (115)"). The block is read as one MPI clue
of the line's process at its Message field: the title, the address it dialled and the host that dialled it.
mpirun's own help texts for a program it could not start on a node ("... was unable to launch the specified
application as it could not access / or execute an executable:", "... could not / change to the specified working
directory:", "... was unable to find the specified executable file"; its daemon's "Open MPI tried to fork a new process
via the "execve" system call but / failed.") are read at their first line as the launcher's clue (the catalogue's
program_not_started), and so is ORTE's out-of-band channel that reached no address of a peer ("A process or daemon was
unable to complete a TCP connection", oob_tcp_connection.c: the catalogue's remote_launch).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck import signals
from ncclcheck.evidence.formats.source import AT, Console, Format, LauncherLines, LineFormat, Sample, ended
from ncclcheck.evidence.types import Clue, Fact, JobStop, Loc, Said, Who, WorkerEnd

# `--tag-output`: "[1,3]<stderr>:" (job id, rank, stream) before each line of rank 3.
RANK_TAG = re.compile(r"\[\d+,(?P<rank>\d+)\]<std(?:out|err|diag)>:")
# `--output-filename DIR`: DIR/1/rank.3/stdout and stderr.
PATH_RANK = re.compile(r"(?:^|/)rank\.(?P<rank>\d+)/std(?:out|err|diag)$")


def _noticed(m: re.Match[str]) -> WorkerEnd:
    return ended("Open MPI", int(m["rank"]), exitcode=-int(m["signal"]), signal=signals.name(int(m["signal"])),
                 pid=int(m["pid"]) or None, host=m["host"])


# The launcher's name before its words (prte_tool_basename: the name it was started by).
_TOOL = r"(?:(?:mpirun|mpiexec|orterun|prterun|prun|oshrun) )?"
LINES = (
    LineFormat("Open MPI", "noticed that process rank",
               re.compile(_TOOL + r"noticed that process rank (?P<rank>\d+) with PID (?P<pid>\d+) on node "
                          r"(?P<host>\S+) exited on signal (?P<signal>\d+)"), read=_noticed),
    # PRTE's two-line form: the worker on the first line, its signal on the next.
    LineFormat("Open MPI", "noticed that process rank",
               re.compile(_TOOL + r"noticed that process rank (?P<rank>\d+) with PID (?P<pid>\d+) on node "
                          r"(?P<host>\S+) exited on\s*$"),
               read=lambda m: ended("Open MPI", int(m["rank"]), pid=int(m["pid"]) or None, host=m["host"])),
    LineFormat("Open MPI", "signal ", re.compile(r"^\s*signal (?P<signal>\d+)(?: \([^)]*\))?\.\s*$"),
               read=lambda m: ended("Open MPI", None, exitcode=-int(m["signal"]),
                                    signal=signals.name(int(m["signal"])))),
    # "mpirun detected that one or more processes exited with non-zero status … The first process to do so was:"
    LineFormat("Open MPI", "Process name: [[", re.compile(r"^\s*Process name: \[\[\d+,\d+\],(?P<rank>\d+)\]"),
               read=lambda m: ended("Open MPI", int(m["rank"]))),
    LineFormat("Open MPI", "Exit code:", re.compile(r"^\s*Exit code:\s+(?P<code>-?\d+)\s*$"),
               read=lambda m: ended("Open MPI", None, exitcode=int(m["code"]))),
    LineFormat("Open MPI", "time limit for job execution has been reached",
               re.compile(r"The user-provided time limit for job execution has been reached"), stop=True),
)

# The TCP BTL's [client connect fail] help text: its title, then its fields (each within a few lines of it).
TCP_CONNECT = re.compile(r"Open MPI failed to TCP connect to a peer MPI process")
# (its Message is always btl_tcp_endpoint.c's "connect() to %s:%d failed": the word, rarer than "Message:", keeps it)
TCP_FIELD = re.compile(r"^\s*Local host:\s+(?P<host>\S{1,256})\s*$"
                       r"|^\s*Message:\s+(?P<message>connect\(\) to [^\n]{0,200}?)\s*$")
_TCP_WORDS = ("failed to TCP connect to a peer", "Local host:", "connect() to ")
_TCP_SPAN = 12  # the title's line to its Message field's: 7 in every release's entry, a wrapped paste's more

# mpirun's help texts for a program it could not start on a node (orte/tools/orterun/help-orterun.txt:
# [orterun:exe-not-accessible] and [orterun:wdir-not-found], whose first line ends at "could not", [orterun:exe-not-found],
# the tool's name first; the daemon's execve failing, orte/mca/odls/default/help-orte-odls-default.txt [execve error]):
# read at their first line, the launcher's clue.
# ORTE's out-of-band channel (its daemons' and processes' TCP connections to each other and to mpirun) reaching no
# address of a peer (orte/mca/oob/tcp/oob_tcp_connection.c, 2.x-4.x: "A process or daemon was unable to complete a TCP
# connection" / "to another process:", then "Local host:" and "Remote host:"): read at its first line, the
# launcher's clue (the catalogue's remote_launch).
OOB_CONNECT = re.compile(r"A process or daemon was unable to complete a TCP connection")
NOT_STARTED = re.compile(r"was unable to launch the specified application as it could not(?: access)?\s*$"
                         r"|was unable to find the specified executable file"
                         r"|tried to fork a new process via the \"execve\" system call but")
# mpirun's refusal to start a job asking for more processes than the slots it found (help-orte-rmaps-base.txt
# [orte-rmaps-base:alloc-error] and its kin, 1.x-4.x; PRRTE's help-prte-rmaps-base.txt and help-prte-rmaps-rr.txt):
# read at its first line, the launcher's clue (the catalogue's mpi_slots).
SLOTS = re.compile(r"There are not enough slots available in the (?:system|Grid Engine)")
_NOT_STARTED_WORDS = ("was unable to launch the specified application", "was unable to find the specified executable",
                      'tried to fork a new process via the "execve"', "was unable to complete a TCP connection",
                      "not enough slots available")

# The tag's end, in every tagged line: the reader's word in a head.
_TAG_WORDS = ("]<stdout>:", "]<stderr>:")
CONSOLE = Console("Open MPI", "none: mpirun exits 0 with no line of its own when every process did",
                  "mpirun's 'noticed that process rank N … exited on signal', 'detected that one or more processes "
                  "exited with non-zero status' with the process's name and exit code, and its --timeout's 'time "
                  "limit for job execution has been reached'",
                  "mpirun's exit status (and, under a scheduler, the job's record) and the rest of mpirun's console")


class Lines:
    """One input's mpirun lines, read in order: its reports of a worker's end, and its rank tags (two tagged lines,
    the first of them at the line's start, make its console)."""

    def __init__(self) -> None:
        self._ends = LauncherLines(LINES)
        self._tags = 0
        self._tcp: Loc | None = None  # the TCP BTL's connect failure's title, until its Message field
        self._host: str | None = None

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if self._tags < 2 and text.startswith("[") and RANK_TAG.match(text):
            self._tags += 1
            return (Fact(Who(), "launched", CONSOLE.name, loc),) if self._tags == 2 else ()
        if "failed to TCP connect to a peer" in text and TCP_CONNECT.search(text):
            self._tcp, self._host = loc, None
            return ()
        if self._tcp is not None and ("Local host:" in text or "connect() to " in text):
            return self._tcp_field(text, loc)
        if ("was unable to " in text or '"execve"' in text or "not enough slots" in text) and (
                NOT_STARTED.search(text) or OOB_CONNECT.search(text) or SLOTS.search(text)):
            return (Clue(Who(), "launcher", text.strip()[:300], loc),)
        return self._ends.feed(text, loc)

    def _tcp_field(self, text: str, loc: Loc) -> Iterable[Said]:
        """A field of the TCP BTL's connect failure: the host that dialled, then the address it dialled (the clue)."""
        title = self._tcp
        if title is None or title.file != loc.file or not 0 < loc.line - title.line <= _TCP_SPAN:
            self._tcp = None
            return ()
        if (m := TCP_FIELD.match(text)) is None:
            return ()
        if m["host"] is not None:
            self._host = m["host"]
            return ()
        self._tcp = None
        on = f" (on {self._host})" if self._host else ""
        return (Clue(Who(), "mpi", f"Open MPI failed to TCP connect to a peer MPI process: {m['message']}{on}", loc),)


_KILLED = "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed)."
_PRTE = "prterun noticed that process rank 3 with PID 2812 on node gpu-b exited on"
_LIMIT = "The user-provided time limit for job execution has been reached:"
FORMAT = Format(
    name="Open MPI",
    words=(*(f.word for f in LINES), *_TCP_WORDS, *_NOT_STARTED_WORDS),
    head_words=_TAG_WORDS,  # its tags, read where a console starts
    make=Lines,
    patterns=(*(f.pattern for f in LINES), TCP_CONNECT, TCP_FIELD, NOT_STARTED, OOB_CONNECT, SLOTS),
    rank_tags=(RANK_TAG,),
    prefixes=(RANK_TAG,),
    path_ranks=(PATH_RANK,),
    samples=(
        Sample("[1,0]<stdout>:rank 0 of 4 joined (pid 15642)", "tests/data/launchers/mpi/clean/console.log:4",
               (Fact(Who(), "launched", "Open MPI", AT),), before=("[1,1]<stdout>:rank 1 of 4 joined (pid 15643)",)),
        Sample(_KILLED, "tests/data/launchers/mpi/kill/console.log:44",
               (WorkerEnd("Open MPI", 1, _KILLED, AT, exitcode=-9, signal="SIGKILL", host="vm"),)),
        Sample("signal 9 (Killed).", "openpmix/prrte src/mca/schizo/prte/help-prun.txt [prun:proc-aborted-strsignal]",
               (WorkerEnd("Open MPI", 3, _PRTE, AT, exitcode=-9, signal="SIGKILL", pid=2812, host="gpu-b"),),
               before=(_PRTE,)),
        Sample("  Exit code:    1", "tests/data/launchers/mpi/raise/mpirun.log:65",
               (WorkerEnd("Open MPI", 2, "Process name: [[10664,1],2]", AT, exitcode=1),),
               before=("  Process name: [[10664,1],2]",)),
        Sample(_LIMIT, "tests/data/launchers/mpi/timelimit/console.log:2", (JobStop("Open MPI", _LIMIT, AT),)),
        Sample("  Message:    connect() to 10.0.0.7:1024 failed",
               "Open MPI opal/mca/btl/tcp/help-mpi-btl-tcp.txt [client connect fail] (\"Message:    %s\", "
               "btl_tcp_endpoint.c: \"connect() to %s:%d failed\")",
               (Clue(Who(), "mpi", "Open MPI failed to TCP connect to a peer MPI process: connect() to 10.0.0.7:1024 "
                                   "failed (on gpu-b)", AT),),
               before=("WARNING: Open MPI failed to TCP connect to a peer MPI process.  This", "  Local host: gpu-b")),
        Sample("A process or daemon was unable to complete a TCP connection",
               "Open MPI 4.x orte/mca/oob/tcp/oob_tcp_connection.c (opal_output of its out-of-band connect failure)",
               (Clue(Who(), "launcher", "A process or daemon was unable to complete a TCP connection", AT),)),
        Sample("There are not enough slots available in the system to satisfy the 64",
               "tests/data/launchers/mpi_launch/slots/console.log:2 (Open MPI 4.1.4, help-orte-rmaps-base.txt)",
               (Clue(Who(), "launcher", "There are not enough slots available in the system to satisfy the 64", AT),)),
        Sample("mpirun.openmpi was unable to launch the specified application as it could not access",
               "tests/data/launchers/mpi_launch/not_found/console.log:2 (Open MPI 4.1.4; orte/tools/orterun/"
               "help-orterun.txt [orterun:exe-not-accessible])",
               (Clue(Who(), "launcher", "mpirun.openmpi was unable to launch the specified application as it could not "
                                        "access", AT),)),
    ),
)
