"""The store's address as its client printed it, against the hosts the job ran on: a single-node job whose store
is its own node's name.

PyTorch's TCPStore client names the host and port it tried in each of its lines (torch/csrc/distributed/c10d/
socket.cpp, SocketConnectOp: "any network address of (host, port)", "to host:port (errno: …)", "while trying to
connect to (host, port)"). A launcher that fills the store's address with the node's host name (`socket.getfqdn()`
or `hostname`, as torchrun's --standalone and several frameworks' launchers do) makes a job of one node reach its
own store through whatever address that name resolves to: the address of an interface its firewall filters, or a
stale /etc/hosts entry, where the loopback address (127.0.0.1) would always answer. Where every rank the inputs
place ran on one host and the store is that host by name, the loopback address is the step that decides. The host
is the one the line's event carries (evidence/formats/storeclient.py reads the client's words).
"""

from __future__ import annotations

from ncclcheck.job.model import Job
from ncclcheck.job.rules import Decision

_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "::ffff:127.0.0.1"})


def _short(name: str) -> str:
    return name.split(".")[0].lower()


def loopback_steps(job: Job, d: Decision) -> tuple[str, ...]:
    """The loopback address as the first thing to try, where the store could not be reached on a job whose ranks
    the inputs place on one host only, and the store's address is that host's own name."""
    if d.cause is None or d.cause.cause.kind != "store_unreachable":
        return ()
    host = d.cause.store.host if d.cause.store is not None else None  # as the client's line names it
    if host is None or host.lower() in _LOOPBACK:
        return ()
    places = {frozenset(_short(n) for n in names) for names in job.facts.hosts.values() if names}
    if len(places) != 1 or _short(host) not in next(iter(places)):
        return ()
    return (f"Every rank these inputs place ran on {host}, the store's own host: a job of one node reaches its "
            f"store over the loopback address. Start it with `--master_addr 127.0.0.1` (MASTER_ADDR=127.0.0.1) "
            "instead of the host name: the name resolves to the address of one of the node's network interfaces, "
            "which a firewall may filter, where 127.0.0.1 always answers on the node itself.",)
