"""Benchmark: analyze-log against `grep -c -F WorkNCCL` on two corpora of multi-rank logs, in one run.

* synth  -- tools/synth.py: NCCL_DEBUG=INFO with COLL lines, progress bars, the incident at the end (~1 GiB).
* chatty -- NCCL INFO channel and init chatter, training progress and 3% c10 `[W…] Warning:` lines (512 MiB),
  written by ../shared/bench/make_log_corpus.py where that reference generator is present, else by
  tools/synth.py's recipe of the same mixture.

Each engine of the reader that is installed is timed (NCCLCHECK_ENGINE: the pure-Python search, StringZilla's
SIMD search and count, and Hyperscan's one pass for all the keep words, the default where installed); with
``--baseline DIR`` (a checkout of an earlier commit, e.g. ``git archive main | tar -x -C DIR``; repeatable) that
package is timed beside them with its default engine, labelled by the folder's name, for a before/after table
from one run.  Runs are interleaved (grep,
each command, grep, ...) so that machine noise hits all alike; the page
cache is warmed first, so all read from memory.  Timed runs are not monitored (a sampler would take
CPU from the workers); one extra run measures peak memory: the largest summed RSS of ncclcheck and its
worker processes, sampled every 10 ms.  That run's JSON is also checked against grep's counts: every
file in which grep finds `WorkNCCL` must have given a record (``--per-rank`` lists each), so speed is never
bought with a miss.

Usage: python tools/bench_analyze.py [--mib 1024] [--chatty-mib 512] [--runs 5] [--only chatty] [--baseline DIR]
                                    [--engines hyperscan,stringzilla]
Targets: wall time <= 2x grep's on each corpus, peak memory < 200 MB.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REFERENCE_CHATTY = os.path.join(os.path.dirname(ROOT), "shared", "bench", "make_log_corpus.py")


# The reader's engines, slowest first; those whose module is installed are timed, and the last of them is the default.
ENGINES = tuple(e for e, module in (("python", None), ("stringzilla", "stringzilla"), ("hyperscan", "hyperscan"))
                if module is None or importlib.util.find_spec(module) is not None)
DEFAULT = ENGINES[-1]


@dataclass
class Result:
    name: str
    files: int
    size: int
    grep: list[float]
    ours: dict[str, list[float]]
    peak: dict[str, int]
    missed: dict[str, list[str]]


def timed(cmd: list[str], env: dict[str, str] | None = None) -> float:
    """Wall seconds of a command (run in the folder of the package its PYTHONPATH names: ``-m`` looks there first)."""
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env,
                   cwd=(env or {}).get("PYTHONPATH"))
    return time.perf_counter() - start


def monitored(cmd: list[str], env: dict[str, str]) -> tuple[int, bytes]:
    """Peak summed RSS (bytes) of a command and its children, and its standard output."""
    proc = psutil.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=env.get("PYTHONPATH"))
    peak = 0
    chunks: list[bytes] = []
    os.set_blocking(proc.stdout.fileno(), False)
    while proc.poll() is None:
        try:
            procs = [proc, *proc.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in procs if p.is_running()))
        except psutil.NoSuchProcess:
            pass
        chunks.append(proc.stdout.read() or b"")
        time.sleep(0.01)
    os.set_blocking(proc.stdout.fileno(), True)
    chunks.append(proc.stdout.read())
    return peak, b"".join(chunks)


def generate(name: str, corpus: str, mib: int, ranks: int) -> None:
    print(f"generating the {name} corpus ({mib} MiB) in {corpus} ...", file=sys.stderr)
    if name == "chatty" and os.path.exists(REFERENCE_CHATTY):
        cmd = [sys.executable, REFERENCE_CHATTY, corpus, str(mib), str(ranks)]
    else:
        cmd = [sys.executable, os.path.join(HERE, "synth.py"), "chatty" if name == "chatty" else "corpus", corpus,
               "--mib", str(mib), "--ranks", str(ranks)]
    subprocess.run(cmd, check=True)


def measure(name: str, corpus: str, runs: int, engines: list[str], baselines: dict[str, str]) -> Result:
    files = sorted(glob.glob(os.path.join(corpus, "*.log")))
    size = sum(os.path.getsize(f) for f in files)
    for f in files:  # warm the page cache
        with open(f, "rb") as fh:
            while fh.read(1 << 24):
                pass
    grep_cmd = ["grep", "-c", "-F", "WorkNCCL", *files]
    ours_cmd = [sys.executable, "-m", "ncclcheck", "analyze-log", corpus, "--json"]
    envs = {e: {**os.environ, "PYTHONPATH": ROOT, "NCCLCHECK_ENGINE": e} for e in engines}
    for label, folder in baselines.items():  # each with its default engine
        envs[label] = {**{k: v for k, v in os.environ.items() if k != "NCCLCHECK_ENGINE"}, "PYTHONPATH": folder}
    grep_t: list[float] = []
    ours_t: dict[str, list[float]] = {e: [] for e in envs}
    for _ in range(runs):
        grep_t.append(timed(grep_cmd))
        for e, env in envs.items():
            ours_t[e].append(timed(ours_cmd, env))
    counts = subprocess.run(grep_cmd, capture_output=True, text=True, check=False).stdout
    with_hits = {os.path.realpath(line.rsplit(":", 1)[0]) for line in counts.splitlines() if not line.endswith(":0")}
    peak, missed = {}, {}
    for e, env in envs.items():
        peak[e], out = monitored([*ours_cmd, "--per-rank"], env)
        found = {os.path.realpath(r["file"]) for r in json.loads(out)["per_rank"]["records"]}
        missed[e] = sorted(with_hits - found)
    return Result(name, len(files), size, grep_t, ours_t, peak, missed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mib", type=int, default=1024, help="size of the synth corpus")
    ap.add_argument("--chatty-mib", type=int, default=512, help="size of the chatty corpus")
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", choices=("synth", "chatty"), help="time one corpus only")
    ap.add_argument("--baseline", action="append", default=[],
                    help="a checkout of another commit, timed beside with its default engine (repeatable; the "
                         "folder's name labels it)")
    ap.add_argument("--engines", default=",".join(ENGINES), help=f"engines to time (default: {','.join(ENGINES)})")
    args = ap.parse_args()
    engines = [e for e in args.engines.split(",") if e in ENGINES]
    baselines = {os.path.basename(os.path.normpath(b)): os.path.abspath(b) for b in args.baseline}
    results = []
    for name, mib in (("synth", args.mib), ("chatty", args.chatty_mib)):
        if args.only and name != args.only:
            continue
        corpus = os.path.join(ROOT, ".bench", f"{name}-{mib}mib-{args.ranks}r")
        if not os.path.isdir(corpus):
            generate(name, corpus, mib, args.ranks)
        results.append(measure(name, corpus, args.runs, engines, baselines))
    print(f"cpus: {os.cpu_count()}; load average {os.getloadavg()[0]:.2f} at the end; {args.runs} interleaved runs "
          "per command; page cache warm; ratios of medians (and of the fastest runs)")
    print(f"{'corpus':7} {'size':>8} {'grep -c -F':>10}  {'engine':12} {'analyze-log':>11} {'ratio':>6} {'(best)':>7} "
          f"{'peak memory':>11}  records")
    ok = True
    for r in results:
        g = statistics.median(r.grep)
        for e in r.ours:
            o = statistics.median(r.ours[e])
            if e == DEFAULT:
                ok &= o <= 2 * g and r.peak[e] < 200 << 20 and not r.missed[e]
            print(f"{r.name:7} {r.size / 2**30:>4.2f} GiB {g:>8.2f} s  {e:12} {o:>9.2f} s {o / g:>5.2f}x "
                  f"({min(r.ours[e]) / min(r.grep):>4.2f}x) {r.peak[e] / 2**20:>8.0f} MB  "
                  + ("all found" if not r.missed[e] else f"MISSED in {', '.join(r.missed[e])}"))
    for r in results:
        print(f"  {r.name}: grep {', '.join(f'{x:.2f}' for x in r.grep)}; "
              + "; ".join(f"{e} {', '.join(f'{x:.2f}' for x in r.ours[e])}" for e in r.ours))
    timed_default = any(DEFAULT in r.ours for r in results)
    print(f"targets for the default engine, {DEFAULT} (<= 2x grep, < 200 MB, no record lost):",
          ("met" if ok else "NOT met") if timed_default else "not timed (--engines left it out, or it is not installed)")


if __name__ == "__main__":
    main()
