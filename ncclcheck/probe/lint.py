"""Lint a host's NCCL/PyTorch configuration and say what to set instead.

The interface model follows NCCL's own selection (src/misc/socket.cc): with
NCCL_SOCKET_IFNAME unset it takes interfaces starting with ``ib``, else anything
not starting with docker/lo/virbr (virbr since 2.28.3), else docker, else lo,
and only interfaces that are up and running.  A value is a comma list of
prefixes; ``^`` excludes, ``=`` means exact names, and setting it replaces the
built-in exclusions entirely.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from ncclcheck.findings import Finding, Severity
from ncclcheck.frsettings import SETTINGS as FR_SETTINGS
from ncclcheck.probe.host import IMAGE_SET, Interface, Probe, Setting
from ncclcheck.probe.names import ALIASES, CURRENT, NCCL_REMOVED

GIB = 1 << 30

DEBUG_ONLY = ("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE", "NCCL_NET_GDR_LEVEL",
              "NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_NVLS_ENABLE", "NCCL_CROSS_NIC", "NCCL_NET")
INTEGER = ("NCCL_IB_DISABLE", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_TIMEOUT", "NCCL_IB_RETRY_CNT",
           "NCCL_IB_GID_INDEX", "NCCL_IB_TC", "NCCL_IB_SL", "NCCL_BUFFSIZE", "NCCL_NVLS_ENABLE", "NCCL_CROSS_NIC",
           "NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS",
           "NCCL_CUMEM_ENABLE", "NCCL_RAS_ENABLE", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_BLOCKING_WAIT",
           "TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_DUMP_ON_TIMEOUT",
           "TORCH_NCCL_DESYNC_DEBUG", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "TORCH_NCCL_ENABLE_MONITORING")
TIMEOUT_HELP = ("No environment variable sets the collective timeout: it is init_process_group(timeout=...) "
                "(default 10 min for NCCL since PyTorch 2.2), per new_group(timeout=...) for sub-groups, "
                "TrainingArguments(ddp_timeout=...) in Hugging Face (seconds), DEEPSPEED_TIMEOUT for DeepSpeed "
                "(minutes), DDPStrategy(timeout=...) in Lightning.")


_SET_BY = {"launcher": ", set by the launcher", "image": ", set by the image", "container": ", set for the container"}


def _ev(s: Setting) -> str:
    return f"{s.name}={s.value} ({s.source}{_SET_BY.get(s.origin, '')})"


@dataclass(frozen=True)
class IfSpec:
    """A parsed NCCL_SOCKET_IFNAME value."""

    exclude: bool
    exact: bool
    items: tuple[str, ...]

    @classmethod
    def parse(cls, value: str) -> IfSpec:
        v = value.strip()
        exclude = v.startswith("^")
        v = v[1:] if exclude else v
        exact = v.startswith("=")
        v = v[1:] if exact else v
        return cls(exclude, exact, tuple(x for x in v.split(",") if x))

    def hits(self, name: str) -> bool:
        hit = any(name == it if self.exact else name.startswith(it) for it in self.items)
        return hit != self.exclude


def _usable(i: Interface) -> bool:
    return i.running and bool(i.usable_addresses)


def nccl_pick(ifaces: Sequence[Interface], ifname: str | None) -> tuple[list[Interface], str]:
    """The interfaces NCCL would use (bootstrap takes the first) and the rule that chose them."""
    if ifname and len(ifname) > 1:
        spec = IfSpec.parse(ifname)
        return [i for i in ifaces if _usable(i) and spec.hits(i.name)], f"NCCL_SOCKET_IFNAME={ifname}"
    for rule in ("ib", "^docker,lo,virbr", "docker", "lo", "virbr"):
        spec = IfSpec.parse(rule)
        picks = [i for i in ifaces if _usable(i) and spec.hits(i.name)]
        if picks:
            return picks, f"NCCL's default order, rule '{rule}'"
    return [], "NCCL's default order"


def _routable(i: Interface) -> bool:
    return any(not a.link_local for a in i.usable_addresses)


def lint(p: Probe) -> list[Finding]:
    """Every finding, most severe first."""
    out: list[Finding] = []
    out += _names(p)
    out += _interfaces(p)
    out += _rdma(p)
    out += _limits(p)
    out += _flight_recorder(p)
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    return sorted(out, key=lambda f: order[f.severity])


def _names(p: Probe) -> list[Finding]:
    out = []
    values = {s.name: s.value for s in p.settings}
    for s in p.settings:
        if s.name in ALIASES and ALIASES[s.name].startswith("TORCH_") and values.get(ALIASES[s.name]) == s.value:
            continue  # both spellings, equal: what the flight-recorder advice sets for every torch release
        if s.name == "NCCL_TIMEOUT" or (s.name.endswith("_TIMEOUT") and s.name.startswith(("NCCL_", "TORCH_NCCL_"))
                                        and s.name not in CURRENT and s.name not in ALIASES):
            out.append(Finding(Severity.ERROR, "timeout-not-read",
                               f"{s.name} is read by no NCCL or PyTorch release: it changes nothing. {TIMEOUT_HELP}",
                               (_ev(s),), "Remove it and set the timeout where it is read (see above)."))
        elif s.name in ALIASES:
            out.append(Finding(Severity.WARNING, "deprecated-name",
                               f"{s.name} is the old name of {ALIASES[s.name]}" +
                               ("; PyTorch releases from before the rename read only the old one."
                                if ALIASES[s.name].startswith("TORCH_") else "."), (_ev(s),),
                               f"Use {ALIASES[s.name]}={s.value}."))
        elif s.name in NCCL_REMOVED:
            out.append(Finding(Severity.WARNING, "removed-name",
                               f"{s.name} is no longer read: NCCL dropped it in {NCCL_REMOVED[s.name]}.", (_ev(s),),
                               "Remove it."))
        elif s.name in IMAGE_SET and s.origin == "image":
            out.append(Finding(Severity.INFO, "image-variable",
                               f"{s.name}={s.value}: {IMAGE_SET[s.name]}; NCCL and PyTorch do not read it. Nothing to "
                               "do.", (_ev(s),)))
        elif s.name.startswith(("NCCL_", "TORCH_NCCL_", "TORCH_FR_")) and s.name not in CURRENT:
            near = difflib.get_close_matches(s.name, sorted(CURRENT), n=1, cutoff=0.75)
            out.append(Finding(Severity.WARNING, "unknown-name",
                               f"{s.name} is not a variable NCCL or PyTorch reads" +
                               (f"; did you mean {near[0]}?" if near else "."), (_ev(s),),
                               f"Rename it to {near[0]}." if near else "Remove it."))
        if s.name in INTEGER and not _is_int(s.value):
            out.append(Finding(Severity.WARNING, "invalid-integer",
                               f"{s.name}={s.value!r} is not an integer: NCCL silently falls back to its default "
                               "(PyTorch may refuse to start).", (_ev(s),), f"Give {s.name} an integer value."))
        if s.name in DEBUG_ONLY and s.origin in ("container", "site"):
            where = "process 1 of this container has it too" if s.origin == "container" else f"it is in {s.source}"
            out.append(Finding(Severity.INFO, "platform-setting",
                               f"{s.name}={s.value} is set for every process here ({where}): by the image, the "
                               "platform or the job's spec, not by this shell. A platform's deliberate workaround is "
                               "information, not a mistake.", (_ev(s),),
                               "Keep it if the platform chose it; ask its owners before changing it."))
        elif s.name in DEBUG_ONLY:
            out.append(Finding(Severity.WARNING, "debug-variable",
                               f"{s.name} is one of NCCL's debugging variables: NCCL's documentation says keeping "
                               "them set may cause sub-optimal behaviour, crashes or hangs. A platform may set one "
                               "for every job as a deliberate workaround (NVLink multicast off is a common one): "
                               "then it is information, not a mistake.", (_ev(s),),
                               f"If you or your job set {s.name}, unset it unless it is a deliberate, documented "
                               "workaround; if the platform did, keep it."))
        if s.name == "DEEPSPEED_TIMEOUT":
            out.append(Finding(Severity.INFO, "deepspeed-timeout-minutes",
                               f"DEEPSPEED_TIMEOUT={s.value} is in minutes (default 30), not seconds.", (_ev(s),)))
    return out


def _is_int(v: str) -> bool:
    try:
        int(v, 0)
    except ValueError:
        return False
    return True


def _interfaces(p: Probe) -> list[Finding]:
    out = []
    ifname = p.setting("NCCL_SOCKET_IFNAME")
    by_name = {i.name: i for i in p.interfaces}
    if ifname and len(ifname.value) > 1:
        spec = IfSpec.parse(ifname.value)
        matched = [i for i in p.interfaces if spec.hits(i.name)]
        if not matched:
            out.append(Finding(Severity.ERROR, "ifname-no-match",
                               f"NCCL_SOCKET_IFNAME={ifname.value} matches no interface on this host "
                               f"({', '.join(by_name) or 'none found'}): NCCL will fail to initialise.",
                               (_ev(ifname),), "Set it to an interface that exists here, e.g. the one below."))
        for i in matched:
            if not spec.exclude and not i.running:
                out.append(Finding(Severity.ERROR, "ifname-down", f"NCCL_SOCKET_IFNAME matches {i.name}, which is "
                                   "not up and running: NCCL skips it.", (_ev(ifname),)))
            elif not spec.exclude and i.virtual:
                out.append(Finding(Severity.WARNING, "ifname-virtual",
                                   f"NCCL_SOCKET_IFNAME matches {i.name}, a {i.kind} interface that other nodes "
                                   "usually cannot reach.", (_ev(ifname),)))
        if not spec.exclude and not spec.exact:
            for item in spec.items:
                hits = [i.name for i in p.interfaces if i.name.startswith(item)]
                if len(hits) > 1:
                    out.append(Finding(Severity.WARNING, "ifname-prefix",
                                       f"NCCL_SOCKET_IFNAME={ifname.value} is a prefix list: '{item}' matches "
                                       f"{', '.join(hits)}, and NCCL's socket transport uses every match.",
                                       (_ev(ifname),), f"Name one exactly: NCCL_SOCKET_IFNAME=={hits[0]}."))
        if spec.exclude:
            dropped = [d for d in ("lo", "docker") if not any(it.startswith(d) or d.startswith(it) for it in spec.items)]
            if dropped:
                out.append(Finding(Severity.WARNING, "ifname-exclude-drops-defaults",
                                   f"NCCL_SOCKET_IFNAME={ifname.value} replaces NCCL's built-in exclusions, so "
                                   f"{' and '.join(dropped)} can now be picked.", (_ev(ifname),),
                                   f"Add them: NCCL_SOCKET_IFNAME={ifname.value},{','.join(dropped)}."))
        if not p.setting("GLOO_SOCKET_IFNAME"):
            out.append(Finding(Severity.INFO, "gloo-ifname-missing",
                               "NCCL_SOCKET_IFNAME is set but GLOO_SOCKET_IFNAME is not: gloo (CPU) process groups, "
                               "which many frameworks create, still pick their own interface.", (_ev(ifname),),
                               "Set GLOO_SOCKET_IFNAME to the same interface."))
    else:
        picks, rule = nccl_pick(p.interfaces, None)
        if picks and (picks[0].virtual or picks[0].kind == "wifi" or not _routable(picks[0])):
            i = picks[0]
            why = "has only link-local addresses" if not _routable(i) else f"is a {i.kind} interface"
            out.append(Finding(Severity.WARNING, "default-pick-virtual",
                               f"With NCCL_SOCKET_IFNAME unset, NCCL would bootstrap over {i.name} ({rule}), which "
                               f"{why}: other nodes may not reach it.", (f"interface {i.name}",),
                               "Set NCCL_SOCKET_IFNAME to the interface on the cluster network (below)."))
        elif picks and any(x.virtual for x in picks[1:]):
            extra = [x.name for x in picks[1:] if x.virtual]
            out.append(Finding(Severity.WARNING, "default-extra-virtual",
                               f"With NCCL_SOCKET_IFNAME unset, NCCL bootstraps over {picks[0].name} but its socket "
                               f"transport would also use {', '.join(extra)} ({rule}), which other nodes cannot reach.",
                               tuple(f"interface {x}" for x in extra),
                               f"Set NCCL_SOCKET_IFNAME=={picks[0].name}."))
    return out


def _rdma(p: Probe) -> list[Finding]:
    out = []
    active = [r for r in p.rdma if r.active]
    ib_disable, net = p.setting("NCCL_IB_DISABLE"), p.setting("NCCL_NET")
    if active and ib_disable and ib_disable.value.strip() not in ("", "0"):
        out.append(Finding(Severity.WARNING, "rdma-disabled",
                           f"{len(active)} active RDMA port(s) ({', '.join(r.hca for r in active)}) but "
                           "NCCL_IB_DISABLE is set: inter-node traffic goes over TCP sockets.", (_ev(ib_disable),),
                           "Unset NCCL_IB_DISABLE."))
    if active and net and net.value.lower() == "socket":
        out.append(Finding(Severity.WARNING, "rdma-disabled",
                           "Active RDMA ports but NCCL_NET=Socket forces TCP sockets.", (_ev(net),),
                           "Unset NCCL_NET."))
    if p.rdma and not p.uverbs:
        out.append(Finding(Severity.WARNING, "rdma-no-uverbs",
                           "RDMA devices exist in /sys/class/infiniband but /dev/infiniband/uverbs* does not: NCCL "
                           "cannot use them (a container started without the devices).",
                           tuple(f"device {r.hca}" for r in p.rdma[:4]),
                           "Pass the devices into the container (e.g. --device=/dev/infiniband) or the RDMA plugin."))
    if p.rdma and not p.libibverbs:
        out.append(Finding(Severity.WARNING, "rdma-no-libibverbs",
                           "RDMA devices exist but libibverbs cannot be loaded: NCCL will print 'NET/IB : No device "
                           "found' and fall back to sockets.", (), "Install rdma-core / libibverbs1."))
    roce = [r for r in active if (r.link_layer or "").lower() == "ethernet"]
    gid = p.setting("NCCL_IB_GID_INDEX")
    if roce and gid:
        v2 = sorted({g for r in roce for g in r.roce_v2_gids})
        out.append(Finding(Severity.INFO, "roce-gid-index",
                           f"RoCE ports and NCCL_IB_GID_INDEX={gid.value}: NCCL 2.21 and later pick the GID themselves "
                           "and their documentation says not to set it; for older NCCL it must be a RoCE v2 index"
                           + (f" ({', '.join(map(str, v2))} here)." if v2 else "."), (_ev(gid),)))
    if active and p.memlock is not None and p.memlock != -1:
        out.append(Finding(Severity.WARNING, "memlock-limited",
                           f"RDMA needs to pin memory, but the memlock limit is {p.memlock >> 10} KiB, not unlimited.",
                           ("ulimit -l",), "Run with ulimit -l unlimited (docker: --ulimit memlock=-1)."))
    return out


def _limits(p: Probe) -> list[Finding]:
    if p.shm_bytes is not None and p.shm_bytes < GIB:
        return [Finding(Severity.WARNING, "shm-small",
                        f"/dev/shm is {p.shm_bytes / 2**20:.0f} MiB: NCCL's shared-memory transport and data loaders "
                        "need more (containers default to 64 MiB).", ("/dev/shm",),
                        "Give the container more: docker --shm-size=16g (or --ipc=host).")]
    return []


def _flight_recorder(p: Probe) -> list[Finding]:
    out = []
    dump = p.setting("TORCH_NCCL_DUMP_ON_TIMEOUT") or p.setting("TORCH_FR_DUMP_ON_TIMEOUT")
    buf = [s for s in (p.setting("TORCH_NCCL_TRACE_BUFFER_SIZE"), p.setting("TORCH_FR_BUFFER_SIZE")) if s]
    if dump and dump.value.strip() not in ("0", "") and not any(_is_int(s.value) and int(s.value, 0) > 0 for s in buf):
        out.append(Finding(Severity.WARNING, "dump-without-buffer",
                           f"{dump.name}=1 but no trace buffer is set: the dump on timeout will be empty.", (_ev(dump),),
                           "Also set TORCH_FR_BUFFER_SIZE=2000 (and TORCH_NCCL_TRACE_BUFFER_SIZE=2000 for torch < 2.8)."))
    aeh = p.setting("TORCH_NCCL_ASYNC_ERROR_HANDLING") or p.setting("NCCL_ASYNC_ERROR_HANDLING")
    if dump and aeh and aeh.value.strip() == "1" and aeh.origin == "launcher":
        out.append(Finding(Severity.INFO, "error-handling-vs-dump",
                           f"{aeh.name}=1 was set by the launcher for its workers (torchrun's agent does so unless the "
                           "job's environment sets it); it tears the process down as soon as the watchdog sees the "
                           "error, which can cut the flight-recorder dump short.", (_ev(aeh), _ev(dump)),
                           "To keep dumps whole, export TORCH_NCCL_ASYNC_ERROR_HANDLING=3 before starting torchrun: "
                           "the agent keeps a value it is given."))
    elif dump and aeh and aeh.value.strip() == "1":
        out.append(Finding(Severity.WARNING, "error-handling-vs-dump",
                           f"{aeh.name}=1 tears the process down as soon as the watchdog sees the error, which can cut "
                           "the flight-recorder dump short.", (_ev(aeh), _ev(dump)),
                           "Leave TORCH_NCCL_ASYNC_ERROR_HANDLING at its default (3)."))
    return out


@dataclass(frozen=True)
class Recommendation:
    """One variable to set, and why."""

    name: str
    value: str
    reason: str


def chosen_interface(p: Probe) -> Interface | None:
    """The interface the cluster traffic should use: MASTER_ADDR's subnet, else the default route's."""
    by = {i.name: i for i in p.interfaces}
    for name in (p.master_addr_iface, p.default_route):
        i = by.get(name or "")
        if i is not None and i.running and i.kind != "loopback" and _routable(i):
            return i
    picks, _ = nccl_pick(p.interfaces, None)
    return next((i for i in picks if not i.virtual and _routable(i)), None)


def recommend(p: Probe, debug: bool = False) -> list[Recommendation]:
    """A ready block for production, plus (with ``debug``) one for the next run of a failing job."""
    out = []
    i = chosen_interface(p)
    if i is not None:
        why = ("holds MASTER_ADDR's subnet" if i.name == p.master_addr_iface else "carries the default route")
        out.append(Recommendation("NCCL_SOCKET_IFNAME", f"={i.name}",
                                  f"{i.name} {why}; '=' means exactly this name, not a prefix"))
        out.append(Recommendation("GLOO_SOCKET_IFNAME", i.name, "gloo (CPU) groups use the same network"))
    active = [r for r in p.rdma if r.active]
    if active and p.uverbs:
        out.append(Recommendation("NCCL_IB_HCA", "=" + ",".join(r.hca for r in active),
                                  f"the {len(active)} active RDMA port(s), exact names"))
    if debug:
        out += [
            Recommendation("NCCL_DEBUG", "INFO", "NCCL logs its version, interfaces and transports"),
            Recommendation("NCCL_DEBUG_SUBSYS", "INIT,NET,ENV", "limit INFO to set-up and network"),
            Recommendation("NCCL_DEBUG_FILE", "/tmp/nccl.%h.%p.log", "one file per host and process"),
            Recommendation("TORCH_CPP_LOG_LEVEL", "INFO", "PyTorch prints its NCCL settings and PG set-up"),
            *(Recommendation(name, value, why) for name, value, why in FR_SETTINGS),
            Recommendation("TORCH_NCCL_DESYNC_DEBUG", "1", "PyTorch names the ranks that did not join"),
        ]
    return out
