"""Memory follows the input, never a number written in it: a stated world, a launcher's task range, a damaged
dump's pg_config or a file name's digits are kept as stated and as rank ranges, never one state per rank.

Each case is one line of input; a per-rank loop over the stated world would take minutes and gigabytes, so these
tests finish in well under a second when the mechanism holds and time out (or run out of memory) when it breaks.
"""

from __future__ import annotations

import json
import tracemalloc

from conftest import run
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.job.model import EndKind
from ncclcheck.ranks import Spans, ranges, ranges_of, rank_phrase

TIMEOUT = ("[rank0]:[E1125 23:59:59.000000000 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught collective "
           "operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, "
           "Timeout(ms)=600000) ran for 600053 milliseconds before timing out.\n")
INIT = ("[rank0]:[I1125 14:00:00.000000000 ProcessGroupNCCL.cpp:905] [PG ID 0 PG GUID 0 Rank 0] ProcessGroupNCCL "
        "initialization options: size: 200000000, global rank: 0, TIMEOUT(ms): 600000\n")


def bounded(fn):
    """Run ``fn`` and return its result with the peak bytes Python allocated meanwhile."""
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_stated_world_is_reported_as_stated_not_materialised(tmp_path):
    log = tmp_path / "rank0.log"
    log.write_text(INIT + TIMEOUT)
    a, peak = bounded(lambda: run(log))
    assert peak < 50 << 20
    assert a.job.world == 200_000_000
    assert [s.rank for s in a.job.ranks] == [0]
    assert a.job.unlisted == (range(1, 200_000_000),)
    assert str(a.job.world_at) == f"{log}:1"
    found = next(f for f in a.verdict.findings if f.code == "world-as-stated")
    assert f"World 200,000,000 as stated by {log}:1" in found.message
    assert "ranks 1-199999999" in found.message
    assert "(ranks 1-199999999)" in a.verdict.summary  # the ranks waited for, as one range


def test_the_json_says_the_world_and_never_lists_it(tmp_path):
    log = tmp_path / "rank0.log"
    log.write_text(INIT + TIMEOUT)
    r = CliRunner().invoke(app, ["analyze-log", str(log), "--json"])
    doc = json.loads(r.stdout)
    assert len(r.stdout) < 20_000
    assert doc["job"]["world_size"] == 200_000_000
    assert doc["job"]["world_stated_at"] == f"{log}:1"
    assert doc["job"]["unlisted_ranks"] == "1-199999999"
    assert [g["members"] for g in doc["job"]["groups"] if g["id"] == "0"] == ["0-199999999"]


def test_a_slurm_task_range_is_one_entry(tmp_path):
    log = tmp_path / "slurm.out"
    log.write_text("srun: error: node3: tasks 0-30000000: Killed\n")
    a, peak = bounded(lambda: run(log))
    assert peak < 50 << 20
    [e] = [e for s in a.scans for e in s.elastic]
    assert (e.rank, e.last_rank, e.signal, e.host) == (0, 30_000_000, "SIGKILL", "node3")
    # The tasks show the job has at least that many ranks (a bound, not its size); none is listed one by one.
    assert a.job.world_stated is not None and a.job.world_stated.size == 30_000_001 and a.job.ranks == ()
    assert a.verdict.summary.startswith("The launcher reports 30,000,001 tasks killed by SIGKILL on node3 "
                                        "(ranks 0-30000000")


def test_a_small_task_range_still_names_every_rank(tmp_path):
    log = tmp_path / "slurm.out"
    log.write_text("srun: error: node3: tasks 0-7: Killed\n")
    a = run(log)
    assert [s.rank for s in a.job.ranks if s.ending.kind is EndKind.KILLED] == list(range(8))
    assert a.job.unlisted == ()


def test_nccl_nranks_and_a_damaged_dump_state_a_world_they_do_not_fill(tmp_path):
    log = tmp_path / "rank0.log"
    log.write_text("node1:1:1 [0] NCCL INFO comm 0x5581 rank 0 nranks 2000000000 cudaDev 0 nvmlDev 0 busId 1000 "
                   "commId 0x1 - Init COMPLETE\n" + TIMEOUT)
    a, peak = bounded(lambda: run(log))
    assert peak < 50 << 20 and a.job.world == 2_000_000_000 and len(a.job.ranks) == 1
    dump = tmp_path / "nccl_trace_rank_0"
    dump.write_text(json.dumps({
        "version": "2.4", "pg_status": {},
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 200000000]"}},
        "entries": [{"record_id": 0, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": 3,
                     "p2p_seq_id": 0, "op_id": 3, "profiling_name": "nccl:all_reduce", "time_created_ns": 1,
                     "input_sizes": [[4]], "output_sizes": [[4]], "input_dtypes": ["Float"],
                     "output_dtypes": ["Float"], "state": "scheduled", "frames": []}]}))
    a, peak = bounded(lambda: run(dump))
    assert peak < 50 << 20
    assert a.job.world == 200_000_001
    assert sorted(s.rank for s in a.job.ranks) == [0, 200_000_000]  # the members the dump lists, no more


def test_a_file_names_digits_are_one_rank(tmp_path):
    log = tmp_path / "rank99999999999.log"
    log.write_text(TIMEOUT.replace("[rank0]:", ""))
    a, peak = bounded(lambda: run(log))
    assert peak < 50 << 20
    assert [s.rank for s in a.job.ranks] == [99_999_999_999]


def test_rank_sets_of_ranges_are_written_from_their_ends():
    assert ranges(range(200_000_000)) == "0-199999999"
    assert ranges(range(0, 40, 8)) == "0-32 by 8"
    assert ranges_of([range(1, 5), range(9, 10)]) == "1-4, 9"
    assert rank_phrase([1, 2, 3], 200_000_000, [0]) == "ranks 1-3"
    assert rank_phrase([1, 2, 3], 4, [0]) == "all 3 other ranks"


@given(st.lists(st.tuples(st.integers(-5, 200), st.integers(0, 80)), max_size=40), st.integers(-10, 300))
def test_spans_find_the_ranges_holding_a_rank_in_their_order(spans: list[tuple[int, int]], rank: int) -> None:
    """ranks.Spans answers what going through every range would, nested, overlapping or apart."""
    ranges = [(lo, lo + length, i) for i, (lo, length) in enumerate(spans)]
    assert Spans(ranges).at(rank) == [i for lo, hi, i in ranges if lo <= rank <= hi]
