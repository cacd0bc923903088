"""A launcher's report of workers killed with no error of their own (job/launcherkill.py): DeepSpeed's launcher's kill of its
workers (deepspeed/launcher/launch.py, sigkill_handler), and Ray's actor error for a process no line ranks.

The lines are written from launch.py's format strings (`logger.info(f"Killing subprocess {process.pid}")`, its first
releases' print of the same words, `Main process received {sig_names[signum]}, exiting`) and recorded in
tests/data/launchers/deepspeed/ (tools/launchers/python_launchers.sh)."""

from __future__ import annotations

import pytest
from conftest import DATA, run, run_text, thread_log

from ncclcheck.job.model import VerdictKind

_HEAD = "[2025-06-02 20:51:24,{:03d}] [INFO] [launch.py:319:sigkill_handler] "


def _kills(*pids: int, head: bool = True) -> str:
    return "".join(f"{_HEAD.format(i) if head else ''}Killing subprocess {p}\n" for i, p in enumerate(pids))


@pytest.mark.parametrize("head", [True, False])
def test_kill_lines_alone_are_a_worker_that_failed_with_no_error_of_its_own(head):
    v = run_text(_kills(410126, 410127, head=head)).verdict
    assert (v.kind, v.cause.cause.kind, v.culprit_ranks) == (VerdictKind.RANK_FAILED_FIRST, "host_kill", ())
    assert "PIDs 410126, 410127" in v.summary
    assert any("dmesg" in f for f in v.cause.fix)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_the_launcher_signalled_itself_is_a_stop_from_outside(sig):
    text = _kills(100, 101) + f"{_HEAD.format(999)}Main process received {sig}, exiting\n"
    v = run_text(text).verdict
    assert (v.kind, v.cause.cause.kind) == (VerdictKind.LAUNCHER_FAILURE, "stopped_externally")


def test_a_workers_own_error_stands_over_the_kill_lines():
    text = "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n" + _kills(100, 101)
    v = run_text(text).verdict
    assert v.cause is None or v.cause.cause.kind != "host_kill"


@pytest.mark.parametrize("case, culprits", [("kill", [1]), ("raise", [2]), ("hang", [3])])
def test_the_recorded_launcher_consoles_keep_their_verdicts(case, culprits):
    v = run(DATA / "launchers" / "deepspeed" / case / "console.log").verdict
    assert list(v.culprit_ranks) == culprits


def test_the_public_thread_is_a_worker_killed_with_no_traceback():
    """211: three kill lines, the exit line and the OOM killer's record not in the paste."""
    v = run(thread_log("211")).verdict
    assert (v.kind, v.cause.cause.kind) == (VerdictKind.RANK_FAILED_FIRST, "host_kill")


_DIED = ("The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: "
         "Worker unexpectedly exits with a connection error code 2. End of file.")


@pytest.mark.parametrize("after", [
    " There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage.",
    " Some common causes include: (1) the process was killed by the OOM killer due to high memory usage.",
    "",
])
def test_a_ray_actor_no_line_ranks_that_died_is_a_kill_not_its_list_of_guesses(after):
    """Ray's actor error (python/ray/exceptions.py's ActorDiedError, the worker's exit type and detail) for an actor
    no rank table pairs with a PID: a process of the job died with no error of its own. Ray's list of potential
    causes after it is not read as a statement (the OOM killer is its first guess, not its finding)."""
    v = run_text(f"(LLMRayActor pid=585804) {_DIED}{after}\n").verdict
    assert (v.kind, v.cause.cause.kind, v.culprit_ranks) == (VerdictKind.RANK_FAILED_FIRST, "host_kill", ())
    assert "potential" not in v.summary and "common causes" not in v.summary
    # Ray's own logs of that worker first (job/statements.toml's ray_worker_lost), then the host's kernel log
    assert v.next_steps[0].startswith("On the node the worker ran on") and "raylet.out" in v.next_steps[0]
    assert v.next_steps[1].startswith("On that host: `dmesg -T")


def test_a_ray_actor_death_beside_an_error_stays_that_error():
    v = run_text(f"RuntimeError: CUDA error: an illegal memory access was encountered\n{_DIED}\n").verdict
    assert v.cause is None or v.cause.cause.kind != "host_kill"
