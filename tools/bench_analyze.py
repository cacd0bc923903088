"""Benchmark: analyze-log against `grep -c -F WorkNCCL` on the same ~1 GiB of multi-rank logs.

Runs are interleaved (grep, ncclcheck, grep, ...) so that machine noise hits both alike;
the page cache is warmed first, so both read from memory.  Timed runs are not monitored
(a sampler would take CPU from the workers); one extra run measures peak memory: the
largest summed RSS of ncclcheck and its worker processes, sampled every 10 ms.

Usage: python tools/bench_analyze.py [--mib 1024] [--runs 3]
Targets: wall time <= 2x grep's, peak memory < 200 MB.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import subprocess
import sys
import time

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def timed(cmd: list[str]) -> float:
    """Wall seconds of a command."""
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def peak_rss(cmd: list[str]) -> int:
    """Peak summed RSS (bytes) of a command and its children."""
    proc = psutil.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while proc.poll() is None:
        try:
            procs = [proc, *proc.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in procs if p.is_running()))
        except psutil.NoSuchProcess:
            pass
        time.sleep(0.01)
    return peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    corpus = os.path.join(ROOT, ".bench", f"corpus-{args.mib}mib-{args.ranks}r")
    if not os.path.isdir(corpus):
        print(f"generating {args.mib} MiB of logs in {corpus} ...", file=sys.stderr)
        subprocess.run([sys.executable, os.path.join(HERE, "synth.py"), "corpus", corpus,
                        "--mib", str(args.mib), "--ranks", str(args.ranks)], check=True)
    files = sorted(glob.glob(os.path.join(corpus, "*.log")))
    size = sum(os.path.getsize(f) for f in files)
    for f in files:  # warm the page cache
        with open(f, "rb") as fh:
            while fh.read(1 << 24):
                pass
    ncclcheck = os.path.join(os.path.dirname(sys.executable), "ncclcheck")
    grep_cmd = ["grep", "-c", "-F", "WorkNCCL", *files]
    ours_cmd = [ncclcheck, "analyze-log", corpus, "--json"]
    grep_t, ours_t = [], []
    for _ in range(args.runs):
        grep_t.append(timed(grep_cmd))
        ours_t.append(timed(ours_cmd))
    peak = peak_rss(ours_cmd)
    g, o = statistics.median(grep_t), statistics.median(ours_t)
    print(f"corpus        : {len(files)} files, {size / 2**30:.2f} GiB ({corpus})")
    print(f"cpus          : {os.cpu_count()}")
    print(f"grep -c -F    : median {g:.2f} s  runs {', '.join(f'{x:.2f}' for x in grep_t)}")
    print(f"analyze-log   : median {o:.2f} s  runs {', '.join(f'{x:.2f}' for x in ours_t)}")
    print(f"ratio         : {o / g:.2f}x grep (target <= 2.0x)")
    print(f"peak memory   : {peak / 2**20:.0f} MB (target < 200 MB)")
    print(f"throughput    : {size / o / 1e9:.2f} GB/s")


if __name__ == "__main__":
    main()
