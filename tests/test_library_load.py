"""A shared library the process cannot load, in the dynamic loader's words and its callers': a set-up failure of the
host's libraries (no rank's fault), whose fix names the variable the line says to set and says to install the
library. Recorded: tests/data/gloo_mechanisms/library_missing (README there); written from the formats:
tests/data/stated_formats/library_load.log (README there)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run, run_text

from ncclcheck.job.causes import one_line
from ncclcheck.job.statements import told

DATA = Path(__file__).parent / "data"
WRITTEN = (DATA / "stated_formats" / "library_load.log").read_text().splitlines()


def test_a_recorded_library_missing_on_every_rank_is_the_hosts_setup():
    """Both ranks' glibc `cannot open shared object file` under torchrun: one set-up failure, no culprit, and the
    fix says to install the library or point the program at it."""
    v = run(DATA / "gloo_mechanisms" / "library_missing" / "console.log").verdict
    assert (v.kind.value, v.culprit_ranks) == ("setup_failure", ())
    steps = " ".join(v.next_steps)
    assert "libnccl2" in steps and "LD_LIBRARY_PATH" in steps


@pytest.mark.parametrize(("line", "entry"), list(zip(WRITTEN, ["library_wrong_class", "library_version_not_found",
                                                          "library_not_found", "library_not_found",
                                                          "library_not_found", "library_not_found"], strict=True)))
def test_each_loader_form_is_its_entry(line, entry):
    """Each line of the loader's or a caller's format is read as its mechanism, and alone as a set-up failure."""
    said = told(line)
    assert said is not None and said.id == entry
    assert run_text(line + "\n").verdict.kind.value == "setup_failure"


@pytest.mark.parametrize("line", WRITTEN[4:])
def test_the_variable_the_line_names_is_quoted_in_the_fix(line):
    """vLLM's line names VLLM_NCCL_SO_PATH without a value, in the newest release's words and in 0.4's: the first
    step names it (0.5's names it past the 300 characters a kept line holds: the general step names the variable)."""
    v = run_text(line + "\n").verdict
    assert v.next_steps[0].startswith("Set VLLM_NCCL_SO_PATH, as the line itself says")


def test_a_long_lines_named_setting_survives_the_quote():
    """A line cut to its first 200 characters would lose the variable it says to set: the sentence naming it is kept."""
    quoted = one_line(WRITTEN[5])
    assert "VLLM_NCCL_SO_PATH to point to the correct nccl library path." in quoted and len(quoted) < 300
    assert one_line("x" * 250) == "x" * 197 + "..."


@pytest.mark.parametrize("line", [
    # NCCL's own notice that no network plugin was found (INFO, src/net.cc): it goes on with its internal transports.
    "node1:44:44 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or "
    "directory No plugin found (libnccl-net.so), using internal implementation",
    "node1:44:44 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
])
def test_nccls_notice_of_no_plugin_is_no_failure(line):
    """A library NCCL looked for and did without is no failure: the report states none (an NCCL set-up that stops
    there is a log cut in the set-up, as without the line)."""
    v = run_text(line + "\n").verdict
    assert v.kind.value != "setup_failure" and "shared library" not in v.summary
