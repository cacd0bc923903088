"""Main-process CPU after the reading, min of N; scans read once (2 workers); pickled to a file to share between trees."""
import sys, time, json
from ncclcheck.evidence.reader import resolve
import ncclcheck.job.analyze as an
import ncclcheck.render.json_out as jo
from ncclcheck.evidence.gcpause import paused
import ncclcheck.job.build as bd, ncclcheck.job.graph as gr
folder = sys.argv[1]; n = int(sys.argv[2])
sources = resolve([folder], print)
with paused():
    scans, unopened = an.read_all(sources, None, 2, None, an._file_part, lambda s, p: None)
    acc = {}
    def timed(name, f):
        def g(*a, **k):
            t = time.process_time()
            try: return f(*a, **k)
            finally: acc[name] = acc.get(name, 0.0) + time.process_time() - t
        return g
    bd.wait_for = timed("wait_for", bd.wait_for); gr.roots_of = timed("roots_of", gr.roots_of)
    bd._Builder._layout = timed("layout", bd._Builder._layout)
    best = {}
    for i in range(n):
        acc.clear()
        t0 = time.process_time(); res = an.analyze_scans(scans); t1 = time.process_time()
        text = json.dumps(jo.analysis_json(res, False), indent=2); t2 = time.process_time()
        acc["analyze"] = t1 - t0; acc["json"] = t2 - t1; acc["total"] = t2 - t0
        for k, v in acc.items(): best[k] = min(best.get(k, 1e9), v)
        del res
if len(sys.argv) > 3: open(sys.argv[3], "w").write(text)
print(f"{folder}: min of {n}: " + ", ".join(f"{k} {v:.3f}" for k, v in best.items()))
