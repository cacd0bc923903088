"""Each reader alone over a job's unpickled scans (mainsim's cache), min of R runs, ms; collector off."""
import sys, time, pickle, gc
import ncclcheck.job.analyze as an
import ncclcheck.job.world as world
import ncclcheck.render.json_out as jo
cache, R = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
gc.disable()
outs = [pickle.loads(b) for b in pickle.load(open(cache, "rb"))]
scans = [scan for o in outs for scan, _ in o]
ev = {e.name: e for e in jo._EVENTS}
def best(f):
    ts = []
    for _ in range(R):
        t = time.process_time(); f(); ts.append(time.process_time() - t)
    return min(ts) * 1e3
res = {"statements": best(lambda: world.statements(scans))}
for n in ("facts", "group_inits", "nccl_errors", "errors", "clues"):
    res[f"json {n}"] = best(lambda: ev[n].folded(scans))
    res[f"json {n} 1by1"] = best(lambda: [ev[n].one(x) for x in ev[n].items(scans)])
print("  ".join(f"{k} {v:.0f}" for k, v in res.items()))
