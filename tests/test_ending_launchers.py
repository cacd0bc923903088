"""How each launcher's console ends (job/ending.py, the launchers' ``CONSOLE`` under evidence/formats/): a console
killed whole mid-run (tests/data/launchers/<launcher>/cut, real runs) is incomplete evidence that names what says
how the job ended under that launcher; a console that shows its end is no failure."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run

from ncclcheck.evidence import formats
from ncclcheck.job.model import VerdictKind

LAUNCHERS = Path(__file__).parent / "data" / "launchers"
# launcher folder -> the name its module's CONSOLE gives
CUT = {"slurm": "Slurm", "mpi": "Open MPI", "deepspeed": "DeepSpeed", "accelerate": "Accelerate",
       "lightning": "Lightning"}


@pytest.mark.parametrize("folder", sorted(CUT))
def test_a_console_killed_whole_mid_run_is_incomplete_and_says_what_to_bring(folder):
    v = run(LAUNCHERS / folder / "cut" / "console.log").verdict
    assert v.kind is VerdictKind.INCOMPLETE and v.cause is not None and v.cause.cause.kind == "console_cut", v.summary
    console = formats.CONSOLES[CUT[folder]]
    assert f"The {console.name} console" in v.summary and f"{console.bring} would." in v.summary, v.summary


@pytest.mark.parametrize("folder", sorted(CUT))
def test_each_launchers_console_is_known_by_its_own_marks(folder):
    """The clean run of the same launcher is its console too (the mark is its, not the cut's) and shows its end."""
    a = run(LAUNCHERS / folder / "clean" / "console.log")
    assert any(f.key == "launched" and f.value == CUT[folder] for s in a.scans for f in s.facts)
    assert a.verdict.kind is VerdictKind.NO_FAILURE, a.verdict.summary


def test_deepspeeds_word_at_a_normal_end_is_an_ending_of_its_own(write):
    """'Process N exits successfully' is the launcher's end even where the workers print no last word."""
    clean = (LAUNCHERS / "deepspeed" / "clean" / "console.log").read_text().splitlines()
    log = write("console.log", *(x for x in clean if " finished" not in x))
    assert run(log).verdict.kind is VerdictKind.NO_FAILURE
    cut = write("cut.log", *(x for x in clean if " finished" not in x and "exits successfully" not in x))
    assert run(cut).verdict.kind is VerdictKind.INCOMPLETE


def test_a_failure_in_a_cut_console_is_the_failure_not_the_cut():
    """srun's report of a killed task decides: the console's end is its failure, not a cut."""
    v = run(LAUNCHERS / "slurm" / "kill" / "console.log").verdict
    assert v.kind is VerdictKind.RANK_FAILED_FIRST and v.culprit_ranks == (1,), v.summary


def test_a_launchers_per_rank_files_that_all_stop_ask_for_its_console():
    """mpirun's --output-filename folders of the cut run: per-rank files of a launcher, all stopped mid-run."""
    v = run(LAUNCHERS / "mpi" / "cut" / "ranks", LAUNCHERS / "mpi" / "cut" / "mpirun.log").verdict
    assert v.kind is VerdictKind.INCOMPLETE and "the launcher's own console" in v.summary, v.summary
