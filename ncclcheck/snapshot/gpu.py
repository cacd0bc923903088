"""GPU state from ``nvidia-smi``: utilisation and memory per GPU, and which process uses which GPU.

A rank idle in host code leaves its GPU at 0 %; NCCL kernels waiting for a peer spin at
100 %.  nvidia-smi lists host pids: inside a container whose pid namespace differs, no
pid matches and the per-rank figure stays unknown.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

GPU_QUERY = ["nvidia-smi", "--query-gpu=index,uuid,utilization.gpu,memory.used,memory.total",
             "--format=csv,noheader,nounits"]
APP_QUERY = ["nvidia-smi", "--query-compute-apps=pid,gpu_uuid,used_memory", "--format=csv,noheader,nounits"]


@dataclass(frozen=True)
class GpuUse:
    """One GPU's utilisation (percent) and memory (MiB)."""

    index: int
    uuid: str
    util: int | None
    mem_used: int | None
    mem_total: int | None


@dataclass(frozen=True)
class GpuState:
    """nvidia-smi's answer, or why there is none."""

    gpus: tuple[GpuUse, ...] = ()
    apps: tuple[tuple[int, str, int | None], ...] = ()  # (pid, GPU uuid, MiB)
    error: str | None = None

    def of_pid(self, pid: int) -> tuple[GpuUse, ...]:
        """The GPUs ``pid`` has a context on."""
        uuids = {u for p, u, _ in self.apps if p == pid}
        return tuple(g for g in self.gpus if g.uuid in uuids)

    def util_of(self, pid: int) -> int | None:
        utils = [g.util for g in self.of_pid(pid) if g.util is not None]
        return max(utils) if utils else None


def _num(v: str) -> int | None:
    v = v.strip()
    return int(v) if v.isdigit() else None


def parse(gpu_csv: str, app_csv: str) -> GpuState:
    """Both queries' CSV (no header, no units) -> GpuState; odd lines are skipped."""
    gpus = []
    for line in gpu_csv.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) >= 5 and f[0].isdigit():
            gpus.append(GpuUse(int(f[0]), f[1], _num(f[2]), _num(f[3]), _num(f[4])))
    apps = []
    for line in app_csv.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) >= 3 and f[0].isdigit():
            apps.append((int(f[0]), f[1], _num(f[2])))
    return GpuState(tuple(gpus), tuple(apps))


def query(timeout: float = 5.0) -> GpuState:
    """Ask nvidia-smi; a host without it gives an empty state with the reason."""
    if shutil.which("nvidia-smi") is None:
        return GpuState(error="nvidia-smi not found")
    out = []
    for cmd in (GPU_QUERY, APP_QUERY):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return GpuState(error=f"nvidia-smi took longer than {timeout:g} s")
        except OSError as exc:
            return GpuState(error=f"nvidia-smi could not start: {exc.strerror or exc}")
        if p.returncode != 0:
            return GpuState(error="nvidia-smi failed: " + " ".join((p.stderr or p.stdout).split())[:200])
        out.append(p.stdout)
    return parse(*out)
