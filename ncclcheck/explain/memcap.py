"""A ceiling on the memory a model of unknown size may take while explain builds and runs it for the
gradient-ready order.

The meta device makes the model itself free, but the pass that observes the gradient-ready order runs a shrunk copy
on the CPU, and a shrunk copy is small only where the config's sizes are the ones explain shrinks: a size derived
from others it does not know (Inkling's vision tower folds patches into widths of 614,400, whatever the hidden size)
makes a copy of 761 billion elements, which the kernel's overcommit lets the weights' initialisation write for tens
of GiB before anything fails. So the passes run under a ceiling on the process's address space (``RLIMIT_AS``): the
address space already mapped plus ``BUDGET``. An allocation past it fails at once (torch raises RuntimeError,
Python MemoryError), the pass is reported as not run, and the ceiling is lifted again. Where the platform has no
such limit (Windows; macOS, which does not enforce it) the passes run without one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

BUDGET = 2 << 30  # bytes of address space a pass may add: a shrunk copy and its pass take tens of MiB


def _mapped() -> int | None:
    """The address space this process has mapped now, in bytes (Linux's /proc); None where it cannot be read."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            pages = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


@contextlib.contextmanager
def capped(budget: int | None = None) -> Iterator[int | None]:
    """Run the body with the address space limited to what is mapped now plus ``budget`` (``BUDGET`` unless
    given; never above a limit already set); yields the ceiling in bytes, or None where none could be set."""
    budget = BUDGET if budget is None else budget
    try:
        import resource
    except ImportError:  # Windows
        yield None
        return
    mapped = _mapped()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if mapped is None:
        yield None
        return
    ceiling = mapped + budget
    if soft != resource.RLIM_INFINITY:
        ceiling = min(ceiling, soft)
    if hard != resource.RLIM_INFINITY:
        ceiling = min(ceiling, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (ceiling, hard))
    except (ValueError, OSError):
        yield None
        return
    try:
        yield ceiling
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def out_of_memory(exc: BaseException) -> bool:
    """Whether an error is an allocation refused under the ceiling (torch's CPU allocator says so in words)."""
    return isinstance(exc, MemoryError) or (isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc))
