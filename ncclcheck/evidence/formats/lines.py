"""The one shape a launcher's line about its workers is read into, and the reader of such lines."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class TaskEnd:
    """A launcher's report that one of its workers ended: which (global rank), how, where. ``rank`` is None on a
    line that only completes the worker an earlier line named (Open MPI's "Exit code:" under "Process name:")."""

    rank: int | None
    exitcode: int | None = None
    signal: str | None = None
    pid: int | None = None
    host: str | None = None


@dataclass(frozen=True)
class LineFormat:
    """One line a launcher prints: a cheap literal ``word`` the line must hold, the ``pattern`` that reads it, and
    what it means (``read``), or ``stop``: the launcher stopped the whole job (a time limit) and names no worker.
    ``rankless``: the line reports a worker's end but cannot say which worker. ``example`` is a real line of that
    shape (the tests read each one)."""

    source: str
    word: str
    pattern: re.Pattern[str]
    example: str
    read: Callable[[re.Match[str]], TaskEnd] | None = None
    stop: bool = False
    rankless: bool = False


class LauncherLines:
    """Reads one input's launcher lines in order. A worker named on one line and ended on the next (Open MPI's
    "Process name: [[j,1],R]" then "Exit code: N") is joined here."""

    def __init__(self, formats: tuple[LineFormat, ...]) -> None:
        self._formats = formats
        self._held: tuple[LineFormat, TaskEnd] | None = None

    def feed(self, text: str) -> tuple[LineFormat, TaskEnd | None] | None:
        """The format of a launcher's line and the worker end it reports (None for a job-wide stop; one whose rank
        is None for a rankless report); None for any other line, and for the first line of a two-line report."""
        for fmt in self._formats:
            if fmt.word not in text or not (m := fmt.pattern.search(text)):
                continue
            if fmt.stop or fmt.read is None:
                return fmt, None
            end = fmt.read(m)
            if fmt.rankless:
                return fmt, end
            if end.rank is not None and end.exitcode is None and end.signal is None:
                self._held = (fmt, end)  # its end is on the next report line
                return None
            if end.rank is None:
                held, self._held = self._held, None
                return (held[0], replace(held[1], exitcode=end.exitcode, signal=end.signal)) if held else None
            return fmt, end
        return None
