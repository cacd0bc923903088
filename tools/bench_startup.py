"""Benchmark: start-up of `ncclcheck --help` against a minimal two-command Typer app on the same interpreter.

Both run as fresh processes of this interpreter, interleaved (minimal, ncclcheck, minimal, ...) so machine
noise hits both alike; the figure is the ratio of the medians. Also timed: `ncclcheck probe --help` and
`ncclcheck analyze-log --help`, whose commands import more of the package.

Usage: python tools/bench_startup.py [--runs 21]
Target: ncclcheck --help <= 1.3x the minimal app.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

TARGET = 1.3
MINIMAL = '''\
import typer

app = typer.Typer()


@app.command()
def hello(name: str) -> None:
    """Say hello."""
    print(f"hello {name}")


@app.command()
def bye(name: str) -> None:
    """Say goodbye."""
    print(f"bye {name}")


app()
'''


def timed(cmd: list[str]) -> float:
    """Wall seconds of a command whose output is discarded; it must succeed."""
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21, help="runs of each command (median reported)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        app = os.path.join(tmp, "minimal_app.py")
        with open(app, "w", encoding="utf-8") as f:
            f.write(MINIMAL)
        ours = [sys.executable, "-c", "from ncclcheck.cli import main; main()"]
        cmds = {
            "minimal Typer app --help": [sys.executable, app, "--help"],
            "ncclcheck --help": [*ours, "--help"],
            "ncclcheck probe --help": [*ours, "probe", "--help"],
            "ncclcheck analyze-log --help": [*ours, "analyze-log", "--help"],
        }
        for cmd in cmds.values():  # warm the page cache and .pyc files
            timed(cmd)
        times: dict[str, list[float]] = {k: [] for k in cmds}
        for _ in range(args.runs):
            for name, cmd in cmds.items():
                times[name].append(timed(cmd))
    med = {k: statistics.median(v) for k, v in times.items()}
    base = med["minimal Typer app --help"]
    print(f"python {sys.version.split()[0]}, {args.runs} interleaved runs each, median wall time:")
    for name, m in med.items():
        print(f"  {name:<32} {m * 1e3:7.1f} ms  {m / base:4.2f}x")
    ratio = med["ncclcheck --help"] / base
    verdict = "meets" if ratio <= TARGET else "MISSES"
    print(f"ncclcheck --help / minimal app: {ratio:.2f}x ({verdict} the {TARGET}x target)")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
