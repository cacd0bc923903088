"""torch 2.0-2.1 under torchrun on several nodes: ``[defaultN]:`` is the rank on its node, the job-wide rank is only
the watchdog's ``[Rank K]``, and no line has ``[rankN]:``. Each node's console must keep its own ranks."""

from __future__ import annotations

import json

from conftest import run
from typer.testing import CliRunner

from ncclcheck.cli import app

LINE = ("[default{local}]:[E ProcessGroupNCCL.cpp:475] [Rank {rank}] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=311, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=1800000) ran for "
        "1800437 milliseconds before timing out.")


def _consoles(tmp_path, silent: int = 13, group_rank=None):
    """Two node consoles of a 16-rank job (8 per node): every rank but ``silent`` times out and says so, then
    terminates with the watchdog's what()."""
    for node in (0, 1):
        lines = []
        for local in range(8):
            rank = node * 8 + local
            if rank == silent:
                continue
            shown = rank if group_rank is None else group_rank(rank)
            lines.append(LINE.format(local=local, rank=shown))
            lines.append(f"[default{local}]:terminate called after throwing an instance of 'std::runtime_error'")
        (tmp_path / f"node{node}.log").write_text("\n".join(lines) + "\n")


def test_the_second_nodes_ranks_are_its_own_and_the_silent_rank_is_named(tmp_path):
    _consoles(tmp_path)
    a = run(tmp_path)
    assert sorted(r for s in a.scans for r in s.ranks_seen) == [*range(13), 14, 15]
    # rank 13 printed nothing: the one they waited for, unknown, not guilty (job/absent.py)
    assert (a.verdict.kind.value, a.verdict.culprit_ranks, a.verdict.unknown_ranks) == ("incomplete_evidence", (), (13,))
    assert a.verdict.waiting_ranks == (*range(13), 14, 15)
    r = CliRunner().invoke(app, ["analyze-log", str(tmp_path), "--json"])
    j = json.loads(r.stdout)
    assert j["inputs"]["ranks_seen"] == "0-12, 14-15"
    assert "ranks none" not in r.stdout


def test_a_subgroups_ranks_are_not_taken_for_global_ones(tmp_path):
    """Data-parallel groups of 2 across the nodes: every process of a node prints the same group rank (0 on the
    first node, 1 on the second), which is no node's run of global ranks: nothing is renumbered."""
    _consoles(tmp_path, silent=-1, group_rank=lambda rank: rank // 8)
    a = run(tmp_path)
    assert all(w.who.global_rank is None for s in a.scans for w in s.works)


def test_a_tee_line_without_its_rank_prefix_is_its_own_process_and_no_restart(tmp_path):
    """torchrun --tee 3 (torch 2.4+): records are "[default3]:[rank3]:[E…] [Rank 3] Watchdog caught …", but the
    terminate handler's what() line is "[default3]:  what():  …" with no [rankN]:. Printed right under rank 1's
    record it is still rank 3's (its launcher tag says so), so rank 1 keeps its one record, nothing is taken for a
    restart, and every rank's record is kept."""
    work = ("WorkNCCL(SeqNum={s}, OpType=ALLREDUCE, NumelIn=1000, NumelOut=1000, Timeout(ms)=600000) ran for 600031 "
            "milliseconds before timing out.")
    lines = []
    for r in range(4):
        s = 119 if r == 3 else 120
        lines.append(f"[default{r}]:[rank{r}]:[E1122 10:00:0{r}.123456789 ProcessGroupNCCL.cpp:616] [Rank {r}] "
                     "Watchdog caught collective operation timeout: " + work.format(s=s))
        if r == 1:
            lines.append("[default3]:  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread "
                         "terminated with exception: [Rank 3] Watchdog caught collective operation timeout: "
                         + work.format(s=119))
    (tmp_path / "console.log").write_text("\n".join(lines) + "\n")
    a = run(tmp_path / "console.log")
    assert sorted((r.global_rank, r.seq) for r in a.records) == [(0, 120), (1, 120), (2, 120), (3, 119)]
    assert (a.verdict.culprit_ranks, a.verdict.waiting_ranks) == ((3,), (0, 1, 2))
    assert not [f for f in a.verdict.findings if f.code == "earlier-runs"]
