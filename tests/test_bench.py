"""Benchmark: bandwidth arithmetic (no torch), then real gloo runs on CPU under torchrun (torch needed)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REAL

from ncclcheck.bench.config import ConfigError, parse_args, parse_bytes
from ncclcheck.bench.metrics import bus_factor, conclusion, summarise

EXAMPLE = REAL.parents[2] / "examples" / "incident-8rank" / "rank0.log"


def test_bus_factors_follow_nccl_tests():
    assert bus_factor("all_reduce", 8) == 2 * 7 / 8
    assert bus_factor("all_gather", 4) == 3 / 4
    assert bus_factor("reduce_scatter", 2) == 1 / 2
    assert bus_factor("broadcast", 8) == 1.0
    assert bus_factor("all_reduce", 1) is None  # one rank: busbw is not defined, never divide by it


def test_summarise_uses_the_slowest_rank_per_iteration():
    r = summarise("all_reduce", 2_000_000_000, 2, None, 1, [[0.006, 0.007, 0.006], [0.008, 0.006, 0.006]], None)
    assert (r.median_s, r.min_s, r.max_s) == (0.007, 0.006, 0.008)
    assert r.algbw == pytest.approx(2e9 / 0.007 / 1e9)
    assert r.busbw == pytest.approx(r.algbw * 1.0)
    assert r.rank_medians == (0.006, 0.006)


def test_all_gather_size_is_the_whole_array():
    r = summarise("all_gather", 1_000_000_000, 4, None, 1, [[1.0]] * 4, None)
    assert r.algbw == pytest.approx(4.0) and r.busbw == pytest.approx(3.0)


def test_reduce_scatter_input_is_already_the_whole_array():
    r = summarise("reduce_scatter", 2_000_000_000, 2, None, 1, [[1.0]] * 2, None)
    assert r.algbw == pytest.approx(2.0) and r.busbw == pytest.approx(1.0)


def test_conclusion():
    base = summarise("all_reduce", 2_000_000_000, 2, None, 1, [[0.006]], None)
    c1 = summarise("all_reduce", 2_000_000_000, 2, 10_000_000, 50, [[0.0084]], 0.006)
    assert conclusion([base, c1]) == ("Chunks of 1e7 elements cost 1.40x the unchunked time; chunking does not help "
                                      "a transfer that completes in 6.00 ms against a 600 s timeout.")


@pytest.mark.parametrize(("text", "n"), [("2GB", 2_000_000_000), ("2GiB", 2**31), ("500000000", 500_000_000)])
def test_parse_bytes(text, n):
    assert parse_bytes(text) == n


def test_options():
    cfg = parse_args(["--size", "5e8", "--chunks", "1e8,1e7,1e6"])
    assert (cfg.size, cfg.chunks, cfg.nbytes) == (500_000_000, (100_000_000, 10_000_000, 1_000_000), 2_000_000_000)
    assert parse_args(["--bytes", "2GB", "--dtype", "bfloat16"]).size == 1_000_000_000
    with pytest.raises(ConfigError, match="--size"):
        parse_args(["--size", "-1"])


def test_from_log_replays_the_watchdog_collective():
    cfg = parse_args(["--from-log", str(EXAMPLE)])
    assert (cfg.op, cfg.size, cfg.log_op) == ("all_reduce", 467019003, "ALLREDUCE")


def test_without_torch_the_bench_says_how_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.delitem(sys.modules, "ncclcheck.bench.runner", raising=False)
    from ncclcheck.bench.__main__ import main

    assert main(["--size", "1e3"]) == 2
    assert "torch is not installed: pip install 'ncclcheck[bench]'" in capsys.readouterr().err


def test_core_never_imports_torch():
    """analyze-log (text logs and flight-recorder dumps), explain and probe run without importing torch."""
    dumps = str(REAL / "barrier" / "dumps")
    code = ("import sys, ncclcheck.cli;"
            "from typer.testing import CliRunner;"
            "app = ncclcheck.cli.app;"
            f"r = CliRunner().invoke(app, ['analyze-log', {str(EXAMPLE)!r}, {dumps!r}, '--json']);"
            "assert r.exit_code == 1 and '\"flight_recorder\"' in r.stdout, r.output;"
            "CliRunner().invoke(app, ['explain', '--numel', '5']);"
            "CliRunner().invoke(app, ['probe', '--format', 'json']);"
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
