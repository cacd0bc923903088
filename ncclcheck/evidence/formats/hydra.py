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
proxy connected back) are the catalogue's remote_launch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who

# "[proxy:0:1@node168.local] main (pm/pmiserv/pmip.c:183): unable to connect to server ..." (bounded: linear).
_AT = r"@[^\]\s]{1,256}\] \w{1,100} \([^()\s]{1,300}:\d{1,7}\): \S"
ERROR = re.compile(r"\[mpiexec" + _AT + r"|\[proxy:(?:\d{1,7}|unset)(?::\d{1,7})?" + _AT)
WORDS = ("[mpiexec@", "[proxy:")


class Lines:
    """One input's Hydra error lines, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if (m := ERROR.search(text)) is None:
            return ()
        return (Clue(Who(), "launcher", text[m.start():].strip()[:300], loc),)


_ADDRESS = "[proxy:0:0@server1] HYDU_sock_connect (lib/utils/sock.c:110): unable to get host address for server1"
_REFUSED = ('[proxy:0:1@node2] HYDU_sock_connect (utils/sock/sock.c:145): unable to connect from "node2" to '
            '"node1" (Connection refused)')
_SERVER = ("[proxy:0@gpu-b] main (proxy/pmip.c:101): unable to connect to server gpu-a at port 41233 (check for "
           "firewalls!)")
_LAUNCH = "[mpiexec@gpu-a] ui_cmd_cb (mpiexec/pmiserv_pmci.c:51): Launch proxy failed."
FORMAT = Format(
    name="Hydra",
    words=WORDS,
    make=Lines,
    patterns=(ERROR,),
    samples=(
        Sample(_ADDRESS, "MPICH 4.1 src/pm/hydra/lib/utils/sock.c (HYDU_sock_connect: \"unable to get host address "
                         "for %s\"), HYDU_error_printf's \"[%s] \" and \"%s (%s:%d): \" (lib/hydra.h)",
               (Clue(Who(), "launcher", _ADDRESS, AT),)),
        Sample(_REFUSED, "MPICH 3.3 src/pm/hydra/utils/sock/sock.c (HYDU_sock_connect: \"unable to connect from "
                         "\\\"%s\\\" to \\\"%s\\\" (%s)\", strerror(ECONNREFUSED)); proxy:%d:%d (pm/pmiserv/pmip_utils.c)",
               (Clue(Who(), "launcher", _REFUSED, AT),)),
        Sample(_SERVER, "MPICH 4.2 src/pm/hydra/proxy/pmip.c (main: \"unable to connect to server %s at port %d "
                        "(check for firewalls!)\"); proxy:%d (proxy/pmip_utils.c)",
               (Clue(Who(), "launcher", _SERVER, AT),)),
        Sample("  " + _LAUNCH, "MPICH 4.1 src/pm/hydra/mpiexec/pmiserv_pmci.c (ui_cmd_cb: \"Launch proxy failed.\")",
               (Clue(Who(), "launcher", _LAUNCH, AT),)),
    ),
)
