"""``torchrun --nproc-per-node N -m ncclcheck.bench``: parse, run, and let rank 0 report.

Exit codes: 0 done, 1 the run failed (a peer died or never arrived, wrong values), 2 bad options, no torch,
or not enough memory.
"""

from __future__ import annotations

import json
import re
import sys

from ncclcheck.bench.config import ConfigError, parse_args
from ncclcheck.console import console, err_console

INSTALL = "pip install 'ncclcheck[bench]' (torch is needed only for the benchmark)"


def _say(message: str) -> None:
    err_console.print(f"ncclcheck.bench: {message}", markup=False, highlight=False, soft_wrap=True)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; return the exit code."""
    try:
        cfg = parse_args(argv)
    except ConfigError as exc:
        _say(f"error: {exc}")
        return 2
    try:
        from ncclcheck.bench import runner
    except ImportError:
        _say(f"error: torch is not installed: {INSTALL}")
        return 2
    try:
        env = runner.setup(cfg)
    except (runner.BenchError, RuntimeError, ValueError) as exc:
        _say(f"error: could not join the process group: {exc}")
        return 1
    if not env.launched:
        _say("note: not launched by torchrun, running as world size 1 (busbw is n/a). For N GPUs: "
             "torchrun --nproc-per-node N -m ncclcheck.bench ...")
    try:
        info = runner.environment(env)
        result = runner.run(cfg, env)
    except runner.BenchError as exc:
        _say(f"error: rank {env.rank}: {exc}")
        return 2
    except RuntimeError as exc:
        if not runner.is_comm_failure(exc):
            raise  # a bug, not a lost peer: keep the traceback
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        first = re.sub(r"[^\x00-\u2fff]", "", first).strip()  # torch decorates some messages with emoji
        _say(f"error: rank {env.rank}: a collective failed, so a peer died or never arrived "
             f"(process-group timeout {cfg.timeout:g} s): {first[:300]}")
        return 1
    if env.rank == 0:
        from ncclcheck.bench.report import report, result_json

        payload = result_json(cfg, info, result)
        if cfg.output:
            with open(cfg.output, "w", encoding="utf-8") as f:
                json.dump(payload, f, indent=2)
        if cfg.json:
            sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        else:
            console.print(report(cfg, info, result))
    runner.teardown()
    return 1 if result["check"] is False else 0


if __name__ == "__main__":
    sys.exit(main())
