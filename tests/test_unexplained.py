"""An NCCL failure that no cause explains (issue 41 §1-2): the releases to rule out or to collect, the NCCL_* settings
the job set, the runs that isolate NCCL's paths; PyTorch's watchdog teardown alone, NCCL's graph-capture refusal and
a CUDA call NCCL made that the driver does not serve.

Every line is written from the format of the source that prints it: NCCL's "%s set by environment to %s"
(src/misc/param.cc, src/graph/paths.cc, src/graph/search.cc), its version line (src/init.cc), its WARN header and
CUDACHECK's "Cuda failure '%s'" (src/include/checks.h), its graph-capture warning (src/misc/strongstream.cc),
ncclGetErrorString's words as PyTorch raises them ("NCCL error in: <file>:<line>, <reason>, NCCL version <v>",
torch/csrc/distributed/c10d/NCCLUtils.hpp), and the watchdog's teardown (ProcessGroupNCCL.cpp's
WorkNCCL::handleException under c10's glog header).
"""

from __future__ import annotations

import json

from conftest import run
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.evidence.types import Loc
from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.model import VerdictKind
from ncclcheck.job.statements import told
from ncclcheck.job.unexplained import unexplained

runner = CliRunner()

# PyTorch 1.x's words (torch/lib/c10d/ProcessGroupNCCL.cpp), with no release; 2.x's add ", NCCL version <v>"
INTERNAL = "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:272, internal error"
INTERNAL_V = ("RuntimeError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:317, internal error "
              "- please report this issue to the NCCL developers, NCCL version 2.18.1")
P2P_LEVEL = "node1:2301:2301 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to NVL"
BUFFSIZE = "node1:2301:2301 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 4194304."
TEARDOWN = ("[rank1]:[E1010 06:10:06.885613614 ProcessGroupNCCL.cpp:818] [Rank 1] Some NCCL operations have failed or "
            "timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
            "corrupted/incomplete data.",
            "[rank1]:[E1010 06:10:06.885638456 ProcessGroupNCCL.cpp:832] [Rank 1] To avoid data inconsistency, we are "
            "taking the entire process down.")


def _codes(v) -> list[str]:
    return [f.code for f in v.findings]


def _fix(v, code: str) -> str:
    return next(f.fix for f in v.findings if f.code == code) or ""


def _diagnosis(kind: str, line: str) -> Diagnosis:
    return Diagnosis(cause(kind), (), line, Loc("a.log", 1), (Loc("a.log", 1),), line, None, told(line))


def test_a_failure_is_unexplained_only_where_no_cause_says_more_than_that_it_failed():
    assert unexplained(VerdictKind.NCCL_ERROR, None)
    assert unexplained(VerdictKind.SETUP_FAILURE, _diagnosis("nccl_no_reason", "NCCL error: unhandled cuda error"))
    assert not unexplained(VerdictKind.SETUP_FAILURE, _diagnosis("cuda_oom", "CUDA out of memory"))
    # a stated line whose mechanism the table knows with a fix of its own explains it
    locked = "Call to ibv_reg_mr failed with error Cannot allocate memory"
    assert not unexplained(VerdictKind.SETUP_FAILURE, _diagnosis("stated_reason", locked))


def test_an_internal_error_names_each_setting_the_job_set_and_the_isolating_runs(write):
    v = run(write("rank0.log", P2P_LEVEL, BUFFSIZE, INTERNAL)).verdict
    assert v.kind is VerdictKind.SETUP_FAILURE and v.cause is not None and v.cause.cause.kind == "nccl_no_reason"
    assert _codes(v)[-3:] == ["releases-to-collect", "settings-to-unset", "isolate-path"]
    settings = next(f for f in v.findings if f.code == "settings-to-unset")
    assert "the job set NCCL_BUFFSIZE=4194304 (rank 0); NCCL_P2P_LEVEL=NVL (rank 0):" in settings.message
    assert settings.fix == ("unset them one at a time and rerun (NCCL_BUFFSIZE, NCCL_P2P_LEVEL); keep only those the "
                            "job needs, with their reason")
    assert "NCCL_IB_DISABLE=1" in _fix(v, "isolate-path") and "NCCL_SHM_DISABLE=1" in _fix(v, "isolate-path")


def test_with_no_release_stated_the_step_says_how_to_collect_them(write):
    v = run(write("rank0.log", INTERNAL)).verdict
    fix = _fix(v, "releases-to-collect")
    assert "torch.cuda.nccl.version()" in fix and "`nvidia-smi`" in fix
    assert "run the previous release of NCCL (then of PyTorch)" in fix and "much older than the driver" in fix
    # no setting stated: where to look, and the debugging-only ones first
    assert "env | grep ^NCCL_" in _fix(v, "settings-to-unset") and "NCCL_P2P_LEVEL" in _fix(v, "settings-to-unset")


def test_with_a_release_stated_the_step_names_it(write):
    v = run(write("rank0.log", "node1:2301:2301 [0] NCCL INFO NCCL version 2.18.1+cuda12.1", INTERNAL)).verdict
    step = next(f for f in v.findings if f.code == "releases-to-check")
    assert "the job runs NCCL 2.18.1" in step.message and "releases-to-collect" not in _codes(v)
    assert step.fix is not None and "much older than the driver" in step.fix
    # the release PyTorch's error line states is one too
    said = run(write("rank1.log", INTERNAL_V)).verdict
    assert "NCCL 2.18.1" in next(f for f in said.findings if f.code == "releases-to-check").message


def test_a_cause_that_explains_the_failure_gets_no_such_steps(write):
    v = run(write("rank0.log", "node1:2301:2301 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to NVL",
                  "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB")).verdict
    assert not {"settings-to-unset", "isolate-path", "releases-to-collect"} & set(_codes(v))


def test_the_watchdog_teardown_alone_is_an_nccl_error_with_no_culprit(write):
    v = run(write("console.log", *TEARDOWN)).verdict
    assert (v.kind, v.culprit_ranks) == (VerdictKind.NCCL_ERROR, ())
    assert v.summary.startswith("NCCL failed, as PyTorch's watchdog states (rank 1): \"Some NCCL operations have "
                                "failed or timed out\"")
    assert v.cause is not None and v.cause.cause.kind == "nccl_no_reason"
    assert "NCCL_IB_DISABLE=1" in v.cause.fix[0] and "isolate-path" in _codes(v)


def test_the_watchdog_teardown_beside_a_timeout_is_only_its_echo(write):
    timeout = ("[rank1]:[E1010 06:10:06.883402482 ProcessGroupNCCL.cpp:684] [Rank 1] Watchdog caught collective "
               "operation timeout: WorkNCCL(SeqNum=78, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
               "ran for 600043 milliseconds before timing out.")
    v = run(write("console.log", timeout, *TEARDOWN)).verdict
    assert v.kind is not VerdictKind.NCCL_ERROR and "Some NCCL operations" not in v.summary


def test_the_graph_capture_warning_is_a_build_or_driver_mismatch(write):
    line = ("node1:88:88 [0] misc/strongstream.cc:91 NCCL WARN NCCL cannot be captured in a graph if either it wasn't "
            "built with CUDA runtime >= 11.3 or if the installed CUDA driver < R465.")
    v = run(write("worker.log", line)).verdict
    assert (v.kind, v.culprit_ranks) == (VerdictKind.SETUP_FAILURE, ())
    assert v.cause is not None and "nvidia-nccl" in v.cause.fix[0] and "R465" in v.cause.fix[0]


def test_a_call_the_driver_does_not_serve_is_the_host_not_its_ranks(write):
    line = "h:174:239 [0] enqueue.cc:802 NCCL WARN Cuda failure 'API call is not supported in the installed CUDA driver'"
    v = run(write("r.log", f"[rank0]:{line}", f"[rank1]:{line}")).verdict
    assert (v.kind, v.culprit_ranks) == (VerdictKind.SETUP_FAILURE, ())
    assert v.cause is not None and v.cause.cause.kind == "cuda_driver_old"
    assert "(seen by ranks 0-1)" in v.summary and "The host is the cause, not one rank" in v.summary


def test_invalid_device_ordinal_inside_nccl_gives_both_readings():
    said = told("Cuda failure 'invalid device ordinal'")
    assert said is not None and said.id == "cuda_invalid_device_in_nccl" and "invalid_device" in said.before
    assert "LOCAL_RANK" in said.fix[0] and "earlier NCCL WARN line" in said.fix[0]
    assert told("RuntimeError: CUDA error: invalid device ordinal") is None  # PyTorch's own call: the index alone


def test_the_cli_prints_the_settings_and_their_step(write):
    log = write("rank0.log", P2P_LEVEL, INTERNAL)
    out = runner.invoke(app, ["analyze-log", str(log)], env={"COLUMNS": "400", "NO_COLOR": "1"})
    assert out.exit_code == 1, out.stdout
    assert "NCCL_P2P_LEVEL=NVL" in out.stdout and "unset them one at a time and rerun (NCCL_P2P_LEVEL)" in out.stdout
    data = json.loads(runner.invoke(app, ["analyze-log", str(log), "--json"]).stdout)
    codes = [f["code"] for f in data["verdict"]["findings"]]
    assert codes[-3:] == ["releases-to-collect", "settings-to-unset", "isolate-path"]


def test_an_nccl_built_for_a_cuda_before_11_3_is_named_where_nothing_explains_the_failure(write):
    """NCCL's version line names the CUDA it was built for (src/init.cc showVersion: "NCCL version %s+cuda%d.%d")."""
    v = run(write("rank0.log", "node1:2301:2301 [0] NCCL INFO NCCL version 2.19.3+cuda11.0", INTERNAL)).verdict
    known = next(f for f in v.findings if f.code == "known-regression")
    assert known.message.startswith("The job runs NCCL's CUDA 11.0 (")
    assert known.fix == "if the job matches, run NCCL's CUDA 11.3 or later"
    assert known.evidence == ("https://github.com/NVIDIA/nccl/blob/master/src/misc/strongstream.cc",)


def test_a_peer_that_closed_its_connection_gets_no_nccl_steps(write):
    """gloo's "Connection closed by peer" (gloo/transport/tcp/pair.cc) says why: a peer went away, not NCCL."""
    v = run(write("rank0.log", "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection "
                  "closed by peer [127.0.0.1]:44762")).verdict
    assert not {"settings-to-unset", "isolate-path", "releases-to-collect"} & set(_codes(v))
