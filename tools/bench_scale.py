"""Benchmark: analyze-log from 1,000 to 100,000 ranks, and the same job merged from per-node evidence files.

Each job is tools/synth_job.py's mesh (tensor-parallel groups of 8 inside data-parallel groups, inside the
default group), one straggler in the middle, written as node consoles of 100 ranks each, generated on the fly.
For each size: the wall time of `ncclcheck analyze-log --json`, its peak RSS (summed over the command and its
worker processes), the JSON's bytes per rank, and a check that the verdict names the straggler.
At the largest size the human report is printed at 120 columns (lines counted, the root checked), the job is
reduced to one evidence file per node log (as `--evidence-out` would on each node; written in this process), and
`analyze-log` of the evidence files is timed and its JSON compared with the raw logs' byte for byte.

Per-rank time is the whole command's time over the ranks; the marginal per-rank time (between the two largest
and the two smallest sizes) leaves out the fixed start-up.

Usage: python tools/bench_scale.py [--sizes 1000,4000,16000,64000,100000] [--per-file 100]
Targets (issue 19, 2-core machine): 100,000 ranks in <= 30 s and <= 1 GB; JSON <= 200 bytes/rank; report <= 40 lines
naming the root; per-rank time at the largest within 1.3x of the smallest; 1,000 evidence files merge in <= 10 s.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_analyze import monitored  # noqa: E402  (a sibling script, not a package)

NCCLCHECK = os.path.join(os.path.dirname(sys.executable), "ncclcheck")
TP = 8


def _synth():
    spec = importlib.util.spec_from_file_location("synth_job", os.path.join(HERE, "synth_job.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def measured(args: list[str], env: dict[str, str] | None = None) -> tuple[float, int, bytes]:
    """Wall seconds, peak RSS in bytes summed over the command and its worker processes (bench_analyze's sampler),
    and standard output."""
    start = time.perf_counter()
    peak, out = monitored([NCCLCHECK, *args], env if env is not None else dict(os.environ))
    return time.perf_counter() - start, peak, out


def evidence(folder: str, out: str) -> int:
    """One evidence file per node log, as `analyze-log --evidence-out` writes it on each node."""
    sys.path.insert(0, os.path.dirname(HERE))
    from ncclcheck.evidence import bundle
    from ncclcheck.evidence.reader import resolve
    from ncclcheck.job.analyze import read_all

    os.makedirs(out)
    n = 0
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        scans, problems = read_all(resolve([path], print), workers=1)
        with open(os.path.join(out, name.replace(".log", ".json.gz")), "wb") as f:
            f.write(bundle.dumps(scans, problems, compress=True))
        n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,4000,16000,64000,100000")
    ap.add_argument("--per-file", type=int, default=100)
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    synth = _synth()
    rows = []
    with tempfile.TemporaryDirectory(prefix="ncclcheck-scale-") as tmp:
        for world in sizes:
            folder = os.path.join(tmp, f"job{world}")
            straggler = world // 2 + 5
            files = synth.write_nodes(folder, TP, world // TP, straggler, 40, a.per_file)
            wall, rss, out = measured(["analyze-log", "--json", folder])
            verdict = json.loads(out)["verdict"]
            ok = verdict["culprit_ranks"] == [straggler]
            rows.append((world, files, wall, rss, len(out), ok))
            print(f"{world:>7,} ranks {files:>5} files  {wall:6.2f} s  {rss / 2**20:6.0f} MiB  "
                  f"{len(out) / world:6.1f} B/rank JSON  {wall / world * 1e6:6.1f} us/rank  "
                  f"{'root ok' if ok else 'WRONG ROOT ' + str(verdict['culprit_ranks'])}", flush=True)
        world, files, wall, _, _, _ = rows[-1]
        biggest = os.path.join(tmp, f"job{world}")
        env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
        _, _, report = measured(["analyze-log", biggest], env)
        text = report.decode()
        straggler = world // 2 + 5
        print(f"report at {world:,} ranks: {len(text.splitlines())} lines at 120 columns, "
              f"root named: {f'culprit rank(s): {straggler}' in text}")
        ev = os.path.join(tmp, "evidence")
        start = time.perf_counter()
        n = evidence(biggest, ev)
        made = time.perf_counter() - start
        size = sum(os.path.getsize(os.path.join(ev, f)) for f in os.listdir(ev))
        merge_wall, merge_rss, merged = measured(["analyze-log", "--json", ev])
        _, _, raw = measured(["analyze-log", "--json", biggest])
        print(f"evidence: {n} files, {size / world:.0f} B/rank gzip, made in {made:.1f} s (one process); merged in "
              f"{merge_wall:.2f} s, {merge_rss / 2**20:.0f} MiB; JSON identical to the raw logs': {merged == raw}")
    (w0, _, t0, *_), (w1, _, t1, *_) = rows[0], rows[-1]
    print(f"per-rank time, {w1:,} vs {w0:,} ranks: {(t1 / w1) / (t0 / w0):.2f}x")
    if len(rows) >= 4:
        lo = (rows[1][2] - rows[0][2]) / (rows[1][0] - rows[0][0])
        hi = (rows[-1][2] - rows[-2][2]) / (rows[-1][0] - rows[-2][0])
        print(f"marginal per-rank time, largest two vs smallest two sizes: {hi / lo:.2f}x")


if __name__ == "__main__":
    main()
