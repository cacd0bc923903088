"""What must agree across a job: each aspect's values grouped by who holds them, the odd ones named, and each
disagreement a finding with its usual consequence.

Generic over where the values come from: members are host names (``probe --compare``) or, later, ranks read from
logs; an aspect is a name (``NCCL version``, ``NCCL_PROTO``) and each member's value a string. A member that does
not know an aspect (an older probe file, a log that never printed it) is *unknown* and left out of that row, never
counted as disagreeing; for the aspects where absence is itself a value (a variable set on some hosts and not on
others) the caller says so, and those members hold ``None`` (unset).

The consequences are NCCL's and PyTorch's own mechanisms, each cited from the source that shows it (NCCL sources
read at NVIDIA/nccl master, 2.30).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ncclcheck.findings import Finding, Severity
from ncclcheck.ranks import ranges

UNSET_WORD = "unset"


@dataclass(frozen=True)
class Group:
    """Members that hold the same value of one aspect; ``value`` None: not set (or not installed) there."""

    value: str | None
    members: tuple[str, ...]


@dataclass(frozen=True)
class Row:
    """One aspect across the members: its groups, the largest first (ties in the members' order)."""

    aspect: str
    groups: tuple[Group, ...]
    unknown: tuple[str, ...] = ()  # members that cannot say (left out of every group)

    @property
    def agrees(self) -> bool:
        return len(self.groups) <= 1

    @property
    def odd(self) -> tuple[str, ...]:
        """Members outside a strict majority: none when the largest group is no larger than the next."""
        if self.agrees or len(self.groups[0].members) == len(self.groups[1].members):
            return ()
        return tuple(m for g in self.groups[1:] for m in g.members)


def table(observed: Mapping[str, Mapping[str, str | None]], absent_is_unset: Callable[[str], bool]) -> tuple[Row, ...]:
    """Rows for every aspect any member reported, in first-seen order.

    ``observed``: member -> {aspect: value}, members in the order to name them. A member without the aspect is
    unset where ``absent_is_unset(aspect)``, else unknown.
    """
    members = list(observed)
    aspects: dict[str, None] = {}
    for values in observed.values():
        aspects.update(dict.fromkeys(values))
    rows = []
    for aspect in aspects:
        by_value: dict[str | None, list[str]] = {}
        unknown = []
        for m in members:
            if aspect in observed[m]:
                by_value.setdefault(observed[m][aspect], []).append(m)
            elif absent_is_unset(aspect):
                by_value.setdefault(None, []).append(m)
            else:
                unknown.append(m)
        order = {v: i for i, v in enumerate(by_value)}
        groups = sorted(by_value.items(), key=lambda kv: (-len(kv[1]), order[kv[0]]))
        rows.append(Row(aspect, tuple(Group(v, tuple(ms)) for v, ms in groups), tuple(unknown)))
    return tuple(rows)


def _numbered(name: str) -> tuple[str, str] | None:
    """A name's stem and its trailing number (``gpu07``: ``gpu``, ``07``), or None; a loop, not a regex (a lazy stem
    before a digit run at the end backtracks over every split of a long run of digits)."""
    i = len(name)
    while i and name[i - 1].isdecimal():
        i -= 1
    return (name[:i], name[i:]) if i < len(name) else None


def names(members: Iterable[str]) -> str:
    """Members as people read them: ranks as ranges (``0-3, 8``), hosts with a common stem folded the way Slurm
    writes host lists (``gpu[01-03,07]``), other names listed."""
    ms = list(dict.fromkeys(members))
    if ms and all(m.isdigit() for m in ms):
        return ranges(int(m) for m in ms)
    stems: dict[tuple[str, int], list[str]] = {}
    out: dict[tuple[str, int] | str, None] = {}
    for m in ms:
        hit = _numbered(m)
        key: tuple[str, int] | str = (hit[0], len(hit[1])) if hit else m
        if hit:
            stems.setdefault((hit[0], len(hit[1])), []).append(hit[1])
        out[key] = None
    parts = []
    for key in out:
        if isinstance(key, str):
            parts.append(key)
            continue
        stem, width = key
        nums = stems[key]
        if len(nums) == 1:
            parts.append(stem + nums[0])
            continue
        parts.append(f"{stem}[{_hostlist_spans(sorted({int(n) for n in nums}), width)}]")
    return ", ".join(parts) or "none"


def _hostlist_spans(nums: Sequence[int], width: int) -> str:
    """Sorted numbers as Slurm's host-list spans, zero-padded to ``width``: ``1,2,3,7`` -> ``01-03,07``."""
    spans: list[list[int]] = []
    for n in nums:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ",".join(f"{a:0{width}d}" if a == b else f"{a:0{width}d}-{b:0{width}d}" for a, b in spans)


def value_text(value: str | None) -> str:
    return UNSET_WORD if value is None else value


@dataclass(frozen=True)
class Rule:
    """What a disagreement in the aspects ``pattern`` matches usually does, and where that is shown."""

    code: str
    pattern: str  # full match on the aspect
    severity: Severity
    consequence: str
    source: str  # where the mechanism is written down (kept here for the docs and the reader)


# First match wins; the last rule catches every other variable.
RULES: tuple[Rule, ...] = (
    Rule("nccl-version-differs", r"NCCL version", Severity.ERROR,
         "NCCL compares every rank's version code (major, minor and patch) while building a communicator and stops "
         "with 'Mismatched NCCL version detected' (ncclInvalidUsage): an error at init on the ranks that see it, a "
         "hang at init on the ranks left waiting for them",
         "NVIDIA/nccl src/init.cc initTransportsRank (peerInfo[i].version != peerInfo[rank].version)"),
    Rule("torch-version-differs", r"PyTorch version|CUDA runtime", Severity.WARNING,
         "each torch wheel pins its own NCCL wheel and CUDA runtime, so a different build usually brings a different "
         "NCCL (an error at init, see NCCL version) and different c10d defaults (timeouts, error handling)",
         "torch wheels' Requires-Dist on nvidia-nccl-cu12/cu13; NVIDIA/nccl src/init.cc version check"),
    Rule("driver-differs", r"driver|driver CUDA", Severity.WARNING,
         "NCCL keeps a feature only when every rank supports it (cuMem support is the AND over all ranks) and gates "
         "others on the driver's CUDA version: the older driver sets a slower path for the whole job",
         "NVIDIA/nccl src/init.cc (comm->cuMemSupport cleared by any peer), src/misc/cudawrap.cc (cudaDriverVersion "
         "checks)"),
    Rule("gpu-model-differs", r"GPU model", Severity.WARNING,
         "NCCL tunes for the lowest compute capability in the communicator and turns LL128 off where capabilities "
         "differ below sm90: a slower path, and the faster GPUs wait for the slower ones at every collective",
         "NVIDIA/nccl src/graph/tuning.cc ncclTopoTuneModel (minCompCap, pEnable &= minCompCap == maxCompCap)"),
    Rule("gpu-count-differs", r"GPU count", Severity.WARNING,
         "a different number of GPUs per node gives a different topology: NCCL plans rings, trees and NVLS for the "
         "smallest node (minLocalRanks), and a launcher that starts the same number of ranks per node fails on the "
         "node with fewer GPUs (invalid device ordinal)",
         "NVIDIA/nccl src/init.cc (minLocalRanks/maxLocalRanks), src/transport/nvls.cc (ppn = minLocalRanks)"),
    Rule("proto-algo-differs", r"NCCL_PROTO|NCCL_ALGO", Severity.ERROR,
         "each rank enables protocols and algorithms from its own NCCL_PROTO/NCCL_ALGO and picks one per collective "
         "from its own table: ranks that pick a different algorithm or protocol for the same call wait for data in a "
         "form the others never send, a hang at the first collective (or an error where no choice is left)",
         "NVIDIA/nccl src/graph/tuning.cc ncclTopoTuneModel (NCCL_PROTO, NCCL_ALGO read per process), src/enqueue.cc "
         "topoGetAlgoInfo ('No algorithm/protocol available')"),
    Rule("transport-differs", r"NCCL_IB_DISABLE|NCCL_NET|NCCL_NET_PLUGIN|NCCL_IB_GID_INDEX|NCCL_IB_ROCE_VERSION_NUM|"
         r"NCCL_IB_ADDR_FAMILY", Severity.ERROR,
         "the odd hosts pick a different network transport or address (sockets instead of IB, another plugin, "
         "another GID type): their connections to the other hosts fail or hang while the communicator is set up",
         "NVIDIA/nccl docs env.html (NCCL_IB_DISABLE, NCCL_NET, NCCL_IB_GID_INDEX); src/transport/net_ib/connect.cc "
         "(each side sends its own GID and QP attributes)"),
    Rule("ib-setting-differs", r"NCCL_IB_.*|NCCL_NET_GDR_.*|NCCL_CROSS_NIC|NCCL_SOCKET_.*|NCCL_NSOCKS_PERTHREAD|"
         r"NCCL_BUFFSIZE|NCCL_P2P_.*|NCCL_SHM_.*|NCCL_NVLS_ENABLE|NCCL_COLLNET_ENABLE|NCCL_.*CHANNELS", Severity.WARNING,
         "a transport or tuning setting that differs (or is set on some hosts only): the odd hosts take another path, "
         "a slower one, or one their peers are not set up for: a mismatch or a hang at connect",
         "NVIDIA/nccl docs env.html (these are read by each process for its own side of each connection)"),
    Rule("mtu-differs", r".*MTU", Severity.WARNING,
         "NCCL's IB transport runs at the smaller of both ends' active MTU, a slower path; on Ethernet a host whose MTU "
         "exceeds what its peers or switches carry loses its large frames where path-MTU discovery is blocked: "
         "connections open, then stall at the first large transfer (IB/RoCE errors or a hang)",
         "NVIDIA/nccl src/transport/net_ib/connect.cc (rtrAttr->mtu = min(remote mtu, active_mtu))"),
    Rule("interfaces-differ", r"NCCL interfaces|NCCL subnets|RDMA ports", Severity.WARNING,
         "the hosts use differently named or numbered networks: fine where they are one network, else ranks cannot "
         "reach each other and the bootstrap hangs (the socket transport connects to the addresses each rank "
         "publishes from its own interfaces)",
         "NVIDIA/nccl docs env.html (NCCL_SOCKET_IFNAME, NCCL_IB_HCA)"),
    Rule("rendezvous-differs", r"MASTER_ADDR|MASTER_PORT", Severity.ERROR,
         "ranks that rendezvous at different stores never meet: a hang at init until the store's timeout",
         "PyTorch torch.distributed env:// init method (MASTER_ADDR, MASTER_PORT)"),
    Rule("debug-setting-differs", r"NCCL_DEBUG.*|TORCH_CPP_LOG_LEVEL|TORCH_DISTRIBUTED_DEBUG|NCCL_VERSION",
         Severity.INFO,
         "logging or a record only: the odd hosts' logs say more or less",
         "NVIDIA/nccl docs env.html (NCCL_DEBUG, NCCL_DEBUG_SUBSYS, NCCL_DEBUG_FILE)"),
    Rule("setting-differs", r".*", Severity.WARNING,
         "the hosts run with different settings: whatever the variable changes happens on the odd hosts only",
         "the variable's own documentation"),
)


def rule_for(aspect: str, rules: Sequence[Rule] = RULES) -> Rule:
    return next(r for r in rules if re.fullmatch(r.pattern, aspect))


def disagreements(rows: Iterable[Row], rules: Sequence[Rule] = RULES, member: str = "host") -> tuple[Finding, ...]:
    """One finding per row that does not agree, worded with its rule's consequence; the odd ones named.

    ``member``: what a member is, for the fix (``host``, ``rank``).
    """
    out = []
    for row in rows:
        if row.agrees:
            continue
        rule = rule_for(row.aspect, rules)
        odd = row.odd
        who = f"odd one{'' if len(odd) == 1 else 's'} out: {names(odd)}" if odd else "no majority"
        out.append(Finding(
            severity=rule.severity,
            code=rule.code,
            message=f"{row.aspect} differs ({who}). {rule.consequence[0].upper()}{rule.consequence[1:]}.",
            evidence=tuple(f"{value_text(g.value)} ({names(g.members)})" for g in row.groups),
            fix=f"make {row.aspect} the same on every {member}" + (f" (change {names(odd)})" if odd else ""),
        ))
    return tuple(out)
