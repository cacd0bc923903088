"""UCX's and rdma-core's mlx5 provider's lines for a work completion that failed: the status in words alone, read as
the InfiniBand/RoCE transport error it is (cause ib_error), worded by its status (job/statements.toml's ib_wc_*).

Every line is written from the format strings of each UCX release that prints it (openucx/ucx src/uct/ib/rc/verbs/
rc_verbs_iface.c, src/uct/ib/base/ib_iface.h, src/uct/ib/dc/verbs/dc_verbs.c, src/uct/ib/ud/verbs/ud_verbs.c,
src/uct/ib/mlx5/ib_mlx5_log.c, 1.2 to 1.22) and rdma-core's (providers/mlx5/cq.c), behind UCX's log prefix
(src/ucs/debug/log.c ucs_log_default_handler) where UCX prints it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.evidence.wcstatus import MLX5_WORDS, WC_STATUS, completion_error
from ncclcheck.job.statements import STATEMENTS

_UCX = "[1560512044.374526] [gpu1:12345:0]   rc_verbs_iface.c:124  UCX  ERROR "

# (the line, the status it states): each release's form of each transport's line
FORMS = [
    # rc_verbs 1.3-1.7, 1.8-1.11, 1.12 on; 1.2's capitalised form
    (f"{_UCX}send completion with error: local protection error", 4),
    (f"{_UCX}send completion with error: transport retry counter exceeded qpn 0x1a4 wrid 0x12 vendor_err 0x81", 12),
    (f"{_UCX}send completion with error: remote access error [qpn 0x1a4 wrid 0x12 vendor_err 0x88]", 10),
    ("rc_verbs_iface.c:68   Send completion with error: RNR retry counter exceeded", 13),
    # ib_iface's UCT_IB_IFACE_VERBS_COMPLETION_MSG (1.3 on), 1.2's receive form, the XRQ's
    ("ib_iface.h:565  Fatal: Receive completion[0] with error on mlx5_0/0x55d1c2a0: Work Request Flushed Error, "
     "vendor_err 0xf5 wr_id 0x7", 5),
    ("Receive completion with error: local length error", 1),
    ("Receive completion with error on XRQ: local QP operation error", 2),
    # dc_verbs 1.3-1.5, ud_verbs
    ("Send completion with error on qp 0x1a4: remote operation error syndrome 0x14", 11),
    ("Send completion (wr_id=0x12 with error: bad response error ", 7),
    # the mlx5 transports: 1.8 on, 1.5, 1.2-1.4
    (f"{_UCX}Local protection error on mlx5_0:1/IB (synd 0x4 vend 0x51 hw_synd 0/0)", 4),
    ("Transport retry count exceeded on mlx5_2:1/RoCE (synd 0x15 vend 0x81 hw_synd 0/0)", 12),
    ("Remote access (synd 0x13 vend 0x88 hw_synd 0/0) opcode RDMA_WRITE", 10),
    ("Error on QP 0x1a wqe[12]: Receive-no-ready retry count exceeded (synd 0x16 vend 0x0) opcode SEND", 13),
]


@pytest.mark.parametrize(("line", "n"), FORMS)
def test_each_forms_words_read_as_their_status(line, n):
    assert completion_error(line) == (n, WC_STATUS[n][0])


@pytest.mark.parametrize("n", [n for n in WC_STATUS if n])
def test_every_status_words_read_back_in_every_verbs_form(n):
    words = WC_STATUS[n][1]
    for line in (f"send completion with error: {words} [qpn 0x1 wrid 0x2 vendor_err 0x3]",
                 f"Send completion[3] with error on mlx5_1/0x1: {words}, vendor_err 0x0 wr_id 0x0",
                 f"Send completion (wr_id=0x5 with error: {words} "):
        assert completion_error(line) == (n, WC_STATUS[n][0]), line


@pytest.mark.parametrize(("words", "n"), sorted(MLX5_WORDS.items()))
def test_every_mlx5_syndrome_word_reads_back_with_or_without_error(words, n):
    said = words[:1].upper() + words[1:]
    for line in (f"{said} error on mlx5_0:1/IB (synd 0x4 vend 0x51 hw_synd 0/0)",
                 f"Error on QP 0x1a wqe[012]: {said} (synd 0x4 vend 0x51) opcode SEND"):
        assert completion_error(line) == (n, WC_STATUS[n][0]), line


@pytest.mark.parametrize("line", [
    "kernel completion with error: see the log above",  # words no status has
    "Send completion with error: ",  # none
    "step 12 completed with error: loss is nan",
    "(synd 0x4 vend 0x51 hw_synd 0/0)",  # no words before it
])
def test_lines_that_state_no_status_read_none(line):
    assert completion_error(line) is None


def _verdict(tmp_path: Path, text: str) -> dict:
    path = tmp_path / "osu.log"
    path.write_text(text)
    import json
    result = CliRunner().invoke(app, ["analyze-log", "--json", str(path)])
    return json.loads(result.stdout)["verdict"]


@pytest.mark.parametrize(("line", "n", "entry"), [
    (FORMS[0][0], 4, "ib_wc_local_protection"),
    (FORMS[9][0], 4, "ib_wc_local_protection"),
    (FORMS[1][0], 12, "ib_wc_retry_exceeded"),
    (FORMS[10][0], 12, "ib_wc_retry_exceeded"),
    (FORMS[2][0], 10, "ib_wc_remote_access"),
    (FORMS[3][0], 13, "ib_wc_rnr_retry"),
    (FORMS[12][0], 13, "ib_wc_rnr_retry"),
    (FORMS[4][0], 5, "ib_wc_flushed"),
])
def test_a_ucx_completion_error_is_the_transports_failure_worded_by_its_status(tmp_path, line, n, entry):
    """An OSU benchmark's output with UCX's line: ib_error (nccl_error), the status's meaning quoted, its fix first."""
    v = _verdict(tmp_path, f"# OSU MPI-CUDA Bandwidth Test v5.6.1\n# Size      Bandwidth (MB/s)\n{line}\n")
    means = next(s for s in STATEMENTS if s.id == entry).means
    assert (v["kind"], v["cause"]["kind"]) == ("nccl_error", "ib_error")
    assert f"that is {means}" in v["summary"]
    assert v["next_steps"][0] == next(s for s in STATEMENTS if s.id == entry).fix[0]


def test_a_local_protection_error_under_ucx_names_its_gpudirect_switch(tmp_path):
    v = _verdict(tmp_path, FORMS[0][0] + "\n")
    assert "UCX_IB_GPU_DIRECT_RDMA=no" in v["next_steps"][0] and "ACS" in v["next_steps"][0]


def test_the_mlx5_providers_own_line_is_a_completion_error_with_no_status(tmp_path):
    """rdma-core's mlx5 provider's line before its CQE dump names no status: the transport's failure, no status's
    wording."""
    v = _verdict(tmp_path, "mlx5: gpu1: got completion with error:\n00000000 00000000 00000000 00000000\n")
    assert (v["kind"], v["cause"]["kind"]) == ("nccl_error", "ib_error")
    assert "that is" not in v["summary"]
