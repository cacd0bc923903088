"""probe output a person can use: export lines and values whole at any width, prefix lengths, natural durations."""

from __future__ import annotations

import re

import pytest
from test_probe import NDR, build
from typer.testing import CliRunner

import ncclcheck.probe.host as host_module
from ncclcheck.cli import app
from ncclcheck.probe.host import Address
from ncclcheck.transfer import human_seconds

runner = CliRunner()
WIDTHS = (40, 60, 80, 120)


@pytest.fixture
def busy_host(tmp_path, monkeypatch):
    """A host with long names, many addresses and RDMA ports, MASTER_ADDR set: every section filled."""
    h = build(tmp_path / "node-with-a-rather-long-hostname",
              {"lo": {"type": 772, "operstate": "unknown", "mtu": 65536},
               "enp193s0f0np0": {"device": True, "speed": 400000, "mtu": 9000},
               "docker0": {"dirs": ["bridge"]}, "ib0": {"type": 32, "device": True, "mtu": 4092}},
              route="enp193s0f0np0", ib={f"mlx5_{i}": {1: NDR} for i in range(4)}, uverbs=4, libibverbs=True,
              env={"MASTER_ADDR": "10.20.30.40", "NCCL_SOCKET_IFNAME": "enp", "NCCL_DEBUG_FILE": "/shared/logs/x/y/z/"
                   "nccl-debug-output.%h.%p.log", "NCCL_NTHREADS": "512"},
              addrs={"lo": [("ipv4", "127.0.0.1", "255.0.0.0")],
                     "enp193s0f0np0": [("ipv4", "10.20.30.41", "255.255.255.0"),
                                       ("ipv6", "fe80::ae1f:6bff:fe2c:1234%enp193s0f0np0", "ffff:ffff:ffff:ffff::")],
                     "docker0": [("ipv4", "172.17.0.1", "255.255.0.0")],
                     "ib0": [("ipv4", "192.168.100.41", "255.255.252.0")]})
    monkeypatch.setattr(host_module, "this_host", lambda: h)
    return h


def probe_output(width: int, *args: str) -> str:
    r = runner.invoke(app, ["probe", *args], env={"COLUMNS": str(width)}, catch_exceptions=False)
    assert r.exit_code in (0, 1), r.stderr
    return r.stdout


@pytest.mark.parametrize("width", WIDTHS)
def test_export_block_is_whole_at_any_width(busy_host, width):
    """Every export line is complete on one line, and the block sources as it should."""
    out = probe_output(width, "--debug")
    shell = runner.invoke(app, ["probe", "--format", "shell", "--debug"]).stdout.splitlines()
    lines = out.splitlines()
    block = lines[next(i for i, line in enumerate(lines) if line.startswith("set (")) + 1:]
    exports = [line for line in block if line.startswith("export ")]
    assert exports == shell
    assert all(line.startswith(("export ", "# ")) for line in block), block


@pytest.mark.parametrize("width", WIDTHS)
def test_values_are_never_cut_or_folded(busy_host, width):
    """Numbers, addresses and settings appear whole, whatever the width (tables stack when they do not fit)."""
    out = probe_output(width)
    tokens = set(out.split())
    for value in ("65536", "9000", "4092", "10.20.30.41/24", "fe80::ae1f:6bff:fe2c:1234%enp193s0f0np0/64",
                  "192.168.100.41/22", "172.17.0.1/16", "127.0.0.1/8", "mlx5_3:1",
                  "/shared/logs/x/y/z/nccl-debug-output.%h.%p.log", "enp193s0f0np0"):
        assert value in tokens, (value, width)
    assert "400,000" in out and "…" not in out


def test_addresses_have_prefix_lengths_not_netmasks(busy_host):
    out = probe_output(200)
    assert "10.20.30.41/24" in out and "255.255.255.0" not in out and "ffff:ffff" not in out


def test_address_cidr():
    assert Address("ipv4", "10.0.0.5", "255.255.255.0").cidr == "10.0.0.5/24"
    assert Address("ipv6", "fe80::1%eth0", "ffff:ffff:ffff:ffff::").cidr == "fe80::1%eth0/64"
    assert Address("ipv4", "10.0.0.5", None).cidr == "10.0.0.5"
    assert Address("ipv4", "10.0.0.5", "not-a-mask").cidr == "10.0.0.5"


def test_compare_stacks_when_narrow(tmp_path):
    """Long per-node values stay whole in the cross-node comparison at 40 columns."""
    files = []
    for n, ifname in enumerate(("=enp193s0f0np0,enp193s0f1np1", "=ens5")):
        h = build(tmp_path / f"node{n}", {"eth0": {"device": True}}, env={"NCCL_SOCKET_IFNAME": ifname},
                  addrs={"eth0": [("ipv4", f"10.0.{n}.1", "255.255.255.0")]})
        from ncclcheck.probe.host import collect
        from ncclcheck.probe.lint import lint, recommend
        from ncclcheck.render.probe import probe_json
        p = collect(h, with_versions=False)
        f = tmp_path / f"n{n}.json"
        import json
        f.write_text(json.dumps(probe_json(p, lint(p), recommend(p))))
        files.append(str(f))
    r = runner.invoke(app, ["probe", "--compare", *files], env={"COLUMNS": "40"}, catch_exceptions=False)
    assert r.exit_code == 1
    assert "  =enp193s0f0np0,enp193s0f1np1  node0" in r.stdout.splitlines()


@pytest.mark.parametrize(("seconds", "text"), [
    (1.8797, "1.88 s"), (0.2972, "297 ms"), (0.0091, "9.1 ms"), (2.5e-5, "25 µs"), (3e-7, "<1 µs"),
    (600, "10 min"), (59.96, "1 min"), (0.9996, "1 s"), (7200, "2 h"), (5 * 86400, "5 days"),
    (437256155.8 * 60, "831 years"), (1e30, "over 1,000 years"), (float("nan"), "?"),
])
def test_durations_read_naturally(seconds, text):
    assert human_seconds(seconds) == text


def test_no_duration_has_more_than_three_significant_digits():
    for exp in range(-6, 11):
        for mantissa in (1, 1.23456, 4.99999, 9.9996):
            text = human_seconds(mantissa * 10 ** exp)
            if not text.startswith("over"):
                assert len(re.sub(r"\D", "", text.split()[0]).lstrip("0")) <= 3, text


def render(renderable, width: int) -> str:
    import io

    from rich.console import Console

    out = io.StringIO()
    Console(file=out, width=width, soft_wrap=False, color_system=None).print(renderable, crop=False)
    return out.getvalue()


def test_fit_shows_the_table_exactly_when_every_cell_fits():
    from ncclcheck.console import fit_table

    rows = [("enp193s0f0np0", "58,720,256", "10.20.30.41/24\nfe80::1%enp193s0f0np0/64"), ("lo", "65,536", "")]
    fit = fit_table("t", ("name", "elements", "addresses"), rows)
    for width in range(fit.width() - 3, fit.width() + 3):
        text = render(fit, width)
        assert ("┃" in text) == (width >= fit.width()), width
        assert "…" not in text
        for value in ("enp193s0f0np0", "58,720,256", "10.20.30.41/24", "fe80::1%enp193s0f0np0/64", "65,536"):
            assert value in text.split(), (value, width)


def test_unbroken_wraps_between_words_and_never_inside_one():
    from ncclcheck.console import unbroken

    text = render(unbroken("fix: set NCCL_SOCKET_IFNAME=^docker0,lo,docker,virbr,veth,cni,flannel,calico now"), 30)
    assert text.splitlines() == ["fix: set", "NCCL_SOCKET_IFNAME=^docker0,lo,docker,virbr,veth,cni,flannel,calico",
                                 "now"]
