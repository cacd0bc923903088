"""Benchmark: one file per rank against node logs, and whether the per-file cost spreads over the cores.

The same job (tools/synth_job.py's mesh, tp 8, one straggler) is written twice: as node consoles of 100 ranks, and
as one file per rank (torchrun --log-dir or Slurm --output=%t layouts at scale). Each is read in a fresh process
(resolve, analyze, the JSON) with the package's default workers; the one-file-per-rank job is read again with one
worker, the code path every machine took before files were given to the workers in chunks. Printed: cores, wall
seconds, peak RSS summed over the workers, the verdict's culprit, and the ratios.

Usage: python tools/bench_files.py [--ranks 100000]
Target (issue 36): one file per rank at most twice the node-log time on 16 cores.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_analyze import monitored  # noqa: E402  (a sibling script, not a package)

TP = 8
# As the command runs it (cli.main): the cyclic garbage collector off, or its passes over the scans' millions of
# objects are timed too.
READ = """
import gc, json, sys
gc.disable()
from ncclcheck.evidence.reader import resolve
from ncclcheck.job.analyze import analyze
workers = int(sys.argv[2]) or None
a = analyze(resolve([sys.argv[1]], lambda e: None), workers=workers)
print(json.dumps(list(a.verdict.culprit_ranks)))
"""


def _synth():
    spec = importlib.util.spec_from_file_location("synth_job", os.path.join(HERE, "synth_job.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def timed(folder: str, workers: int) -> tuple[float, int, str]:
    start = time.perf_counter()
    peak, out = monitored([sys.executable, "-c", READ, folder, str(workers)], dict(os.environ))
    return time.perf_counter() - start, peak, out.decode().strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=100_000)
    a = ap.parse_args()
    synth = _synth()
    world = a.ranks - a.ranks % TP
    straggler = world // 2 + 5
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        nodes, ranks = os.path.join(tmp, "nodes"), os.path.join(tmp, "ranks")
        synth.write_nodes(nodes, TP, world // TP, straggler, 40, 100)
        synth.write_nodes(ranks, TP, world // TP, straggler, 40, 1)
        rows = [("node logs of 100 ranks", *timed(nodes, 0)),
                ("one file per rank", *timed(ranks, 0)),
                ("one file per rank, 1 worker", *timed(ranks, 1))]
    print(f"{world:,} ranks, {cores} cores (straggler {straggler})")
    print(f"{'layout':32} {'seconds':>8} {'peak MiB':>9}  culprits")
    for name, sec, peak, out in rows:
        print(f"{name:32} {sec:8.1f} {peak / 2**20:9.0f}  {out}")
    node, per_rank, serial = (r[1] for r in rows)
    print(f"one file per rank / node logs: {per_rank / node:.2f} (target <= 2.0); "
          f"1 worker / default workers: {serial / per_rank:.2f}")
    if any(r[3] != f"[{straggler}]" for r in rows):
        sys.exit("a layout did not name the straggler")


if __name__ == "__main__":
    main()
