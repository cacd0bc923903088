"""MPICH's Hydra process manager (the ``mpiexec``/``mpirun`` of MPICH, and of Intel MPI and MVAPICH, which ship it):
its own error lines, and its report of an application process that ended badly.

Hydra is two programs: ``mpiexec`` on the launching node, and a proxy (``hydra_pmi_proxy``) that it starts on every
node (over ssh, or through Slurm or another launcher) to start that node's processes. Each proxy connects back to
mpiexec over TCP, at the host name and port mpiexec passes it; mpiexec's processes and the proxies print every error
with one macro (src/pm/hydra/lib/hydra.h, HYDU_error_printf; include/hydra.h before 4.1): the prefix
``[<program>@<host>] `` (HYDU_dbg_init: ``mpiexec``, ``proxy:<pg>:<id>`` through 4.1, ``proxy:<id>`` since 4.2,
``proxy:unset`` before the proxy knows its id), then ``<function> (<file>:<line>): `` and the text. The file is
the source's path as the build names it: ``utils/sock/sock.c`` and ``pm/pmiserv/pmip.c`` through 4.0,
``lib/utils/sock.c`` and ``proxy/pmip.c`` since 4.1, ``./``- or ``../``-led in out-of-tree builds. Each failure
prints its line and every caller's above it (HYDU_ERR_POP), so the first line of a run is where it failed, the
rest its callers' ("launcher returned error waiting for completion", "demux engine error waiting for event").
Each is read as the launcher's clue, quoted from its prefix (the host is the one that printed it); the catalogue
reads the mechanism from the text: a proxy that could not reach mpiexec (HYDU_sock_connect's "unable to get host
address for %s", "unable to connect from \\"%s\\" to \\"%s\\" (%s)", the proxy's "unable to connect to server %s at
port %d (check for firewalls!)") and mpiexec's "Launch proxy failed." (4.1 on: a proxy's launch ended before the
proxy connected back) are the catalogue's remote_launch. MPICH 1.x-3.0 worded the first "unable to get host address
(%s)"; 3.1-3.2 added the resolver's error ("unable to get host address for %s (%s)"). Intel MPI's Hydra (2019 on,
src/pm/i_hydra, closed: its words as the public threads Azure/az-hop#906, volcano-sh/volcano#2398, firemodels/fds#8508
and BLAST-WarpX/warpx#6980 quote them) starts a bootstrap proxy on each node and reports a launch of it that ended
as "unable to run bstrap_proxy on <host> (pid <pid>, exit code <status>)" ("unable to run proxy on <host> (pid
<pid>)" in 2019), from check_exit_codes or as "[mpiexec@host] Error: Unable to run bstrap_proxy on ...": the same
remote_launch.

An application process that a signal ended is reported by mpiexec in a block of its own (mpiexec/pmiserv_cb.c,
pm/pmiserv/pmiserv_cb.c before 4.1): ``=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES``, ``=   PID <pid>
RUNNING AT <host>`` (3.1 on), ``=   EXIT CODE: <n>``. Since 3.2 (and in 1.x) the block is printed only for a process
that did not exit (``!WIFEXITED``) and the number is its wait status as it stands: the signal in its low seven bits,
128 more where it dumped core (139 is SIGSEGV with a core); 3.0 and 3.1 printed it for a non-zero exit too, with the
exit value. The process named is the first of its proxy's list that a signal ended, which need not be the one that
failed: once one of its processes is ended by a signal (or, in an MPI program, leaves without finalizing), the
proxy kills every other with SIGKILL (pm/pmiserv/pmip.c, pmip_cb.c: HYD_pmcd_pmip_send_signal(SIGKILL)), so a
SIGKILL named there may be that clean-up's (tests/data/launchers/hydra/kill: rank 1 killed itself, the block names
rank 0's PID). Any other signal is the process's own, and it is read as that process's end by the signal (no rank:
MPICH names a PID); a SIGKILL as the death of a process of the job with no error of its own, no process named.
Intel MPI's Hydra names the rank and the signal (``=   RANK <r> PID <pid> RUNNING AT <host>`` then ``=   KILLED BY
SIGNAL: <n> (<name>)``), read alike, its rank named where the signal is not SIGKILL. mpiexec's own last words,
``YOUR APPLICATION TERMINATED WITH THE EXIT STRING: <strsignal> (signal <n>)`` (mpiexec/mpiexec.c), are not read:
its status is every process's wait status OR'd together, so its signal is no one process's (SIGABRT's 134 with the
clean-up's 9 prints "Terminated (signal 15)").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck import signals
from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who, WorkerDied, WorkerEnd

# "[proxy:0:1@node168.local] main (pm/pmiserv/pmip.c:183): unable to connect to server ..." (bounded: linear); Intel
# MPI's later releases print some without the function: "[mpiexec@host] Error: Unable to run bstrap_proxy on ...".
_AT = r"@[^\]\s]{1,256}\] (?:\w{1,100} \([^()\s]{1,300}:\d{1,7}\)|Error): \S"
ERROR = re.compile(r"\[mpiexec" + _AT + r"|\[proxy:(?:\d{1,7}|unset)(?::\d{1,7})?" + _AT)
# mpiexec's block for a process a signal ended: which process (Intel MPI's names its rank), then how.
RUNNING = re.compile(r"^=\s{1,8}(?:RANK (?P<rank>\d{1,7}) )?PID (?P<pid>\d{1,10}) RUNNING AT (?P<host>\S{1,256})\s*$")
STATUS = re.compile(r"^=\s{1,8}(?:EXIT CODE: (?P<status>\d{1,10})|KILLED BY SIGNAL: (?P<signal>\d{1,3})\b)")
WORDS = ("[mpiexec@", "[proxy:", "RUNNING AT", "EXIT CODE: ", "KILLED BY SIGNAL: ")
_CLEAN_UP = 9  # SIGKILL: the signal the proxy sends every other process of its node once one failed


def _signalled(number: int) -> tuple[int | None, str | None]:
    """The exit code and signal a launcher's report of a signal gives (-11, SIGSEGV); none for no signal's number."""
    said = signals.name(number)
    return (-number, said) if said is not None else (None, None)


class Lines:
    """One input's Hydra lines, in order: its error lines, each on its own, and the block that reports a process a
    signal ended (its process on one line, its status on the next)."""

    def __init__(self) -> None:
        self._running: re.Match[str] | None = None

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "[" in text and (m := ERROR.search(text)) is not None:
            return (Clue(Who(), "launcher", text[m.start():].strip()[:300], loc),)
        if "RUNNING AT" in text and (r := RUNNING.match(text)) is not None:
            self._running = r
            return ()
        if (s := STATUS.match(text)) is None:
            return ()
        running, self._running = self._running, None
        # the wait status's signal (its low seven bits; 128 is the core dump's flag), or Intel's signal's number
        number = int(s["status"]) & 0x7F if s["status"] is not None else int(s["signal"])
        if number == _CLEAN_UP:  # a process of the job died, no error of its own: maybe of the clean-up, so no PID
            return (WorkerDied(None, (), text.strip(), loc),)
        code, said = _signalled(number)
        rank = int(running["rank"]) if running is not None and running["rank"] is not None else None
        return (WorkerEnd("Hydra", rank, text.strip(), loc, exitcode=code, signal=said,
                          pid=int(running["pid"]) if running is not None else None,
                          host=running["host"] if running is not None else None),)


_ADDRESS = "[proxy:0:0@server1] HYDU_sock_connect (lib/utils/sock.c:110): unable to get host address for server1"
_REFUSED = ('[proxy:0:1@node2] HYDU_sock_connect (utils/sock/sock.c:145): unable to connect from "node2" to '
            '"node1" (Connection refused)')
_SERVER = ("[proxy:0@gpu-b] main (proxy/pmip.c:101): unable to connect to server gpu-a at port 41233 (check for "
           "firewalls!)")
_LAUNCH = "[mpiexec@gpu-a] ui_cmd_cb (mpiexec/pmiserv_pmci.c:51): Launch proxy failed."
_INTEL = ("[mpiexec@hb120v3-3] check_exit_codes (../../../../../src/pm/i_hydra/libhydra/demux/hydra_demux_poll.c:117): "
          "unable to run bstrap_proxy on hb120v3-3.internal.cloudapp.net (pid 12608, exit code 256)")
_INTEL_ERROR = "[mpiexec@runner-0] Error: Unable to run bstrap_proxy on localhost:2 (pid 13546, exit code 65280)"
FORMAT = Format(
    name="Hydra",
    words=WORDS,
    make=Lines,
    patterns=(ERROR, RUNNING, STATUS),
    samples=(
        Sample("=   EXIT CODE: 139", "MPICH 3.2+ src/pm/hydra/mpiexec/pmiserv_cb.c (\"=   PID %d RUNNING AT %s\", "
               "\"=   EXIT CODE: %d\" with the wait status)",
               (WorkerEnd("Hydra", None, "=   EXIT CODE: 139", AT, exitcode=-11, signal="SIGSEGV", pid=4774, host="ws1"),),
               before=("=   PID 4774 RUNNING AT ws1",)),
        Sample("=   KILLED BY SIGNAL: 6 (Aborted)", "Intel MPI's Hydra (bsc-performance-tools/extrae#101 quotes the form)",
               (WorkerEnd("Hydra", 6, "=   KILLED BY SIGNAL: 6 (Aborted)", AT, exitcode=-6, signal="SIGABRT",
                          pid=2447372, host="node0009"),),
               before=("=   RANK 6 PID 2447372 RUNNING AT node0009",)),
        Sample("=   EXIT CODE: 9", "tests/data/launchers/hydra/kill/console.log (MPICH 4.0.2: rank 0's PID, which the "
               "proxy's clean-up killed after rank 1's own SIGKILL)",
               (WorkerDied(None, (), "=   EXIT CODE: 9", AT),),
               before=("=   PID 12203 RUNNING AT vm",)),
        Sample(_ADDRESS, "MPICH 4.1 src/pm/hydra/lib/utils/sock.c (HYDU_sock_connect: \"unable to get host address "
                         "for %s\"), HYDU_error_printf's \"[%s] \" and \"%s (%s:%d): \" (lib/hydra.h)",
               (Clue(Who(), "launcher", _ADDRESS, AT),)),
        Sample(_REFUSED, "MPICH 3.3 src/pm/hydra/utils/sock/sock.c (HYDU_sock_connect: \"unable to connect from "
                         "\\\"%s\\\" to \\\"%s\\\" (%s)\", strerror(ECONNREFUSED)); proxy:%d:%d (pm/pmiserv/pmip_utils.c)",
               (Clue(Who(), "launcher", _REFUSED, AT),)),
        Sample(_SERVER, "MPICH 4.2 src/pm/hydra/proxy/pmip.c (main: \"unable to connect to server %s at port %d "
                        "(check for firewalls!)\"); proxy:%d (proxy/pmip_utils.c)",
               (Clue(Who(), "launcher", _SERVER, AT),)),
        Sample(_INTEL, "Intel MPI 2021.4's Hydra as https://github.com/Azure/az-hop/issues/906 quotes it",
               (Clue(Who(), "launcher", _INTEL, AT),)),
        Sample(_INTEL_ERROR, "Intel MPI's Hydra as https://github.com/BLAST-WarpX/warpx/pull/6980 quotes it",
               (Clue(Who(), "launcher", _INTEL_ERROR, AT),)),
        Sample("  " + _LAUNCH, "MPICH 4.1 src/pm/hydra/mpiexec/pmiserv_pmci.c (ui_cmd_cb: \"Launch proxy failed.\")",
               (Clue(Who(), "launcher", _LAUNCH, AT),)),
    ),
)
