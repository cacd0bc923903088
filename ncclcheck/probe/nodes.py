"""Saved probes of several hosts (``probe --format json``) as one table of what must agree across the job.

Each host's file gives its values (versions, GPUs, the network NCCL would use, every setting in force);
:mod:`ncclcheck.probe.agree` groups hosts by value and words each disagreement. The files are read as plain data,
tolerant of older probes: an aspect a file does not hold (``driver_cuda`` before it was collected) is unknown for
that host, never a difference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ncclcheck.findings import Finding, Severity
from ncclcheck.probe.agree import Row, disagreements, table

# The aspects every probe file can say something about, in the order people read them; everything else is a
# setting, where a host without it has it unset.
FIXED = ("NCCL version", "PyTorch version", "CUDA runtime", "driver", "driver CUDA", "GPU model", "GPU count",
         "NCCL interfaces", "NCCL subnets", "NCCL MTU", "RDMA ports")
NCCL_WHEELS = ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11")
# Settings that differ per process or per run by design (torchrun's run id, restart counts): never compared.
_PER_PROCESS = ("TORCHELASTIC_",)


def facts(doc: Mapping[str, Any]) -> dict[str, str]:
    """One host's values of the aspects that must agree; an aspect the file cannot tell is left out."""
    p = doc.get("probe", {})
    out: dict[str, str] = {}
    versions = p.get("versions")
    if versions:  # empty when versions were not collected: unknown, not "not installed"
        out["NCCL version"] = next((versions[w] for w in NCCL_WHEELS if w in versions), "no NCCL wheel")
        out["PyTorch version"] = versions.get("torch", "not installed")
    if "torch_cuda" in p and "torch" in (versions or {}):
        out["CUDA runtime"] = p["torch_cuda"] or "none (CPU build)"
    gpus = p.get("gpus")
    if gpus is not None and (gpus or "nvidia_smi" in p):
        out["driver"] = ", ".join(sorted({g["driver"] for g in gpus})) or "no GPU"
        if "driver_cuda" in p:
            out["driver CUDA"] = p["driver_cuda"] or "no GPU"
        out["GPU model"] = ", ".join(sorted({g["name"] for g in gpus})) or "no GPU"
        out["GPU count"] = str(len(gpus))
    picked = (doc.get("nccl_would_use") or {}).get("interfaces")
    if picked is not None:
        ifaces = {i["name"]: i for i in p.get("interfaces", [])}
        used = [ifaces[n] for n in picked if n in ifaces]
        out["NCCL interfaces"] = ", ".join(picked) or "none"
        out["NCCL subnets"] = ", ".join(sorted({n for i in used for n in i.get("networks", [])
                                                if not n.startswith("fe80:")})) or "none"
        out["NCCL MTU"] = ", ".join(sorted({str(i["mtu"]) for i in used if i.get("mtu")}, key=int)) or "unknown"
    if "rdma" in p:
        out["RDMA ports"] = ", ".join(f"{r['device']}:{r['port']}" for r in p["rdma"]
                                      if (r.get("state") or "").endswith("ACTIVE")) or "none active"
    for s in p.get("settings", []):
        if not s["name"].startswith(_PER_PROCESS):
            out[s["name"]] = s["value"]
    return out


def _cuda(version: str) -> tuple[int, int] | None:
    parts = version.split(".")
    return (int(parts[0]), int(parts[1])) if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit() else None


def runtime_findings(host: str, doc: Mapping[str, Any]) -> tuple[Finding, ...]:
    """A host whose driver is older than the CUDA runtime its torch was built for.

    From the CUDA Compatibility guide (docs.nvidia.com/deploy/cuda-compatibility): a runtime of a newer major
    release than the driver fails at the first CUDA call with cudaErrorInsufficientDriver ("CUDA driver version is
    insufficient for CUDA runtime version"), before NCCL starts; within one major release, minor version
    compatibility runs it with a limited feature set (PTX the driver cannot JIT-compile fails).
    """
    p = doc.get("probe", {})
    driver, runtime = _cuda(p.get("driver_cuda") or ""), _cuda(p.get("torch_cuda") or "")
    if driver is None or runtime is None or driver >= runtime:
        return ()
    major = driver[0] < runtime[0]
    return (Finding(
        severity=Severity.ERROR if major else Severity.INFO,
        code="driver-older-than-runtime",
        message=(f"on {host} the driver supports CUDA up to {p['driver_cuda']} but torch was built for CUDA "
                 f"{p['torch_cuda']}: " + (
                     "CUDA fails at the first call there (cudaErrorInsufficientDriver), an error at init"
                     if major else "it runs through minor version compatibility, with a limited feature set "
                                   "(PTX the driver cannot compile fails)")),
        evidence=(f"{host}: driver CUDA {p['driver_cuda']}", f"{host}: torch CUDA {p['torch_cuda']}"),
        fix=f"upgrade the driver on {host}, or install a torch build for CUDA {p['driver_cuda']} or older",
    ),)


@dataclass(frozen=True)
class Comparison:
    """The hosts, every aspect's row (fixed aspects first, then settings by name) and the findings."""

    hosts: tuple[str, ...]
    rows: tuple[Row, ...]
    findings: tuple[Finding, ...]

    @property
    def differs(self) -> bool:
        return any(not r.agrees for r in self.rows) or any(f.severity is Severity.ERROR for f in self.findings)


def compare(nodes: Sequence[tuple[str, Mapping[str, Any]]]) -> Comparison:
    """Hosts (label, probe JSON) as one comparison."""
    rows = table({label: facts(doc) for label, doc in nodes}, lambda aspect: aspect not in FIXED)
    order = {a: i for i, a in enumerate(FIXED)}
    rows = tuple(sorted(rows, key=lambda r: (order.get(r.aspect, len(FIXED)), r.aspect)))
    found = disagreements(rows) + tuple(f for label, doc in nodes for f in runtime_findings(label, doc))
    return Comparison(tuple(label for label, _ in nodes), rows, found)


def labels(files: Sequence[str], docs: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """Each file's host name; where two hosts share one (containers all called ``vm``), the files' names instead
    (``gpu-a.json`` -> ``gpu-a``), and where those collide too, the paths as given."""
    hosts = [str(d.get("probe", {}).get("hostname") or f) for f, d in zip(files, docs, strict=True)]
    if len(set(hosts)) == len(hosts):
        return tuple(hosts)
    stems = [f.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".json") for f in files]
    return tuple(stems) if len(set(stems)) == len(stems) else tuple(files)
