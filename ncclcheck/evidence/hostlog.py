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
_KILLED = re.compile(r"(?:(?P<cgroup>Memory cgroup) out of memory: |Out of memory: )?Kill(?:ed)? process (?P<pid>\d+) "
                     r"\((?P<process>[^)]{0,64})\)(?:(?:(?!Kill(?:ed)? process).)*?anon-rss:(?P<rss>\d+)kB)?")
_CONSTRAINT = re.compile(r"oom-kill:constraint=(?P<constraint>\w+),(?:(?!oom-kill:).)*?task_memcg=(?P<memcg>[^,]*),"
                         r"task=(?P<task>[^,]*),pid=(?P<pid>\d+)")
_LIMIT = re.compile(r"^memory: usage (?P<usage>\d+)kB, limit (?P<limit>\d+)kB")
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.\d)?\): "
                  r"(?P<xid>\d+),\s*(?:pid=['\"]?(?P<pid>\d+|<unknown>)['\"]?,\s*)?(?:name=(?P<name>[^,]*),\s*)?"
                  r"(?P<text>.*)")
_OFF_BUS = re.compile(r"NVRM: GPU (?:at )?(?:PCI:)?(?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.\d)?:? "
                      r"(?:GPU )?has fallen off the bus")
_SEGFAULT = re.compile(r"(?<!\S)(?P<process>\S+?)\[(?P<pid>\d+)\]: segfault at (?P<address>\w+) "
                       r"(?:(?:(?!segfault at).)*? in (?P<library>[^\[\s]+)\[)?")
_TRAP = re.compile(r"traps: (?P<process>\S+?)\[(?P<pid>\d+)\] (?P<trap>general protection fault|trap [\w ]+?)"
                   r"(?: .*? in (?P<library>[^\[\s]+)\[)?")
_HUNG = re.compile(r"INFO: task (?P<process>\S+?):(?P<pid>\d+) blocked for more than (?P<seconds>\d+) seconds")
_AER = re.compile(r"AER: (?:Uncorrected|Uncorrectable) \((?P<severity>Fatal|Non-Fatal)\) error (?:received|message "
                  r"received from)?:? ?(?:PCI:)?(?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})")

# --- the scheduler ------------------------------------------------------------------------------------------
_POD_NAME = re.compile(r"^Name:\s+(?P<pod>\S+)$")
_POD_NODE = re.compile(r"^Node:\s+(?P<node>[^/\s]+)")
_POD_REASON = re.compile(r"^\s*Reason:\s+(?P<reason>OOMKilled|Evicted|Error|ContainerStatusUnknown|DeadlineExceeded)\s*$")
_K8S_EVENT = re.compile(r"\b(?P<type>Warning|Normal)\s+(?P<reason>OOMKilling|SystemOOM|Evicted|NodeNotReady|"
                        r"Preempted|Preempting|Killing|NodeShutdown|Rebooted)\s+(?P<message>.*)$")
_K8S_OBJECT = re.compile(r"\b(?P<kind>pod|node)/(?P<name>[\w.-]+)")
_SACCT = re.compile(r"^\s*(?P<job>\d+(?:_\d+)?(?:\.(?:\d+|batch|extern))?)\s.*?\b(?P<state>OUT_OF_ME\+?|OUT_OF_MEMORY|NODE_FAIL|"
                    r"PREEMPTED|TIMEOUT|CANCELLED(?: by \d+)?|CANCELLED\+)(?=\s|$)")
_SCONTROL = re.compile(r"\bJobState=(?P<state>OUT_OF_MEMORY|NODE_FAIL|PREEMPTED|TIMEOUT|CANCELLED|FAILED)\b"
                       r"(?:.*?\bReason=(?P<reason>\S+))?")
_NODE_FAILURE = re.compile(r"error: Node failure on (?P<node>\S+)")

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
            self.pending.update(usage_kb=m["usage"], limit_kb=m["limit"])
            return None
        if "oom-kill:" in body and (m := _CONSTRAINT.search(body)):
            self.pending.update(constraint=m["constraint"], memcg=m["memcg"])
            return None
        if "process" in body and (m := _KILLED.search(body)):
            if self.killed == m["pid"]:  # older kernels: "Kill process N … or sacrifice child", then "Killed process N"
                return None
            self.killed = m["pid"]
            details = dict(self.pending)
            self.pending.clear()
            if m["rss"]:
                details["anon_rss_kb"] = m["rss"]
            if m["cgroup"] or details.get("constraint") == "CONSTRAINT_MEMCG":
                details["scope"] = "cgroup"
            obj = _K8S_OBJECT.search(body, 0, m.start() + 1)  # the same kill, as a node's event in kubectl
            return SystemEvent("oom_killed", "kubernetes" if obj else "kernel", loc, body[:300], pid=int(m["pid"]),
                               process=m["process"], host=obj["name"] if obj and obj["kind"] == "node" else None,
                               details=tuple(sorted(details.items())))
        if "NVRM" in body:
            if m := _XID.search(body):
                pid = int(m["pid"]) if m["pid"] and m["pid"].isdigit() else None
                name = (m["name"] or "").strip()
                self.lost = bus_key(m["bus"]) if m["xid"] == "79" else self.lost
                return SystemEvent("xid", "kernel", loc, body[:300], pid=pid,
                                   process=name if name and name != "<unknown>" else None,
                                   bus=bus_key(m["bus"]), xid=int(m["xid"]))
            if (m := _OFF_BUS.search(body)) and self.lost != bus_key(m["bus"]):  # not the Xid 79 line's restatement
                return SystemEvent("xid", "kernel", loc, body[:300], bus=bus_key(m["bus"]), xid=79)
            return None
        if "segfault at" in body and (m := _SEGFAULT.search(body)):
            return SystemEvent("segfault", "kernel", loc, body[:300], pid=int(m["pid"]), process=m["process"],
                               details=(("library", m["library"]),) if m["library"] else ())
        if "traps:" in body and (m := _TRAP.search(body)):
            return SystemEvent("segfault", "kernel", loc, body[:300], pid=int(m["pid"]), process=m["process"],
                               details=(("library", m["library"]),) if m["library"] else ())
        if "blocked for more than" in body and (m := _HUNG.search(body)):
            return SystemEvent("hung_task", "kernel", loc, body[:300], pid=int(m["pid"]), process=m["process"],
                               details=(("seconds", m["seconds"]),))
        if "AER:" in body and (m := _AER.search(body)):
            return SystemEvent("pcie_error", "kernel", loc, body[:300], bus=bus_key(m["bus"]),
                               details=(("severity", m["severity"]),))
        return None

    def _scheduler(self, body: str, loc: Loc) -> SystemEvent | None:
        if body.startswith("Name:") and (m := _POD_NAME.match(body)):
            self.pod, self.node = m["pod"], None
            return None
        if body.startswith("Node:") and (m := _POD_NODE.match(body)):
            self.node = m["node"]
            return None
        if "Reason:" in body and (m := _POD_REASON.match(body)):
            kind = {"OOMKilled": "oom_killed", "Evicted": "evicted"}.get(m["reason"])
            if kind is None:
                return None
            return SystemEvent(kind, "kubernetes", loc, f"pod {self.pod}: Reason: {m['reason']}" if self.pod else body,
                               host=self.node, pod=self.pod)
        if m := _K8S_EVENT.search(body):
            obj = _K8S_OBJECT.search(m["message"])
            pod = obj["name"] if obj and obj["kind"] == "pod" else self.pod
            host = obj["name"] if obj and obj["kind"] == "node" else self.node
            return SystemEvent(_K8S_KINDS[m["reason"]], "kubernetes", loc, body[:300], host=host, pod=pod)
        if "JobState=" in body and (m := _SCONTROL.search(body)) and m["state"] in _STATES:
            return SystemEvent(_STATES[m["state"]], "slurm", loc, body[:300], details=(("reason", m["reason"] or ""),))
        if "Node failure" in body and (m := _NODE_FAILURE.search(body)):
            return SystemEvent("node_failure", "slurm", loc, body[:300], host=m["node"])
        if m := _SACCT.match(body):
            state = m["state"].rstrip("+").split(" ")[0]
            kind = _STATES.get(state)
            if kind is None:
                return None
            return SystemEvent(kind, "slurm", loc, body.strip()[:300], details=(("job", m["job"]),))
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
