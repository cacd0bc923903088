"""``torchrun --nproc-per-node N -m ncclcheck.bench``: parse, run, and let rank 0 report.

Exit codes: 0 done, 1 the run failed (a peer died or never arrived, wrong values), 2 bad options, no torch,
or not enough memory, 3 busbw at the largest swept size below ``--min-busbw``.  torchrun itself exits 1 whenever
a worker exits non-zero; ``ncclcheck bench`` passes the benchmark's own code through (see :data:`STATUS_ENV`).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import warnings

from ncclcheck.bench.config import BenchConfig, ConfigError, parse_args
from ncclcheck.console import console, err_console

INSTALL = "pip install 'ncclcheck[bench]' (torch is needed only for the benchmark)"
STATUS_ENV = "NCCLCHECK_BENCH_STATUS"  # a file where rank 0 writes its exit code, for `ncclcheck bench`
OK, FAILED, USAGE, BELOW = 0, 1, 2, 3


def _say(message: str) -> None:
    err_console.print(f"ncclcheck.bench: {message}", markup=False, highlight=False, soft_wrap=True)


def _progress(after_s: float = 1.0):
    """Each finished step on stderr, once the run has taken longer than ``after_s``: a short run stays quiet."""
    start = time.monotonic()

    def show(step: str) -> None:
        elapsed = time.monotonic() - start
        if elapsed > after_s:
            _say(f"{step} ({elapsed:.1f} s so far)")

    return show


def _status(code: int) -> int:
    path = os.environ.get(STATUS_ENV)
    if path and os.environ.get("RANK", "0") == "0":
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"{code}\n")
    return code


def _write(path: str, text: str | bytes, what: str) -> bool:
    try:
        if isinstance(text, bytes):
            with open(path, "wb") as f:
                f.write(text)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    except OSError as exc:
        _say(f"error: cannot write the {what} to {path}: {exc.strerror}")
        return False
    return True


def _finish_sweep(cfg: BenchConfig, info: dict, points: list) -> int:
    """Rank 0: table or JSON, the plot and page files, and the exit code."""
    from ncclcheck.bench.metrics import below_threshold
    from ncclcheck.bench.plot import busbw_png
    from ncclcheck.bench.report import sweep_json, sweep_report

    payload = sweep_json(cfg, info, points)
    wrote = True
    if cfg.output:
        wrote &= _write(cfg.output, json.dumps(payload, indent=2) + "\n", "JSON result")
    if cfg.plot:
        wrote &= _write(cfg.plot, busbw_png(points, info), "plot")
    if cfg.html:
        from ncclcheck.bench.page import sweep_page

        wrote &= _write(cfg.html, sweep_page(cfg, info, points), "HTML page")
    if cfg.json:
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
    else:
        console.print(sweep_report(cfg, info, points, width=console.width))
    if cfg.check and not all(p.correct for p in points):
        return FAILED
    if below_threshold(points, cfg.min_busbw):
        return BELOW
    return OK if wrote else USAGE


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; return the exit code."""
    try:
        cfg = parse_args(argv)
    except ConfigError as exc:
        _say(f"error: {exc}")
        return _status(USAGE)
    except SystemExit as exc:  # argparse's own usage errors (already printed) and --help
        return _status(USAGE if exc.code else OK)
    # torch without numpy warns that it failed to initialise it; the benchmark uses none of it.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    try:
        from ncclcheck.bench import runner
    except ImportError:
        _say(f"error: torch is not installed: {INSTALL}")
        return _status(USAGE)
    try:
        env = runner.setup(cfg)
    except runner.BenchError as exc:
        _say(f"error: {exc}")
        return _status(USAGE)
    except (RuntimeError, ValueError) as exc:
        _say(f"error: could not join the process group: {exc}")
        return _status(FAILED)
    if not env.launched:
        _say("note: not launched by torchrun, running as world size 1 (busbw is n/a). For N GPUs: "
             "torchrun --nproc-per-node N -m ncclcheck.bench ...")
    elif env.world == 1 and env.rank == 0:
        _say("note: one rank: nothing will cross a link (busbw is n/a, algbw is a local copy). For N GPUs: "
             "--nproc-per-node N (torchrun) or --nproc N (ncclcheck bench)")
    try:
        info = runner.environment(env)
        shown = _progress() if env.rank == 0 else runner.quiet
        result = runner.run_sweep(cfg, env, shown) if cfg.sweep else runner.run(cfg, env, shown)
    except runner.BenchError as exc:
        _say(f"error: rank {env.rank}: {exc}")
        return _status(USAGE)
    except RuntimeError as exc:
        if not runner.is_comm_failure(exc):
            raise  # a bug, not a lost peer: keep the traceback
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        first = re.sub(r"[^\x00-\u2fff]", "", first).strip()  # torch decorates some messages with emoji
        _say(f"error: rank {env.rank}: a collective failed, so a peer died or never arrived "
             f"(process-group timeout {cfg.timeout:g} s): {first[:300]}")
        return _status(FAILED)
    code = OK
    if env.rank == 0:
        if cfg.sweep:
            code = _finish_sweep(cfg, info, result["points"])
        else:
            from ncclcheck.bench.report import report, result_json

            payload = result_json(cfg, info, result)
            if cfg.output and not _write(cfg.output, json.dumps(payload, indent=2) + "\n", "JSON result"):
                code = USAGE
            if cfg.json:
                sys.stdout.write(json.dumps(payload, indent=2) + "\n")
            else:
                console.print(report(cfg, info, result, width=console.width))
            if result["check"] is False:
                code = FAILED
    elif cfg.sweep and cfg.check and not all(p.correct for p in result["points"]) or not cfg.sweep and result["check"] is False:
        code = FAILED
    runner.teardown()
    return _status(code)


if __name__ == "__main__":
    sys.exit(main())
