"""A collective's own size check (job/sizecheck.py, job/catalogue/collective_size.toml): the rank that raised is the
culprit, its call is named from its traceback with the sizes the call needs.

tests/data/launchers/torchrun/size_{gather,scatter} are real: tools/launchers/size_check.sh ran
tools/launchers/size_job.py under torchrun with gloo on CPU (2 ranks); rank 1 passed a buffer of the wrong size.
"""

from __future__ import annotations

import json

import pytest
from conftest import DATA, run
from test_failures import _golden, run_text
from typer.testing import CliRunner

from ncclcheck.cli import app

T = DATA / "launchers" / "torchrun"
EXPECTED = DATA / "expected_failures"
CASES = {"size_gather": ("all_gather_into_tensor at size_job.py:29", "its output must hold n times its input"),
         "size_scatter": ("reduce_scatter_tensor at size_job.py:32", "its output must hold its input / n")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_size_check_golden(case, monkeypatch):
    """The whole verdict of each recorded console equals the reviewed golden JSON."""
    monkeypatch.chdir(T)
    assert _golden(run(f"{case}/console.log")) == json.loads((EXPECTED / f"{case}.json").read_text())


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_rank_that_raised_is_named_with_its_call(case):
    call, rule = CASES[case]
    v = run(T / case / "console.log").verdict
    assert (v.kind.value, v.culprit_ranks, v.waiting_ranks) == ("collective_mismatch", (1,), (0,))
    assert v.cause is not None and v.cause.cause.kind == "collective_size"
    assert v.summary.startswith(f"Rank 1 called {call} with tensors of the wrong size for its group ({rule}")
    assert any("out.numel() == inp.numel() // dist.get_world_size(g)" in s for s in v.next_steps)


def test_nccls_own_words_name_the_rank_and_the_call():
    """ProcessGroupNCCL's ValueError under a [rankN]: prefix, below the traceback's call: the same verdict."""
    v = run_text('[rank3]:   File "/job/train.py", line 88, in step\n'
                 '[rank3]:   File "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py", line 4000, in '
                 'reduce_scatter_tensor\n'
                 "[rank3]: ValueError: input tensor must be the same size as output size times world size\n").verdict
    assert (v.kind.value, v.culprit_ranks) == ("collective_mismatch", (3,))
    assert v.summary.startswith("Rank 3 called reduce_scatter_tensor at train.py:88 with tensors of the wrong size")


def test_the_cli_reports_the_call():
    r = CliRunner().invoke(app, ["analyze-log", str(T / "size_gather" / "console.log")], env={"COLUMNS": "300"})
    assert r.exit_code == 1 and r.stderr == ""
    out = " ".join(r.stdout.replace("│", " ").split())
    assert "Rank 1 called all_gather_into_tensor at size_job.py:29" in out and "cause: collective_size" in out
