"""The host's and the scheduler's records (evidence/hostlog.py reads them), as a source of lines.

A kernel log (``dmesg``, ``journalctl -k``) or a scheduler's record (``kubectl describe pod``, ``sacct``, ``scontrol
show job``) may stand in any input, a rank's log among them: the lines that make a record on their own (a kill, an
Xid, a segfault, an eviction, a scheduler's state) hold one of hostlog's ``RECORD_WORDS``, kept by the block reader
wherever they stand. The reading itself (stamps, the OOM killer's account over several lines) stays in
evidence/hostlog.py, which ``archive.py`` and ``snapshot/`` also read a host's kernel log with.
"""

from __future__ import annotations

from collections.abc import Iterable

from ncclcheck.evidence import hostlog
from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Loc, Read, SystemEvent


class Records:
    """One input's host and scheduler records, in order (the OOM killer's account spans lines)."""

    def __init__(self) -> None:
        self._log = hostlog.HostLog()

    def feed(self, text: str, loc: Loc) -> Iterable[Read]:
        if hostlog.maybe_host_record(text) and (event := self._log.feed(text, loc)) is not None:
            return (event,)
        return ()


_DMESG = "tests/data/host/real/dmesg.log"
_CONSTRAINT = ("[   58.706161] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=ncclcheck_oom,mems_allowed=0,"
               "oom_memcg=/ncclcheck_oom,task_memcg=/ncclcheck_oom,task=python,pid=506,uid=0")
_KILLED = ("[   58.706182] Memory cgroup out of memory: Killed process 506 (python) total-vm:6855516kB, "
           "anon-rss:3598628kB, file-rss:226300kB, shmem-rss:0kB, UID:0 pgtables:8428kB oom_score_adj:0")
_SEGFAULT = ("[   70.705038] python[539]: segfault at 0 ip 00007f53b7b9bc5c sp 00007ffd8f7b4398 error 4 in "
             "libc.so.6[19bc5c,7f53b7a28000+189000] likely on CPU 0 (core 0, socket 0)")
_TRAP = "traps: python[77] general protection fault ip:7f0 sp:7ff error:0 in libnccl.so.2[7f0+2000]"
_HUNG = "INFO: task python:31337 blocked for more than 120 seconds."
_AER = "pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0"
_EVICTED = "  Warning  Evicted  2m  kubelet  The node was low on resource: memory."
_NODE_FAILURE = "salloc: error: Node failure on worker-1"
_XID63 = "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate."
FORMAT = Format(
    name="host records",
    words=(*hostlog.RECORD_WORDS, "OOM"),  # "OOM": kubectl's SystemOOM event
    make=Records,
    patterns=hostlog.PATTERNS,
    logical=True,
    samples=(
        Sample(_XID63, "tests/data/host/public/xid63-mlengineering.log:1",
               (SystemEvent("xid", "kernel", AT, _XID63, pid=1896, bus="0000:10:1c", xid=63),)),
        # the OOM killer's account: its constraint line, then the kill (mm/oom_kill.c, dump_oom_summary and
        # __oom_kill_process)
        Sample(_KILLED, f"{_DMESG}:469", (SystemEvent(
            "oom_killed", "kernel", AT, _KILLED[15:], pid=506, process="python", monotonic_s=58.706182,
            details=(("anon_rss_kb", "3598628"), ("constraint", "CONSTRAINT_MEMCG"), ("memcg", "/ncclcheck_oom"),
                     ("scope", "cgroup"))),), before=(_CONSTRAINT,)),
        Sample("Nov 25 19:02:39 node-7 kernel: NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.",
               "tests/data/host/xid/journal-k.log:3",
               (SystemEvent("xid", "kernel", AT, "NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.",
                            bus="0000:2b:00", xid=79, host="node-7", clock="Nov 25 19:02:39"),)),
        Sample(_SEGFAULT, f"{_DMESG}:470",
               (SystemEvent("segfault", "kernel", AT, _SEGFAULT[15:], pid=539, process="python",
                            monotonic_s=70.705038, details=(("library", "libc.so.6"),)),)),
        Sample(_TRAP, "Linux arch/x86/kernel/traps.c: '%s[%d] general protection fault ip:%lx sp:%lx error:%lx' "
               "behind 'traps: ', print_vma_addr's ' in <file>[<base>+<size>]'",
               (SystemEvent("segfault", "kernel", AT, _TRAP, pid=77, process="python",
                            details=(("library", "libnccl.so.2"),)),)),
        Sample(_HUNG, "Linux kernel/hung_task.c (check_hung_task): 'INFO: task %s:%d blocked for more than %ld "
               "seconds.'", (SystemEvent("hung_task", "kernel", AT, _HUNG, pid=31337, process="python",
                                         details=(("seconds", "120"),)),)),
        Sample(_AER, "Linux drivers/pci/pcie/aer.c (aer_print_port_info, before its 'error message received from' "
               "form): '%s%s error received: %04x:%02x:%02x.%d' behind the port's device and 'AER: '",
               (SystemEvent("pcie_error", "kernel", AT, _AER, bus="0000:3b:00", details=(("severity", "Fatal"),)),)),
        Sample(_EVICTED, "kubectl describe pod's Events table (Type, Reason, Age, From, Message), kubelet's eviction "
               "message 'The node was low on resource: %v.' (pkg/kubelet/eviction/helpers.go)",
               (SystemEvent("evicted", "kubernetes", AT, " ".join(_EVICTED.split())),)),
        Sample("   JobState=OUT_OF_MEMORY Reason=OutOfMemory Dependency=(null)",
               "tests/data/launchers/slurm-gpu/oom/scontrol.txt:4",
               (SystemEvent("scheduler_oom", "slurm", AT, "JobState=OUT_OF_MEMORY Reason=OutOfMemory "
                            "Dependency=(null)", details=(("reason", "OutOfMemory"),)),)),
        Sample(_NODE_FAILURE, "Slurm src/salloc/salloc.c (_node_fail_handler): error(\"Node failure on %s\")",
               (SystemEvent("node_failure", "slurm", AT, _NODE_FAILURE, host="worker-1"),)),
    ),
)
