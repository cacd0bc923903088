"""``ncclcheck bench``'s launcher: torchrun over the benchmark, with torchrun's own failure report left out where the
benchmark's rank 0 already said what went wrong in one line.

torchrun answers any worker's non-zero exit with a Python traceback ending in ``ChildFailedError`` and a table of
the failed ranks (its agent logs the exit code first). That report restates an exit code the benchmark has already
explained; shown after the one-line error, it buries it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

_AGENT_EXIT = re.compile(r"^[EW]\d{4} .*torch/distributed/elastic/multiprocessing/api\.py:\d+\] failed \(exitcode: ")


def without_torchrun_report(lines: Iterable[str], explained: Callable[[], bool]) -> Iterator[str]:
    """``lines`` (torchrun's and its workers' stderr) without torchrun's failure report, when ``explained()`` says
    the benchmark reported its own error; everything else passes through in order, as it comes."""
    held: list[str] = []
    rules = 0
    for line in lines:
        if held:
            held.append(line)
            if line.startswith("torch.distributed.elastic.multiprocessing.errors.ChildFailedError"):
                rules = 0
            elif line.startswith("=" * 20) and any("ChildFailedError" in x for x in held):
                rules += 1
                if rules == 2:  # the table's closing rule: the report is complete
                    if not explained():
                        yield from held
                    held, rules = [], 0
            elif len(held) > 200:  # not torchrun's report after all
                yield from held
                held = []
            continue
        if line.startswith("Traceback (most recent call last):") or _AGENT_EXIT.match(line):
            held = [line]
            continue
        yield line
    yield from held
