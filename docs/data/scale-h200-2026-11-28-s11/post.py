"""Main-process CPU of everything after the reading (analyze_scans + JSON), min of N, scans read once by 2 workers."""
import sys, time, json, gc
from ncclcheck.evidence.reader import resolve
import ncclcheck.job.analyze as an
import ncclcheck.job.build as bd
import ncclcheck.job.verdict as vd
import ncclcheck.render.json_out as jo
from ncclcheck.evidence.gcpause import paused
folder = sys.argv[1]; n = int(sys.argv[2])
sources = resolve([folder], print)
with paused():
    scans, unopened = an.read_all(sources, None, 2, None, an._file_part, lambda s, p: None)
    acc = {}
    def timed(name, f):
        def g(*a, **k):
            t = time.process_time()
            try:
                return f(*a, **k)
            finally:
                acc[name] = acc.get(name, 0.0) + time.process_time() - t
        return g
    vd.build_job = timed("build", vd.build_job)
    bd.with_facts = timed("facts", bd.with_facts)
    best = {}
    for i in range(n):
        acc.clear()
        t0 = time.process_time()
        res = an.analyze_scans(scans)
        t1 = time.process_time()
        text = json.dumps(jo.analysis_json(res, False), indent=2)
        t2 = time.process_time()
        acc["analyze"] = t1 - t0; acc["json"] = t2 - t1; acc["total"] = t2 - t0
        for k, v in acc.items():
            best[k] = min(best.get(k, 1e9), v)
        del res
print(f"{folder}: min of {n}: " + ", ".join(f"{k} {v:.3f}" for k, v in best.items()))
