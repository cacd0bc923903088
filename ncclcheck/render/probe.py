"""Output of ``probe``: a report, ``export`` lines safe to eval, or JSON; and the cross-node comparison."""

from __future__ import annotations

import ipaddress
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ncclcheck.console import fit_table, unbroken, whole
from ncclcheck.findings import Finding
from ncclcheck.probe.host import Probe
from ncclcheck.probe.lint import Recommendation, nccl_pick
from ncclcheck.render.json_out import finding_json
from ncclcheck.render.report import finding_lines
from ncclcheck.schemas import PROBE as SCHEMA_VERSION


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
        parts.append(unbroken(Text("GPUs: " + "; ".join(f"{g.index}: {g.name} {g.memory} driver {g.driver}"
                                                        for g in p.gpus))))
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
        parts.append(unbroken(Text("packages: " + ", ".join(f"{k} {v}" for k, v in p.versions.items()))))
    parts.append(Text("findings", style="bold underline") if findings else Text("findings: none", style="green"))
    parts += [unbroken(line) for line in finding_lines(findings)]
    if recs:
        parts.append(whole("set (each line's reason above it)", style="bold underline"))
        for r in recs:
            parts.append(whole(f"# {r.reason}", style="dim"))
            parts.append(whole(f"export {r.name}={shlex.quote(r.value)}"))
    return Group(*parts)


def _subnets(iface: Mapping[str, Any]) -> str:
    nets = set()
    for a in iface.get("addresses", []):
        if a.get("netmask") and a.get("family") == "ipv4":
            try:
                nets.add(str(ipaddress.ip_interface(f"{a['address']}/{a['netmask']}").network))
            except ValueError:
                continue
    return ",".join(sorted(nets)) or "-"


def compare(nodes: Sequence[tuple[str, Mapping[str, Any]]]) -> list[tuple[str, dict[str, str]]]:
    """Aspects whose values differ across nodes: (aspect, {node: value})."""
    rows: dict[str, dict[str, str]] = {}
    for label, doc in nodes:
        p = doc["probe"]
        def put(aspect: str, value: str, label: str = label) -> None:
            rows.setdefault(aspect, {})[label] = value
        put("NCCL would use", ",".join(doc["nccl_would_use"]["interfaces"]) or "-")
        for i in p["interfaces"]:
            if i["kind"] == "loopback":
                continue
            put(f"interface {i['name']}: subnet", _subnets(i))
            put(f"interface {i['name']}: MTU", str(i["mtu"]))
            put(f"interface {i['name']}: running", str(i["running"]))
        for s in p["settings"]:
            if s["name"] not in ("MASTER_PORT",):
                put(f"{s['name']}", f"{s['value']} ({s['source']})")
        put("GPU driver", ",".join(sorted({g["driver"] for g in p["gpus"]})) or "-")
        put("GPUs", f"{len(p['gpus'])} x " + ",".join(sorted({g['name'] for g in p['gpus']})) if p["gpus"] else "-")
        for k, v in p["versions"].items():
            put(f"package {k}", v)
        put("RDMA active ports", ",".join(f"{r['device']}:{r['port']}" for r in p["rdma"]
                                          if (r["state"] or "").endswith("ACTIVE")) or "-")
    labels = [label for label, _ in nodes]
    return [(aspect, {n: vals.get(n, "(absent)") for n in labels}) for aspect, vals in rows.items()
            if len({vals.get(n, "(absent)") for n in labels}) > 1]


def compare_view(diffs: Sequence[tuple[str, dict[str, str]]], labels: Sequence[str]) -> RenderableType:
    """The differing aspects as a table (stacked per aspect where the terminal is too narrow)."""
    if not diffs:
        return Text(f"no differences between {', '.join(labels)}", style="green")
    return fit_table("differences between nodes", ("aspect", *labels),
                     [(aspect, *(vals[label] for label in labels)) for aspect, vals in diffs])
