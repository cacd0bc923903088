"""The job's world comes from lines that state it, never from torchrun's failure table; every attempt of a
restarted job is a job of its own. Real consoles: tests/data/world/ (tools/make_world_consoles.sh, gloo on CPU)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import DATA, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_failures import _scan, run_text
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.job.analyze import analyze_scans
from ncclcheck.job.attempts import AttemptError

WORLD = DATA / "world"

# (inputs, relative to tests/data/world) -> (verdict, culprits, unknown ranks, world size, the line it comes from,
# (attempt analysed, of how many) or None, the earlier attempts' verdicts): what each run did, stated by hand.
TRUTH = {
    "restart/console.log": ("lagging_rank", [2], [], 4, "restart/console.log:1", [1, 2], ["rank_failed_first"]),
    "restart": ("lagging_rank", [2], [], 4, "restart/console.log:1", [1, 2], ["rank_failed_first"]),
    "restart/logs": ("lagging_rank", [2], [], 4, "restart/logs/run/attempt_1/0/stdout.log:1", [1, 2],
                     ["rank_failed_first"]),
    "restart_setup/console.log": ("launcher_failure", [], [], 4, "restart_setup/console.log:1", [1, 2],
                                  ["rank_failed_first"]),
    "twonodes": ("lagging_rank", [5], [], 8, "twonodes/node0.console.log:1", None, []),
    "twonodes/node0.console.log": ("incomplete_evidence", [], [4, 5, 6, 7], 8, "twonodes/node0.console.log:1", None,
                                   []),
    "twonodes/node1.console.log": ("lagging_rank", [5], [0, 1, 2, 3], 8, "twonodes/node1.console.log:1", None, []),
    "twonodes/node1": ("lagging_rank", [5], [0, 1, 2, 3], 8, "twonodes/node1/run/attempt_0/0/stdout.log:1", None,
                       []),
}


def _brief(inputs: str, monkeypatch) -> list:
    monkeypatch.chdir(WORLD)
    r = CliRunner().invoke(app, ["analyze-log", *inputs.split(), "--json"])
    d = json.loads(r.stdout)
    v, w = d["verdict"], d["job"]["world_source"]
    earlier = [re.search(r"ended in (\w+)", f["message"])[1] for f in v["findings"] if f["code"] == "earlier-attempt"]
    return [v["kind"], v["culprit_ranks"], v["unknown_ranks"], w["size"], w["at"],
            [d["attempt"]["index"], d["attempt"]["of"]] if d["attempt"] else None, earlier]


@pytest.mark.parametrize("inputs", sorted(TRUTH))
def test_real_consoles_golden(inputs, monkeypatch):
    assert _brief(inputs, monkeypatch) == list(TRUTH[inputs])


def test_gloo_tp_dp_console_states_its_world_and_names_the_silent_rank_in_the_chain(monkeypatch):
    """tp=2 x dp=4 over gloo: gloo's lines name no group, so the ranks' waits cannot be placed in tp or dp; the
    world (8, from the agent's rendezvous result, LOGLEVEL=INFO) holds, and rank 5 is named among those waited for.
    Rank 0, in its dp all_reduce, lost its peers when ranks 2 and 6 left after their timeout ("Connection closed by
    peer"): it had reached a collective, rank 5 (asleep in host code) never did, so rank 5 alone is the culprit."""
    monkeypatch.chdir(WORLD)
    a = run("tpdp/console.log")
    assert (a.job.world, a.job.world_stated.kind, str(a.job.world_stated.loc)) == (8, "launcher", "tpdp/console.log:32")
    assert any("5" in line.split("for ")[-1] for line in a.verdict.chain)
    assert (a.verdict.kind.value, list(a.verdict.culprit_ranks)) == ("lagging_rank", [5])
    assert ("Rank 0 lost its peers when they left after their timeout (Connection closed by peer [127.0.0.1]:40074): "
            "it had reached a collective, which rank 5 never did.") in a.verdict.summary


def _without_summary(text: str) -> str:
    """The console without torchrun's failure summary (its ChildFailedError table) and its failed-worker lines."""
    cut = text.find("torch.distributed.elastic.multiprocessing.errors.ChildFailedError")
    kept = text[:cut] if cut >= 0 else text
    return "".join(line for line in kept.splitlines(keepends=True) if "failed (exitcode" not in line)


def _summary(ranks: list[int]) -> str:
    entries = "".join(f"[{i}]:\n  time      : 2026-11-25_10:00:11\n  host      : node1\n  rank      : {r} (local_rank: "
                      f"{r % 8})\n  exitcode  : -6 (pid: {1000 + r})\n  error_file: <N/A>\n  traceback : Signal 6 "
                      f"(SIGABRT) received by PID {1000 + r}\n" for i, r in enumerate(ranks))
    return ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n" + "=" * 60 + "\ntrain.py FAILED\n"
            + "-" * 60 + "\nFailures:\n  <NO_OTHER_FAILURES>\n" + "-" * 60 + "\nRoot Cause (first observed failure):\n"
            + entries + "=" * 60 + "\n")


CONSOLES = sorted([*WORLD.glob("*/*console.log"), *(DATA / "real4").glob("*/console.log"),
                   *(DATA / "failures").glob("*/console.log"), *(DATA / "real_gloo").glob("*/console.log")])


def _world(text: str, tmp: Path) -> tuple:
    log = tmp / "console.log"
    log.write_text(text, encoding="utf-8")
    a = run(log)
    w = a.job.world_stated
    # A lower bound from the ranks the console's own lines carry is no statement of the world: the table may place
    # torchrun's local tags on their global ranks (evidence/localranks.py), making those lines' ranks seen.
    exact = w if w and w.exact else None
    return (a.job.world, exact.size if exact else None)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_failure_summary_never_changes_the_world(data, tmp_path_factory):
    """With torchrun's summary, without it, or with one naming any ranks at all: the world is what the other lines
    state (or unknown), never smaller, never larger."""
    console = data.draw(st.sampled_from(CONSOLES), label="console")
    bare = _without_summary(console.read_text(encoding="utf-8", errors="replace"))
    named = data.draw(st.lists(st.integers(0, 64), min_size=1, max_size=3), label="summary ranks")
    tmp = tmp_path_factory.mktemp("w")
    base = _world(bare, tmp)
    assert _world(bare + _summary(named), tmp) == base, console
    assert _world(console.read_text(encoding="utf-8", errors="replace"), tmp) == base, console


def test_a_summary_naming_rank_1_keeps_an_8_rank_job_of_8_ranks():
    """The issue's case: ranks 0-4 and 6-7 time out, rank 5 prints nothing, torchrun's summary names rank 1: rank 5
    is the one they waited for, and no line says what it did (unknown, not guilty: job/absent.py)."""
    lines = "".join(
        f"[default{r}]:[rank{r}]:[E1125 10:00:00.000000000 ProcessGroupNCCL.cpp:689] [Rank {r}] Watchdog caught "
        f"collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
        f"Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n[default{r}]:[rank{r}]:[E1125 "
        f"10:00:00.100000000 ProcessGroupNCCL.cpp:2303] [PG ID 0 PG GUID 0(default_pg) Rank {r}]  failure detected by "
        f"watchdog at work sequence id: 5 PG status: last enqueued work: 5, last completed work: 4\n"
        for r in (0, 1, 2, 3, 4, 6, 7))
    v = run_text(lines + _summary([1])).verdict
    assert (v.kind.value, v.culprit_ranks, v.waiting_ranks) == ("incomplete_evidence", (), (0, 1, 2, 3, 4, 6, 7))
    assert v.unknown_ranks == (5,) and "the one they waited for is rank 5" in v.summary
    assert "suspect the transport" not in v.summary


@pytest.mark.parametrize(("line", "kind", "size"), [
    ("[rank0]:[I1125 ProcessGroupNCCL.cpp:900] [PG ID 0 PG GUID 0(default_pg) Rank 0] ProcessGroupNCCL "
     "initialization options: size: 16, global rank: 0, TIMEOUT(ms): 600000", "init_line", 16),
    ("node3:12:12 [0] NCCL INFO comm 0x55d0 rank 3 nranks 32 cudaDev 3 busId 1b000 - Init COMPLETE", "nccl_nranks", 32),
    ("WORLD_SIZE=24", "launcher", 24),
    ("[2026-11-25 10:00:00,000] [INFO] [launch.py:163:main] dist_world_size=64", "launcher", 64),
    ("I1125 10:00:00.000000 77 torch/distributed/elastic/agent/server/api.py:553]   global_world_sizes=[12, 12, 12]",
     "launcher", 12),
    ("Num processes: 4", "accelerate", 4),
    ("Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/6", "lightning", 6),
    ("Rank 0: Completed store-based barrier for key:store_based_barrier_key:1 with 40 nodes.", "launcher", 40),
])
def test_each_statement_of_the_world_is_read_with_its_line(line, kind, size):
    a = run_text(line + "\n")
    w = a.job.world_stated
    assert (w.kind, w.size, w.loc.line) == (kind, size, 1)


def test_torchrun_nodes_times_processes_per_node():
    a = run_text("+ torchrun --nnodes=2 --nproc-per-node=8 train.py\n[rank3]: hello\n")
    assert (a.job.world, a.job.world_stated.kind) == (16, "nodes_x_procs")
    assert run_text("torchrun --nnodes=1:4 --nproc-per-node=8 train.py\n").job.world_stated is None  # elastic


def test_the_world_is_unknown_when_nothing_states_it():
    a = run_text("RuntimeError: something failed\n" + _summary([1]))
    assert (a.job.world, a.job.world_stated) == (None, None)
    r = CliRunner().invoke(app, ["analyze-log", "-"], input="RuntimeError: something failed\n" + _summary([1]))
    assert "world: unknown: no line of these inputs states" in r.stdout.replace("\n", " ")


def test_ranks_seen_bound_the_world_from_below_and_say_so():
    a = run_text("[rank6]: RuntimeError: boom\n")
    assert (a.job.world, a.job.world_stated.size, a.job.world_stated.exact) == (None, 7, False)
    assert a.job.world_stated.words().startswith("at least 7 ranks, from the highest global rank seen")


def test_a_rank_the_launcher_stopped_by_pid_was_stopped():
    """NCCL's line header gives rank 2's PID; the agent's closing signal names it: stopped, not exited, not silent."""
    text = ("[rank2]:node1:4242:4300 [2] NCCL INFO comm 0x1 rank 2 nranks 4 cudaDev 2 busId 3000 - Init COMPLETE\n"
            "W1125 10:00:10.000000 583 torch/distributed/elastic/multiprocessing/api.py:1012] Sending process 4242 "
            "closing signal SIGTERM\n")
    s = run_text(text).job.rank(2)
    assert (s.ending.kind.value, s.ending.loc.line) == ("aborted", 2)
    assert "stopped by the launcher (SIGTERM to its PID 4242)" in s.ending.detail


def test_a_rank_missing_from_the_table_while_unplaced_processes_were_stopped_is_not_called_exited():
    text = ("[rank0]: hello\n[rank1]: hello\n[rank2]: hello\n"
            "W1125 10:00:10.000000 583 torch/distributed/elastic/multiprocessing/api.py:1012] Sending process 99 "
            "closing signal SIGTERM\n" + _summary([0, 2]))
    s = run_text(text).job.rank(1)
    assert s.ending.kind.value == "aborted" and "not exited" in s.ending.detail


# --- attempts ------------------------------------------------------------------------------------------------

_TAG = re.compile(r"^\[(?:default|rank)(\d+)\]:")


def _per_attempt(path: Path) -> list[tuple]:
    a = run_all(path)
    return [(x.verdict.kind.value, x.verdict.culprit_ranks, x.verdict.waiting_ranks) for x in a.attempts or (a,)]


def run_all(path: Path):
    from ncclcheck.evidence.reader import resolve
    from ncclcheck.job.analyze import analyze

    return analyze(list(resolve([str(path)], lambda e: None)), workers=1, attempt="all")


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_interleaving_of_a_restarted_console_gives_the_same_verdict_per_attempt(data, tmp_path_factory):
    """Each run of a rank's tagged lines between two launcher lines is one attempt's output; the ranks' lines may
    arrive in any order, each rank's own in order, and the launcher's lines keep their place."""
    console = data.draw(st.sampled_from([WORLD / "restart" / "console.log", WORLD / "restart_setup" / "console.log"]))
    out: list[str] = []
    block: dict[str, list[str]] = {}

    def flush() -> None:
        streams = [s for s in block.values() if s]
        while any(streams):
            live = [s for s in streams if s]
            pick = data.draw(st.integers(0, len(live) - 1))
            take = data.draw(st.integers(1, 6))
            out.extend(live[pick][:take])
            del live[pick][:take]
        block.clear()

    for line in console.read_text(encoding="utf-8").splitlines(keepends=True):
        m = _TAG.match(line)
        if m:
            block.setdefault(m[1], []).append(line)
        else:
            flush()
            out.append(line)
    flush()
    mixed = tmp_path_factory.mktemp("mix") / "console.log"
    mixed.write_text("".join(out), encoding="utf-8")
    assert _per_attempt(mixed) == _per_attempt(console)


def test_every_attempt_apart_and_the_earlier_oom_is_not_the_later_hangs_culprit():
    a = run_all(WORLD / "restart" / "console.log")
    assert [(x.attempt, x.verdict.kind.value, x.verdict.culprit_ranks) for x in a.attempts] == [
        (0, "rank_failed_first", (1,)), (1, "lagging_rank", (2,))]
    last = a.attempts[1]
    assert last.verdict.cause is None or "memory" not in last.verdict.cause.cause.kind
    assert not any("out of memory" in r.message for s in last.scans for r in s.errors)


def test_attempt_option(monkeypatch):
    monkeypatch.chdir(WORLD)
    r = CliRunner().invoke(app, ["analyze-log", "restart/console.log", "--attempt", "0", "--json"])
    d = json.loads(r.stdout)
    assert (r.exit_code, d["attempt"], d["verdict"]["kind"], d["verdict"]["culprit_ranks"]) == (
        1, {"index": 0, "of": 2}, "rank_failed_first", [1])
    assert [f["code"] for f in d["verdict"]["findings"] if "attempt" in f["code"]] == ["later-attempt"]
    r = CliRunner().invoke(app, ["analyze-log", "restart/console.log", "--attempt", "all", "--json"])
    d = json.loads(r.stdout)
    assert [x["attempt"]["index"] for x in d["attempts"]] == [0, 1] and d["verdict"]["culprit_ranks"] == [2]
    r = CliRunner().invoke(app, ["analyze-log", "restart/console.log", "--attempt", "all"])
    assert "attempt 0 of 2" in r.stdout and "attempt 1 of 2" in r.stdout
    r = CliRunner().invoke(app, ["analyze-log", "restart/console.log", "--attempt", "5"])
    assert r.exit_code == 2 and "the inputs hold 2 attempts (0-1)" in r.stderr
    r = CliRunner().invoke(app, ["analyze-log", "restart/console.log", "--attempt", "first"])
    assert r.exit_code == 2 and "give an attempt's number, last or all" in r.stderr


def test_an_attempt_the_inputs_do_not_hold_is_an_error():
    with pytest.raises(AttemptError):
        analyze_scans([_scan("[rank0]: RuntimeError: x\n")], attempt=1)


def test_two_agents_in_one_console_are_not_two_attempts():
    """Each node's agent reports its own failed worker at the end of the one attempt: that is no restart."""
    text = "".join((WORLD / "twonodes" / f"node{n}.console.log").read_text() for n in (0, 1))
    a = run_text(text)
    assert (a.attempt, a.verdict.kind.value, a.verdict.culprit_ranks) == (None, "lagging_rank", (5,))


# --- group membership from a mesh's layout ---------------------------------------------------------------------

def _mesh_console(init_lines: bool = True) -> str:
    """tp=2 x dp=4 over 8 ranks (tp groups 0-1, 2-3, 4-5, 6-7; dp groups 0,2,4,6 and 1,3,5,7). Rank 5 prints
    nothing; rank 4, its tp peer, times out in tp #4; the others finished tp #4 and time out in dp #4."""
    out = []

    def line(r: int, text: str) -> None:
        out.append(f"[rank{r}]:[E1125 10:00:00.000000000 ProcessGroupNCCL.cpp:1] {text}\n")

    for r in (0, 1, 2, 3, 4, 6, 7):
        tp, dp = f"PG ID 1 PG GUID tp{r // 2}(tp) Rank {r % 2}", f"PG ID 2 PG GUID dp{r % 2}(dp) Rank {r // 2}"
        if init_lines:
            line(r, f"[{tp}] ProcessGroupNCCL initialization options: size: 2, global rank: {r}, TIMEOUT(ms): 600000")
            line(r, f"[{dp}] ProcessGroupNCCL initialization options: size: 4, global rank: {r}, TIMEOUT(ms): 600000")
        pg, rank, numel = (tp, r % 2, 4096) if r == 4 else (dp, r // 2, 1048576)
        line(r, f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, OpType=ALLREDUCE, "
                f"NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.")
        line(r, f"[{pg}]  failure detected by watchdog at work sequence id: 4 PG status: last enqueued work: 4, "
                "last completed work: 3")
    return "".join(out)


def test_a_silent_member_of_a_stuck_group_is_placed_by_the_mesh_layout_and_named():
    a = run_text(_mesh_console())
    groups = {(g.id.guid, g.source.value): g.members for g in a.job.groups if g.id.guid != "0"}
    assert groups[("tp2", "layout")] == (4, 5) and groups[("dp1", "layout")] == (1, 3, 5, 7)
    v = a.verdict
    # the one member waited for, without input and with no line about it: named, unknown, not guilty (job/absent.py)
    assert (v.kind.value, v.culprit_ranks) == ("incomplete_evidence", ())
    assert 5 in v.unknown_ranks and not a.job.rank(5).present and "rank 5" in v.summary
    placed = sorted(f.message for f in v.findings if f.code == "members-from-layout")
    assert [m.split(", are placed")[0] for m in placed] == ["The members of PG 1 (tp, GUID tp2), 4-5",
                                                             "The members of PG 2 (dp, GUID dp1), 1-7 by 2"]
    assert all(m.endswith("rank 5, with no input, is a member by its place.") for m in placed)


def test_without_the_groups_sizes_no_member_is_invented():
    a = run_text(_mesh_console(init_lines=False))
    assert not [g for g in a.job.groups if g.source.value == "layout"]
    assert 5 not in a.verdict.culprit_ranks


def test_the_agents_restart_line_splits_a_console():
    """At LOGLEVEL=INFO the agent says it restarts the workers: the lines after it are the next attempt's."""
    text = ("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
            "[2026-11-24 02:31:44,000] torch.distributed.elastic.agent.server.api: [WARNING] [default] Worker group "
            "FAILED. 1/1 attempts left; will restart worker group\n"
            "[rank0]: RuntimeError: simulated data error\n")
    a = run_text(text)
    assert (a.attempt, a.attempt_count, a.verdict.culprit_ranks) == (1, 2, (0,))
    assert "out of memory" not in a.verdict.summary
    earlier = [f for f in a.verdict.findings if f.code == "earlier-attempt"]
    assert len(earlier) == 1 and "culprit: rank 1" in earlier[0].message and str(earlier[0].evidence[0]).endswith(":1")
