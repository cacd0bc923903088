"""What each rank runs, as its own lines say, and what must agree across the job's ranks and nodes.

Every rank's NCCL prints its release, the driver's CUDA, the network plugin and its fabric library, the interfaces
it chose and each ``NCCL_*`` variable it read (``evidence/formats/nccl_release.py`` and the parser's NCCL facts);
ProcessGroupNCCL prints the ``TORCH_NCCL_*`` settings it runs with; a pasted environment report or a framework's
start line states PyTorch's, DeepSpeed's, transformers' or Accelerate's release and the GPU model
(``evidence/formats/envreport.py``). Each value belongs to the rank that printed it; a line that names no rank
belongs to its input (the file), and where one such input holds several values of one aspect (a paste of several
processes' lines), each further value to the line that first shows it; a network plugin's line that names no rank,
in an input that holds such lines of several hosts, belongs to the host NCCL's line header names (the plugin each host
loaded is compared across hosts, issue 41).
The values are grouped by who holds them with :mod:`ncclcheck.probe.agree`, the table ``probe --compare`` prints
for saved probes of several hosts, so that a log and a probe speak of the same aspects in the same words; a
disagreement is a finding with its usual consequence.

A member that never printed an aspect is unknown for it, never counted as disagreeing, with one exception: an
``NCCL_*`` variable. NCCL prints every variable it reads that the environment sets (``<NAME> set by environment to
<value>``, src/misc/param.cc, at INFO with the default ENV subsystem), so a rank that printed NCCL's INFO lines
(its driver's version) and not the variable ran with it unset.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ncclcheck.evidence.tables import FactRow, rows_with
from ncclcheck.evidence.types import Fact, FileScan
from ncclcheck.findings import Finding, Severity
from ncclcheck.probe.agree import RULES, Row, Rule, disagreements, names, table, value_text

# The aspects in the order people read them, each from the fact keys that state it (the readers' keys).
ASPECTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("NCCL version", ("nccl_version",)),
    ("NCCL's CUDA", ("nccl_cuda",)),
    ("driver CUDA", ("cuda_driver",)),
    ("driver", ("driver",)),
    ("PyTorch version", ("torch",)),
    ("CUDA runtime", ("torch_cuda",)),
    ("DeepSpeed version", ("deepspeed",)),
    ("transformers version", ("transformers",)),
    ("Accelerate version", ("accelerate",)),
    ("CPU architecture", ("cpu_arch",)),
    ("GPU model", ("gpu_model",)),
    ("GPU count", ("gpu_count",)),
    ("ranks per node", ("local_ranks",)),
    ("NCCL network", ("network",)),
    ("net plugin", ("net_plugin",)),
    ("aws-ofi-nccl version", ("aws_ofi_nccl",)),
    ("Libfabric version", ("libfabric",)),
    ("bootstrap interface", ("bootstrap",)),
    ("NCCL interfaces", ("net_socket",)),
    ("RDMA ports", ("net_ib",)),
)
_ASPECT_OF = {key: aspect for aspect, keys in ASPECTS for key in keys}
# The releases a job runs, for its versions line and for the step when a failure has no known cause.
RELEASES = ("NCCL version", "NCCL's CUDA", "driver CUDA", "driver", "PyTorch version", "CUDA runtime",
            "DeepSpeed version", "transformers version", "Accelerate version", "net plugin", "aws-ofi-nccl version",
            "Libfabric version", "GPU model")
_SETTING = re.compile(r"(?:TORCH_)?NCCL_[A-Z0-9_]+")
# A rank that printed this fact printed NCCL's INFO lines, where every NCCL_* variable the environment set is named.
_NCCL_INFO = "cuda_driver"
# "[0]eth0:10.0.0.1<0> [1]ib0:..." (NET/Socket), "[0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB eth0:..." (NET/IB)
_LISTED = re.compile(r"\[\d+\](?P<device>[^:\s\[\];]+(?::\d+/\w+)?)")
_IB_DEVICE = re.compile(r"\[\d+\](?P<port>[^\s\[\];]+)")


def _first_interface(value: str) -> str:
    """The bootstrap's interface, without the address it has on this host: ``eth0:10.0.0.2<0>`` -> ``eth0``."""
    return value.split(":", 1)[0]


def _sockets(values: Sequence[str]) -> str:
    return ", ".join(dict.fromkeys(m["device"].split(":")[0] for v in values for m in _LISTED.finditer(v))) or "none"


def _ib(values: Sequence[str]) -> str:
    return ", ".join(dict.fromkeys(m["port"] for v in values for m in _IB_DEVICE.finditer(v.split(";")[0]))) or "none"


_OF = re.compile(r"(?<!\d)(?P<here>\d{1,12}) of (?P<all>\d{1,12})")  # bounded: linear on a hostile line


def _largest_comm(values: Sequence[str]) -> str:
    """``4 of 8`` per communicator: the ranks on this node of the largest one (the world's)."""
    comms = [(int(m["all"]), m["here"]) for v in values if (m := _OF.fullmatch(v))]
    return max(comms)[1] if comms else _distinct(values)


def _most(values: Sequence[str]) -> str:
    """A count printed as a list grows (GPU 0, GPU 1, ...): the largest."""
    counts = [int(v) for v in values if v.isdigit()]
    return str(max(counts)) if counts else _distinct(values)


# How one member's several printings of an aspect become its one value (the default: each distinct value, in order).
_COMBINE: Mapping[str, Callable[[Sequence[str]], str]] = {
    "GPU count": _most,
    "ranks per node": _largest_comm,
    "bootstrap interface": lambda vs: ", ".join(dict.fromkeys(map(_first_interface, vs))),
    "NCCL interfaces": _sockets,
    "RDMA ports": _ib,
}

# What a disagreement in an aspect only logs state usually does; the rest are probe --compare's own rules.
LOG_RULES: tuple[Rule, ...] = (
    Rule("nccl-build-differs", r"NCCL's CUDA", Severity.WARNING,
         "NCCL builds for different CUDA releases come from different wheels or containers: usually a different NCCL "
         "release or build too (an error at init where the release differs), and a driver that serves one build may "
         "be too old for the other",
         "NVIDIA/nccl src/init.cc showVersion (the build's CUDA is part of the version line)"),
    Rule("net-plugin-differs", r"NCCL network|net plugin|aws-ofi-nccl version|Libfabric version", Severity.ERROR,
         "each process loads its own network plugin (or falls back to NCCL's sockets where none loads) and connects "
         "through it: ranks on different plugins, or plugin releases that do not speak the same wire protocol, "
         "cannot connect (an error or a hang at the first connection), and a rank that fell back to sockets runs the "
         "whole job at socket speed",
         "NVIDIA/nccl src/plugin/net.cc (each process picks its network), src/transport/net.cc (a connection's handle "
         "is the plugin's own)"),
    Rule("ranks-per-node-differ", r"ranks per node", Severity.WARNING,
         "NCCL plans rings, trees and NVLS for the node with the fewest ranks (minLocalRanks): nodes with more GPUs idle "
         "part of their links, a slower path; a launcher that starts the same number of ranks on every node fails on "
         "one with fewer GPUs",
         "NVIDIA/nccl src/init.cc (minLocalRanks/maxLocalRanks)"),
    Rule("bootstrap-interface-differs", r"bootstrap interface", Severity.WARNING,
         "NCCL's bootstrap listens on the interface each rank chose and sends that address to the others: ranks whose "
         "interfaces are on different networks cannot reach each other, a hang at init until the store's timeout",
         "NVIDIA/nccl src/bootstrap.cc (bootstrapNetInit picks the interface; NCCL_SOCKET_IFNAME)"),
    Rule("framework-version-differs", r"DeepSpeed version|transformers version|Accelerate version", Severity.WARNING,
         "each rank runs its own release's code: where two releases issue different collectives (another order, "
         "another shape, a collective one release adds) the ranks wait for each other, a hang or a mismatch",
         "torch.distributed's contract: every rank of a group issues the same collectives in the same order"),
    *RULES,
)


@dataclass(frozen=True)
class Versions:
    """Every aspect's values across the job's members (ranks, or inputs that name none): rows in reading order,
    fixed aspects first, then the settings by name."""

    rows: tuple[Row, ...] = ()
    members: tuple[str, ...] = ()

    def row(self, aspect: str) -> Row | None:
        return next((r for r in self.rows if r.aspect == aspect), None)

    @property
    def releases(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.aspect in RELEASES)

    @property
    def compared(self) -> tuple[Row, ...]:
        """The rows where two members or more say something: the cross-rank table."""
        return tuple(r for r in self.rows if sum(len(g.members) for g in r.groups) >= 2)


def is_setting(key: str) -> bool:
    """Whether a fact's key is a variable NCCL or ProcessGroupNCCL printed (``NCCL_PROTO``, ``TORCH_NCCL_...``): a
    setting of the versions table, its own aspect."""
    return _SETTING.fullmatch(key) is not None


def _aspect(key: str) -> str | None:
    return _ASPECT_OF.get(key) or (key if is_setting(key) else None)


def _read(key: str) -> bool:
    """A key :func:`_member_values` reads."""
    return key == "nccl_host" or _aspect(key) is not None


def _member_values(scans: Iterable[FileScan]) -> dict[str, dict[str, list[str]]]:
    """member -> aspect -> the values it printed, in order. A rank is its number; a line naming no rank is its
    input's, and where its input holds several values of one aspect, each further value is its first line's."""
    out: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for s in scans:
        seen: dict[str, str] = {}  # a rankless aspect's first value in this input
        # a rankless plugin line's host, where one input holds the lines of several hosts (a paste of each side's)
        facts = list(rows_with(s.facts, "key", _read))  # a table's rows (evidence/tables.py)
        hosts = {f.loc: f.value for f in facts if f.key == "nccl_host"}
        if len(set(hosts.values())) < 2:
            hosts = {}
        for f in facts:
            aspect = _aspect(f.key)
            if aspect is None:
                continue
            if f.who.rank is not None:
                member = str(f.who.rank)
            elif f.loc in hosts:
                member = hosts[f.loc]
            elif seen.setdefault(aspect, f.value) == f.value or aspect in _COMBINE:
                member = s.file
            else:
                member = f"{s.file}:{f.loc.line}"
            out[member][aspect].append(f.value)
    return out


def _nccl_info(facts: Iterable[Fact | FactRow]) -> set[str | None]:
    return {str(f.who.rank) if f.who.rank is not None else None for f in facts if f.key == _NCCL_INFO}


def read_versions(scans: Sequence[FileScan]) -> Versions:
    """The job's versions and settings, member by member, as one table."""
    values = _member_values(scans)
    if not values:
        return Versions()
    observed: dict[str, dict[str, str | None]] = {}
    for member, aspects in sorted(values.items(), key=lambda kv: _member_order(kv[0])):
        observed[member] = {a: _COMBINE.get(a, _distinct)(_setting_values(a, vs)) for a, vs in aspects.items()}
    with_info = {m for s in scans for m in _nccl_info(rows_with(s.facts, "key", _NCCL_INFO.__eq__))} | {
        s.file for s in scans
        if any(f.key == _NCCL_INFO and f.who.rank is None for f in rows_with(s.facts, "key", _NCCL_INFO.__eq__))}
    variables = {a for vals in observed.values() for a in vals if a.startswith("NCCL_")}
    for member in observed.keys() & with_info:
        for name in variables - observed[member].keys():
            observed[member][name] = None  # NCCL named every variable it read that was set: this one was not
    compared = table(observed, lambda aspect: False)
    order = {a: i for i, (a, _) in enumerate(ASPECTS)}
    return Versions(tuple(sorted(compared, key=lambda r: (order.get(r.aspect, len(order)), r.aspect))),
                    tuple(observed))


def _distinct(values: Sequence[str]) -> str:
    return ", ".join(dict.fromkeys(values))


def _member_order(member: str) -> tuple[int, int, str]:
    return (0, int(member), "") if member.isdigit() else (1, 0, member)


def agreement_findings(v: Versions) -> tuple[Finding, ...]:
    """One finding per aspect the ranks disagree on, with its usual consequence and the odd ones named (ranks as
    ``rank 3``, ``ranks 0-2``: probe's words name hosts)."""
    rows = [r for r in v.compared if not r.agrees]
    return tuple(_as_ranks(f, r) for f, r in zip(disagreements(rows, LOG_RULES, member="rank"), rows, strict=True))


def ranks_word(members: Sequence[str]) -> str:
    """Members as people read them, ranks with their word: ``rank 3``, ``ranks 0-2``, ``run.log``."""
    if members and all(m.isdigit() for m in members):
        return f"rank{'s' if len(members) > 1 else ''} {names(members)}"
    return names(members)


# What makes an aspect the same everywhere, where the table's "make it the same" does not say how.
_HOW = {
    "net-plugin-differs": "one network plugin on every node: the same libnccl-net.so (and its release) found by "
                          "every process (NCCL_NET_PLUGIN names it, its directory on LD_LIBRARY_PATH: HPC-X's "
                          "nccl_rdma_sharp_plugin/lib, an image's /opt/amazon/ofi-nccl), or none anywhere "
                          "(NCCL_NET_PLUGIN=none); NCCL_DEBUG=INFO's `NET/Plugin` lines on each node name what it "
                          "loaded",
}


def _as_ranks(f: Finding, row: Row) -> Finding:
    odd = row.odd
    said = f"out: {names(odd)})"
    fix = f.fix.replace(f"(change {names(odd)})", f"(change {ranks_word(odd)})") if f.fix and odd else f.fix
    if fix and f.code in _HOW:
        fix = f"{fix}: {_HOW[f.code]}"
    return replace(
        f, message=f.message.replace(said, f"out: {ranks_word(odd)})", 1) if odd else f.message,
        evidence=tuple(f"{value_text(g.value)} ({ranks_word(g.members)})" for g in row.groups), fix=fix)


def releases_line(v: Versions) -> str | None:
    """The releases the job runs, each with who runs it where they differ: ``NCCL version 2.28.9; driver CUDA 13.0``."""
    parts = []
    for r in v.releases:
        name = r.aspect.removesuffix(" version")
        if len(r.groups) == 1:
            parts.append(f"{name} {value_text(r.groups[0].value)}")
        else:
            parts.append(f"{name} " + " | ".join(f"{value_text(g.value)} ({names(g.members)})" for g in r.groups))
    return "; ".join(parts) or None


def _setting_values(aspect: str, values: Sequence[str]) -> Sequence[str]:
    """A variable's values without the full stop NCCL ends its sentence with (``set by environment to 0.``)."""
    return [v.removesuffix(".") for v in values] if _SETTING.fullmatch(aspect) else values
