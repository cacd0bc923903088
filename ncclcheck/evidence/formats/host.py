"""The host's and the scheduler's records (evidence/hostlog.py reads them), as a source of lines.

A kernel log (``dmesg``, ``journalctl -k``) or a scheduler's record (``kubectl describe pod``, ``sacct``, ``scontrol
show job``) may stand in any input, a rank's log among them: the lines that make a record on their own (a kill, an
Xid, a segfault, an eviction, a scheduler's state) hold one of hostlog's ``RECORD_WORDS``, kept by the block reader
wherever they stand. The reading itself (stamps, the OOM killer's account over several lines) stays in
evidence/hostlog.py, which ``archive.py`` and ``snapshot/`` also read a host's kernel log with.
"""

from __future__ import annotations

from collections.abc import Iterable

from ncclcheck.evidence import hostlog
from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Loc, Read, SystemEvent


class Records:
    """One input's host and scheduler records, in order (the OOM killer's account spans lines)."""

    def __init__(self) -> None:
        self._log = hostlog.HostLog()

    def feed(self, text: str, loc: Loc) -> Iterable[Read]:
        if hostlog.maybe_host_record(text) and (event := self._log.feed(text, loc)) is not None:
            return (event,)
        return ()


_XID63 = "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate."
FORMAT = Format(
    name="host records",
    words=(*hostlog.RECORD_WORDS, "OOM"),  # "OOM": kubectl's SystemOOM event
    make=Records,
    patterns=hostlog.PATTERNS,
    logical=True,
    samples=(
        Sample(_XID63, "tests/data/host/public/xid63-mlengineering.log:1",
               (SystemEvent("xid", "kernel", AT, _XID63, pid=1896, bus="0000:10:1c", xid=63),)),
    ),
)
