"""NCCL's InfiniBand/RoCE lines: a verbs call that failed is the transport's set-up (cause ib_setup), worded by its
call and errno; a completion with an error status is a transfer that failed (cause ib_error), worded by its status
number. Every line here is written from NCCL's format strings (src/misc/ibvwrap.cc, src/transport/net_ib*), the
status numbers and words from rdma-core's ibv_wc_status_str; tests/data/verbs/README.md says which each log is.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DATA
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.evidence.reader import resolve
from ncclcheck.job.analyze import analyze
from ncclcheck.job.statements import STATEMENTS, told
from ncclcheck.render.json_out import analysis_json

VERBS = DATA / "verbs"
runner = CliRunner()


def _verdict(path: Path) -> dict:
    problems: list[str] = []
    sources = resolve([str(path)], lambda e: problems.append(str(e)))
    assert not problems
    return analysis_json(analyze(sources, workers=1))["verdict"]


# (log, verdict kind, cause, the table's entry for its line, the action's class, a word of the first fix)
CASES = [
    ("reg_mr_enomem", "setup_failure", "ib_setup", "ib_reg_locked_memory", "fix-config", "ulimit -l"),
    ("create_qp_enomem", "setup_failure", "ib_setup", "ib_create_queue", "fix-config", "ulimit -l"),
    ("open_device", "setup_failure", "ib_setup", "ib_open_device", "fix-config", "/dev/infiniband"),
    ("modify_qp_enodev", "setup_failure", "ib_setup", "ib_modify_qp_no_device", "fix-config", "NCCL_IB_GID_INDEX"),
    ("wc_4_new", "nccl_error", "ib_error", "ib_wc_local_protection", "fix-config", "NCCL_NET_GDR_LEVEL=0"),
    ("wc_10", "nccl_error", "ib_error", "ib_wc_remote_access", "collect-more", "peer's own log"),
    ("wc_13_old", "nccl_error", "ib_error", "ib_wc_rnr_retry", "collect-more", "peer's own log"),
    ("wc_5_rank", "nccl_error", "ib_error", "ib_wc_flushed", "collect-more", "first error of that connection"),
]


@pytest.mark.parametrize(("log", "kind", "cause", "entry", "action", "fix"), CASES, ids=[c[0] for c in CASES])
def test_each_line_is_worded_by_its_call_or_its_status(log, kind, cause, entry, action, fix):
    """The verdict's kind and cause, the line's own mechanism in the summary and first in the fix, and its class."""
    v = _verdict(VERBS / f"{log}.log")
    means = next(s for s in STATEMENTS if s.id == entry).means
    assert (v["kind"], v["cause"]["kind"], v["action"]["kind"]) == (kind, cause, action)
    assert f"that is {means}" in v["summary"]
    assert fix in v["cause"]["fix"][0] and fix in v["next_steps"][0]


@pytest.mark.parametrize("log", ["reg_mr_enomem", "create_qp_enomem", "open_device", "modify_qp_enodev"])
def test_a_failed_verbs_call_is_never_worded_as_a_transfer(log):
    """The set-up's calls moved no data: no completion, status or retry counter in their verdict's words."""
    v = _verdict(VERBS / f"{log}.log")
    words = v["summary"] + " ".join(v["cause"]["fix"]) + v["cause"]["why"]
    assert not any(w in words for w in ("completion came back", "completion error", "status 12", "gave up on a transfer"))


def test_each_status_is_its_own_and_status_12_is_not_the_others():
    """Status 4's verdict says local protection and GPUDirect RDMA, never status 12's retry counter."""
    v = _verdict(VERBS / "wc_4_new.log")
    assert "status 4, local protection error" in v["summary"] and "ACS" in v["cause"]["fix"][0]
    assert "retry counter" not in v["summary"]


def test_the_set_up_wording_reaches_the_report():
    """The text report of a registration refused names the locked-memory limit and NCCL's buffers, and no
    completion error."""
    r = runner.invoke(app, ["analyze-log", str(VERBS / "reg_mr_enomem.log")], catch_exceptions=False,
                      env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert r.exit_code == 1, r.output
    out = " ".join(r.stdout.split())
    assert "verdict: setup_failure" in out and "ib_setup" in out and "ulimit -l" in out and "NCCL_BUFFSIZE" in out
    assert "gave up on a transfer" not in out


# NCCL's three forms of a completion error (2.10-2.19, 2.20-2.28, 2.29 on), and rdma-core's name of each status.
_FORMS = (
    "NET/IB : Got completion from peer 10.0.0.{h}<{p}> with error {n}, opcode 0, len 0, vendor err {v} (Recv)",
    "NET/IB : Got completion from peer 10.0.0.{h}<{p}> with status={n} opcode=1 len=0 vendor err {v} (Send) "
    "localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.{h}",
    "NET/IB: Got completion from peer 10.0.0.{h}<{p}> with status=IBV_WC_{name}({n}) opcode=IBV_WC_SEND(0) "
    "vendor_err={v}  hca mlx5_{h}",
)
_STATUS = {4: ("LOC_PROT_ERR", "ib_wc_local_protection"), 5: ("WR_FLUSH_ERR", "ib_wc_flushed"),
           10: ("REM_ACCESS_ERR", "ib_wc_remote_access"), 12: ("RETRY_EXC_ERR", "ib_wc_retry_exceeded"),
           13: ("RNR_RETRY_EXC_ERR", "ib_wc_rnr_retry")}


@given(st.sampled_from(_FORMS), st.integers(0, 21), st.integers(1, 254), st.integers(1, 65535), st.integers(0, 255))
def test_a_completion_is_read_by_its_own_status_number(form, n, host, port, vendor):
    """Whatever NCCL release printed it and whatever the peer's address, port and vendor error, the entry a
    completion error gets is its status number's, and a status the table has no entry for gets none of theirs."""
    name, entry = _STATUS.get(n, ("GENERAL_ERR", None))
    said = told(form.format(n=n, h=host, p=port, v=vendor, name=name))
    assert (said.id if said is not None else None) == entry
