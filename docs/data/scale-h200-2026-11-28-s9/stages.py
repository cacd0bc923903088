"""Main-process CPU of analyze-log's stages, no profiler: analyze (workers read; the merge meanwhile), build, JSON."""
import gc, sys, time, json
gc.disable()
from ncclcheck.evidence.reader import resolve
import ncclcheck.job.analyze as an
import ncclcheck.job.build as bd
import ncclcheck.job.records as rc
from ncclcheck.render.json_out import analysis_json
folder = sys.argv[1]
workers = int(sys.argv[2]) if len(sys.argv) > 2 else None
acc = {"merge": 0.0, "build": 0.0}
def timed(name, f):
    def g(*a, **k):
        t = time.process_time()
        try:
            return f(*a, **k)
        finally:
            acc[name] += time.process_time() - t
    return g
rc.Merger.add = timed("merge", rc.Merger.add)
import ncclcheck.job.verdict as vd
vd.build_job = timed("build", vd.build_job) if hasattr(vd, "build_job") else None
sources = resolve([folder], print)
c0 = time.process_time()
res = an.analyze(sources, workers=workers)
c1 = time.process_time()
text = json.dumps(analysis_json(res, False), indent=2)
c2 = time.process_time()
print(f"{folder}: main CPU analyze {c1-c0:.2f} (merge {acc['merge']:.2f}, build_job {acc['build']:.2f}), json {c2-c1:.2f}, total {c2-c0:.2f}")
if len(sys.argv) > 3:
    open(sys.argv[3], "w").write(text)
