"""h-scale's before/after on one host (issue 42, sessions 8, 9, 12-17): the same jobs read by two trees in turn.

Generates each job once (tools/bench_ranks.py's mesh and writers), then times ``analyze-log --json`` of each with
the baseline tree and this one, alternating which goes first from round to round; prints wall s, CPU s (the command
and its workers), the main process's own CPU s (from /proc, sampled every 20 ms), peak RSS (MiB, with workers), and
whether the two trees' JSON is identical. Sessions 14 and 15: node logs in eight rounds, the others in two, as far as
AB_BUDGET (seconds from the start) allows. Usage (from the tree's root): python3 ab.py BASE_ROOT."""
import json, os, subprocess, sys, tempfile, time, resource
from concurrent.futures import ProcessPoolExecutor
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "tools"))
import bench_ranks as b  # noqa: E402

BASE, MINE = os.path.abspath(sys.argv[1]), HERE
TICK = os.sysconf("SC_CLK_TCK")
START = time.perf_counter()


def main_cpu(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            v = f.read().rsplit(")", 1)[1].split()
        return (int(v[11]) + int(v[12])) / TICK
    except (OSError, IndexError, ValueError):
        return None


def timed(folder, root):
    env = {**os.environ, "PYTHONPATH": root}
    with tempfile.TemporaryFile() as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "ncclcheck", "analyze-log", "--json", folder], stdout=out,
                                stderr=subprocess.DEVNULL, env=env, cwd=root)
        summed = own = 0
        while proc.poll() is None:
            c = main_cpu(proc.pid)
            own = c if c is not None else own
            summed = max(summed, b._rss([proc.pid]) + b._rss(b._children(proc.pid)))
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.seek(0)
        return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, own, summed, out.read()


def one(name, folder, world, first):
    rows = {}
    for label, root in ((("base", BASE), ("this", MINE)) if first == "base" else (("this", MINE), ("base", BASE))):
        wall, cpu, own, rss, out = timed(folder, root)
        rows[label] = out
        try:
            ok = json.loads(out)["verdict"]["culprit_ranks"] == [world // 2 + 5]
        except (ValueError, KeyError):
            ok = False
        print(f"{name:34} {label:5} {world:>8,} {wall:8.2f} {wall / world * 1e6:8.1f} {cpu:8.1f} {own:8.2f} "
              f"{rss / 2**20:8.0f}  {'ok' if ok else 'WRONG'}", flush=True)
    print(f"{'':34} JSON identical: {rows['base'] == rows['this']}", flush=True)


with tempfile.TemporaryDirectory(prefix="ab-") as tmp, ProcessPoolExecutor(b.CORES) as pool:
    jobs = {}
    for name, world, per in (("one file per rank", 100_000, 1), ("node logs of 100", 100_000, 100),
                             ("2,048 node logs of 128", 262_144, 128)):
        folder = os.path.join(tmp, f"{per}-{world}")
        b.write_job(folder, world, per, pool)
        jobs[name] = (folder, world)
    print(f"jobs written in {time.perf_counter() - START:.0f} s; {b.CORES} cores")
    print(f"{'job':34} {'tree':5} {'ranks':>8} {'seconds':>8} {'us/rank':>8} {'CPU s':>8} {'main CPU':>8} {'MiB+w':>8}")
    # session 17: main against 0dbcc5d, node logs in AB_NODES rounds, files in two, 262,144 in one, interleaved
    # lead, session 17's end, second call: node logs in four rounds, 262,144 in two, files in one
    plan = [(1, "node logs of 100"), (2, "node logs of 100"), (1, "2,048 node logs of 128"), (3, "node logs of 100"),
            (4, "node logs of 100"), (2, "2,048 node logs of 128"), (4, "one file per rank")]
    for rnd, name in plan:
        if time.perf_counter() - START > float(os.environ.get("AB_BUDGET", "300")):
            print(f"stopped before round {rnd} of {name}: time", flush=True)
            break
        folder, world = jobs[name]
        one(f"{name} (round {rnd})", folder, world, "base" if rnd % 2 else "this")
        print(f"{'':34} load {os.getloadavg()[0]:.1f}, {time.perf_counter() - START:.0f} s", flush=True)
