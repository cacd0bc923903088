"""Ranks whose own progress counters stop apart with no failure line (job/apart.py, formats/progress.py).

tests/data/gloo_counters/apart was recorded on CPU (gloo) by tools/record41/run_counters.sh: rank 1 ran two batches
fewer than rank 0 and the job was killed before any timeout. The other lines are written from the printers' formats:
a script's own `Rank r batch b` and DistDGL's examples' `Part {} | Epoch {:05d} | Step {:05d} | Loss {:.4f} | ...`
(examples/pytorch/graphsage/dist/train_dist.py).
"""

from __future__ import annotations

import pytest
from conftest import DATA, run, run_text

_DGL = ("Part {r} | Epoch {e:05d} | Step {s:05d} | Loss 0.2396 | Train Acc 0.9400 | Speed (samples/sec) 633.4192 | "
        "GPU 0.0 MB | time 3.965 s")


def _analysis(*lines: str):
    return run_text("\n".join(lines) + "\n")


def _apart(a) -> list:
    return [f for f in a.verdict.findings if f.code == "counters-apart"]


def test_the_recorded_stall_stops_apart_and_names_no_culprit():
    a = run(DATA / "gloo_counters" / "apart" / "console.log")
    v = a.verdict
    assert v.kind.value == "incomplete_evidence" and list(v.culprit_ranks) == []
    assert "rank 0 at 7" in v.summary and "rank 1 at 6" in v.summary
    (f,) = _apart(a)
    assert f.fix is None and v.cause is not None and v.cause.cause.kind == "steps_apart"  # the cause's steps, once
    assert v.action.kind == "collect-more" and "which rank held the others" in v.action.why
    assert "DistributedSampler" in v.next_steps[0] and "Join" in v.next_steps[0]
    assert len(v.next_steps) == 2 and "num_workers=0" in v.next_steps[1]  # no "the culprit is among the missing"


@pytest.mark.parametrize("prefix", ["", "[rank{r}]:", "[default{r}]:", "{r}: "])
def test_counts_a_line_names_the_rank_of(prefix):
    lines = [prefix.format(r=r) + f"[Validation Debug]  Rank {r} batch {b} start" for r, last in ((0, 86), (1, 89))
             for b in range(last - 2, last + 1)]
    a = _analysis(*lines)
    assert a.verdict.kind.value == "incomplete_evidence" and list(a.verdict.culprit_ranks) == []
    assert _apart(a)


def test_dgls_partitions_stop_apart():
    a = _analysis(*(_DGL.format(r=r, e=19, s=0) for r in (3, 0, 2, 1)), _DGL.format(r=0, e=19, s=20))
    assert a.verdict.kind.value == "incomplete_evidence" and _apart(a)
    assert "num_workers=0" in a.verdict.next_steps[1]


@pytest.mark.parametrize("lines", [
    # every rank at the same count: a log that simply ends
    [f"Rank {r} batch {b} start" for b in (1, 2, 3) for r in (0, 1)],
    [_DGL.format(r=r, e=2, s=40) for r in (0, 1, 2, 3)],
    # one rank only: nothing to compare
    [f"Rank 0 batch {b} start" for b in (1, 2, 3)],
    # not counts: a batch size, a total's count (formats/progress.py's `progress`)
    ["Rank 0 batch size 32", "Rank 1 batch size 16"],
    # the ranks' words that the work is over: an ending
    ["Rank 0 batch 7 start", "Rank 1 batch 6 start", "rank 0 done", "rank 1 done"],
])
def test_counts_that_do_not_stop_apart_or_a_job_that_ended_stay_no_failure(lines):
    a = _analysis(*lines)
    assert a.verdict.kind.value == "no_failure" and not _apart(a)


def test_a_failure_keeps_its_verdict():
    a = _analysis("[rank0]: Rank 0 batch 7 start", "[rank1]: Rank 1 batch 6 start",
                  "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered")
    assert a.verdict.kind.value == "rank_failed_first" and list(a.verdict.culprit_ranks) == [1]
