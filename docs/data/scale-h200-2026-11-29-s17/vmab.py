"""VM pairs: analyze-log --json FOLDER by two trees in turn (order swapped each round): wall, CPU (all), main CPU."""
import os, sys, time
sys.path.insert(0, "/work/wt/scale17/docs/data/scale-h200-2026-11-29-s17")
sys.argv, argv = sys.argv[:1] + ["/tmp/s17/base"], sys.argv
import importlib.util
spec = importlib.util.spec_from_file_location("abm", "/work/wt/scale17/docs/data/scale-h200-2026-11-29-s17/ab.py")
src = open(spec.origin).read()
src = src[:src.index("with tempfile.TemporaryDirectory")]
sys.path.insert(0, "/work/wt/scale17/tools")
g = {"__file__": "/work/wt/scale17/x.py", "__name__": "abm"}
exec(compile(src, "ab.py", "exec"), g)
folder, a, b, rounds = argv[1], argv[2], argv[3], int(argv[4])
outs = {}
for r in range(rounds):
    for t in ((a, b) if r % 2 == 0 else (b, a)):
        wall, cpu, own, rss, out = g["timed"](folder, t)
        outs[t] = out
        print(f"round {r+1} {os.path.basename(t):5} load {os.getloadavg()[0]:5.1f} wall {wall:6.2f} cpu {cpu:6.2f} main {own:6.2f} MiB {rss/2**20:5.0f}", flush=True)
    print("  JSON identical:", outs[a] == outs[b], flush=True)
