"""Lint the NCCL/PyTorch settings in force in each rank, with the probe's own rules.

The settings a job runs with are in its ranks' environments, not in the shell that
runs ncclcheck.  Host facts (interfaces, RDMA, /dev/shm) are read once; each distinct
set of rank settings (and memlock limit, read from the rank itself) is linted once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from ncclcheck.findings import Finding
from ncclcheck.probe.host import Host, Probe, collect, iface_for, settings, this_host
from ncclcheck.probe.lint import lint
from ncclcheck.snapshot.procs import RankProc


def _memlock(pid: int) -> int | None:
    import psutil

    try:
        soft, _ = psutil.Process(pid).rlimit(psutil.RLIMIT_MEMLOCK)
    except (psutil.Error, AttributeError, OSError):
        return None
    return -1 if soft == psutil.RLIM_INFINITY else soft


def _launcher_env(pid: int) -> dict[str, str] | None:
    """The environment of the process that started a rank (torchrun's agent, srun, deepspeed), if readable."""
    import psutil

    try:
        parent = psutil.Process(pid).parent()
        return dict(parent.environ()) if parent is not None else None
    except (psutil.Error, OSError):
        return None


def lint_ranks(ranks: Sequence[RankProc], host: Host | None = None,
               memlock: Callable[[int], int | None] = _memlock,
               launcher_env: Callable[[int], Mapping[str, str] | None] = _launcher_env,
               ) -> list[tuple[Finding, tuple[int, ...]]]:
    """Every finding with the ranks it applies to, in the probe's order (most severe first)."""
    if not ranks:
        return []
    base_host = replace(host or this_host(), run=None)  # no nvidia-smi here: gpu.py reads it once
    base: Probe = collect(replace(base_host, env=dict(ranks[0].env)), with_versions=False)
    groups: dict[tuple[tuple[tuple[str, str, str], ...], int | None], list[int]] = {}
    probes: dict[tuple[tuple[tuple[str, str, str], ...], int | None], Probe] = {}
    for r in ranks:
        h = replace(base_host, env=dict(r.env), home=r.env.get("HOME", base_host.home))
        found = settings(h, launcher_env(r.pid))
        limit = memlock(r.pid)
        key = (tuple((s.name, s.value, s.source) for s in found), limit)
        if key not in probes:
            master = r.env.get("MASTER_ADDR")
            probes[key] = replace(base, settings=found, memlock=limit, master_addr=master,
                                  master_addr_iface=iface_for(master, base.interfaces) if master else None)
        groups.setdefault(key, []).append(r.rank)
    merged: dict[Finding, list[int]] = {}
    for key, rs in groups.items():
        for f in lint(probes[key]):
            merged.setdefault(f, []).extend(rs)
    return [(f, tuple(sorted(set(rs)))) for f, rs in merged.items()]
