"""torch.distributed.elastic's failure record as its repr prints it: ``ProcessFailure(local_rank=0, pid=54, ...)``.

The elastic agent keeps each failed worker as a ``ProcessFailure`` dataclass (torch/distributed/elastic/
multiprocessing/errors/__init__.py: local_rank, pid, exitcode, error_file, error_file_data, message, timestamp; the
message is ``Signal N (SIGX) received by PID P`` for a worker killed by a signal, a negative exit code). The failure
table (formats/elastic.py) is one print of it; the dataclass's own repr is another, logged wherever an agent or a
launcher built on the agent prints its run result (``RunResult(state=..., failures={0: ProcessFailure(...)})``,
torch/distributed/elastic/agent/server/api.py) or its failures map. That map is keyed by the global rank in the
agent's RunResult and by the local rank in the process context's own result (multiprocessing/api.py,
RunProcsResult), so the key names no rank for sure: each record is read as a worker of that local rank that failed,
its global rank unknown (job/unplaced.py), with its exit code and its signal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck import signals
from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import ElasticFailure, Loc, Read

WORD = "ProcessFailure("
# One record: its first three fields in the dataclass's order, then up to its message (bounded: linear on a long line).
RECORD = re.compile(r"ProcessFailure\(local_rank=(?P<local>\d{1,6}), pid=(?P<pid>\d{1,10}), exitcode=(?P<code>-?\d{1,4})"
                    r"(?P<rest>[^()]{0,2000}?(?:message='(?P<message>[^']{0,400})'|\)))")
_SIGNAL = re.compile(r"Signal (?P<number>\d{1,3}) \((?P<name>SIG[A-Z]{1,12})\)")


def records(text: str, loc: Loc) -> list[ElasticFailure]:
    """Every ProcessFailure record of one line, as the failure it reports."""
    out = []
    for m in RECORD.finditer(text):
        code = int(m["code"])
        sig = _SIGNAL.search(m["message"] or "")
        out.append(ElasticFailure(rank=None, local_rank=int(m["local"]), exitcode=code, pid=int(m["pid"]),
                                  signal=sig["name"] if sig else signals.of_exitcode(code), host=None, time=None,
                                  root_cause=False, loc=loc))
    return out


class Records:
    """One input's ProcessFailure records, each line read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Read]:
        return records(text, loc) if WORD in text else ()


_LINE = ("The worker fails with {0: ProcessFailure(local_rank=0, pid=54, exitcode=-7, error_file='<N/A>', "
         "error_file_data={'message': '<NONE>'}, message='Signal 7 (SIGBUS) received by PID 54', timestamp=1711419181)}")
FORMAT = Format(
    name="torch.distributed.elastic's ProcessFailure",
    words=(WORD,),
    make=Records,
    patterns=(RECORD,),
    behind=(
        # a record's message
        Behind((RECORD,), (_SIGNAL,)),
    ),
    samples=(
        Sample(_LINE, "https://github.com/intelligent-machine-learning/dlrover/pull/1046 (an agent built on "
                      "torch.distributed.elastic logging its failures map)",
               (ElasticFailure(None, 0, -7, 54, "SIGBUS", None, None, False, AT),)),
    ),
)
