"""The last resort of issue 41 section 1: an input that ends on an error line of a form no source reads is
incomplete evidence quoting that line, never ``no_failure`` (evidence/formats/unread.py, job/unreadline.py)."""

from __future__ import annotations

import json

import pytest
from conftest import DATA
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.evidence.formats import unread

runner = CliRunner()


@pytest.mark.parametrize("line", [
    "CUDA backend failed to initialize: jaxlib/cuda/versions_helpers.cc:90: ... CUDA_ERROR_NOT_INITIALIZED",
    "rc_verbs_iface.c:67   send completion with error: local protection error",
    "CNTK: Caught Win32 exception 0xc0000005: Access violation.",
    'raise RuntimeError("Distributed package doesn\'t have NCCL " "built in")',
    "Unable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices.",
    "Segmentation fault (core dumped)",
    "job aborted:",
    "terminate called after throwing an instance of 'gloo::IoException'",
    "terminate called without an active exception",
])
def test_a_line_stating_an_error_in_words_is_one(line):
    assert unread.says_error(line)


@pytest.mark.parametrize("line", [
    "Epoch 3: train loss 0.412, 0 errors",
    "no errors found in 12 shards",
    "errors: 0 warnings: 3",
    "WARNING: failed to load image extension, falling back",
    "[W1122 04:01:02.000 ProcessGroupNCCL.cpp:1234] Warning: something failed but went on",
    "INFO:trainer:retrying after a failed download",
    '  File "/usr/lib/python3/site-packages/foo/errors.py", line 12, in fail',
    "error_file: <N/A>",
    "Evaluation criterion: errs = ClassificationError",
    "set on_failure=continue and ignore errors",
    "| Trial name               |   # failures | error file   |",
    "so the console stops with its workers' lines and no ending, while nothing failed: analyze-log says",
])
def test_a_warning_a_count_of_none_an_identifier_or_a_frame_is_not(line):
    assert not unread.says_error(line)


def _verdict(tmp_path, text: str) -> dict:
    log = tmp_path / "console.log"
    log.write_text(text)
    result = runner.invoke(app, ["analyze-log", str(log), "--json"])
    return json.loads(result.stdout)["verdict"]


def test_an_input_ending_on_an_unread_error_is_incomplete_evidence_quoting_it(tmp_path):
    lines = ["Process 0: starting", "Global devices: [CpuDevice(id=0), CpuDevice(id=1)]",
             "CUDA backend failed to initialize: INTERNAL: no supported devices found for platform CUDA",
             "Process 0: done"]
    v = _verdict(tmp_path, "\n".join(lines) + "\n")
    assert v["kind"] == "incomplete_evidence"
    assert v["cause"]["kind"] == "error_unread"
    assert v["culprit_ranks"] == []
    assert v["stated"]["source"] == "unread"
    assert v["stated"]["at"].endswith("console.log:3")
    assert v["next_steps"][0] == ('Read the error line: "CUDA backend failed to initialize: INTERNAL: no supported '
                                  f'devices found for platform CUDA" ({tmp_path / "console.log"}:3).')
    assert any("previous release" in s for s in v["next_steps"])


def test_an_error_the_input_went_far_past_is_not_read(tmp_path):
    lines = ["CUDA backend failed to initialize: INTERNAL: no supported devices found for platform CUDA",
             *(f"step {i} loss 0.5" for i in range(unread.TAIL + 5))]
    v = _verdict(tmp_path, "\n".join(lines) + "\n")
    assert v["kind"] == "no_failure"
    assert v["stated"] is None


def test_a_failure_the_rules_read_keeps_its_verdict(tmp_path):
    lines = ["[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered",
             "mlx5: got completion with error:"]
    v = _verdict(tmp_path, "\n".join(lines) + "\n")
    assert v["kind"] == "rank_failed_first"
    assert v["cause"]["kind"] != "error_unread"


def test_a_console_that_stops_on_an_unread_error_quotes_it_not_a_stop_with_no_failure(tmp_path):
    """The rules that read a console stopping with no failure line (cut off, stalled, stopped at set-up) must not say
    that no line says the job failed while its last lines state an error: the line is quoted (job/verdict.py's order)."""
    console = (DATA / "launchers" / "accelerate" / "cut" / "console.log").read_text()
    assert _verdict(tmp_path, console)["cause"]["kind"] == "console_cut"
    v = _verdict(tmp_path, console + "shardmap: unable to map the staging arena, giving up\n")
    assert v["kind"] == "incomplete_evidence"
    assert v["cause"]["kind"] == "error_unread"
    assert "unable to map the staging arena" in v["summary"]
