"""Benchmark without torch: bandwidth arithmetic, options, the sweep's table, plot and page, the CLI wiring."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import REAL
from rich.console import Console
from typer.testing import CliRunner

from ncclcheck.bench import fmt
from ncclcheck.bench.compare import PerfRow, match, parse_all_reduce_perf, points_from_json
from ncclcheck.bench.config import ConfigError, for_backend, make_config, parse_bytes, parse_sweep, sweep_sizes
from ncclcheck.bench.metrics import below_threshold, bus_factor, conclusion, summarise, sweep_point
from ncclcheck.bench.page import sweep_page
from ncclcheck.bench.plot import busbw_svg
from ncclcheck.bench.report import report, sweep_report
from ncclcheck.cli import app, bench_here

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
                                      "a transfer that completes in 6.00 ms against PyTorch's default NCCL watchdog "
                                      "timeout (10 min, Timeout(ms)=600000).")
    assert conclusion([base], timeout_s=1800) == ("One transfer takes 6.00 ms; against a watchdog timeout of 30.0 min "
                                                  "the size is never the problem.")


def test_a_gloo_run_is_compared_with_gloos_timeout_not_the_nccl_watchdog():
    base = summarise("all_reduce", 40_000_000, 2, None, 1, [[0.05]], None)
    c1 = summarise("all_reduce", 40_000_000, 2, 1_000_000, 10, [[0.07]], 0.05)
    text = conclusion([base, c1], backend="gloo")
    assert text.endswith("against PyTorch's default gloo timeout (30 min).") and "NCCL" not in text
    assert "watchdog" not in conclusion([base], timeout_s=60, backend="gloo")


@pytest.mark.parametrize(("text", "n"), [("2GB", 2_000_000_000), ("2GiB", 2**31), ("500000000", 500_000_000)])
def test_parse_bytes(text, n):
    assert parse_bytes(text) == n


def test_options():
    cfg = make_config(size="5e8", chunks="1e8,1e7,1e6")
    assert (cfg.size, cfg.chunks, cfg.nbytes) == (500_000_000, (100_000_000, 10_000_000, 1_000_000), 2_000_000_000)
    assert make_config(nbytes="2GB", dtype="bfloat16").size == 1_000_000_000
    with pytest.raises(ConfigError, match="--size"):
        make_config(size="-1")
    with pytest.raises(ConfigError, match="give --size or --bytes, not both"):
        make_config(size="1e6", nbytes="2GB")


def test_the_default_size_fits_the_backend():
    """No --size: 2 GB a rank with NCCL, 40 MB with gloo on CPU (2 GB there takes minutes); given sizes are kept."""
    cfg = make_config()
    assert cfg.default_size and cfg.default_chunks
    nccl, gloo = for_backend(cfg, "nccl"), for_backend(cfg, "gloo")
    assert (nccl.size, nccl.chunks) == (500_000_000, (100_000_000, 10_000_000, 1_000_000))
    assert (gloo.size, gloo.nbytes, gloo.chunks) == (10_000_000, 40_000_000, (1_000_000, 100_000))
    assert for_backend(make_config(size="1e5"), "gloo").chunks == ()  # every default chunk is as large as the whole
    assert for_backend(make_config(chunks="1e3"), "gloo").chunks == (1000,)


def test_from_log_replays_the_watchdog_collective():
    cfg = make_config(from_log=str(EXAMPLE))
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


# --- sweep: options, arithmetic, output (no torch) ------------------------------------------------------------------

@pytest.mark.parametrize(("text", "want"), [
    ("8:2G:4", (8, 2 * 2**30, 4)),  # nccl-tests: K/M/G are binary
    ("8:2G", (8, 2 * 2**30, 2)),
    ("1K:64M:8", (1024, 64 * 2**20, 8)),
    ("1KiB:2GB", (1024, 2_000_000_000, 2)),  # GiB binary, GB decimal (as --bytes)
    ("4:2e9:10", (4, 2_000_000_000, 10)),
])
def test_parse_sweep(text, want):
    assert parse_sweep(text) == want


@pytest.mark.parametrize(("text", "message"), [
    ("8", "is not MIN:MAX or MIN:MAX:FACTOR"),
    ("8:2G:1", "the factor must be at least 2"),
    ("8:2G:x", "the factor 'x' is not a whole number"),
    ("2G:8", "need 1 <= MIN <= MAX"),
    ("8:2Q", "'2Q' is not a size such as 8, 64K, 2G or 2GB"),
])
def test_parse_sweep_refuses(text, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_sweep(text)


def test_sweep_sizes_are_whole_elements():
    sizes = sweep_sizes(8, 2 * 2**30, 4, 4)
    assert (sizes[0], sizes[-1], len(sizes)) == (8, 2**31, 15)  # as nccl-tests -b 8 -e 2G -f 4
    assert sweep_sizes(1, 16, 2, 4) == [4, 8, 16]  # 1 and 2 bytes hold no float32
    assert sweep_sizes(6, 48, 2, 4) == [4, 12, 24, 48]


def test_sweep_options():
    cfg = make_config(sweep="8:2G:4")
    assert (cfg.sweep, cfg.iters, cfg.warmup, cfg.graph, cfg.chunks) == ((8, 2**31, 4), 20, 5, "off", ())
    assert (make_config().iters, make_config().warmup) == (10, 3)
    for kw, message in (({"min_busbw": 300}, "--min-busbw needs --sweep"),
                        ({"plot": "x.svg"}, "--plot needs --sweep"),
                        ({"graph": "on"}, "--graph needs --sweep"),
                        ({"sweep": "8:1K", "op": "broadcast"}, "--sweep measures all_reduce"),
                        ({"sweep": "8:1K", "size": "1e6"}, "leave out --size, --bytes and --chunks"),
                        ({"sweep": "8:1K", "chunks": ""}, "leave out --size, --bytes and --chunks"),
                        ({"sweep": "8:1K", "min_busbw": 0}, "--min-busbw must be a positive"),
                        ({"sweep": "1:1K", "dtype": "float32"}, "MIN must hold one float32 element")):
        with pytest.raises(ConfigError, match=re.escape(message)):
            make_config(**kw)


def test_python_m_ncclcheck_bench_parses_with_the_bench_commands_options(capsys):
    """Under torchrun the options are the bench command's (Typer's parser and help); a bad one exits 2 on stderr."""
    assert bench_here(["--bogus"]) == 2
    assert "No such option '--bogus'" in " ".join(capsys.readouterr().err.replace("│", " ").split())
    assert bench_here(["--sweep", "8:2G", "--op", "broadcast"]) == 2
    assert capsys.readouterr().err == ("ncclcheck.bench: error: --sweep measures all_reduce; leave out --op and "
                                       "--from-log\n")
    assert bench_here(["--nproc", "2"]) == 2
    assert "--nproc starts torchrun and belongs to ncclcheck bench" in capsys.readouterr().err
    assert bench_here(["--help"]) == 0
    out = capsys.readouterr().out
    assert "torchrun --nproc-per-node N -m ncclcheck.bench [OPTIONS]" in out and "--min-busbw" in out


def test_sweep_point_follows_nccl_tests():
    p = sweep_point(2**31, 2**29, 2, [0.0060, 0.0064], timing="queued", correct=None)
    assert p.time_s == pytest.approx(0.0062)  # the mean over ranks, as all_reduce_perf's default (-a 1)
    assert p.algbw == pytest.approx(2**31 / 0.0062 / 1e9)
    assert p.busbw == pytest.approx(p.algbw * 2 * 1 / 2)
    p4 = sweep_point(2**31, 2**29, 4, [0.01] * 4, timing="queued", correct=None)
    assert p4.busbw == pytest.approx(p4.algbw * 1.5)
    assert sweep_point(8, 2, 1, [1e-5], timing="graph", correct=True).busbw is None


def test_below_threshold_reads_the_largest_size():
    pts = [sweep_point(s, s // 4, 2, [s / 300e9], "queued", None) for s in (2**20, 2**30)]  # busbw 300 GB/s
    assert not below_threshold(pts, None)
    assert not below_threshold(pts, 299.0)
    assert below_threshold(pts, 301.0)
    one = [sweep_point(2**20, 2**18, 1, [2**20 / 5e9], "queued", None)]  # one rank: algbw 5 GB/s
    assert below_threshold(one, 6.0) and not below_threshold(one, 4.0)


@pytest.mark.parametrize(("seconds", "text"), [
    (8.3123e-6, "8.31 µs"), (123.4e-6, "123 µs"), (1.8797, "1.88 s"), (0.0017234, "1.72 ms"), (65, "65.0 s"),
    (437256155.8 * 60, "303650 days"), (5400, "90.0 min"), (3 * 3600, "3.00 h"),
])
def test_durations_read_naturally(seconds, text):
    assert fmt.duration(seconds) == text


@pytest.mark.parametrize(("n", "text"), [(8, "8 B"), (65536, "64 KiB"), (2**31, "2 GiB"), (3 * 2**19, "1.5 MiB")])
def test_sizes_read_naturally(n, text):
    assert fmt.size(n) == text


ENV_INFO = {"world_size": 2, "backend": "nccl", "device": "NVIDIA H200", "nccl": "2.28.9"}


def _points(world: int = 2, check: bool | None = True):
    sizes = sweep_sizes(8, 2 * 2**30, 4, 4)
    return [sweep_point(s, s // 4, world, [8e-6 + s / 340e9] * world, "queued", check) for s in sizes]


def _render(renderable, width: int) -> str:
    con = Console(width=width, file=io.StringIO(), color_system=None, legacy_windows=False)
    con.print(renderable)
    return con.file.getvalue()


@pytest.mark.parametrize("width", [60, 80, 120])
def test_sweep_report_never_cuts_a_number(width):
    cfg = make_config(sweep="8:2G:4", check=True, min_busbw=300)
    pts = _points()
    text = _render(sweep_report(cfg, ENV_INFO, pts, width=width), width)
    assert "…" not in text and max(map(len, text.splitlines())) <= width
    for p in pts:
        assert fmt.duration(p.time_s) in text and fmt.gbps(p.busbw) in text
    assert "PASS: busbw at 2 GiB is 339.6 GB/s, at or above --min-busbw 300 GB/s" in " ".join(text.split())
    assert ("algbw" in text) == (width >= 80)  # algbw (= busbw with 2 ranks) goes first when narrow
    assert "536,870,912" in text
    assert "queued: one dist.all_reduce call each, queued while the GPU waits" in " ".join(text.split())


def test_sweep_report_stacks_rows_when_even_the_essentials_do_not_fit():
    cfg = make_config(sweep="8:2G:4")
    text = _render(sweep_report(cfg, ENV_INFO, _points(check=None), width=24), 24)
    assert "…" not in text
    assert "busbw GB/s  339.6" in text and "time        6.32 ms" in text


@pytest.mark.parametrize("width", [60, 80])
def test_default_report_never_cuts_a_number(width):
    cfg = make_config(size="5e8")
    base = summarise("all_reduce", 2_000_000_000, 2, None, 1, [[0.00595, 0.00601], [0.00598, 0.00602]], None)
    chunks = [summarise("all_reduce", 2_000_000_000, 2, c, 2_000_000_000 // 4 // c, [[t], [t]], base.median_s)
              for c, t in ((100_000_000, 0.0066), (10_000_000, 0.0081), (1_000_000, 0.018))]
    run = {"results": [base, *chunks], "check": True, "memory": {"torch_peak_allocated_bytes": None}}
    text = _render(report(cfg, ENV_INFO, run, width=width), width)
    assert "…" not in text and max(map(len, text.splitlines())) <= width
    for r in (base, *chunks):
        assert fmt.duration(r.median_s) in text and f"{r.busbw:.1f}" in text and f"{r.slowdown:.2f}x" in text
    assert "chunks of 1e6" in text and "PyTorch's default NCCL watchdog timeout (10 min" in " ".join(text.split())


SVG = "{http://www.w3.org/2000/svg}"


def _curve(svg: str, kind: str = "curve") -> list[tuple[float, float]]:
    """The (x, y) points of a curve of our SVG, read as XML (so the file is well formed)."""
    path = next(p for p in ET.fromstring(svg).iter(f"{SVG}path") if p.get("class") == kind)
    return [(float(x), float(y)) for x, y in re.findall(r"[ML]([\d.]+) ([\d.]+)", path.get("d", ""))]


def test_svg_plot_is_a_real_curve():
    svg = busbw_svg(_points(), ENV_INFO, standalone=True)
    assert svg.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<svg')
    root = ET.fromstring(svg)
    assert (root.get("width"), root.get("height")) == ("960", "560")
    curve = _curve(svg)
    assert len(curve) == 15 and [x for x, _ in curve] == sorted(x for x, _ in curve)
    assert curve[-1][1] < curve[0][1] - 300  # high bandwidth at 2 GiB, near zero at 8 B: the curve rises (y grows down)
    titles = [t.text or "" for t in root.iter(f"{SVG}title")]
    assert "2 GiB: 6.32 ms, algbw 339.6, busbw 339.6 GB/s, queued" in titles
    assert any("busbw by message size: 2 ranks, NVIDIA H200, nccl 2.28.9" in (t.text or "")
               for t in root.iter(f"{SVG}text"))


def test_svg_plot_beside_a_reference():
    ref = ("nccl-tests all_reduce_perf", [(p.size, (p.busbw or 0) * 0.9) for p in _points()])
    svg = busbw_svg(_points(), ENV_INFO, ref)
    theirs, ours = _curve(svg, "reference"), _curve(svg)
    assert len(theirs) == len(ours) and theirs[-1][1] > ours[-1][1]  # 10% lower bandwidth: drawn lower
    assert "nccl-tests all_reduce_perf" in [t.text for t in ET.fromstring(svg).iter(f"{SVG}text")]


def test_html_page_is_self_contained():
    cfg = make_config(sweep="8:2G:4", check=True, min_busbw=400)
    page = sweep_page(cfg, ENV_INFO, _points())
    assert page.startswith("<!doctype html>") and "<svg" in page and page.count("<tr><td>") == 15
    assert not re.search(r"<script|<link|<img|@import|url\(|src=", page)
    assert re.findall(r"https?://[^\s\"]+", page) == ["http://www.w3.org/2000/svg"]  # a namespace, not a fetch
    assert "FAIL: busbw at 2 GiB is 339.6 GB/s, below --min-busbw 400 GB/s" in page


def test_ncclcheck_bench_help_lists_the_benchmark_options():
    r = CliRunner().invoke(app, ["bench", "--help"], env={"COLUMNS": "120"})
    assert r.exit_code == 0
    text = " ".join(r.stdout.replace("│", " ").split())
    for opt in ("--sweep MIN:MAX[:FACTOR]", "--min-busbw GB/S", "--plot FILE.svg", "--html FILE.html",
                "--graph [off|on]", "--size N", "--chunks N,N,...", "--check", "--nproc N", "3 busbw below --min-busbw",
                "--dtype [float32|bfloat16|float16]", "1e7 with gloo on CPU"):
        assert opt in text, opt
    assert "--exit-early-rank" not in text


def test_ncclcheck_bench_refuses_bad_options_before_launching():
    r = CliRunner().invoke(app, ["bench", "--nproc", "2", "--sweep", "8:2G", "--op", "broadcast"])
    assert r.exit_code == 2
    assert r.stderr == "ncclcheck: error: --sweep measures all_reduce; leave out --op and --from-log\n"



# --- compare with nccl-tests (real all_reduce_perf output from the 2xH200 run in docs/data) --------------------------

DOCS = Path(__file__).resolve().parents[1] / "docs" / "data"


def test_parse_all_reduce_perf_reads_every_data_row():
    rows = parse_all_reduce_perf((DOCS / "nccl-tests-h200x2-run1.txt").read_text())
    assert [r.size for r in rows] == sweep_sizes(8, 2 * 2**30, 4, 4)
    assert rows[0] == PerfRow(8, 2, 15.68, 0.00, 17.54, 0.00)
    assert rows[-1] == PerfRow(2147483648, 536870912, 6451.4, 332.87, 6423.9, 334.30)
    # the header of newer versions (with a root column and #wrong N/A) parses the same way
    newer = ("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
             "busbw #wrong\n     8388608       2097152     float     sum      -1    49.70  168.79  168.79    N/A    "
             "48.86  171.70  171.70    N/A\n# Avg bus bandwidth    : 170.2\n")
    assert parse_all_reduce_perf(newer) == [PerfRow(8388608, 2097152, 49.70, 168.79, 48.86, 171.70)]


def test_compare_matches_sizes_and_reports_ratios():
    sweep, perf = DOCS / "sweep-h200x2-auto-run1.json", DOCS / "nccl-tests-h200x2-run1.txt"
    ms = match(points_from_json(json.loads(sweep.read_text())), parse_all_reduce_perf(perf.read_text()))
    assert len(ms) == 15
    last = ms[-1]
    assert (last.size, last.ref_time_s) == (2**31, pytest.approx(6423.9e-6))
    assert last.busbw_ratio == pytest.approx(last.ref_time_s / last.time_s)
    r = CliRunner().invoke(app, ["bench-compare", str(sweep), str(perf)], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and r.stderr == ""
    assert "2 GiB" in r.stdout and "100.2%" in r.stdout and "host clock" in r.stdout  # an old sweep's eager sizes


def test_compare_plots_both_curves(tmp_path):
    sweep, perf, svg = DOCS / "sweep-h200x2-auto-run1.json", DOCS / "nccl-tests-h200x2-run1.txt", tmp_path / "c.svg"
    r = CliRunner().invoke(app, ["bench-compare", str(sweep), str(perf), "--plot", str(svg)])
    assert r.exit_code == 0 and r.stderr == f"ncclcheck: wrote {svg}\n"
    assert len(_curve(svg.read_text(), "reference")) == len(_curve(svg.read_text())) == 15


def test_compare_refuses_unrelated_inputs(tmp_path):
    empty = tmp_path / "perf.txt"
    empty.write_text("# nothing measured\n")
    sweep = DOCS / "sweep-h200x2-auto-run1.json"
    r = CliRunner().invoke(app, ["bench-compare", str(sweep), str(empty)])
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == f"ncclcheck: error: no size in common between {sweep} and {empty}\n"
    r = CliRunner().invoke(app, ["bench-compare", str(empty), str(empty)])
    assert r.exit_code == 2 and r.stderr.startswith(f"ncclcheck: error: {empty} is not a sweep's JSON result")
    r = CliRunner().invoke(app, ["bench-compare", str(tmp_path / "gone.json"), str(empty)])
    assert r.exit_code == 2 and r.stderr == f"ncclcheck: error: cannot read {tmp_path / 'gone.json'}: No such file or directory\n"


def test_one_rank_draws_no_conclusion_about_chunking():
    base = summarise("all_reduce", 2_000_000_000, 1, None, 1, [[0.006]], None)
    c1 = summarise("all_reduce", 2_000_000_000, 1, 10_000_000, 50, [[0.0084]], 0.006)
    text = conclusion([base, c1], world=1)
    assert text.startswith("One rank: nothing crossed a link") and "chunking does not help" not in text


def test_torchrun_report_is_left_out_once_the_benchmark_said_what_failed():
    """torchrun's agent line, traceback and failure table after the benchmark's own one-line error: dropped when rank
    0 wrote its exit status, passed through whole when it did not (a crash the benchmark could not report)."""
    from ncclcheck.bench.launch import without_torchrun_report

    own = "ncclcheck.bench: error: rank 0: needs 40000.00 GB for the buffers\n"
    report = [
        "E1125 10:12:37.998000 23838 .venv/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/"
        "api.py:1002] failed (exitcode: 2) local_rank: 0 (pid: 23843) of binary: /usr/bin/python\n",
        "Traceback (most recent call last):\n", '  File "<frozen runpy>", line 198, in _run_module_as_main\n',
        "    raise ChildFailedError(\n", "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n",
        "=" * 60 + "\n", "ncclcheck.bench FAILED\n", "-" * 60 + "\n", "Root Cause (first observed failure):\n",
        "[0]:\n", "  exitcode  : 2 (pid: 23843) \n", "=" * 60 + "\n"]
    after = "a later line\n"
    assert list(without_torchrun_report([own, *report, after], lambda: True)) == [own, after]
    assert list(without_torchrun_report([own, *report, after], lambda: False)) == [own, *report, after]
    other = ["Traceback (most recent call last):\n", "ValueError: something else\n"]
    assert list(without_torchrun_report(other, lambda: True)) == other
