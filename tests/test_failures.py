"""Failures that are not a straggler: set-up, launcher, device and memory, each with its cause and fix.

The fixtures in tests/data/failures/ are real: tools/make_incidents_failures.sh provoked each one on
2 x H200 (torch 2.11, NCCL 2.28.9) and kept the torchrun console, the per-rank log directory and the
flight-recorder dumps.  tests/data/failure_corpus/ holds excerpts of public threads whose fix was
confirmed, each with the cause it must be read as and a word the fix must contain.
"""

from __future__ import annotations

import json

import pytest
from conftest import DATA, run, run_text
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.evidence.parse import LogParser
from ncclcheck.evidence.types import FileScan
from ncclcheck.job.causes import CATALOGUE, Diagnosis, cause, oom_line
from ncclcheck.job.causes import diagnose as diagnose_job
from ncclcheck.job.facts import with_facts
from ncclcheck.job.model import EndKind, Job
from ncclcheck.render.json_out import analysis_json

FAILURES = DATA / "failures"
CORPUS = DATA / "failure_corpus"
EXPECTED = DATA / "expected_failures"
runner = CliRunner()

# Each scenario and what a person who set it up knows happened: the verdict kind, the cause, the ranks
# where it started (tools/incident_failures.py, tools/make_incidents_failures.sh); none where the host's interfaces
# are the cause (NCCL_SOCKET_IFNAME=nosuch0 fails on every rank of the host).
KNOWN = {
    "shm": ("setup_failure", "shm_exhausted", [0, 1]),
    "shm_warn": ("setup_failure", "shm_exhausted", [0, 1]),
    "ifname": ("setup_failure", "no_socket_interface", []),
    "ifname_warn": ("setup_failure", "no_socket_interface", []),
    "net_ib": ("setup_failure", "net_plugin", [0, 1]),
    "net_ib_warn": ("setup_failure", "net_plugin", [0, 1]),
    "device_assert": ("rank_failed_first", "device_assert", [1]),
    "oom": ("rank_failed_first", "cuda_oom", [1]),
    "rdzv_timeout": ("launcher_failure", "rdzv_timeout", []),
    "node_lost": ("launcher_failure", "store_lost", []),
    "no_init": ("launcher_failure", "stopped_externally", []),
}


def _diagnose(scans: list[FileScan]) -> Diagnosis | None:
    """The catalogue's match over a job of these inputs alone (only its facts are read)."""
    return diagnose_job(with_facts(Job(None, (), (), (), ()), scans))


def _ways(name: str) -> dict[str, list[str]]:
    d = FAILURES / name
    ways = {"console": sorted(str(p) for p in d.glob("*console.log")), "all": [str(d)]}
    dirs = [p for p in (d / "torchrun", d / "node0", d / "node1") if p.is_dir()]
    if any(f.stat().st_size for p in dirs for f in p.rglob("*.log")):  # a silent hang leaves them all empty
        ways["logdir"] = [str(p) for p in dirs]
    return ways


CASES = [(name, way) for name in sorted(KNOWN) for way in _ways(name)]


@pytest.mark.parametrize(("name", "way"), CASES)
def test_real_failure_names_cause_and_ranks(name, way):
    """Console, per-rank logs and everything together: the same kind, cause and ranks (hand-checked table)."""
    v = run(*_ways(name)[way]).verdict
    assert v.cause is not None
    assert (v.kind.value, v.cause.cause.kind, list(v.culprit_ranks)) == KNOWN[name]


def _golden(a) -> dict:
    v = analysis_json(a)["verdict"]
    return {"verdict": {k: v[k] for k in ("kind", "summary", "culprit_ranks", "waiting_ranks", "unknown_ranks",
                                          "cause", "next_steps")},
            "endings": {str(r["rank"]): r["ending"]["kind"] for r in analysis_json(a, per_rank=True)["per_rank"]["ranks"]}}


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_real_failure_golden(name, monkeypatch):
    """The whole verdict of all inputs together equals the reviewed golden JSON exactly."""
    monkeypatch.chdir(FAILURES)
    got = _golden(run(name))
    assert got == json.loads((EXPECTED / f"{name}.json").read_text())


def test_shm_verdict_says_what_to_change():
    """/dev/shm: the size NCCL asked for, Docker's and Kubernetes' fixes, and the probe, in the human report."""
    r = runner.invoke(app, ["analyze-log", str(FAILURES / "shm" / "console.log")], env={"COLUMNS": "300"})
    assert r.exit_code == 1
    assert "/dev/shm/nccl-qD56TF (size 9637888)" in r.stdout
    assert "--shm-size" in r.stdout and "--ipc=host" in r.stdout and "medium: Memory" in r.stdout
    assert "ncclcheck probe" in r.stdout
    assert "Every rank in these inputs hit it" in " ".join(r.stdout.replace("│", " ").split())  # at any width


def test_oom_is_one_line():
    """An OOM lists every process on the GPU; the verdict keeps its own numbers only."""
    v = run(FAILURES / "oom" / "console.log").verdict
    assert "Process 1483" not in v.summary
    assert v.cause is not None
    assert v.cause.detail == ("CUDA out of memory: asked 372.53 GiB, on GPU 1 (139.80 GiB total, 123.46 GiB free), "
                              "this process held 1.44 GiB, 16.00 MiB reserved but unallocated")


def test_device_assert_names_kernel_and_what_to_do():
    v = run(FAILURES / "device_assert").verdict
    assert v.cause is not None
    assert "indexSelectSmallIndex" in v.cause.detail and "vocabulary size" in v.cause.detail
    assert any("CUDA_LAUNCH_BLOCKING=1" in s for s in v.next_steps)


def test_node_lost_survivors_are_not_culprits():
    """The store's node went away: the ranks that lost it are named as such, never as culprits."""
    v = run(FAILURES / "node_lost" / "node1.console.log").verdict
    assert v.culprit_ranks == ()
    assert "only lost it: they are not the cause" in v.summary
    assert "store at localhost:29611, localhost:33249" in v.summary


def _scan(text: str, name: str = "x.log"):
    p = LogParser(name, None)
    for i, line in enumerate(text.splitlines(), 1):
        p.feed(i, line.encode())
    return p.finish(len(text.splitlines()), len(text))




def test_empty_last_error_asks_for_nccl_debug():
    """An NCCL "unhandled system error" with nothing under "Last error:": the usual causes in order, each with its
    check, and the variables to rerun with to decide between them."""
    s = _scan("[rank0]: torch.distributed.DistBackendError: NCCL error in: x.cpp:1, unhandled system error (run with "
              "NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n[rank0]: ncclSystemError: System call failed.\n"
              "[rank0]: Last error:\n[rank0]:[W1122 11:18:45.0 ProcessGroupNCCL.cpp:1] Warning: not destroyed\n")
    assert [(c.kind, c.text) for c in s.clues] == [("last_error", "")]
    d = _diagnose([s])
    assert d is not None and d.cause.kind == "nccl_system_error" and d.ranks == (0,)
    assert ["--ipc=host" in d.cause.fix[0], "NCCL_SOCKET_IFNAME" in d.cause.fix[1], "--network=host" in d.cause.fix[2],
            "NCCL_DEBUG=WARN" in d.cause.fix[3]] == [True] * 4


def test_last_error_on_the_same_line():
    s = _scan("what(): NCCL error: remote process exited or there was a network error, NCCL version 2.14.3 "
              "ncclRemoteError: A call failed. Last error: NET/IB : Got completion from peer 1.2.3.4<1> with error 12\n")
    d = _diagnose([s])
    assert d is not None and d.cause.kind == "ib_error"


def test_device_error_comes_before_its_cascade():
    """One rank's OOM is the root of the other ranks' NCCL errors, whatever order the inputs come in."""
    peer = _scan("[rank0]: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5\n")
    oom = _scan("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    d = _diagnose([peer, oom])
    assert d is not None and (d.cause.kind, d.ranks) == ("cuda_oom", (1,))


def test_versions_differ():
    a = _scan("[rank0]: NCCL version 2.21.5+cuda12.4\n", "rank0.log")
    b = _scan("[rank1]: NCCL version 2.18.1+cuda12.1\n", "rank1.log")
    d = _diagnose([a, b])
    assert d is not None and d.cause.kind == "nccl_version_mismatch"
    assert d.detail == "NCCL versions differ: 2.18.1 on rank 1; 2.21.5 on rank 0"


@pytest.mark.parametrize(("text", "want"), [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 79.35 GiB total capacity; "
     "77.00 GiB already allocated; 10.19 MiB free; 78.00 GiB reserved in total by PyTorch)",
     "CUDA out of memory: asked 20.00 MiB, on GPU 0 (79.35 GiB total, 10.19 MiB free)"),
    ("RuntimeError: CUDA out of memory.", "CUDA out of memory"),
])
def test_oom_line_formats(text, want):
    """The one-line OOM reads PyTorch 1.x and 2.x wording and degrades to the plain words."""
    assert oom_line(text) == want


CORPUS_CASES = sorted(p.stem for p in CORPUS.glob("*.log"))


@pytest.mark.parametrize("name", CORPUS_CASES)
def test_public_thread_excerpt(name):
    """Each excerpt from a public thread is read as the cause its thread confirmed, with that fix."""
    meta = json.loads((CORPUS / f"{name}.json").read_text())
    v = run(CORPUS / f"{name}.log").verdict
    if "cause" not in meta:  # a rank that was only busy: said in the verdict or, where no line names it, a finding
        busy = [f for f in v.findings if f.code == "busy-rank" or "busy, not dead" in f.message]
        assert meta["kind"] == "busy_rank" and busy, v.summary
        assert meta["fix_keyword"] in " ".join((*v.next_steps, *(f.fix or "" for f in busy)))
        return
    assert v.cause is not None and v.cause.cause.kind == meta["cause"]
    assert meta["fix_keyword"] in " ".join((*v.cause.cause.fix, *v.next_steps, v.cause.cause.why))


def test_corpus_is_large_and_every_source_is_cited():
    assert len(CORPUS_CASES) >= 20
    for name in CORPUS_CASES:
        assert json.loads((CORPUS / f"{name}.json").read_text())["source"].startswith("https://github.com/")


def test_catalogue_is_documented():
    """docs/failures.md has a section for every cause, with its fix and its source."""
    doc = (DATA.parent.parent / "docs" / "failures.md").read_text()
    for c in (*CATALOGUE, cause("nccl_no_reason"), cause("nccl_system_error"), cause("host_kill"),
              cause("stopped_externally"), cause("nccl_version_mismatch")):
        assert f"`{c.kind}`" in doc and c.source in doc, c.kind


def test_json_carries_the_cause():
    r = runner.invoke(app, ["analyze-log", "--json", str(FAILURES / "ifname" / "console.log")])
    j = json.loads(r.stdout)
    assert j["schema_version"] == 7
    c = j["verdict"]["cause"]
    assert (c["kind"], c["family"], c["ranks"], c["detail"]) == (
        "no_socket_interface", "setup", [0], "Bootstrap : no socket interface found")
    assert any("NCCL_SOCKET_IFNAME" in f for f in c["fix"])
    assert [x["kind"] for x in j["events"]["clues"]][:1] == ["last_error"]


@pytest.mark.parametrize("scenario", ["killed", "net_killed"])
def test_sigkill_points_to_the_kernel_log(scenario):
    """A rank killed by SIGKILL (4xH200 fixtures): its peers' lost connections are the consequence, dmesg the next step."""
    v = run(DATA / "real4" / scenario).verdict
    assert v.cause is not None
    assert (v.kind.value, list(v.culprit_ranks), v.cause.cause.kind) == ("rank_failed_first", [2], "host_kill")
    assert any("dmesg -T" in s for s in v.next_steps)


def test_elastic_restarts_are_reported():
    """torchrun's agent restarting the worker group (its --max-restarts) is said, with where it was logged."""
    s = _scan("[2026-11-24 02:31:44,000] torch.distributed.elastic.agent.server.api: [WARNING] [default] Worker group "
              "FAILED. 3/3 attempts left; will restart worker group\n"
              "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    assert [c.kind for c in s.clues] == ["launcher"]
    from ncclcheck.job.records import merge_records
    from ncclcheck.job.verdict import decide

    v = decide([s], merge_records([s])).verdict
    f = next(f for f in v.findings if f.code == "elastic-restarts")
    assert "1 time(s)" in f.message and "3/3 attempts left" in f.message and str(f.evidence[0]) == "x.log:1"


def test_no_reason_says_last_error_is_empty():
    s = _scan("[rank0]: torch.distributed.DistBackendError: NCCL error in: x.cpp:1, internal error, NCCL version 2.21.5\n"
              "[rank0]: Last error:\n\n")
    d = _diagnose([s])
    assert d is not None and d.detail == "NCCL error: internal error; NCCL's 'Last error:' is empty"


def test_every_clue_has_a_cheap_word():
    """The clue gate runs only behind plain substring tests: each of its alternatives must hold one of the words."""
    from ncclcheck.evidence.formats import errors

    for alt in errors.CLUE_GATE.pattern.split("|"):
        plain = alt.replace("\\", "").replace("[Rr]", "R")
        assert any(w in plain for w in errors.CLUE_WORDS), alt


def test_the_setting_that_caused_it_is_quoted(tmp_path):
    """NCCL printed the NCCL_SOCKET_IFNAME it was given, then found no interface: the verdict says eth2, with its
    line, and the rank's own NCCL error is its ending (not "printed no error")."""
    log = tmp_path / "console.log"
    log.write_text(
        "node1:1234:1234 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth2\n"
        "node1:1234:1234 [0] NCCL WARN Bootstrap : no socket interface found\n"
        "[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1970, internal error - please report this issue to the NCCL developers, NCCL version "
        "2.19.3\n")
    a = run(log)
    assert a.verdict.cause.cause.kind == "no_socket_interface"
    assert f"the job ran with NCCL_SOCKET_IFNAME=eth2 ({log}:1), which named nothing NCCL could use" in a.verdict.summary
    ending = next(s.ending for s in a.job.ranks if s.rank == 0)
    assert ending.kind.value == "nccl_error" and ending.detail.startswith("NCCL error: internal error")


@pytest.mark.parametrize(("text", "kind"), [
    ('Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    load(batch)\n'
     "ValueError: bad shape in batch 7\n", "rank_failed_first"),
    ("node1:1:1 [0] enqueue.cc:1 NCCL WARN Cuda failure 'invalid argument'\n", "nccl_error"),
    # NCCL before 2.3, quoted without its host:pid:tid [dev] header (nccl#210): the source file starts the line
    ("include/socket.h:344 WARN Socket creation failed : Address family not supported by protocol\n", "setup_failure"),
    ('Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    dist.init_process_group("nccl")\n'
     "ValueError: host not found: node-7\n", "launcher_failure"),
    ("node1:1:1 [0] enqueue.cc:1 NCCL WARN Mismatched collective detected, please check your collective calls at and "
     "around rank 3.\n", "collective_mismatch"),
    ("node1:1:1 [0] misc/utils.cc:1 NCCL WARN Could not find real path of /sys/class/net/eth0/device\n", "no_failure"),
])
def test_a_failure_no_line_attributes_is_still_a_failure(tmp_path, text, kind):
    """"no_failure" only when nothing failed: an exception or a failing NCCL WARN whose line names no rank is a
    failure of an unnamed process (NCCL's own line a failure inside NCCL); a WARN about a fallback NCCL took on its
    own is not."""
    log = tmp_path / "console.log"
    log.write_text(text)
    v = run(log).verdict
    assert v.kind.value == kind, v.summary
    if kind in ("rank_failed_first", "nccl_error"):
        assert v.summary.startswith("A process failed: ") and f"({log}:" in v.summary


def test_inputs_that_cover_part_of_the_job_are_no_clean_bill(tmp_path):
    """Four ranks of an 8-rank job (their init lines say size 8), none failing: the other node's ranks left no input,
    so the verdict is incomplete_evidence naming them, not no_failure."""
    for r in range(4):
        (tmp_path / f"rank{r}.log").write_text(
            f"[rank{r}]:[I1122 10:00:00.000000000 ProcessGroupNCCL.cpp:988] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
            f"ProcessGroupNCCL initialization options: size: 8, global rank: {r}, TIMEOUT(ms): 600000\n")
    v = run(tmp_path).verdict
    assert (v.kind.value, v.unknown_ranks) == ("incomplete_evidence", (4, 5, 6, 7))
    assert v.summary.startswith("Nothing failed in these inputs, but they cover 4 of the job's 8 ranks")


def test_srun_task_lines_name_the_ranks_and_how_they_ended(tmp_path):
    """Slurm's own words (ParlAI#3084's lines): "tasks 2-7", "tasks 8-13,15" and "task 14" are ranks 2-15, each
    exited with code 1; "Killed" / "Out Of Memory" is a SIGKILL. A range is one entry (2 to 7), never expanded."""
    log = tmp_path / "slurm.out"
    log.write_text("srun: error: slurm-job-compute-0-0: tasks 2-7: Exited with exit code 1\n"
                   "srun: error: slurm-job-compute-0-1: tasks 8-13,15: Exited with exit code 1\n"
                   "srun: error: slurm-job-compute-0-1: task 14: Exited with exit code 1\n"
                   "srun: error: node9: task 16: Killed\n")
    failures = [e for s in run(log).scans for e in s.elastic]
    assert sorted((e.rank, e.last_rank) for e in failures) == [(2, 7), (8, 13), (14, None), (15, None), (16, None)]
    assert {(e.exitcode, e.signal) for e in failures if e.rank < 16} == {(1, None)}
    job = run(log).job
    assert [s.rank for s in job.ranks if s.ending.kind is EndKind.EXCEPTION] == list(range(2, 16))
    assert [(e.rank, e.signal, e.host) for e in failures if e.rank == 16] == [(16, "SIGKILL", "node9")]


@pytest.mark.parametrize(("line", "sig"), [
    ("[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)", "SIGBUS"),
    ("[host:12:0:13] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x8)", "SIGSEGV"),
    ("*** SIGSEGV (@0x0) received by PID 4321 (TID 0x7f00) from PID 0; stack trace: ***", "SIGSEGV"),
    ("Fatal Python error: Segmentation fault", "SIGSEGV"),
    ("Fatal Python error: Bus error", "SIGBUS"),
    ("[ip-172-31-77-112:61444] Signal: Segmentation fault (11)", "SIGSEGV"),
    ("Bus error (core dumped)", "SIGBUS"),
    ("3: Segmentation fault (core dumped)", "SIGSEGV"),
])
def test_a_process_that_reports_its_fatal_signal_died_of_it(line, sig):
    """A segfault or bus error in native code leaves no traceback, only the process's own last line, in every
    form it is printed (UCX, glog, faulthandler, MPI, a shell): the rank died of that signal."""
    s = _scan(f"[rank2]: {line}\n")
    assert [(e.who.rank, e.kind.value) for e in s.errors] == [(2, "killed")]
    ending = run_text(f"[rank2]: {line}\n").job.rank(2).ending
    assert (ending.kind.value, ending.signal) == ("killed", sig)


@pytest.mark.parametrize("line", ["Fatal Python error: Aborted", "Caught signal 6 (Aborted)",
                                  "the bus error counter is 0", "RuntimeError: DataLoader worker (pid 7) is killed by "
                                  "signal: Bus error."])
def test_an_abort_or_a_mention_is_not_a_death_by_signal(line):
    """SIGABRT is the watchdog's abort after a timeout, not a rank's own crash; a sentence that only mentions a bus
    error is not a process's last words (the DataLoader's exception stays an exception)."""
    assert all(e.kind.value != "killed" for e in _scan(f"[rank2]: {line}\n").errors)


@pytest.mark.parametrize(("code", "verdict", "kind"), [(-7, "rank_failed_first", "shm_full"),
                                                      (-11, "rank_failed_first", "native_crash"),
                                                      (-9, "rank_failed_first", "host_kill")])
def test_a_launcher_reported_signal_names_its_cause(tmp_path, code, verdict, kind):
    """torchrun's agent reports a worker dead of a signal with no line of the worker's own: SIGBUS is a full
    /dev/shm (whose segments, the loader's or NCCL's, no line says), SIGSEGV a native crash, SIGKILL a host kill; only
    SIGKILL gets the kernel's OOM killer as next step. The line names the local rank only, and nothing states the node's first rank: no global rank is named (with
    ``--nnodes 1`` stated, local rank 1 is rank 1)."""
    log = tmp_path / "agent.log"
    agent = ("E0909 14:03:50.013000 22579 torch/distributed/elastic/multiprocessing/api.py:833] failed "
             f"(exitcode: {code}) local_rank: 1 (pid: 2128869) of binary: /usr/bin/python\n")
    log.write_text(agent)
    v = run(log).verdict
    assert (v.kind.value, list(v.culprit_ranks), v.cause.cause.kind) == (verdict, [], kind)
    assert any("killed process|out of memory" in s for s in v.next_steps) == (code == -9)
    log.write_text("I0909 14:03:40.000000 22579 torch/distributed/launcher/api.py:188] Starting elastic_operator with "
                   "launch configs:\nI0909 14:03:40.000000 22579 torch/distributed/launcher/api.py:188]   max_nodes        "
                   ": 1\n" + agent)
    v = run(log).verdict
    assert (v.kind.value, list(v.culprit_ranks), v.cause.cause.kind) == (verdict, [1], kind)
    assert any("killed process|out of memory" in s for s in v.next_steps) == (code == -9)


def test_the_reason_under_last_error_is_read_through_a_rank_prefix():
    """``[rank1]: Last error:`` then ``[rank1]: Duplicate GPU detected …``: the rank prefix is not the start of a
    new record, so NCCL's reason is read, and names two ranks on one GPU."""
    text = ("[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, invalid usage "
            "(run with NCCL_DEBUG=WARN for details), NCCL version 2.20.5\n"
            "[rank1]: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
            "[rank1]: Last error:\n"
            "[rank1]: Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000\n")
    assert [(c.kind, c.text) for c in _scan(text).clues] == [
        ("last_error", "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000")]
    v = run_text(text).verdict
    assert (v.kind.value, list(v.culprit_ranks), v.cause.cause.kind) == ("setup_failure", [], "duplicate_gpu")
    assert "Rank 1 reported it" in v.summary  # one of the pair, not the culprit alone (tests/test_dupgpu.py)


def test_a_collector_label_does_not_hide_an_exception():
    """``worker-4: ValueError: …`` with no rank tag (pdsh, srun -l): the exception is read through the label."""
    s = _scan("worker-4: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
              "2026-11-23T09:40:01.123456789Z ValueError: bad shape\n")
    assert [(e.kind.value, e.message[:22]) for e in s.errors] == [("oom", "torch.OutOfMemoryError"),
                                                                  ("exception", "ValueError: bad shape")]


def test_lightning_names_each_rank_and_the_world():
    """Lightning's start line ("initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/2" in 1.x, "Initializing distributed:
    …" since; lightning-bolts#691) and its "[rank: 1]" tag name the rank that printed them and the job's size."""
    s = _scan("initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/4\n[rank: 1] Global seed set to 42\n"
              "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/4\n")
    assert s.ranks_seen == (0, 1)
    assert {(f.key, f.value) for f in s.facts} == {("lightning_world", "4"), ("framework", "lightning"),
                                                   ("launched", "Lightning"),
                                                   ("setup", "process group start")}  # formats/pgstart.py
    # Lightning's console that stops after its start lines shows no end (job/ending.py): not no_failure
    v = run_text("initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/2\nInitializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2\n"
                 "[rank: 1] Seed set to 42\n").verdict
    assert (v.kind.value, v.cause and v.cause.cause.kind) == ("incomplete_evidence", "console_cut"), v.summary


def test_icefalls_logger_tag_names_each_rank_and_the_world():
    """icefall's setup_logger tags each record "(RANK/WORLD)" behind its header: the global rank of the line and the
    job's size."""
    s = _scan("2023-04-13 16:00:05,621 INFO [trainer.py:650] (5/8) Reaches end of dataloader.\n"
              "2023-04-13 16:00:05,630 INFO [trainer.py:626] (7/8) Computing validation loss\n")
    assert s.ranks_seen == (5, 7)
    assert ("logger_world", "8") in {(f.key, f.value) for f in s.facts}
    v = run_text("2023-04-13 16:00:05,621 INFO [trainer.py:650] (0/2) Reaches end of dataloader.\n").verdict
    assert (v.kind.value, list(v.unknown_ranks)) == ("incomplete_evidence", [1]), v.summary


@pytest.mark.parametrize(("line", "rank", "code"), [
    ("subprocess.CalledProcessError: Command '['/usr/bin/python', '-u', 'train.py', '--local_rank=1']' died with "
     "<Signals.SIGKILL: 9>.", 1, -9),
    ("subprocess.CalledProcessError: Command '['/usr/bin/python', '-u', 'train.py', '--local-rank=3', '--cfg', "
     "'a.yaml']' returned non-zero exit status 1.", 3, 1),
])
def test_the_old_launchers_report_of_a_child_names_its_local_rank(line, rank, code):
    """torch.distributed.launch before torchrun (and launchers built on subprocess) report the child that failed
    as a CalledProcessError whose command holds its --local_rank: that is the rank and its exit."""
    s = _scan(line + "\n")
    # its local rank: no line states the node's first global rank (evidence/parse.py places it where one does)
    assert [(f.rank, f.local_rank, f.exitcode) for f in s.elastic] == [(None, rank, code)] and not s.errors


def test_a_kill_no_rank_is_named_for_is_still_a_host_kill():
    """accelerate launch's "died with <Signals.SIGKILL: 9>" without a rank (subgen#177: more memory fixed it): a
    process was killed with no traceback; the kernel's log is where to look, and no rank is invented."""
    v = run_text("subprocess.CalledProcessError: Command '['python3', '-u', 'train.py']' died with "
                 "<Signals.SIGKILL: 9>.\n").verdict
    assert (v.kind.value, list(v.culprit_ranks), v.cause.cause.kind) == ("rank_failed_first", [], "host_kill")
    assert "names no rank" in v.summary and "none" not in v.summary


def test_kubectl_prefixed_exception_is_read():
    """``kubectl logs --prefix`` puts ``[pod/NAME/CONTAINER] `` before every line: the exception under it is read."""
    s = _scan("[pod/job-worker-1/pytorch] Traceback (most recent call last):\n"
              "[pod/job-worker-1/pytorch]   File \"train.py\", line 3, in <module>\n"
              "[pod/job-worker-1/pytorch] ValueError: bad batch\n")
    assert [(e.kind.value, e.message) for e in s.errors] == [("exception", "ValueError: bad batch")]


@pytest.mark.parametrize(("text", "cause_kind", "said"), [
    ("slurmstepd: error: Detected 1 oom_kill event in StepId=11300781.0. Some of the step tasks have been OOM Killed.\n"
     "srun: error: sdumont6156: task 0: Out Of Memory\n", "host_oom", "oom_kill event"),
    ("      Reason:       OOMKilled\n      Exit Code:    137\n", "host_oom", "OOMKilled"),
    ("Epoch 0:  46%|####6     | 31/67 [29:02<35:12, 58.67s/it]slurmstepd: error: *** STEP 6053.0 ON node2 "
     "CANCELLED AT 2024-04-23T12:18:08 ***\nsrun: error: node2: task 0: Terminated\n", "stopped_externally",
     "slurmstepd: error: *** STEP 6053.0"),
    ("slurmstepd: error: *** JOB 494583 ON node1 CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***\n",
     "stopped_externally", "DUE TO TIME LIMIT"),
])
def test_the_schedulers_own_words_name_the_cause(text, cause_kind, said):
    """Slurm's OOM kill and cancellation (also glued after a progress bar that ended without a newline) and a pod's
    OOMKilled are causes in their own words, quoted from where they start."""
    v = run_text(text).verdict
    assert v.cause is not None and v.cause.cause.kind == cause_kind
    assert said in v.cause.detail and "%|" not in v.cause.detail


def test_the_lost_peers_host_names_the_rank_that_died():
    """Two nodes; rank 3 (node-b) died over NCCL's socket transport, rank 1 (node-a) was stopped without a word.
    Ranks 0 and 2 name the peer whose connection closed (node-b.cluster): of the two quiet ranks, only rank 3 is
    on that host. The NCCL line header places each rank (host, pid)."""
    peer = DATA / "failures" / "peer_lost"
    v = run(peer).verdict
    assert (v.kind.value, list(v.culprit_ranks)) == ("rank_failed_first", [3])
    assert v.cause is not None and v.cause.cause.kind == "host_kill"
    assert "lost their connections to a peer (Connection closed by remote peer node-b.cluster<51450>), the host of " \
           "ranks 2-3" in v.summary


def test_a_lost_peer_no_input_places_is_not_blamed_on_a_quiet_rank_elsewhere():
    """Only node-a's logs: the peer's host (node-b) is named by no input, and the quiet rank 1 ran on node-a. No
    culprit is invented; the ranks with no input are the unknowns, and the next step is that host's logs."""
    peer = DATA / "failures" / "peer_lost"
    v = run(peer / "rank0.log", peer / "rank1.log").verdict
    assert (v.kind.value, list(v.culprit_ranks), list(v.unknown_ranks)) == ("nccl_error", [], [2, 3])
    assert "Rank 1 ran on another host" in v.summary and "dmesg -T" in v.summary


def test_the_nccl_header_places_a_rank():
    s = _scan("[rank5]:[2026-11-22 11:30:05] node-7:31337:2001 [1] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>\n")
    assert {(f.key, f.value) for f in s.facts} >= {("host", "node-7"), ("pid", "31337"),
                                                   ("bootstrap", "eth0:10.0.0.7<0>")}


def _timeouts(ranks, extra=""):
    return extra + "".join(
        f"[rank{r}]:[E1122 10:00:00.000000000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran "
        "for 600083 milliseconds before timing out.\n" for r in ranks)


IB_WARN = ("[rank3]:node-b:812:900 [3] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
           "10.0.0.7<39138> with status=12 opcode=1 len=0 vendor err 129 (Send) localGid ::ffff:10.0.0.8 remoteGids::ffff:10.0.0.7\n")


def test_an_ib_completion_error_is_the_transports_never_a_lagging_rank():
    """Rank 3's NIC reported retry-exceeded while ranks 0-2 timed out waiting: a transport failure between the ranks
    and hosts the line names (nccl_error), not rank 3 lagging; the next steps never say "look at what rank 3 was
    doing"."""
    v = run_text(_timeouts(range(3), IB_WARN)).verdict
    assert (v.kind.value, v.culprit_ranks, v.cause.cause.kind) == ("nccl_error", (), "ib_error")
    assert "seen by rank 3 (node-b)" in v.summary and "status 12, transport retry counter exceeded" in v.summary
    steps = " ".join(v.next_steps)
    assert "Look at what" not in steps and "NCCL_IB_HCA" in steps and "ibstat" in steps


def test_an_ib_error_after_a_peer_was_killed_is_that_peers_death():
    """A peer killed by a signal leaves the others' NICs retrying: the kill is the cause, the IB error its echo."""
    v = run_text(IB_WARN + "[rank2]: Fatal Python error: Segmentation fault\n").verdict
    assert v.cause.cause.kind == "native_crash" and v.culprit_ranks == (2,)


@pytest.mark.parametrize("line", [
    "[W socket.cpp:601] [c10d] The IPv6 network addresses of (localhost, 51595) cannot be retrieved (gai error: -2 - "
    "Name or service not known).",
])
def test_the_ipv6_lookup_of_localhost_is_not_a_dns_failure(line):
    """torch warns that localhost has no IPv6 address on many hosts; the job then runs on IPv4: not a cause."""
    v = run_text(line + "\n[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n").verdict
    assert v.cause.cause.kind == "cuda_oom"
    assert run_text(line + "\n").verdict.cause is None


def test_the_dns_line_is_the_cause_not_the_socket_timeout_after_it():
    """A name that did not resolve, then the client's connect timing out: the resolver's line is the cause."""
    v = run_text("[W1008 23:40:22.781961348 socket.cpp:767] [c10d] The IPv6 network addresses of (node-17, 29500) "
                 "cannot be retrieved (gai error: -2 - Name or service not known).\n"
                 "[E1008 23:55:22.000000000 socket.cpp:1019] [c10d] The client socket has timed out after 900000ms "
                 "while trying to connect to (node-17, 29500).\n").verdict
    assert (v.kind.value, v.cause.cause.kind) == ("launcher_failure", "host_unresolvable")
    assert "(node-17, 29500) cannot be retrieved" in v.summary


def test_deepspeeds_kill_without_a_local_rank_is_a_kill_of_no_named_rank():
    """DeepSpeed's launcher line for a command without --local_rank (DeepSpeed#4890's "[launch.py:321:sigkill_handler
    [xxx] exits with return code = -9"): a process was killed by SIGKILL, no rank is invented."""
    v = run_text("[2024-01-03 10:00:00,001] [ERROR] [launch.py:321:sigkill_handler] ['python', '-u', 'train.py'] "
                 "exits with return code = -9\n").verdict
    assert (v.kind.value, v.culprit_ranks, v.cause.cause.kind) == ("rank_failed_first", (), "host_kill")


def test_a_system_error_whose_warn_line_names_the_cause_is_that_cause():
    """With NCCL_DEBUG=WARN the failing call is named: the WARN line's cause wins over the generic list."""
    v = run_text("[rank0]:vm:1498:1835 [0] misc/shmutils.cc:87 NCCL WARN Error: failed to extend /dev/shm/nccl-96ULnz to "
                 "9637892 bytes, error: No space left on device (28)\n"
                 "[rank0]: torch.distributed.DistBackendError: NCCL error in: x.cpp:1, unhandled system error (run with "
                 "NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n").verdict
    assert v.cause.cause.kind == "shm_exhausted"


def test_ranks_that_waited_for_rank_0s_nccl_id_name_rank_0():
    """store->get('0') timing out is not an unreachable store: rank 0 had not reached NCCL's set-up; it is the
    culprit, and its last line says whether it was busy."""
    v = run_text("[rank0]: Running tokenizer on dataset:  47%|████▋     | 3169000/6811963 [30:11<38:27, 1578.58 "
                 "examples/s]\n[rank1]: RuntimeError: [1] is setting up NCCL communicator and retrieving ncclUniqueId "
                 "from [0] via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout\n").verdict
    assert (v.kind.value, v.culprit_ranks, v.cause.cause.kind) == ("lagging_rank", (0,), "nccl_id_wait")
    assert "Rank 0 was busy, not dead" in v.summary
    assert any("raising the timeout does help" in s for s in v.next_steps)


# Where a cause's reference may point: the authoritative documents, or the upstream projects' own threads.
_AUTHORITIES = ("https://pytorch.org/docs/", "https://docs.nvidia.com/", "https://docs.kernel.org/",
                "https://docs.open-mpi.org/",
                "https://slurm.schedmd.com/", "https://kubernetes.io/docs/", "https://github.com/pytorch/",
                "https://github.com/NVIDIA/", "https://github.com/huggingface/",
                "https://github.com/horovod/",  # Horovod's own source: its stall inspector's words
                "https://github.com/ofiwg/",  # libfabric's own source: its providers' device lists and log lines
                "https://github.com/openxla/")  # XLA's own source: JAX's coordination service agent and client


def test_every_reference_is_authoritative():
    """A cause's reference is a document of the project that owns the mechanism, or that project's own thread; a
    downstream project's issue is evidence (a fixture), not a reference."""
    for c in (*CATALOGUE, cause("nccl_no_reason"), cause("nccl_system_error"), cause("host_kill"),
              cause("nccl_version_mismatch")):
        assert c.source.startswith(_AUTHORITIES), (c.kind, c.source)


def _summary(host: str, rank: int, local: int, code: int, pid: int) -> str:
    """torchrun's failure summary as its agent prints it (the layout of tests/data/failures/slow_eval/console.log)."""
    sig = " (SIGKILL)" if code == -9 else ""
    return ("============================================================\ntrain.py FAILED\n"
            "------------------------------------------------------------\nFailures:\n  <NO_OTHER_FAILURES>\n"
            "------------------------------------------------------------\nRoot Cause (first observed failure):\n[0]:\n"
            f"  time      : 2026-11-25_14:59:59\n  host      : {host}\n  rank      : {rank} (local_rank: {local})\n"
            f"  exitcode  : {code} (pid: {pid}){sig}\n  error_file: <N/A>\n"
            "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
            "============================================================\n")


def test_each_nodes_root_cause_is_quoted(tmp_path):
    """Two nodes' consoles, each with torchrun's own 'Root Cause': both are quoted, with their hosts and exits,
    not only the first file's."""
    (tmp_path / "node0.log").write_text(_summary("node-a", 2, 2, 1, 501))
    (tmp_path / "node1.log").write_text(_summary("node-b", 9, 1, -9, 902))
    f = next(f for f in run(tmp_path).verdict.findings if f.code == "torchrun-root-cause")
    assert f.message == ("torchrun's 'Root Cause' on each node names rank 2 on node-a (exitcode 1); rank 9 on node-b "
                         "(exitcode -9, SIGKILL).")
    assert [x.file.rsplit("/", 1)[-1] for x in f.evidence] == ["node0.log", "node1.log"]


@pytest.mark.parametrize(("others", "step"), [
    (_timeouts([0]), "Fix the first error on rank 1; the other ranks' timeouts are only its cascade."),
    ("[rank0]: torch.distributed.DistBackendError: NCCL error in: x.cpp:1, remote process exited or there was a network "
     "error, NCCL version 2.21.5\n", "Fix the first error on rank 1; the other ranks' NCCL errors are only its cascade."),
    ("", "Fix the error on rank 1."),
])
def test_the_cascade_is_named_only_where_there_is_one(others, step):
    """Rank 1 ran out of memory: the other ranks' timeouts, or their NCCL errors, are its cascade; where no other rank
    printed anything there is no cascade to speak of."""
    v = run_text(others + "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n").verdict
    assert v.culprit_ranks == (1,) and step in v.next_steps


def test_an_ib_error_after_a_rank_raised_is_that_ranks_failure():
    """Rank 2 raised and exited; rank 3's NIC then gave up on it: rank 2 failed first, the IB error is the echo."""
    v = run_text(IB_WARN + '[rank2]: Traceback (most recent call last):\n[rank2]:   File "train.py", line 3, in '
                 "<module>\n[rank2]: ValueError: bad shape in batch 7\n").verdict
    assert (v.kind.value, v.culprit_ranks) == ("rank_failed_first", (2,))


@pytest.mark.parametrize(("line", "kind"), [
    ("[W socket.cpp:601] [c10d] The IPv6 network addresses of (node-17, 29500) cannot be retrieved (gai error: -2 - "
     "Name or service not known).", "host_unresolvable"),
    ("fail to new train...e= NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:272, unhanled system error",
     "nccl_system_error"),
    ("node2:242431:242479 [5] transport/nvls.cc:158 NCCL WARN Cuda failure 1 'invalid argument'", "nvls_fabric"),
])
def test_a_new_causes_line_is_read_deep_in_a_log(line, kind):
    """Past the head the reader reads whole, among thousands of ordinary lines, each new cause's line still reaches
    the parser."""
    filler = "".join(f"step {i} loss 0.{i % 97:02d}\n" for i in range(5000))
    assert run_text(filler + line + "\n").verdict.cause.cause.kind == kind


@pytest.mark.parametrize(("line", "kind", "message"), [
    # PyTorch before 1.8 (nccl/issues/473)
    ("RuntimeError: NCCL Error 2: unhandled system error", "nccl_error", "NCCL error: unhandled system error"),
    # nccl-tests' NCCLCHECK, with and without its "Test " (nccl-tests/issues/14, nccl/issues/473)
    ("fastmoe: Test NCCL failure common.cu:777 'unhandled system error'", "nccl_error",
     "NCCL error: unhandled system error"),
    ("NCCL failure common.cu:874 'unhandled system error'", "nccl_error", "NCCL error: unhandled system error"),
    # NCCL 2.2's WARN header without the word NCCL (nccl-tests/issues/14)
    ("e66aa18dc444:3171:3171 [0] include/socket.h:311 WARN Socket creation failed : Address family not supported "
     "by protocol", "nccl_warn", "Socket creation failed : Address family not supported by protocol"),
    ("node1:6601:6625 [0] include/socket.h:385 NCCL WARN Net : Connection closed by remote peer", "connection_closed",
     "Net : Connection closed by remote peer"),
])
def test_older_nccl_error_formats_are_nccl_errors(line, kind, message):
    """Every generation's way of saying an NCCL call failed is read as NCCL's error, never as a Python exception."""
    assert [(e.kind.value, e.message) for e in _scan(line + "\n").errors] == [(kind, message)]


def test_a_warning_word_is_not_an_old_nccl_warn():
    """Only NCCL's own header ('[cudaDev] file.cc:line WARN') makes a WARN line NCCL's."""
    assert _scan("2024-01-01 WARN disk almost full\n[W socket.cpp:601] WARN later\n").errors == ()


def test_composer_launcher_names_each_global_rank_exit():
    """MosaicML Composer's launcher says, per worker, its global rank, PID and exit code (llm-foundry/issues/203)."""
    s = _scan("ERROR:composer.cli.launcher:Rank 1 crashed with exit code -6.\n"
              "Global rank 0 (PID 786) exited with code -6\nGlobal rank 1 (PID 787) exited with code -6\n")
    assert [(e.rank, e.local_rank, e.exitcode, e.pid, e.signal) for e in s.elastic] == [
        (0, None, -6, 786, "SIGABRT"), (1, None, -6, 787, "SIGABRT")]


def test_older_one_rank_mismatch_messages_pair_up():
    """PyTorch 1.10-1.12's DETAIL check names one rank and its own fingerprint per message (JOTR/issues/4)."""
    fp = ("CollectiveFingerPrint(OpType=ALLGATHER, TensorShape\n=[{}, 256], TensorDtypes=Float, "
          "TensorDeviceTypes=TensorOptions(dtype=float (default), memory_format=(nullopt))")
    s = _scan("".join(f"RuntimeError: Detected mismatch between collectives on ranks. Rank {r} is running inconsistent "
                      f"collective: {fp.format(n)}\n" for r, n in ((0, 41), (1, 40))))
    assert [(m.rank_a, m.rank_b) for m in s.mismatches] == [(0, 1)]
    assert "TensorShape=[41,256]" in s.mismatches[0].fingerprint_a
    assert "TensorShape=[40,256]" in s.mismatches[0].fingerprint_b


def test_a_one_rank_mismatch_message_with_no_partner_is_still_a_mismatch(write):
    """Each rank of 1.10-1.12 reports its own fingerprint, in its own log: read apart, each file's lone report is
    kept (the wrapper raises only on a difference), and the two files together name both sides."""
    fp = ("CollectiveFingerPrint(OpType=ALLGATHER, TensorShape=[{n}, 256], TensorDtypes=Float, "
          "TensorDeviceTypes=TensorOptions(dtype=float (default), memory_format=(nullopt)))")
    line = "[rank{r}]: RuntimeError: Detected mismatch between collectives on ranks. Rank {r} is running inconsistent " \
           "collective: " + fp
    s = _scan(line.format(r=0, n=41) + "\n")
    assert [(m.rank_a, m.rank_b, m.fingerprint_b) for m in s.mismatches] == [(0, None, "")]
    logs = [write(f"{r}.log", line.format(r=r, n=n)) for r, n in ((0, 41), (1, 40), (2, 41))]
    v = run(*logs).verdict
    assert (v.kind.value, list(v.culprit_ranks)) == ("collective_mismatch", [1])
    assert "rank 1: ALLGATHER shape [40,256] Float" in v.summary


def test_a_mismatch_report_cut_before_the_second_rank_is_still_a_mismatch(write):
    """A terminal or a paste that cuts DETAIL's report after the first fingerprint still states a difference: the
    verdict is a mismatch whose other side is unknown, never no failure."""
    cut = ("RuntimeError: Detected mismatch between collectives on ranks. Rank 2 is running collective: "
           "CollectiveFingerPrint(SequenceNumber=152517, OpType=BROADCAST, TensorShape=[1], TensorDtypes=Long, "
           "TensorDeviceTypes=TensorOptions(dtype=float (default), devi")
    assert [(m.rank_a, m.rank_b) for m in _scan(cut + "\n").mismatches] == [(2, None)]
    v = run(write("console.log", cut)).verdict
    assert v.cause is not None
    assert (v.kind.value, list(v.culprit_ranks), v.cause.cause.kind) == ("collective_mismatch", [], "calls_disagree")
    assert "rank 2: BROADCAST shape [1] Long seq 152517. The report names no second rank" in v.summary


GLOO_LOST = ("[rank{r}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
             "[127.0.0.1]:4{r}762. This is typically caused by a remote worker crashing.")


def test_a_rank_that_stops_while_the_others_lose_their_peer_died_first(write):
    """Every error says only that a peer went away, and one rank wrote nothing after its last step: its death is the
    failure and the others' closed connections its consequence."""
    logs = [write(f"{r}.log", f"[rank{r}]: step 2 done", *([GLOO_LOST.format(r=r)] if r != 2 else [])) for r in range(3)]
    v = run(*logs).verdict
    assert v.cause is not None
    assert (v.kind.value, list(v.culprit_ranks), v.cause.cause.kind) == ("rank_failed_first", [2], "host_kill")
    assert "rank 2 stopped with no error, traceback or exit line while ranks 0-1 lost their connections to a peer " \
           "(Connection closed by peer [127.0.0.1]:40762)" in v.summary


def test_a_silent_rank_does_not_explain_an_error_of_another_kind(write):
    """One rank's NCCL error is not a lost peer (a CUDA error in NCCL): a silent rank does not explain it."""
    logs = [write("0.log", "[rank0]: step 2 done", GLOO_LOST.format(r=0)),
            write("1.log", "[rank1]: step 2 done",
                  "[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
                  "cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5"),
            write("2.log", "[rank2]: step 2 done")]
    v = run(*logs).verdict
    assert v.cause is not None
    assert (v.kind.value, list(v.culprit_ranks), v.cause.cause.kind) == ("setup_failure", [1], "nccl_no_reason")


def test_deepspeeds_runner_launching_with_an_empty_master_address_is_a_setup_failure():
    """DeepSpeed's runner echoes the address `hostname -I` gave it and the command it runs on every node: an empty
    one in either is a launch that cannot meet, stated by the launcher itself; a real address is no failure."""
    empty = ("[2022-12-15 21:00:19,543] [INFO] [runner.py:417:main] Using IP address of  for node worker-0\n"
             "[2022-12-15 21:00:19,545] [INFO] [runner.py:508:main] cmd = pdsh -S -f 1024 -w worker-0,worker-1 "
             "cd /; /usr/bin/python -u -m deepspeed.launcher.launch --world_info=e30= --node_rank=%n --master_addr= "
             "--master_port=29500 train.py\n")
    v = run_text(empty).verdict
    assert v.stated is not None
    assert (v.kind.value, v.stated.source) == ("setup_failure", "runner")
    assert v.summary.startswith('The launch failed, as its own line states: the launcher\'s echo of its launch '
                                '"Using IP address of  for node worker-0"'), v.summary
    assert any("--master_addr ADDR" in step for step in v.next_steps)
    fine = empty.replace("of  for", "of 10.0.0.1 for").replace("--master_addr= ", "--master_addr=10.0.0.1 ")
    assert run_text(fine).verdict.kind.value == "no_failure"
