"""The dumps' histories matched across ranks (job/frmatch.py), on mechanisms beyond the analyzer's own test cases:
a majority names the odd rank, an all_to_all's short split names its sender, the window starts where every buffer
does, a rank that never launched the call the others started is named, and a dump's dtype is stated, not assumed."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from conftest import run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from fr_cases import F16, PREFIX, Op, dump  # noqa: E402


def _write(tmp_path: Path, ranks: dict[int, list[Op]]) -> Path:
    for rank, ops in ranks.items():
        (tmp_path / f"{PREFIX}{rank}").write_bytes(pickle.dumps(dump(rank, ops, {"0": sorted(ranks)})))
    return tmp_path


def _text(v) -> str:
    return " ".join((v.summary, *(f.message for f in v.findings)))


def test_majority_names_the_odd_rank(tmp_path):
    """Three ranks completed an all_reduce; rank 2's output was Half: it differs from the majority."""
    ok = [Op("all_reduce", 1), Op("all_reduce", 2)]
    odd = [Op("all_reduce", 1), Op("all_reduce", 2, out_dtype=F16)]
    v = run(_write(tmp_path, {0: ok, 1: ok, 2: odd})).verdict
    assert (v.kind.value, v.culprit_ranks) == ("collective_mismatch", (2,))
    assert "At #2 of PG 0 (default) (ALLREDUCE) the ranks' flight-recorder dumps disagree on output dtypes (ranks " \
           "0-1: Float; rank 2: Half)" in v.summary
    assert "Rank 2 differs from the majority." in v.summary


def test_all_to_all_short_split_names_its_sender(tmp_path):
    """all_to_all with one tensor per peer: rank 1 sends 3 elements to rank 0, which expects 4."""
    four, three = (4,), (3,)
    r0 = [Op("all_to_all", 1, (four, four), (four, four), state="started")]
    r1 = [Op("all_to_all", 1, (three, four), (four, four), state="started")]
    v = run(_write(tmp_path, {0: r0, 1: r1})).verdict
    assert (v.kind.value, v.culprit_ranks) == ("collective_mismatch", (1,))
    assert "rank 1: sends 3 elements to rank 0, which expects 4" in v.summary
    assert "Rank 1 sent less than its peers expect: its input was short." in v.summary


def test_all_to_all_single_short_names_the_one_peer_of_the_rank_still_in_it(tmp_path):
    """all_to_all_single (one tensor and its splits): the totals say 14 sent against 16 expected; rank 1 completed it
    (it received all it expected), rank 0 still waits, and in two ranks its only peer is rank 1."""
    r0 = [Op("all_to_all", 1, ((8,),), ((8,),), state="started")]
    r1 = [Op("all_to_all", 1, ((6,),), ((8,),)), Op("all_reduce", 2, state="started")]
    v = run(_write(tmp_path, {0: r0, 1: r1})).verdict
    assert (v.kind.value, v.culprit_ranks) == ("collective_mismatch", (1,))
    assert "Rank 1 sent less than its peers expect: its input was short." in v.summary


def test_all_to_all_single_short_names_no_one_where_the_missing_have_several_owners(tmp_path):
    """Three ranks: rank 0 still waits for 2 elements, owed by rank 1 or rank 2; the totals cannot say which."""
    done = [Op("all_to_all", 1, ((6,),), ((6,),)), Op("all_reduce", 2, state="started")]
    ranks = {0: [Op("all_to_all", 1, ((6,),), ((6,),), state="started")], 1: done,
             2: [Op("all_to_all", 1, ((4,),), ((6,),)), Op("all_reduce", 2, state="started")]}
    v = run(_write(tmp_path, ranks)).verdict
    assert v.kind.value == "collective_mismatch" and 1 not in v.culprit_ranks
    assert "which rank cannot be told from them" in v.summary


def test_window_starts_where_every_buffer_does(tmp_path):
    """Rank 0's ring buffer lost #1-#2; a difference at #2 is outside the window, one at #4 inside it."""
    r0 = [Op("all_reduce", 3), Op("all_reduce", 4, ((8,),), ((8,),))]
    r1 = [Op("all_reduce", 1), Op("broadcast", 2), Op("all_reduce", 3), Op("all_reduce", 4)]
    v = run(_write(tmp_path, {0: r0, 1: r1})).verdict
    assert v.kind.value == "collective_mismatch"
    assert "At #4 of PG 0 (default) (ALLREDUCE) the ranks' flight-recorder dumps disagree on input sizes (rank 0: 8; " \
           "rank 1: 4x4)" in v.summary
    assert "#2" not in _text(v)


def test_scheduled_while_others_started_never_launched(tmp_path):
    """Ranks 0-1 started all_reduce #3 on the GPU (timing on), rank 2 only scheduled it: its stream never got there."""
    done = [Op("all_reduce", 1), Op("all_reduce", 2)]
    ranks = {0: [*done, Op("all_reduce", 3, state="started")], 1: [*done, Op("all_reduce", 3, state="started")],
             2: [*done, Op("all_reduce", 3, state="scheduled")]}
    v = run(_write(tmp_path, ranks)).verdict
    assert (v.kind.value, v.culprit_ranks) == ("lagging_rank", (2,))
    assert "rank 2 never launched it" in v.summary
    assert sum("disagree on state" in f.message for f in v.findings) == 1  # the verdict's, not repeated


def test_stuck_inside_an_earlier_number_is_a_mismatch(tmp_path):
    """Rank 0 completed #3 and waits in #4; rank 1 is still inside #3: their calls at #3 were not the same."""
    done = [Op("all_reduce", 1), Op("all_reduce", 2)]
    ranks = {0: [*done, Op("all_reduce", 3), Op("all_reduce", 4, state="scheduled")],
             1: [*done, Op("all_reduce", 3, state="scheduled")]}
    v = run(_write(tmp_path, ranks)).verdict
    assert v.kind.value == "collective_mismatch"
    assert v.kind.value != "lagging_rank"


def test_dump_states_the_dtype(tmp_path):
    """The size arithmetic takes the dump's dtype; it never says the dtype is not printed."""
    v = run(_write(tmp_path, {r: [Op("all_reduce", 1, ((1024,),), ((1024,),), state="scheduled", out_dtype=F16,
                                     in_dtype=F16)] for r in (0, 1)})).verdict
    size = next(f for f in v.findings if f.code == "size-not-the-cause")
    assert "ALLREDUCE of 1,024 elements is 2.05 kB (Half, as the dump states)" in size.message
    assert "does not print the dtype" not in _text(v)


def test_uneven_but_balanced_all_to_all_is_no_mismatch(tmp_path):
    """Ranks send different splits, and each peer expects exactly what it is sent: the shapes differ by design."""
    r0 = [Op("all_to_all", 1, ((4,), (2,)), ((4,), (6,)), state="started")]
    r1 = [Op("all_to_all", 1, ((6,), (1,)), ((2,), (1,)), state="started")]
    v = run(_write(tmp_path, {0: r0, 1: r1})).verdict
    assert v.kind.value == "all_ranks_stuck"
    assert "disagree" not in _text(v)


def test_split_groups_of_one_name_are_told_apart_by_their_members(tmp_path):
    """split_group gives disjoint groups one name ("1" on every rank, as DeviceMesh's sub-groups): ranks 0-1 and
    ranks 2-3 are two groups, so rank 2's and rank 3's all_reduce of another size is no mismatch with ranks 0-1."""
    for rank in range(4):
        mine = [0, 1] if rank < 2 else [2, 3]
        size = ((4, 4),) if rank < 2 else ((8,),)
        ops = [Op("all_reduce", 1), Op("all_reduce", 1, size, size, pg=("1", "dp"))]
        (tmp_path / f"{PREFIX}{rank}").write_bytes(pickle.dumps(dump(rank, ops, {"0": [0, 1, 2, 3], "1": mine})))
    a = run(tmp_path)
    assert a.verdict.kind.value == "no_failure", a.verdict.summary
    assert sorted((g.id.guid, tuple(g.members)) for g in a.job.groups if g.id.guid != "0") == [
        ("1:0-1", (0, 1)), ("1:2-3", (2, 3))]
