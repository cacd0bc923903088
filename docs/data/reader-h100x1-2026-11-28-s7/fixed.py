"""The whole command's fixed costs: analyze-log --json on a 2 KB input (one process, no workers), 9 interleaved runs
of each tree, medians of wall seconds; then the chatty corpus's critical path in h-reader (phases)."""
import glob, os, statistics, subprocess, sys, time
trees = sys.argv[1:]
corpus = sorted(glob.glob(".bench/chatty-512mib-64r/*.log"))
tiny = "/tmp/tiny.log"
with open(corpus[0], "rb") as fh, open(tiny, "wb") as out:
    out.write(fh.read(2000).rsplit(b"\n", 1)[0] + b"\n")
times = {t: [] for t in trees}
for _ in range(9):
    for t in trees:
        env = {**os.environ, "PYTHONPATH": os.path.abspath(t)}
        a = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ncclcheck", "analyze-log", tiny, "--json"], cwd=os.path.abspath(t),
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times[t].append(time.perf_counter() - a)
for t in trees:
    print(f"{t:24} 2 KB input: median {statistics.median(times[t]):.3f} s, fastest {min(times[t]):.3f} s")
