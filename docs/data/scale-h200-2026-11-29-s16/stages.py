"""Main-process CPU of analyze-log's stages, no profiler (process_time wrappers), collector off as the command."""
import sys, time, json
from ncclcheck.evidence.reader import resolve
import ncclcheck.job.analyze as an
import ncclcheck.job.build as bd
import ncclcheck.job.records as rc
import ncclcheck.job.verdict as vd
import ncclcheck.job.facts as fc
import ncclcheck.render.json_out as jo
import ncclcheck.evidence.scan as sc
import gc; gc.disable()  # as cli.main: the collector off for the whole run (session 15)
folder = sys.argv[1]; workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
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
    setattr(obj, attr, timed(name or attr, getattr(obj, attr)))
wrap(rc.Merger, "add", "merge.add"); wrap(rc.Merger, "records", "merge.records")
for m in ("_index", "from_records", "from_text", "from_dumps", "world", "_groups", "_rank_state", "job"):
    wrap(bd._Builder, m, "build." + m)
bd.wait_for = timed("build.wait_for", bd.wait_for); bd.live_state = timed("build.live_state", bd.live_state)
bd.with_facts = timed("facts", bd.with_facts)
vd.build_job = timed("build_job", vd.build_job); vd.decide = timed("decide", vd.decide)

for n in ("_folded_events", "_ranks", "_edges", "_records", "_inputs", "_groups"):
    wrap(jo, n, "json." + n)
sources = resolve([folder], print)
c0 = time.process_time()
res = an.analyze(sources, workers=workers)
c1 = time.process_time()
text = json.dumps(jo.analysis_json(res, False), indent=2)
c2 = time.process_time()
print(f"{folder}: main CPU analyze {c1-c0:.2f}, json {c2-c1:.2f}, total {c2-c0:.2f}")
print("  " + ", ".join(f"{k} {v:.2f}" for k, v in acc.items()))
if len(sys.argv) > 3: open(sys.argv[3], "w").write(text)
