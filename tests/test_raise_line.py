"""A traceback's raise source line with its message written out (formats/raiseline.py), and PyTorch's check of the
backend asked for against its build (job/statements.toml's backend_not_built): recorded with torch 2.13 CPU under
torchrun (tests/data/gloo_mechanisms/backend_missing, README there) and written from each release's source line."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run, run_text

from ncclcheck.evidence.formats.raiseline import raised

DATA = Path(__file__).parent / "data"


def test_a_recorded_backend_missing_is_a_setup_failure_with_the_gloo_fix():
    """Both workers asking a build without NCCL for it: a set-up failure of no rank's fault, the fix gloo or a
    build with NCCL."""
    v = run(DATA / "gloo_mechanisms" / "backend_missing" / "console.log").verdict
    assert (v.kind.value, v.culprit_ranks) == ("setup_failure", ())
    assert 'backend="gloo"' in v.next_steps[0] and "WSL2" in v.next_steps[0]


@pytest.mark.parametrize("line", [
    # torch 1.x-2.0: the message in two literals, as the traceback's source line alone
    "raise RuntimeError(\"Distributed package doesn't have NCCL \" \"built in\")",
    # torch 2.1 on, under a torchrun worker's tag
    "[default0]:    raise RuntimeError(\"Distributed package doesn't have NCCL built in\")",
    # the raised message itself, MPI's form
    "RuntimeError: Distributed package doesn't have MPI built in. MPI is only included if you build PyTorch from "
    "source on a host that has MPI installed.",
])
def test_each_form_of_the_backend_check_is_a_setup_failure(line):
    v = run_text(line + "\n").verdict
    assert v.kind.value == "setup_failure", v.summary
    assert "gloo" in v.next_steps[0]


def test_the_raise_line_joins_its_literals_as_python_does():
    assert raised("    raise ValueError('a ' \"b\")") == "ValueError: a b"
    assert raised("raise RuntimeError(f\"rank {rank} failed\")") is None  # an f-string is not the message printed
    assert raised("raise RuntimeError(msg)") is None
    assert raised("raise RuntimeError('Some NCCL operations have failed or timed out.')") is None  # a cascade


def test_a_whole_traceback_is_quoted_from_its_exception_line():
    """The exception's own line is quoted where the traceback has it: the raise line ranks after it."""
    v = run_text('Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
                 '    raise ValueError("batch size must be positive")\n'
                 "ValueError: batch size must be positive\n").verdict
    assert ":4)" in v.summary and "the raise in its traceback" not in v.summary, v.summary
