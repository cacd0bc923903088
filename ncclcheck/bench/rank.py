"""One rank's run of the benchmark in this process (under torchrun, or alone as world size 1): set-up, the plan said
at once, progress on stderr, rank 0's report, and the exit code written for ``ncclcheck bench`` (:data:`STATUS_ENV`).

Exit codes: 0 done, 1 the run failed (a peer died or never arrived, wrong values), 2 bad options, no torch,
or not enough memory, 3 busbw at the largest swept size below ``--min-busbw``.  torchrun itself exits 1 whenever
a worker exits non-zero; ``ncclcheck bench`` passes the benchmark's own code through. The options are parsed by the
CLI (one help system), which calls :func:`run`; this module never imports the CLI.
"""


from __future__ import annotations

import json
import os
import re
import sys
import time
import warnings

from ncclcheck.bench import fmt
from ncclcheck.bench.config import BenchConfig, for_backend
from ncclcheck.console import console, err_console

INSTALL = "pip install 'ncclcheck[bench]' (torch is needed only for the benchmark)"
STATUS_ENV = "NCCLCHECK_BENCH_STATUS"  # a file where rank 0 writes its exit code, for `ncclcheck bench`
OK, FAILED, USAGE, BELOW = 0, 1, 2, 3


def _say(message: str) -> None:
    err_console.print(f"ncclcheck.bench: {message}", markup=False, highlight=False, soft_wrap=True)


def _progress(after_s: float = 1.0, every_s: float = 1.0):
    """Steps on stderr once the run has taken longer than ``after_s``: each finished step, and a step under way at
    most once every ``every_s`` (a transfer of a large size on CPU can take seconds). A short run stays quiet."""
    start = time.monotonic()
    last: float | None = None  # when the last line was shown

    def show(step: str, finished: bool = True) -> None:
        nonlocal last
        now = time.monotonic()
        if now - start > after_s and (finished or last is None or now - last >= every_s):
            last = now
            _say(f"{step} ({now - start:.1f} s so far)")

    return show


def refuse(message: str) -> int:
    """A bad option: one line on stderr, exit code 2."""
    _say(f"error: {message}")
    return _status(USAGE)


def _plan(cfg: BenchConfig, env) -> str:
    """What the run is about to do: said at once, so a long run on CPU is never silent."""
    if cfg.sweep:
        return (f"all_reduce sweep, {fmt.size(cfg.sweep[0])} to {fmt.size(cfg.sweep[1])}, on {env.world} rank(s) "
                f"({env.backend}): {cfg.warmup} + {cfg.iters} calls a size")
    what = "" if not cfg.default_size else (
        f" (no --size: the default for {env.backend}" + (", a size gloo on CPU moves in seconds" if env.backend == "gloo"
                                                            else "") + ")")
    modes = 1 + len(cfg.chunks)
    return (f"{cfg.op} of {cfg.size:,} {cfg.dtype} elements ({fmt.size(cfg.nbytes)}) a rank{what}, on {env.world} "
            f"rank(s) ({env.backend}): {modes} mode(s) of {cfg.warmup} + {cfg.iters} transfers")


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
    from ncclcheck.bench.plot import busbw_svg
    from ncclcheck.bench.report import sweep_json, sweep_report

    payload = sweep_json(cfg, info, points)
    wrote = True
    if cfg.output:
        wrote &= _write(cfg.output, json.dumps(payload, indent=2) + "\n", "JSON result")
    if cfg.plot:
        wrote &= _write(cfg.plot, busbw_svg(points, info, standalone=True), "plot")
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


def run(cfg: BenchConfig) -> int:
    """Run the benchmark in this process (one rank of torchrun's, or world size 1); return the exit code."""
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
    cfg = for_backend(cfg, env.backend)
    if env.rank == 0:
        _say(_plan(cfg, env))
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
