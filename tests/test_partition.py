"""Every rank accounted for (issue 41 §4): the verdict's culprit, waiting, stopped and unknown ranks partition the
world the verdict knows, on every fixture input and on synthetic jobs.

The world is every rank of the job model (stated, seen, or in a launcher's table) and every rank the verdict names;
a stated world too large to list keeps its ranks without input as ranges (``unlisted``), which count as unknown.
Nothing failed (``no_failure``): no rank is a culprit, waited or was stopped.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from analysed import resolved
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncclcheck.evidence.reader import resolve
from ncclcheck.job.analyze import analyze
from ncclcheck.job.model import Analysis, VerdictKind

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from golden import inputs  # noqa: E402  (tools/golden.py: every fixture input, the blind set left out)

sys.path.pop(0)


def assert_partition(a: Analysis) -> None:
    """The four sets are apart and hold every rank of the world the verdict knows, each once."""
    v, job = a.verdict, a.job
    sets = {"culprit": v.culprit_ranks, "waiting": v.waiting_ranks, "stopped": v.stopped_ranks,
            "unknown": v.unknown_ranks}
    for name, ranks in sets.items():
        assert len(set(ranks)) == len(ranks), (name, ranks)
    placed: dict[int, str] = {}
    for name, ranks in sets.items():
        for r in ranks:
            assert r not in placed, f"rank {r} is both {placed[r]} and {name}"
            placed[r] = name
    known = {s.rank for s in job.ranks} | set(v.culprit_ranks) | set(v.waiting_ranks)
    if v.kind is VerdictKind.NO_FAILURE:
        assert not (v.culprit_ranks or v.waiting_ranks or v.stopped_ranks), v
        assert {s.rank for s in job.ranks if not s.present} == set(v.unknown_ranks)
        return
    assert set(placed) == known, f"in no set: {sorted(known - set(placed))[:8]}"
    unlisted = {r for span in job.unlisted for r in (span[0], span[-1])}
    assert not unlisted & set(placed), "a rank never listed is listed"
    if job.world:
        assert all(0 <= r < job.world for r in placed if job.rank(r) is None), (job.world, sorted(placed)[-4:])
    for r in v.unknown_ranks:
        s = job.rank(r)
        assert s is None or not s.present, f"rank {r} has input, yet is unknown"


FIXTURES = inputs()


@pytest.mark.parametrize("path", FIXTURES, ids=[p.relative_to(ROOT).as_posix() for p in FIXTURES])
def test_every_fixture_accounts_for_every_rank(path: Path) -> None:
    _, a = resolved(path)  # the analysis other files' properties share (tests/analysed.py)
    assert_partition(a)
    if a.attempt_count > 1:  # a restarted job: every attempt partitions its own world (attempts come with "all")
        every = analyze(resolve([str(path)], lambda e: None), workers=1, attempt="all").attempts
        assert len(every) == a.attempt_count
        for each in every:
            assert_partition(each)


# A synthetic job: each rank of a world ends one way, in PyTorch 2.x's and torchrun's line shapes (the fixtures
# under tests/data/real4 hold the same lines from real runs): a watchdog timeout in the default group, a Python
# exception, a line and nothing more, no input at all, or the agent's SIGTERM after another worker failed.
FATES = ("timeout", "exception", "silent", "absent", "sigterm", "sigkill")


def _job_text(fates: list[str], stated: bool) -> str:
    world = len(fates)
    lines: list[str] = []
    table: list[str] = []
    for r, fate in enumerate(fates):
        pid = 1000 + r
        if fate == "absent":
            continue
        if stated:
            lines.append(f"[rank{r}]:[I1122 10:00:00.000000000 ProcessGroupNCCL.cpp:988] [PG ID 0 PG GUID 0(default_pg) "
                         f"Rank {r}] ProcessGroupNCCL initialization options: size: {world}, global rank: {r}, "
                         "TIMEOUT(ms): 600000")
        lines.append(f"[rank{r}]:step 3 loss 0.25")
        if fate == "timeout":
            lines += [f"[rank{r}]:[E1122 10:30:00.000000000 ProcessGroupNCCL.cpp:689] [Rank {r}] Watchdog caught "
                      "collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=4096, "
                      "NumelOut=4096, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.",
                      f"[rank{r}]:[E1122 10:30:00.000100000 ProcessGroupNCCL.cpp:2303] [PG ID 0 PG GUID 0(default_pg) "
                      f"Rank {r}]  failure detected by watchdog at work sequence id: 7 PG status: last enqueued "
                      "work: 7, last completed work: 6"]
        elif fate == "exception":
            lines += [f"[rank{r}]: Traceback (most recent call last):",
                      f'[rank{r}]:   File "train.py", line 9, in <module>',
                      f"[rank{r}]: ValueError: a batch of the wrong shape"]
        elif fate in ("sigterm", "sigkill"):
            code, name = (-15, "SIGTERM") if fate == "sigterm" else (-9, "SIGKILL")
            if fate == "sigterm":
                lines.append("W1122 10:31:00.000000 99 torch/distributed/elastic/multiprocessing/api.py:1012] Sending "
                             f"process {pid} closing signal SIGTERM")
            table += [f"[{len(table) // 7}]:", "  time      : 2026-11-22_10:31:00", "  host      : localhost",
                      f"  rank      : {r} (local_rank: {r})", f"  exitcode  : {code} (pid: {pid})",
                      "  error_file: <N/A>", f"  traceback : Signal {-code} ({name}) received by PID {pid}"]
    if table:
        lines += ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
                  "======================================================", "train.py FAILED",
                  "------------------------------------------------------", "Failures:", *table,
                  "======================================================"]
    return "\n".join(lines) + "\n"


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fates=st.lists(st.sampled_from(FATES), min_size=1, max_size=9), stated=st.booleans())
def test_every_rank_of_a_synthetic_job_is_in_one_set(tmp_path: Path, fates: list[str], stated: bool) -> None:
    log = tmp_path / "console.log"
    log.write_text(_job_text(fates, stated))
    a = analyze(resolve([str(log)], lambda e: None), workers=1)
    assert_partition(a)
    v = a.verdict
    if stated and v.kind is not VerdictKind.NO_FAILURE:
        # the stated world is the world: every rank of it is in a set, those without input among the unknown
        placed = {*v.culprit_ranks, *v.waiting_ranks, *v.stopped_ranks, *v.unknown_ranks}
        assert placed == set(range(len(fates))), (fates, v)
        assert {r for r, f in enumerate(fates) if f == "absent"} <= {*v.unknown_ranks, *v.culprit_ranks}
    for r, f in enumerate(fates):
        if f == "timeout" and r not in v.culprit_ranks and v.kind is not VerdictKind.NO_FAILURE:
            assert r in v.waiting_ranks, (r, fates, v)
        if f == "sigterm" and r not in v.culprit_ranks and v.kind is not VerdictKind.NO_FAILURE:
            assert r in v.stopped_ranks, (r, fates, v)


TORCHRUN = ROOT / "tests" / "data" / "launchers" / "torchrun"  # tools/launchers/torchrun_signals.sh, real runs


def _read(*parts: str) -> Analysis:
    return analyze(resolve([str(TORCHRUN / p) for p in parts], lambda e: None), workers=1)


def test_a_rank_stopped_from_outside_is_the_culprit_and_the_agents_sigterms_stopped_the_rest() -> None:
    """torchrun's agent logs a closing SIGTERM for ranks 0 and 2 only: rank 1's SIGTERM came from outside."""
    v = _read("outside_term/console.log").verdict
    assert (v.kind, v.culprit_ranks, v.waiting_ranks, v.stopped_ranks) == (VerdictKind.RANK_FAILED_FIRST, (1,), (),
                                                                           (0, 2))
    assert v.cause is not None and v.cause.cause.kind == "outside_stop"


def test_the_ranks_torchrun_stopped_after_a_kill_are_listed_as_stopped() -> None:
    v = _read("sigkill/console.log").verdict
    assert (v.culprit_ranks, v.stopped_ranks) == ((1,), (0, 2))
    assert v.cause is not None and v.cause.cause.kind == "host_kill"


@pytest.mark.parametrize(("case", "cause"), [("agent_term", "stopped_externally"), ("nohup_hup", "terminal_hangup")])
def test_the_signal_torchruns_agent_received_says_who_stopped_the_job(case: str, cause: str) -> None:
    """The agent passes on the signal it got (agent/server/api.py): SIGTERM is a scheduler or a kill, SIGHUP the
    terminal or SSH session that started it closing, which nohup does not stop (the agent installs its own handler)."""
    v = _read(f"{case}/console.log").verdict
    assert (v.kind, v.culprit_ranks) == (VerdictKind.LAUNCHER_FAILURE, ()), v.summary
    assert v.cause is not None and v.cause.cause.kind == cause
    fix = " ".join(v.next_steps)
    assert ("setsid" in fix and "--signals-to-handle SIGTERM,SIGINT,SIGQUIT" in fix) == (case == "nohup_hup"), fix


@pytest.mark.parametrize("inputs", [("sigint/console.log",), ("sigint/logs",), ("sigint/console.log", "sigint/logs")])
def test_ctrl_c_is_an_interrupt_not_three_failed_ranks(inputs: tuple[str, ...]) -> None:
    v = _read(*inputs).verdict
    assert (v.kind, v.culprit_ranks, v.stopped_ranks) == (VerdictKind.LAUNCHER_FAILURE, (), (0, 1, 2)), v.summary
    assert "SIGINT" in v.summary and "Ctrl-C" in v.summary


def test_a_rank_that_exited_0_while_the_others_waited_ran_fewer_collectives() -> None:
    v = _read("early_exit/console.log", "early_exit/logs").verdict
    assert (v.kind, v.culprit_ranks, v.waiting_ranks) == (VerdictKind.COLLECTIVE_MISMATCH, (2,), (0, 1))
    assert "exited with status 0" in v.summary and "fewer collectives" in v.summary


def test_the_report_names_every_set_as_ranges() -> None:
    from typer.testing import CliRunner

    from ncclcheck.cli import app

    r = CliRunner().invoke(app, ["analyze-log", str(TORCHRUN / "outside_term" / "console.log")],
                           env={"NO_COLOR": "1", "COLUMNS": "120"})
    assert "culprit rank(s): 1; stopped 0, 2" in r.stdout, r.stdout


@pytest.mark.parametrize("case", ["outside_term", "sigkill", "agent_term", "nohup_hup"])
def test_per_rank_files_that_stop_without_an_ending_ask_for_the_console(case: str) -> None:
    """torchrun's --log-dir files of workers ended by a signal stop mid-run: not no_failure, but incomplete."""
    a = _read(f"{case}/logs")
    v = a.verdict
    assert (v.kind, v.culprit_ranks, v.stopped_ranks) == (VerdictKind.INCOMPLETE, (), (0, 1, 2)), v.summary
    assert "torchrun's own console" in v.summary


def test_a_finished_runs_files_are_no_failure() -> None:
    """pdsh/clean: every rank printed that it finished (a line that says the work was done)."""
    v = analyze(resolve([str(ROOT / "tests/data/launchers/pdsh/clean/logs")], lambda e: None), workers=1).verdict
    assert v.kind is VerdictKind.NO_FAILURE, v.summary


def test_a_hosts_set_up_failure_names_no_culprit_and_its_rank_stopped() -> None:
    """NCCL's bootstrap found no interface (src/misc/socket.cc): the host's settings, every rank's there; the rank
    that printed it ended by it, it waited for no peer."""
    from conftest import run_text

    v = run_text("[rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
                 "ProcessGroupNCCL.cpp:2588, internal error - please report this issue to the NCCL developers, NCCL "
                 "version 2.21.5\n[rank0]: ncclInternalError: Internal check failed.\n[rank0]: Last error:\n"
                 "[rank0]: Bootstrap : no socket interface found\n").verdict
    assert (v.kind, v.culprit_ranks, v.waiting_ranks, v.stopped_ranks) == (VerdictKind.SETUP_FAILURE, (), (), (0,))
    assert "(seen by rank 0)" in v.summary and "The host is the cause, not one rank" in v.summary
