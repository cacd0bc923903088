"""Where a process's exception was raised: a framework's own check, or a communication path that is not NCCL's.

A traceback's innermost frame is the ``assert`` or ``raise`` that failed (evidence/formats/raisesite.py reads the
frames at the exception's line). Two things follow from its place, general to every framework:

* an ``AssertionError`` raised in an installed package's own code (``site-packages/<package>/``, or a checkout laid
  out as ``<repo>/<package>/``) is that package's internal check, which a documented use should never fail: the
  framework's bug or a case its release does not handle, so its release notes, issues and a newer release are the
  step, with the assertion's own words and place;
* frames inside a communication path other than torch.distributed's NCCL collectives (``callpaths.toml``: PyTorch's
  symmetric memory, a framework's custom all-reduce or its own NCCL communicator) say the error is that path's; the
  framework's switch for it, read from its source, turns the path off for a run that confirms it;
* a traceback cut off before its exception's line (no name) still says where its process stood: inside a collective
  of torch.distributed, one every member of the group must call, or elsewhere; the rest of its output says what;
* an exception raised while a Dataset read one sample (torch.utils.data's fetcher calling the dataset's
  ``__getitem__``, or the innermost frame in a project's ``dataset``/``datasets`` folder) is that sample's data or the
  dataset's code: a check on a decoded value there failing is most often a missing or unreadable input file.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path

from ncclcheck.evidence.formats.pycall import CALLS
from ncclcheck.evidence.frdump import Frame
from ncclcheck.evidence.types import Loc
from ncclcheck.findings import Finding, Severity
from ncclcheck.job.model import Job, VerdictKind
from ncclcheck.job.versions import Versions

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

TABLE = Path(__file__).with_name("callpaths.toml")
# How the frameworks whose packages a traceback names call themselves (their documentation's spelling); another
# package is named by its package.
NAMES = {"vllm": "vLLM", "sglang": "SGLang", "deepspeed": "DeepSpeed", "transformers": "transformers",
         "accelerate": "Accelerate", "lightning": "Lightning", "pytorch_lightning": "Lightning", "torch": "PyTorch",
         "megatron": "Megatron-LM", "trl": "TRL", "peft": "PEFT", "ray": "Ray", "verl": "verl", "nemo": "NeMo",
         "colossalai": "ColossalAI", "horovod": "Horovod", "torchtitan": "torchtitan"}
_SITE = frozenset(("site-packages", "dist-packages"))
# Where a Dataset reads one sample: torch.utils.data's fetchers index the dataset (torch/utils/data/_utils/fetch.py,
# _MapDatasetFetcher.fetch: ``self.dataset[idx]``, run in a worker by _utils/worker.py), which calls its
# ``__getitem__``; a project's datasets are kept in a folder of that name (torchvision/datasets, a repo's
# data/datasets).
_LOADER_FILES = ("torch/utils/data/_utils/fetch.py", "torch/utils/data/_utils/worker.py")
_DATASET_DIRS = frozenset(("dataset", "datasets"))
# torch.distributed's Python functions that are one collective every member of the group calls: distributed_c10d's
# (formats/pycall.py's CALLS), DDP's set-up (torch/distributed/utils.py since 1.11, DDP's own methods before: the
# parameters' shapes checked across the processes, rank 0's parameters and buffers broadcast to the others) and DDP's
# broadcast of the buffers before each forward (torch/nn/parallel/distributed.py: _sync_buffers, _sync_module_buffers,
# _default_broadcast_coalesced, _distributed_broadcast_coalesced; _sync_params in 1.x).
COLLECTIVES = CALLS | frozenset((
    "_verify_param_shape_across_processes", "_sync_module_states", "_sync_params_and_buffers", "_sync_params",
    "_sync_buffers", "_sync_module_buffers", "_default_broadcast_coalesced", "_distributed_broadcast_coalesced",
))


@dataclass(frozen=True)
class Raised:
    """An exception's name and its traceback's frames, innermost first, at its line."""

    name: str
    frames: tuple[Frame, ...]
    loc: Loc


@dataclass(frozen=True)
class CallPath:
    id: str
    files: tuple[str, ...]
    name: str
    source: str
    switch: dict[str, str]


@functools.cache
def call_paths() -> tuple[CallPath, ...]:
    """The table of communication paths (callpaths.toml)."""
    data = tomllib.loads(TABLE.read_text())
    return tuple(CallPath(p["id"], tuple(p["files"]), p["name"], p["source"], dict(p["switch"])) for p in data["path"])


def package(file: str) -> tuple[str, str] | None:
    """The top-level package a frame's file is in and the file from that package on (``vllm/v1/worker/x.py``):
    after ``site-packages``/``dist-packages``, or a checkout's ``<repo>/<package>/`` (the same name twice)."""
    parts = file.replace("\\", "/").split("/")
    for i in range(len(parts) - 1, 0, -1):
        if parts[i - 1] in _SITE or parts[i] == parts[i - 1] and parts[i].isidentifier():
            name = parts[i].removesuffix(".py")
            return (name, "/".join(parts[i:])) if name.isidentifier() else None
    return None


def raised(job: Job) -> list[Raised]:
    """The exceptions the processes printed as their errors, each with its frames, in the inputs' order."""
    errors = {e.loc for e in job.facts.errors}
    out = []
    for f in job.facts.raises:
        if f.loc not in errors:
            continue
        name, _, chain = f.value.partition("|")
        frames = []
        for part in chain.split(";"):
            file, _, rest = part.rpartition(":")
            path, _, line = file.rpartition(":")
            if path and line.isdigit():
                frames.append(Frame(rest, path, int(line)))
        out.append(Raised(name, tuple(frames), f.loc))
    return sorted(out, key=lambda r: (r.loc.file, r.loc.line))


def _where(frame: Frame) -> str:
    inside = package(frame.file)
    return f"{inside[1] if inside else frame.file}:{frame.line}, in {frame.name}"


def framework_check(r: Raised, v: Versions) -> Finding | None:
    """An assertion raised in an installed package's own code: that package's check failed."""
    if not r.name.endswith("AssertionError") or not r.frames or (inside := package(r.frames[0].file)) is None:
        return None
    name = NAMES.get(inside[0], inside[0])
    row = v.row(f"{name} version")
    runs = " and ".join(g.value for g in row.groups if g.value is not None) if row is not None else ""
    release = f" (the job runs {name} {runs})" if runs else ""
    return Finding(
        Severity.WARNING, "framework-check",
        f"The {r.name} was raised by {name}'s own check ({_where(r.frames[0])}): an assertion inside {name}'s code, "
        "not in the job's own code, failed on this launch.", (r.loc,),
        f"{name}'s own check failed at {inside[1]}:{r.frames[0].line}: look its message up in {name}'s issues and "
        f"release notes, and upgrade {name} to a newer release where a fix landed{release}; if the launch is one "
        f"{name} documents, report it there with the assertion",
    )


def data_loading(r: Raised) -> Finding | None:
    """An exception raised while a Dataset read one sample: the sample's data or the dataset's code, not the job's
    communication."""
    if not r.name or not r.frames:
        return None
    files = [f.file.replace("\\", "/") for f in r.frames]
    loader = any(f.endswith(_LOADER_FILES) for f in files) or any(f.name == "__getitem__" for f in r.frames[:3])
    if not (loader or _DATASET_DIRS & set(files[0].split("/")[:-1])):
        return None
    return Finding(
        Severity.WARNING, "data-loading",
        f"The {r.name} was raised while the data loader read one sample ({_where(r.frames[0])}): in the dataset's "
        "code, not in torch.distributed; the other ranks wait for this one in their next collective.", (r.loc,),
        "find the sample it failed on: a check on a value the dataset decoded failing there (an image reader that "
        "returned no image, an empty array) is most often a missing, empty or unreadable input file; log the file's path "
        "in the dataset's __getitem__ before its check (or rerun that rank with num_workers=0 to stop there) and "
        "replace or drop that file",
    )


def cut_traceback(r: Raised) -> Finding | None:
    """A traceback cut off before its exception's line: where its process stood, and whether that is a collective
    every member of its group must call."""
    if r.name or not r.frames:
        return None
    inner = r.frames[0]
    at = next((i for i, f in enumerate(r.frames) if f.name in COLLECTIVES and (package(f.file) or ("",))[0] == "torch"),
              None)
    if at is None:
        return Finding(Severity.WARNING, "cut-traceback",
                       f"The traceback is cut off before its exception's line: its process stood in {_where(inner)} "
                       "when it failed.", (r.loc,),
                       "bring the rest of that process's output: its exception's line, cut off here, says what failed")
    frame = r.frames[at]
    caller = next((f for f in r.frames[at + 1:] if (package(f.file) or ("",))[0] != "torch"), None)
    called = f", called from {_where(caller)}" if caller is not None else ""
    return Finding(
        Severity.WARNING, "cut-traceback",
        f"The traceback is cut off before its exception's line: its process stood in a collective of torch.distributed "
        f"({_where(frame)}){called}, which every member of its group must call. An exception there "
        "is that collective failing: the other members did not reach it in time (a timeout), called another "
        "collective or another size (a mismatch), or one of them failed first.", (r.loc,),
        "bring the rest of that process's output (its exception's line says which); where the other ranks were "
        "elsewhere when it stood there (still in a loop, at another collective), the ranks parted before it: a "
        "decision one rank makes alone (an early stop or a patience check on its own metric, an exit from a loop, a "
        "branch on the rank) must reach every rank before it branches (broadcast it from the rank that makes it), so "
        "that all ranks leave the loop together and call the same collectives",
    )


def call_path(r: Raised, packages: set[str]) -> Finding | None:
    """The innermost frame inside a communication path of the table: the error is that path's, and its switch."""
    for i, frame in enumerate(r.frames):
        file = frame.file.replace("\\", "/")
        mine = [p for p in call_paths() if any(f in file for f in p.files)]
        if not mine:
            continue
        path = mine[0]
        caller = next((f for f in r.frames[i + 1:] if not any(x in f.file.replace("\\", "/") for p in mine
                                                                for x in p.files)
                       and (package(f.file) or ("",))[0] != "torch"), None)
        called = f", called from {_where(caller)}" if caller is not None else ""
        ours = {fw: sw for fw, sw in path.switch.items() if fw in packages} or path.switch
        fix = ("turn the path off for a run that confirms it, and keep it off while it fails: "
               + "; ".join(f"{NAMES.get(fw, fw)}: {sw}" for fw, sw in ours.items())) if ours else None
        return Finding(Severity.WARNING, "call-path",
                       f"The {r.name or 'exception'} was raised in {path.name} ({_where(frame)}){called}: that path failed, not "
                       "torch.distributed's NCCL collectives.", (r.loc,), fix)
    return None


def raise_findings(job: Job, kind: VerdictKind) -> list[Finding]:
    """What the place of the first exception with frames says: a framework's own check, a communication path."""
    if kind is VerdictKind.NO_FAILURE:
        return []
    v = job.facts.versions
    for r in raised(job):
        packages = {p[0] for f in r.frames if (p := package(f.file)) is not None}
        out = [f for f in (framework_check(r, v), call_path(r, packages), data_loading(r), cut_traceback(r))
               if f is not None]
        if out:
            return out
    return []
