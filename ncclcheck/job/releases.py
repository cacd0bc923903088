"""The releases a failure may be due to: where no cause of the catalogue explains it, the releases the job runs are
the next thing to rule out, and a release with a known regression is named with its source.

The table of known regressions is data (``regressions.toml`` beside this module), each entry confirmed by the
vendor's release notes or the upstream thread that found and fixed it. A release is compared by its numbers only
(``2.21.5+cuda12.4`` is 2.21.5); an entry bound to a CPU architecture is named only where the inputs show that
architecture.
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ncclcheck.findings import Finding, Severity
from ncclcheck.job.model import VerdictKind
from ncclcheck.job.versions import Versions
from ncclcheck.probe.agree import names

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

TABLE = Path(__file__).with_name("regressions.toml")
_KEYS = {"product", "first", "last", "fixed", "symptom", "when", "source", "confirmed"}
_NUMBERS = re.compile(r"\d+(?:\.\d+)*")
# Verdicts where a release is worth ruling out when no catalogued cause explains them: NCCL failed, or every rank
# hangs without one that failed first. (A mismatch is the program's; a rank that failed first has its own error.)
_RELEASE_SUSPECT = frozenset({VerdictKind.NCCL_ERROR, VerdictKind.SETUP_FAILURE, VerdictKind.ALL_RANKS_STUCK,
                              VerdictKind.WATCHDOG_STUCK})
# Where NCCL itself failed with no reason and the inputs state no release, the step says how to collect them.
_NCCL_FAILED = frozenset({VerdictKind.NCCL_ERROR, VerdictKind.SETUP_FAILURE})
# How to read the releases a job runs: PyTorch's, the CUDA it was built for and the NCCL it loads, in one line (torch
# .version.cuda; torch.cuda.nccl.version(), the release of the libnccl the process loaded); the driver and the newest
# CUDA it supports head nvidia-smi's table.
COLLECT = "python -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())'"
# A library far older than the driver, or built for a newer CUDA than the driver runs, is itself a suspect: NCCL and
# PyTorch are built against a CUDA release and the driver must support it (CUDA's compatibility guide,
# https://docs.nvidia.com/deploy/cuda-compatibility/), and NCCL's own checks refuse what an old build or driver lacks
# (src/misc/strongstream.cc: graph capture needs a CUDA 11.3 build and an R465 driver).
_ALIGN = ("an NCCL or PyTorch much older than the driver and its CUDA, or built for a newer CUDA than the driver "
          "supports, is a suspect too: upgrade NCCL and PyTorch to releases built for the driver's CUDA, or align "
          "the driver with them")
# The releases the step names, in the order to try them, each with what "the previous release" means for it.
_TRY = (("NCCL version", "NCCL"), ("PyTorch version", "PyTorch"), ("aws-ofi-nccl version", "aws-ofi-nccl"),
        ("Libfabric version", "Libfabric"), ("DeepSpeed version", "DeepSpeed"), ("driver", "the NVIDIA driver"))


class RegressionTableError(ValueError):
    """The table cannot be read: the message names the file and the entry."""


@dataclass(frozen=True)
class Regression:
    product: str  # the aspect of the version table: "NCCL version", "PyTorch version"
    first: tuple[int, ...]
    last: tuple[int, ...]
    fixed: str
    symptom: str
    when: str
    source: str
    confirmed: str
    arch: str | None = None

    def covers(self, version: str) -> bool:
        v = release(version)
        return v is not None and self.first <= v <= self.last


def release(version: str) -> tuple[int, ...] | None:
    """A release's numbers: ``2.21.5+cuda12.4`` -> (2, 21, 5); None for a value that is no release."""
    m = _NUMBERS.match(version.strip())
    return tuple(int(x) for x in m[0].split(".")) if m else None


@functools.cache
def regressions() -> tuple[Regression, ...]:
    """The table, checked: every entry has every key, and its releases read as numbers."""
    data = tomllib.loads(TABLE.read_text(encoding="utf-8"))
    out = []
    for i, entry in enumerate(data.get("regression", [])):
        keys = set(entry) - {"arch"}
        if keys != _KEYS:
            raise RegressionTableError(f"{TABLE.name}: entry {i + 1}: keys {sorted(keys ^ _KEYS)} missing or unknown")
        first, last = release(entry["first"]), release(entry["last"])
        if first is None or last is None or first > last:
            raise RegressionTableError(f"{TABLE.name}: entry {i + 1}: first/last are not releases in order")
        out.append(Regression(entry["product"], first, last, entry["fixed"], entry["symptom"], entry["when"],
                              entry["source"], entry["confirmed"], entry.get("arch")))
    return tuple(out)


def release_findings(v: Versions, kind: VerdictKind, explained: bool) -> list[Finding]:
    """Where a failure has no cause in the catalogue: the known regressions of the releases the job runs, and the
    step to rule the releases out."""
    if explained or kind not in _RELEASE_SUSPECT:
        return []
    if not v.releases:
        return [_collect()] if kind in _NCCL_FAILED else []
    out = [_known(r, v) for r in regressions() if _runs(r, v)]
    step = _step(v)
    return [*out, step] if step is not None else out


def _runs(r: Regression, v: Versions) -> bool:
    row = v.row(r.product)
    if row is None or not any(g.value is not None and r.covers(g.value) for g in row.groups):
        return False
    if r.arch is None:
        return True
    arch = v.row("CPU architecture")
    return arch is not None and any(g.value == r.arch for g in arch.groups)


def _known(r: Regression, v: Versions) -> Finding:
    row = v.row(r.product)
    assert row is not None  # _runs found it
    hit = [g for g in row.groups if g.value is not None and r.covers(g.value)]
    who = " and ".join(f"{g.value} ({names(g.members)})" for g in hit)
    return Finding(
        Severity.WARNING, "known-regression",
        f"The job runs {r.product.removesuffix(' version')} {who}, a release with a known regression: {r.symptom}. "
        f"It applies when {r.when}; fixed in {r.fixed} ({r.confirmed}).",
        (r.source,),
        f"if the job matches, run {r.product.removesuffix(' version')} {r.fixed} or later"
        + (f", or the release before {hit[0].value}" if r.product.endswith(" version") else ""),
    )


def _step(v: Versions) -> Finding | None:
    """The releases to rule out, most likely first: each with the value(s) the job runs."""
    named = []
    for aspect, product in _TRY:
        row = v.row(aspect)
        if row is not None and any(g.value is not None for g in row.groups):
            named.append((product, ", ".join(g.value for g in row.groups if g.value is not None)))
    if not named:
        return None
    runs = "; ".join(f"{p} {values}" for p, values in named)
    return Finding(
        Severity.INFO, "releases-to-check",
        f"No cause of the catalogue explains this failure, and the job runs {runs}: a regression of one of these "
        f"releases is the next thing to rule out.",
        (),
        f"if this began after an upgrade, run the previous release of {named[0][0]}"
        + (f" (then of {', '.join(p for p, _ in named[1:])})" if len(named) > 1 else "")
        + f" with everything else unchanged; {_ALIGN}",
    )


def _collect() -> Finding:
    """Where the inputs state no release: which to collect, and what to do with them."""
    return Finding(
        Severity.INFO, "releases-to-collect",
        "No cause of the catalogue explains this NCCL failure, and these inputs state no release of NCCL, PyTorch, "
        "CUDA or the driver: the releases are the next thing to rule out.",
        (),
        f"collect them on a failing node: `{COLLECT}` and `nvidia-smi` (the driver and the newest CUDA it supports), "
        "or NCCL_DEBUG=INFO's \"NCCL version\" line; if this began after an upgrade, run the previous release of "
        f"NCCL (then of PyTorch) with everything else unchanged; {_ALIGN}",
    )
