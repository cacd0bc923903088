"""argparse refusing a program's command line (evidence/formats/cmdline.py): the process exits with status 2 before
any work, and the line, not the exit code, is the reason; torch.distributed.launch's `--local-rank` refused is the
stated line that names the launcher (job/statements.toml, launch_local_rank_argument).

The line forms are written from Lib/argparse.py's format strings (ArgumentParser.error; the messages of
parse_known_args and _get_values); tests/data/launch_argv is a real torch.distributed.launch run on CPU.
"""

from __future__ import annotations

import pytest
from conftest import DATA, run, run_text
from hypothesis import given
from hypothesis import strategies as st

from ncclcheck.evidence.formats import cmdline

# (line as printed, the words the clue keeps): each message argparse prints, with each form of its program's name.
FORMS = (
    ("train.py: error: unrecognized arguments: --local_rank=0", "unrecognized arguments: --local_rank=0"),
    ("torchrun: error: the following arguments are required: training_script, training_script_args",
     "the following arguments are required: training_script, training_script_args"),
    ("main.py: error: argument --lr: invalid float value: 'fast'", "argument --lr: invalid float value: 'fast'"),
    ("__main__.py: error: argument --mode: invalid choice: 'x' (choose from 'a', 'b')",
     "argument --mode: invalid choice: 'x' (choose from 'a', 'b')"),
    ("python3 -m train: error: unrecognized arguments: --foo", "unrecognized arguments: --foo"),
    ("[rank1]: finetune.py: error: unrecognized arguments: --local-rank=1", "unrecognized arguments: --local-rank=1"),
    ("3: pretrain_gpt.py: error: the following arguments are required: --data-path",
     "the following arguments are required: --data-path"),
)


@pytest.mark.parametrize(("line", "words"), FORMS)
def test_each_form_is_the_processs_own_failure_quoted_with_its_meaning(line, words):
    assert cmdline.message(line) == words
    v = run_text(f"usage: train.py [-h]\n{line}\n").verdict
    assert v.kind.value == "rank_failed_first" and v.cause is not None and v.cause.cause.kind == "stated_reason"
    assert v.stated is not None and v.stated.source == "argparse" and v.stated.text == words


def test_a_ranks_prefix_names_it():
    v = run_text("[rank1]: finetune.py: error: unrecognized arguments: --local-rank=1\n").verdict
    assert v.culprit_ranks == (1,) and v.stated is not None and v.stated.rank == 1


@pytest.mark.parametrize("line", ["train.py: error: unrecognized arguments: --local-rank=0",
                                  "train.py: error: unrecognized arguments: --epochs 3 --local_rank=2"])
def test_the_legacy_launchers_argument_names_torchrun_and_both_spellings(line):
    v = run_text(f"{line}\n").verdict
    assert "torch.distributed.launch" in v.stated.meaning and "LOCAL_RANK" in v.stated.meaning
    assert v.next_steps[0].startswith("Launch with torchrun")
    assert '"--local-rank", "--local_rank"' in v.next_steps[0]


def test_another_refused_argument_is_no_launchers_fault():
    v = run_text("train.py: error: unrecognized arguments: --epoch=3\n").verdict
    assert "argument parser" in v.stated.meaning and "torch.distributed.launch" not in v.stated.meaning


@pytest.mark.parametrize("line", [
    "RuntimeError: error: cannot open file",  # a traceback's last line: an exception's name, not a program's
    "ValueError: error: bad value",
    "src/kernel.cu(12): error: identifier undefined",  # a compiler's, with a place in parentheses
    "model.cc:12:5: error: expected ';'",  # gcc's file:line:column
    "see train.py: error: messages in the docs",  # a sentence that quotes the words mid-line
    "0: slurmstepd-vm: error: Detected 1 oom-kill event(s) in StepId=1.0.",  # another program's own error words
    "slurmstepd: error: *** STEP 12.0 ON node1 CANCELLED AT 2026-11-28T10:00:00 ***",
])
def test_lines_that_are_not_argparses_are_not_read_as_it(line):
    assert cmdline.message(line) is None


def test_a_recorded_legacy_launch_names_both_ranks_and_the_launcher():
    """Real: torch.distributed.launch passes --local-rank=N to a script that knows only --epochs; both ranks exit 2
    and torchrun's agent reports them (tests/data/launch_argv/README.md)."""
    v = run(DATA / "launch_argv" / "console.log").verdict
    assert (v.kind.value, v.culprit_ranks) == ("rank_failed_first", (0, 1))
    assert v.cause is not None and v.cause.cause.kind == "stated_reason"
    assert v.stated is not None and v.stated.text.startswith("unrecognized arguments: --local-rank=")
    assert "exited with exit code 2" in v.summary and "argument parser says why" in v.summary
    assert v.next_steps[0].startswith("Launch with torchrun")


@given(st.text(max_size=300))
def test_any_text_is_read_or_refused_without_error(text):
    said = cmdline.message(text)
    assert said is None or (said and said in text)
