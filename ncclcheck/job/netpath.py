"""The network NCCL ended up on when the one the job asked for did not load: the silent fall-back to sockets.

NCCL builds a list of network plugins (NVIDIA/nccl src/plugin/net.cc ``initPluginLibsOnceFunc``): those named by
NCCL_NET_PLUGIN (``none`` names none), else the default ``libnccl-net.so``, then its two internal ones, IB and
Socket. It takes the first that opens and initialises; one that is not found says so only at INFO (``NET/Plugin:
Could not find: <names>``, src/plugin/plugin_open.cc), internal IB without a device likewise (``NET/IB : No device
found.``), and the job runs on whatever is left, usually TCP sockets (``Using network Socket``, src/init.cc). Nothing
fails: the job is slower, and only its INFO lines say why. Recorded: tests/data/gpu/layers/netplugin
(``NCCL_NET_PLUGIN=nonexistent``) and netplugin_sockets (the same with P2P and SHM off, the data on ``NET/Socket``).

Two findings, read from each rank's NCCL facts (evidence/formats/nccl_release.py, nccl.py):

* ``net-plugin-fallback`` (a warning): a rank set NCCL_NET_PLUGIN and its NCCL loaded no plugin (``internal``).
* ``net-sockets-fallback`` (information): no plugin was asked for, none was found, and the ranks' communicator spans
  more than one node as NCCL counts them (``localRanks`` below ``nRanks``), so data between nodes goes over the
  internal transport NCCL fell back to; not where NCCL_NET chose it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ncclcheck.evidence.types import Loc
from ncclcheck.findings import Finding, Severity
from ncclcheck.job.model import Job
from ncclcheck.job.versions import ranks_word

KEYS = frozenset({"NCCL_NET_PLUGIN", "NCCL_NET", "net_plugin", "network", "local_ranks"})
# What each internal network costs against a network plugin's RDMA fabric, in words.
_COST = {
    "socket": ("TCP through each host's kernel: a few GB/s per connection at best against 25-50 GB/s for a 200-400 "
               "Gb/s RDMA NIC, no GPUDirect RDMA, CPU cycles on every transfer; collectives between nodes run several "
               "times slower"),
    "ib": ("NCCL's own InfiniBand verbs instead of the plugin's transport: no EFA (libfabric), no SHARP or CollNet the "
           "plugin provides"),
}
_CHECK = ("NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET: a loaded plugin prints `NET/Plugin: Loaded net plugin <name>` "
          "and `Using network <name>`. Set NCCL_NET to the plugin's network name (`NCCL_NET=AWS Libfabric`, "
          "`NCCL_NET=IB`) so that NCCL fails at init (`Failed to initialize any NET plugin`) instead of falling back; "
          "`ldconfig -p | grep nccl-net` and LD_LIBRARY_PATH inside the container show whether the library is there.")


def _members(job: Job) -> dict[str, dict[str, tuple[str, Loc]]]:
    """member (a rank's number, else the input) -> each of the keys' first value and line."""
    out: dict[str, dict[str, tuple[str, Loc]]] = {}
    for file, f in job.facts.net_facts:
        member = str(f.who.rank) if f.who.rank is not None else file
        out.setdefault(member, {}).setdefault(f.key, (f.value.removesuffix("."), f.loc))
    return out


def _spans_nodes(facts: dict[str, tuple[str, Loc]]) -> bool:
    """``localRanks`` below ``nRanks``: NCCL counts more than one node in the communicator."""
    value = facts.get("local_ranks", ("", Loc("", 0)))[0]
    local, _, n = value.partition(" of ")
    return local.isdigit() and n.isdigit() and int(local) < int(n)


def _who(members: Sequence[str]) -> str:
    ranks = [m for m in members if m.isdigit()]
    named = ranks_word(sorted(ranks, key=int)) if ranks else ""
    files = [m for m in members if not m.isdigit()]
    return ", ".join(x for x in (named, ", ".join(files)) if x)


def fallback_findings(job: Job) -> list[Finding]:
    """The network plugin the job asked for and did not get, or the internal sockets it fell back to."""
    members = _members(job)
    internal = {m: f for m, f in members.items() if f.get("net_plugin", ("",))[0] == "internal" and "network" in f}
    asked = {m: f for m, f in internal.items() if "NCCL_NET_PLUGIN" in f and f["NCCL_NET_PLUGIN"][0].lower() != "none"}
    if asked:
        return [_asked(asked)]
    fell = {m: f for m, f in internal.items() if "NCCL_NET" not in f and f["network"][0].lower() == "socket"
            and _spans_nodes(f)}
    return [_sockets(fell)] if fell else []


def _locs(group: dict[str, dict[str, tuple[str, Loc]]], keys: Sequence[str]) -> tuple[Loc, ...]:
    first = group[min(group, key=lambda m: (0, int(m), "") if m.isdigit() else (1, 0, m))]  # the lowest rank's lines
    return tuple(first[k][1] for k in keys if k in first)


def _asked(asked: dict[str, dict[str, tuple[str, Loc]]]) -> Finding:
    plugins = ", ".join(dict.fromkeys(f["NCCL_NET_PLUGIN"][0] for f in asked.values()))
    nets = list(dict.fromkeys(f["network"][0] for f in asked.values()))
    cost = "; ".join(f"{n}: {_COST[n.lower()]}" for n in nets if n.lower() in _COST)
    one_node = not any(_spans_nodes(f) for f in asked.values()) and any("local_ranks" in f for f in asked.values())
    here = (" Its communicator is on one node, where P2P and SHM carry the data: it costs where ranks are on "
            "different nodes." if one_node else "")
    return Finding(
        Severity.WARNING, "net-plugin-fallback",
        f"The job asked for the network plugin {plugins} (NCCL_NET_PLUGIN) and NCCL loaded none on {_who(list(asked))}: "
        f"it fell back to its internal network without an error and runs on {' and '.join(nets)}"
        f"{f' ({cost})' if cost else ''}.{here}",
        _locs(asked, ("NCCL_NET_PLUGIN", "net_plugin", "network")), _CHECK)


def _sockets(fell: dict[str, dict[str, tuple[str, Loc]]]) -> Finding:
    nodes = sorted({f["local_ranks"][0] for f in fell.values()})
    return Finding(
        Severity.INFO, "net-sockets-fallback",
        f"On {_who(list(fell))}, whose communicator spans several nodes as NCCL counts them ({', '.join(nodes)} ranks "
        f"on a node), NCCL loaded no network plugin and runs on its internal sockets: data between nodes goes over "
        f"TCP ({_COST['socket']}). Right on an Ethernet-only cluster (or with P2P and SHM off); on one with "
        "InfiniBand, RoCE or EFA the plugin or the device is missing.",
        _locs(fell, ("net_plugin", "network", "local_ranks")), _CHECK)
