"""A job shown launched or running whose lines then stop with no ending and no failure (job/ending.py's ``stalled``):
torchrun's OMP_NUM_THREADS banner (torch/distributed/run.py config_from_args) and tqdm's bars (tqdm/std.py
format_meter, Lightning's descriptions) read as a stall whose evidence is incomplete, saying where it stopped; a loop
at its total, a program's word that its work is done, a paste with no sign the job ran stay ``no_failure``. Recorded:
tests/data/gloo_mechanisms/stall_launch and stall_bar (README there)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run

from ncclcheck.job.model import VerdictKind

GLOO = Path(__file__).parent / "data" / "gloo_mechanisms"
_WARN = ("Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being "
         "overloaded, please further tune the variable for optimal performance in your application as needed. ")
_STARS = "*****************************************"
# the banner in each of its logger's prefixes: the logging module's default (1.9-2.1), torch 2.2-2.3's, glog's (2.4 on)
PREFIXES = ("WARNING:torch.distributed.run:", "[2024-03-22 03:18:07,974] torch.distributed.run: [WARNING] ",
            "W0322 03:18:07.974000 140213 torch/distributed/run.py:793] ")


def _stall(v):
    assert v.kind is VerdictKind.INCOMPLETE and v.cause is not None and v.cause.cause.kind == "console_stalled", \
        v.summary
    return v


def _fix(a) -> str:
    return "\n".join([*a.verdict.next_steps, *a.verdict.cause.cause.fix])


def test_a_recorded_launch_whose_workers_wait_for_a_world_never_started_stops_at_launch():
    a = run(GLOO / "stall_launch" / "console.log")
    v = _stall(a.verdict)
    assert "at launch" in v.summary and "console.log:3" in v.summary, v.summary
    assert "WORLD_SIZE" in _fix(a) and "device_count()" in _fix(a)


def test_a_recorded_bar_that_stops_mid_epoch_is_a_stall_mid_run():
    v = _stall(run(GLOO / "stall_bar" / "console.log").verdict)
    assert "mid-run" in v.summary and "12/400" in v.summary and "console.log:17" in v.summary, v.summary


@pytest.mark.parametrize("prefix", PREFIXES)
def test_the_banner_in_each_of_its_prefixes_is_a_launch(write, prefix):
    log = write("console.log", f"{prefix}", f"{prefix}{_STARS}", f"{prefix}{_WARN}", f"{prefix}{_STARS}")
    assert "at launch" in _stall(run(log).verdict).summary


def test_workers_lines_after_the_banner_are_after_launch(write):
    log = write("console.log", *(f"{PREFIXES[2]}{x}" for x in ("", _STARS, _WARN, _STARS)),
                *(f"loading shard {i}" for i in range(6)))
    assert "after launch" in _stall(run(log).verdict).summary


def test_a_sanity_check_bar_at_zero_is_the_first_step_and_names_the_isolating_runs(write):
    log = write("console.log", "  | Name  | Type | Params", "0 | model | Module | 437 M",
                "Sanity Checking: |          | 0/? [00:00<?, ?it/s]")
    a = run(log)
    assert "at the first step" in _stall(a.verdict).summary
    assert all(w in _fix(a) for w in ("NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", "NCCL_NET_GDR_LEVEL=0", "py-spy dump"))


def test_a_bar_at_zero_of_a_known_total_is_the_first_step(write):
    log = write("console.log", "Epoch 0:   0%|          | 0/400 [00:00<?, ?it/s]")
    assert "at the first step" in _stall(run(log).verdict).summary


@pytest.mark.parametrize("lines", [
    # a loop at its total: it finished
    ("Epoch 0: 100%|##########| 6/6 [00:00<00:00, 11.15it/s]",),
    # a program's word that its work is done, after a bar part of the way
    ("Epoch 0:  50%|#####     | 3/6 [00:00<00:00, 11.15it/s]", "Training completed. Do not forget to share your model"),
    # a configuration dump: no sign the job ran
    ("Config:", "num_gpus_per_node: 8", "num_nodes: 1", "rank_zero_seed: 17"),
])
def test_a_finished_loop_an_ending_or_no_sign_of_a_run_is_no_failure(write, lines):
    v = run(write("console.log", *lines)).verdict
    assert v.kind is VerdictKind.NO_FAILURE, v.summary


def test_a_failure_after_the_banner_is_the_failure(write):
    log = write("console.log", *(f"{PREFIXES[2]}{x}" for x in ("", _STARS, _WARN, _STARS)),
                "E0322 03:20:07.974000 140213 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: "
                "1) local_rank: 0 (pid: 1764) of binary: /usr/bin/python3")
    v = run(log).verdict
    assert v.kind is not VerdictKind.INCOMPLETE and (v.cause is None or v.cause.cause.kind != "console_stalled")


@pytest.mark.parametrize(("line", "where"), [
    ("Epoch 0/9  ━━━━━━━━━━━━━━╸━━━━━━━━━━━━━━━━━━━━━━ 12/400 0:00:05 • 0:02:40 2.41it/s v_num: 0", "mid-run"),
    ("Sanity Checking DataLoader 0 ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 0/-- 0:00:00 • -:--:-- 0.00it/s",
     "at the first step"),
    # 1.5's columns: "<" between the times, "inf" for a loop of no known length
    ("Epoch 0    ━━━━━━━━━━━━━━━━ 3/inf 0:00:01 < -:--:-- 2.00it/s loss: 0.3", "mid-run"),
])
def test_lightnings_rich_bar_is_read_as_its_tqdm_bar(write, line, where):
    assert where in _stall(run(write("console.log", line)).verdict).summary


def test_lightnings_rich_bar_at_its_total_is_a_finished_loop(write):
    v = run(write("console.log", "Epoch 1/9  ━━━━━━━━━━━━━━━━━━ 400/400 0:02:45 • 0:00:00 2.41it/s")).verdict
    assert v.kind is VerdictKind.NO_FAILURE, v.summary
