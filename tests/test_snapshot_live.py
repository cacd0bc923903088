"""snapshot against a real hanging torchrun job (CPU, gloo, 3 ranks): rank 1 sleeps, ranks 0 and 2 wait in all_reduce.

The job is started once for the module and ended by pid afterwards; every test leaves it running.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from conftest import DATA
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.evidence import archive as evidence_archive
from ncclcheck.job.analyze import analyze_scans
from ncclcheck.snapshot import pyspy

# Whether torch is installed, not importing it: the job imports it in its own processes, and importing it here made
# every xdist worker import it (4 s of CPU) while collecting, whether or not it ran a test that needs it.
if importlib.util.find_spec("torch") is None:
    pytest.skip("could not import 'torch': the live job runs under torchrun", allow_module_level=True)
JOB = DATA / "snapshot" / "hang_job.py"
LINES = JOB.read_text().splitlines()
SLEEP = next(i for i, line in enumerate(LINES, 1) if line.endswith("# SLEEP"))
WAIT = next(i for i, line in enumerate(LINES, 1) if line.endswith("# WAIT"))
runner = CliRunner()


@dataclass(frozen=True)
class Job:
    launcher: int
    ranks: tuple[int, ...]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Job]:
    if pyspy.find_py_spy() is None:
        pytest.fail("py-spy is part of the test extra: pip install -e '.[test]'")
    ready = tmp_path_factory.mktemp("ready")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR",
                                                            "MASTER_PORT")}
    env |= {"OMP_NUM_THREADS": "1", "NCCL_DEBUG": "WARN", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE": str(ready / "pipe_")}
    p = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "3", "--master-addr",
                          "127.0.0.1", "--master-port", str(_free_port()), str(JOB), str(ready), "1", "gloo"],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while len(list(ready.glob("rank*"))) < 3:
            if p.poll() is not None:
                pytest.fail(f"the test job ended early: {p.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail("the test job did not reach its hang in 180 s")
            time.sleep(0.2)
        time.sleep(1.5)  # ranks 0 and 2 go on into all_reduce
        ranks = tuple(c.pid for c in psutil.Process(p.pid).children())
        yield Job(p.pid, ranks)
    finally:
        for pid in psutil.Process(p.pid).children() if p.poll() is None else ():
            pid.kill()
        p.kill()
        p.wait(30)


def _snapshot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ncclcheck", "snapshot", *args], capture_output=True, text=True,
                          timeout=120, env=os.environ | {"COLUMNS": "200"})


def _analyze(archive_path: Path) -> dict:
    """analyze-log on a snapshot archive: the same job model, read back from the file."""
    r = subprocess.run([sys.executable, "-m", "ncclcheck", "analyze-log", str(archive_path), "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    return json.loads(r.stdout)


def test_verdict_names_the_sleeping_rank_and_groups_the_waiting(job: Job, tmp_path: Path):
    out = tmp_path / "snapshot-node.tar.gz"
    r = _snapshot("--pid", str(job.launcher), "--json", "--out", str(out))
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and f"wrote {out}" in r.stderr
    assert "\x1b[" not in r.stdout
    j = json.loads(r.stdout)
    assert (j["format"], j["schema_version"]) == ("ncclcheck-snapshot", 4)
    v = j["verdict"]
    # The verdict is the job model's (analyze-log's verdict object), with the live positions and stack groups.
    assert set(v) >= {"kind", "summary", "culprit_ranks", "waiting_ranks", "unknown_ranks", "pg", "seq", "chain",
                      "findings", "next_steps", "cause", "cycle", "positions", "groups"}
    assert (v["kind"], v["culprit_ranks"], v["waiting_ranks"], v["unknown_ranks"]) == ("lagging_rank", [1], [0, 2], [])
    assert v["chain"][-1] == "Ranks 0, 2 are only waiting."
    where = {p["rank"]: (Path(p["where"]["file"]).name, p["where"]["line"], p["state"], p["collective"])
             for p in v["positions"]}
    assert where == {0: ("hang_job.py", WAIT, "waiting", "all_reduce"), 1: ("hang_job.py", SLEEP, "host_code", None),
                     2: ("hang_job.py", WAIT, "waiting", "all_reduce")}
    assert [(g["ranks"], g["collective"]) for g in v["groups"]] == [([0, 2], "all_reduce"), ([1], None)]
    assert v["summary"] == (f"Rank 1 is in host code at hang_job.py:{SLEEP} `time.sleep(3600)  # SLEEP`; ranks 0, 2 "
                            f"wait in all_reduce (hang_job.py:{WAIT} `dist.all_reduce(t)  # WAIT`).")
    assert ([x["rank"] for x in j["ranks"]], sorted(x["pid"] for x in j["ranks"])) == ([0, 1, 2], sorted(job.ranks))
    notes = {x["rank"]: x["dump_note"] for x in j["ranks"]}
    assert all(n.endswith("pipe does not exist: the NCCL process group has not started, or this PyTorch reads "
                          "another name") or "trace buffer is off" in n for n in notes.values())
    scans = evidence_archive.read_archive(str(out))
    again = analyze_scans(scans).verdict
    assert (again.kind.value, again.summary, again.culprit_ranks) == ("lagging_rank", v["summary"], (1,))
    a = _analyze(out)
    assert (a["verdict"]["kind"], a["verdict"]["culprit_ranks"], a["verdict"]["waiting_ranks"]) == ("lagging_rank", [1],
                                                                                                   [0, 2])
    assert f"hang_job.py:{SLEEP}" in a["verdict"]["summary"]


def test_text_report_and_the_job_left_untouched(job: Job):
    before = {pid: psutil.Process(pid).create_time() for pid in job.ranks}
    r = _snapshot("--pid", str(job.ranks[0]))
    assert r.returncode == 1, r.stderr
    assert "verdict: lagging_rank" in r.stdout
    assert f"Rank 1 is in host code at hang_job.py:{SLEEP}" in r.stdout
    assert "ranks 0, 2: in all_reduce (1 thread)" in r.stdout
    assert "TORCH_NCCL_DEBUG_INFO_PIPE_FILE is set but the trace buffer is off" in r.stdout
    for pid, created in before.items():
        p = psutil.Process(pid)
        assert p.create_time() == created and p.status() in (psutil.STATUS_SLEEPING, psutil.STATUS_RUNNING,
                                                              psutil.STATUS_DISK_SLEEP)
    assert psutil.Process(job.launcher).is_running()


def test_py_spy_absent(job: Job, monkeypatch):
    monkeypatch.setattr(pyspy, "find_py_spy", lambda: None)
    r = runner.invoke(app, ["snapshot", "--pid", str(job.launcher), "-q"], catch_exceptions=False)
    assert r.exit_code == 3
    assert ("ncclcheck: py-spy is not installed, so no stacks were taken: pip install 'ncclcheck[live]'"
            in r.stderr.splitlines())
    assert "verdict: incomplete_evidence" in r.stdout and "No rank's stack or dump could be read" in r.stdout


def test_ptrace_refused(job: Job, monkeypatch, tmp_path: Path):
    fake = tmp_path / "py-spy"
    fake.write_text("#!/bin/sh\necho 'Error: Operation not permitted (os error 1)' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(pyspy, "find_py_spy", lambda: str(fake))
    r = runner.invoke(app, ["snapshot", "--pid", str(job.launcher), "-q"], catch_exceptions=False)
    assert r.exit_code == 3
    line = next(x for x in r.stderr.splitlines() if "ptrace" in x)
    assert line.startswith("ncclcheck: ptrace is not allowed, so py-spy could not read some ranks: ")
    assert "run ncclcheck as the job's user or as root" in line
    assert all(psutil.Process(pid).is_running() for pid in job.ranks)


def test_pid_that_is_no_job(job: Job):
    other = subprocess.Popen(["sleep", "60"])
    try:
        r = _snapshot("--pid", str(other.pid))
    finally:
        other.kill()
        other.wait()
    assert (r.returncode, r.stdout) == (3, "")
    assert r.stderr.startswith(f"ncclcheck: no job holding pid {other.pid} found on this node")
