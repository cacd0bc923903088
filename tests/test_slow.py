"""A slow rank is not a dead rank: the advice about the timeout must be true of the case.

tests/data/failures/slow_{eval,save,tokenize} are real: tools/make_incidents_slow.sh ran tools/incident_slow.py under
torchrun with gloo on CPU (4 ranks, a 5 s timeout); rank 0 evaluated, saved a checkpoint or tokenised for 15 s while
the others waited, then torchrun stopped it. Nothing failed on rank 0.
"""

from __future__ import annotations

import json

import pytest
from conftest import DATA, run
from test_failures import _golden, _scan, run_text

from ncclcheck.evidence.formats.busy import busy_phase

FAILURES = DATA / "failures"
EXPECTED = DATA / "expected_failures"
PHASES = {"slow_eval": ("eval", "Evaluating:"), "slow_save": ("save", "Saving checkpoint to"),
          "slow_tokenize": ("preprocess", "Running tokenizer on dataset:")}


@pytest.mark.parametrize("name", sorted(PHASES))
def test_real_slow_rank_golden(name, monkeypatch):
    """The whole verdict of console and per-rank logs together equals the reviewed golden JSON."""
    monkeypatch.chdir(FAILURES)
    assert _golden(run(name)) == json.loads((EXPECTED / f"{name}.json").read_text())


@pytest.mark.parametrize("name", sorted(PHASES))
@pytest.mark.parametrize("way", ["console", "logdir"])
def test_slow_rank_from_console_or_its_own_logs(name, way):
    """The console alone and the per-rank logs alone: rank 0 is the culprit, busy, with its own last line quoted,
    and the timeout is said to help (not "raising the timeout will not help")."""
    d = FAILURES / name
    v = run(d / "console.log" if way == "console" else d / "torchrun").verdict
    phase, words = PHASES[name]
    assert (v.kind.value, v.culprit_ranks) == ("lagging_rank", (0,))
    assert "Rank 0 was busy, not dead: its last line is \"" + words in v.summary
    assert "5 s timeout" in v.summary
    steps = " ".join(v.next_steps)
    assert "raising the timeout does help" in steps and "will not help" not in steps
    assert "init_process_group(backend, timeout=" in steps


@pytest.mark.parametrize(("line", "phase"), [
    ("Evaluating:  40%|████      | 20/50 [00:06<00:09,  3.33it/s]", "eval"),
    ("Validation DataLoader 0:  45%|████▌     | 9/20 [00:03<00:04,  2.50it/s]", "eval"),
    ("***** Running Evaluation *****", "eval"),
    ("Saving model checkpoint to output/checkpoint-500", "save"),
    ("[2024-01-01 10:00:00,000] [INFO] [engine.py:3000:save_checkpoint] Saving model checkpoint: out/global_step100",
     "save"),
    ("Running tokenizer on dataset (num_proc=64):  69%|██████▉   | 34170/49703 [10:01<02:06, 122.64 examples/s]",
     "preprocess"),
    ("Map (num_proc=8):  45%|████▌     | 4500/10000 [00:03<00:04, 1350.12 examples/s]", "preprocess"),
    ("Tokenizing Prompts (num_proc=64): 22%|██▏ | 78224/359152 [04:43<14:17, 327.43 examples/s]", "preprocess"),
    ("train: Scanning '../coco/labels/train' images and labels...43718 found, 110 missing, 0 empty, 7 corrupted:  97%|██▉| "
     "43830/45049 [01:07<00:18, 66.12it/s]", "preprocess"),  # YOLOv5's label cache, under torch_distributed_zero_first
    ("[ 0.215007] kvm-pvm: mmio caching disabled (nested host: reported MAXPHYADDR 46)", None),  # a kernel's line
    ("pci_bus 0000:00: scanning bus", None),  # scanning with no progress bar: no work of the job's
    ("Epoch 0:  45%|████▌     | 9/20 [00:03<00:04,  2.50it/s, loss=0.1]", None),
    ("RuntimeError: Error saving checkpoint: disk full", None),
    ("step 3 done", None),
])
def test_what_a_line_says_a_rank_is_busy_with(line, phase):
    assert busy_phase(line) == phase


SLOW_NCCL = (
    "[rank0]:Evaluating:  97%|█████████▋| 970/1000 [29:58<00:01, 0.54it/s]\n"
    + "".join(f"[rank{r}]:[E1122 10:00:00.000000000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
              "operation timeout: WorkNCCL(SeqNum=120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) "
              "ran for 1800083 milliseconds before timing out.\n" for r in range(1, 8))
)


@pytest.mark.parametrize(("extra", "want"), [
    ("", "dist.init_process_group(backend, timeout="),
    ('[rank0]:  File "/opt/conda/lib/python3.10/site-packages/transformers/trainer.py", line 1859, in train\n',
     "TrainingArguments(ddp_timeout=7200)"),
    ('[rank0]:  File "/usr/lib/python3/site-packages/lightning/pytorch/trainer/trainer.py", line 44, in fit\n',
     "DDPStrategy(timeout="),
    ('[rank0]:  File "/usr/lib/python3/site-packages/deepspeed/runtime/engine.py", line 1976, in backward\n',
     "deepspeed.init_distributed(timeout="),
    ('[rank0]:  File "/usr/lib/python3/site-packages/accelerate/accelerator.py", line 12, in prepare\n',
     "InitProcessGroupKwargs(timeout="),
])
def test_the_longer_timeout_is_said_in_the_jobs_framework(extra, want):
    """Eight NCCL ranks, rank 0 evaluating past a 30 min timeout: the fix names the framework's own setting, and the
    timeout's value is said to be a framework default."""
    v = run_text(extra + SLOW_NCCL).verdict
    assert (v.kind.value, v.culprit_ranks) == ("lagging_rank", (0,))
    steps = " ".join(v.next_steps)
    assert want in steps and "30 min is the default" in steps
    assert "explain --numel 1" not in " ".join(f.fix or "" for f in v.findings)


def test_a_rank_that_died_while_busy_is_dead():
    """The same console, but rank 0 was killed by SIGKILL while evaluating: dead, not slow; the timeout will not
    help."""
    v = run_text(SLOW_NCCL + "[rank0]: Fatal Python error: Segmentation fault\n").verdict
    assert v.kind.value == "rank_failed_first"
    assert "busy, not dead" not in v.summary
    assert any("will not help" in s for s in v.next_steps)


def test_a_busy_line_no_rank_names_is_a_finding_not_a_culprit():
    """A progress bar without a rank prefix (one node's console, old torch): no rank is invented; a finding says
    the main process was busy and gives both fixes."""
    text = ("Running tokenizer on dataset:   9%|▊   | 280000/2969526 [29:55<4:48:08, 155.57 examples/s]"
            "[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, "
            "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800328 milliseconds before timing "
            "out.\n")
    s = _scan(text)
    assert [(f.who.rank, f.value) for f in s.facts if f.key == "busy"] == [
        (None, "Running tokenizer on dataset: 9%|▊ | 280000/2969526 [29:55<4:48:08, 155.57 examples/s]")]
    v = run_text(text).verdict
    f = next(f for f in v.findings if f.code == "busy-rank")
    assert "names no rank" in f.message and "30 min timeout" in f.message
    assert "preprocess the dataset once before launching" in (f.fix or "")
    assert v.culprit_ranks == ()


def test_the_busy_line_is_read_deep_in_a_log():
    """Past the head the reader reads whole, among thousands of ordinary lines: the rank's last line still counts."""
    filler = "".join(f"[rank0]: step {i} loss 0.{i % 97:02d}\n" for i in range(5000))
    v = run_text(filler + "[rank0]: Saving model checkpoint to out/checkpoint-5000\n" + SLOW_NCCL.split("\n", 1)[1]).verdict
    assert 'its last line is "Saving model checkpoint to out/checkpoint-5000"' in v.summary


def test_two_nodes_eight_ranks_golden(monkeypatch):
    """Two torchrun agents of 4 ranks each (tools/make_incidents_slow.sh, eval_2nodes): rank 0 evaluated while the
    other seven waited. Both consoles and both log directories together: rank 0, busy, its own last bar quoted."""
    monkeypatch.chdir(FAILURES)
    a = run("slow_eval_2nodes")
    assert _golden(a) == json.loads((EXPECTED / "slow_eval_2nodes.json").read_text())
    f = next(f for f in a.verdict.findings if f.code == "root-cause-caveat")
    assert f.message.startswith("torchrun's 'Root Cause' on each node names rank 1 on localhost")


def test_every_busy_word_reaches_the_parser():
    """The reader hands over every line holding a word the parser reads a busy line by, wherever it stands."""
    from ncclcheck.evidence import reader
    from ncclcheck.evidence.formats import busy

    assert {w.encode() for w in busy.WORDS} <= set(reader.WHOLE_WORDS)


@pytest.mark.parametrize("done", ["[rank0]:Evaluating: 100%|██████████| 50/50 [00:15<00:00,  3.33it/s]\n",
                                  "[rank0]: Saving model checkpoint to out/checkpoint-500\n[rank0]: Checkpoint saved\n",
                                  "[rank0]: ***** Running Evaluation *****\n[rank0]: {'eval_loss': 0.51, 'eval_runtime': "
                                  "12.3, 'epoch': 1.0}\n"])
def test_finished_work_is_not_what_the_rank_is_doing(done):
    """A bar at 100%, a "saved" line or the HF Trainer's evaluation metrics end that work: a rank that then hung
    elsewhere is not called busy."""
    v = run_text(done + SLOW_NCCL.split("\n", 1)[1]).verdict
    assert v.culprit_ranks == (0,) and "busy" not in v.summary
    assert not any("raising the timeout does help" in s for s in v.next_steps)


LAUNCHED = DATA / "launchers" / "torchrun"
# tools/launchers/busy_main.sh: rank 0 works alone for 25 s (a tqdm bar) while ranks 1-3 wait in a gloo collective
# with a 10 s timeout; torchrun stops rank 0 after their timeouts. console.log of busy_tokenize is torchrun without
# --tee, as users paste it: rank 0's bar carries no rank, the others' tracebacks carry [rankN]:.
BUSY_MAIN = {"busy_tokenize/console.log": "busy_tokenize_console", "busy_eval/console.log": "busy_eval_console"}


@pytest.mark.parametrize("case", sorted(BUSY_MAIN))
def test_a_main_process_busy_alone_golden(case, monkeypatch):
    """The whole verdict of each recorded console equals the reviewed golden JSON: rank 0, busy, the others waiting."""
    monkeypatch.chdir(LAUNCHED)
    assert _golden(run(case)) == json.loads((EXPECTED / f"{BUSY_MAIN[case]}.json").read_text())


def test_a_bar_no_rank_names_is_the_one_silent_members():
    """Without --tee rank 0's bar names no rank; ranks 1-3 waited in the collective, so the process drawing it while
    they waited is the one member that waited nowhere: rank 0, busy, quoted with the bar's own line."""
    v = run(LAUNCHED / "busy_tokenize" / "console.log").verdict
    assert (v.kind.value, v.culprit_ranks, v.waiting_ranks) == ("lagging_rank", (0,), (1, 2, 3))
    assert 'Rank 0 was busy, not dead: "Running tokenizer on dataset: 48%|' in v.summary
    assert "names no rank, but the ranks that name themselves were waiting" in v.summary
    steps = " ".join(v.next_steps)
    assert "raising the timeout does help" in steps and "10 s is no default" in steps


# PyTorch 1.x-2.1's watchdog line (ProcessGroupNCCL.cpp) names no group, and its [Rank N] is the rank in the group; a
# console without rank prefixes, three ranks timing out at one sequence number and a bar of a fourth process.
OLD_NCCL = "".join(f"[E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught collective operation timeout: "
                   "WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for "
                   f"180032{r} milliseconds before timing out.\n" for r in (2, 1, 3))


def test_a_default_group_rank_states_the_members_below_it():
    """[Rank 3] of the world group says ranks 0-2 are members: rank 0, with no timeout of its own, is the one the
    others waited for, and no line says anything of it: named as the rank to look at, unknown, not guilty
    (job/absent.py)."""
    a = run_text(OLD_NCCL)
    (g,) = a.job.groups
    assert list(g.members) == [0, 1, 2, 3]
    v = a.verdict
    assert (v.kind.value, v.culprit_ranks, v.waiting_ranks, v.unknown_ranks) == (
        "incomplete_evidence", (), (1, 2, 3), (0,))
    assert "the one they waited for is rank 0" in v.summary and "was busy, not dead" not in v.summary


def test_a_busy_bar_beside_old_nccl_timeouts_is_the_missing_members():
    """The same timeouts after a tokenizer bar no prefix names: rank 0 was busy tokenising past the 30 min timeout,
    and the fix is the timeout the framework sets (30 min: the HF Trainer's ddp_timeout among them) or moving the
    work."""
    bar = "Running tokenizer on dataset:   9%|▊   | 280000/2969526 [29:55<4:48:08, 155.57 examples/s]"
    v = run_text(bar + OLD_NCCL).verdict
    assert (v.kind.value, v.culprit_ranks) == ("lagging_rank", (0,))
    assert v.summary.startswith("Ranks 1-3 waited until the 30 min timeout in ALLREDUCE NumelIn=1 (#2); the trail of "
                                "who waits for whom ends at rank 0, the one member of the group with no timeout of "
                                "its own. Rank 0 was busy, not dead:")
    steps = " ".join(v.next_steps)
    assert "ddp_timeout" in steps and "preprocess the dataset once before launching" in steps


def test_the_cli_names_the_busy_rank():
    """analyze-log on the recorded console: exit 1 (a failure found), the busy rank in the report, nothing on
    stderr."""
    from typer.testing import CliRunner

    from ncclcheck.cli import app

    r = CliRunner().invoke(app, ["analyze-log", str(LAUNCHED / "busy_eval" / "console.log")], env={"COLUMNS": "300"})
    assert r.exit_code == 1 and r.stderr == ""
    out = " ".join(r.stdout.replace("│", " ").split())
    assert "verdict: lagging_rank" in out and "Rank 0 was busy, not dead" in out


# tqdm's bar with no room to draw it (ncols=0: tqdm/std.py format_meter returns ``l_bar[:-1] + r_bar[1:]``), one line
# per redraw as a log file or a pasted console keeps it: the counts of a loop no rank prefix names.
def _bar(i: int) -> str:
    return f"Metrics: {100 * i // 32:3d}% {i}/32 [01:{i:02d}<00:25,  2.80s/it]\n"


def test_a_loop_counting_on_after_the_timeouts_is_the_one_silent_member():
    """Ranks 1-3 time out; a loop no rank names counts 23 then 25 of 32 after their timeouts: that process was alive
    and working while they waited, so the one member that waited nowhere (rank 0) was busy, not dead, and the fixes
    are moving the work or a longer timeout (job/slow.py's progress_busy)."""
    v = run_text(_bar(22) + _bar(23) + OLD_NCCL + _bar(24) + _bar(25)).verdict
    assert (v.kind.value, v.culprit_ranks, v.waiting_ranks) == ("lagging_rank", (0,), (1, 2, 3))
    assert "Rank 0 was busy, not dead: a loop's progress that names no rank went on counting after the others had " \
           "timed out (its count was 24/32, then 25/32 at" in v.summary
    assert "after the first timeout at line 3" in v.summary
    steps = " ".join(v.next_steps)
    assert "raising the timeout does help" in steps and "Find the loop that rank ran alone" in steps
    assert "ddp_timeout" in steps  # 30 min: said in every framework that sets it


@pytest.mark.parametrize("after", [
    "",  # nothing after the timeouts
    _bar(23),  # the same count again: a closing bar's redraw (tqdm's close() with leave=True), no work
    # torchrun restarted the workers: the bar that counts again is another attempt's
    "I1128 05:34:04.820000 25692 torch/distributed/elastic/agent/server/api.py:942] [default] Worker group FAILED. "
    "3/3 attempts left; will restart worker group\n" + _bar(0) + _bar(1),
])
def test_a_loop_that_did_not_rise_after_the_timeouts_names_no_one(after):
    """Without a count that rose after the first timeout, nothing says the unnamed process went on working: rank 0
    stays unknown, not guilty (job/absent.py)."""
    v = run_text(_bar(22) + _bar(23) + OLD_NCCL + after).verdict
    assert (v.kind.value, v.culprit_ranks, v.unknown_ranks) == ("incomplete_evidence", (), (0,))
    assert "went on counting" not in v.summary


def test_a_loop_a_rank_prefix_names_is_not_placed_on_another():
    """The same counts under rank 1's prefix are rank 1's own: no process that names no rank went on, and rank 0 is
    not named busy from them."""
    text = _bar(22) + OLD_NCCL + "".join(f"[rank1]:{_bar(i)}" for i in (23, 25))
    v = run_text(text).verdict
    assert 0 not in v.culprit_ranks and "went on counting" not in v.summary


def test_a_recorded_bar_without_room_after_the_timeouts_is_rank_0s():
    """tools/launchers/busy_main.sh's loop case, recorded: rank 0's ncols=0 bar with no description, redrawn with
    carriage returns, goes on from 20/50 (its last redraw before ranks 1-3's gloo tracebacks) to 24/50 after them;
    torchrun stopped it. Its redraws carry no rank (a line that starts with a carriage return is no continuation of
    the traceback above it)."""
    v = run(LAUNCHED / "busy_loop" / "console.log").verdict
    assert (v.kind.value, v.culprit_ranks, v.waiting_ranks) == ("lagging_rank", (0,), (1, 2, 3))
    assert "(its count was 20/50, then 24/50 at" in v.summary
    assert any("10 s is no default" in s for s in v.next_steps)
