"""A lost node and restarts, from torchrun's consoles at its default log level (issue 41 §4), recorded with
tools/launchers/torchrun_nodes.sh (each case's WHAT.txt says what happened and what the verdict must be)."""

from __future__ import annotations

import json

from conftest import DATA
from typer.testing import CliRunner

from ncclcheck.cli import app

TORCHRUN = DATA / "launchers" / "torchrun"


def _json(*args: str) -> dict:
    result = CliRunner().invoke(app, ["analyze-log", *args, "--json"])
    return json.loads(result.stdout)


def test_a_console_cut_off_with_its_agent_is_a_lost_node_named_by_its_console():
    """node1's agent and worker were killed at once: its console stops with no agent line while node0's agent
    reports rank 0's failure. The node is named by its console (no line there names its host); its worker's global
    rank is stated by no line of torchrun or NCCL, so no rank is blamed; rank 0 only lost its peer."""
    lost = TORCHRUN / "node_lost"
    v = _json(str(lost / "node0.console.log"), str(lost / "node1.console.log"))["verdict"]
    node1 = f"{lost / 'node1.console.log'} (local rank 0: its global rank no line states)"
    assert {k: v[k] for k in ("kind", "culprit_ranks", "waiting_ranks", "unknown_ranks", "stopped_ranks")} == {
        "kind": "rank_failed_first", "culprit_ranks": [], "waiting_ranks": [0], "unknown_ranks": [],
        "stopped_ranks": []}
    assert v["summary"].startswith(f"A node was lost: the console {node1} stops at line 4 with no word of its "
                                   "torchrun agent")
    assert v["action"] == {
        "kind": "collect-more", "reason": "node_lost", "node": None,
        "why": f"{node1} stopped with its agent and left no word: bring that host's kernel log of the boot before "
               "(`journalctl -k -b -1`) and the scheduler's record of the node (`scontrol show node NODE`, `sacct -j "
               "JOBID`, `kubectl describe node NODE`); drain it where they show a fault (NODE_FAIL, an Xid, a kernel "
               "panic), restart elsewhere where it was preempted"}


def test_the_surviving_console_alone_names_no_lost_node():
    """Without the other node's console nothing shows that a node stopped: rank 0 lost a peer, no more."""
    v = _json(str(TORCHRUN / "node_lost" / "node0.console.log"))["verdict"]
    assert (v["kind"], v["action"]["reason"]) == ("nccl_error", "peer_lost")


def test_restarts_at_the_default_log_level_are_found_from_the_repeated_fail_and_stop_cycles():
    """No "will restart worker group" line (the agent's INFO level): the agent's "failed (exitcode: 1)" line after
    which its workers print again, three times, makes three attempts; each is judged on its own."""
    console = str(TORCHRUN / "restarts" / "console.log")
    got = []
    for attempt in (0, 1, 2):
        d = _json(console, "--attempt", str(attempt))
        v = d["verdict"]
        got.append((d["attempt"], v["kind"], v["culprit_ranks"], v["waiting_ranks"], v["stopped_ranks"],
                    (v["cause"] or {}).get("kind"), v["action"]["kind"]))
    assert got == [
        ({"index": 0, "of": 3}, "rank_failed_first", [1], [0], [], None, "fix-code"),
        ({"index": 1, "of": 3}, "setup_failure", [0, 1], [], [], "gloo_unreachable", "fix-config"),
        ({"index": 2, "of": 3}, "launcher_failure", [], [1], [0], "gloo_peer_refused", "fix-config"),
    ]
