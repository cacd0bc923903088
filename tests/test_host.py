"""The host's and the scheduler's records (issue 27): kernel logs, GPU faults, OOM kills, pod events, Slurm records,
read by content and joined to the job's ranks by PID, GPU bus ID and host.

tests/data/host/real/ is a real run (tools/make_incidents_host.sh, torch 2.11 on an H100 machine as root): a 2-rank
gloo job whose rank 1 the kernel's OOM killer ended inside a 4 GiB memory cgroup, and one whose rank 1 segfaulted;
with the kernel log that machine wrote (dmesg, dmesg -T). tests/data/host/public/ holds excerpts of public threads
(SOURCES.md); tests/data/host/xid/ sets a real journal excerpt's Xid 79 beside a job's NCCL lines.
"""

from __future__ import annotations

import json

import pytest
from conftest import DATA, run
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.evidence.hostlog import HostLog, bus_key
from ncclcheck.evidence.types import Loc

HOST = DATA / "host"
REAL = HOST / "real"
runner = CliRunner()


def _feed(*lines: str):
    h = HostLog()
    return [e for i, line in enumerate(lines, 1) if (e := h.feed(line, Loc("k.log", i))) is not None]


@pytest.mark.parametrize(("line", "clock", "mono", "host"), [
    ("[   58.706182] Memory cgroup out of memory: Killed process 506 (python) total-vm:6855516kB, "
     "anon-rss:3598628kB, file-rss:226300kB", None, 58.706182, None),
    ("[Wed Nov 25 11:37:29 2026] Memory cgroup out of memory: Killed process 506 (python) total-vm:1kB, "
     "anon-rss:3598628kB", "2026-11-25 11:37:29", None, None),
    ("Nov 25 11:37:29 node-7 kernel: Out of memory: Killed process 506 (python) total-vm:1kB, anon-rss:2kB",
     "Nov 25 11:37:29", None, "node-7"),
    ("Nov 25 11:37:29 node-7 kernel: [   58.706182] Out of memory: Killed process 506 (python) total-vm:1kB",
     "Nov 25 11:37:29", 58.706182, "node-7"),
    ("2026-11-25T11:37:29,706182+00:00 node-7 kernel: Out of memory: Killed process 506 (python)",
     "2026-11-25 11:37:29", None, "node-7"),
])
def test_every_kernel_log_format_gives_the_kill_its_time_and_host(line, clock, mono, host):
    """dmesg (seconds since boot), dmesg -T, journalctl -k / syslog, kern.log (both), ISO stamps."""
    (e,) = _feed(line)
    assert (e.kind, e.pid, e.process, e.clock, e.monotonic_s, e.host) == ("oom_killed", 506, "python", clock, mono,
                                                                        host)


def test_the_oom_account_over_several_lines_is_one_kill():
    """The cgroup's usage and limit and the constraint come before the kill: one event carries them; an older
    kernel's "Kill process N" then "Killed process N" is one kill, not two."""
    lines = (REAL / "dmesg.log").read_text().splitlines()
    events = _feed(*lines)
    oom = [e for e in events if e.kind == "oom_killed"]
    assert len(oom) == 1 and oom[0].pid == 506
    assert dict(oom[0].details) == {"anon_rss_kb": "3598628", "constraint": "CONSTRAINT_MEMCG", "limit_kb": "4194304",
                                    "memcg": "/ncclcheck_oom", "scope": "cgroup", "usage_kb": "4194304"}
    old = _feed(*(HOST / "public" / "oom-old-earlyoom121.log").read_text().splitlines())
    assert [(e.kind, e.pid) for e in old] == [("oom_killed", 27541)]


@pytest.mark.parametrize(("line", "kind", "fields"), [
    ("NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.", "xid", {"xid": 79, "bus": "0000:2b:00"}),
    ("NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.",
     "xid", {"xid": 63, "bus": "0000:10:1c", "pid": 1896}),
    ("NVRM: Xid (PCI:0000:b7:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception", "xid",
     {"xid": 13, "pid": None, "process": None}),
    ("python[539]: segfault at 0 ip 00007f53b7b9bc5c sp 00007ffd8f7b4398 error 4 in libc.so.6[19bc5c,7f53b7a28000+"
     "189000] likely on CPU 0", "segfault", {"pid": 539, "details": (("library", "libc.so.6"),)}),
    ("traps: python[77] general protection fault ip:7f0 sp:7ff error:0 in libnccl.so.2[7f0+2000]", "segfault",
     {"pid": 77, "details": (("library", "libnccl.so.2"),)}),
    ("INFO: task python:31337 blocked for more than 120 seconds.", "hung_task", {"pid": 31337}),
    ("pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0", "pcie_error",
     {"bus": "0000:3b:00"}),
    ("  Warning  Evicted  2m  kubelet  The node was low on resource: memory.", "evicted", {}),
    ("5m  Warning  NodeNotReady  node/node-7  Node node-7 status is now: NodeNotReady", "node_failure",
     {"host": "node-7"}),
    ("4012.0          python          8  190000000K          0  00:00.004  OUT_OF_ME+", "scheduler_oom", {}),
    ("   JobState=NODE_FAIL Reason=NodeDown Dependency=(null)", "node_failure",
     {"details": (("reason", "NodeDown"),)}),
    ("salloc: error: Node failure on worker-1", "node_failure", {"host": "worker-1"}),
])
def test_each_record_kind(line, kind, fields):
    (e,) = _feed(line)
    assert e.kind == kind and {k: getattr(e, k) for k in fields} == fields


def test_ordinary_lines_are_no_host_records():
    assert _feed("[rank0]:[E1125 11:37:29.1 ProcessGroupNCCL.cpp:1] [PG ID 0 PG GUID 0 Rank 0] ProcessGroupNCCL "
                 "initialization options: size: 2, global rank: 0, TIMEOUT(ms): 600000",
                 "Name: the model is llama", "JobState=RUNNING Reason=None", "[   12.000000] usb 1-1: new device") == []


def test_a_describe_pod_names_its_pod_and_node():
    (e,) = _feed("Name:             train-worker-3", "Namespace:        default",
                 "Node:             node-10-239-0-9/10.239.0.9", "    Last State:     Terminated",
                 "      Reason:       OOMKilled", "      Exit Code:    137")
    assert (e.kind, e.source, e.pod, e.host, e.text) == ("oom_killed", "kubernetes", "train-worker-3",
                                                         "node-10-239-0-9", "pod train-worker-3: Reason: OOMKilled")


@pytest.mark.parametrize(("text", "key"), [("3b000", "0000:3b:00"), ("0000:3b:00", "0000:3b:00"),
                                           ("00000000:00:06.0", "0000:00:06"), ("60", "0000:00:06"),
                                           ("PCI:0000:2B:00", "0000:2b:00")])
def test_a_gpu_is_one_key_in_nccl_and_kernel_spelling(text, key):
    """NCCL prints busId 3b000 (the digits of 0000:3b:00.0); the kernel 0000:3b:00; nvidia-smi 00000000:00:06.0."""
    assert bus_key(text) == key


def test_a_real_oom_kill_is_joined_to_its_rank_by_pid():
    """The job's console (torchrun's table: rank 1, pid 506, SIGKILL) and the host's dmesg -T: the verdict says who
    killed rank 1, when, and the cgroup's limit; the evidence holds both files' lines."""
    a = run(REAL / "oom", REAL / "dmesg-T.log")
    v = a.verdict
    assert (v.kind.value, list(v.culprit_ranks), v.cause.cause.kind) == ("rank_failed_first", [1], "host_oom")
    assert v.summary.startswith("Rank 1 failed first: rank 1 (pid 506) was killed by the kernel's OOM killer at "
                                "2026-11-25 11:37:29 (memory cgroup /ncclcheck_oom at its limit of 4.00 GiB; the "
                                "process held 3.43 GiB); joined by PID")
    assert any(str(x).endswith("dmesg-T.log:469") for x in v.cause.locs)
    # the segfault of the other run in the same dmesg is listed as another process's record, not blamed
    assert [f.message for f in v.findings if f.code == "host-record"] == [
        "process 539 died of a segmentation fault at 2026-11-25 11:37:41, in libc.so.6; no rank of these inputs had "
        "that PID, GPU or host: another process's record"]


def test_raw_dmesg_times_count_from_boot():
    v = run(REAL / "oom", REAL / "dmesg.log").verdict
    assert "was killed by the kernel's OOM killer 59 s after its host booted" in v.summary


def test_a_real_segfault_is_joined_to_its_rank():
    v = run(REAL / "segfault", REAL / "dmesg.log").verdict
    assert (v.kind.value, list(v.culprit_ranks), v.cause.cause.kind) == ("rank_failed_first", [1], "native_crash")
    assert "rank 1 (pid 539) died of a segmentation fault 71 s after its host booted, in libc.so.6; joined by PID" \
        in v.summary


def test_an_xid_is_joined_by_the_gpu_bus_and_set_against_the_timeout():
    """Rank 2's NCCL line gives busId 2b000; the journal says 0000:2b:00 fell off the bus 41 s before the others'
    watchdogs fired: rank 2 is the culprit, a hardware fault, for the operators."""
    v = run(HOST / "xid").verdict
    assert (v.kind.value, list(v.culprit_ranks), v.cause.cause.kind) == ("rank_failed_first", [2], "gpu_hardware")
    assert ("the GPU of rank 2 (bus 0000:2b:00) reported Xid 79 at Nov 25 19:02:39, 41 s before the first timeout "
            "(by the two logs' clocks, which may disagree between hosts): the GPU has fallen off the bus") in v.summary
    assert "joined by GPU bus ID" in v.summary and "drain the node" in v.summary


def test_records_no_input_places_stand_for_themselves_and_say_so():
    """Only the host's log: the record is the failure, no rank is invented, and the report says what would name
    the rank. A corrected fault (Xid 63) is a note, not a failure."""
    v = run(HOST / "public" / "xid79-openkernel1151.log").verdict
    assert (v.kind.value, list(v.culprit_ranks), v.cause.cause.kind) == ("rank_failed_first", [], "gpu_hardware")
    assert v.summary.startswith("A process failed: the GPU (bus 0000:2b:00) reported Xid 79 at May 18 19:02:39")
    assert "no input says which rank that was" in v.summary
    v = run(HOST / "public" / "xid63-mlengineering.log").verdict
    assert v.kind.value == "no_failure" and [f.code for f in v.findings] == ["host-record"]


def test_a_node_failure_and_a_time_limit_from_scontrol(tmp_path):
    p = tmp_path / "job.txt"
    p.write_text("JobId=4012 JobName=train\n   JobState=NODE_FAIL Reason=NodeDown Dependency=(null)\n")
    v = run(p).verdict
    assert (v.cause.cause.kind, v.summary.split(":")[0]) == ("node_failure", "The job failed")
    p.write_text("JobId=4013 JobName=train\n   JobState=TIMEOUT Reason=TimeLimit Dependency=(null)\n")
    assert run(p).verdict.cause.cause.kind == "stopped_externally"


def test_json_carries_the_records_and_their_joins():
    r = runner.invoke(app, ["analyze-log", "--json", str(REAL / "oom"), str(REAL / "dmesg-T.log")])
    j = json.loads(r.stdout)
    assert j["schema_version"] == 7
    (oom,) = [e for e in j["events"]["system"] if e["kind"] == "oom_killed"]
    assert (oom["ranks"], oom["joined_by"], oom["pid"], oom["clock"], oom["details"]["limit_kb"]) == (
        "1", "pid", 506, "2026-11-25 11:37:29", "4194304")


def test_a_pods_oomkill_joins_the_ranks_that_ran_in_it(tmp_path):
    """`kubectl describe pod train-worker-1`: OOMKilled. The ranks whose NCCL lines were printed on host
    train-worker-1 (a pod's hostname is its name) are the ones it killed; the others only waited."""
    (tmp_path / "describe.txt").write_text(
        "Name:             train-worker-1\nNamespace:        default\nNode:             gpu-node-4/10.0.0.14\n"
        "Containers:\n  pytorch:\n    Last State:     Terminated\n      Reason:       OOMKilled\n"
        "      Exit Code:    137\n")
    for r, host in ((0, "train-master-0"), (1, "train-worker-1")):
        (tmp_path / f"rank{r}.log").write_text(
            f"{host}:{100 + r}:{200 + r} [0] NCCL INFO comm 0x55 rank {r} nranks 2 cudaDev 0 busId 1b000 - Init "
            "COMPLETE\n")
    v = run(tmp_path).verdict
    assert (v.kind.value, list(v.culprit_ranks), v.cause.cause.kind) == ("rank_failed_first", [1], "host_oom")
    assert "rank 1 (on train-worker-1) was OOMKilled (its container's memory limit" in v.summary
    assert "joined by host" in v.summary
