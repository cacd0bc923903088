"""Horovod's stall inspector: the ranks that never submitted a collective the others are waiting in.

Horovod's coordinator (rank 0) keeps, for each tensor some ranks have submitted for a collective, which ranks did;
past HOROVOD_STALL_CHECK_TIME_SECONDS (60 s by default) it logs "One or more tensors were submitted to be reduced,
gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than N seconds. This may
indicate that different ranks are trying to submit different tensors or that only subset of ranks is submitting
tensors, which will cause deadlock." and then the ranks that did not submit, in one of two layouts:

* 2017-08 to 2018-06 (horovod/tensorflow/mpi_ops.cc from the first release, then horovod/common/operations.cc until
  #342): "Stalled ops: " and the tensors on the same line, comma-separated, each ``<name> [ready ranks: 1]``: the
  ranks that DID submit it; which ranks did not follows from the job's size only, which the report does not print;
* 2018-06 to 2019-03 (horovod/common/operations.cc, CheckForStalledTensors, #342): "Stalled ops:" and one line per
  tensor, ``<op>.<name> [missing ranks: 1, 2, 3]``;
* since 2019-03 (#920; horovod/common/stall_inspector.cc, CheckForStalledTensors): "Missing ranks:" and one line per
  missing rank, ``<global rank>[!]: [<op>.<name>, <op>.<name> ...]`` ("!": stalled past
  HOROVOD_STALL_SHUTDOWN_TIME_SECONDS, and Horovod shuts down).

A tensor's name is its op and the user's name (PyTorch's binding, horovod/torch/mpi_ops_v2.cc GetOpName:
``allreduce.``, ``allgather.``, ``broadcast.``, ``alltoall.``, ``reducescatter.``, ``grouped_*``; ``<op>.noname.<handle>``
without one; TensorFlow's ops are named ``HorovodAllreduce_<tensor>`` under the graph's scopes,
``model/DistributedAdamOptimizer_Allreduce/HorovodAllreduce_...``, horovod/tensorflow/__init__.py). The missing ranks
are the ones that never called that collective; every other rank of the job has called it and waits (the same
reading as PyTorch's desync report or ``monitored_barrier``: job/absent.py). Each missing rank is read as a clue
about that rank (not said by it): the catalogue's horovod_stall names it. The oldest layout's ready ranks are no
culprits: each of its tensors is one clue that names no rank, the ranks that submitted it in its words
(horovod_stall reads it as the same stall, with no rank to name).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who

# horovodrun's own launcher (Gloo; horovod/runner/common/util/safe_shell_exec.py, prefix_connection, since #1181)
# tags each line of a worker "[<rank>]<stdout>:" or "<stderr>:", the rank being its global rank (gloo_run.py:
# slot_info.rank), behind time.asctime()'s stamp with --prefix-output-with-timestamp; under mpirun, Open MPI's tag.
RANK_TAG = re.compile(r"(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})?\[(?P<rank>\d{1,7})\]<std(?:out|err)>:")
# The older layout, one tensor a line; a paste that drops the colon after "ranks" is read the same.
BY_TENSOR = re.compile(r" \[missing ranks:? (?P<ranks>\d{1,7}(?:, ?\d{1,7}){0,4095})\]")
# The newer layout's head, then one missing rank a line (its tensors, at most six and " ..." printed).
HEAD = re.compile(r"Missing ranks:\s*$")
_OPS = ("allreduce.", "allgather.", "broadcast.", "alltoall.", "reducescatter.", "grouped_", "join.", "barrier.",
        "Horovod")
# A launcher's tag may stand before a rank line (horovodrun's or Open MPI's "...]<stderr>:"): the coordinator's.
BY_RANK = re.compile(r"^(?:.{0,80}?\]<std(?:out|err|diag)>:)?\s*(?P<rank>\d{1,7})(?P<shut>!?): \[(?:"
                     + "|".join(re.escape(o) for o in _OPS)
                     + r"|[\w./-]{1,300}?/Horovod)")  # a TensorFlow op under its scopes
_RANK_WORDS = tuple(f": [{o}" for o in _OPS)
# The oldest layout: each tensor with the ranks that submitted it, several on one line.
BY_READY = re.compile(r" \[ready ranks:? (?P<ranks>\d{1,7}(?:, ?\d{1,7}){0,4095})\]")
WORDS = ("missing ranks", "issing ranks:", "ready ranks", *_RANK_WORDS, "/Horovod")


def said(rank: int, tensors: str, shutdown: bool = False) -> str:
    """The clue's words about one missing rank (the catalogue's horovod_stall matches them)."""
    down = "; stalled past HOROVOD_STALL_SHUTDOWN_TIME_SECONDS, so Horovod shuts down" if shutdown else ""
    if unnamed(tensors):
        return (f"Horovod's stall report: rank {rank} never submitted {tensors} under that number, which other "
                f"ranks submitted and wait in{down}")
    return f"Horovod's stall report: rank {rank} never submitted {tensors}, which other ranks submitted and wait in{down}"


def unnamed(tensors: str) -> bool:
    """Whether every tensor of a missing rank's list is one the program gave no name: PyTorch's binding names it
    ``<op>.noname.<handle>`` (horovod/torch/mpi_ops_v2.cc, GetOpName), the handle a per-process counter of every
    call (handle_manager.cc, AllocateHandle). A rank missing such a name may have made the same call under another
    number: the report shows that the ranks' counts differ, not which rank skipped or added a call, so it names no
    culprit."""
    names = [n.strip() for n in tensors.replace(" ...", "").split(",") if n.strip()]
    return bool(names) and all(".noname." in n for n in names)


def said_ready(ranks: list[int], tensor: str) -> str:
    """The clue's words about one tensor of the oldest layout (the catalogue's horovod_stall matches them)."""
    who = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"
    return (f"Horovod's stall report: only {who} submitted {tensor}; the other ranks never submitted it, and "
            f"{who} wait{'s' if len(ranks) == 1 else ''} in it")


class Stalls:
    """One input's stall reports: the older layout's lines on their own, the newer one's rank lines after its head."""

    def __init__(self) -> None:
        self._in_report = False

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "missing ranks" in text and (m := BY_TENSOR.search(text)):
            tensor = text[:m.start()].rsplit(None, 1)[-1] if text[:m.start()].strip() else "a tensor"
            ranks = dict.fromkeys(int(r) for r in m["ranks"].split(","))
            return tuple(Clue(Who(global_rank=r), "horovod", said(r, tensor), loc) for r in ranks)
        if "ready ranks" in text:
            out, at = [], 0
            for m in BY_READY.finditer(text):  # each tensor's name is the word before its ranks
                before = text[at:m.start()].split()
                at = m.end()
                tensor = before[-1].strip(",") if before else "a tensor"
                out.append(Clue(Who(), "horovod",
                                said_ready(list(dict.fromkeys(int(r) for r in m["ranks"].split(","))), tensor), loc))
            return tuple(out)
        if "issing ranks:" in text and HEAD.search(text):
            self._in_report = True
            return ()
        if self._in_report and (m := BY_RANK.match(text)):
            r, tensors = int(m["rank"]), text[text.index(": [", m.start()) + 3:].rstrip().removesuffix("]")
            who = Who() if unnamed(tensors) else Who(global_rank=r)
            return (Clue(who, "horovod", said(r, tensors, bool(m["shut"])), loc),)
        return ()


_OLD = "broadcast.conv2.weight [missing ranks: 1, 2, 3]"
FORMAT = Format(
    name="Horovod",
    words=WORDS,
    make=Stalls,
    patterns=(BY_TENSOR, HEAD, BY_RANK, BY_READY),
    rank_tags=(RANK_TAG,),
    prefixes=(RANK_TAG,),
    samples=(
        Sample(_OLD, "horovod/common/operations.cc at bd857948 (#342): CheckForStalledTensors, "
                     "tensor_name << \" [missing ranks:\" << \" 1, 2, 3\" << \"]\"",
               tuple(Clue(Who(global_rank=r), "horovod", said(r, "broadcast.conv2.weight"), AT) for r in (1, 2, 3))),
        Sample("3!: [allreduce.fc1.weight, allreduce.fc1.bias]",
               "horovod/common/stall_inspector.cc (CheckForStalledTensors since #920: \"Missing ranks:\", then "
               "global_ranks[rank] << \"!\" << \": [\" << tensors << \"]\")",
               (Clue(Who(global_rank=3), "horovod", said(3, "allreduce.fc1.weight, allreduce.fc1.bias", True), AT),),
               before=("Missing ranks:",)),
        Sample("[0]<stderr>:7: [allreduce.noname.222700]",
               "horovodrun's tag (safe_shell_exec.py prefix_connection: '[' rank ']<' stream '>:') before "
               "stall_inspector.cc's rank line; an unnamed tensor (mpi_ops_v2.cc GetOpName: '.noname.' handle)",
               (Clue(Who(), "horovod", said(7, "allreduce.noname.222700"), AT),), before=("Missing ranks:",)),
        Sample("Stalled ops: HorovodAllreduce_gradients_AddN_4_0 [ready ranks: 1], HorovodAllreduce_gradients_0 "
               "[ready ranks: 0, 1]",
               "horovod/tensorflow/mpi_ops.cc at 64317537 (the first release, 2017-08: CheckForStalledTensors, "
               "\"Stalled ops: \", tensor_name << \" [ready ranks:\", \", \" between tensors); "
               "https://github.com/horovod/horovod/issues/100",
               (Clue(Who(), "horovod", said_ready([1], "HorovodAllreduce_gradients_AddN_4_0"), AT),
                Clue(Who(), "horovod", said_ready([0, 1], "HorovodAllreduce_gradients_0"), AT))),
    ),
)
