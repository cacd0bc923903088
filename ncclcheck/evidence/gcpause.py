"""Python's cycle collector paused while a large job's objects are built (issue 42).

The collector walks every tracked object once enough new ones are made, and a job's model is hundreds of thousands
of objects made at once and kept to the end (the scans, the records, the ranks' states): at 32,768 ranks it took
two of every five CPU seconds the main process spent after the read, and about a tenth of a worker's. Nothing built
there is garbage in cycles worth collecting early (frozen dataclasses, tuples and dicts that refer downwards), so the
collector waits until the work is done and then runs as before: a short-lived command or a long test run alike.
The console script (cli.main) turns the collector off for its whole run already, so there the pause changes
nothing; it is for the callers that start with the collector on: analyze() called from Python (a notebook, the
tests, tools/) and the reader's worker processes, which a spawn or forkserver start gives a fresh interpreter.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """The cycle collector off for the block; on again after it only where it was on before (nested blocks)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
