"""What the host and the scheduler recorded: kernel log lines and scheduler records, one event each.

A rank that dies without a word of its own (the OOM killer's SIGKILL, a segfault, a GPU lost from the bus, a
node gone) is explained by the kernel log of its host (``dmesg``, ``dmesg -T``, ``journalctl -k``,
``/var/log/kern.log``) or by its scheduler (``kubectl describe pod`` and ``get events``, ``sacct``, ``scontrol
show job``). Each such line becomes a :class:`SystemEvent` carrying what joins it to a rank: a PID, a GPU's PCI
bus, a host, pod or node name. The kernel prints the OOM killer's account over several lines (the cgroup's usage
and limit, the constraint, then the kill): :class:`HostLog` keeps what came before and hands the whole account
over at the kill.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime

from ncclcheck.evidence.stamps import MONTHS
from ncclcheck.evidence.types import Loc, SystemEvent

# Cheap words one of which every line read here holds: plain substring tests before any pattern.  RECORD_WORDS are
# those of a record one line makes (a kill, an Xid, a segfault, an eviction, a scheduler's state), which the reader
# keeps wherever it stands in any log; the rest only qualify a record beside them (kubectl describe's Name: and
# Node:, the OOM account's usage line, sacct's state column), read where the input is a host's records (read whole).
RECORD_WORDS = ("Kill", "kill", "NVRM", "segfault at", "traps: ", "blocked for more than", "AER:", "Evicted",
                "Node", "Rebooted", "Preempt", "PREEMPT", "NODE_FAIL", "OUT_OF_ME", "JobState=", " CANCELLED")
HOST_WORDS = (*RECORD_WORDS, "memory: usage", "Name:", "Node:")
# sacct's states a line may end with that other lines hold too ("TIMEOUT(ms)" in every ProcessGroupNCCL start line).
_STATE_ENDS = ("TIMEOUT", "CANCELLED", "CANCELLED+")


def maybe_host_record(text: str) -> bool:
    """A cheap test before any pattern: could this line be a host's or a scheduler's record?"""
    return any(map(text.__contains__, HOST_WORDS)) or text.endswith(_STATE_ENDS)

# --- where a line says when and where it was written --------------------------------------------------------
_STAMP = re.compile(
    r"^(?:\[\s*(?P<mono>\d+\.\d+)\]\s?"  # dmesg: seconds since boot
    r"|\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<tmon>[A-Z][a-z]{2}) +(?P<tday>\d+) (?P<ttime>\d\d:\d\d:\d\d) "
    r"(?P<tyear>\d{4})\]\s?"  # dmesg -T
    r"|(?P<smon>\w{3}) +(?P<sday>\d+) (?P<stime>\d\d:\d\d:\d\d) (?:(?P<shost>\S+) )?kernel: "
    r"(?:\[\s*(?P<smono>\d+\.\d+)\]\s?)?"  # syslog / journalctl -k / kern.log
    r"|(?P<iso>\d{4}-\d\d-\d\d)T(?P<itime>\d\d:\d\d:\d\d)[.,\d]*(?:[+-]\d\d:?\d\d|Z)? (?:(?P<ihost>\S+) kernel: )?"
    r"(?:\[\s*(?P<imono>\d+\.\d+)\]\s?)?)"
)

# --- the kernel ---------------------------------------------------------------------------------------------
_KILLED = re.compile(r"(?:(Memory cgroup) out of memory: |Out of memory: )?Kill(?:ed)? process (\d+) \(([^)]{0,64})\)"
                     r"(?:(?:(?!Kill(?:ed)? process).)*?anon-rss:(\d+)kB)?")
_CONSTRAINT = re.compile(r"oom-kill:constraint=(\w+),(?:(?!oom-kill:).)*?task_memcg=([^,]*),task=([^,]*),pid=(\d+)")
_LIMIT = re.compile(r"^memory: usage (\d+)kB, limit (\d+)kB")
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.\d)?\): (\d+),"
                  r"\s*(?:pid=['\"]?(\d+|<unknown>)['\"]?,\s*)?(?:name=([^,]*),\s*)?(.*)")
_OFF_BUS = re.compile(r"NVRM: GPU (?:at )?(?:PCI:)?([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.\d)?:? "
                      r"(?:GPU )?has fallen off the bus")
_SEGFAULT = re.compile(r"(?<!\S)(\S+?)\[(\d+)\]: segfault at (\w+) (?:(?:(?!segfault at).)*? in ([^\[\s]+)\[)?")
_TRAP = re.compile(r"traps: (\S+?)\[(\d+)\] (general protection fault|trap [\w ]+?)(?: .*? in ([^\[\s]+)\[)?")
_HUNG = re.compile(r"INFO: task (\S+?):(\d+) blocked for more than (\d+) seconds")
_AER = re.compile(r"AER: (?:Uncorrected|Uncorrectable) \((Fatal|Non-Fatal)\) error (?:received|message received "
                  r"from)?:? ?(?:PCI:)?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})")

# --- the scheduler ------------------------------------------------------------------------------------------
_POD_NAME = re.compile(r"^Name:\s+(\S+)$")
_POD_NODE = re.compile(r"^Node:\s+([^/\s]+)")
_POD_REASON = re.compile(r"^\s*Reason:\s+(OOMKilled|Evicted|Error|ContainerStatusUnknown|DeadlineExceeded)\s*$")
_K8S_EVENT = re.compile(r"\b(Warning|Normal)\s+(OOMKilling|SystemOOM|Evicted|NodeNotReady|Preempted|Preempting|"
                        r"Killing|NodeShutdown|Rebooted)\s+(.*)$")
_K8S_OBJECT = re.compile(r"\b(pod|node)/([\w.-]+)")
_SACCT = re.compile(r"^\s*(\d+(?:_\d+)?(?:\.(?:\d+|batch|extern))?)\s.*?\b(OUT_OF_ME\+?|OUT_OF_MEMORY|NODE_FAIL|"
                    r"PREEMPTED|TIMEOUT|CANCELLED(?: by \d+)?|CANCELLED\+)(?=\s|$)")
_SCONTROL = re.compile(r"\bJobState=(OUT_OF_MEMORY|NODE_FAIL|PREEMPTED|TIMEOUT|CANCELLED|FAILED)\b"
                       r"(?:.*?\bReason=(\S+))?")
_NODE_FAILURE = re.compile(r"error: Node failure on (\S+)")

# The patterns read behind RECORD_WORDS, each alternative holding one of them (tests/test_keep.py, through the
# registry: evidence/formats/host.py).
PATTERNS = (_KILLED, _CONSTRAINT, _XID, _OFF_BUS, _SEGFAULT, _TRAP, _HUNG, _AER, _K8S_EVENT, _SCONTROL, _NODE_FAILURE)

# What each scheduler state means, in the kinds of this module.
_STATES = {"OUT_OF_ME": "scheduler_oom", "OUT_OF_MEMORY": "scheduler_oom", "NODE_FAIL": "node_failure",
           "PREEMPTED": "preempted", "TIMEOUT": "time_limit", "CANCELLED": "cancelled"}
_K8S_KINDS = {"OOMKilling": "oom_killed", "SystemOOM": "oom_killed", "Evicted": "evicted",
              "NodeNotReady": "node_failure", "NodeShutdown": "node_failure", "Rebooted": "node_failure",
              "Preempted": "preempted", "Preempting": "preempted", "Killing": "killed_by_scheduler"}


def bus_key(text: str) -> str:
    """A GPU's PCI place as ``domain:bus:device`` (``0000:3b:00``), from the kernel's ``0000:3b:00`` or
    ``00000000:3b:00.0`` and from NCCL's ``busId 3b000`` (its hex digits: domain, bus, device, function)."""
    text = text.lower().removeprefix("pci:")
    if ":" in text:
        dom, bus, dev = text.split(".")[0].split(":")[-3:]
        return f"{int(dom, 16):04x}:{int(bus, 16):02x}:{int(dev, 16):02x}"
    n = int(text, 16) >> 4  # drop the function digit
    return f"{n >> 16:04x}:{(n >> 8) & 0xff:02x}:{n & 0xff:02x}"


@dataclass
class HostLog:
    """Reads one input's host and scheduler lines in order; :meth:`feed` returns the event a line completes."""

    pending: dict[str, str] = field(default_factory=dict)  # the OOM account so far: limit, memcg, constraint
    killed: str | None = None  # the PID of the last OOM kill read (its second line is not a second kill)
    lost: str | None = None  # the bus of the last Xid 79 (the driver says "fallen off the bus" again under it)
    pod: str | None = None  # kubectl describe: the pod and node its lines are about
    node: str | None = None

    def feed(self, text: str, loc: Loc) -> SystemEvent | None:
        stamp = _STAMP.match(text)
        body = text[stamp.end():] if stamp else text.strip()
        ev = self._kernel(body, loc) or self._scheduler(body, loc)
        if ev is None:
            return None
        ev = replace(ev, text=" ".join(ev.text.split()))
        return _stamped(ev, stamp) if stamp else ev

    def _kernel(self, body: str, loc: Loc) -> SystemEvent | None:
        if "memory: usage" in body and (m := _LIMIT.match(body)):
            self.pending.update(usage_kb=m[1], limit_kb=m[2])
            return None
        if "oom-kill:" in body and (m := _CONSTRAINT.search(body)):
            self.pending.update(constraint=m[1], memcg=m[2])
            return None
        if "process" in body and (m := _KILLED.search(body)):
            if self.killed == m[2]:  # older kernels: "Kill process N … or sacrifice child", then "Killed process N"
                return None
            self.killed = m[2]
            details = dict(self.pending)
            self.pending.clear()
            if m[4]:
                details["anon_rss_kb"] = m[4]
            if m[1] or details.get("constraint") == "CONSTRAINT_MEMCG":
                details["scope"] = "cgroup"
            obj = _K8S_OBJECT.search(body, 0, m.start() + 1)  # the same kill, as a node's event in kubectl
            return SystemEvent("oom_killed", "kubernetes" if obj else "kernel", loc, body[:300], pid=int(m[2]),
                               process=m[3], host=obj[2] if obj and obj[1] == "node" else None,
                               details=tuple(sorted(details.items())))
        if "NVRM" in body:
            if m := _XID.search(body):
                pid = int(m[3]) if m[3] and m[3].isdigit() else None
                name = (m[4] or "").strip()
                self.lost = bus_key(m[1]) if m[2] == "79" else self.lost
                return SystemEvent("xid", "kernel", loc, body[:300], pid=pid,
                                   process=name if name and name != "<unknown>" else None,
                                   bus=bus_key(m[1]), xid=int(m[2]))
            if (m := _OFF_BUS.search(body)) and self.lost != bus_key(m[1]):  # not the Xid 79 line's restatement
                return SystemEvent("xid", "kernel", loc, body[:300], bus=bus_key(m[1]), xid=79)
            return None
        if "segfault at" in body and (m := _SEGFAULT.search(body)):
            return SystemEvent("segfault", "kernel", loc, body[:300], pid=int(m[2]), process=m[1],
                               details=(("library", m[4]),) if m[4] else ())
        if "traps:" in body and (m := _TRAP.search(body)):
            return SystemEvent("segfault", "kernel", loc, body[:300], pid=int(m[2]), process=m[1],
                               details=(("library", m[4]),) if m[4] else ())
        if "blocked for more than" in body and (m := _HUNG.search(body)):
            return SystemEvent("hung_task", "kernel", loc, body[:300], pid=int(m[2]), process=m[1],
                               details=(("seconds", m[3]),))
        if "AER:" in body and (m := _AER.search(body)):
            return SystemEvent("pcie_error", "kernel", loc, body[:300], bus=bus_key(m[2]),
                               details=(("severity", m[1]),))
        return None

    def _scheduler(self, body: str, loc: Loc) -> SystemEvent | None:
        if body.startswith("Name:") and (m := _POD_NAME.match(body)):
            self.pod, self.node = m[1], None
            return None
        if body.startswith("Node:") and (m := _POD_NODE.match(body)):
            self.node = m[1]
            return None
        if "Reason:" in body and (m := _POD_REASON.match(body)):
            kind = {"OOMKilled": "oom_killed", "Evicted": "evicted"}.get(m[1])
            if kind is None:
                return None
            return SystemEvent(kind, "kubernetes", loc, f"pod {self.pod}: Reason: {m[1]}" if self.pod else body,
                               host=self.node, pod=self.pod)
        if m := _K8S_EVENT.search(body):
            rest = m[3]
            obj = _K8S_OBJECT.search(rest)
            pod = obj[2] if obj and obj[1] == "pod" else self.pod
            host = obj[2] if obj and obj[1] == "node" else self.node
            return SystemEvent(_K8S_KINDS[m[2]], "kubernetes", loc, body[:300], host=host, pod=pod)
        if "JobState=" in body and (m := _SCONTROL.search(body)) and m[1] in _STATES:
            return SystemEvent(_STATES[m[1]], "slurm", loc, body[:300], details=(("reason", m[2] or ""),))
        if "Node failure" in body and (m := _NODE_FAILURE.search(body)):
            return SystemEvent("node_failure", "slurm", loc, body[:300], host=m[1])
        if m := _SACCT.match(body):
            state = m[2].rstrip("+").split(" ")[0]
            kind = _STATES.get(state)
            if kind is None:
                return None
            return SystemEvent(kind, "slurm", loc, body.strip()[:300], details=(("job", m[1]),))
        return None


def _stamped(ev: SystemEvent, m: re.Match[str]) -> SystemEvent:
    """The event with the time and host its line's stamp gives: seconds since boot, or a time of day with its
    date where the line has one (the host's local time, which may not agree with another host's clock)."""
    if m["mono"]:
        return replace(ev, monotonic_s=float(m["mono"]))
    if m["ttime"]:
        return replace(ev, clock=_when(m["tyear"], m["tmon"], m["tday"], m["ttime"]))
    if m["stime"]:
        return replace(ev, clock=_when(None, m["smon"], m["sday"], m["stime"]), host=ev.host or m["shost"],
                       monotonic_s=float(m["smono"]) if m["smono"] else None)
    if m["itime"]:
        return replace(ev, clock=f"{m['iso']} {m['itime']}", host=ev.host or m["ihost"],
                       monotonic_s=float(m["imono"]) if m["imono"] else None)
    return ev


def _when(year: str | None, month: str, day: str, time: str) -> str:
    """``2026-11-25 11:37:29``, or ``Nov 25 11:37:29`` where the line gives no year."""
    if year is None or month not in MONTHS:
        return f"{month} {int(day)} {time}"
    return datetime(int(year), MONTHS[month], int(day)).strftime("%Y-%m-%d") + f" {time}"
