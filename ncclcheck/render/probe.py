"""Output of ``probe``: a report, ``export`` lines safe to eval, or JSON; and the cross-host comparison."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ncclcheck.console import fit_table, unbroken, whole
from ncclcheck.findings import Finding
from ncclcheck.probe.agree import names, value_text
from ncclcheck.probe.host import Probe
from ncclcheck.probe.lint import Recommendation, nccl_pick
from ncclcheck.probe.nodes import Comparison
from ncclcheck.render.json_out import finding_json
from ncclcheck.render.report import finding_lines
from ncclcheck.schemas import PROBE as SCHEMA_VERSION
from ncclcheck.schemas import PROBE_COMPARE as COMPARE_SCHEMA_VERSION


def probe_json(p: Probe, findings: Sequence[Finding], recs: Sequence[Recommendation]) -> dict[str, Any]:
    """The whole probe as plain data (also the input of ``--compare``)."""
    picks, rule = nccl_pick(p.interfaces, p.value("NCCL_SOCKET_IFNAME"))
    data = asdict(p)
    for i, iface in zip(data["interfaces"], p.interfaces, strict=True):
        i["virtual"] = iface.virtual
        i["networks"] = sorted({a.network for a in iface.addresses if a.network})
    return {
        "schema_version": SCHEMA_VERSION,
        "probe": data,
        "nccl_would_use": {"interfaces": [i.name for i in picks], "rule": rule},
        "findings": [finding_json(f) for f in findings],
        "recommendations": [{"name": r.name, "value": r.value, "reason": r.reason} for r in recs],
    }


def shell(recs: Sequence[Recommendation]) -> str:
    """Only ``export`` lines, quoted for the shell."""
    return "".join(f"export {r.name}={shlex.quote(r.value)}\n" for r in recs)


def _mib(n: int | None) -> str:
    return "not readable here" if n is None else ("unlimited" if n == -1 else f"{n / 2**20:,.0f} MiB")


def report(p: Probe, findings: Sequence[Finding], recs: Sequence[Recommendation]) -> RenderableType:
    """The human report, section by section; a section absent here says so.

    Print it with ``crop=False``: values and ``export`` lines are never wrapped or cut, whatever the width.
    """
    parts: list[RenderableType] = [Text(f"host {p.hostname} ({p.system}, Python {p.python})", style="bold")]
    picks, rule = nccl_pick(p.interfaces, p.value("NCCL_SOCKET_IFNAME"))
    if p.interfaces:
        rows = []
        for i in p.interfaces:
            state = "running" if i.running else ("up, no carrier" if i.up else "down")
            marks = [m for m, hit in (("default route", i.name == p.default_route),
                                      ("MASTER_ADDR", i.name == p.master_addr_iface)) if hit]
            rows.append((i.name, i.kind, ", ".join([state, *marks]), str(i.mtu or ""),
                         f"{i.speed_mbps:,} Mb/s" if i.speed_mbps else "", "\n".join(a.cidr for a in i.addresses),
                         "uses" if i in picks else ""))
        parts.append(fit_table("network interfaces", ("name", "kind", "state", "MTU", "speed", "addresses", "NCCL"),
                               rows))
        parts.append(unbroken(Text(f"NCCL would use: {', '.join(i.name for i in picks) or 'nothing'} ({rule})")))
    else:
        parts.append(Text("network interfaces: not available here"))
    if p.rdma:
        rdma_rows = [(r.hca, r.state or "", r.rate or "", r.link_layer or "", ",".join(map(str, r.roce_v2_gids)))
                     for r in p.rdma]
        parts.append(fit_table("RDMA", ("port", "state", "rate", "link layer", "RoCE v2 GIDs"), rdma_rows))
        parts.append(unbroken(Text(f"uverbs devices: {', '.join(p.uverbs) or 'none'}; libibverbs loads: "
                                   f"{'yes' if p.libibverbs else 'no'}")))
    else:
        parts.append(Text("RDMA: no devices in /sys/class/infiniband"))
    if p.gpus:
        cuda = f"; the driver supports CUDA up to {p.driver_cuda}" if p.driver_cuda else ""
        parts.append(unbroken(Text("GPUs: " + "; ".join(f"{g.index}: {g.name} {g.memory} driver {g.driver}"
                                                        for g in p.gpus) + cuda)))
        if p.topology:
            parts.append(unbroken(Text("topology: " + ", ".join(f"{a}-{b} {link}" for a, b, link in p.topology))))
    else:
        parts.append(Text("GPUs: " + ("none listed by nvidia-smi" if p.nvidia_smi else "nvidia-smi not available")))
    parts.append(unbroken(Text(f"limits: /dev/shm {_mib(p.shm_bytes)}, memlock {_mib(p.memlock)}, local ports "
                               f"{'-'.join(map(str, p.port_range)) if p.port_range else 'not readable here'}")))
    if p.settings:
        parts.append(fit_table("configuration in force", ("variable", "value", "from"),
                               [(s.name, s.value, s.source if s.origin == "user" else f"{s.source} ({s.origin})")
                                for s in p.settings]))
    if p.versions:
        built = f" (built for CUDA {p.torch_cuda})" if p.torch_cuda else ""
        parts.append(unbroken(Text("packages: " + ", ".join(f"{k} {v}{built if k == 'torch' else ''}"
                                                             for k, v in p.versions.items()))))
    parts.append(Text("findings", style="bold underline") if findings else Text("findings: none", style="green"))
    parts += [unbroken(line) for line in finding_lines(findings)]
    if recs:
        parts.append(whole("set (each line's reason above it)", style="bold underline"))
        for r in recs:
            parts.append(whole(f"# {r.reason}", style="dim"))
            parts.append(whole(f"export {r.name}={shlex.quote(r.value)}"))
    return Group(*parts)



def compare_json(c: Comparison) -> dict[str, Any]:
    """The comparison as plain data: every aspect with its groups (largest first), odd and unknown hosts."""
    return {
        "schema_version": COMPARE_SCHEMA_VERSION,
        "hosts": list(c.hosts),
        "differs": c.differs,
        "aspects": [{"aspect": r.aspect, "agrees": r.agrees,
                     "groups": [{"value": g.value, "hosts": list(g.members)} for g in r.groups],
                     "odd": list(r.odd), "unknown": list(r.unknown)} for r in c.rows],
        "findings": [finding_json(f) for f in c.findings],
    }


def _aligned(pairs: Sequence[tuple[str, str]], indent: str) -> list[RenderableType]:
    """``left  right`` lines, the right column aligned; each line whole (values are pasted)."""
    w = max((len(a) for a, _ in pairs), default=0)
    return [whole(f"{indent}{a:<{w}}  {b}".rstrip()) for a, b in pairs]


def compare_view(c: Comparison) -> RenderableType:
    """What differs (each value on its own line with the hosts holding it, the odd ones named), what agrees, the
    findings. Lines are never wrapped: values are copied into scripts."""
    parts: list[RenderableType] = [whole(f"{len(c.hosts)} hosts: {names(c.hosts)}", style="bold")]
    differ = [r for r in c.rows if not r.agrees]
    if differ:
        parts.append(Text("differs", style="bold underline"))
        for r in differ:
            odd = f" (odd: {names(r.odd)})" if r.odd else " (no majority)"
            unknown = f"; {names(r.unknown)} cannot tell" if r.unknown else ""
            parts.append(whole(f"{r.aspect}{odd}{unknown}", style="bold"))
            parts += _aligned([(value_text(g.value), names(g.members)) for g in r.groups], "  ")
    else:
        parts.append(Text(f"no differences between {names(c.hosts)}", style="green"))
    same = [r for r in c.rows if r.agrees and r.groups]
    if same:
        parts.append(Text("same on every host that can tell", style="bold underline"))
        parts += _aligned([(r.aspect, value_text(r.groups[0].value)
                            + (f"  ({names(r.unknown)} cannot tell)" if r.unknown else "")) for r in same], "  ")
    parts.append(Text("findings", style="bold underline") if c.findings else Text("findings: none", style="green"))
    parts += [unbroken(line) for line in finding_lines(c.findings)]
    return Group(*parts)
