"""Uneven data from the ranks' own progress prints (issue 41 §5): evidence/formats/progress.py and job/uneven.py.

Recorded on CPU with gloo (tools/launchers/uneven.sh, tests/data/launchers/torchrun/uneven_*): 25 samples split by
rank, 7 batches on rank 0 and 6 on rank 1, each rank's loop counted by printed lines or a tqdm bar; each case read as
torchrun's console and as its per-rank files.
"""

from __future__ import annotations

import pytest
from conftest import DATA, run
from hypothesis import given
from hypothesis import strategies as st

from ncclcheck.evidence.formats import progress
from ncclcheck.evidence.types import Loc
from ncclcheck.job.uneven import FIX
from ncclcheck.render.json_out import analysis_json

T = DATA / "launchers" / "torchrun"
TAIL = ("ran steps the others never reached: each step's collectives there wait for ranks that had left the loop (or "
        "meet their next call, a barrier or a metric, of another size).")


def _uneven(path) -> tuple[dict, list[dict]]:
    v = analysis_json(run(path))["verdict"]
    return v, [f for f in v["findings"] if f["code"] == "uneven-data"]


def test_printed_batch_counts_that_differ_are_uneven_data_with_each_ranks_last_line():
    path = T / "uneven_lines_barrier" / "console.log"
    v, found = _uneven(path)
    assert (v["kind"], v["culprit_ranks"], v["action"]["kind"]) == ("collective_mismatch", [], "fix-code")
    assert found == [{
        "severity": "warning", "code": "uneven-data",
        "message": ("Uneven data: the ranks counted 'epoch # batch' to different totals (rank 0: 7; rank 1: 6); their "
                    f"last counts: rank 0 7/7; rank 1 6/6. Rank 0 {TAIL}"),
        "evidence": [f"{path}:12", f"{path}:17"],
        "fix": FIX,
    }]
    assert v["next_steps"][0] == FIX


@pytest.mark.parametrize("case", ["uneven_lines_barrier", "uneven_lines_metric", "uneven_tqdm_barrier"])
@pytest.mark.parametrize("layout", ["console.log", "logs"])
def test_every_recording_and_layout_says_uneven_data(case, layout):
    _, found = _uneven(T / case / layout)
    assert len(found) == 1 and "(rank 0: 7; rank 1: 6)" in found[0]["message"]


def test_a_tqdm_bar_counts_its_loop_even_where_the_rank_stopped_mid_way():
    """Rank 0's bar still reads 6/7 (it hung in its 7th step): the totals, not the counts, tell uneven data."""
    _, (f,) = _uneven(T / "uneven_tqdm_barrier" / "logs")
    assert "'rank # epoch #'" in f["message"] and "rank 0 6/7; rank 1 6/6" in f["message"]


def test_equal_totals_or_a_job_that_ended_well_say_nothing(write):
    even = write("even.log", "\n".join(f"[rank{r}]:epoch 0 batch {i}/6" for r in (0, 1) for i in range(1, 7))
                 + "\n[rank1]:RuntimeError: boom\n")
    assert not _uneven(even)[1]
    ok = write("ok.log", "[rank0]:epoch 0 batch 7/7\n[rank1]:epoch 0 batch 6/6\n")  # nothing failed: no finding
    v, found = _uneven(ok)
    assert (v["kind"], found) == ("no_failure", [])


@given(st.integers(0, 10**6), st.integers(1, 10**6), st.sampled_from(["batch", "Batch", "batches"]))
def test_a_printed_count_is_read_with_its_total_whatever_the_numbers(i, n, word):
    said = list(progress.FORMAT.reader().feed(f"[default3]:epoch 2 {word} {i}/{n} loss 0.25", Loc("x", 1)))
    if i > n:
        assert said == []
    else:
        (fact,) = said
        assert fact.value == f"epoch # batch: {i}/{n}"
