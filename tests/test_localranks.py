"""torchrun's ``[default3]:`` is a local rank: placed on a global rank only by a line that states it
(evidence/localranks.py), else kept as a local rank on its node with the global rank unknown."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ncclcheck.evidence.localranks import Placement
from ncclcheck.evidence.parse import LogParser
from ncclcheck.evidence.types import FileScan


def _scan(lines: list[str], name: str = "node1.log") -> FileScan:
    p = LogParser(name, None)
    for i, line in enumerate(lines, 1):
        p.feed(i, line.encode())
    return p.finish(len(lines), sum(map(len, lines)))


def _ranks(scan: FileScan) -> dict[str, tuple[int | None, int | None, str | None]]:
    return {f.value: (f.who.global_rank, f.who.local_rank, f.who.node) for f in scan.facts if f.key == "nccl_version"}


_NCCL = "[default{t}]:host:{pid}:{pid} [{t}] NCCL INFO "


def test_nccl_init_line_of_the_process_places_its_tag():
    """versions/twonode's shape: node1's only worker is [default0]:, and its NCCL init line says rank 1 of 2."""
    scan = _scan([_NCCL.format(t=0, pid=7) + "NCCL version 2.28.9+cuda13.0",
                  _NCCL.format(t=0, pid=7) + "comm 0x34f04e80 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0"])
    assert _ranks(scan) == {"2.28.9": (1, None, None)}
    assert scan.ranks_seen == (1,) and scan.local_ranks == () and scan.tagged


def test_nothing_stated_keeps_the_local_rank_on_its_node():
    scan = _scan([_NCCL.format(t=1, pid=7) + "NCCL version 2.28.9+cuda13.0"])
    assert _ranks(scan) == {"2.28.9": (None, 1, "node1.log")}
    assert scan.ranks_seen == () and scan.local_ranks == (1,)


def test_the_failure_table_places_every_tag_of_its_agent():
    """torchrun gives a node's workers consecutive global ranks: the table's "rank : 5 (local_rank: 1)" puts the
    node's first rank at 4, so [default0]: is rank 4."""
    table = ["Root Cause (first observed failure):", "[0]:", "  time      : 2026-11-25_15:15:55",
             "  host      : node1", "  rank      : 5 (local_rank: 1)", "  exitcode  : 1 (pid: 9)",
             "  error_file: <N/A>", "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
             "============================================================"]
    scan = _scan([_NCCL.format(t=0, pid=7) + "NCCL version 2.28.9+cuda13.0", *table])
    assert _ranks(scan) == {"2.28.9": (4, None, None)}


def test_the_agents_rendezvous_result_places_the_tags():
    head = "I1125 15:02:37.594000 19436 torch/distributed/elastic/agent/server/api.py:553]   "
    p = Placement()
    p.line(head + "local_ranks=[0, 1]", None, None)
    p.line(head + "global_ranks=[2, 3]", None, None)
    assert p.offset({0, 1}, set(), set()) == 2


def test_a_subgroup_or_two_agents_place_nothing():
    p = Placement()
    p.line("NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1", 0, None)
    p.line("NCCL INFO comm 0x2 rank 0 nRanks 2 nNodes 1", 1, None)  # TP pairs (0,1) (2,3): offsets 0 and -1
    assert p.offset({0, 1}, set(), set()) is None


def test_the_largest_communicator_decides():
    p = Placement()
    p.line("NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1", 1, None)  # a subgroup
    p.line("NCCL INFO comm 0x2 rank 5 nRanks 8 nNodes 2", 1, None)  # the world's
    assert p.offset({1}, set(), set()) == 4


def test_a_world_the_console_fills_is_its_own():
    assert Placement().offset({0, 1}, {1}, set()) == 0  # --nnodes 1
    assert Placement().offset({0, 1}, set(), {2}) == 0  # WORLD_SIZE=2, tags 0-1
    assert Placement().offset({0, 1}, set(), {4}) is None  # two of four: which two is not stated
    assert Placement().offset({0, 1}, {2}, set()) is None


@given(st.integers(0, 4096), st.sets(st.integers(0, 7), min_size=1))
def test_lines_that_carry_both_tags_place_the_others(base, tags):
    """One "[defaultL]:[rankG]:" line places every tag of the console at G - L (a node's ranks are consecutive)."""
    first = min(tags)
    lines = [f"[default{first}]:[rank{base + first}]:hello"] + [f"[default{t}]:NCCL version 2.28.{t}" for t in tags]
    scan = _scan(lines)
    assert {v: g for v, (g, _, _) in _ranks(scan).items()} == {f"2.28.{t}": base + t for t in tags}
