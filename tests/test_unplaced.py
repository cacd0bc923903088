"""torchrun's agent line names a worker by its local rank (job/unplaced.py): a global rank only where the node's first
global rank is stated; otherwise the failure is said as the local rank it is."""

from __future__ import annotations

from test_failures import run_text

AGENT = ("E1127 20:19:17.721000 25386 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) "
         "local_rank: 2 (pid: 25444) of binary: /usr/bin/python\n")


def test_an_agent_line_alone_names_no_global_rank():
    v = run_text(AGENT).verdict
    assert (v.kind.value, v.culprit_ranks) == ("rank_failed_first", ())
    assert v.summary.startswith("The worker of local rank 2 failed (exit code 1; torchrun's agent,")
    assert "global rank" in v.summary


def test_one_node_stated_places_the_local_rank():
    v = run_text("I1127 20:19:00.000000 25386 torch/distributed/launcher/api.py:188]   max_nodes        : 1\n"
                 + AGENT).verdict
    assert (v.kind.value, v.culprit_ranks) == ("rank_failed_first", (2,))


def test_a_second_nodes_tags_place_it_past_the_first_node():
    """[default1]:[rank5]: says this agent's first global rank is 4: local rank 2 is rank 6."""
    v = run_text("[default1]:[rank5]: step 3\n" + AGENT).verdict
    assert 6 in v.culprit_ranks or 6 in v.stopped_ranks or 6 in v.unknown_ranks or 6 in v.waiting_ranks
    assert 2 not in v.culprit_ranks
