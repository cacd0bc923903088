"""The benchmark for real: gloo on CPU under torchrun, 2 ranks (needs torch).

Skipped, with the reason, where torch is not installed. ``make test`` installs the CPU build of torch and sets
NCCLCHECK_REQUIRE_TORCH=1, so there a missing torch fails the run instead of skipping these tests quietly.

A torchrun run of 2 ranks costs about 13 s of CPU (torch imported by torchrun and each worker) and a child process
of the benchmark alone about 5 s, whatever it then does: each run serves every assertion that can be made on it,
and the runs not under torchrun (world size 1) are made in this process (``bench_alone``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from unittest import mock

import pytest

if importlib.util.find_spec("torch") is None:
    if os.environ.get("NCCLCHECK_REQUIRE_TORCH"):
        raise RuntimeError("NCCLCHECK_REQUIRE_TORCH is set but torch is not installed: the benchmark's runs cannot be "
                           "tested (make test installs the CPU build of torch)")
    pytest.skip("torch is not installed: the benchmark's torchrun tests need it (pip install 'ncclcheck[bench]', "
                "or make test, which installs the CPU build)", allow_module_level=True)

def test_only_communication_failures_count_as_a_lost_peer():
    """A dead peer's errors are reported as such; any other RuntimeError is a bug and must keep its traceback."""
    from ncclcheck.bench.runner import is_comm_failure

    assert is_comm_failure(RuntimeError("[gloo/transport/tcp/pair.cc:537] Read error: Connection reset by peer"))
    assert is_comm_failure(RuntimeError("NCCL communicator was aborted on rank 0"))
    assert not is_comm_failure(RuntimeError("Numpy is not available"))
    assert not is_comm_failure(ValueError("gloo"))


ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}


def torchrun(*args: str, timeout: float = 240, **kw) -> subprocess.CompletedProcess[str]:
    kw.setdefault("env", ENV)
    return subprocess.run([sys.executable, "-m", "torch.distributed.run", *args], capture_output=True, text=True,
                          timeout=timeout, **kw)


def test_gloo_two_ranks_on_two_nodes_json_and_check(tmp_path):
    """Two torchrun 'nodes' (--nnodes 2, one rank each) meeting on 127.0.0.1, the multi-node path: rank 0 prints
    the JSON result and writes the same to --output, the other node prints nothing."""
    out = tmp_path / "bench.json"
    port = str(_port())
    common = ["--nnodes", "2", "--nproc-per-node", "1", "--master-addr", "127.0.0.1", "--master-port", port]
    bench = ["-m", "ncclcheck.bench", "--size", "1e6", "--chunks", "1e5,1e4", "--iters", "3", "--warmup", "1",
             "--check", "--json", "--output", str(out)]
    procs = [subprocess.Popen([sys.executable, "-m", "torch.distributed.run", *common, "--node-rank", str(n), *bench],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV) for n in (0, 1)]
    outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs[0][1][-1500:] + outs[1][1][-1500:]
    (stdout, stderr), (other, _) = outs
    assert other == ""
    j = json.loads(stdout)
    assert j == json.loads(out.read_text())
    assert (j["schema_version"], j["check"], j["environment"]["backend"], j["environment"]["world_size"]) == (
        1, True, "gloo", 2)
    assert [x["mode"] for x in j["results"]] == ["unchunked", "chunks of 1e5", "chunks of 1e4"]
    assert [x["chunks"] for x in j["results"]] == [1, 10, 100]
    for x in j["results"]:
        assert x["busbw_gbps"] == pytest.approx(x["algbw_gbps"] * 2 * 1 / 2)
        assert x["min_s"] <= x["median_s"] <= x["max_s"]
    assert j["results"][0]["slowdown_vs_unchunked"] == 1.0
    assert j["conclusion"].startswith("Chunks of 1e5 elements cost")
    assert j["conclusion"].endswith("against PyTorch's default gloo timeout (30 min).")  # not NCCL's watchdog
    # said at once, before anything is measured: what the run will do
    assert ("ncclcheck.bench: all_reduce of 1,000,000 float32 elements (3.81 MiB) a rank, on 2 rank(s) (gloo): "
            "3 mode(s) of 1 + 3 transfers") in stderr


def test_dead_peer_fails_within_the_timeout():
    """A peer that leaves after one barrier (every rank's set-up, gloo's full mesh, is over: a peer gone during it
    fails init_process_group instead), before the measured collectives: the survivor exits non-zero, saying why,
    under the timeout it was given (a hang fails here at torchrun()'s limit; how fast it gives up is
    tools/bench_lost_peer.py's figure, not a clock in a test that a loaded machine would fail)."""
    r = torchrun("--nproc-per-node", "2", "-m", "ncclcheck.bench", "--size", "1e5", "--chunks", "", "--iters", "2",
                 "--timeout", "15", "--exit-early-rank", "1")
    assert r.returncode != 0
    assert ("ncclcheck.bench: error: rank 0: a collective failed, so a peer died or never arrived (process-group "
            "timeout 15 s)") in r.stderr


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- sweep ---------------------------------------------------------------------------------------------------------

SWEEP = ["--sweep", "8:64K:8", "--iters", "3", "--warmup", "1"]


def test_sweep_two_ranks_table_exit_code_json_plot_page_and_check(tmp_path):
    """A sweep on 2 ranks below --min-busbw: the benchmark exits 3; torchrun would say 1, ncclcheck bench passes the
    3 through. The sweep's table it prints (the FAIL line with it) fits 80 columns, every number whole, a row for
    every size the JSON written to --output holds; the plot and the page show every size, each checked."""
    from ncclcheck.bench import fmt

    svg, page, out = tmp_path / "busbw.svg", tmp_path / "sweep.html", tmp_path / "sweep.json"
    r = subprocess.run([sys.executable, "-c", "from ncclcheck.cli import main; main()", "bench", "--nproc", "2",
                        *SWEEP, "--min-busbw", "1e6", "--check", "--plot", str(svg), "--html", str(page), "--output",
                        str(out)], capture_output=True, text=True, timeout=240, env={**ENV, "COLUMNS": "80"})
    assert r.returncode == 3, r.stderr[-2000:]
    assert "FAIL: busbw at 32 KiB is" in r.stdout and "below --min-busbw 1e+06 GB/s" in r.stdout
    lines = r.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert "…" not in r.stdout
    j = json.loads(out.read_text())
    assert j["config"]["sweep"] == {"min_bytes": 8, "max_bytes": 65536, "factor": 8}
    assert [p["size_bytes"] for p in j["sweep"]] == [8, 64, 512, 4096, 32768]
    assert [p["count"] for p in j["sweep"]] == [2, 16, 128, 1024, 8192]
    for p in j["sweep"]:
        assert p["algbw_gbps"] == pytest.approx(p["size_bytes"] / (p["time_us"] * 1e-6) / 1e9)
        assert p["busbw_gbps"] == pytest.approx(p["algbw_gbps"] * 2 * (2 - 1) / 2)
        assert (p["check"], p["cuda_graph"], p["timing"]) == (True, False, "host clock")  # gloo: no CUDA
        assert any(line.split()[:2] == fmt.size(p["size_bytes"]).split() and f"{p['count']:,}" in line.split()
                   for line in lines), p
    assert j["check"] is True and j["below_min_busbw"] is True and j["config"]["min_busbw_gbps"] == 1e6
    root = ET.fromstring(svg.read_text())
    assert root.get("width") == "960" and len(list(root.iter("{http://www.w3.org/2000/svg}circle"))) == 5
    html = page.read_text()
    assert html.count("<tr><td>") == 5 and "<svg" in html and "--min-busbw 1e+06 GB/s" in html


def test_bad_option_exits_two_through_ncclcheck_bench():
    r = subprocess.run([sys.executable, "-c", "from ncclcheck.cli import main; main()", "bench", "--nproc", "2",
                        "--sweep", "8:2G:1"], capture_output=True, text=True, timeout=60, env=ENV)
    assert (r.returncode, r.stderr.strip()) == (2, "ncclcheck: error: --sweep: the factor must be at least 2")


@pytest.fixture
def bench_alone(capsys: pytest.CaptureFixture[str]):
    """``python -m ncclcheck.bench ARGS`` not under torchrun (world size 1), run in this process as its ``__main__``
    runs it: the exit code, stdout and stderr. A child process cost about 5 s of CPU, nearly all of it importing
    torch. The variables the run sets (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT...) are taken back after it, and
    the process group an error leaves behind (a child's exit would end it) is destroyed."""
    from ncclcheck.bench import runner
    from ncclcheck.bench.__main__ import main

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        capsys.readouterr()
        with mock.patch.dict(os.environ):
            for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
                os.environ.pop(name, None)
            try:
                code = main(list(args))
            finally:
                runner.teardown()
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["python", "-m", "ncclcheck.bench", *args], code, out, err)

    return run


def test_too_large_for_host_memory_is_refused_before_allocating(bench_alone):
    r = bench_alone("--size", "1e13", "--chunks", "")
    assert r.returncode == 2
    assert "error: rank 0: needs 40000.00 GB for the buffers but" in r.stderr
    assert "host memory available to this rank: use a smaller size" in r.stderr
    assert "Traceback" not in r.stderr


def test_no_size_on_cpu_moves_tens_of_megabytes_and_says_so(bench_alone):
    """Without --size, gloo on CPU gets 1e7 elements (40 MB) a rank, not NCCL's 2 GB, and the first line says so."""
    r = bench_alone("--iters", "1", "--warmup", "0", "--chunks", "", "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["config"]["size_elements"] == 10_000_000
    first = r.stderr.splitlines()[0]
    assert first == ("ncclcheck.bench: all_reduce of 10,000,000 float32 elements (38.1 MiB) a rank (no --size: the "
                     "default for gloo, a size gloo on CPU moves in seconds), on 1 rank(s) (gloo): 1 mode(s) of 0 + 1 "
                     "transfers")


def test_graph_on_needs_gpus(bench_alone):
    r = bench_alone(*SWEEP, "--graph", "on")
    assert r.returncode == 2
    assert "--graph on needs CUDA GPUs (the nccl backend)" in r.stderr


def test_a_long_run_shows_each_finished_step_on_stderr(bench_alone):
    """Past a second, rank 0 says on stderr which mode (or sweep size) it finished and how long the run has taken,
    and which transfer is under way; a short run stays quiet, and stdout holds only the result."""
    from ncclcheck.bench.config import make_config
    from ncclcheck.bench.runner import Env, run, run_sweep

    env = Env(rank=0, local_rank=0, world=1, backend="gloo", device="cpu", launched=False)
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_port()))
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        steps: list[str] = []
        under_way: list[str] = []

        def told(step: str, finished: bool = True) -> None:
            (steps if finished else under_way).append(step)

        run(make_config(size="1e4", chunks="1e3,1e2", iters=2, warmup=1), env, told)
        assert [s.split(" (")[0] for s in steps] == ["mode 1 of 3", "mode 2 of 3", "mode 3 of 3"]
        assert "chunks of 1,000 elements" in steps[1] and "median" in steps[1]
        assert under_way[:3] == [f"mode 1 of 3 (unchunked): transfer {k} of 3" for k in (1, 2, 3)]
        steps.clear()
        run_sweep(make_config(sweep="8:64:2", iters=1), env, told)
        assert steps == ["size 1 of 4 (8 B) measured", "size 2 of 4 (16 B) measured", "size 3 of 4 (32 B) measured",
                         "size 4 of 4 (64 B) measured"]
    finally:
        dist.destroy_process_group()
    r = bench_alone("--size", "1e4", "--iters", "1")
    assert r.returncode == 0 and "measured" not in r.stderr and "measured" not in r.stdout


def test_progress_waits_a_second_then_goes_to_stderr(capsys):
    from ncclcheck.bench.rank import _progress

    _progress(after_s=60)("mode 1 of 2 (unchunked) measured")
    _progress(after_s=0)("size 3 of 9 (1 MiB) measured")
    under_way = _progress(after_s=0, every_s=60)
    under_way("mode 1 of 2 (unchunked): transfer 1 of 13", False)
    under_way("mode 1 of 2 (unchunked): transfer 2 of 13", False)  # within a minute of the last line: not shown
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("ncclcheck.bench: size 3 of 9 (1 MiB) measured (") and "s so far)" in err
    assert "mode 1 of 2 (unchunked) measured" not in err
    assert "transfer 1 of 13" in err and "transfer 2 of 13" not in err
