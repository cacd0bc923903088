"""Ray's report of an actor whose worker process died, by its exit type (src/ray/protobuf/common.proto's
WorkerExitType), and Ray's memory monitor's own kill: a SYSTEM_ERROR is a death with no error of the worker's own
(host_kill, whose first step is Ray's own logs of that worker: job/statements.toml's ray_worker_lost), a
NODE_OUT_OF_MEMORY or the memory monitor's OutOfMemoryError is Ray stating the kill for host memory (host_oom), never
a CUDA out-of-memory. Lines written from the GCS's actor death message ("The actor is dead because its worker process
has died. Worker exit type: T Worker exit detail: D"), the raylet's details and python/ray/exceptions.py's
OutOfMemoryError, in each release's words (the memory monitor's "Task was killed ..." up to 2.54, "N worker(s) were
killed ..." from 2.55)."""

from __future__ import annotations

import pytest
from conftest import run_text

DIED = "The actor is dead because its worker process has died. Worker exit type: {type} Worker exit detail: {detail}"
LOST = "Worker unexpectedly exits with a connection error code 2. End of file."
LOW = "Task was killed due to the node running low on memory."


def test_a_worker_that_lost_its_raylet_died_with_no_error_of_its_own_and_ray_logs_say_how() -> None:
    text = DIED.format(type="SYSTEM_ERROR", detail=LOST) + " There are some potential root causes. (1) The process " \
        "is killed by SIGKILL by OOM killer due to high memory usage.\n"
    v = run_text(text).verdict
    assert v.cause is not None
    assert (v.kind.value, v.cause.cause.kind) == ("rank_failed_first", "host_kill")
    assert "/tmp/ray/session_latest/logs/raylet.out" in v.next_steps[0]
    assert "dmesg" in v.next_steps[0]
    assert "potential root causes" not in v.summary  # Ray's guesses are not quoted as the reason


@pytest.mark.parametrize("text", [
    "(TrainController pid=18992) " + DIED.format(type="NODE_OUT_OF_MEMORY", detail=LOW),
    DIED.format(type="SYSTEM_ERROR", detail=LOW + " Memory on the node (IP: 10.0.0.2, ID: ab12) where the task was "
                "running was 32.91GB / 33.28GB (0.988698), which exceeds the memory usage threshold of 0.95."),
    "ray.exceptions.OutOfMemoryError: " + LOW,
    "ray.exceptions.OutOfMemoryError: 2 worker(s) were killed due to the node running low on memory.",
])
def test_rays_memory_monitor_kill_is_stated_host_memory(text: str) -> None:
    v = run_text(text + "\n").verdict
    assert v.cause is not None
    assert v.cause.cause.kind == "host_oom", (v.kind, v.summary)


def test_torchs_out_of_memory_error_is_still_the_gpus() -> None:
    v = run_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n").verdict
    assert v.cause is not None and v.cause.cause.kind == "cuda_oom"


@pytest.mark.parametrize("kind", ["INTENDED_USER_EXIT", "INTENDED_SYSTEM_EXIT", "USER_ERROR"])
def test_an_exit_the_program_or_ray_asked_for_is_no_death_by_signal(kind: str) -> None:
    """ray.kill, exit_actor, an idle worker's reaping, the actor's own exception: not a kill of the host's."""
    v = run_text(DIED.format(type=kind, detail="Worker exits by an user request.") + "\n").verdict
    assert v.cause is None or v.cause.cause.kind not in ("host_kill", "host_oom")
