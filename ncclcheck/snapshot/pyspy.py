"""Take a rank's Python stacks with ``py-spy dump`` (the ``ncclcheck[live]`` extra).

py-spy reads the target's memory from outside (``process_vm_readv``), which needs the
same permission as ptrace.  By default it runs with ``--nonblocking`` so the rank is never
paused; ``--native`` (C/C++ frames too) needs py-spy to pause each thread for a moment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from ncclcheck.evidence.formats.pyspy import main_first
from ncclcheck.evidence.frdump import Frame
from ncclcheck.evidence.types import LiveThread

PTRACE_MARKERS = ("permission denied", "operation not permitted", "os error 1)", "ptrace")


class StackError(Exception):
    """py-spy could not read this process; ``ptrace`` is True when the OS refused access."""

    def __init__(self, message: str, ptrace: bool = False) -> None:
        super().__init__(message)
        self.ptrace = ptrace


def find_py_spy() -> str | None:
    """py-spy beside this interpreter (the same virtual environment), else on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("py-spy")


def command(exe: str, pid: int, native: bool) -> list[str]:
    return [exe, "dump", "--pid", str(pid), "--json", "--native" if native else "--nonblocking"]


def parse(text: str, pid: int) -> tuple[LiveThread, ...]:
    """py-spy's ``dump --json`` output -> threads, the process's main thread first, frames innermost first (its text
    output, pasted into a log, is read by evidence/formats/pyspy.py)."""
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise StackError(f"py-spy printed no JSON ({exc})") from None
    if not isinstance(raw, list):
        raise StackError("py-spy printed JSON that is not a list of threads")
    threads = []
    for t in raw:
        if not isinstance(t, dict):
            continue
        frames = tuple(Frame(str(f.get("name", "?")), str(f.get("filename", "?")),
                             f["line"] if isinstance(f.get("line"), int) else 0)
                       for f in t.get("frames") or () if isinstance(f, dict))
        name = str(t.get("thread_name") or t.get("os_thread_id") or t.get("thread_id") or "?")
        threads.append(LiveThread(name, frames))
    return main_first(tuple(threads), pid)  # the same as a dump's text (evidence/formats/pyspy.py)


def take(exe: str, pid: int, native: bool, timeout: float) -> tuple[LiveThread, ...]:
    """Run py-spy once on ``pid``; StackError says why it failed, in one line."""
    try:
        p = subprocess.run(command(exe, pid, native), capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise StackError(f"py-spy took longer than {timeout:g} s") from None
    except OSError as exc:
        raise StackError(f"py-spy could not start: {exc.strerror or exc}") from None
    if p.returncode != 0:
        text = p.stderr or p.stdout
        said = next((ln.strip() for ln in text.splitlines() if ln.strip()), f"exit code {p.returncode}")[:300]
        raise StackError(f"py-spy failed: {said}", ptrace=any(m in text.lower() for m in PTRACE_MARKERS))
    return parse(p.stdout, pid)


def ptrace_help(root: str = "/") -> str:
    """Why ptrace is refused here and how to allow it, from what this host says."""
    scope = _read(os.path.join(root, "proc/sys/kernel/yama/ptrace_scope"))
    caps = _read(os.path.join(root, "proc/self/status")) or ""
    eff = next((ln.split()[1] for ln in caps.splitlines() if ln.startswith("CapEff:")), None)
    has_cap = eff is not None and bool(int(eff, 16) & (1 << 19))  # CAP_SYS_PTRACE
    tips = []
    if scope and scope.strip() not in ("0",):
        tips.append(f"kernel.yama.ptrace_scope is {scope.strip()} (only parents may trace; 0 allows any process of "
                    "the same user): sudo sysctl kernel.yama.ptrace_scope=0, or run ncclcheck as root")
    if not has_cap:
        tips.append("this process lacks CAP_SYS_PTRACE: in a container, start it with --cap-add=SYS_PTRACE "
                    "(Kubernetes: securityContext.capabilities.add: [SYS_PTRACE]), or run ncclcheck on the host")
    tips.append("run ncclcheck as the job's user or as root")
    return "; ".join(tips)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None
