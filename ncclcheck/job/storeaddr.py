"""The store's address as its client printed it, against the hosts the job ran on: a single-node job whose store
is its own node's name.

PyTorch's TCPStore client names the host and port it tried in each of its lines (torch/csrc/distributed/c10d/
socket.cpp, SocketConnectOp: "any network address of (host, port)", "to host:port (errno: …)", "while trying to
connect to (host, port)"). A launcher that fills the store's address with the node's host name (`socket.getfqdn()`
or `hostname`, as torchrun's --standalone and several frameworks' launchers do) makes a job of one node reach its
own store through whatever address that name resolves to: the address of an interface its firewall filters, or a
stale /etc/hosts entry, where the loopback address (127.0.0.1) would always answer. Where every rank the inputs
place ran on one host and the store is that host by name, the loopback address is the step that decides.
"""

from __future__ import annotations

import re

from ncclcheck.job.model import Job
from ncclcheck.job.rules import Decision

# The store's host and port on the client's lines: "(host, port)" or "host:port" / "[host]:port".
_ADDRESS = re.compile(r"(?:address of|connect to) \((?P<host>[^(), ]{1,255}), (?P<port>\d{1,5})\)"
                      r"|connect to \[?(?P<host2>[^\[\]\s():]{1,255})\]?:(?P<port2>\d{1,5})\b")
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "::ffff:127.0.0.1"})


def _store_host(text: str) -> str | None:
    """The host the store's client tried to reach, as its line names it, or None."""
    m = _ADDRESS.search(text)
    return (m["host"] or m["host2"]) if m else None


def _short(name: str) -> str:
    return name.split(".")[0].lower()


def loopback_steps(job: Job, d: Decision) -> tuple[str, ...]:
    """The loopback address as the first thing to try, where the store could not be reached on a job whose ranks
    the inputs place on one host only, and the store's address is that host's own name."""
    if d.cause is None or d.cause.cause.kind != "store_unreachable":
        return ()
    host = _store_host(d.cause.text)
    if host is None or host.lower() in _LOOPBACK:
        return ()
    places = {frozenset(_short(n) for n in names) for names in job.facts.hosts.values() if names}
    if len(places) != 1 or _short(host) not in next(iter(places)):
        return ()
    return (f"Every rank these inputs place ran on {host}, the store's own host: a job of one node reaches its "
            f"store over the loopback address. Start it with `--master_addr 127.0.0.1` (MASTER_ADDR=127.0.0.1) "
            "instead of the host name: the name resolves to the address of one of the node's network interfaces, "
            "which a firewall may filter, where 127.0.0.1 always answers on the node itself.",)
