"""Workers known only by the exit status a launcher's table gives them (job/exitonly.py): the step says where their
error is and what status 1 most often is, and no step says so once their own error is in the inputs.

Recorded: tests/data/exitonly/README.md (torchrun --redirects 3, each worker raising after init_process_group)."""

from __future__ import annotations

from conftest import DATA, run, run_text

RUN = DATA / "exitonly" / "redirected"
WORDS = "No line of these inputs holds the workers' own error"


def test_the_table_alone_says_where_the_error_is():
    v = run(RUN / "console.log").verdict
    assert v.kind.value == "rank_failed_first"
    step = v.next_steps[0]
    assert step.startswith(WORDS) and "ranks 0-1 exited with status 1" in step
    assert "@record" in step and "--redirects 3 --tee 3" in step and "out of memory" in step


def test_the_workers_own_error_needs_no_such_step():
    v = run(RUN / "console.log", RUN / "attempt_0").verdict
    assert "ValueError" in v.summary
    assert not any(s.startswith(WORDS) for s in v.next_steps)


def test_another_status_names_no_python_exception():
    """Written from Composer's launcher line ("Global rank N (PID P) exited with code C"): status 3 is no uncaught
    exception's, so the step does not say what status 1 is."""
    v = run_text("Global rank 1 (PID 787) exited with code 3\n").verdict
    step = next((s for s in v.next_steps if s.startswith(WORDS)), "")
    assert "exited with status 3" in step and "out of memory" not in step
