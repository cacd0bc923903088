"""Inputs that stop at NCCL's set-up with no error (issue 41 §3-4): job/stall.py, evidence/formats/ncclsetup.py.

The fixtures in tests/data/stall/ are written from the lines NCCL 2.21 prints (its README says which varies what);
the public threads 72 (vLLM, two GPUs, set-up then a progress bar at 0) and 75 (nccl-tests on four GPUs, cut
inside NCCL's set-up) are the real cases. Each verdict below was checked by hand against its lines.
"""

from __future__ import annotations

import json

from conftest import DATA, run
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.render.json_out import analysis_json

STALL = DATA / "stall"
THREADS = DATA / "public_threads"
runner = CliRunner()
STEPS = [
    "Run it again with one path off at a time, the same job or a two-rank test on the same GPUs or hosts: "
    "`NCCL_P2P_DISABLE=1` (GPU peer-to-peer over PCIe), `NCCL_SHM_DISABLE=1` (shared memory: /dev/shm and the "
    "container's IPC), and between hosts `NCCL_NET_GDR_LEVEL=0` (GPUDirect RDMA) or `NCCL_IB_DISABLE=1` (sockets "
    "instead of InfiniBand/RoCE). The run that completes names the path at fault.",
    "If `NCCL_P2P_DISABLE=1` completes, check the host's PCIe path: `lspci -vvv | grep -i acsctl` (ACS on a PCIe "
    "switch or root port sends peer traffic to the root complex: turn it off in the BIOS or with setpci) and the "
    "IOMMU (VT-d/AMD-Vi: boot with `iommu=pt`, or off, for bare-metal jobs); `nvidia-smi topo -m` shows the path "
    "between the two GPUs.",
    "Test the pair alone with nccl-tests between the two GPUs or hosts (`all_reduce_perf -b 8 -e 128M -f 2 -g 1`, "
    "one rank per GPU, the job's NCCL_* environment, NCCL_DEBUG=INFO): a hang at its first size reproduces it "
    "without the job.",
    "Run `ncclcheck probe` inside the failing container on each node: it checks this setting and says what to set.",
]


def _verdict(path) -> dict:
    v = analysis_json(run(path))["verdict"]
    return {"kind": v["kind"], "summary": v["summary"], "culprit_ranks": v["culprit_ranks"],
            "waiting_ranks": v["waiting_ranks"],
            "cause": {k: v["cause"][k] for k in ("kind", "detail", "ranks", "evidence")} if v["cause"] else None,
            "action": {k: v["action"][k] for k in ("kind", "reason")}, "next_steps": v["next_steps"]}


def test_two_ranks_whose_set_up_completed_and_nothing_followed_are_stuck_in_the_first_collective():
    log = STALL / "setup_stops.log"
    assert _verdict(log) == {
        "kind": "all_ranks_stuck",
        "summary": (
            f"Ranks 0-1 of 2 stopped after NCCL's set-up with no error: Init COMPLETE on ranks 0-1 of 2 ({log}:26), "
            f"connections via P2P ({log}:18); after it no collective completed, no step advanced, no rank reported an "
            f"error and no line says the job ended (the last line is {log}:27). If the job hung there, its first "
            "collective never completed on any rank: every rank shown got that far, so no straggler explains it; the "
            "transport or the GPU peer-to-peer path under it carried nothing (the first collective is where NCCL "
            "first moves the ranks' data). If the log was only cut, or the job still runs, the rest of it decides."),
        "culprit_ranks": [],
        "waiting_ranks": [],  # the communicator's ranks: no line says they are the job's global ranks
        "cause": {"kind": "stopped_after_setup",
                  "detail": f"the inputs stop after NCCL's set-up (Init COMPLETE on ranks 0-1 of 2 ({log}:26), "
                            f"connections via P2P ({log}:18))",
                  "ranks": [0, 1],
                  "evidence": [f"{log}:{n}" for n in (26, 18, 27)]},
        "action": {"kind": "collect-more", "reason": "stopped_after_setup"},
        "next_steps": STEPS,
    }


def test_a_step_after_the_set_up_is_progress_past_the_set_up_not_a_stop_in_it():
    """The bar at 1/100 is past the set-up; with no ending after it, a stall mid-run (job/ending.py's stalled)."""
    v = _verdict(STALL / "setup_then_step.log")
    assert (v["kind"], v["cause"]["kind"]) == ("incomplete_evidence", "console_stalled")
    assert "mid-run" in v["summary"]


def test_one_rank_of_two_shown_is_incomplete_evidence():
    v = _verdict(STALL / "setup_one_rank.log")
    assert (v["kind"], v["cause"]["kind"], v["cause"]["ranks"], v["next_steps"]) == (
        "incomplete_evidence", "stopped_after_setup", [], STEPS)
    assert "on any rank these inputs show (a rank they do not show may never have got there)" in v["summary"]


def test_nccl_tests_cut_inside_its_set_up_is_incomplete_with_the_isolating_runs():
    v = _verdict(THREADS / "75-nccl-257-allreduce-perf-hangs-4-gpus.log")
    assert (v["kind"], v["cause"]["kind"]) == ("incomplete_evidence", "stopped_after_setup")
    assert v["summary"].startswith("The inputs stop inside NCCL's set-up with no error: their last lines are its "
                                   f"set-up lines ({THREADS / '75-nccl-257-allreduce-perf-hangs-4-gpus.log'}:17)")


def _tests_log(tmp_path, rows: list[str], footer: bool):
    head = (THREADS / "75-nccl-257-allreduce-perf-hangs-4-gpus.log").read_text().splitlines()[:8]
    lines = [*head, "#", "#                                                       out-of-place                       in-place",
             "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
             "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
             *rows, *(["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 0.53 ", "#"] if footer else [])]
    p = tmp_path / "all_reduce_perf.log"
    p.write_text("\n".join(lines) + "\n")
    return p


ROW = "           8             2     float     sum      -1    30.12    0.00    0.00      0    29.80    0.00    0.00      0"


def test_nccl_tests_result_table_with_no_row_is_a_stall_and_with_rows_is_not(tmp_path):
    """The header is printed once the communicators exist; each size's row once that size ran (nccl-tests
    src/util.cu): a header with nothing under it stopped at the first collective, a row under it did not."""
    empty = _verdict(_tests_log(tmp_path, [], False))
    assert (empty["kind"], empty["cause"]["kind"]) == ("incomplete_evidence", "stopped_after_setup")
    assert "nccl-tests' result table begun with no row" in empty["summary"]
    assert _verdict(_tests_log(tmp_path, [ROW], False))["kind"] == "no_failure"  # cut after its first row
    assert _verdict(_tests_log(tmp_path, [ROW, ROW], True))["kind"] == "no_failure"  # a finished test


def test_a_launcher_without_nccl_lines_is_no_stop_at_set_up(tmp_path):
    """torchrun's banner alone is a launch with no ending (job/ending.py's stalled), not NCCL's set-up."""
    p = tmp_path / "console.log"
    p.write_text("W1127 20:01:02.123000 11 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment "
                 "variable for each process to be 1 in default\n")
    v = _verdict(p)
    assert (v["kind"], v["cause"]["kind"]) == ("incomplete_evidence", "console_stalled")


def test_a_destroyed_communicator_is_the_jobs_end_not_a_stall(tmp_path):
    p = tmp_path / "done.log"
    p.write_text((STALL / "setup_stops.log").read_text() + "node1:2101:2101 [0] NCCL INFO comm 0x5581c0 rank 0 "
                 "nranks 2 cudaDev 0 busId 1b000 - Destroy COMPLETE\n")
    assert _verdict(p)["kind"] == "no_failure"


def test_cli_says_it_and_exits_as_a_failure_found():
    r = runner.invoke(app, ["analyze-log", "--json", str(STALL / "setup_stops.log")])
    assert r.exit_code == 1, r.output
    v = json.loads(r.stdout)["verdict"]
    assert (v["kind"], v["cause"]["kind"], v["action"]["kind"]) == ("all_ranks_stuck", "stopped_after_setup",
                                                                     "collect-more")
    r = runner.invoke(app, ["analyze-log", str(STALL / "setup_then_step.log")])
    assert "verdict: incomplete_evidence" in r.stdout, r.output


def test_lightning_members_of_one_node_only_say_the_others_never_started_and_how_to_start_them():
    """Lightning's "MEMBER: m/8" lines of members 1-4 alone (public thread 66: plain python under Slurm)."""
    log = THREADS / "66-lightning-8707-multinode-init-freeze.log"
    v = analysis_json(run(log))["verdict"]
    assert v["kind"] == "incomplete_evidence"
    assert v["summary"].endswith(
        f"Lightning's start lines (`GLOBAL_RANK: k, MEMBER: m/8`, {log}:4) show ranks 0-3 joining and nothing of "
        "ranks 4-7: their processes never started, or their output is on another node that these inputs do not "
        "hold. Lightning starts the processes of its own node only: each other node's must be started there (under "
        "Slurm by `srun`).")
    assert v["next_steps"][0].startswith("Start the script on every node, one process per GPU: under Slurm with `srun`")


def test_lightning_with_every_member_started_gets_no_start_step(tmp_path):
    p = tmp_path / "console.log"
    p.write_text("".join(f"initializing ddp: GLOBAL_RANK: {r}, MEMBER: {r + 1}/2\n" for r in range(2)))
    v = analysis_json(run(p))["verdict"]
    # every member started, so no start step; Lightning's console that ends on its process group's start lines is a
    # start that never finished (job/pgstart.py: the rendezvous), incomplete evidence, not a stall
    assert (v["kind"], v["cause"]["kind"]) == ("incomplete_evidence", "pg_start_unfinished")
    assert not any("srun" in s for s in v["next_steps"])


def test_ray_tunes_error_file_is_what_to_bring():
    log = THREADS / "85-ray-30333-multinode-torchtrainer-fails.log"
    path = ("/home/ray/ray_results/TorchTrainer_2022-11-15_19-20-15/TorchTrainer_96bfe_00000_0_2022-11-15_19-20-16/"
            "error.txt")
    v = _verdict(log)
    assert v["kind"] == "incomplete_evidence"
    assert v["summary"] == (
        f"Ray Tune reports that trial TorchTrainer_96bfe_00000 failed ({log}:3); Tune ended with \"Trials did not "
        f"complete\" ({log}:6): the exception that ended it, with its traceback, is in its error file, {path}, which "
        "these inputs do not hold. Nothing else here says why; bring that file (it is on the node that ran the "
        "trial) or the whole console.")
    assert v["cause"] == {"kind": "error_file", "detail": f"trial TorchTrainer_96bfe_00000 failed and its error is in {path}",
                          "ranks": [], "evidence": [f"{log}:3", f"{log}:6"]}
    assert v["action"] == {"kind": "collect-more", "reason": "error_file"}
    r = runner.invoke(app, ["analyze-log", str(log)])
    assert r.exit_code == 1 and "verdict: incomplete_evidence" in r.stdout


def test_a_store_connection_with_nothing_after_it_is_a_rendezvous_that_never_completed():
    """c10d's client connected to the store and the log stops (public thread 62: Istio's sidecar accepted it)."""
    log = THREADS / "62-pytorch-81704-kubeflow-init-hang.log"
    v = _verdict(log)
    assert (v["kind"], v["cause"]["kind"], v["cause"]["evidence"], v["action"]) == (
        "launcher_failure", "store_no_reply", [f"{log}:11"], {"kind": "collect-more", "reason": "store_no_reply"})
    assert v["summary"].startswith(f"The inputs stop right after the rendezvous store's client connected ({log}:11)")
    assert any("sidecar.istio.io/inject" in s for s in v["next_steps"])


def test_a_store_connection_followed_by_nccls_set_up_is_not_the_store(tmp_path):
    p = tmp_path / "console.log"
    p.write_text("[I socket.cpp:725] [c10d] The client socket has connected to [master]:29500 on [worker]:38250.\n"
                 + (STALL / "setup_stops.log").read_text())
    assert _verdict(p)["cause"]["kind"] == "stopped_after_setup"
