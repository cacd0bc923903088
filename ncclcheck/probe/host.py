"""Read-only facts about a host: network interfaces, RDMA, GPUs, limits and the NCCL/PyTorch configuration.

Every collector reads through a :class:`Host`: a root directory under which /sys,
/proc, /dev and /etc are looked up, the environment, a command runner with a
timeout, and a few hooks for what only the OS can say (addresses, rlimits,
whether libibverbs loads).  Tests build fake hosts as directory trees; nothing
here changes the system.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import ipaddress
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata

CMD_TIMEOUT = 3.0
IFF_UP, IFF_LOOPBACK, IFF_RUNNING = 0x1, 0x8, 0x40
ARPHRD_INFINIBAND, ARPHRD_LOOPBACK = 32, 772


@dataclass(frozen=True)
class CmdResult:
    """What a command printed."""

    returncode: int
    stdout: str


Runner = Callable[[Sequence[str], float], "CmdResult | None"]


@dataclass(frozen=True)
class Address:
    """One address of an interface."""

    family: str  # ipv4 | ipv6
    address: str
    netmask: str | None

    @property
    def prefixlen(self) -> int | None:
        """The netmask as a prefix length (psutil gives IPv6 masks as addresses, which ipaddress does not parse)."""
        try:
            mask = int(ipaddress.ip_address(self.netmask or ""))
        except ValueError:
            return None
        bits = 32 if self.family == "ipv4" else 128
        ones = bin(mask).count("1")
        return ones if mask == ((1 << ones) - 1) << (bits - ones) else None

    @property
    def network(self) -> str | None:
        if self.prefixlen is None:
            return None
        try:
            return str(ipaddress.ip_interface(f"{self.address.split('%')[0]}/{self.prefixlen}").network)
        except ValueError:
            return None

    @property
    def cidr(self) -> str:
        """The address with its prefix length (``10.0.0.5/24``), as ``ip addr`` prints it; bare if unknown."""
        return self.address if self.prefixlen is None else f"{self.address}/{self.prefixlen}"

    @property
    def link_local(self) -> bool:
        try:
            ip = ipaddress.ip_address(self.address.split("%")[0])
        except ValueError:
            return False
        return ip.is_link_local or ip.is_loopback


@dataclass(frozen=True)
class Host:
    """Where the collectors read from: this machine, or a fake one built by a test."""

    root: str = "/"
    env: Mapping[str, str] = field(default_factory=dict)
    home: str = "~"
    run: Runner | None = None
    addresses: Callable[[], Mapping[str, Sequence[Address]]] = lambda: {}
    memlock: Callable[[], int | None] = lambda: None  # soft limit in bytes, -1 unlimited
    libibverbs: Callable[[], bool] = lambda: False
    disk_size: Callable[[str], int | None] = lambda path: _statvfs_size(path)
    hostname: str = "?"
    system: str = "Linux"

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *(p.lstrip("/") for p in parts))

    def read(self, *parts: str) -> str | None:
        try:
            with open(self.path(*parts), encoding="utf-8", errors="replace") as f:
                return f.read().strip()
        except OSError:
            return None

    def command(self, cmd: Sequence[str]) -> CmdResult | None:
        return self.run(cmd, CMD_TIMEOUT) if self.run else None


def _statvfs_size(path: str) -> int | None:
    if not os.path.isdir(path) or not hasattr(os, "statvfs"):
        return None
    st = os.statvfs(path)
    return st.f_blocks * st.f_frsize


def _run(cmd: Sequence[str], timeout: float) -> CmdResult | None:
    """Run a program if it exists; None when it does not, fails to start, or overruns its timeout."""
    if shutil.which(cmd[0]) is None:
        return None
    try:
        p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return CmdResult(p.returncode, p.stdout)


def _psutil_addresses() -> Mapping[str, Sequence[Address]]:
    import psutil

    out: dict[str, list[Address]] = {}
    for name, addrs in psutil.net_if_addrs().items():
        for a in addrs:
            fam = "ipv4" if a.family == socket.AF_INET else "ipv6" if a.family == socket.AF_INET6 else None
            if fam:
                out.setdefault(name, []).append(Address(fam, a.address, a.netmask))
    return out


def _memlock() -> int | None:
    try:
        import resource
    except ImportError:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return -1 if soft == resource.RLIM_INFINITY else soft


def _libibverbs() -> bool:
    name = ctypes.util.find_library("ibverbs")
    if not name:
        return False
    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True


def this_host() -> Host:
    """The machine we run on."""
    return Host(root="/", env=dict(os.environ), home=os.path.expanduser("~"), run=_run, addresses=_psutil_addresses,
                memlock=_memlock, libibverbs=_libibverbs, hostname=socket.gethostname(), system=platform.system())


# ---------------------------------------------------------------- network interfaces

_VIRTUAL = (
    ("docker", "docker"), ("br-", "bridge"), ("virbr", "bridge"), ("cni", "bridge"), ("flannel", "overlay"),
    ("cali", "overlay"), ("vxlan", "overlay"), ("veth", "veth"), ("tun", "tunnel"), ("tap", "tunnel"),
    ("wg", "wireguard"), ("tailscale", "tailscale"), ("ip6tnl", "tunnel"), ("sit", "tunnel"), ("gre", "tunnel"),
    ("ifb", "virtual"), ("dummy", "virtual"), ("lo", "loopback"),
)
VIRTUAL_KINDS = {"docker", "bridge", "overlay", "veth", "tunnel", "wireguard", "tailscale", "virtual", "loopback"}


@dataclass(frozen=True)
class Interface:
    """One network interface and what NCCL would think of it."""

    name: str
    kind: str  # physical, loopback, docker, bridge, veth, overlay, tunnel, wifi, ipoib, bond, virtual, ...; see _kind
    up: bool
    running: bool  # IFF_RUNNING: up and with carrier; NCCL uses nothing else
    mtu: int | None
    speed_mbps: int | None
    addresses: tuple[Address, ...]
    index: int

    @property
    def virtual(self) -> bool:
        return self.kind in VIRTUAL_KINDS

    @property
    def usable_addresses(self) -> tuple[Address, ...]:
        """Addresses NCCL would use (it skips IPv6 loopback)."""
        return tuple(a for a in self.addresses if not (a.family == "ipv6" and a.address.split("%")[0] == "::1"))


def _int(text: str | None, base: int = 10) -> int | None:
    try:
        return int(text, base) if text not in (None, "") else None
    except ValueError:
        return None


def _kind(host: Host, name: str, arp_type: int | None, physical: bool) -> str:
    base = host.path("sys/class/net", name)
    if arp_type == ARPHRD_LOOPBACK:
        return "loopback"
    if arp_type == ARPHRD_INFINIBAND or name.startswith("ib"):
        return "ipoib"
    if os.path.isdir(os.path.join(base, "bonding")) or name.startswith("bond"):
        return "bond"
    if os.path.isdir(os.path.join(base, "wireless")) or os.path.exists(os.path.join(base, "phy80211")) or \
            re.match(r"wl", name):
        return "wifi"
    if os.path.isdir(os.path.join(base, "bridge")):
        return "docker" if name.startswith("docker") else "bridge"
    for prefix, kind in _VIRTUAL:
        if name.startswith(prefix):
            return kind
    # NOTE: no PCI device and no telling name: a container's own uplink (its end of a veth pair) looks like this.
    return "physical" if physical else "other"


def interfaces(host: Host) -> tuple[Interface, ...]:
    """All interfaces, in the kernel's index order (the order NCCL sees them in)."""
    addrs = host.addresses()
    net = host.path("sys/class/net")
    names = sorted(os.listdir(net)) if os.path.isdir(net) else sorted(addrs)
    out: list[Interface] = []
    for name in names:
        flags = _int(host.read("sys/class/net", name, "flags"), 16)
        oper = host.read("sys/class/net", name, "operstate")
        carrier = host.read("sys/class/net", name, "carrier")
        if flags is not None:
            up = bool(flags & IFF_UP)
            # NOTE: /sys has no IFF_RUNNING bit in "flags"; operstate up (or unknown with carrier, as lo) is its mirror.
            running = up and (oper == "up" or (oper == "unknown" and carrier == "1"))
        else:
            up = running = bool(addrs.get(name))
        physical = os.path.exists(host.path("sys/class/net", name, "device"))
        speed = _int(host.read("sys/class/net", name, "speed"))
        out.append(Interface(
            name=name,
            kind=_kind(host, name, _int(host.read("sys/class/net", name, "type")), physical),
            up=up,
            running=running,
            mtu=_int(host.read("sys/class/net", name, "mtu")),
            speed_mbps=speed if speed and speed > 0 else None,
            addresses=tuple(addrs.get(name, ())),
            index=_int(host.read("sys/class/net", name, "ifindex")) or 10_000 + len(out),
        ))
    return tuple(sorted(out, key=lambda i: i.index))


def default_route(host: Host) -> str | None:
    """The interface of the IPv4 default route, from /proc/net/route."""
    text = host.read("proc/net/route")
    for line in (text or "").splitlines()[1:]:
        f = line.split()
        if len(f) >= 4 and f[1] == "00000000" and (_int(f[3], 16) or 0) & 0x1:
            return f[0]
    return None


def iface_for(address: str, ifaces: Sequence[Interface]) -> str | None:
    """The interface whose subnet holds ``address`` (an IP literal), if any."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return None
    for i in ifaces:
        for a in i.addresses:
            if a.network and ip in ipaddress.ip_network(a.network):
                return i.name
    return None


# ---------------------------------------------------------------- RDMA

@dataclass(frozen=True)
class RdmaPort:
    """One port of an RDMA device."""

    device: str
    port: int
    state: str | None
    phys_state: str | None
    rate: str | None
    link_layer: str | None  # InfiniBand | Ethernet (RoCE)
    roce_v2_gids: tuple[int, ...]

    @property
    def active(self) -> bool:
        return (self.state or "").endswith("ACTIVE")

    @property
    def hca(self) -> str:
        return f"{self.device}:{self.port}"


def rdma_ports(host: Host) -> tuple[RdmaPort, ...]:
    """Ports under /sys/class/infiniband with state, rate, link layer and RoCE v2 GID indexes."""
    base = host.path("sys/class/infiniband")
    if not os.path.isdir(base):
        return ()
    out = []
    for dev in sorted(os.listdir(base)):
        ports = host.path("sys/class/infiniband", dev, "ports")
        for p in sorted(os.listdir(ports), key=lambda x: _int(x) or 0) if os.path.isdir(ports) else ():
            def read(name: str, dev: str = dev, p: str = p) -> str | None:
                return host.read("sys/class/infiniband", dev, "ports", p, name)
            gids = []
            types_dir = host.path("sys/class/infiniband", dev, "ports", p, "gid_attrs", "types")
            for idx in sorted(os.listdir(types_dir), key=lambda x: _int(x) or 0) if os.path.isdir(types_dir) else ():
                gid = read(f"gids/{idx}") or ""
                if (read(f"gid_attrs/types/{idx}") or "").lower() == "roce v2" and gid.strip("0:"):
                    gids.append(int(idx))
            out.append(RdmaPort(dev, _int(p) or 0, read("state"), read("phys_state"), read("rate"), read("link_layer"),
                                tuple(gids)))
    return tuple(out)


def uverbs(host: Host) -> tuple[str, ...]:
    """/dev/infiniband/uverbs* device nodes (missing in containers started without them)."""
    d = host.path("dev/infiniband")
    return tuple(sorted(f for f in os.listdir(d) if f.startswith("uverbs"))) if os.path.isdir(d) else ()


# ---------------------------------------------------------------- GPUs

@dataclass(frozen=True)
class Gpu:
    """One GPU as nvidia-smi lists it."""

    index: int
    name: str
    bus_id: str
    driver: str
    memory: str


def gpus(host: Host) -> tuple[tuple[Gpu, ...], tuple[tuple[str, str, str], ...], bool]:
    """(GPUs, topology pairs (a, b, link), whether nvidia-smi answered)."""
    q = host.command(["nvidia-smi", "--query-gpu=index,name,pci.bus_id,driver_version,memory.total",
                      "--format=csv,noheader"])
    if q is None or q.returncode != 0:
        return (), (), False
    found = []
    for line in q.stdout.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) >= 5 and f[0].isdigit():
            found.append(Gpu(int(f[0]), f[1], f[2], f[3], f[4]))
    return tuple(found), topology(host), True


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def topology(host: Host) -> tuple[tuple[str, str, str], ...]:
    """GPU pairs and their link (NV#, PIX, PXB, PHB, NODE, SYS) from ``nvidia-smi topo -m``."""
    t = host.command(["nvidia-smi", "topo", "-m"])
    if t is None or t.returncode != 0:
        return ()
    lines = [_ANSI.sub("", x) for x in t.stdout.splitlines() if x.strip()]
    if not lines:
        return ()
    header = lines[0].split()
    pairs = []
    for line in lines[1:]:
        cells = line.split()
        if not cells or not re.fullmatch(r"GPU\d+", cells[0]):
            continue
        for col, cell in zip(header, cells[1:], strict=False):
            if re.fullmatch(r"GPU\d+", col) and col > cells[0] and cell != "X":
                pairs.append((cells[0], col, cell))
    return tuple(pairs)


# ---------------------------------------------------------------- limits, configuration, versions

def shm_bytes(host: Host) -> int | None:
    """Size of /dev/shm (NCCL's shared-memory transport lives there)."""
    return host.disk_size(host.path("dev/shm"))


def port_range(host: Host) -> tuple[int, int] | None:
    """net.ipv4.ip_local_port_range."""
    f = (host.read("proc/sys/net/ipv4/ip_local_port_range") or "").split()
    return (int(f[0]), int(f[1])) if len(f) == 2 and all(x.isdigit() for x in f) else None


@dataclass(frozen=True)
class Setting:
    """A configuration value and where it came from."""

    name: str
    value: str
    source: str  # env | /etc/nccl.conf | ~/.nccl.conf | NCCL_CONF_FILE path
    origin: str = "user"  # who set it: user | launcher | image | container | site (see ``origin_of``)


_WATCHED = re.compile(r"^(NCCL_|TORCH_NCCL_|TORCH_FR_|TORCH_DISTRIBUTED_DEBUG$|TORCH_CPP_LOG_LEVEL$|GLOO_SOCKET_IFNAME$|"
                      r"MASTER_ADDR$|MASTER_PORT$|DEEPSPEED_TIMEOUT$|TORCHELASTIC_)")


def _conf_file(host: Host, path: str, label: str) -> list[Setting]:
    text = host.read(path)
    out = []
    for line in (text or "").splitlines():
        line = line.split("#", 1)[0].strip()
        if "=" in line:
            k, v = (x.strip() for x in line.split("=", 1))
            if k:
                out.append(Setting(k, v, label))
    return out


# Variables images set to record what they installed, read by neither NCCL nor PyTorch.
IMAGE_SET = {"NCCL_VERSION": "NVIDIA's CUDA and NGC images set it to record the NCCL version they installed"}


def init_env(host: Host) -> dict[str, str]:
    """The environment of process 1: in a container, what the image, the runtime and the pod spec set for all."""
    text = host.read("proc/1/environ")
    pairs = (item.split("=", 1) for item in (text or "").split("\x00") if "=" in item)
    return {k: v for k, v in pairs}


def origin_of(name: str, value: str, container: Mapping[str, str], launcher: Mapping[str, str] | None) -> str:
    """Who set a variable, so that a finding speaks to whoever can change it.

    ``image``: a variable images set for their own record. ``launcher``: in the rank's environment but not in
    its launcher's (torchrun's agent adds some for its workers). ``container``: the same value in process 1's
    environment, so the image, the container runtime or the pod spec set it for every process, not this shell.
    """
    if name in IMAGE_SET:
        return "image"
    if launcher is not None and name not in launcher:
        return "launcher"
    if container.get(name) == value:
        return "container"
    return "user"


def settings(host: Host, launcher: Mapping[str, str] | None = None) -> tuple[Setting, ...]:
    """Values in force, environment first: NCCL reads its config files only for names the environment lacks.

    ``launcher``: the environment of the process that started this one (a rank's torchrun agent), when known.
    """
    container = init_env(host)
    env = [Setting(k, v, "env", origin_of(k, v, container, launcher))
           for k, v in sorted(host.env.items()) if _WATCHED.match(k)]
    conf = host.env.get("NCCL_CONF_FILE")
    user = _conf_file(host, conf, conf) if conf else _conf_file(host, os.path.join(host.home, ".nccl.conf"),
                                                                  "~/.nccl.conf")
    system = [Setting(x.name, x.value, x.source, "site") for x in _conf_file(host, "/etc/nccl.conf", "/etc/nccl.conf")]
    out: dict[str, Setting] = {}
    for s in (*env, *user, *system):
        out.setdefault(s.name, s)
    return tuple(out.values())


_DRIVER_CUDA = re.compile(r"CUDA Version:\s*(\d+\.\d+)")


def driver_cuda(host: Host) -> str | None:
    """The newest CUDA the driver supports, from ``nvidia-smi``'s banner (no ``--query-gpu`` field holds it)."""
    out = host.command(["nvidia-smi"])
    m = _DRIVER_CUDA.search(out.stdout) if out and out.returncode == 0 else None
    return m.group(1) if m else None


_TORCH_CUDA = re.compile(r"^cuda\b[^=]*=\s*['\"]([\d.]+)['\"]", re.M)


def torch_cuda(package: str = "torch") -> str | None:
    """The CUDA runtime torch was built for, from ``torch/version.py`` (read as text; torch is never imported)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        try:
            with open(os.path.join(folder, "version.py"), encoding="utf-8") as f:
                m = _TORCH_CUDA.search(f.read())
        except OSError:
            continue
        return m.group(1) if m else None
    return None


def versions() -> dict[str, str]:
    """Installed torch / NCCL wheels, read from package metadata (torch is never imported)."""
    out = {}
    for pkg in ("torch", "nvidia-nccl-cu12", "nvidia-nccl-cu13", "nvidia-nccl-cu11"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    return out


@dataclass(frozen=True)
class Probe:
    """Everything collected about one host."""

    hostname: str
    system: str
    python: str
    interfaces: tuple[Interface, ...]
    default_route: str | None
    master_addr: str | None
    master_addr_iface: str | None
    rdma: tuple[RdmaPort, ...]
    uverbs: tuple[str, ...]
    libibverbs: bool
    gpus: tuple[Gpu, ...]
    topology: tuple[tuple[str, str, str], ...]
    nvidia_smi: bool
    shm_bytes: int | None
    memlock: int | None
    port_range: tuple[int, int] | None
    settings: tuple[Setting, ...]
    versions: Mapping[str, str]
    driver_cuda: str | None = None  # the newest CUDA the driver supports (nvidia-smi's banner)
    torch_cuda: str | None = None  # the CUDA runtime the installed torch was built for

    def setting(self, name: str) -> Setting | None:
        return next((s for s in self.settings if s.name == name), None)

    def value(self, name: str) -> str | None:
        s = self.setting(name)
        return s.value if s else None


def collect(host: Host, with_versions: bool = True) -> Probe:
    """Collect every section; a section that does not exist here comes back empty, never as an error."""
    ifaces = interfaces(host)
    master = host.env.get("MASTER_ADDR")
    found, topo, smi = gpus(host)
    return Probe(
        hostname=host.hostname,
        system=host.system,
        python=sys.version.split()[0],
        interfaces=ifaces,
        default_route=default_route(host),
        master_addr=master,
        master_addr_iface=iface_for(master, ifaces) if master else None,
        rdma=rdma_ports(host),
        uverbs=uverbs(host),
        libibverbs=host.libibverbs(),
        gpus=found,
        topology=topo,
        nvidia_smi=smi,
        shm_bytes=shm_bytes(host),
        memlock=host.memlock(),
        port_range=port_range(host),
        settings=settings(host),
        versions=versions() if with_versions else {},
        driver_cuda=driver_cuda(host) if smi and with_versions else None,
        torch_cuda=torch_cuda() if with_versions else None,
    )
