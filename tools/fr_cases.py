"""Write PyTorch's flight-recorder analyzer test cases as real dump files, one folder of two ranks' dumps a case.

PyTorch's own analyzer (torch/distributed/flight_recorder, its tests in test/distributed/flight_recorder/
test_fr_analysis.py) checks events pairwise (``match_one_event``) and whole traces (``build_db``). Each of its
cases is written here as what the recorder itself writes: one pickle per rank (format 2.10, as torch 2.9+ dumps it:
``record_id``, ``collective_seq_id``, ``is_p2p``, input and output sizes and dtypes in c10's spelling, ``state``,
``frames``, ``pg_config`` and ``pg_status``), named ``comm_lib_trace_rank_<rank>``. Sequence numbers are numbered as
a run numbers them (from 1; the ops of one coalesced block share one number, and its last entry is the block's
end), not the test's placeholder zeros. ``cases.json`` beside them gives each case's finding as the test asserts
it (``expect``: ``match`` or the kind of disagreement, the sequence number and the ranks on each side) and what
ncclcheck must say of it (tests/test_fr_analyzer_cases.py reads it).

Usage: python tools/fr_cases.py tests/data/frdump/analyzer_cases
"""

from __future__ import annotations

import json
import pickle
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# c10's names for the test's "float32" and "float16", as a real dump spells them.
F32, F16 = "Float", "Half"
PREFIX = "comm_lib_trace_rank_"


@dataclass
class Op:
    """One recorded op: the test's create_one_event/create_one_entry fields, with a real run's numbering."""

    name: str
    seq: int
    inputs: Sequence[Sequence[int]] = ((4, 4),)
    outputs: Sequence[Sequence[int]] = ((4, 4),)
    state: str = "completed"
    in_dtype: str | None = F32  # None: no tensor, no dtype (a block's end, a non-root gather's output)
    out_dtype: str | None = F32
    pg: tuple[str, str] = ("0", "default_pg")
    backend: str = "nccl"
    line: int = 0  # the user's line of code that issued it (train.py)


@dataclass
class Case:
    name: str
    what: str  # the test's case, in words
    source: str  # where in test_fr_analysis.py
    ranks: dict[int, list[Op]]
    expect: dict[str, Any]  # the test's own finding
    groups: dict[int, dict[str, list[int]]] = field(default_factory=dict)  # per rank: pg name -> members


def _entry(op: Op, record_id: int) -> dict[str, Any]:
    def dtypes(d: str | None, sizes: Sequence[Sequence[int]]) -> list[str]:
        return [] if d is None else [d] * max(1, sum(1 for s in sizes if s))

    return {
        "frames": [{"name": "train_step", "filename": "/work/train.py", "line": op.line or 40 + op.seq},
                   {"name": "<module>", "filename": "/work/train.py", "line": 90}],
        "record_id": record_id, "pg_id": int(op.pg[0]), "process_group": op.pg, "thread_name": "python",
        "thread_id": "139652544545088", "collective_seq_id": op.seq, "p2p_seq_id": 0, "op_id": record_id + 1,
        "profiling_name": f"{op.backend}:{op.name}", "time_created_ns": 1795324193322036629 + record_id * 1000,
        "input_sizes": [list(s) for s in op.inputs], "input_dtypes": dtypes(op.in_dtype, op.inputs),
        "output_sizes": [list(s) for s in op.outputs], "output_dtypes": dtypes(op.out_dtype, op.outputs),
        "state": op.state, "time_discovered_started_ns": None,
        "time_discovered_completed_ns": 1795324193322936629 if op.state == "completed" else None,
        "retired": op.state == "completed", "timeout_ms": 600000, "is_p2p": False,
    }


def dump(rank: int, ops: Sequence[Op], groups: dict[str, list[int]]) -> dict[str, Any]:
    """One rank's dump as the recorder writes it: entries in record order, pg_config and pg_status."""
    descs = {op.pg[0]: op.pg[1] for op in ops} | {"0": "default_pg"}
    status = {}
    for name in groups:
        mine = [op for op in ops if op.pg[0] == name]
        done = [op.seq for op in mine if op.state == "completed"]
        started = [op.seq for op in mine if op.state in ("started", "completed")]
        status[name] = {"last_enqueued_collective": max((op.seq for op in mine), default=-1),
                        "last_started_collective": max(started, default=-1),
                        "last_completed_collective": max(done, default=-1)}
    return {"version": "2.10", "comm_lib_version": "2.28.9", "rank": rank,
            "pg_config": {k: {"name": k, "desc": descs.get(k, "undefined"), "ranks": str(v)} for k, v in groups.items()},
            "pg_status": status, "entries": [_entry(op, i) for i, op in enumerate(ops)]}


def _pair(a: Sequence[Op], b: Sequence[Op]) -> dict[int, list[Op]]:
    return {0: list(a), 1: list(b)}


def _same(ops: Sequence[Op]) -> dict[int, list[Op]]:
    return _pair(ops, ops)


def _block(name: str, end: str, seq: int, sizes: Sequence[Sequence[Sequence[int]]]) -> list[Op]:
    """A coalesced block: its ops, then its end entry, all under one sequence number."""
    return [*(Op(name, seq, s, s) for s in sizes), Op(end, seq, ((),), ((),), in_dtype=None, out_dtype=None)]


MATCH: dict[str, Any] = {"finding": "match"}
HERE = "test_fr_analysis.py::FlightRecorderEventTest::test_match_one_event"
E2E = "test_fr_analysis.py::FlightRecorderE2ETest::testBuildDB"
ALL = "test_fr_analysis.py::FlightRecorderEventTest::test_all_events"
BACKENDS = "test_fr_analysis.py::FlightRecorderOpBackendTest"
# The test's COLLECTIVES with the sizes it gives each (test_all_events): an all_gather's output is its input times
# the group's size, a reduce_scatter's input its output times the size; all_to_all is undecided pair by pair.
GATHERS = ("all_gather", "_all_gather_base", "all_gather_into_tensor_coalesced")
SCATTERS = ("reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor_coalesced")
OTHERS = ("broadcast", "_broadcast_oop", "reduce", "_reduce_oop", "all_gather_single", "all_gather_v", "all_reduce",
          "reduce_scatter_single", "reduce_scatter_v", "gather", "scatter", "all_to_all", "all_to_all_single",
          "all_to_all_v_single", "all_reduce_barrier", "barrier", "allreduce_coalesced")


def cases() -> list[Case]:
    s = "scheduled"
    return [
        Case("01-all-reduce-matched", "the same all_reduce on both ranks", HERE + " (e1, e1)",
             _same([Op("all_reduce", 1, state=s)]), MATCH),
        Case("02-type", "all_reduce on rank 0, all_gather on rank 1 at one sequence number", HERE + " (e1, e2)",
             _pair([Op("all_reduce", 1, state=s)], [Op("all_gather", 1, state=s)]),
             {"finding": "op", "seq": 1, "sides": {"ALLREDUCE": [0], "ALLGATHER": [1]}}),
        Case("03-all-to-all", "the same all_to_all on both ranks: undecided pair by pair, balanced as a whole",
             HERE + " (e3, e4)", _same([Op("all_to_all", 1, state=s)]), MATCH),
        Case("04-input-size", "all_reduce of 4x4 against one of 5x4", HERE + " (e1, e5)",
             _pair([Op("all_reduce", 1, state=s)], [Op("all_reduce", 1, ((5, 4),), ((4, 4),), state=s)]),
             {"finding": "input_sizes", "seq": 1, "sides": {"4x4": [0], "5x4": [1]}}),
        Case("05-output-size", "all_reduce into 4x4 against one into 5x4, inputs equal", HERE + " (e1, e6)",
             _pair([Op("all_reduce", 1, state=s)], [Op("all_reduce", 1, ((4, 4),), ((5, 4),), state=s)]),
             {"finding": "output_sizes", "seq": 1, "sides": {"4x4": [0], "5x4": [1]}}),
        Case("06-all-reduce-syntax", "an all_reduce whose output (5x4) is not its input (4x4), on both ranks",
             HERE + " (e7, e7)", _same([Op("all_reduce", 2, ((4, 4),), ((5, 4),), state=s)]),
             {"finding": "syntax", "seq": 2, "sides": {"input 4x4 into output 5x4": [0, 1]}}),
        Case("07-state", "rank 1 completed an all_reduce rank 0 has only scheduled", HERE + " (e1, e9)",
             _pair([Op("all_reduce", 1, state=s)], [Op("all_reduce", 1)]),
             {"finding": "state", "seq": 1, "sides": {"scheduled": [0], "completed": [1]}}),
        Case("08-output-dtype", "all_reduce into Half on rank 0, into Float on rank 1", HERE + " (e10, e9)",
             _pair([Op("all_reduce", 1, out_dtype=F16)], [Op("all_reduce", 1)]),
             {"finding": "output_dtypes", "seq": 1, "sides": {"Half": [0], "Float": [1]}}),
        Case("09-gather-nonroot-empty", "gather: the root's output holds both, the other rank's is empty",
             HERE + " (e11, e12)",
             _pair([Op("gather", 1, outputs=((4, 4), (4, 4)))], [Op("gather", 1, outputs=((),), out_dtype=None)]),
             MATCH),
        Case("10-gather-nonroot-one", "gather: the root's output holds both, the other rank's output is unused",
             HERE + " (e11, e13)",
             _pair([Op("gather", 1, outputs=((4, 4), (4, 4)))], [Op("gather", 1, out_dtype=None)]), MATCH),
        Case("11-two-groups", "all_reduce in the default group, then one in each rank's own one-rank group",
             E2E + " case 1", _same([Op("all_reduce", 1), Op("all_reduce", 1, ((5, 5),), ((5, 5),), pg=("1", "sub_pg"))]),
             MATCH, groups={0: {"0": [0, 1], "1": [0]}, 1: {"0": [0, 1], "1": [1]}}),
        Case("12-allreduce-coalesced", "allreduce_coalesced on both ranks", E2E + " case 2",
             _same([Op("allreduce_coalesced", 1)]), MATCH),
        Case("13-broadcast-block", "two broadcasts in one coalesced block", E2E + " case 3",
             _same(_block("broadcast", "coalesced", 1, [((4, 4),), ((4, 4),)])), MATCH),
        Case("14-broadcast-block-size", "a coalesced block of two _broadcast_oop: the second is 5x5 on rank 0, 4x4 "
             "on rank 1", E2E + " case 4",
             _pair(_block("_broadcast_oop", "ALLGATHER_coalesced", 1, [((4, 4),), ((5, 5),)]),
                   _block("_broadcast_oop", "ALLGATHER_coalesced", 1, [((4, 4),), ((4, 4),)])),
             {"finding": "input_sizes", "seq": 1, "op": 2, "sides": {"5x5": [0], "4x4": [1]}}),
        Case("15-reduce-block", "a coalesced block of two _reduce_oop on both ranks", E2E + " case 5",
             _same(_block("_reduce_oop", "REDUCE_SCATTER_coalesced", 1, [((4, 4),), ((4, 4),)])), MATCH),
        Case("16-completed-not-issued", "rank 1 completed a coalesced block of two _reduce_oop that rank 0 never "
             "issued (its history ends at the all_reduce before it, completed)", E2E + " case 6",
             _pair([Op("all_reduce", 1)],
                   [Op("all_reduce", 1), *_block("_reduce_oop", "REDUCE_SCATTER_coalesced", 2, [((4, 4),), ((4, 4),)])]),
             {"finding": "missing", "seq": 2, "sides": {"issued": [1], "never issued": [0]}}),
        Case("17-gather-scatter-sizes", "every all_gather and reduce_scatter of test_all_events, in one history: an "
             "all_gather's output is its input times 2 ranks, a reduce_scatter's input its output times 2", ALL,
             _same([Op(n, i + 1, ((4, 4),), ((32,),)) for i, n in enumerate(GATHERS)]
                   + [Op(n, i + 1 + len(GATHERS), ((4, 4),), ((8,),)) for i, n in enumerate(SCATTERS)]), MATCH),
        Case("18-every-collective", "every other collective of test_all_events, in one history", ALL,
             _same([Op(n, i + 1) for i, n in enumerate(OTHERS)]), MATCH),
        Case("19-backends", "the same all_reduce recorded by gloo, xccl and ncclx (the backend prefixes the "
             "analyzer accepts)", BACKENDS,
             _same([Op("all_reduce", i + 1, backend=b) for i, b in enumerate(("gloo", "xccl", "ncclx"))]), MATCH),
    ]


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    index = []
    for c in cases():
        folder = out / c.name
        folder.mkdir(exist_ok=True)
        for rank, ops in c.ranks.items():
            groups = c.groups.get(rank, {"0": sorted(c.ranks)})
            (folder / f"{PREFIX}{rank}").write_bytes(pickle.dumps(dump(rank, ops, groups), protocol=4))
        index.append({"case": c.name, "what": c.what, "source": c.source, "expect": c.expect})
    (out / "cases.json").write_text(json.dumps(index, indent=1) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    write(Path(sys.argv[1]))
