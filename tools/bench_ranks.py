"""Benchmark: the cost a rank of analyze-log from 8,192 to 131,072 ranks, one file per rank and node logs, its fitted
exponent, and the largest jobs: 262,144 ranks as 2,048 node logs, and those nodes' evidence files merged.

Each job is tools/synth_job.py's mesh (tensor-parallel groups of 8 inside data-parallel groups, inside the default
group), one straggler in the middle, five lines a rank, written (by worker processes) as one file per rank
(torchrun's ``--log-dir``, Slurm's ``--output=%t``) and as node consoles of ``--per-node`` ranks; the shape
``tables`` is torchrun consoles of 8 ranks after rank 0 raised, each with its agent's failure table (a table a node:
every silent rank asks all of them). Each is read by
``python -m ncclcheck analyze-log --json`` in a fresh process with its default workers (``--jobs`` to force a
count), and the JSON's culprit is checked. Printed for each: wall seconds, microseconds a rank, CPU seconds, peak RSS of the
command alone and summed with its worker processes, and bytes a rank of each; then, per shape, the exponent k of
a least-squares fit time ~ n^k over the sizes and the largest size's cost a rank over the smallest's.

The largest job (``--big``, 262,144 ranks as 2,048 node logs) is timed the same way; then each node log is reduced
to an evidence file (as ``analyze-log --evidence-out`` would on each node; here by worker processes) and the merge,
``analyze-log --json`` of the 2,048 evidence files, is timed and its JSON compared with the raw logs'.

Usage: python tools/bench_ranks.py [--sizes 8192,16384,32768,65536,131072] [--shapes files,nodes]
                                   [--per-node 100] [--big 262144 --big-nodes 2048] [--jobs N] [--baseline DIR]
``--baseline DIR`` runs the same sizes with another copy of the package first (PYTHONPATH=DIR), for a before/after
on one machine. Targets (issue 42, 16 cores): the cost a rank flat within 1.15x from 8,192 to 131,072 ranks;
100,000 ranks as files <= 15 s, as node logs <= 8 s; 262,144 ranks as 2,048 node logs <= 25 s and <= 2 GB.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TP = 8
PAGE = os.sysconf("SC_PAGE_SIZE")
CORES = len(os.sched_getaffinity(0))


def _synth():
    spec = importlib.util.spec_from_file_location("synth_job", os.path.join(HERE, "synth_job.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write_files(folder: str, world: int, straggler: int, per_file: int, files: range, agents: bool = False) -> None:
    synth = _synth()
    for i in files:
        if agents:  # torchrun consoles after rank 0 raised, each with its failure table
            lines = synth.agent_console(i, per_file, TP, world // TP, closing=False)
        else:
            lines = synth._console(range(i * per_file, min((i + 1) * per_file, world)), TP, world // TP, straggler, 40)
        with open(os.path.join(folder, f"node-{i:06d}.log"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


def write_job(folder: str, world: int, per_file: int, pool: ProcessPoolExecutor, agents: bool = False) -> int:
    """The mesh of ``world`` ranks as files of ``per_file`` ranks, written by the pool; returns the file count."""
    os.makedirs(folder)
    count = -(-world // per_file)
    step = max(1, count // 64)
    done = [pool.submit(_write_files, folder, world, world // 2 + 5, per_file, range(a, min(a + step, count)), agents)
            for a in range(0, count, step)]
    for d in done:
        d.result()
    return count


def _rss(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            pass
    return total


def _children(pid: int) -> list[int]:
    out: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    kids = [int(x) for x in f.read().split()]
                out += kids
                todo += kids
        except OSError:
            pass
    return out


def measured(args: list[str], pythonpath: str) -> tuple[float, float, int, int, bytes]:
    """Wall seconds, CPU seconds (user and system, of the command and the workers it waited for: a loaded machine
    stretches the wall time, less the CPU time), peak RSS of the command alone and summed with its workers (sampled
    from /proc every 20 ms), and its standard output."""
    env = {**os.environ, "PYTHONPATH": pythonpath}
    with tempfile.TemporaryFile() as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "ncclcheck", *args], stdout=out, stderr=subprocess.DEVNULL,
                                env=env, cwd=pythonpath)
        alone = summed = 0
        while proc.poll() is None:
            own = _rss([proc.pid])
            alone = max(alone, own)
            summed = max(summed, own + _rss(_children(proc.pid)))
            time.sleep(0.02)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        out.seek(0)
        return wall, cpu, alone, summed, out.read()


def fit(rows: list[tuple[int, float]]) -> float:
    """k of time ~ n^k, least squares on logarithms."""
    xs = [math.log(n) for n, _ in rows]
    ys = [math.log(t) for _, t in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def run(label: str, folder: str, world: int, jobs: int | None, pythonpath: str, first: int | None = None
        ) -> tuple[float, float, bytes]:
    """One timed analyze-log; ``first``: the culprit the verdict must name first (default: the straggler, alone)."""
    args = ["analyze-log", "--json", folder, *(["--jobs", str(jobs)] if jobs else [])]
    wall, cpu, alone, summed, out = measured(args, pythonpath)
    try:
        culprits = json.loads(out)["verdict"]["culprit_ranks"]
    except (ValueError, KeyError):
        culprits = None
    ok = culprits == [world // 2 + 5] if first is None else bool(culprits) and culprits[0] == first
    print(f"{label:28} {world:>8,} {wall:8.2f} {wall / world * 1e6:8.1f} {cpu:8.1f} {alone / 2**20:8.0f} "
          f"{summed / 2**20:8.0f} "
          f"{alone / world / 1024:6.2f} {summed / world / 1024:6.2f}  {'ok' if ok else f'WRONG {culprits}'}",
          flush=True)
    return wall, cpu, out


HEAD = (f"{'shape':28} {'ranks':>8} {'seconds':>8} {'us/rank':>8} {'CPU s':>8} {'MiB':>8} {'MiB+w':>8} {'KiB/r':>6} "
        f"{'KiB/r+w':>6}  culprit")


def sweep(label: str, tmp: str, sizes: list[int], shapes: list[str], per_node: int, jobs: int | None,
          pythonpath: str, pool: ProcessPoolExecutor) -> None:
    print(f"{label}: PYTHONPATH={pythonpath}, {CORES} cores; MiB: the command alone, +w: with its workers")
    print(HEAD)
    for shape in shapes:
        per_file = {"files": 1, "tables": TP}.get(shape, per_node)
        rows = []
        for world in sizes:
            folder = os.path.join(tmp, f"{shape}-{world}")
            if not os.path.isdir(folder):
                write_job(folder, world, per_file, pool, agents=shape == "tables")
            name = {"files": "one file per rank", "tables": f"torchrun consoles of {TP}"}.get(
                shape, f"node logs of {per_node} ranks")
            wall, cpu, _ = run(name, folder, world, jobs, pythonpath, 0 if shape == "tables" else None)
            rows.append((world, wall, cpu))
        if len(rows) >= 2:
            (n0, t0, c0), (n1, t1, c1) = rows[0], rows[-1]
            print(f"  {shape}: time ~ n^{fit([(n, t) for n, t, _ in rows]):.3f}, CPU ~ n^"
                  f"{fit([(n, c) for n, _, c in rows]):.3f}; cost a rank at {n1:,} / at {n0:,}: "
                  f"{(t1 / n1) / (t0 / n0):.2f}x time, {(c1 / n1) / (c0 / n0):.2f}x CPU (target <= 1.15x)", flush=True)


def _reduce(paths: list[str], out: str) -> None:
    sys.path.insert(0, ROOT)
    from ncclcheck.evidence import bundle
    from ncclcheck.evidence.reader import resolve
    from ncclcheck.job.analyze import read_all

    for path in paths:
        scans, problems = read_all(resolve([path], print), workers=1)
        name = os.path.basename(path).replace(".log", ".json.gz")
        with open(os.path.join(out, name), "wb") as f:
            f.write(bundle.dumps(scans, problems, compress=True))


def big(tmp: str, world: int, nodes: int, jobs: int | None, pool: ProcessPoolExecutor) -> None:
    folder = os.path.join(tmp, f"big-{world}")
    per_node = -(-world // nodes)
    write_job(folder, world, per_node, pool)
    print(f"largest job: {world:,} ranks as {nodes:,} node logs of {per_node} (targets: <= 25 s, <= 2 GB)")
    print(HEAD)
    _, _, raw = run("node logs", folder, world, jobs, ROOT)
    ev = os.path.join(tmp, "evidence")
    os.makedirs(ev)
    start = time.perf_counter()
    logs = sorted(os.path.join(folder, f) for f in os.listdir(folder))
    step = max(1, len(logs) // 64)
    for d in [pool.submit(_reduce, logs[a:a + step], ev) for a in range(0, len(logs), step)]:
        d.result()
    made = time.perf_counter() - start
    size = sum(os.path.getsize(os.path.join(ev, f)) for f in os.listdir(ev))
    print(f"evidence: {len(logs):,} files, {size / world:.0f} B/rank gzipped, made in {made:.1f} s by "
          f"{CORES} processes (one a node's log, as on the nodes)")
    _, _, merged = run("merge of the evidence files", ev, world, jobs, ROOT)
    print(f"merged JSON identical to the raw logs': {merged == raw}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="8192,16384,32768,65536,131072")
    ap.add_argument("--shapes", default="files,nodes", help="files (one a rank), nodes (node logs), tables (torchrun "
                    "consoles of 8 ranks after rank 0 raised, a failure table each), comma-separated")
    ap.add_argument("--per-node", type=int, default=100, help="ranks a node log")
    ap.add_argument("--big", type=int, default=262_144, help="ranks of the largest job (0: none)")
    ap.add_argument("--big-nodes", type=int, default=2048)
    ap.add_argument("--jobs", type=int, default=None, help="analyze-log --jobs (default: its own choice)")
    ap.add_argument("--baseline", help="another copy of the package (its root folder), run first on the same sizes")
    ap.add_argument("--baseline-sizes", help="the baseline's sizes (default: --sizes)")
    ap.add_argument("--baseline-jobs", type=int, help="the baseline's --jobs (one that counts the machine's cores, "
                    "not the taskset's, needs it)")
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",") if x]  # none: only the largest job
    shapes = a.shapes.split(",")
    if unknown := set(shapes) - {"files", "nodes", "tables"}:
        ap.error(f"--shapes: unknown {', '.join(sorted(unknown))} (files, nodes, tables, comma-separated)")
    with tempfile.TemporaryDirectory(prefix="ncclcheck-ranks-") as tmp, ProcessPoolExecutor(CORES) as pool:
        if a.baseline:
            base = [int(x) for x in (a.baseline_sizes or a.sizes).split(",")]
            sweep("baseline", tmp, base, shapes, a.per_node, a.baseline_jobs or a.jobs, os.path.abspath(a.baseline), pool)
        if sizes:
            sweep("this tree", tmp, sizes, shapes, a.per_node, a.jobs, ROOT, pool)
        if a.big:
            big(tmp, a.big, a.big_nodes, a.jobs, pool)


if __name__ == "__main__":
    main()
