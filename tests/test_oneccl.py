"""oneCCL's own error lines (evidence/formats/oneccl.py): its logger's error level and its exception's what(), each
release's form, read as the process's stated reason; its transport layer failing at set-up and libfabric offering it
no provider, its local rank and count unknown to it and a setting it refused are set-up failures whose fix names the
settings (job/statements.toml `oneccl_*`). Written from
the formats: tests/data/stated_formats/oneccl.log (README there)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_text

from ncclcheck.evidence.formats import oneccl
from ncclcheck.evidence.types import Loc
from ncclcheck.job.statements import told

WRITTEN = (Path(__file__).parent / "data" / "stated_formats" / "oneccl.log").read_text().splitlines()
ENTRIES = ["oneccl_no_provider", "oneccl_no_provider", "oneccl_transport_init", "oneccl_transport_init",
           "oneccl_transport_init", "oneccl_transport_init", "oneccl_local_coord", "oneccl_local_coord",
           "oneccl_local_coord", "oneccl_env_setting", "oneccl_env_setting"]


def _read(line: str) -> list[str]:
    return [c.text for c in oneccl.Lines().feed(line, Loc("x", 1))]


@pytest.mark.parametrize(("line", "entry"), list(zip(WRITTEN, ENTRIES, strict=True)))
def test_each_form_is_a_ccl_clue_of_its_mechanism(line, entry):
    """Every release's form of the logger's error and of the exception is one clue, its words from the source file
    (or the bare message) on, and those words are the entry's mechanism; alone, the line is a set-up failure."""
    (text,) = _read(line)
    assert not text.startswith(("|", "oneCCL")) and told(text) is not None and told(text).id == entry
    v = run_text(line + "\n").verdict
    assert v.kind.value == "setup_failure" and v.stated is not None and v.stated.source in ("ccl", "what")


def test_no_provider_at_init_names_libfabrics_provider_settings():
    """The error line and the exception after it, in the order oneCCL prints them: a set-up failure whose steps
    name libfabric's provider path and oneCCL's other transport."""
    v = run_text("\n".join([WRITTEN[0], "terminate called after throwing an instance of 'ccl::v1::exception'",
                            WRITTEN[3]]) + "\n").verdict
    steps = " ".join(v.next_steps)
    assert v.kind.value == "setup_failure"
    assert "FI_PROVIDER_PATH" in steps and "CCL_ATL_TRANSPORT=mpi" in steps and "fi_info" in steps


@pytest.mark.parametrize(("line", "said"), [
    ("2020:12:01-08:00:00:(12345) |ERROR| atl_ofi.cpp:81  atl_ofi_get_prov_list fi_getinfo error, prov_name verbs",
     "atl_ofi.cpp:81  atl_ofi_get_prov_list fi_getinfo error, prov_name verbs"),  # 2021.1-2021.3's LOG_ERROR
    ("RuntimeError: oneCCL: exec.cpp:ccl_executor:113: EXCEPTION: failed to start worker # 0",
     "exec.cpp:ccl_executor:113: EXCEPTION: failed to start worker # 0"),  # 2021.1-2021.3's CCL_THROW (src/exec)
])
def test_the_first_releases_forms(line, said):
    """2021.1-2021.3 put two spaces and no colon around the logger's function, and the function before the line in
    an exception's site."""
    assert _read(line) == [said]


@pytest.mark.parametrize("line", [
    "2025:03:04-10:11:12:( 4021) |CCL_WARN| MPI_Finalize has been called before CCL finalization",
    "2025:03:04-10:11:12:( 4021) |CCL_INFO| native Intel MPI BF16 is not available",
    "| ERROR | training.py:12 - loss is nan",
    "oneCCL: version 2021.13.1",
])
def test_warnings_info_and_other_words_are_not_read(line):
    """oneCCL's warning and info levels state no failure, another logger's ERROR column is not oneCCL's tag, and a
    line naming oneCCL without a failure is no exception's message."""
    assert _read(line) == []


def test_local_rank_unknown_at_init_names_the_launchers_variables():
    """oneCCL's check of its local rank and count (2021.10-2021.11's CCL_THROW_IF_NOT: the logged condition, then
    the exception with its message) under a launcher that is not MPI's: a set-up failure whose steps name
    CCL_PROCESS_LAUNCHER with CCL_LOCAL_RANK and CCL_LOCAL_SIZE, and the sockets exchange."""
    v = run_text("\n".join([WRITTEN[6], "terminate called after throwing an instance of 'ccl::v1::exception'",
                            WRITTEN[7]]) + "\n").verdict
    steps = " ".join(v.next_steps)
    assert v.kind.value == "setup_failure"
    assert all(w in steps for w in ("CCL_PROCESS_LAUNCHER=none", "CCL_LOCAL_RANK", "CCL_LOCAL_SIZE",
                                    "CCL_ZE_IPC_EXCHANGE=sockets"))


@pytest.mark.parametrize("line", [
    "[W1129 08:00:00.000000 4021 torch/csrc/distributed/c10d/env.cpp:17] TORCH_NCCL_ASYNC_ERROR_HANDLING unset",
    "2025:03:04-10:11:12:( 4021) |CCL_ERROR| sched.cpp:120 set_local_coordinate: condition x failed",
])
def test_other_files_and_functions_are_no_set_up_entry(line):
    """PyTorch's own env.cpp warning is no oneCCL setting, and a function whose name only begins like the local-rank
    check's is not it."""
    said = told(line)
    assert said is None or said.id not in ("oneccl_env_setting", "oneccl_local_coord")
