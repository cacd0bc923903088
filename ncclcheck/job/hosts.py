"""Where each rank ran, and which ranks a lost peer's address or a host's record names.

NCCL's line header (``host:pid:tid [dev]``) and its bootstrap address (``Bootstrap : Using eth0:10.0.0.2<0>``) place
a rank on a host; its ``Init COMPLETE`` line gives the GPU's bus (``busId 3b000``); torchrun's failure table and
agent lines give each rank's PID and host. A transport's WARN line names the peer whose connection closed by host
name or address (``Connection closed by remote peer node-7<51450>``): a peer is a host, not a rank, and the ranks
the inputs place there are its candidates. A kernel's or a scheduler's record (``evidence/hostlog``) is joined to
ranks by PID first, then by the GPU's bus, then by host, pod or node: the first that names a rank decides.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ncclcheck.evidence.hostlog import bus_key
from ncclcheck.evidence.tables import rows_with
from ncclcheck.evidence.types import ErrorKind, FileScan, Loc, SystemEvent
from ncclcheck.ranks import Spans

# An interface's address in NCCL's "eth0:10.0.0.1<0>" / "ib0:fe80::1%ib0<0>". Linear on any line: the IPv6 run is
# taken whole once (a lookahead and its backreference do not backtrack) and bounded, and no start is tried inside
# ":::" (no address holds three colons).
_ADDRESS = re.compile(r"(?<!::):(?P<addr>[\d.]{1,15}|(?=(?P<v6>[0-9a-fA-F:]{1,39}))(?P=v6)(?:%\w{1,16})?)<\d+>")
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}
_TRANSPORT = (ErrorKind.CONNECTION, ErrorKind.NCCL_WARN, ErrorKind.NCCL_ERROR)


@dataclass(frozen=True)
class PeerLost:
    """A rank's NCCL lost its connection to a peer it names by address: the ranks the inputs place there."""

    reporter: int | None
    peer: str  # as printed, with its port: node-7<51450>
    loc: Loc
    ranks: tuple[int, ...]
    names: frozenset[str]  # the host as named: node-7.cluster and node-7

    def elsewhere(self, at: frozenset[str]) -> bool:
        """Whether a rank placed at these names is on another host than this peer."""
        return bool(at) and not self.names & at


def _ranks_at(at: dict[int, frozenset[str]] | dict[int, set[str]] | dict[int, set[int]]) -> dict[object, list[int]]:
    """The inverse of a rank's names (or PIDs, or buses): the ranks at each, so that a job's every record looks its
    ranks up instead of going through every rank (a lost peer on each of 100,000 ranks)."""
    ranks: dict[object, list[int]] = defaultdict(list)
    for r, values in at.items():
        for v in values:
            ranks[v].append(r)
    return ranks


_HOST_FACTS = frozenset({"host", "bootstrap", "net_socket"})


def rank_hosts(scans: Sequence[FileScan]) -> dict[int, frozenset[str]]:
    """Each rank's host names and addresses, from its own NCCL lines."""
    names: dict[int, set[str]] = defaultdict(set)
    for s in scans:
        for f in rows_with(s.facts, "key", _HOST_FACTS.__contains__):
            if f.key not in _HOST_FACTS or f.who.rank is None:  # the key first: most facts are of no host
                continue
            if f.key == "host":
                names[f.who.rank] |= {f.value, f.value.split(".")[0]}
            elif f.key in ("bootstrap", "net_socket") and (m := _ADDRESS.search(f.value)):
                names[f.who.rank].add(m["addr"])
    return {r: frozenset(v) for r, v in names.items()}


def peers_lost(scans: Sequence[FileScan]) -> list[PeerLost]:
    """The peers whose connection a rank's NCCL reports closed or failed, each with the ranks placed on its host;
    a loopback address names no host."""
    placed: dict[object, list[int]] | None = None  # made at the first peer named: a job with none never walks its facts
    out: list[PeerLost] = []
    seen: set[tuple[int | None, str]] = set()
    for s in scans:
        for e in s.errors:
            said = e.nccl if e.kind in _TRANSPORT else None  # "peer host<port>" (evidence/formats/nccl.py)
            if said is None or (host := said.peer) is None or host in _LOOPBACK or (e.who.rank, host) in seen:
                continue
            seen.add((e.who.rank, host))
            if placed is None:
                placed = _ranks_at(rank_hosts(scans))
            names = frozenset({host, host.split(".")[0]} if not host[0].isdigit() else {host})
            ranks = tuple(sorted({r for n in names for r in placed.get(n, ())}))
            out.append(PeerLost(e.who.rank, f"{host}<{said.peer_port}>", e.loc, ranks, names))
    return out


@dataclass(frozen=True)
class Joined:
    """A host's or a scheduler's record and the ranks it is about; ``by`` says through what (pid, bus, slurm_task,
    host), and
    ``caveat`` what makes the join less than certain."""

    event: SystemEvent
    ranks: tuple[int, ...]
    by: str
    caveat: str = ""


def _facts_by_rank(scans: Sequence[FileScan], key: str) -> dict[int, set[str]]:
    values: dict[int, set[str]] = defaultdict(set)
    for s in scans:
        for f in rows_with(s.facts, "key", key.__eq__):
            if f.key == key and f.who.rank is not None:
                values[f.who.rank].add(f.value)
    return values


def rank_pids(scans: Sequence[FileScan]) -> dict[int, set[int]]:
    """Each rank's process IDs: NCCL's line header, torchrun's failure table and agent lines."""
    pids = {r: {int(v) for v in vs} for r, vs in _facts_by_rank(scans, "pid").items()}
    for e in (e for s in scans for e in s.elastic):
        if e.pid is not None and e.rank is not None:
            pids.setdefault(e.rank, set()).add(e.pid)
    return pids


def rank_buses(scans: Sequence[FileScan]) -> dict[int, set[str]]:
    """Each rank's GPU, as ``domain:bus:device``, from NCCL's ``busId`` of that rank's communicators."""
    return {r: {bus_key(v) for v in vs} for r, vs in _facts_by_rank(scans, "bus_id").items()}


# Slurm runs at most 65533 tasks on one node (MaxTasksPerNode's ceiling): a longer task range is no node's.
SPAN_LIMIT = 65533


def _hosts_with_tables(scans: Sequence[FileScan]) -> dict[int, frozenset[str]]:
    names = {r: set(v) for r, v in rank_hosts(scans).items()}
    for s in scans:
        for e in s.elastic:
            if e.host and e.rank is not None and not e.agent_line:
                last = e.last_rank if e.last_rank is not None else e.rank
                if last - e.rank >= SPAN_LIMIT:
                    continue  # more tasks than one node runs: a damaged line, not a table of hosts to expand
                for r in range(e.rank, last + 1):
                    names.setdefault(r, set()).update({e.host, e.host.split(".")[0]})
    return {r: frozenset(v) for r, v in names.items()}


# Slurm's cgroup tree names the task a process ran as: v2 ``/system.slice/vm_slurmstepd.scope/job_1/step_0/user/
# task_1``, v1 ``/slurm/uid_0/job_1/step_0/task_1``; the kernel's OOM account prints it as the killed one's memcg.
_SLURM_TASK = re.compile(r"/job_\d+/step_[\w.]+/(?:user/)?task_(?P<task>\d+)$")


def _srun_tasks(scans: Sequence[FileScan]) -> list[tuple[int, int]]:
    """The ranks srun's own lines name as its tasks (``srun: error: vm: task 1: Out Of Memory``), as ranges kept as
    read: there srun started one process a rank, so a task number is a rank."""
    return [(e.rank, e.last_rank if e.last_rank is not None else e.rank) for s in scans for e in s.elastic
            if e.rank is not None and e.host and e.local_rank is None and not e.agent_line]


def _slurm_task(ev: SystemEvent) -> int | None:
    m = _SLURM_TASK.search(dict(ev.details).get("memcg", ""))
    return int(m["task"]) if m else None


def join_events(scans: Sequence[FileScan]) -> list[Joined]:
    """Every host and scheduler record in the inputs, with the ranks it is about (none where nothing joins it;
    ``by`` is then "none" where the inputs place no rank at all, so that nothing could have joined it)."""
    events = [e for s in scans for e in s.system]
    if not events:
        return []
    pids, buses, hosts = rank_pids(scans), rank_buses(scans), _hosts_with_tables(scans)
    tasks = Spans((lo, hi, None) for lo, hi in _srun_tasks(scans))
    placed = bool(pids or buses or hosts)
    many_hosts = len({min(v) for v in hosts.values() if v}) > 1
    # Each record looks up the ranks with its PID, bus or host: no record goes through every rank.
    by_pid, by_bus, by_name = _ranks_at(pids), _ranks_at(buses), _ranks_at(hosts)
    out: list[Joined] = []
    for ev in events:
        # A pod's name is its hostname, the one NCCL's line header prints.
        short = {n for name in (ev.host, ev.pod) if name for n in (name, name.split(".")[0])}
        on_host = {r for n in short for r in by_name.get(n, ())}

        def here(r: int, short: set[str] = short, on_host: set[int] = on_host) -> bool:
            """Not placed on another host than the record's."""
            return not short or r in on_host or not hosts.get(r)

        if ev.pid is not None and (ranks := sorted({r for r in by_pid.get(ev.pid, ()) if here(r)})):
            caveat = "" if short or not many_hosts else "the record names no host, and PIDs repeat across hosts"
            out.append(Joined(ev, tuple(ranks), "pid", caveat))
        elif ev.bus is not None and (ranks := sorted({r for r in by_bus.get(ev.bus, ()) if here(r)})):
            caveat = "" if short or not many_hosts else "the record names no host, and every host has a GPU there"
            out.append(Joined(ev, tuple(ranks), "bus", caveat))
        elif (task := _slurm_task(ev)) is not None and tasks.at(task) and here(task):
            out.append(Joined(ev, (task,), "slurm_task"))
        elif on_host:
            out.append(Joined(ev, tuple(sorted(on_host)), "host"))
        else:
            out.append(Joined(ev, (), "" if placed else "none"))
    return out
