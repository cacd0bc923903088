"""mainsim's main-process work with process_time wrappers on the build's and the JSON's stages (no profiler)."""
import sys, time, pickle, gc, json
import ncclcheck.job.analyze as an
import ncclcheck.job.build as bd
import ncclcheck.job.records as rc
import ncclcheck.job.verdict as vd
import ncclcheck.render.json_out as jo
import ncclcheck.job.chain as ch
cache = sys.argv[1]
acc = {}
def timed(name, f):
    def g(*a, **k):
        t = time.process_time()
        try:
            return f(*a, **k)
        finally:
            acc[name] = acc.get(name, 0.0) + time.process_time() - t
    return g
def wrap(obj, attr, name=None):
    if hasattr(obj, attr):
        setattr(obj, attr, timed(name or attr, getattr(obj, attr)))
for m in ("_index", "from_records", "from_text", "from_dumps", "world", "_groups", "_rank_state", "job"):
    wrap(bd._Builder, m, "build." + m)
for n in ("wait_for", "live_state", "with_facts"):
    if hasattr(bd, n): setattr(bd, n, timed("build." + n, getattr(bd, n)))
vd.build_job = timed("build_job", vd.build_job); vd.decide = timed("decide", vd.decide)
for n in ("_folded_events", "_ranks", "_edges", "_records", "_inputs", "_groups"):
    wrap(jo, n, "json." + n)
blobs = pickle.load(open(cache, "rb"))
gc.disable()
import ncclcheck.job.runs  # noqa
t0 = time.process_time()
outs = [pickle.loads(b) for b in blobs]
t1 = time.process_time()
early = an.Early(); scans = []
for o in outs:
    for scan, part in o:
        early.part(scan, part); early.add(scan); scans.append(scan)
t2 = time.process_time()
res = an.analyze_scans(scans, early=early)
t3 = time.process_time()
text = json.dumps(jo.analysis_json(res, False), indent=2)
t4 = time.process_time()
print(f"unpickle {t1-t0:.3f} merge {t2-t1:.3f} analyze {t3-t2:.3f} json {t4-t3:.3f} total {t4-t0:.3f}")
print("  " + ", ".join(f"{k} {v:.3f}" for k, v in acc.items()))
