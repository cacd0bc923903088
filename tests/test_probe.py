"""probe: fake hosts built as directory trees with canned command output, this machine, and a real netns."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.probe.host import Address, CmdResult, Host, collect, driver_cuda, torch_cuda
from ncclcheck.probe.lint import lint, nccl_pick, recommend
from ncclcheck.probe.nodes import compare
from ncclcheck.render.probe import probe_json, shell

runner = CliRunner()
SMI_QUERY = ("nvidia-smi", "--query-gpu=index,name,pci.bus_id,driver_version,memory.total", "--format=csv,noheader")


def build(root: Path, ifaces: dict, route: str | None = None, ib: dict | None = None, uverbs: int = 0,
          env: dict | None = None, addrs: dict | None = None, commands: dict | None = None, memlock: int | None = -1,
          libibverbs: bool = False, shm: int = 16 << 30, files: dict | None = None) -> Host:
    """A fake host: /sys/class/net, /sys/class/infiniband, /proc/net/route, /dev, /etc under ``root``."""
    for idx, (name, attrs) in enumerate(ifaces.items(), 1):
        d = root / "sys/class/net" / name
        d.mkdir(parents=True)
        values = {"ifindex": idx, "type": 1, "mtu": 1500, "flags": "0x1003", "operstate": "up", "carrier": 1, **attrs}
        for key in ("ifindex", "type", "mtu", "flags", "operstate", "carrier", "speed"):
            if key in values:
                (d / key).write_text(f"{values[key]}\n")
        for sub in values.get("dirs", ()):
            (d / sub).mkdir()
        if values.get("device"):
            (d / "device").symlink_to(root)
    if route:
        (root / "proc/net").mkdir(parents=True)
        (root / "proc/net/route").write_text("Iface\tDestination\tGateway\tFlags\n"
                                             f"{route}\t00000000\t0100000A\t0003\n")
    for dev, ports in (ib or {}).items():
        for port, attrs in ports.items():
            d = root / "sys/class/infiniband" / dev / "ports" / str(port)
            d.mkdir(parents=True)
            for key in ("state", "phys_state", "rate", "link_layer"):
                (d / key).write_text(attrs[key] + "\n")
            for idx, (gtype, gid) in enumerate(attrs.get("gids", [])):
                (d / "gid_attrs/types").mkdir(parents=True, exist_ok=True)
                (d / "gids").mkdir(exist_ok=True)
                (d / "gid_attrs/types" / str(idx)).write_text(gtype + "\n")
                (d / "gids" / str(idx)).write_text(gid + "\n")
    if uverbs:
        (root / "dev/infiniband").mkdir(parents=True)
        for i in range(uverbs):
            (root / f"dev/infiniband/uverbs{i}").write_text("")
    for path, text in (files or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    canned = {tuple(k): v for k, v in (commands or {}).items()}
    return Host(root=str(root), env=env or {}, home="/home/u", run=lambda cmd, t: canned.get(tuple(cmd)),
                addresses=lambda: {k: [Address(*a) for a in v] for k, v in (addrs or {}).items()},
                memlock=lambda: memlock, libibverbs=lambda: libibverbs, disk_size=lambda p: shm,
                hostname=root.name)


def codes(p):
    return sorted(f.code for f in lint(p))


NDR = {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": "400 Gb/sec (4X NDR)", "link_layer": "InfiniBand"}
TOPO8 = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV18\t0-55\nGPU1\tNV18\t X \t0-55\n"


def test_dgx_like(tmp_path):
    """8 IB HCAs, a bond, docker0; NCCL_SOCKET_IFNAME names an interface that is not there, IB disabled."""
    host = build(
        tmp_path / "dgx",
        {"lo": {"type": 772, "operstate": "unknown"}, "eno1": {"device": True, "speed": 25000},
         "bond0": {"dirs": ["bonding"]}, "docker0": {"dirs": ["bridge"], "operstate": "down", "carrier": 0},
         "ib0": {"type": 32, "device": True}},
        route="eno1", ib={f"mlx5_{i}": {1: NDR} for i in range(8)}, uverbs=8, libibverbs=True,
        env={"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_DISABLE": "1"},
        addrs={"lo": [("ipv4", "127.0.0.1", "255.0.0.0")], "eno1": [("ipv4", "10.0.0.5", "255.255.255.0")],
               "bond0": [("ipv4", "192.168.1.5", "255.255.255.0")], "ib0": [("ipv4", "172.16.0.5", "255.255.0.0")]},
        commands={SMI_QUERY: CmdResult(0, "0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 550.54.15, 81559 MiB\n"
                                          "1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, 550.54.15, 81559 MiB\n"),
                  ("nvidia-smi", "topo", "-m"): CmdResult(0, TOPO8)},
    )
    p = collect(host, with_versions=False)
    assert [(i.name, i.kind) for i in p.interfaces] == [("lo", "loopback"), ("eno1", "physical"), ("bond0", "bond"),
                                                        ("docker0", "docker"), ("ib0", "ipoib")]
    assert p.topology == (("GPU0", "GPU1", "NV18"),) and len(p.gpus) == 2
    assert codes(p) == ["debug-variable", "gloo-ifname-missing", "ifname-no-match", "rdma-disabled"]
    recs = {r.name: r.value for r in recommend(p)}
    assert recs["NCCL_SOCKET_IFNAME"] == "=eno1"
    assert recs["NCCL_IB_HCA"] == "=" + ",".join(f"mlx5_{i}:1" for i in range(8))
    picks, rule = nccl_pick(p.interfaces, None)
    assert [i.name for i in picks] == ["ib0"] and "ib" in rule  # NCCL prefers ib* interfaces


def test_cloud_vm(tmp_path):
    """ens5 + docker0 + a veth: NCCL's socket transport would also use the veth; /dev/shm is 64 MiB."""
    host = build(
        tmp_path / "vm", {"lo": {"type": 772, "operstate": "unknown"}, "ens5": {"device": True},
                          "docker0": {"dirs": ["bridge"]}, "veth3f2a": {}},
        route="ens5", shm=64 << 20,
        addrs={"ens5": [("ipv4", "172.31.0.10", "255.255.240.0")], "docker0": [("ipv4", "172.17.0.1", "255.255.0.0")],
               "veth3f2a": [("ipv6", "fe80::1%veth3f2a", "ffff:ffff:ffff:ffff::")]})
    p = collect(host, with_versions=False)
    assert codes(p) == ["default-extra-virtual", "shm-small"]
    assert [i.name for i in nccl_pick(p.interfaces, None)[0]] == ["ens5", "veth3f2a"]
    assert shell(recommend(p)) == "export NCCL_SOCKET_IFNAME==ens5\nexport GLOO_SOCKET_IFNAME=ens5\n"


def test_roce_host(tmp_path):
    """RoCE: GID index set by hand, memlock limited."""
    roce = {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": "100 Gb/sec (4X EDR)", "link_layer": "Ethernet",
            "gids": [("IB/RoCE v1", "fe80:0000:0000:0000:0000:0000:0000:0001"),
                     ("RoCE v2", "fe80:0000:0000:0000:0000:0000:0000:0001"),
                     ("IB/RoCE v1", "0000:0000:0000:0000:0000:ffff:0a00:0005"),
                     ("RoCE v2", "0000:0000:0000:0000:0000:ffff:0a00:0005")]}
    host = build(tmp_path / "roce", {"eth0": {"device": True}}, route="eth0", ib={"mlx5_0": {1: roce}}, uverbs=1,
                 libibverbs=True, memlock=64 << 10, env={"NCCL_IB_GID_INDEX": "3"},
                 addrs={"eth0": [("ipv4", "10.0.0.5", "255.255.255.0")]})
    p = collect(host, with_versions=False)
    assert p.rdma[0].roce_v2_gids == (1, 3)
    assert codes(p) == ["memlock-limited", "roce-gid-index"]
    assert "(1, 3 here)" in next(f.message for f in lint(p) if f.code == "roce-gid-index")


def test_laptop(tmp_path):
    """Wi-Fi only: NCCL would bootstrap over wlan0."""
    host = build(tmp_path / "laptop", {"lo": {"type": 772, "operstate": "unknown"}, "wlan0": {"dirs": ["wireless"]},
                                       "docker0": {"dirs": ["bridge"], "operstate": "down"}}, route="wlan0",
                 addrs={"wlan0": [("ipv4", "192.168.1.20", "255.255.255.0")]})
    p = collect(host, with_versions=False)
    assert [i.kind for i in p.interfaces] == ["loopback", "wifi", "docker"]
    assert codes(p) == ["default-pick-virtual"]


def test_captured_h200_host(tmp_path):
    """nvidia-smi output and network facts captured on the 2xH200 machine."""
    cap = DATA / "hosts" / "h200x2"
    host = build(tmp_path / "h200", {"lo": {"type": 772, "operstate": "unknown", "mtu": 65536},
                                     "eth0": {"device": True, "mtu": 1400}, "ifb0": {"operstate": "down", "flags": "0x82"},
                                     "ifb1": {"operstate": "down", "flags": "0x82"}},
                 files={"proc/net/route": (cap / "route.txt").read_text()},
                 env={"NCCL_NVLS_ENABLE": "0"}, addrs={"eth0": [("ipv4", "192.0.2.2", "255.255.255.0")]},
                 commands={SMI_QUERY: CmdResult(0, (cap / "nvidia-smi-query.txt").read_text()),
                           ("nvidia-smi", "topo", "-m"): CmdResult(0, (cap / "nvidia-smi-topo.txt").read_text()),
                           ("nvidia-smi",): CmdResult(0, (cap / "nvidia-smi.txt").read_text())})
    p = collect(host, with_versions=False)
    assert [(g.name, g.driver) for g in p.gpus] == [("NVIDIA H200", "580.159.04")] * 2
    assert driver_cuda(host) == "13.0" and p.driver_cuda is None  # a version: read only with the versions
    assert p.topology == (("GPU0", "GPU1", "NV18"),)
    assert p.default_route == "eth0" and p.rdma == ()
    assert codes(p) == ["debug-variable"]


@pytest.mark.parametrize(("text", "cuda"), [
    ("__version__ = '2.11.0+cu130'\ncuda: Optional[str] = '13.0'\n", "13.0"),
    ("cuda = '12.8'\n", "12.8"),
    ("cuda: Optional[str] = None\n", None),  # a CPU build
])
def test_torch_cuda_is_read_from_version_py(tmp_path, monkeypatch, text, cuda):
    pkg = tmp_path / "faketorch_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise ImportError('never imported')\n")
    (pkg / "version.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert torch_cuda("faketorch_probe") == cuda
    assert torch_cuda("no_such_package_here") is None


def test_config_files_and_sources(tmp_path):
    """Environment beats ~/.nccl.conf beats /etc/nccl.conf; each value says where it came from."""
    host = build(tmp_path / "cfg", {"eth0": {"device": True}}, env={"NCCL_DEBUG": "WARN"},
                 files={"etc/nccl.conf": "NCCL_DEBUG=INFO\nNCCL_SOCKET_IFNAME=eth\n",
                        "home/u/.nccl.conf": "NCCL_SOCKET_IFNAME=eth0  # mine\n"})
    p = collect(host, with_versions=False)
    got = {(s.name, s.value, s.source) for s in p.settings}
    assert got == {("NCCL_DEBUG", "WARN", "env"), ("NCCL_SOCKET_IFNAME", "eth0", "~/.nccl.conf")}


def test_ifname_rules(tmp_path):
    host = build(tmp_path / "h", {"lo": {"type": 772, "operstate": "unknown"}, "eth0": {"device": True},
                                  "eth1": {"device": True, "operstate": "down"}, "docker0": {"dirs": ["bridge"]}},
                 env={"NCCL_SOCKET_IFNAME": "^docker0", "GLOO_SOCKET_IFNAME": "eth0"},
                 addrs={"eth0": [("ipv4", "10.0.0.2", "255.255.255.0")], "lo": [("ipv4", "127.0.0.1", "255.0.0.0")]})
    assert codes(collect(host, with_versions=False)) == ["ifname-exclude-drops-defaults"]
    host2 = build(tmp_path / "h2", {"eth0": {"device": True}, "eth1": {"device": True, "operstate": "down"}},
                  env={"NCCL_SOCKET_IFNAME": "eth", "GLOO_SOCKET_IFNAME": "eth0"},
                  addrs={"eth0": [("ipv4", "10.0.0.2", "255.255.255.0")]})
    assert codes(collect(host2, with_versions=False)) == ["ifname-down", "ifname-prefix"]


def test_compare_finds_cross_node_differences(tmp_path):
    a = build(tmp_path / "node1", {"eth0": {"device": True}}, addrs={"eth0": [("ipv4", "10.0.0.1", "255.255.255.0")]},
              env={"NCCL_SOCKET_IFNAME": "eth0"})
    b = build(tmp_path / "node2", {"eth0": {"device": True, "mtu": 9000}},
              addrs={"eth0": [("ipv4", "10.0.1.1", "255.255.255.0")]})
    docs = []
    for h in (a, b):
        p = collect(h, with_versions=False)
        docs.append((h.hostname, json.loads(json.dumps(probe_json(p, lint(p), recommend(p))))))
    rows = {r.aspect: [(g.value, g.members) for g in r.groups] for r in compare(docs).rows if not r.agrees}
    assert rows == {"NCCL subnets": [("10.0.0.0/24", ("node1",)), ("10.0.1.0/24", ("node2",))],
                    "NCCL MTU": [("1500", ("node1",)), ("9000", ("node2",))],
                    "NCCL_SOCKET_IFNAME": [("eth0", ("node1",)), (None, ("node2",))]}


def test_this_machine_cli(tmp_path):
    """A real run here: JSON with schema_version, every section present or explicitly empty; compare of two."""
    r = runner.invoke(app, ["probe", "--format", "json"], catch_exceptions=False)
    assert r.exit_code in (0, 1)
    j = json.loads(r.stdout)
    assert j["schema_version"] == 1 and j["probe"]["interfaces"]
    for f in ("n1.json", "n2.json"):
        (tmp_path / f).write_text(r.stdout)
    c = runner.invoke(app, ["probe", "--compare", str(tmp_path / "n1.json"), str(tmp_path / "n2.json")],
                      env={"COLUMNS": "400"})
    assert c.exit_code == 0 and c.stdout.splitlines()[:2] == ["2 hosts: n[1-2]", "no differences between n[1-2]"]


def test_compare_needs_two_files(tmp_path):
    r = runner.invoke(app, ["probe", "--compare", "x.json"])
    assert r.exit_code == 2 and "needs at least two" in r.stderr


def test_shell_output_is_only_exports():
    r = runner.invoke(app, ["probe", "--format", "shell", "--debug"], catch_exceptions=False)
    lines = r.stdout.splitlines()
    assert lines and all(line.startswith("export ") for line in lines)


NS = f"ncclcheck-test-{os.getpid()}"


def _netns_ok() -> bool:
    if not shutil.which("ip") or sys.platform != "linux":
        return False
    ok = subprocess.run(["ip", "netns", "add", NS], capture_output=True).returncode == 0
    if ok:
        subprocess.run(["ip", "netns", "del", NS], capture_output=True)
    return ok


@pytest.mark.skipif(not _netns_ok(), reason="network namespaces are not permitted here")
def test_network_namespace_end_to_end():
    """Two namespaces' worth of host: a veth pair, one end inside a fresh namespace; probe runs inside it."""
    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True)

    ip("netns", "add", NS)
    try:
        ip("link", "add", "nck-host", "type", "veth", "peer", "name", "nck-ns")
        ip("link", "set", "nck-ns", "netns", NS)
        ip("addr", "add", "10.199.0.1/24", "dev", "nck-host")
        ip("link", "set", "nck-host", "up")
        ip("-n", NS, "addr", "add", "10.199.0.2/24", "dev", "nck-ns")
        ip("-n", NS, "link", "set", "nck-ns", "up")
        ip("-n", NS, "link", "set", "lo", "up")
        env = {**os.environ, "MASTER_ADDR": "10.199.0.1", "NCCL_SOCKET_IFNAME": "eth0"}
        r = subprocess.run(["ip", "netns", "exec", NS, sys.executable, "-m", "ncclcheck", "probe", "--format", "json"],
                           capture_output=True, text=True, env=env, timeout=60)
        j = json.loads(r.stdout)
        names = {i["name"]: i for i in j["probe"]["interfaces"]}
        assert set(names) == {"lo", "nck-ns"}
        assert names["nck-ns"]["kind"] == "other"  # inside the namespace this veth end is the uplink
        assert names["nck-ns"]["running"] is True
        assert j["probe"]["master_addr_iface"] == "nck-ns"
        assert [f["code"] for f in j["findings"]][0] == "ifname-no-match"
        assert {"name": "NCCL_SOCKET_IFNAME", "value": "=nck-ns",
                "reason": "nck-ns holds MASTER_ADDR's subnet; '=' means exactly this name, not a prefix"} in j[
            "recommendations"]
        assert r.returncode == 1
    finally:
        subprocess.run(["ip", "link", "del", "nck-host"], capture_output=True)
        subprocess.run(["ip", "netns", "del", NS], capture_output=True)


def test_the_flight_recorder_advice_is_not_flagged_by_the_probe_that_gives_it():
    """probe --debug recommends both spellings (torch before 2.8 reads only the old one): set together with equal
    values they are no deprecated name; the old one alone still is."""
    from typer.testing import CliRunner

    from ncclcheck.cli import app
    from ncclcheck.frsettings import SETTINGS

    def codes(env):
        r = CliRunner().invoke(app, ["probe", "--format", "json"], env=env)
        return [f["code"] for f in json.loads(r.stdout)["findings"]]

    assert "deprecated-name" not in codes({k: v for k, v, _ in SETTINGS})
    assert "deprecated-name" in codes({"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000"})
