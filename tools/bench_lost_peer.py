"""Benchmark: how long the benchmark's survivor takes to give up when its peer leaves before the measured collectives.

Two ranks of ``python -m ncclcheck.bench`` on gloo under torchrun, rank 1 leaving after one barrier (``--exit-early-rank 1``),
``--timeout 15``. The survivor must exit non-zero and say why within the process-group timeout plus the start-up of
torch in three processes. ``make test`` checks the exit and the message (tests/test_bench_runs.py); the time is
measured here, not there, where a loaded machine would fail a correct run.

Usage: python tools/bench_lost_peer.py [--runs 3]
Target: each run ends within the timeout (15 s) + 45 s.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

TIMEOUT_S, SLACK_S = 15, 45


def once() -> tuple[float, int, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "-m", "ncclcheck.bench",
                        "--size", "1e5", "--chunks", "", "--iters", "2", "--timeout", str(TIMEOUT_S),
                        "--exit-early-rank", "1"], capture_output=True, text=True, env=env, timeout=600)
    return time.monotonic() - start, r.returncode, r.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    worst = 0.0
    for n in range(args.runs):
        took, code, err = once()
        said = "a peer died or never arrived" in err
        print(f"run {n + 1}: {took:.1f} s, exit {code}, {'says why' if said else 'does not say why'}")
        if code == 0 or not said:
            print(err[-2000:], file=sys.stderr)
            return 1
        worst = max(worst, took)
    ok = worst < TIMEOUT_S + SLACK_S
    print(f"worst {worst:.1f} s; target < {TIMEOUT_S + SLACK_S} s: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
