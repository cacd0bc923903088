"""torchrun's failure table: the ChildFailedError summary its elastic agent raises when workers failed.

torch.distributed.elastic's ``ChildFailedError`` prints a "Root Cause (first observed failure):" section and
"Other Failures:", each entry as ``[N]:`` then indented ``time :``, ``host :``, ``rank : 3 (local_rank: 3)``,
``exitcode : -6 (pid: 812)``, ``error_file :`` and ``traceback : Signal 6 (SIGABRT) received by PID 812``
(torch/distributed/elastic/multiprocessing/errors/__init__.py). An entry names the global rank, and is read key by
key until a line that is none of the table's. Releases 1.9-1.10 print ``Root Cause:``, no ``host`` row and
``msg: "Signal 9 (SIGKILL) received by PID 812"`` for the traceback row (the same module then).

A pasted table often keeps only some rows, unindented (``exitcode: -9``, ``traceback : Signal 9 (SIGKILL) received
by PID 812``): such a row is read where its value has the table's own shape (an exit code alone or with its PID or
signal, ``<N/A>`` or a JSON error file, a rank with its local rank, ProcessFailure's signal message), and the
message itself (``Signal 9 (SIGKILL) received by PID 812``, written by ProcessFailure for a worker that died of a
signal and by nothing else) is a traceback row on its own. An entry without its rank row names no rank: the worker
failed, which rank it was the inputs do not say.

The agent prints the table to its own stderr, which a collector labels like any other line: a CRI log's stamp, stream
and tag (kubectl logs of a pod), pdsh's or srun -l's node, Ray's ``(pid=..)``, a launcher's tag. The assembler
(evidence/parse.py) gives :class:`Table` a pattern of those margins (collectors.MARGIN and the sources' tags) ending
in what a line of the table starts with (``OPENS``), so that an entry's ``[7]:`` is not taken for a tag: a line is
read as is where it is the table's, else behind its margin, the row's own indentation kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck import signals
from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample, Trigger
from ncclcheck.evidence.types import ElasticFailure, Loc, Read

_KEY = re.compile(r"^\s+(?P<key>time|host|rank|exitcode|error_file|traceback|msg)\s*:\s?(?P<value>.*)$")
# A row pasted without its indentation, read only where its value has the table's shape.
_BARE = re.compile(
    r"^(?P<key>exitcode)\s*:\s?(?P<value>-?\d+(?:\s*\((?:pid: \d+|SIG[A-Z]+)\))*)\s*$"
    r"|^(?P<key2>rank)\s*:\s?(?P<value2>\d+ \(local_rank: \d+\))\s*$"
    r"|^(?P<key3>error_file)\s*:\s?(?P<value3><N/A>|\S+\.json)\s*$"
    r"|^(?:(?P<key4>traceback|msg)\s*:\s?)?(?P<value4>\"?Signal \d+ \(SIG[A-Z]+\) received by PID \S+)\s*$")
_ENTRY = re.compile(r"^\s*\[(?P<index>\d+)\]:\s*$")
_INT = re.compile(r"(?P<n>-?\d+)(?:\s*\((?:local_rank|pid):\s*(?P<inner>\d+)\))?")
_SIGNAL = re.compile(r"Signal (?P<number>\d+) \((?P<name>SIG[A-Z]+)\)")
# What a line of the table may start with once its margin is off (its header, an entry, a row indented or bare): the
# lookahead of the margin pattern the assembler composes (read further by the patterns above).
OPENS = (r"Root Cause|\s*\[\d+\]:\s*$|\s+(?:time|host|rank|exitcode|error_file|traceback|msg)\s*:"
         r"|(?:exitcode|rank|error_file|traceback|msg)\s*:|\"?Signal \d+ \(SIG")


def _row(text: str) -> tuple[str, str] | None:
    """A row of the table, indented as torchrun prints it or pasted bare: its key (``msg`` read as ``traceback``) and
    value."""
    if m := _KEY.match(text):
        key, value = m["key"], m["value"]
    elif m := _BARE.match(text):
        n = next(i for i in ("", "2", "3", "4") if m["value" + i] is not None)
        key, value = m["key" + n] or "traceback", m["value" + n]
    else:
        return None
    return ("traceback" if key == "msg" else key), value.strip()


def _plain(text: str) -> bool:
    """Whether the line, as it stands, is one of the table's."""
    return text.startswith("Root Cause") or _row(text) is not None or _ENTRY.match(text) is not None


def _int(s: str | None) -> int | None:
    return int(s) if s not in (None, "") else None


class Table:
    """One input's failure tables, entry by entry: an entry is whole at the next entry, or at the first line that is
    not the table's. ``margin``: what a collector or a launcher puts before a line, none or more, ending in a
    lookahead of ``OPENS`` (one test for a line as it stands and behind a margin); without it every line is read as
    it stands."""

    def __init__(self, margin: re.Pattern[str] | None = None) -> None:
        self._entry: dict[str, str] | None = None
        self._loc: Loc | None = None
        self._root = False
        self._margin = margin

    def may_hold(self, text: str) -> bool:
        """A cheap test: could this line be the table's (it is open, or the line starts one, as it stands or behind a
        margin)?"""
        if self._entry is not None or self._root:
            return True
        return _plain(text) if self._margin is None else self._margin.match(text) is not None

    def line(self, text: str, loc: Loc) -> tuple[bool, list[Read]]:
        """Whether the line is the table's, and the entry it closes."""
        if self._margin is not None and not _plain(text) and (m := self._margin.match(text)) is not None:
            text = text[m.end():]  # its body behind the margin: the row's own indentation kept
        if text.startswith("Root Cause"):
            closed = self.close()
            self._root = True
            return True, closed
        if _ENTRY.match(text):
            closed = self.close()
            self._entry, self._loc = {}, loc
            return True, closed
        if row := _row(text):
            closed = []
            if self._entry is None or row[0] in self._entry:
                closed = self.close()
                self._entry, self._loc = {}, loc
            self._entry[row[0]] = row[1]
            return True, closed
        closed = self.close()
        self._root = False
        return False, closed

    def close(self) -> list[Read]:
        """The open entry, read."""
        t, loc = self._entry, self._loc
        self._entry = None
        if not t or loc is None:
            return []
        rank = _INT.match(t.get("rank", ""))
        code = _INT.match(t.get("exitcode", ""))
        sig = _SIGNAL.search(t.get("traceback", ""))
        # ProcessFailure's message names the signal of a negative exit code: a row of it alone says as much.
        exitcode = _int(code["n"]) if code else -int(sig["number"]) if sig else None
        return [ElasticFailure(
            rank=_int(rank["n"]) if rank else None,
            local_rank=_int(rank["inner"]) if rank else None,
            exitcode=exitcode,
            pid=_int(code["inner"]) if code else None,
            signal=sig["name"] if sig else signals.of_exitcode(exitcode) if exitcode is not None else None,
            host=t.get("host"),
            time=t.get("time"),
            root_cause=self._root,
            loc=loc,
        )]

    def feed(self, text: str, loc: Loc) -> Iterable[Read]:
        """The entry a line closes (a table's last entry is whole at the first line after it)."""
        return self.line(text, loc)[1] if self.may_hold(text) else ()


FORMAT = Format(
    name="torchrun's failure table",
    words=(),  # its lines follow "ChildFailedError" (an error word) and hold "<N/A>": the block reader keeps them
    make=Table,
    triggers=(Trigger("<N/A>", "<"),),  # an entry's "error_file: <N/A>"
    wanted=("<N/A>", "error_file"),
    logical=True,
    behind=(
        # an entry's rank, exit code and signal, from the rows read
        Behind((_KEY, _BARE), (_INT, _SIGNAL)),
    ),
    # the table's rows and entries, tested on any line (``Table.may_hold``): its lines hold no word but
    # follow ChildFailedError and hold ``<N/A>``, whose neighbours the reader hands over
    shapes=(_KEY, _BARE, _ENTRY),
    samples=(
        Sample("======================================================",
               "tests/data/launchers/accelerate/kill/console.log:90-98",
               (ElasticFailure(1, 1, -9, 1764, "SIGKILL", "localhost", "2026-11-25_15:15:55", True, AT),),
               before=("Root Cause (first observed failure):", "[0]:", "  time      : 2026-11-25_15:15:55",
                       "  host      : localhost", "  rank      : 1 (local_rank: 1)",
                       "  exitcode  : -9 (pid: 1764)  (SIGKILL)", "  error_file: <N/A>",
                       "  traceback : Signal 9 (SIGKILL) received by PID 1764")),
    ),
)
