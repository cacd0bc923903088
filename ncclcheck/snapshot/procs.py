"""Find a job's rank processes on this node from their environment (psutil).

A rank is a process whose environment names its rank (``RANK``, or ``SLURM_PROCID`` for a
Python process started by srun) and the job's size or its local rank, as torchrun,
DeepSpeed, Accelerate and srun set them.  Children that inherit the environment (data
loader workers, compile workers) share their parent's rank and are not ranks: of the
processes that claim one rank in one job, the outermost Python process is the rank.
Only a short list of variables is kept, so that no token or password in a job's
environment ends up in an archive.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

KEEP = re.compile(r"^(NCCL_|TORCH_|TORCHELASTIC_|PYTORCH_|GLOO_|MASTER_ADDR$|MASTER_PORT$|RANK$|LOCAL_RANK$|WORLD_SIZE$|"
                  r"LOCAL_WORLD_SIZE$|GROUP_RANK$|ROLE_RANK$|CUDA_VISIBLE_DEVICES$|CUDA_LAUNCH_BLOCKING$|"
                  r"DEEPSPEED_TIMEOUT$|ACCELERATE_|SLURM_JOB_ID$|SLURM_STEP_ID$|SLURM_PROCID$|SLURM_LOCALID$|"
                  r"SLURM_NTASKS$|HOME$|XDG_CACHE_HOME$)")


@dataclass(frozen=True)
class ProcInfo:
    """What the OS says about one process (built by :func:`scan` or by a test)."""

    pid: int
    ppid: int
    env: Mapping[str, str]
    cmdline: tuple[str, ...] = ()
    cwd: str | None = None
    user: str | None = None


@dataclass(frozen=True)
class RankProc:
    """One rank process of a job."""

    pid: int
    rank: int
    local_rank: int | None
    world_size: int | None
    cmdline: tuple[str, ...]
    cwd: str | None
    user: str | None
    env: Mapping[str, str] = field(default_factory=dict)  # only the variables KEEP matches


@dataclass(frozen=True)
class Job:
    """The rank processes of one job on this node."""

    key: tuple[str, ...]
    label: str
    ranks: tuple[RankProc, ...]
    world_size: int | None

    def rank_pids(self) -> set[int]:
        return {r.pid for r in self.ranks}


@dataclass(frozen=True)
class Discovery:
    """Every job found, and what could not be looked at."""

    jobs: tuple[Job, ...]
    unreadable: int  # processes whose environment we may not read
    notes: tuple[str, ...] = ()


def _int(v: str | None) -> int | None:
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def _is_python(p: ProcInfo) -> bool:
    return bool(p.cmdline) and os.path.basename(p.cmdline[0]).startswith("python")


def rank_of(p: ProcInfo) -> int | None:
    """The global rank this process says it is, or None when it is no rank."""
    env = p.env
    rank = _int(env.get("RANK"))
    if rank is not None and ("WORLD_SIZE" in env or "LOCAL_RANK" in env):
        return rank
    if rank is None and "SLURM_PROCID" in env and _is_python(p):
        return _int(env.get("SLURM_PROCID"))
    return None


def job_key(env: Mapping[str, str]) -> tuple[str, ...]:
    """What the ranks of one job share: launcher run id, rendezvous address, Slurm job."""
    return (env.get("TORCHELASTIC_RUN_ID", ""), env.get("MASTER_ADDR", ""), env.get("MASTER_PORT", ""),
            env.get("SLURM_JOB_ID", ""), env.get("SLURM_STEP_ID", ""))


def job_label(key: tuple[str, ...]) -> str:
    run_id, addr, port, slurm, step = key
    parts = []
    if run_id:
        parts.append(f"torchelastic run {run_id}")
    if addr or port:
        parts.append(f"MASTER_ADDR:PORT {addr or '(not set)'}:{port or '(not set)'}")
    if slurm:
        parts.append(f"Slurm job {slurm}" + (f".{step}" if step else ""))
    return ", ".join(parts) or "job without launcher variables"


def find_jobs(procs: Iterable[ProcInfo], exclude: Sequence[int] = (), unreadable: int = 0,
              parents: Mapping[int, int] | None = None) -> Discovery:
    """Group rank processes into jobs; ``exclude`` (this process and its ancestors) is never a rank.

    ``parents`` (pid -> parent pid of every process) links a worker to its rank through
    processes that are no ranks themselves.
    """
    by_pid = {p.pid: p for p in procs if p.pid not in exclude}
    tree = {pid: p.ppid for pid, p in by_pid.items()} | dict(parents or {})
    claims: dict[tuple[tuple[str, ...], int], list[ProcInfo]] = {}
    for p in by_pid.values():
        r = rank_of(p)
        if r is not None:
            claims.setdefault((job_key(p.env), r), []).append(p)
    notes = []
    chosen: dict[tuple[str, ...], list[RankProc]] = {}
    for (key, rank), ps in sorted(claims.items()):
        pythons = [p for p in ps if _is_python(p)] or ps
        pids = {p.pid for p in pythons}
        outer = [p for p in pythons if not _has_ancestor(p.pid, pids, tree)]
        outer.sort(key=lambda p: p.pid)
        if len(outer) > 1:
            notes.append(f"several processes claim rank {rank} of {job_label(key)} (pids "
                         f"{', '.join(str(p.pid) for p in outer)}); using {outer[0].pid}")
        p = outer[0]
        chosen.setdefault(key, []).append(RankProc(
            pid=p.pid, rank=rank, local_rank=_int(p.env.get("LOCAL_RANK", p.env.get("SLURM_LOCALID"))),
            world_size=_int(p.env.get("WORLD_SIZE", p.env.get("SLURM_NTASKS"))), cmdline=p.cmdline, cwd=p.cwd,
            user=p.user, env={k: v for k, v in p.env.items() if KEEP.match(k)}))
    jobs = []
    for key, ranks in chosen.items():
        sizes = {r.world_size for r in ranks if r.world_size is not None}
        jobs.append(Job(key, job_label(key), tuple(sorted(ranks, key=lambda r: r.rank)),
                        max(sizes) if sizes else None))
    jobs.sort(key=lambda j: min(r.pid for r in j.ranks))
    return Discovery(tuple(jobs), unreadable, tuple(notes))


def _has_ancestor(pid: int, among: set[int], parents: Mapping[int, int]) -> bool:
    return any(a in among for a in ancestors(pid, parents)[1:])


def candidates(d: Discovery, pid: int | None, parents: Mapping[int, int] | None = None) -> tuple[Job, ...]:
    """The jobs ``pid`` selects: the one it is a rank of, else those it runs above (a launcher); all when None.

    ``parents`` maps pid -> parent pid, to recognise a launcher pid.
    """
    if pid is None:
        return d.jobs
    for j in d.jobs:
        if pid in j.rank_pids():
            return (j,)
    return tuple(j for j in d.jobs if any(pid in ancestors(r.pid, parents or {})[1:] for r in j.ranks))


def scan() -> tuple[list[ProcInfo], int, dict[int, int]]:
    """Every process we may read: (processes with an environment, how many we may not read, pid -> ppid)."""
    import psutil

    out, denied, parents = [], 0, {}
    for proc in psutil.process_iter(["pid", "ppid"]):
        pid, ppid = proc.info["pid"], proc.info["ppid"]
        parents[pid] = ppid
        try:
            env = proc.environ()
        except psutil.AccessDenied:
            denied += 1
            continue
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
        if "RANK" not in env and "SLURM_PROCID" not in env:
            continue
        try:
            cmdline = tuple(proc.cmdline())
            cwd = proc.cwd()
            user = proc.username()
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            cmdline, cwd, user = (), None, None
        out.append(ProcInfo(pid, ppid or 0, env, cmdline, cwd, user))
    return out, denied, parents


def ancestors(pid: int, parents: Mapping[int, int]) -> list[int]:
    """``pid`` and every process above it."""
    out, seen = [], set()
    while pid and pid not in seen:
        out.append(pid)
        seen.add(pid)
        pid = parents.get(pid, 0)
    return out
