"""A hang's next steps follow from the mechanism its lines state (issue 41): why a member never arrived, in the order
the lines allow; what the collective waits for besides every member (job/waitsteps.toml, one entry per op); what its
sequence number proves; and a timeout that names no rank reads as a rank no line names, never as rank 0.

The watchdog lines are ProcessGroupNCCL's (``[Rank N] Watchdog caught collective operation timeout: WorkNCCL(...)``)
as the public threads post them (tests/data/public_threads/170, 176, 183, 185).
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import run_text
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.job.model import VerdictKind
from ncclcheck.job.waitsteps import op_key, op_step, seq_step, table
from ncclcheck.render.json_out import analysis_json


def _timeout(rank: int | None, seq: int | None, op: str, prefix: bool = True) -> str:
    head = f"[rank{rank}]:" if prefix and rank is not None else ""
    who = f"[Rank {rank}] " if rank is not None else ""
    number = f"SeqNum={seq}, " if seq is not None else ""
    return (f"{head}[E ProcessGroupNCCL.cpp:475] {who}Watchdog caught collective operation timeout: WorkNCCL("
            f"{number}OpType={op}, NumelIn=73728, NumelOut=73728, Timeout(ms)=1800000) ran for 1800542 milliseconds "
            "before timing out.\n")


def _steps(text: str) -> list[str]:
    return list(run_text(text).verdict.next_steps)


def test_the_table_names_each_op_once_with_an_authority():
    t = table()
    assert set(t.reasons) == {"crash", "uneven", "desync"}
    keys = [k for o in t.ops for k in o.ops]
    assert len(keys) == len(set(keys))
    assert all(o.source.startswith(("https://github.com/pytorch/", "https://docs.nvidia.com/")) for o in t.ops)


@pytest.mark.parametrize("op, words", [
    ("ALLTOALL_BASE", "split sizes"), ("nccl:all_to_all_single", "split sizes"), ("ALLTOALL", "split sizes"),
    ("BROADCAST", "`src`"), ("broadcast", "`src`"), ("_ALLGATHER_BASE", "group's size"),
    ("_REDUCE_SCATTER_BASE", "group's size"), ("REDUCE", "`dst`"), ("ALLREDUCE", None), ("SEND", None)])
def test_each_op_says_what_it_waits_for(op, words):
    step = op_step(op, VerdictKind.INCOMPLETE)
    assert (step is None) if words is None else (words in step)


def test_a_root_is_not_said_where_every_member_waits():
    """Every member of a broadcast waiting (the root among them) leaves no root to wait for; an all-to-all's splits
    hang every member."""
    assert op_step("BROADCAST", VerdictKind.ALL_RANKS_STUCK) is None
    assert "split sizes" in op_step("ALLTOALL_BASE", VerdictKind.ALL_RANKS_STUCK)
    assert op_key("_ALLGATHER_BASE") == "ALLGATHER_BASE"


def test_an_all_to_all_timeout_says_to_check_the_split_sizes():
    steps = _steps(_timeout(2, 472025, "ALLTOALL_BASE"))
    assert sum("split sizes each rank passes" in s for s in steps) == 1


def test_a_large_sequence_number_rules_out_a_group_that_never_worked():
    steps = _steps(_timeout(3, 4967570, "ALLREDUCE"))
    said = [s for s in steps if s.startswith("#4,967,570:")]
    assert len(said) == 1 and "4,967,569 operations before" in said[0]
    assert "No line prints the releases: compare against the next release" in said[0]


def test_the_releases_printed_are_the_ones_to_check():
    text = "node1:123:123 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n" + _timeout(3, 4967570, "ALLREDUCE")
    said = next(s for s in _steps(text) if s.startswith("#4,967,570:"))
    assert "The job runs NCCL 2.18.1" in said and "No line prints" not in said


@pytest.mark.parametrize("n, words", [(1, "first collective"), (2, "second collective"), (3, "2 operations before")])
def test_the_first_numbers_are_the_set_up_and_the_first_exchange(n, words):
    step = seq_step(run_text(_timeout(1, n, "ALLREDUCE")).job, n)
    assert step is not None and words in step
    assert seq_step(run_text(_timeout(1, n, "ALLREDUCE")).job, None) is None


def test_why_a_member_never_arrived_is_said_once_each_crash_first():
    steps = _steps(_timeout(3, 52, "ALLREDUCE"))
    assert len(steps) == len(set(steps))
    t = table().reasons
    crash, uneven, desync = (steps.index(t[k]) for k in ("crash", "uneven", "desync"))
    busy = next(i for i, s in enumerate(steps) if s.startswith("A rank that stays away"))
    assert crash < busy < uneven < desync
    assert "TORCH_DISTRIBUTED_DEBUG=DETAIL" in steps[desync] and "drop_last" in steps[uneven]


def test_a_loop_that_had_ended_puts_fewer_iterations_first():
    """A tqdm bar at its total before the timeout: the others had finished a loop, where uneven data shows."""
    bar = "Epoch 3: 100%|##########| 50/50 [00:10<00:00, 4.90it/s]\n"
    steps = _steps(bar + _timeout(1, 77, "ALLREDUCE"))
    t = table().reasons
    phase = next(i for i, s in enumerate(steps) if s.startswith("The log shows the phase"))
    assert phase < steps.index(t["uneven"]) < steps.index(t["crash"])


def test_loops_counted_to_different_totals_put_fewer_iterations_first():
    """Ranks 0 and 1 count one loop to 7 and 6 (job/uneven.py's finding) and wait for rank 2, absent."""
    init = ("[rank0]:[I1125 09:36:06.123456789 ProcessGroupNCCL.cpp:936] [PG ID 0 PG GUID 0 Rank 0] ProcessGroupNCCL "
            "initialization options: size: 3, global rank: 0, TIMEOUT(ms): 1800000\n")
    a = run_text(init + "[rank0]:epoch 0 batch 3/7\n[rank1]:epoch 0 batch 3/6\n" + _timeout(0, 40, "ALLREDUCE")
                 + _timeout(1, 40, "ALLREDUCE"))
    assert a.verdict.kind is VerdictKind.INCOMPLETE and "uneven-data" in [f.code for f in a.verdict.findings]
    steps, t = list(a.verdict.next_steps), table().reasons
    assert steps.index(t["uneven"]) < steps.index(t["crash"])


@pytest.mark.parametrize("op", ["ALLTOALL_BASE", "ALLREDUCE"])
def test_where_every_member_waits_the_number_names_no_missing_rank(op):
    """Both members of a stated world of two wait in #100: an all-to-all's splits come first; the number proves the
    group worked and names no crash or branch of a rank (every member is there)."""
    init = "".join(f"[rank{r}]:[I1125 09:36:06.123456789 ProcessGroupNCCL.cpp:936] [PG ID 0 PG GUID 0 Rank {r}] "
                   f"ProcessGroupNCCL initialization options: size: 2, global rank: {r}, TIMEOUT(ms): 1800000\n"
                   for r in (0, 1))
    a = run_text(init + _timeout(0, 100, op) + _timeout(1, 100, op))
    assert a.verdict.kind is VerdictKind.ALL_RANKS_STUCK
    steps = a.verdict.next_steps
    assert ("split sizes" in steps[0]) is (op == "ALLTOALL_BASE")
    said = next(s for s in steps if s.startswith("#100:"))
    assert "99 operations before" in said and "crash" not in said and "hardware" in said
    assert seq_step(a.job, 2, every=True) is None and seq_step(a.job, 1, every=True) is None


def test_a_lagging_rank_named_keeps_its_own_step():
    """A rank present and silent is named: its own step says what to look at, then the op's; the reasons and the
    number's reading are not repeated (the 4,096-rank report's length, tests/test_job.py, holds that)."""
    a = run_text("[rank0]:step 8 loss 0.1\n" + "".join(_timeout(r, 9, "BROADCAST") for r in (1, 2, 3)))
    assert a.verdict.kind is VerdictKind.LAGGING_RANK and a.verdict.culprit_ranks == (0,)
    steps = a.verdict.next_steps
    assert steps[0].startswith("Look at what rank 0 did") and "`src`" in steps[1] and len(steps) == 3
    assert not set(table().reasons.values()) & set(steps) and not any(s.startswith("#9") for s in steps)


def test_a_timeout_that_names_no_rank_is_no_ones(tmp_path):
    """No [Rank N], no [rankN]: prefix, no rank in the file's name: a rank no line names waited, not rank 0; every
    rank set is empty (the partition holds: the world is unknown), and no None reaches a person."""
    log = tmp_path / "console.log"
    log.write_text("Watchdog caught collective operation timeout: WorkNCCL(... OpType=BROADCAST ...)\n"
                   "ran for 3600001 ms before timing out  ->  Signal 6 (SIGABRT)\n")
    r = CliRunner().invoke(app, ["analyze-log", str(log)], env={"COLUMNS": "200"}, catch_exceptions=False)
    assert "incomplete_evidence" in r.stdout and "a rank no line names waited in BROADCAST" in r.stdout
    assert not re.search(r"Rank 0 waited|waiting 0|\bNone\b|\bnull\b", r.stdout), r.stdout
    assert "`src`" in r.stdout  # the op's own step
    j = json.loads(CliRunner().invoke(app, ["analyze-log", str(log), "--json"], catch_exceptions=False).stdout)
    v = j["verdict"]
    assert v["kind"] == "incomplete_evidence"
    assert v["culprit_ranks"] == v["waiting_ranks"] == v["unknown_ranks"] == v["stopped_ranks"] == []
    assert [x["ranks"] for x in j["records"]] == [None] and j["job"]["ranks"] == []
    assert "None" not in json.dumps(v)
    html = tmp_path / "r.html"
    CliRunner().invoke(app, ["analyze-log", str(log), "--html", str(html), "-q"], catch_exceptions=False)
    assert not re.search(r"\bNone\b|Rank 0 waited", html.read_text())


def test_the_same_line_with_a_rank_is_that_rank():
    a = run_text(_timeout(2, 5, "ALLREDUCE"))
    assert a.verdict.waiting_ranks == (2,)
    assert analysis_json(a)["verdict"]["waiting_ranks"] == [2]


def test_a_bare_work_mention_is_no_timeout():
    """``WorkNCCL(OpType=..., Timeout(ms)=...)`` quoted in a note, with no number and no timeout words, is a mention,
    not a timeout (tests/data/corpus/12's sidecar holds one)."""
    a = run_text('"format_features": ["WorkNCCL(OpType=..., Timeout(ms)=...) with no SeqNum"]\n')
    assert a.verdict.kind is VerdictKind.NO_FAILURE
